#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Debian package, built and used from a clean root (docs/running.md
"Debian package").

  deb_test.py --src SOURCE_DIR --run-py tests/verbs/run.py [--deb FILE]

Builds uroce_*.deb with `dpkg-buildpackage -us -uc -b` from a copy of the
source tree (the tree itself is left alone), checks its file list,
unpacks it with `dpkg -x` into an empty root (no chroot here: the host's
libraries serve the unpacked programs), and runs ibv_rc_pingpong -c (every
byte checked) through the unpacked uroced and liburoce.so, then the
unpacked uroce-ctl against that daemon. --deb FILE skips the build and
tests that package. Skips (77) when dpkg-buildpackage or dh is missing
(tools/bootstrap.sh installs dpkg-dev and debhelper). Exit 0 pass, 1 fail."""
import argparse
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from harness import check, verdict  # noqa: E402  (tests/lib/harness.py)

BUILD_TIMEOUT = 1200


def copy_tree(src, dst):
    """The files git knows or would take (work in progress included),
    without build directories."""
    r = subprocess.run(['git', '-C', src, 'ls-files', '-co', '--exclude-standard', '-z'],
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns('build*', '.git', 'obj-*'))
        return
    for f in r.stdout.decode().split('\0'):
        if not f or f.startswith(('build', 'obj-')) or not os.path.isfile(os.path.join(src, f)):
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, f)), exist_ok=True)
        shutil.copy2(os.path.join(src, f), os.path.join(dst, f))


def build(src, tmp):
    tree = os.path.join(tmp, 'uroce')
    copy_tree(src, tree)
    print('+ dpkg-buildpackage -us -uc -b', flush=True)
    # -d: meson or ninja may come from elsewhere than a Debian package
    p = subprocess.Popen(['dpkg-buildpackage', '-us', '-uc', '-b', '-d', '-j2'], cwd=tree,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        check(False, 'dpkg-buildpackage within %d s' % BUILD_TIMEOUT)
        return None
    debs = glob.glob(os.path.join(tmp, 'uroce_*.deb'))
    if not check(p.returncode == 0 and len(debs) == 1, 'dpkg-buildpackage builds uroce_*.deb'):
        print(out[-6000:])
        return None
    return debs[0]


def contents(deb):
    r = subprocess.run(['dpkg-deb', '-c', deb], capture_output=True, text=True, timeout=60)
    names = [ln.split()[-1].lstrip('.') for ln in r.stdout.splitlines()]
    shim = [n for n in names if n.endswith('/liburoce.so')]
    for want in ('/usr/sbin/uroced', '/usr/bin/uroce-ctl', '/usr/bin/uroce-stat',
                 '/usr/bin/uroce-pcap', '/usr/share/man/man8/uroced.8.gz',
                 '/usr/share/man/man8/uroce-ctl.8.gz', '/usr/share/man/man1/uroce-pcap.1.gz',
                 '/usr/share/man/man7/liburoce.7.gz', '/usr/lib/sysusers.d/uroce.conf'):
        check(want in names, 'package holds ' + want)
    check(len(shim) == 1 and shim[0].startswith('/usr/lib/'), 'package holds liburoce.so')
    dep = subprocess.run(['dpkg-deb', '-f', deb, 'Depends'], capture_output=True, text=True,
                         timeout=60).stdout
    check('libibverbs1' in dep and 'librte-eal' in dep, 'Depends: %s' % dep.strip())
    check(any(n.endswith('/systemd/system/uroced.service') for n in names) and
          any(n.endswith('/systemd/user/uroced.service') for n in names),
          'package holds the system and user units')
    return shim[0] if shim else None


def use(deb, shim, run_py, tmp):
    root = os.path.join(tmp, 'root')
    os.mkdir(root)
    r = subprocess.run(['dpkg', '-x', deb, root], capture_output=True, text=True, timeout=120)
    if not check(r.returncode == 0, 'dpkg -x into an empty root'):
        print(r.stderr)
        return
    uroced = os.path.join(root, 'usr/sbin/uroced')
    lib = os.path.join(root, shim.lstrip('/'))
    # run.py: a private daemon, the server and the client preloaded,
    # bounded waits, everything stopped
    r = subprocess.run([sys.executable, run_py, '--uroced', uroced, '--shim', lib, 'pair',
                        'ibv_rc_pingpong', '-d', 'uroce0', '-g', '1', '-c', '-n', '200'],
                       capture_output=True, text=True, timeout=300)
    print(r.stdout[-3000:] + r.stderr[-2000:])
    check(r.returncode == 0 and r.stdout.count('iters in') >= 2,
          'ibv_rc_pingpong -c through the unpacked uroced and liburoce.so')
    ctl = os.path.join(root, 'usr/bin/uroce-ctl')
    r = subprocess.run([sys.executable, run_py, '--uroced', uroced, '--shim', lib, 'exec',
                        ctl, '--json', 'devices'], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and '"name":"uroce0"' in r.stdout,
          'the unpacked uroce-ctl talks to the unpacked daemon')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--src', required=True)
    ap.add_argument('--run-py', required=True)
    ap.add_argument('--deb')
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if not a.deb and not (shutil.which('dpkg-buildpackage') and shutil.which('dh')):
        print('SKIP: dpkg-buildpackage and dh (dpkg-dev, debhelper) are not installed')
        return 77
    tmp = tempfile.mkdtemp(prefix='uroce-deb-')
    try:
        deb = a.deb or build(a.src, tmp)
        if deb:
            shim = contents(deb)
            if shim:
                use(deb, shim, a.run_py, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return verdict()


if __name__ == '__main__':
    sys.exit(main())
