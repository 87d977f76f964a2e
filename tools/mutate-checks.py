#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""mutate-checks.py [-w WORKDIR] [ROW...] - does every check of docs/transport.md's
"Checks on received packets" table have a test that fails without it?

Copies this checkout's tracked files (as they are in the work tree) to
WORKDIR (a new temporary directory by default), builds test_ibta and the
parser's reason tests there, then removes one check at a time (a textual
edit of the source: each MUTATIONS row names the table's row, the file, the
code and what replaces it), rebuilds and runs every xport_ibta_* case (and,
for wire/, every wire-reason-* case). Prints the cases that failed for each.

Exit 0 when every mutation is caught; 1 when one is caught by no test (a
check without a test) or no longer applies to the source (the code moved:
update its row). Not part of meson test (47 rebuilds); run it by hand
after changing a check or its test (docs/transport.md, "Checks on received
packets")."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

T = 'emu/transport/'
MUTATIONS = [
 ('H3', 'wire/parse.c', 'if (!p->icrc_ok)\n\t\t\treturn WIRE_R_ICRC;', ';'),
 ('H4', 'wire/parse.c', 'if (p->bth.tver != WIRE_BTH_TVER)\n\t\treturn WIRE_R_BTH_TVER;', ''),
 ('H5', 'wire/parse.c', 'if (!(op->flags & WIRE_OPF_VALID))\n\t\treturn WIRE_R_OPCODE;', ''),
 ('H6', 'wire/parse.c', 'if (tlen < (size_t)op->hdr_len + WIRE_ICRC_LEN)\n\t\treturn WIRE_R_TRUNC_EXT;', ''),
 ('H7', T+'rx.c', 'd->cnt.drops[EMU_DROP_UNKNOWN_QP]++;\n\temu_xport_rx', '(void)0;\n\temu_xport_rx'),
 ('H8', T+'rx.c', 'if (!wire_pkey_match(pkt->bth.pkey, WIRE_PKEY_DEFAULT)) {', 'if (0) {'),
 ('H8-limited', 'wire/hdr.h', '((pkt | mine) & WIRE_PKEY_FULL)', '(pkt & WIRE_PKEY_FULL)'),
 ('H9', T+'xport.c', 'if (!ok || !pkt->op', 'if ((void)ok, !pkt->op'),
 ('H10', T+'resp.c', 'if (qp->attr.qp_state < IBV_QPS_RTR || qp->attr.qp_state == IBV_QPS_ERR) {', 'if (0) {'),
 ('H11', T+'xport.c', 'if (tr != WIRE_TR_UD && !xp_src_ok(qp, pkt)) {', 'if (0) {'),
 ('H12', T+'resp.c', 'pkt->deth.qkey != qp->attr.qkey || ', ''),
 ('R1', T+'resp.c', 'if (diff > 0)\n\t\treturn EMU_RESP_ERR_PSN_OUT_OF_SEQ;', ''),
 ('R2', T+'resp.c', 'if (diff < 0)\n\t\treturn EMU_RESP_DUPLICATE_REQUEST;', ''),
 ('R3-in-progress', T+'resp.c', 'return c->first || c->cls != opseq ?', 'return 0 ?'),
 ('R3-none', T+'resp.c', 'return c->first ? EMU_RESP_CHK_OP_VALID :', 'return 1 ? EMU_RESP_CHK_OP_VALID :'),
 ('R4', T+'resp.c', 'if (c->xrc_bad || !resp_op_allowed(c->qp, c->cls))', 'if (c->xrc_bad || (!resp_op_allowed(c->qp, c->cls) && 0))'),
 ('R5-parser', T+'resp.c', 'if (pkt->len_reason != WIRE_OK)\n\t\treturn resp_malformed(c, EMU_RESP_ERR_MALFORMED);', ''),
 ('R5-mtu', T+'resp.c', '(!c->last ? n != c->mtu : n > c->mtu || (!c->first && !n))', '(!c->last ? n > c->mtu : n > c->mtu || (!c->first && !n))'),
 ('R5-last-empty', T+'resp.c', ' || (!c->first && !n))', ')'),
 ('R5-only-long', T+'resp.c', '(!c->last ? n != c->mtu : n > c->mtu ||', '(!c->last ? n != c->mtu : 0 ||'),
 ('R5-dma-max', T+'resp.c', 'pkt->reth.dma_len > EMU_XPORT_MAX_MSG) ||', '0) ||'),
 ('R5-pad-parser', 'wire/parse.c', 'if (pad != wire_pad(p->payload_len))\n\t\treturn WIRE_R_PAD;', ''),
 ('R5-payload-unexpected', 'wire/parse.c', 'if (body)\n\t\t\treturn WIRE_R_PAYLOAD_UNEXPECTED;', ''),
 ('R5-payload-missing', 'wire/parse.c', 'if ((op->flags & WIRE_OPF_PAYLOAD_REQUIRED) && p->payload_len == 0)\n\t\treturn WIRE_R_PAYLOAD_MISSING;', ''),
 ('R6', T+'resp.c', '!c->qp->attr.max_dest_rd_atomic)\n', '0)\n'),
 ('R7', T+'resp.c', 'if (n == 0)\n\t\treturn resp_fail(c, EMU_RESP_ERR_RNR', 'if (n == 0 && 0)\n\t\treturn resp_fail(c, EMU_RESP_ERR_RNR'),
 ('R8', T+'resp.c', 'return emu_mr_check_rkey(c->qp, rkey, va, len, access, &c->proc, &c->owner, &c->err);', 'emu_mr_check_rkey(c->qp, rkey, va, len, access, &c->proc, &c->owner, &c->err); return true;'),
 ('R9-write-sum', T+'resp.c', 'if (len > x->wr_left || (c->last && len != x->wr_left))', 'if (0)'),
 ('R9-atomic-align', T+'resp.c', '(c->cls == WIRE_OPC_ATOMIC && (pkt->atomiceth.va & 7))', '0'),
 ('R9-send-long', T+'resp.c', 'if ((uint64_t)x->rcv_off + pkt->payload_len > x->rwqe_len)', 'if (0)'),
 ('R9-inv', T+'resp.c', 'if (emu_key_invalidate(xp_recv_pd(c->qp), pkt->ieth_rkey))', 'if (emu_key_invalidate(xp_recv_pd(c->qp), pkt->ieth_rkey) && 0)'),
 ('U1', T+'resp.c', 'x->uc_drop = !c->first;', 'x->uc_drop = 0;'),
 ('U2-U4-drop-rest', T+'resp.c', 'x->uc_drop = (c->uc & RESP_UC_ALL) ? 1 : !c->last;', 'x->uc_drop = 0;'),
 ('D1', T+'resp.c', ' || pkt->len_reason != WIRE_OK) {\n\t\txp_drop(qp, EMU_XDROP_UD_INVALID);', ') {\n\t\txp_drop(qp, EMU_XDROP_UD_INVALID);'),
 ('D2', T+'resp.c', 'xp_drop(qp, EMU_XDROP_UD_NO_RECV); /* UD has no RNR: lost */', '(void)0;'),
 ('D3', T+'resp.c', 'if (40u + pkt->payload_len > x->rwqe_len) {', 'if (0) {'),
 ('C1', T+'comp.c', 'else if (!wire_psn_before(c->psn, qp->x->sq_psn_hw))', 'else if (0)'),
 ('C2', T+'comp.c', 'return wire_psn_before(c->psn, c->qp->x->acked_psn);', '(void)c; return false;'),
 ('C3', T+'comp.c', 'if (pkt->len_reason != WIRE_OK) {', 'if (0) {'),
 ('C4', T+'comp.c', '} else if ((pkt->hdrs & WIRE_HDR_AETH) && !wire_aeth_syndrome_valid(c->syn)) {', '} else if (0) {'),
 ('C5', T+'comp.c', 'if (data && (!c->sw->need_resp ||', 'if (0 && (!c->sw->need_resp ||'),
 ('C5-nak-aeth', T+'comp.c', ' ||\n\t\t     ((c->pkt->hdrs & WIRE_HDR_AETH) && c->type != WIRE_AETH_ACK)))', '))'),
 ('C6-pos', T+'comp.c', 'if (!ok || pkt->payload_len != want) {', 'if ((void)ok, pkt->payload_len != want) {'),
 ('C6-len', T+'comp.c', 'if (!ok || pkt->payload_len != want) {', 'if (!ok) {'),
 ('C7', T+'comp.c', 'comp_rewind(qp, sw->resp_psn); /* a response was lost */', '(void)0;'),
 ('C8-seq', T+'comp.c', 'if (wire_aeth_value(c->syn) == WIRE_NAK_PSN_SEQ_ERR) {', 'if (0) {'),
 ('C8-rnr', T+'comp.c', 'if (c->type == WIRE_AETH_RNR_NAK)\n\t\treturn EMU_COMP_RNR_RETRY;', ''),
]


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def setup(work):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = sh(['git', '-C', here, 'ls-files', '-z'], check=True).stdout.split('\0')
    for f in files:
        if f and os.path.isfile(os.path.join(here, f)):
            os.makedirs(os.path.join(work, os.path.dirname(f)), exist_ok=True)
            shutil.copy2(os.path.join(here, f), os.path.join(work, f))
    r = sh(['meson', 'setup', os.path.join(work, 'b')], cwd=work)
    if r.returncode:
        sys.exit('meson setup failed:\n' + r.stdout[-2000:] + r.stderr[-2000:])


def build(work):
    return sh(['ninja', '-C', os.path.join(work, 'b'), 'tests/xport/test_ibta',
               'tests/wire/test_wire_reasons'])


def failing(work, wire):
    names = re.findall(r"'(ibta_[a-z0-9_]+)'",
                       open(os.path.join(work, 'tests/xport/meson.build')).read())
    exe = os.path.join(work, 'b/tests/xport/test_ibta')
    out = [n for n in names if sh([exe, n], timeout=120).returncode]
    if wire:
        exe = os.path.join(work, 'b/tests/wire/test_wire_reasons')
        for n in re.findall(r'\{ "([a-z0-9-]+)", t_',
                            open(os.path.join(work, 'tests/wire/test_reasons.c')).read()):
            if sh([exe, n], timeout=120).returncode:
                out.append('wire-reason-' + n)
    return out


def main(argv):
    work = None
    if argv[:1] == ['-w']:
        work, argv = argv[1], argv[2:]
    work = work or tempfile.mkdtemp(prefix='uroce-mutate-')
    setup(work)
    r = build(work)
    if r.returncode:
        sys.exit('the unmutated build failed:\n' + r.stdout[-2000:])
    if failing(work, True):
        sys.exit('the unmutated tests fail: fix them first')
    bad = 0
    for row, f, old, new in MUTATIONS:
        if argv and row not in argv:
            continue
        p = os.path.join(work, f)
        text = open(p).read()
        if text.count(old) != 1:
            print('%-22s DOES NOT APPLY (found %d times): update its row' % (row, text.count(old)))
            bad = 1
            continue
        open(p, 'w').write(text.replace(old, new))
        try:
            r = build(work)
            if r.returncode:
                print('%-22s DOES NOT BUILD: update its row\n%s' % (row, r.stdout[-800:]))
                bad = 1
                continue
            got = failing(work, f.startswith('wire/'))
            print('%-22s %2d fail: %s' % (row, len(got), ' '.join(got) or 'NONE - NO TEST CATCHES IT'),
                  flush=True)
            bad |= not got
        finally:
            open(p, 'w').write(text)
    print('work directory:', work)
    return bad


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
