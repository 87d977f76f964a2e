# SPDX-License-Identifier: MIT
"""What the pyverbs scripts (py_verbs.py, py_lossy.py) share: the port's
IPv4-mapped loopback GID and a connected RC pair. Imported once pyverbs
is known to be there."""
import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr


def loopback_gid(ctx, port):
    """(index, gid) of ::ffff:127.0.0.1 in port 1's table."""
    for i in range(port.gid_tbl_len):
        g = ctx.query_gid(1, i)
        if str(g).endswith('ffff:7f00:0001'):
            return i, g
    raise AssertionError('no ::ffff:127.0.0.1 GID')


def rc_pair(pd, cq, gid, gid_idx, access, depth, rd_atomic, timeout):
    """Two RC QPs on cq, connected to each other through gid, in RTS."""
    cap = QPCap(max_send_wr=depth, max_recv_wr=depth, max_send_sge=1, max_recv_sge=1)
    init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap)
    a, b = QP(pd, init), QP(pd, init)
    for me, peer in ((a, b), (b, a)):
        qa = QPAttr()
        qa.qp_access_flags = access
        qa.port_num = 1
        qa.path_mtu = e.IBV_MTU_1024
        qa.dest_qp_num = peer.qp_num
        qa.rq_psn = 0
        qa.sq_psn = 0
        qa.max_dest_rd_atomic = rd_atomic
        qa.max_rd_atomic = rd_atomic
        qa.min_rnr_timer = 1
        qa.timeout = timeout
        qa.retry_cnt = 7
        qa.rnr_retry = 7
        qa.ah_attr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=gid_idx), is_global=1,
                            port_num=1)
        me.to_rts(qa)
    return a, b
