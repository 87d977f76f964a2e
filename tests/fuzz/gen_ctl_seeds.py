#!/usr/bin/python3
"""gen_ctl_seeds.py DIR - write the seed scripts of fuzz_ctl (tests/fuzz/corpus/ctl).

Each seed is a script in fuzz_ctl.c's input format: per message a kind byte (op in the
low 5 bits, length mode in the top 2), a descriptor byte (0x40: one descriptor, 0x80|n:
n descriptors), the op's template bytes (see fz_body), a raw-patch count, then one byte
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
    ATTACH_MC, DETACH_MC, QUERY_STATS = range(1, 28)


def msg(op, body=b"", fds=(), mode=0, extra=b"", status=0):
    """mode 0: exact length; 1: exact, status field set; 2: length from extra (U16);
    3: extra = b"\\x01" + runt length byte, or b"\\x00" (+ U32 len field if fds byte odd)."""
    fk = 0 if not fds else (0x40 if len(fds) == 1 else 0x80 | len(fds))
    st = U32(status) if mode & 1 else b""
    return bytes([op | mode << 6, fk]) + body + b"\x00" + st + extra + bytes(fds)


def hello(fd=None):
    """HELLO takes no descriptor since the daemon creates its pipes: one passed is refused."""
    return msg(HELLO, b"\x00" + U32(1234), fds=() if fd is None else (fd,))


def handle(i):
    return bytes([i])


def modify_qp(h, maskidx, state, dest, gid=3):
    body = bytes([maskidx << 1]) + handle(h) + bytes([state, 0]) + U32(0x11111111) + \
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


def every_fd_kind():
    s = hello(0)  # a descriptor with HELLO: refused, and closed
    s += hello()
    for k in range(14):
        s += msg(CREATE_CH, fds=(k,))  # refused, closed
    s += msg(CREATE_CH)                                           # h0 channel
    s += msg(ALLOC_PD)                                            # h1 pd
    s += msg(CREATE_CQ, bytes([2, 4]) + handle(0) + bytes([0]))   # h2 cq on the channel
    s += msg(QUERY_PORT, bytes([1]), fds=(1, 2, 3, 5, 6))        # fds on an op without any
    return s


def every_hello_fd():
    s = b""
    for k in range(14):
        s += hello(k)
    s += hello()
    for op in range(2, 28):  # a descriptor on every op: refused, closed
        s += bytes([op, 0x40]) + bytes(8) + b"\x00" + bytes([op % 14])
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
    s += bytes([0x20 | 31, 0]) + U32(28) + b"\x00"                 # UROCE_OP_MAX
    s += msg(QUERY_PORT, bytes([0]))
    s += msg(QUERY_PORT, bytes([2]))
    s += msg(MODIFY_QP, bytes([1]) + handle(0) + bytes(range(200)))  # raw attr
    s += msg(HELLO, b"\x01" + U32(99) + U32(0))                   # wrong ABI
    return s


ADVISE_MR = 43  # past 31: reached as kind 0 with descriptor byte 0x20 (fz_message)


def advise(how, pd, advice, flags, sges):
    """sges: (k, addr offset in fz_mem, length); bit 0 of k clear: the lkey of
    the (k >> 3)-th REG_MR reply"""
    body = bytes([how]) + handle(pd) + bytes([advice, flags, len(sges)])
    for k, off, length in sges:
        body += bytes([k]) + U16(off) + U16(length)
    return bytes([0, 0x20, ADVISE_MR - 32]) + body + b"\x00"


def odp():
    s = hello(0x8a)                 # 0x8a % 14 == 12, bit 7: the client's own mem
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
        "malformed": malformed(), "odp": odp(),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
