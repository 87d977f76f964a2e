#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Architecture rules of the daemon (issue 8), checked from the sources and
the built objects:

  1. no dependency cycle between emu/ files: a file depends on another when
     its object needs a global symbol the other defines (nm U vs T/D/B/R),
     or when it #includes it;
  2. no cycle between emu/ folders (layers) and no call or #include from a
     layer into a layer above it (LAYERS below, lowest first);
  3. no function in emu/ or verbs/ longer than MAX_FUNC_LINES, except in the
     files other engineers are shortening right now (LEN_EXCEPT).

  4. every emu/ file is in a layer folder, and every header is either one
     of its layer's public headers (PUBLIC_HEADERS) or private
     (PRIVATE_HEADERS); an umbrella header (core/emu.h) is included only
     where UMBRELLA allows (the daemon);
  5. no core file names anything of the transport's state (XPORT_STATE)
     but the opaque pointers to it, nor reaches through them;
  6. verbs/ (the shim): no file cycle (VERBS_CYCLE_EXCEPT, a ratchet),
     every header in VERBS_HEADERS, the umbrella urv.h only where
     VERBS_UMBRELLA allows.

usage: check_arch.py SOURCE_ROOT BUILD_ROOT [--no-objects]
       check_arch.py SOURCE_ROOT --longest N
Object files are found through BUILD_ROOT/compile_commands.json.
--longest prints the N longest functions of emu/ and verbs/ by rule 3's
measure as markdown table rows (docs/architecture.md's table is made so).
"""
import json
import os
import re
import subprocess
import sys

# Layers of emu/, lowest first: a folder may use only itself and the folders
# before it. Every emu/ source is in one of these folders (none directly in
# emu/). "cm" (RDMA CM) sits between the transport and the daemon.
LAYERS = ["core", "net", "transport", "cm", "daemon"]

MAX_FUNC_LINES = 120

# Files being rewritten in parallel (transport state machines; shim opcode
# table): the lead empties this list when those branches merge.
LEN_EXCEPT = set()

# Cycles not broken yet (a ratchet, not a waiver): a strongly connected
# component passes only if all its files are inside one of these sets, so a
# new file joining a cycle, or a new cycle, fails. Empty: the last one
# (core <-> transport) was broken by struct emu_xport_ops.
CYCLE_EXCEPT = []

# Headers private to their folder: only files of that folder include them.
PRIVATE_HEADERS = {"emu/core/emu_int.h", "emu/core/memcheck.h",
                   "emu/transport/xport_int.h", "emu/daemon/daemon.h",
                   "emu/daemon/access.h", "emu/daemon/sysfs.h", "emu/daemon/ctl_op.h",
                   "emu/daemon/eal_check.h", "emu/daemon/spin.h", "emu/daemon/port_xsk.h",
                   "emu/cm/ucma_int.h", "emu/cm/ibcm_src.h"}

# The public headers of each layer, for the layers above. The core has one
# per concern (log, objects, device and ops tables, memory, RX burst, keys,
# CQ, rings) and emu.h, an umbrella of them all for the daemon only
# (UMBRELLA); the transport's state of a QP and of a device has its own
# header. Every header of emu/ is either here or in PRIVATE_HEADERS, so a
# new header has to be placed on purpose.
PUBLIC_HEADERS = {"emu/core/emu.h", "emu/core/emu_log.h", "emu/core/emu_obj.h",
                  "emu/core/emu_dev.h", "emu/core/emu_mem.h", "emu/core/emu_burst.h",
                  "emu/core/emu_keys.h", "emu/core/emu_cq.h", "emu/core/emu_ring.h",
                  "emu/net/net.h", "emu/transport/xport.h", "emu/transport/xport_state.h",
                  # cm: the IB CM engine and the rdma_ucm, each used by the daemon
                  "emu/cm/ibcm.h", "emu/cm/ucma.h"}

# Umbrella headers and the only folders that may include them: a layer
# below includes the headers of the concerns it uses, so what it depends
# on stays visible (and a change to one concern rebuilds only its users).
UMBRELLA = {"emu/core/emu.h": {"daemon"}}

# The transport's own state (types of a QP's and a device's transport
# state, kept by the core only as opaque pointers qp->x and d->x): no core
# file names anything declared in it, nor reaches through those pointers.
# Only the two tags may appear, as the opaque pointers' types.
XPORT_STATE = "emu/transport/xport_state.h"
XPORT_STATE_OPAQUE = {"emu_xport_qp", "emu_xport_dev"}

INC_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def rel(root, p):
    return os.path.relpath(os.path.realpath(p), os.path.realpath(root))


def emu_files(src):
    out = []
    for d, _, fs in os.walk(os.path.join(src, "emu")):
        for f in fs:
            if f.endswith((".c", ".h")):
                out.append(rel(src, os.path.join(d, f)))
    return sorted(out)


def folder(path):
    d = os.path.dirname(path)
    return "." if d == "emu" else os.path.relpath(d, "emu").split(os.sep)[0]


def check_placement(files, errors):
    """Every file in a layer folder; every header public or private."""
    for f in files:
        if folder(f) == ".":
            errors.append("%s is directly in emu/: put it in a layer folder "
                          "(LAYERS)" % f)
        elif f.endswith(".h") and f not in PUBLIC_HEADERS | PRIVATE_HEADERS:
            errors.append("%s is in neither PUBLIC_HEADERS nor "
                          "PRIVATE_HEADERS" % f)


def rank(fold):
    return LAYERS.index(fold) if fold in LAYERS else None


def module(path):
    """Headers and sources are separate nodes: a shared header (emu.h) must
    not glue every file that includes it into one cycle."""
    return path


def include_edges(src, files):
    by_name = {}
    for f in files:
        if f.endswith(".h"):
            by_name.setdefault(os.path.basename(f), []).append(f)
    edges = []
    for f in files:
        with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
            for ln in fh:
                m = INC_RE.match(ln)
                if not m:
                    continue
                name = m.group(1)
                near = os.path.normpath(os.path.join(os.path.dirname(f), name))
                if near in files:
                    edges.append((f, near, "include"))
                elif len(by_name.get(os.path.basename(name), [])) == 1:
                    edges.append((f, by_name[os.path.basename(name)][0], "include"))
    return edges


def object_map(src, build, top="emu/"):
    with open(os.path.join(build, "compile_commands.json")) as fh:
        cmds = json.load(fh)
    objs = {}
    for c in cmds:
        f = rel(src, os.path.join(c["directory"], c["file"]))
        if not f.startswith(top):
            continue
        o = os.path.join(c["directory"], c["output"])
        if os.path.exists(o):
            objs.setdefault(f, o)
    return objs


def symbol_edges(objs, errors):
    defs, undefs = {}, {}
    for f, o in objs.items():
        out = subprocess.run(["nm", "-P", o], capture_output=True, text=True,
                             check=True).stdout
        for ln in out.splitlines():
            parts = ln.split()
            if len(parts) < 2:
                continue
            sym, t = parts[0], parts[1]
            if sym.startswith(("__", ".")):
                # compiler and sanitizer runtime (ASan's weak
                # ___asan_globals_registered, __odr_asan_gen_*): not ours
                continue
            if t == "U":
                undefs.setdefault(f, set()).add(sym)
            elif t in "WV":
                # a weak definition lets a missing or renamed file link and
                # fail at run time instead (the old weak_xport.c)
                errors.append("weak definition %s in %s" % (sym, f))
            elif t in "TDBRCG":
                defs.setdefault(sym, set()).add(f)
    edges = []
    for f, us in undefs.items():
        for s in sorted(us):
            for g in sorted(defs.get(s, ())):
                if g != f:
                    edges.append((f, g, "calls " + s))
    return edges


def sccs(nodes, adj):
    """Tarjan; returns the components with more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in adj.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check_graph(edges, errors):
    for a, b, w in edges:
        if w == "include" and b in PRIVATE_HEADERS and folder(a) != folder(b):
            errors.append("%s includes %s, private to its folder" % (a, b))
        if w == "include" and b in UMBRELLA and folder(a) not in UMBRELLA[b]:
            errors.append("%s includes the umbrella %s: include the headers of the "
                          "concerns it uses" % (a, b))
    # file level: x.c/x.h are one node
    adj, why = {}, {}
    nodes = set()
    for a, b, w in edges:
        ma, mb = module(a), module(b)
        nodes.update((ma, mb))
        if ma != mb:
            adj.setdefault(ma, set()).add(mb)
            why.setdefault((ma, mb), w)
    for comp in sccs(nodes, adj):
        if any(set(comp) <= set(e) for e in CYCLE_EXCEPT):
            print("note: known cycle (CYCLE_EXCEPT): " + " <-> ".join(comp))
            continue
        detail = "; ".join("%s -> %s (%s)" % (a, b, why[(a, b)])
                           for a in comp for b in comp if (a, b) in why)
        errors.append("file cycle: %s\n    %s" % (" <-> ".join(comp), detail))
    # folder level
    fadj, fwhy = {}, {}
    for a, b, w in edges:
        fa, fb = folder(a), folder(b)
        if fa == fb:
            continue
        fadj.setdefault(fa, set()).add(fb)
        fwhy.setdefault((fa, fb), "%s -> %s (%s)" % (a, b, w))
        ra, rb = rank(fa), rank(fb)
        if ra is None or rb is None:
            errors.append("emu/%s is not in LAYERS: %s -> %s" % (
                fa if ra is None else fb, a, b))
        elif rb > ra:
            errors.append("upward dependency %s -> %s: %s -> %s (%s)" % (
                fa, fb, a, b, w))
    for comp in sccs(set(fadj) | {b for v in fadj.values() for b in v}, fadj):
        detail = "; ".join(fwhy[(a, b)] for a in comp for b in comp
                           if (a, b) in fwhy)
        errors.append("folder cycle: %s\n    %s" % (" <-> ".join(comp), detail))


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", " ", text, flags=re.S))


def state_names(src):
    """What XPORT_STATE declares: struct and enum tags, enum constants,
    macros (member names are unreachable: the type is incomplete in core)."""
    path = os.path.join(src, XPORT_STATE)
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8", errors="replace") as fh:
        t = strip_comments(fh.read())
    names = set(re.findall(r"\b(?:struct|enum)\s+(\w+)\s*\{", t))
    names |= set(re.findall(r"^\s*#\s*define\s+(\w+)", t, flags=re.M))
    for body in re.findall(r"\benum\s+\w+\s*\{(.*?)\}", t, flags=re.S):
        names |= set(re.findall(r"^\s*(\w+)", body, flags=re.M))
    names.discard(re.sub(r"\W", "_", XPORT_STATE).upper())
    return {n for n in names if not n.startswith("EMU_XPORT_STATE_H")}


def check_core_state(src, files, errors):
    """No core file names the transport's state or reaches through it."""
    names = state_names(src)
    for f in files:
        if folder(f) != "core":
            continue
        with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
            t = strip_comments(fh.read())
        for n in sorted(names):
            for m in re.finditer(r"\b%s\b" % re.escape(n), t):
                if n in XPORT_STATE_OPAQUE and re.match(r"\s*(\*|;)", t[m.end():]):
                    continue  # the opaque pointer (or its forward declaration)
                errors.append("%s names %s of the transport's state (%s)"
                              % (f, n, XPORT_STATE))
                break
        if re.search(r"\b(?:qp|d|dev)\s*->\s*x\s*->", t):
            errors.append("%s reaches into the transport's state (qp->x->, d->x->)" % f)


# ---- verbs/: the shim -------------------------------------------------
# One layer, so no LAYERS; but no cycle between its files either, and
# every header placed on purpose. A file depends on another when it
# includes it, or when its object needs a global symbol the other defines
# that a header of verbs/ declares: the functions the shim exports under
# libibverbs' or libc's names (ibv_*, close, munmap...) are reached
# through the dynamic linker, as the application reaches them.
VERBS_HEADERS = {"verbs/client.h", "verbs/real_fn.h", "verbs/sysfs.h", "verbs/ucma.h",
                 "verbs/ucma_gone.h", "verbs/ucma_int.h", "verbs/ucma_mux.h",
                 "verbs/urv.h", "verbs/urv_base.h", "verbs/urv_dev.h", "verbs/urv_ctl.h",
                 "verbs/urv_obj.h", "verbs/urv_mem.h", "verbs/urv_verbs.h"}

# urv.h is an umbrella of the urv_*.h concern headers, for the files that
# name every kind of object (the ops table, the exports).
VERBS_UMBRELLA = {"verbs/urv.h": {"verbs/ops.c", "verbs/interpose.c"}}

# Cycles not broken yet in verbs/ (a ratchet, as CYCLE_EXCEPT). Empty: the
# last one, among the six rdma_ucm files, went with issue 20 item 2.
VERBS_CYCLE_EXCEPT = []


def verbs_files(src):
    d = os.path.join(src, "verbs")
    if not os.path.isdir(d):
        return []
    return sorted("verbs/" + f for f in os.listdir(d) if f.endswith((".c", ".h")))


def verbs_declared(src, files):
    """Every identifier the headers of verbs/ mention."""
    names = set()
    for f in files:
        if f.endswith(".h"):
            with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
                names |= set(re.findall(r"\b[A-Za-z_]\w*\b", strip_comments(fh.read())))
    return names


def check_verbs(src, build, objects, errors):
    files = verbs_files(src)
    edges = include_edges(src, files)
    for f in files:
        if f.endswith(".h") and f not in VERBS_HEADERS:
            errors.append("%s is not in VERBS_HEADERS: place the header on purpose" % f)
    for a, b, w in edges:
        if w == "include" and b in VERBS_UMBRELLA and a not in VERBS_UMBRELLA[b]:
            errors.append("%s includes the umbrella %s: include the headers of the "
                          "concerns it uses" % (a, b))
    if objects:
        objs = object_map(src, build, "verbs/")
        declared = verbs_declared(src, files)
        for a, b, w in symbol_edges(objs, errors):
            if w.split()[-1] in declared:
                edges.append((a, b, w))
    adj, why = {}, {}
    for a, b, w in edges:
        if a != b:
            adj.setdefault(a, set()).add(b)
            why.setdefault((a, b), w)
    for comp in sccs(set(files), adj):
        if any(set(comp) <= e for e in VERBS_CYCLE_EXCEPT):
            print("note: known cycle (VERBS_CYCLE_EXCEPT): " + " <-> ".join(comp))
            continue
        detail = "; ".join("%s -> %s (%s)" % (a, b, why[(a, b)])
                           for a in comp for b in comp if (a, b) in why)
        errors.append("file cycle: %s\n    %s" % (" <-> ".join(comp), detail))
    return len(files)


FUNC_START = re.compile(r"^[A-Za-z_][^;]*\($|^[A-Za-z_][^;]*\)\s*$")


# Long functions in the layer owner's files not split yet: a ratchet like
# CYCLE_EXCEPT (a listed function may shrink, not grow; nothing else may
# pass the limit). Empty it as they are split.
LEN_DEBT = {
}


def long_functions(src, path, limit=MAX_FUNC_LINES):
    """Functions of more than limit lines. Kernel style: a definition's
    body opens with '{' in column 0 and closes with '}' in column 0."""
    out = []
    with open(os.path.join(src, path), encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    name, start = None, None
    for i, ln in enumerate(lines):
        if start is None:
            if ln == "{" and i > 0:
                j = i - 1
                while j > 0 and "(" not in lines[j]:
                    j -= 1
                m = re.search(r"([A-Za-z_]\w*)\s*\(", lines[j])
                name, start = (m.group(1) if m else "?"), i
        elif ln.startswith("}"):
            n = i - start + 1
            if n > limit and lines[start - 1].rstrip().endswith(")"):
                out.append((name, n))
            start = None
    return out


def length_sources(src):
    """The .c files rule 3 measures, relative to src."""
    for top in ("emu", "verbs"):
        for d, _, fs in sorted(os.walk(os.path.join(src, top))):
            for f in sorted(fs):
                if f.endswith(".c"):
                    yield rel(src, os.path.join(d, f))


def print_longest(src, count):
    found = [(n, name, p) for p in length_sources(src)
             for name, n in long_functions(src, p, 0)]
    found.sort(key=lambda t: (-t[0], t[1]))
    for n, name, p in found[:count]:
        shown = p[len("emu/"):] if p.startswith("emu/") else p
        print("| %d | `%s` (%s) | |" % (n, name, shown))
    return 0


def check_lengths(src, errors):
    for p in length_sources(src):
        if p in LEN_EXCEPT:
            continue
        for name, n in long_functions(src, p):
            if n <= LEN_DEBT.get((p, name), 0):
                print("note: long function (LEN_DEBT): %s: %s() %d"
                      % (p, name, n))
                continue
            errors.append("%s: %s() is %d lines (max %d)" % (
                p, name, n, MAX_FUNC_LINES))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    src, build = sys.argv[1], sys.argv[2]
    if build == "--longest" and len(sys.argv) == 4 and sys.argv[3].isdigit():
        return print_longest(src, int(sys.argv[3]))
    files = emu_files(src)
    edges = include_edges(src, files)
    errors = []
    check_placement(files, errors)
    if "--no-objects" not in sys.argv:
        objs = object_map(src, build)
        # *.bpf.c are programs for the kernel (clang -target bpf, a
        # custom_target): no host object, no symbols to link
        missing = [f for f in files if f.endswith(".c") and not f.endswith(".bpf.c")
                   and f not in objs]
        if missing:
            # every emu/ source must be built: a file meson does not list
            # is dead code or a forgotten build entry
            print("FAIL: emu/ sources without an object: " + ", ".join(missing))
            return 1
        edges += symbol_edges(objs, errors)
    check_graph(edges, errors)
    check_core_state(src, files, errors)
    nverbs = check_verbs(src, build, "--no-objects" not in sys.argv, errors)
    check_lengths(src, errors)
    for e in errors:
        print("FAIL: " + e)
    print("%d emu files, %d dependency edges, %d verbs files, %d problems" % (
        len(files), len(edges), nverbs, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
