#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_arch.py must fail for each rule it enforces: run it (--no-objects)
on small made-up emu/ and verbs/ trees, one broken rule each, and on a
clean one.

usage: test_check_arch.py CHECK_ARCH_PY"""
import os
import subprocess
import sys
import tempfile

CLEAN = {
    "emu/core/emu.h": '#include "emu_obj.h"\n',
    "emu/core/emu_obj.h": "struct emu_xport_qp;\nstruct emu_qp { struct emu_xport_qp *x; };\n",
    "emu/core/emu_int.h": '#include "emu_obj.h"\n',
    "emu/core/objs.c": '#include "emu_obj.h"\n#include "emu_int.h"\n',
    "emu/net/net.h": '#include "emu_obj.h"\n',
    "emu/net/tx.c": '#include "net.h"\n',
    "emu/transport/xport_state.h": "struct emu_xport_qp { int psn; };\n"
                                   "enum emu_xport_drop { EMU_XDROP_QP_STATE };\n",
    "emu/transport/xport.h": '#include "net.h"\n#include "xport_state.h"\n',
    "emu/transport/xport_int.h": '#include "xport.h"\n',
    "emu/transport/req.c": '#include "xport_int.h"\nint f(struct emu_qp *qp) '
                           '{ return qp->x->psn; }\n',
    "emu/daemon/daemon.h": '#include "xport.h"\n#include "emu.h"\n',
    "emu/daemon/main.c": '#include "daemon.h"\n',
    # the shim: concern headers, the umbrella for ops.c, rdma_ucm files
    # that depend one way
    "verbs/urv_base.h": "",
    "verbs/urv.h": '#include "urv_base.h"\n',
    "verbs/ops.c": '#include "urv.h"\n',
    "verbs/pd.c": '#include "urv_base.h"\n',
    "verbs/ucma.c": '#include "ucma_cmd.c"\n',
    "verbs/ucma_cmd.c": "",
}


def func(name, body_lines):
    """A definition whose body, braces included, is body_lines + 2 lines."""
    return "int %s(void)\n{\n%s}\n" % (name, "\tx++;\n" * body_lines)


LONG_C = "static int x;\n" + func("small", 3) + func("big", 120)

# (what is broken, files changed or added, text the failure must contain)
CASES = [
    ("file left in emu/", {"emu/stray.c": '#include "emu.h"\n'},
     "directly in emu/"),
    ("core includes the transport", {"emu/core/objs.c": '#include "xport.h"\n'},
     "upward dependency core -> transport"),
    ("net includes a core-private header",
     {"emu/net/tx.c": '#include "net.h"\n#include "emu_int.h"\n'},
     "private to its folder"),
    ("header neither public nor private", {"emu/net/neigh_int.h": ""},
     "neither PUBLIC_HEADERS nor PRIVATE_HEADERS"),
    ("include cycle inside a folder",
     {"emu/core/a.c": '#include "emu_int.h"\n',
      "emu/core/emu_int.h": '#include "emu_obj.h"\n#include "a.c"\n'},
     "file cycle"),
    ("folder outside LAYERS", {"emu/extra/x.c": '#include "emu_obj.h"\n'},
     "not in LAYERS"),
    ("a layer below the daemon includes the core's umbrella",
     {"emu/net/tx.c": '#include "net.h"\n#include "emu.h"\n'},
     "includes the umbrella emu/core/emu.h"),
    ("a core file names the transport's state",
     {"emu/core/objs.c": '#include "emu_obj.h"\nint f(void) { return EMU_XDROP_QP_STATE; }\n'},
     "names EMU_XDROP_QP_STATE"),
    ("a core file reaches through qp->x",
     {"emu/core/objs.c": '#include "emu_obj.h"\nint f(struct emu_qp *qp) '
                         '{ return qp->x->psn; }\n'},
     "reaches into the transport's state"),
    ("verbs: a cycle between two files",
     {"verbs/pd.c": '#include "urv_base.h"\n#include "qp.c"\n',
      "verbs/qp.c": '#include "pd.c"\n'},
     "file cycle: verbs/pd.c <-> verbs/qp.c"),
    ("verbs: the rdma_ucm files in a cycle again (the ratchet is empty)",
     {"verbs/ucma_cmd.c": '#include "ucma_new.c"\n',
      "verbs/ucma_new.c": '#include "ucma.c"\n'},
     "file cycle"),
    ("verbs: a header not placed on purpose", {"verbs/urv_new.h": ""},
     "not in VERBS_HEADERS"),
    ("verbs: the umbrella outside ops.c and interpose.c",
     {"verbs/pd.c": '#include "urv.h"\n'},
     "includes the umbrella verbs/urv.h"),
    ("function over the length limit", {"verbs/long.c": LONG_C},
     "big() is 122 lines"),
]


def run(check, files, args=("--no-objects",)):
    with tempfile.TemporaryDirectory(prefix="arch-") as root:
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as fh:
                fh.write(text)
        p = subprocess.run([sys.executable, check, root,
                            *(args if args[0] == "--longest" else (root,) + args)],
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr


def main():
    check = sys.argv[1]
    bad = 0
    rc, out = run(check, CLEAN)
    if rc != 0:
        print("FAIL: the clean tree is refused:\n" + out)
        bad += 1
    for what, change, expect in CASES:
        rc, out = run(check, dict(CLEAN, **change))
        if rc == 0 or expect not in out:
            print("FAIL: %s: rc %d, no %r in:\n%s" % (what, rc, expect, out))
            bad += 1
        else:
            print("ok: %s" % what)
    # the table in docs/architecture.md: longest first, rule 3's count
    rc, out = run(check, dict(CLEAN, **{"emu/core/f.c": func("mid", 5) + func("top", 9),
                                        "verbs/g.c": func("low", 1)}),
                  ("--longest", "2"))
    want = "| 11 | `top` (core/f.c) | |\n| 7 | `mid` (core/f.c) | |\n"
    if rc != 0 or out != want:
        print("FAIL: --longest 2: rc %d, %r instead of %r" % (rc, out, want))
        bad += 1
    else:
        print("ok: --longest")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
