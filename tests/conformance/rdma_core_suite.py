#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rdma-core's own pyverbs test suite against a default uroced (issue 11).

Debian's rdma-core package installs the suite in
/usr/share/doc/rdma-core/tests, some files gzipped. This copies it into a
private temp dir (gunzipping what is compressed; nothing of rdma-core's is
in this tree), starts one default uroced with its own UROCE_RUN_DIR, runs
the chosen modules one by one with /usr/bin/python3 and liburoce
preloaded, prints passed/failed/skipped per module, stops the daemon and
removes both dirs. Every wait is bounded.

  rdma_core_suite.py --uroced PATH --shim PATH [--preload-first RT]
                     [--suite-dir DIR] [--hugepages N] [--list] MODULE...

--hugepages N: as root, N more 2 MB huge pages for the run, the old count
restored after it (hugepages.py), so test_odp's huge-page tests run.

Exit status: 0 when every module ran with no failure or error, 77 when
the suite or pyverbs is not installed, 1 otherwise.
"""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import harness as h  # noqa: E402  (tests/lib/harness.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hugepages  # noqa: E402

SUITE = '/usr/share/doc/rdma-core/tests'
# per module; the slowest (test_qpex, test_mr) take well under this here
MODULE_TIMEOUT = 240

# Modules that do not apply to a RoCE device: vendor-specific (mlx5, EFA),
# CUDA/GPU memory, and rdma-core's helpers that are not test modules.
NOT_ROCE = re.compile(r'^test_(mlx5_|efa|cuda_)')
# every module that applies runs (test_rdmacm too: RDMA CM exists)
LATER = set()


def copy_suite(src, dst):
    """The suite as a package 'tests' under dst, gunzipped, without the
    modules that do not apply: its __init__ imports every test_*.py it
    finds, and the mlx5/EFA ones fail to import without their provider."""
    pkg = os.path.join(dst, 'tests')
    os.mkdir(pkg)
    for fn in sorted(os.listdir(src)):
        path = os.path.join(src, fn)
        name = fn[:-3] if fn.endswith('.gz') else fn
        if not name.endswith('.py'):
            continue
        mod = name[:-3]
        if NOT_ROCE.match(mod) or mod in LATER:
            continue
        if fn.endswith('.gz'):
            with gzip.open(path, 'rb') as f, open(os.path.join(pkg, name), 'wb') as o:
                shutil.copyfileobj(f, o)
        else:
            shutil.copyfile(path, os.path.join(pkg, name))
    return pkg


def modules(pkg):
    return sorted(fn[:-3] for fn in os.listdir(pkg)
                  if fn.startswith('test_') and fn.endswith('.py'))


SUMMARY = re.compile(r'^Ran (\d+) tests? in', re.M)
TAIL = re.compile(r'^(OK|FAILED)(?: \((.*)\))?\s*$', re.M)


def tally(out):
    """(passed, failed, errors, skipped) from unittest's summary, or None
    when the run did not get that far (crash, import error, timeout)."""
    m = SUMMARY.search(out)
    t = TAIL.search(out, m.end()) if m else None
    if not m or not t:
        return None
    ran = int(m.group(1))
    n = {'failures': 0, 'errors': 0, 'skipped': 0,
         'expected failures': 0, 'unexpected successes': 0}
    for part in (t.group(2) or '').split(','):
        if '=' in part:
            k, v = part.strip().split('=')
            n[k] = int(v)
    failed = n['failures'] + n['unexpected successes']
    passed = ran - failed - n['errors'] - n['skipped'] - n['expected failures']
    return passed, failed, n['errors'], n['skipped']


HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, '..', '..', 'docs', 'conformance.md')
# unittest -v: "name (module.Class.name)", the docstring's first line on the
# next line when the test has one, then " ... skipped 'why'"
SKIPPED = re.compile(r"^(test_\w+) \([\w.]+\)(?:\n.*?)? \.\.\. skipped (.*)$", re.M)
# the table rows of docs/conformance.md's skip sections: | module | test | why |
ROW = re.compile(r'^\| (test_\w+) \| (test_\w+) \|', re.M)
HUGE_SECTION = '## Skips without 2 MB huge pages'


def documented_skips(doc=DOC):
    """{module: {test}} skipped on uroce as docs/conformance.md records
    them, and the same for the tests that skip only when no 2 MB huge
    pages can be reserved (non-root)."""
    text = open(doc).read()
    main, _, huge = text.partition(HUGE_SECTION)
    out = ({}, {})
    for part, d in ((main, out[0]), (huge, out[1])):
        for m in ROW.finditer(part):
            d.setdefault(m.group(1), set()).add(m.group(2))
    return out


def skipped_tests(out):
    return {m.group(1) for m in SKIPPED.finditer(out)}


def run_module(pkg_parent, mod, env):
    # run_tests.py parses --dev/--port/--gid and hands the rest to unittest
    cmd = ['/usr/bin/python3', os.path.join(pkg_parent, 'tests', 'run_tests.py'),
           '--dev', 'uroce0', '--port', '1', '--gid', '1', '-v', mod]
    try:
        rc, out = h.run(cmd, env, timeout=MODULE_TIMEOUT)
    except subprocess.TimeoutExpired:
        print('%s: timed out after %d s' % (mod, MODULE_TIMEOUT))
        return None, set()
    t = tally(out)
    if t is None:
        print('%s: no unittest summary (exit status %d)' % (mod, rc))
    return t, skipped_tests(out)


def run_test():
    ap = argparse.ArgumentParser()
    ap.add_argument('--uroced', required=True)
    ap.add_argument('--shim', required=True)
    ap.add_argument('--preload-first', default='')
    ap.add_argument('--suite-dir', default=SUITE)
    ap.add_argument('--doc', default=DOC, help='the skip tables (docs/conformance.md)')
    ap.add_argument('--hugepages', type=int, default=0)
    ap.add_argument('--list', action='store_true',
                    help='print the modules that apply and exit')
    ap.add_argument('modules', nargs='*')
    a = ap.parse_args()
    if not os.path.isdir(a.suite_dir) or not os.path.exists('/usr/bin/python3'):
        return h.skip('rdma-core tests not installed at %s' % a.suite_dir)
    if subprocess.call(['/usr/bin/python3', '-c', 'import pyverbs.device']) != 0:
        return h.skip('pyverbs (python3-pyverbs) not available')
    work = tempfile.mkdtemp(prefix='uroce-conf-')
    try:
        pkg = copy_suite(a.suite_dir, work)
        mods = modules(pkg)
        if a.list:
            print('\n'.join(mods))
            return 0
        bad = [m for m in a.modules if m not in mods]
        if bad:
            return h.fail('not a module of the suite that applies: ' + ' '.join(bad))
        with hugepages.Reservation(a.hugepages) as res:
            return run_all(a, work, a.modules or mods, res.enough)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_all(a, work, mods, huge_ok):
    rig = h.Rig(a.uroced, 'uroce-conf-run-')
    rig.start()
    env = rig.penv(a.shim, a.preload_first, {'PYTHONDONTWRITEBYTECODE': '1'})
    results = {m: run_module(work, m, env) for m in mods}
    return report(results, documented_skips(a.doc), huge_ok)


def report(results, documented, huge_ok):
    """Fails on any failure, error or unfinished module, and on any
    difference between the tests that skipped and docs/conformance.md's
    tables (a capability uroce stopped reporting turns tests into skips; a
    documented skip that now runs means the table is stale). A module
    that ran nothing, or whose huge-page tests could not run, is a skip."""
    skips, huge = documented
    print('\n%-28s %7s %7s %7s %7s' % ('module', 'passed', 'failed', 'errors', 'skipped'))
    rc = 0
    partial = []
    tot = [0, 0, 0, 0]
    for m, (t, got) in results.items():
        if t is None:
            print('%-28s %s' % (m, 'did not finish'))
            rc = 1
            continue
        print('%-28s %7d %7d %7d %7d' % ((m,) + t))
        tot = [x + y for x, y in zip(tot, t)]
        if t[1] or t[2]:
            rc = 1
        want = set(skips.get(m, ()))
        if not huge_ok:
            want |= huge.get(m, set())
        if got != want:
            for n in sorted(got - want):
                h.fail('%s.%s skipped; docs/conformance.md does not list it' % (m, n))
            for n in sorted(want - got):
                h.fail('%s.%s ran; docs/conformance.md lists it as skipped' % (m, n))
            rc = 1
        if t[0] == 0:
            partial.append('%s ran none of its tests (every skip documented)' % m)
        elif not huge_ok and huge.get(m):
            partial.append('%s: %s need 2 MB huge pages, none could be reserved' %
                           (m, ', '.join(sorted(huge[m]))))
    print('%-28s %7d %7d %7d %7d' % tuple(['total'] + tot))
    if rc == 0 and partial:
        return h.skip('; '.join(partial))
    return rc


if __name__ == '__main__':
    sys.exit(h.main(run_test))
