#!/usr/bin/python3
"""gen_ctl_seeds.py DIR - write the seed scripts of fuzz_ctl (tests/fuzz/corpus/ctl).

Each seed is a script in fuzz_ctl.c's input format: per message a kind byte (op in the
low 5 bits, length mode in the top 2), a descriptor byte (0x40: one descriptor, 0x80|n:
n descriptors; 0x20 adds 32 to the op), the op's template bytes (see fz_body), a raw-patch count, then one byte
per descriptor naming its kind (fz_make_fd). Handle bytes index the handles earlier
replies returned, in order. The seeds walk create -> modify -> destroy chains of every
object, pass every descriptor kind, and send runts and oversized messages.
"""
import os
import struct
import sys

U32 = lambda v: struct.pack("<I", v & 0xffffffff)
U16 = lambda v: struct.pack("<H", v & 0xffff)

HELLO, QUERY_PORT, ALLOC_PD, DEALLOC_PD, REG_MR, REREG_MR, DEREG_MR, ALLOC_MW, DEALLOC_MW, \
    CREATE_CH, DESTROY_CH, CREATE_CQ, RESIZE_CQ, DESTROY_CQ, CREATE_SRQ, MODIFY_SRQ, QUERY_SRQ, \
    DESTROY_SRQ, CREATE_QP, MODIFY_QP, QUERY_QP, DESTROY_QP, CREATE_AH, DESTROY_AH, \
    ATTACH_MC, DETACH_MC, QUERY_STATS, UCMA_OPEN, UCMA_CMD, UCMA_CLOSE, QUERY_CM_STATS, \
    DEV_INFO, QUERY_QPS, FAULT_GET, FAULT_SET, FAULT_CLEAR, CAPTURE_START, CAPTURE_STOP, \
    MAP_MR, MEM_CHANNEL, IMPORT, QUERY_CC = range(1, 43)


def msg(op, body=b"", fds=(), mode=0, extra=b"", status=0):
    """mode 0: exact length; 1: exact, status field set; 2: length from extra (U16);
    3: extra = b"\\x01" + runt length byte, or b"\\x00" (+ U32 len field if fds byte odd)."""
    fk = 0 if not fds else (0x40 if len(fds) == 1 else 0x80 | len(fds))
    fk |= op & 0x20
    st = U32(status) if mode & 1 else b""
    return bytes([op & 0x1f | mode << 6, fk]) + body + b"\x00" + st + extra + bytes(fds)


PEER_MEM, OWN_MEM = 12, 13  # fz_make_fd kinds: the client's /proc/self/mem, another's
FD_KINDS = 15


def hello(fd=PEER_MEM):
    """HELLO takes exactly one descriptor, the client's own /proc/self/mem; any other
    (or none) is refused."""
    return msg(HELLO, b"\x00" + U32(1234), fds=() if fd is None else (fd,))


def handle(i):
    return bytes([i])


def modify_qp(h, maskidx, state, dest, gid=3, qkey=0x11111111):
    body = bytes([maskidx << 1]) + handle(h) + bytes([state, 0]) + U32(qkey) + \
        bytes([0x0f, 3]) + handle(dest) + U32(0x100) + U32(0x100) + \
        bytes([1, 1, 1, 14, 7, 7, 1, gid])
    return msg(MODIFY_QP, body)


def create_qp(qtype, pd=0, cq=3, srq=None):
    how = 1 | (2 if srq is not None else 0)
    body = bytes([how]) + handle(pd) + handle(cq)
    if srq is not None:
        body += handle(srq)
    body += bytes([qtype, 0, 8, 8, 2, 2, 32, 0])
    return msg(CREATE_QP, body)


def chain_rc():
    s = hello()
    s += msg(ALLOC_PD)                                            # h0 pd
    s += msg(REG_MR, bytes([0]) + handle(0) + bytes([0x0f]) + U16(0) + U16(4096))  # h1 mr
    s += msg(CREATE_CH)                                           # h2 channel
    s += msg(CREATE_CQ, bytes([2, 16]) + handle(2) + bytes([1]))  # h3 cq
    s += msg(CREATE_SRQ, bytes([0]) + handle(0) + bytes([8, 2, 0, 0]))  # h4 srq
    s += create_qp(0)                                             # h5 qp, h6 qpn
    s += modify_qp(5, 0, 1, 6)
    s += modify_qp(5, 2, 2, 6)
    s += modify_qp(5, 3, 3, 6)
    s += msg(QUERY_QP, handle(5) + U32(0xffffffff))
    s += msg(CREATE_AH, bytes([2]) + handle(0) + bytes([1, 64, 0]) + U32(0) + bytes([3]))  # h7
    s += msg(QUERY_STATS, bytes([0xf0]))
    s += msg(RESIZE_CQ, bytes([0]) + handle(3) + bytes([40]))     # h8 (cq handle again)
    s += msg(MODIFY_SRQ, bytes([1 << 1]) + handle(4) + bytes([16, 2, 0]))  # h9
    s += msg(QUERY_SRQ, handle(4))
    s += msg(ALLOC_MW, handle(0) + bytes([2]))                    # h10 mw
    s += msg(REREG_MR, bytes([0]) + handle(0) + bytes([0x07]) + U16(64) + U16(512) +
             handle(1) + bytes([2]))
    s += modify_qp(5, 4, 6, 6)                                    # to ERR: flush
    s += msg(DEALLOC_MW, handle(10))
    s += msg(DESTROY_AH, handle(7))
    s += msg(DESTROY_QP, handle(5))
    s += msg(DESTROY_SRQ, handle(4))
    s += msg(DESTROY_CQ, handle(3))
    s += msg(DESTROY_CH, handle(2))
    s += msg(DEREG_MR, handle(1))
    s += msg(DEALLOC_PD, handle(0))
    return s


def chain_ud_mcast():
    s = hello()
    s += msg(ALLOC_PD)                                            # h0
    s += msg(CREATE_CQ, bytes([0, 8, 0]))                         # h1
    s += create_qp(2, 0, 1)                                       # h2 qp, h3 qpn
    s += modify_qp(2, 1, 1, 3)
    s += modify_qp(2, 4, 2, 3)
    s += modify_qp(2, 5, 3, 3)
    s += msg(ATTACH_MC, handle(2) + U16(0) + bytes([1, 7]))
    s += msg(DETACH_MC, handle(2) + U16(0) + bytes([1, 7]))
    s += msg(ATTACH_MC, handle(2) + U16(0) + bytes([1, 9]))      # left attached at close
    s += msg(CREATE_QP, bytes([3]) + handle(0) + handle(1) + bytes([0xf1, 1, 0, 4, 4, 1, 1, 0, 0]))
    return s


def chain_qkey():
    """A UD QP asking for the GSI's controlled Q_Key (0x80010000) from a
    client without CAP_NET_RAW: EPERM; then an ordinary one."""
    s = hello()
    s += msg(ALLOC_PD)                                            # h0
    s += msg(CREATE_CQ, bytes([0, 8, 0]))                         # h1
    s += create_qp(2, 0, 1)                                       # h2 qp, h3 qpn
    s += modify_qp(2, 1, 1, 3, qkey=0x80010000)                   # EPERM
    s += modify_qp(2, 1, 1, 3)
    s += modify_qp(2, 4, 2, 3)
    s += modify_qp(2, 5, 3, 3)
    s += ext(abi_op("QUERY_LIMITS"), bytes([1]))
    return s


def ucma(cmd, id_, port=0, rest=b""):
    """An rdma_ucm command on the first file (fz_ucma's template): command
    index, id, port index, then the command's own bytes."""
    return msg(UCMA_CMD, handle(0) + bytes([cmd, id_, port]) + rest)


CREATE, BIND, RESOLVE, ROUTE, LISTEN, CONNECT, ACCEPT, REJECT, DISCONNECT, GET_EVENT, \
    DESTROY, QP_ATTR, NOTIFY, JOIN, QUERY_ROUTE = range(15)


def chain_cm():
    """rdma_cm through the IB CM engine: a listener, a connection to it
    (REQ, REP, RTU: MADs through the looped port), INIT_QP_ATTR, NOTIFY,
    a disconnect (DREQ, DREP), a rejected request, ids destroyed."""
    s = hello()
    s += msg(UCMA_OPEN)                                           # h0 file
    s += ucma(CREATE, 0, 0, bytes([0]))                           # id 0 (TCP)
    s += ucma(BIND, 0, 0, bytes([0]))                             # 127.0.0.1:7000
    s += ucma(LISTEN, 0, 0, bytes([8]))
    s += ucma(CREATE, 1, 0, bytes([0]))                           # id 1
    s += ucma(RESOLVE, 1, 0, bytes([0]))
    s += ucma(GET_EVENT, 0)
    s += ucma(ROUTE, 1)
    s += ucma(GET_EVENT, 0)
    s += ucma(CONNECT, 1, 0, bytes([1, 0x23, 2, 2, 7, 7, 4]))
    s += ucma(GET_EVENT, 0)                                       # CONNECT_REQUEST: id 2
    s += ucma(ACCEPT, 2, 0, bytes([1, 0x45, 2, 2, 0, 7, 4]))
    s += ucma(GET_EVENT, 0)                                       # CONNECT_RESPONSE
    s += ucma(QP_ATTR, 1, 0, bytes([2]))
    s += ucma(ACCEPT, 1, 0, bytes([0, 0, 0, 0, 0, 0, 0]))         # the RTU
    s += ucma(GET_EVENT, 0)                                       # ESTABLISHED
    s += ucma(NOTIFY, 2)
    s += ucma(DISCONNECT, 1)
    s += ucma(GET_EVENT, 0)
    s += ucma(DISCONNECT, 2)
    s += ucma(GET_EVENT, 0)
    s += ucma(CREATE, 3, 0, bytes([0]))                           # id 3
    s += ucma(RESOLVE, 3, 0, bytes([0]))
    s += ucma(GET_EVENT, 0)
    s += ucma(ROUTE, 3)
    s += ucma(GET_EVENT, 0)
    s += ucma(CONNECT, 3, 0, bytes([1, 0x24, 2, 2, 7, 7, 0]))
    s += ucma(GET_EVENT, 0)                                       # CONNECT_REQUEST: id 4
    s += ucma(REJECT, 4, 0, bytes([1]))
    s += ucma(GET_EVENT, 0)                                       # REJECTED
    for i in range(5):
        s += ucma(DESTROY, i)
    return s


def xmsg(op, body=b"", fds=()):
    """An XRC op by its name in abi.h (appended after the others)."""
    return msg(abi_op(op), body, fds)


def chain_xrc():
    """Domains by a regular file and by none, an XRC SRQ, a TGT QP,
    ibv_open_qp (another domain's: EACCES), modify, teardown in the wrong
    order first (EBUSY), then domains by every descriptor kind."""
    s = hello()
    s += msg(ALLOC_PD)                                            # h0 pd
    s += msg(CREATE_CQ, bytes([0, 8, 0]))                         # h1 cq
    s += xmsg("OPEN_XRCD", bytes([1]), fds=(11,))                   # h2 xrcd (file, O_CREAT)
    s += xmsg("OPEN_XRCD", bytes([0]))                              # h3 private xrcd
    s += xmsg("CREATE_XSRQ", bytes([0]) + handle(0) + bytes([8, 2, 0, 0]) + handle(2) +
              handle(1))                                          # h4 srq
    s += xmsg("CREATE_XTGT", handle(2) + handle(0) + bytes([5]))    # h5 tgt, h6 qpn
    s += xmsg("OPEN_QP", handle(3) + handle(6) + bytes([6]))        # another domain: EACCES
    s += xmsg("OPEN_QP", handle(2) + handle(6) + bytes([6]))        # h7 opened, h8 qpn
    s += modify_qp(7, 0, 1, 6)
    s += msg(QUERY_QP, handle(5) + U32(0xffffffff))
    s += xmsg("CLOSE_XRCD", handle(2))                              # busy
    s += msg(DESTROY_CQ, handle(1))                               # busy: the SRQ's
    s += msg(DESTROY_QP, handle(7))
    s += msg(DESTROY_QP, handle(5))
    s += xmsg("CLOSE_XRCD", handle(3))
    for k in range(FD_KINDS):
        s += xmsg("OPEN_XRCD", bytes([1]), fds=(k,))                # every kind: some refused
    return s


def every_fd_kind():
    s = hello(0)  # another descriptor with HELLO: refused, and closed
    s += hello()
    for k in range(FD_KINDS):
        s += msg(CREATE_CH, fds=(k,))  # refused, closed
    s += msg(CREATE_CH)                                           # h0 channel
    s += msg(ALLOC_PD)                                            # h1 pd
    s += msg(CREATE_CQ, bytes([2, 4]) + handle(0) + bytes([0]))   # h2 cq on the channel
    s += msg(QUERY_PORT, bytes([1]), fds=(1, 2, 3, 5, 6))        # fds on an op without any
    return s


def every_hello_fd():
    s = b""
    s = hello(None)
    for k in range(FD_KINDS):
        s += hello(k)
    s += hello()
    for op in range(2, QUERY_CC + 1):  # a descriptor on every op: refused (most), closed
        s += bytes([op & 0x1f, 0x40 | op & 0x20]) + bytes(8) + b"\x00" + bytes([op % FD_KINDS])
    return s


def malformed():
    s = msg(ALLOC_PD)                                             # before HELLO
    s += hello()
    s += msg(ALLOC_PD, mode=3, extra=b"\x01\x05")                 # runt
    s += bytes([DEALLOC_PD | 3 << 6, 1]) + handle(0) + b"\x00" + U32(0) + b"\x00" + U32(7)  # len field 7
    s += msg(ALLOC_PD, mode=2, extra=U16(4096 + 40))              # oversized
    s += msg(ALLOC_PD, mode=2, extra=U16(17))                     # one byte too long
    s += msg(CREATE_QP, bytes(12), mode=3, extra=b"\x00", status=5)  # status field set
    s += bytes([0x20 | 0, 0]) + U32(0x7fffffff) + b"\x00"          # unknown op
    s += bytes([0x20 | 0, 0]) + U32(2 * abi_op("MAX") + 1) + b"\x00"  # UROCE_OP_MAX
    s += msg(QUERY_PORT, bytes([0]))
    s += msg(QUERY_PORT, bytes([2]))
    s += msg(MODIFY_QP, bytes([1]) + handle(0) + bytes(range(200)))  # raw attr
    s += msg(HELLO, b"\x01" + U32(99) + U32(0))                   # wrong ABI
    return s


def every_late_op():
    """The ops after QUERY_STATS (rdma_cm file, statistics, uroce-ctl, mapping,
    import, CC): empty and template bodies, with and without a descriptor."""
    s = hello()
    s += msg(ALLOC_PD)                                            # h0 pd
    s += msg(REG_MR, bytes([0]) + handle(0) + bytes([0x0f]) + U16(0) + U16(4096))  # h1 mr
    for op in range(UCMA_OPEN, QUERY_CC + 1):
        s += msg(op)
        s += msg(op, fds=(op % FD_KINDS,))
    s += msg(UCMA_CLOSE, handle(2))
    return s


def abi_op(name):
    """The number of UROCE_OP_<name> in include/uroce/abi.h (ops are appended there)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../include/uroce/abi.h")
    text = open(path).read()
    body = text[text.index("enum uroce_op {"):]
    body = body[:body.index("};")]
    n = 0
    for line in body.split("\n"):
        line = line.split("/*")[0].split("*")[0].strip()
        if not line.startswith("UROCE_OP_"):
            continue
        sym = line.split(",")[0].split("=")[0].strip()
        if "=" in line:
            n = int(line.split("=")[1].split(",")[0])
        if sym == "UROCE_OP_" + name:
            return n
        n += 1
    raise KeyError(name)


def ext(op, body=b"", fds=()):
    """An op past 31: kind 0x20 with op 0, then the word fz_message maps to 32 + word / 2."""
    fk = 0 if not fds else (0x40 if len(fds) == 1 else 0x80 | len(fds))
    return bytes([0x20, fk]) + U32((op - 32) << 1) + body + b"\x00" + bytes(fds)


def chain_dm():
    """Device memory: allocate, register (zero-based), free while registered (EBUSY),
    import, deregister, free; refusals for a comp_mask and a registration without
    IBV_ACCESS_ZERO_BASED."""
    alloc, free, reg, imp = (abi_op(n) for n in ("ALLOC_DM", "FREE_DM", "REG_DM_MR", "IMPORT"))
    s = hello(fd=12)  # fz_make_fd kind 12: /proc/self/mem, as the shim sends
    s += msg(ALLOC_PD)                                                 # h0 pd
    s += ext(alloc, bytes([0]) + U32(8192) + bytes([3]))               # h1 dm (+ memfd)
    s += ext(reg, bytes([0]) + handle(0) + handle(1) + U16(4096) + U16(4096) + bytes([0x0f]))  # h2
    s += ext(free, handle(1))                                          # EBUSY
    s += ext(imp, bytes([3]) + handle(1) + bytes([0xf0]))              # h3 (+ memfd); pd 0
    s += ext(alloc, bytes([4]) + U32(64) + bytes([0]) + U32(1))        # comp_mask: EINVAL
    s += ext(reg, bytes([4]) + handle(0) + handle(1) + U16(0) + U16(64) + bytes([0x01]))  # EINVAL
    s += msg(DEREG_MR, handle(2))
    s += ext(free, handle(1))
    return s


def advise(how, pd, advice, flags, sges):
    """sges: (k, addr offset in fz_mem, length); bit 0 of k clear: the lkey of
    the (k >> 3)-th REG_MR reply"""
    body = bytes([how]) + handle(pd) + bytes([advice, flags, len(sges)])
    for k, off, length in sges:
        body += bytes([k]) + U16(off) + U16(length)
    return msg(abi_op("ADVISE_MR"), body)


def odp():
    s = hello()
    s += msg(ALLOC_PD)                                                # h0 pd
    s += msg(REG_MR, bytes([0]) + handle(0) + bytes([0x4f]) + U16(0) + U16(8192))  # ODP
    s += msg(REG_MR, bytes([16]) + handle(0) + bytes([0x47]) + U16(0) + U16(0))   # implicit
    s += msg(REG_MR, bytes([0]) + handle(0) + bytes([0x01]) + U16(0) + U16(4096))  # not ODP
    s += advise(0, 0, 1, 1, [(0, 0, 4096), (8, 100, 9000)])            # write, sync
    s += advise(0, 0, 0, 0, [(0, 8000, 4096)])                         # async, past the end
    s += advise(0, 0, 2, 1, [(16, 0, 64)])                             # not an ODP MR
    s += advise(0, 0, 3, 1, [(0, 0, 64)])                              # unknown advice
    s += advise(0, 0, 1, 1, [])                                        # no entry
    return s


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {
        "chain-rc": chain_rc(), "chain-ud-mcast": chain_ud_mcast(),
        "every-fd-kind": every_fd_kind(), "every-hello-fd": every_hello_fd(),
        "malformed": malformed(), "every-late-op": every_late_op(),
        "chain-dm": chain_dm(), "chain-xrc": chain_xrc(), "odp": odp(),
        "chain-cm": chain_cm(), "chain-qkey": chain_qkey(),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
