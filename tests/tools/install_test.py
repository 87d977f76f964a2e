#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`meson install --destdir` into a temp dir (docs/running.md "Installing").

  install_test.py BUILD_DIR PREFIX SBINDIR BINDIR LIBDIR MANDIR

Asserts every file uroce installs is there (daemon, shim, tools, man pages,
systemd units, sysusers entry), the installed programs run, the man pages
render without a warning (groff -man -ww), the units name the installed
daemon with the run directory and access rule of docs/security.md, and
`systemd-analyze verify` finds nothing to say about them (that part is
skipped, with a line, when systemd-analyze is missing). Exit 0 pass, 1
fail."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from harness import check, part_skipped, verdict  # noqa: E402  (tests/lib/harness.py)


def run(cmd, **kw):
    print('+', ' '.join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def rel(*parts):
    return os.path.join(*[p.lstrip('/') for p in parts])


def units(dest, prefix, sbindir):
    daemon = os.path.join(prefix, sbindir, 'uroced')
    system = os.path.join(dest, rel(prefix, 'lib/systemd/system/uroced.service'))
    user = os.path.join(dest, rel(prefix, 'lib/systemd/user/uroced.service'))
    s = open(system).read()
    check('ExecStart=%s --run-dir /run/uroce --socket-group uroce' % daemon in s,
          'system unit: the installed daemon, /run/uroce, group uroce')
    check('RuntimeDirectory=uroce\n' in s and 'RuntimeDirectoryMode=0755\n' in s,
          'system unit: /run/uroce made 0755 (the daemon refuses a writable one)')
    u = open(user).read()
    check('ExecStart=%s --run-dir %%t/uroce' % daemon in u,
          'user unit: $XDG_RUNTIME_DIR/uroce, where the shim looks by default')
    sysusers = open(os.path.join(dest, rel(prefix, 'lib/sysusers.d/uroce.conf'))).read()
    check('g uroce -' in sysusers, 'sysusers: group uroce')
    sa = shutil.which('systemd-analyze')
    if not sa:
        part_skipped('systemd-analyze verify: systemd not installed')
        return
    tmp = tempfile.mkdtemp(prefix='uroce-units-')
    try:
        # verify looks for the ExecStart program on this host: point it at
        # the installed copy, nothing else changes
        for name, src, extra in (('system', system, []), ('user', user, ['--user'])):
            d = os.path.join(tmp, name)
            os.mkdir(d)
            p = os.path.join(d, 'uroced.service')
            with open(p, 'w') as f:
                f.write(open(src).read().replace(daemon, os.path.join(dest, rel(daemon))))
            xdg = os.path.join(tmp, 'xdg')
            os.makedirs(xdg, mode=0o700, exist_ok=True)
            r = run([sa] + extra + ['verify', '--man=no', p],
                    env=dict(os.environ, XDG_RUNTIME_DIR=xdg))
            out = (r.stdout + r.stderr).strip()
            if out:
                print(out)
            check(r.returncode == 0 and not out, 'systemd-analyze verify: %s unit' % name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    build, prefix, sbindir, bindir, libdir, mandir = sys.argv[1:7]
    dest = tempfile.mkdtemp(prefix='uroce-install-')
    try:
        r = run(['meson', 'install', '-C', build, '--destdir', dest, '--no-rebuild',
                 '--quiet'])
        if not check(r.returncode == 0, 'meson install --destdir'):
            print(r.stdout + r.stderr)
            return 1
        want = [rel(prefix, sbindir, 'uroced'),
                rel(prefix, bindir, 'uroce-ctl'),
                rel(prefix, bindir, 'uroce-stat'),
                rel(prefix, bindir, 'uroce-pcap'),
                rel(prefix, libdir, 'liburoce.so'),
                rel(prefix, mandir, 'man8/uroced.8'),
                rel(prefix, mandir, 'man8/uroce-ctl.8'),
                rel(prefix, mandir, 'man1/uroce-pcap.1'),
                rel(prefix, mandir, 'man7/liburoce.7'),
                rel(prefix, 'lib/systemd/system/uroced.service'),
                rel(prefix, 'lib/systemd/user/uroced.service'),
                rel(prefix, 'lib/sysusers.d/uroce.conf'),
                rel(prefix, mandir, 'man8/uroce-stat.8')]  # .so uroce-ctl.8
        have = sorted(os.path.relpath(os.path.join(d, f), dest)
                      for d, _, fs in os.walk(dest) for f in fs)
        print('installed:\n  ' + '\n  '.join(have))
        for w in want:
            check(w in have, 'installed: ' + w)
        for prog in want[:4]:
            check(os.access(os.path.join(dest, prog), os.X_OK), 'executable: ' + prog)
        for prog, arg in ((want[0], '--help'), (want[1], '--help'), (want[2], '-h')):
            r = run([os.path.join(dest, prog), arg])
            check(r.returncode == 0 and 'usage' in (r.stdout + r.stderr).lower(),
                  'the installed %s runs' % os.path.basename(prog))
        groff = shutil.which('groff')
        for page in want[5:9]:
            if not groff:
                part_skipped('man page lint: groff not installed')
                break
            r = run([groff, '-man', '-Tutf8', '-ww', os.path.join(dest, page)])
            if r.stderr:
                print(r.stderr)
            check(r.returncode == 0 and not r.stderr and len(r.stdout) > 500,
                  'groff -man -ww: %s renders without a warning' % os.path.basename(page))
        units(dest, prefix, sbindir)
    finally:
        shutil.rmtree(dest, ignore_errors=True)
    return verdict()


if __name__ == '__main__':
    sys.exit(main())
