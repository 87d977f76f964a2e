# SPDX-License-Identifier: MIT
"""pyverbs (Debian's python3-pyverbs, which loads libibverbs RTLD_LOCAL)
through liburoce: list the device, query it, and pass RC and UD traffic
with completion events. Run by run.py with LD_PRELOAD set."""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402  (tests/lib/harness.py: require)

try:
    import pyverbs.device as d
    import pyverbs.enums as e
    from pyverbs.addr import AH, AHAttr, GlobalRoute
    from pyverbs.cq import CQ, CompChannel
    from pyverbs.mr import MR
    from pyverbs.pd import PD
    from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
    from pyverbs.wr import SGE, RecvWR, SendWR
except ImportError as err:
    print('pyverbs not available:', err)
    sys.exit(77)
import pyv  # noqa: E402

names = [dev.name.decode() for dev in d.get_device_list()]
print('devices:', names)
h.require('uroce0' in names, '\'uroce0\' in names: %r' % (names,))

ctx = d.Context(name='uroce0')
attr = ctx.query_device()
h.require(attr.vendor_id == 0x1ace, 'attr.vendor_id == 0x1ace: %r' % (hex(attr.vendor_id),))
port = ctx.query_port(1)
h.require(port.state == e.IBV_PORT_ACTIVE, 'port.state == e.IBV_PORT_ACTIVE')
h.require(port.link_layer == e.IBV_LINK_LAYER_ETHERNET, 'port.link_layer == e.IBV_LINK_LAYER_ETHERNET')

gid_idx, gid = pyv.loopback_gid(ctx, port)
print('gid', gid_idx, gid)
ex = ctx.query_device_ex()
h.require(ex.orig_attr.vendor_id == 0x1ace, 'ex.orig_attr.vendor_id == 0x1ace')
table = ctx.query_gid_table(16)
h.require(len(table) >= 2, 'len(table) >= 2: %r' % (len(table),))
entry = ctx.query_gid_ex(1, gid_idx)
h.require(entry.gid_type == e.IBV_GID_TYPE_ROCE_V2, 'entry.gid_type == e.IBV_GID_TYPE_ROCE_V2: %r' % (entry.gid_type,))
h.require(ctx.query_gid_type(1, gid_idx) == e.IBV_GID_TYPE_SYSFS_ROCE_V2, 'ctx.query_gid_type(1, gid_idx) == e.IBV_GID_TYPE_SYSFS_ROCE_V2')
h.require(ctx.query_pkey(1, 0) == 0xffff, 'ctx.query_pkey(1, 0) == 0xffff')

pd = PD(ctx)
ch = CompChannel(ctx)
cq = CQ(ctx, 64, None, ch, 0)
access = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
          e.IBV_ACCESS_REMOTE_READ)
mr = MR(pd, 8192, access)


def wait_event():
    # blocks; run.py's timeout bounds it
    ch.get_cq_event(cq)
    cq.ack_events(1)


def poll(n):
    got = []
    for _ in range(2000000):
        k, wcs = cq.poll(n - len(got))
        got += wcs[:k]
        if len(got) == n:
            return got
    raise AssertionError('timeout polling')


def rc_pair():
    return pyv.rc_pair(pd, cq, gid, gid_idx, access, depth=16, rd_atomic=1, timeout=14)


# RC: SEND with a completion event
a, b = rc_pair()
b.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(mr.buf, 1024, mr.lkey)]))
mr.write(b'hello uroce', 11, 4096)
cq.req_notify()
a.post_send(SendWR(wr_id=2, opcode=e.IBV_WR_SEND, num_sge=1,
                   sg=[SGE(mr.buf + 4096, 11, mr.lkey)],
                   send_flags=e.IBV_SEND_SIGNALED))
wait_event()
wcs = poll(2)
h.require(all(w.status == e.IBV_WC_SUCCESS for w in wcs), 'all(w.status == e.IBV_WC_SUCCESS for w in wcs): %r' % (wcs,))
h.require(sorted(w.wr_id for w in wcs) == [1, 2], 'sorted(w.wr_id for w in wcs) == [1, 2]')
h.require(mr.read(11, 0) == b'hello uroce', "mr.read(11, 0) == b'hello uroce'")
print('RC ok')

# UD: SEND through an address handle, 40-byte GRH room in the receive
cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
init = QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap)
ua, ub = QP(pd, init), QP(pd, init)
for q in (ua, ub):
    qa = QPAttr()
    qa.qkey = 0x1234
    qa.port_num = 1
    qa.sq_psn = 0
    q.to_rts(qa)
ah = AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=gid_idx),
                        is_global=1, port_num=1))
ub.post_recv(RecvWR(wr_id=3, num_sge=1, sg=[SGE(mr.buf, 40 + 256, mr.lkey)]))
mr.write(b'ud-payload', 10, 4096)
wr = SendWR(wr_id=4, opcode=e.IBV_WR_SEND, num_sge=1,
            sg=[SGE(mr.buf + 4096, 10, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
wr.set_wr_ud(ah, ub.qp_num, 0x1234)
cq.req_notify()
ua.post_send(wr)
wait_event()
wcs = poll(2)
h.require(all(w.status == e.IBV_WC_SUCCESS for w in wcs), 'all(w.status == e.IBV_WC_SUCCESS for w in wcs): %r' % (wcs,))
recv = [w for w in wcs if w.wr_id == 3][0]
h.require(recv.byte_len == 50 and recv.src_qp == ua.qp_num, 'recv.byte_len == 50 and recv.src_qp == ua.qp_num: %r' % ((recv.byte_len, recv.src_qp),))
h.require(mr.read(10, 40) == b'ud-payload', "mr.read(10, 40) == b'ud-payload'")
print('UD ok')
for o in (ah, ua, ub, a, b, mr, cq, ch, pd, ctx):
    o.close()
sys.exit(0)
