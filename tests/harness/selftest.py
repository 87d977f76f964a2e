#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of the harnesses themselves (issue 24): each case runs a real
harness of tests/ against wrappers that fail in one described way (a fake
uroced, fake programs first on PATH: fake_uroced.py, fake_prog.py) and
checks that the harness fails — or skips — with its reason; the control
cases check that the same harness passes when nothing fails, so that a
case cannot pass because the harness fails for some other reason.

  selftest.py CASE [--fuzz-replay PATH]
Exit 0 when the harness judged as expected, 1 otherwise."""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
SRC = os.path.dirname(TESTS)
sys.path.insert(0, os.path.join(TESTS, 'lib'))
import harness as h  # noqa: E402

FAKES = ['ibv_rc_pingpong', 'rping', 'fi_info', 'uroce-ctl']
PY = '/usr/bin/python3'


class World:
    """A temp dir with the fake programs on PATH and the fake uroced."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix='uroce-harness-')
        self.bin = os.path.join(self.dir, 'bin')
        os.mkdir(self.bin)
        for n in FAKES:
            os.symlink(os.path.join(HERE, 'fake_prog.py'), os.path.join(self.bin, n))
        self.uroced = os.path.join(HERE, 'fake_uroced.py')
        self.shim = os.path.join(self.dir, 'liburoce.so')     # preloaded into fakes: unused
        open(self.shim, 'w').close()

    def run(self, cmd, daemon='clean', client='ok', timeout=120):
        env = dict(os.environ, PATH=self.bin + ':' + os.environ['PATH'],
                   FAKE_UROCED=daemon, FAKE_CLIENT=client,
                   UROCE_CTL=os.path.join(self.bin, 'uroce-ctl'))
        # the fakes are Python: an empty LD_PRELOAD file would only warn
        env['UROCE_HARNESS_SELFTEST'] = '1'
        rc, out = h.run(cmd, env, timeout, quiet=True)
        print('  -> exit %d; last lines:\n    %s' % (
            rc, '\n    '.join(out.strip().splitlines()[-6:])), flush=True)
        return rc, out

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def failed(rc):
    return rc not in (0, 77)


def run_py(w, mode, *args):
    return [PY, os.path.join(TESTS, 'verbs', 'run.py'), '--uroced', w.uroced,
            '--shim', '/dev/null', mode] + list(args)


def cm_py(w, mode, *args):
    return [PY, os.path.join(TESTS, 'cm', 'cm.py'), '--uroced', w.uroced,
            '--shim', '/dev/null', '--seed', '1', mode] + list(args)


def stack_py(w, mode, *args):
    return [PY, os.path.join(TESTS, 'stack', 'stack.py'), '--uroced', w.uroced,
            '--shim', '/dev/null', mode] + list(args)


PP = ['pair', 'ibv_rc_pingpong', '-d', 'uroce0', '-g', '1', '-c', '-p', '1']


def case_run_pair(w):
    """run.py pair: a client that exits 1 after its exchange, one that
    finds no device, and a daemon that reports at its end each fail it,
    at once (no retry); all-good passes."""
    rc, out = w.run(run_py(w, *PP))
    h.check(rc == 0, 'run.py pair, nothing wrong: passes')
    rc, out = w.run(run_py(w, *PP), client='exit1')
    h.check(failed(rc), 'run.py pair, client exits 1 after its exchange: fails')
    rc, out = w.run(run_py(w, *PP), client='nodev')
    h.check(failed(rc) and 'RETRY' not in out,
            'run.py pair, client finds no device: fails, not retried')
    rc, out = w.run(run_py(w, *PP), client='nodev-once')
    h.check(failed(rc), 'run.py pair, first client finds no device, a second would pass: fails')
    rc, out = w.run(run_py(w, *PP), daemon='report')
    h.check(failed(rc) and 'runtime error' in out,
            'run.py pair, daemon prints a UBSan report and exits 3: fails')
    rc, out = w.run(run_py(w, *PP), daemon='leak')
    h.check(failed(rc) and 'LeakSanitizer' in out, 'run.py pair, daemon leaks: fails')


def case_daemon_start(w):
    """A daemon that exits at start fails the test with its status, as
    soon as it exited (the wait is bounded by the daemon being alive);
    a missing uroced is a skip."""
    rc, out = w.run(run_py(w, *PP), daemon='die')
    h.check(failed(rc) and 'did not come up (exit status 1)' in out,
            'daemon exits 1 at start: fails with its status')
    cmd = run_py(w, *PP)
    cmd[cmd.index(w.uroced)] = os.path.join(w.dir, 'no-uroced')
    rc, out = w.run(cmd)
    h.check(rc == 77 and 'SKIP:' in out, 'no uroced built: skips (77) with the reason')


def case_stack(w):
    """stack.py judges its daemon (it discarded the exit status)."""
    rc, out = w.run(stack_py(w, 'fi-info'))
    h.check(rc == 0, 'stack.py fi-info, nothing wrong: passes')
    rc, out = w.run(stack_py(w, 'fi-info'), daemon='report')
    h.check(failed(rc) and 'runtime error' in out,
            'stack.py fi-info, daemon prints a UBSan report and exits 3: fails')


def case_cm(w):
    """cm.py pair: a client that finds no RDMA device or that completes
    and exits 1 fails at once; the named race (REJECTED 8 before the
    listen) is retried, printed and counted, and not without bound."""
    rc, out = w.run(cm_py(w, 'rping', '64', '3'))
    h.check(rc == 0 and 'retries' not in out, 'cm.py rping, nothing wrong: passes')
    rc, out = w.run(cm_py(w, 'rping', '64', '3'), client='nodev')
    h.check(failed(rc) and 'RETRY' not in out, 'cm.py rping, client finds no device: fails, '
            'not retried')
    rc, out = w.run(cm_py(w, 'rping', '64', '3'), client='nodev-once')
    h.check(failed(rc), 'cm.py rping, first client finds no device, a second would pass: '
            'fails (the old pair passed it)')
    rc, out = w.run(cm_py(w, 'rping', '64', '3'), client='exit1')
    h.check(failed(rc), 'cm.py rping, client completes and exits 1: fails')
    rc, out = w.run(cm_py(w, 'rping', '64', '3'), client='race')
    h.check(rc == 0 and re.search(r'RETRY 1/\d+ of client: client before the listen', out)
            and 'retries: 1 (client before the listen x1)' in out,
            'cm.py rping, REJECTED 8 once: retried once, printed and counted, passes')
    rc, out = w.run(cm_py(w, 'rping', '64', '3'), client='race-always')
    h.check(failed(rc) and 'RETRY limit' in out, 'cm.py rping, REJECTED 8 for ever: fails '
            'after the bound')
    rc, out = w.run(cm_py(w, 'fi-info'), daemon='leak')
    h.check(failed(rc) and 'LeakSanitizer' in out, 'cm.py fi-info, daemon leaks: fails')


def fake_suite(w, skipped_doc):
    """An rdma-core-like suite with one module: one test passes, one
    skips ('No ODP caps'); a doc that lists the skip or not."""
    suite = os.path.join(w.dir, 'suite')
    os.mkdir(suite)
    with open(os.path.join(suite, 'run_tests.py'), 'w') as f:
        f.write('''import os, sys, unittest
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
args = [a for i, a in enumerate(sys.argv[1:]) if not a.startswith('--')
        and not sys.argv[i].startswith('--')]
mods = [a for a in args if a != '-v']
s = unittest.defaultTestLoader.loadTestsFromNames(['tests.' + m for m in mods])
r = unittest.TextTestRunner(verbosity=2).run(s)
sys.exit(0 if r.wasSuccessful() else 1)
''')
    with open(os.path.join(suite, 'test_fake.py'), 'w') as f:
        f.write('''import unittest
class T(unittest.TestCase):
    def test_runs(self):
        pass
    def test_odp_thing(self):
        raise unittest.SkipTest('No ODP caps')
''')
    with open(os.path.join(suite, '__init__.py'), 'w') as f:
        f.write('')
    doc = os.path.join(w.dir, 'conformance.md')
    with open(doc, 'w') as f:
        f.write('# skips\n\n| module | test | message |\n|---|---|---|\n')
        if skipped_doc:
            f.write('| test_fake | test_odp_thing | No ODP caps |\n')
    return [PY, os.path.join(TESTS, 'conformance', 'rdma_core_suite.py'), '--uroced',
            w.uroced, '--shim', '/dev/null', '--suite-dir', suite, '--doc', doc, 'test_fake']


def case_conformance(w):
    """rdma_core_suite.py: a test that skips without being in the doc's
    table fails the module (a capability uroce stopped reporting); listed,
    the module passes."""
    if subprocess.call([PY, '-c', 'import pyverbs.device']) != 0:
        raise h.Missing('pyverbs not installed: rdma_core_suite.py cannot run')
    rc, out = w.run(fake_suite(w, True))
    h.check(rc == 0, 'module with a documented skip: passes')
    shutil.rmtree(os.path.join(w.dir, 'suite'))
    rc, out = w.run(fake_suite(w, False))
    h.check(failed(rc) and 'test_fake.test_odp_thing skipped; docs/conformance.md does not '
            'list it' in out, 'module with an undocumented skip: fails')


def case_fuzz_replay(w, replay):
    """fuzz_replay with no input (an empty corpus directory) fails."""
    empty = os.path.join(w.dir, 'corpus')
    os.mkdir(empty)
    rc, out = w.run([replay, '-seed=1', '-gen=100', empty])
    h.check(rc != 0 and 'nothing to replay' in out, 'fuzz replay of an empty corpus: fails')
    with open(os.path.join(empty, 'one'), 'wb') as f:
        f.write(b'\0' * 64)
    rc, out = w.run([replay, '-seed=1', '-gen=10', empty])
    h.check(rc == 0, 'fuzz replay of one input: passes')


def case_ci_skips(w):
    """tests/ci_skips.py: a skip not in tests/ci-skips.txt fails CI; the
    listed ones, per build, do not."""
    log = os.path.join(w.dir, 'testlog.json')

    def gate(rows, build='plain'):
        with open(log, 'w') as f:
            for name, res in rows:
                f.write(json.dumps({'name': 'uroce:x / ' + name, 'result': res}) + '\n')
        return w.run([PY, os.path.join(TESTS, 'ci_skips.py'),
                      os.path.join(TESTS, 'ci-skips.txt'), '%s=%s' % (build, log)])
    rc, _ = gate([('pingpong-rc', 'OK'), ('rdma-core-flow', 'SKIP'),
                  ('fuzz-libfuzzer', 'SKIP')])
    h.check(rc == 0, 'listed skips: CI passes')
    rc, _ = gate([('pingpong-rc', 'SKIP')])
    h.check(rc != 0, 'a test expected to run skipped: CI fails')
    rc, _ = gate([('fuzz-libfuzzer', 'SKIP')], 'asan')
    h.check(rc != 0, 'a skip listed for the other build only: CI fails')
    rc, _ = gate([])
    h.check(rc != 0, 'no test ran: CI fails')


def case_sanitizer_env(w):
    """meson's default test setup makes UBSan and ASan halt on a report."""
    u = os.environ.get('UBSAN_OPTIONS', '')
    a = os.environ.get('ASAN_OPTIONS', '')
    h.check('halt_on_error=1' in u.split(':') and 'print_stacktrace=1' in u.split(':'),
            'UBSAN_OPTIONS=%r halts and prints a stack' % u)
    h.check('halt_on_error=1' in a.split(':'), 'ASAN_OPTIONS=%r halts' % a)


def case_no_assert(w):
    """No Python test checks with assert (python3 -O removes it)."""
    bad = []
    for root, _, files in os.walk(TESTS):
        for fn in files:
            if fn.endswith('.py'):
                p = os.path.join(root, fn)
                for i, ln in enumerate(open(p, errors='replace'), 1):
                    if re.match(r'\s*assert[\s(]', ln):
                        bad.append('%s:%d' % (os.path.relpath(p, SRC), i))
    h.check(not bad, 'no assert in tests/**/*.py: %s' % (bad[:10] or 'none'))


def case_subdirs(w):
    """tests/meson.build enters every area without a guess: a tree
    without tests/arch/meson.build does not configure (the arch suite is
    not dropped silently); the same tree with it does."""
    if not shutil.which('meson') or not shutil.which('git'):
        raise h.Missing('meson or git not installed')
    tree = os.path.join(w.dir, 'tree')
    files = subprocess.run(['git', '-C', SRC, 'ls-files', '-co', '--exclude-standard'],
                           capture_output=True, text=True, timeout=60)
    if files.returncode != 0:
        raise h.Missing('not a git checkout: %s' % files.stderr.strip())
    for rel in files.stdout.split('\n'):
        if not rel or not os.path.exists(os.path.join(SRC, rel)):
            continue
        dst = os.path.join(tree, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(SRC, rel), dst)
    os.unlink(os.path.join(tree, 'tests', 'arch', 'meson.build'))
    rc, out = w.run(['meson', 'setup', os.path.join(w.dir, 'b'), tree], timeout=600)
    h.check(rc != 0 and re.search(r'tests/arch.*meson\.build|Nonexistent build file', out),
            'tests/arch/meson.build deleted: meson setup fails')


# what build-vm.sh --verify wants in a guest rootfs (tests/interop/build-vm.sh)
GUEST_PROGS = ['/bin/dash', '/bin/ip', '/sbin/tc', '/usr/bin/ibv_devinfo',
               '/usr/bin/ibv_rc_pingpong', '/usr/bin/ib_write_bw', '/usr/bin/rping',
               '/usr/bin/ucmatose']


def host_rootfs(w):
    """A guest rootfs made of this machine's own programs and libraries
    (what build-vm.sh assembles from the same Debian packages): verifies."""
    root = os.path.join(w.dir, 'rootfs')
    rxe = [os.path.join('/usr/lib/x86_64-linux-gnu/libibverbs', f)
           for f in os.listdir('/usr/lib/x86_64-linux-gnu/libibverbs')
           if f.startswith('librxe-')] if os.path.isdir('/usr/lib/x86_64-linux-gnu/libibverbs') \
        else []
    progs = [p for p in GUEST_PROGS if os.path.exists(p)]
    if len(progs) != len(GUEST_PROGS) or not rxe:
        raise h.Missing('the guest programs are not installed here (ibverbs-utils, perftest, '
                        'rdmacm-utils, iproute2)')

    def put(path):
        real = os.path.realpath(path)
        dst = root + path
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not os.path.exists(dst):
            shutil.copy2(real, dst)
    put('/lib64/ld-linux-x86-64.so.2')
    for p in progs + rxe:
        put(p)
        ld = subprocess.run(['ldd', p], capture_output=True, text=True)
        for lib in re.findall(r'=> (/\S+)', ld.stdout):
            put(lib)
    os.symlink('dash', os.path.join(root, 'bin', 'sh'))
    with open(os.path.join(root, 'init'), 'w') as f:
        f.write('#!/bin/dash\necho "RXEVM: init start"\n')
    os.chmod(os.path.join(root, 'init'), 0o755)
    return root


BUILD_VM = os.path.join(TESTS, 'interop', 'build-vm.sh')


def case_vm_verify(w):
    """build-vm.sh's check of a guest rootfs: one whose programs resolve
    verifies; without libc (apt's metadata incomplete) it does not, nor
    without /init."""
    if os.geteuid() != 0:
        raise h.Missing('chroot needs root')
    root = host_rootfs(w)
    rc, _ = w.run(['bash', BUILD_VM, '--verify', root])
    h.check(rc == 0, 'a rootfs whose programs resolve: verifies')
    libc = [os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs if f == 'libc.so.6']
    for f in libc:
        os.rename(f, f + '.gone')
    rc, out = w.run(['bash', BUILD_VM, '--verify', root])
    h.check(rc != 0 and 'does not resolve' in out, 'the same without libc: rejected')
    for f in libc:
        os.rename(f + '.gone', f)
    img = os.path.join(w.dir, 'initrd.img')

    def pack():
        subprocess.run('cd "%s" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1 '
                       '> "%s"' % (root, img), shell=True, check=True, timeout=300)
    pack()
    rc, _ = w.run(['bash', BUILD_VM, '--verify-initrd', img])
    h.check(rc == 0, 'its packed image (as build-vm.sh packs it): holds /init')
    os.unlink(os.path.join(root, 'init'))
    rc, out = w.run(['bash', BUILD_VM, '--verify', root])
    h.check(rc != 0 and 'no executable /init' in out, 'without /init: rejected')
    pack()
    rc, out = w.run(['bash', BUILD_VM, '--verify-initrd', img])
    h.check(rc != 0 and 'holds no /init' in out, 'its packed image without /init: rejected')


def fake_root(w, drop=()):
    """A directory with the names a clean root must hold (empty files),
    but those in drop; its tar as mmdebstrap would write it."""
    sys.path.insert(0, os.path.join(TESTS, 'pkg'))
    import pkgenv
    root = tempfile.mkdtemp(prefix='fake-root-', dir=w.dir)
    names = list(pkgenv.ROOT_MUST) + [
        './usr/lib/x86_64-linux-gnu/libibverbs.so.1', './usr/lib/x86_64-linux-gnu/librdmacm.so.1',
        './usr/lib/x86_64-linux-gnu/libc.so.6',
        './var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages',
        './etc/apt/sources.list']
    for n in names:
        if n in drop:
            continue
        os.makedirs(os.path.dirname(os.path.join(root, n)), exist_ok=True)
        open(os.path.join(root, n), 'w').close()
    return root


def case_pkg_root(w):
    """tests/pkg's clean root (pkgenv.clean_root): a root that lacks libc or
    apt's lists is rejected and never cached; a complete one is cached."""
    sys.path.insert(0, os.path.join(TESTS, 'pkg'))
    import pkgenv
    if not pkgenv.debian_sources(pkgenv.debian_targets()):
        raise h.Missing('no Debian bookworm apt sources on this machine')
    # a stand-in mmdebstrap on PATH: writes the tar of $FAKE_ROOT
    mm = os.path.join(w.bin, 'mmdebstrap')
    with open(mm, 'w') as f:
        f.write('#!/bin/sh\n[ "$1" = --version ] && { echo "mmdebstrap fake"; exit 0; }\n'
                'for a; do prev=$last; last=$a; done\n'
                'exec tar -C "$FAKE_ROOT" -cf "$prev" .\n')
    os.chmod(mm, 0o755)
    build = os.path.join(w.dir, 'build')
    os.environ['PATH'] = w.bin + ':' + os.environ['PATH']
    for drop, why in ((('./usr/lib/x86_64-linux-gnu/libc.so.6',), 'without libc'),
                      (('./var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_'
                        'binary-amd64_Packages',), 'without apt\'s lists')):
        os.environ['FAKE_ROOT'] = fake_root(w, drop)
        try:
            pkgenv.clean_root(build)
            h.check(False, 'a root %s: rejected' % why)
        except RuntimeError as e:
            print(e)
            h.check('not cached' in str(e), 'a root %s: rejected' % why)
        h.check(not [f for f in os.listdir(os.path.join(build, 'pkg-cache'))
                     if f.startswith('root-') and f.endswith('.tar')], 'a root %s: not cached' % why)
    os.environ['FAKE_ROOT'] = fake_root(w)
    tar = pkgenv.clean_root(build)
    h.check(os.path.isfile(tar), 'a complete root: cached (%s)' % os.path.basename(tar))
    h.check(pkgenv.clean_root(build) == tar, 'and used again by the next test')


def case_interop_vm_dead(w):
    """interop.sh with a guest that panics (its /init cannot execute): the
    rig fails at once with the console's last lines, instead of waiting
    and running every case into its timeout. qemu is a stand-in on PATH
    that prints the kernel's panic and then hangs, as a VM would."""
    if os.geteuid() != 0 or not os.path.exists('/dev/net/tun'):
        raise h.Missing('interop.sh needs root and /dev/net/tun')
    build = os.environ.get('UROCE_BUILD_ROOT', '')
    if not os.path.exists(os.path.join(build, 'emu', 'uroced')):
        raise h.Missing('no uroced in the build (UROCE_BUILD_ROOT)')
    vm = os.path.join(w.dir, 'rxevm')
    os.mkdir(vm)
    os.rename(host_rootfs(w), os.path.join(vm, 'rootfs'))
    for f in ('initrd.img', 'vmlinuz'):
        open(os.path.join(vm, f), 'w').close()
    data = b''
    for f in ('build-vm.sh', 'guest-init.sh'):
        data += open(os.path.join(TESTS, 'interop', f), 'rb').read()
    with open(os.path.join(vm, 'image.key'), 'w') as f:
        f.write(hashlib.sha256(data).hexdigest() + '\n')
    qemu = os.path.join(w.bin, 'qemu-system-x86_64')
    with open(qemu, 'w') as f:
        f.write('#!/bin/sh\necho "Run /init as init process"\n'
                'echo "Failed to execute /init (error -2)"\n'
                'echo "Kernel panic - not syncing: No working init found."\n'
                'exec sleep 600\n')
    os.chmod(qemu, 0o755)
    os.environ['UROCE_RXEVM_DIR'] = vm
    rc, out = w.run(['bash', os.path.join(TESTS, 'interop', 'interop.sh'), 'basic', build,
                     os.path.join(w.dir, 'out')], timeout=240)
    h.check(rc not in (0, 77) and 'the guest did not come up' in out and 'Kernel panic' in out,
            'a guest that panics: interop.sh fails with the console\'s last lines')
    h.check('rxe ready' not in out and 'PASS' not in out, 'no case ran')


def case_pcap_indep(w):
    """pcap_indep.py: a genuine capture passes; one bit flipped in a
    RoCE frame's payload (the ICRC no longer matches) fails it."""
    src = os.path.join(TESTS, 'data', 'rc_pingpong.pcap')
    tool = os.path.join(TESTS, 'tools', 'pcap_indep.py')
    rc, _ = w.run([PY, tool, src])
    h.check(rc == 0, 'a genuine rxe capture: passes')
    d = bytearray(open(src, 'rb').read())
    # the first record's frame: pcap header 24, record header 16, then a
    # RoCE frame; a byte well inside its payload
    incl = int.from_bytes(d[24 + 8:24 + 12], 'little')
    d[24 + 16 + incl - 8] ^= 0x10
    bad = os.path.join(w.dir, 'bad.pcap')
    open(bad, 'wb').write(bytes(d))
    rc, out = w.run([PY, tool, bad])
    h.check(rc == 1 and 'Annex A17 computes' in out, 'a flipped payload bit: fails')


def case_fault_accounting(w):
    """harness.corrupt_accounting: every corrupted frame must be
    accounted for, none may pass with a covered byte flipped."""
    line = ('uroce0: fault drop 0 dup 0 reorder 0 corrupt %d delay 0\n'
            'uroce0: fault corrupt fates: icrc %d hdr %d other %d masked %d passed %d '
            'unseen %d\n')
    h.check(h.corrupt_accounting(line % (13, 9, 4, 0, 0, 0, 0)) == [], 'all caught: accepted')
    h.check(h.corrupt_accounting(line % (13, 9, 3, 0, 0, 0, 0)) != [], 'one missing: rejected')
    h.check(h.corrupt_accounting(line % (13, 9, 3, 0, 0, 1, 0)) != [],
            'a covered flip passed: rejected')
    h.check(h.corrupt_accounting(line % (2, 0, 1, 1, 0, 0, 0)) != [],
            'the ICRC caught nothing: rejected')
    h.check(h.corrupt_accounting('uroce0: tx 1 pkts\n') != [], 'no fates at all: rejected')
    h.check(h.corrupt_accounting(line % (13, 9, 3, 0, 0, 0, 1), follow_all=False) == [],
            'held frames counted when dup/reorder are on: accepted')


def case_partial_skip(w):
    """A test with a part that cannot run ends as a skip (77), not 0."""
    prog = os.path.join(w.dir, 'partial.py')
    with open(prog, 'w') as f:
        f.write('import sys\nsys.path.insert(0, %r)\nimport harness as h\n'
                'h.check(True, "the part that ran")\n'
                'h.part_skipped("the part that needs a tool")\n'
                'sys.exit(h.verdict())\n' % os.path.join(TESTS, 'lib'))
    rc, out = w.run([PY, prog])
    h.check(rc == 77 and 'SKIP' in out, 'partial run: 77')



def case_c_check(w):
    """One check family for the C tests: CHECK counts and goes on, REQUIRE
    ends the test with 1, a test with no failure passes; no other file
    defines CHECK, REQUIRE or CHECK_EQ."""
    cc = shutil.which('cc') or shutil.which('gcc') or shutil.which('clang')
    if not cc:
        raise h.Missing('no C compiler')
    src = os.path.join(w.dir, 't.c')
    with open(src, 'w') as f:
        f.write('#include "%s"\n'
                'int main(int argc, char **argv)\n{\n\t(void)argv;\n'
                '\tCHECK(argc == 1);\n\tCHECK(argc == 2, "argc %%d", argc);\n'
                '\tCHECK_EQ(argc, 3);\n\tif (argc > 2)\n\t\tREQUIRE(argc == 5, "required");\n'
                '\tprintf("after\\n");\n\treturn t_done("t");\n}\n'
                % os.path.join(TESTS, 'include', 'check.h'))
    exe = os.path.join(w.dir, 't')
    rc, out = w.run([cc, '-std=gnu11', '-Wall', '-Wextra', '-Werror', '-o', exe, src])
    h.check(rc == 0, 'a test using check.h compiles with -Wall -Wextra -Werror')
    if rc:
        return
    rc, out = w.run([exe])
    h.check(rc == 1 and 'argc == 2: argc 1' in out and 'argc = 1, 3 = 3' in out
            and 'after' in out and '3 checks, 2 failures' in out,
            'failed CHECKs are printed and counted, the test goes on, exits 1')
    rc, out = w.run([exe, 'a', 'b'])
    h.check(rc == 1 and 'required' in out and 'after' not in out,
            'a failed REQUIRE ends the test with 1')
    bad = []
    for root, _, files in os.walk(TESTS):
        for fn in files:
            p = os.path.join(root, fn)
            if fn.endswith(('.c', '.h')) and p != os.path.join(TESTS, 'include', 'check.h'):
                for i, ln in enumerate(open(p, errors='replace'), 1):
                    if re.match(r'\s*#\s*define\s+(CHECK|REQUIRE|CHECK_EQ)\b', ln):
                        bad.append('%s:%d' % (os.path.relpath(p, SRC), i))
    h.check(not bad, 'no other check family: %s' % (bad or 'none'))



def case_e2e_c(w, e2e, uroced):
    """test_e2e_pingpong.c (C): a client that finds no device fails the
    test at once (it was retried 20 times without a line); all-good passes."""
    prog = os.path.join(w.bin, 'ibv_rc_pingpong')
    rc, out = w.run([e2e, uroced, '/dev/null', prog])
    h.check(rc == 0, 'e2e pingpong, nothing wrong: passes')
    rc, out = w.run([e2e, uroced, '/dev/null', prog], client='nodev')
    h.check(rc == 1 and 'client 1 server' in out, 'e2e pingpong, client finds no device: fails')


CASES = {'run-pair': case_run_pair, 'daemon-start': case_daemon_start, 'stack': case_stack,
         'cm': case_cm, 'conformance': case_conformance, 'fuzz-replay': case_fuzz_replay,
         'ci-skips': case_ci_skips, 'sanitizer-env': case_sanitizer_env,
         'no-assert': case_no_assert, 'subdirs': case_subdirs, 'vm-verify': case_vm_verify,
         'interop-vm-dead': case_interop_vm_dead, 'pcap-indep': case_pcap_indep,
         'fault-accounting': case_fault_accounting, 'partial-skip': case_partial_skip,
         'c-check': case_c_check, 'e2e-c': case_e2e_c, 'pkg-root': case_pkg_root}


def run_test():
    ap = argparse.ArgumentParser()
    ap.add_argument('case', choices=sorted(CASES))
    ap.add_argument('--fuzz-replay', default='')
    ap.add_argument('--e2e', nargs=2, metavar=('TEST_EMU_E2E_PINGPONG', 'UROCED'))
    a = ap.parse_args()
    w = World()
    try:
        print('== %s: %s' % (a.case, CASES[a.case].__doc__.split('\n')[0]), flush=True)
        if a.case == 'fuzz-replay':
            CASES[a.case](w, a.fuzz_replay)
        elif a.case == 'e2e-c':
            if not a.e2e:
                raise h.Missing('no --e2e (built without ibverbs)')
            CASES[a.case](w, *a.e2e)
        else:
            CASES[a.case](w)
        return h.verdict()
    finally:
        w.close()


if __name__ == '__main__':
    sys.exit(h.main(run_test))
