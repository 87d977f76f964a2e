#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The packaged systemd units on an installed system: a clean Debian 12
root with systemd, the packages installed with apt, the units checked with
`systemd-analyze verify` inside it, then the root booted with
systemd-nspawn: units_probe.sh (a service of that boot) starts and stops
the system-wide and the per-user daemon and runs ibv_rc_pingpong -c
through each (docs/running.md "Installing").

  deb_systemd.py --src SOURCE_DIR --build BUILD_DIR

systemd-nspawn runs in a mount namespace of its own with a private /run,
so nothing of it stays on the host. Exit 0 pass, 1 fail, 77 skip."""
import os
import shutil
import subprocess

import pkgenv
from pkgenv import check, h

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_UNIT = '''[Unit]
Description=uroce package test (tests/pkg/deb_systemd.py)
After=basic.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/uroce-probe
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
'''
BOOT_TIMEOUT = 600
SYSTEMD = ('systemd-sysv', 'dbus', 'libpam-systemd')


def prepare(root, debs):
    inside = root.copy_in([debs['uroce'], debs['liburoce']], '/tmp/debs')
    # systemd (with the system bus and the PAM session a user's manager
    # needs) and the packages, as on an installed machine
    rc, out = root.apt_install(['--no-install-recommends'] + list(SYSTEMD) + inside)
    print(out[-2000:])
    if not check(rc == 0, 'apt-get install %s ./uroce_*.deb ./liburoce_*.deb' %
                 ' '.join(SYSTEMD)):
        return False
    for unit, extra in (('/lib/systemd/system/uroced.service', []),
                        ('/usr/lib/systemd/user/uroced.service', ['--user'])):
        rc, out = root.run(['env', 'XDG_RUNTIME_DIR=/run', 'systemd-analyze'] + extra +
                           ['verify', '--man=no', unit])
        print(out)
        check(rc == 0 and not out.strip(), 'systemd-analyze verify %s' % unit)
    rc, out = root.run(['systemctl', 'is-enabled', 'uroced'])
    check(out.strip() == 'disabled', 'installed, not enabled (it needs a port first)')
    for cmd in (['useradd', '-m', '-G', 'uroce', 'alice'], ['useradd', '-m', 'bob'],
                ['systemctl', 'enable', 'uroce-probe.service']):
        if cmd[0] == 'systemctl':
            shutil.copy(os.path.join(HERE, 'units_probe.sh'),
                        root.path('/usr/local/sbin/uroce-probe'))
            os.chmod(root.path('/usr/local/sbin/uroce-probe'), 0o755)
            with open(root.path('/etc/systemd/system/uroce-probe.service'), 'w') as f:
                f.write(PROBE_UNIT)
        rc, out = root.run(cmd)
        if not check(rc == 0, ' '.join(cmd)):
            print(out)
            return False
    return True


def boot(root):
    """systemd-nspawn -b: the probe runs and powers the container off."""
    name = pkgenv.uniq('uroce-pkg-')
    nspawn = ['systemd-nspawn', '--quiet', '--directory', root.dir, '--machine', name,
              '--register=no', '--keep-unit', '--private-network',
              # a private network shows only part of /sys; EAL needs
              # /sys/module (uroced says so when it is missing)
              '--bind-ro=/sys/module', '--resolv-conf=off',
              '--timezone=off', '--link-journal=no', '--console=pipe', '--boot']
    # a private /run: what nspawn keeps there (locks, propagation dirs)
    # goes with the namespace
    cmd = ['unshare', '--mount', '--propagation', 'private', '--', '/bin/sh', '-c',
           'mount -t tmpfs -o mode=755 tmpfs /run && exec "$@"', 'sh'] + nspawn
    print('+ ' + ' '.join(nspawn), flush=True)
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True,
                         preexec_fn=pkgenv.die_with_parent)
    try:
        out, _ = p.communicate(timeout=BOOT_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        out, _ = p.communicate()
        print(out[-4000:])
        check(False, 'the container powered off within %d s' % BOOT_TIMEOUT)
        return
    print(out[-4000:])
    check(p.returncode == 0, 'systemd-nspawn --boot ends with 0 (%d)' % p.returncode)


def results(root):
    try:
        lines = open(root.path('/probe.out')).read().splitlines()
    except OSError:
        lines = []
    shown = ('/probe.log',) if 'done' in lines and not any(
        ln.startswith('FAIL') for ln in lines) else ('/probe.journal', '/probe.log')
    for name in shown:
        if os.path.exists(root.path(name)):
            print('--- %s ---' % name)
            print(open(root.path(name), errors='replace').read()[-6000:])
    for ln in lines:
        if ln.startswith(('ok   ', 'FAIL ')):
            check(ln.startswith('ok'), '[booted] ' + ln[5:])
    check('done' in lines, 'the probe ran to its end in the booted container')
    try:
        log = open(root.path('/probe.uroced'), errors='replace').read()
    except OSError:
        log = ''
    why = h.daemon_faults([], log)
    for w in why:
        print('  ' + w)
    check('uroce0' in log and not why, 'the daemons\' journal: no fault reported')


def body(a):
    pkgenv.need('systemd-nspawn')
    debs = pkgenv.deb_paths(pkgenv.debs(a.src, a.build))
    tar = pkgenv.clean_root(a.build)
    pkgenv.sweep(a.build)
    with pkgenv.Root.from_tar(a.build, tar) as root:
        root.start()
        ok = prepare(root, debs)
        root.stop()
        if ok:
            boot(root)
            results(root)
    return None


if __name__ == '__main__':
    raise SystemExit(pkgenv.main(body))
