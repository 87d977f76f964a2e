#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The built Debian packages as files: what each holds, what each depends
on, and lintian (every tag at every level, pedantic included, fails; the
overrides in debian/*.lintian-overrides must each say why, and an override
that no longer matches fails as lintian's unused-override).

  deb_contents.py --src SOURCE_DIR --build BUILD_DIR

Exit 0 pass, 1 fail, 77 skip (no dpkg-dev/debhelper or lintian)."""
import glob
import os
import subprocess

import pkgenv
from pkgenv import check

FILES = {
    'uroce': ['/usr/sbin/uroced', '/usr/bin/uroce-ctl', '/usr/bin/uroce-stat',
              '/usr/bin/uroce-pcap', '/usr/share/man/man8/uroced.8.gz',
              '/usr/share/man/man8/uroce-ctl.8.gz', '/usr/share/man/man8/uroce-stat.8.gz',
              '/usr/share/man/man1/uroce-pcap.1.gz', '/usr/lib/sysusers.d/uroce.conf',
              '/lib/systemd/system/uroced.service', '/usr/lib/systemd/user/uroced.service'],
    'liburoce': ['/usr/share/man/man7/liburoce.7.gz'],
    'uroce-ports': [],
}
# what the default needs at run time that no ELF dependency names, and the
# port drivers uroced documents (docs/running.md "Ports")
DEFAULT_PLUGINS = ['librte-mempool-ring23']
PORT_PLUGINS = ['librte-net-af-packet23', 'librte-net-af-xdp23', 'librte-net-memif23',
                'librte-net-pcap23', 'librte-net-virtio23', 'librte-net-e1000-23',
                'librte-net-vmxnet3-23']


def field(deb, name):
    return subprocess.run(['dpkg-deb', '-f', deb, name], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def names(deb):
    r = subprocess.run(['dpkg-deb', '-c', deb], capture_output=True, text=True, timeout=60)
    return [ln.split()[5].lstrip('.') for ln in r.stdout.splitlines()]


def deps(deb, name='Depends'):
    return [d.strip().split()[0] for d in field(deb, name).split(',') if d.strip()]


def contents(debs):
    for pkg, want in FILES.items():
        got = names(debs[pkg])
        for w in want:
            check(w in got, '%s holds %s' % (pkg, w))
    shim = [n for n in names(debs['liburoce']) if n.endswith('/liburoce.so')]
    check(len(shim) == 1 and shim[0].startswith('/usr/lib/'),
          'liburoce holds liburoce.so in the linker\'s path: %s' % shim)
    check(not [n for n in names(debs['uroce']) if n.endswith('/liburoce.so')],
          'uroce does not hold the shim (liburoce does)')
    xdp = [n for n in names(debs['uroce']) if n.endswith('/uroce/uroce_xdp.o')]
    check(len(xdp) == 1, 'uroce holds --shared\'s XDP program')
    version = field(debs['uroce'], 'Version')
    d = field(debs['uroce'], 'Depends')
    print('uroce Depends: ' + d)
    for p in DEFAULT_PLUGINS:
        check(p in deps(debs['uroce']), 'uroce depends on %s (the default loads it)' % p)
    check('liburoce (= %s)' % version in d, 'uroce depends on liburoce of its own version')
    for p in ('libibverbs1', 'librte-eal23', 'librte-net-ring23'):
        check(p in deps(debs['uroce']) + deps(debs['liburoce']), 'Depends name %s' % p)
    check('uroce-ports' in deps(debs['uroce'], 'Recommends'), 'uroce recommends uroce-ports')
    pd = deps(debs['uroce-ports'])
    print('uroce-ports Depends: ' + field(debs['uroce-ports'], 'Depends'))
    for p in PORT_PLUGINS:
        check(p in pd, 'uroce-ports depends on %s' % p)
    check(field(debs['liburoce'], 'Multi-Arch') == 'same', 'liburoce is Multi-Arch: same')
    check(not [p for p in deps(debs['liburoce']) if p.startswith('librte')],
          'liburoce needs no DPDK (application containers)')


def overrides(src):
    """Every override says why: a comment above it, in its own block
    (several overrides may share one reason)."""
    for f in sorted(glob.glob(os.path.join(src, 'debian', '*.lintian-overrides'))):
        said = False
        for ln in open(f).read().splitlines():
            if not ln.strip():
                said = False
            elif ln.startswith('#'):
                said = True
            else:
                check(said, '%s: "%s" has its reason above it' % (os.path.basename(f), ln))


def lintian(d):
    changes = glob.glob(os.path.join(d, '*.changes'))
    r = subprocess.run(['lintian', '--pedantic', '--display-info', '--display-experimental',
                        '--fail-on', 'error,warning,info,pedantic,experimental'] + changes,
                       capture_output=True, text=True, timeout=600)
    tags = [ln for ln in r.stdout.splitlines() if ln[:2] in ('E:', 'W:', 'I:', 'P:', 'X:')]
    print('\n'.join(tags) or '(no tags)')
    if r.returncode not in (0, 2):
        print(r.stderr[-2000:])
    check(r.returncode == 0 and not tags, 'lintian --pedantic: no tag but the overridden ones')


def body(a):
    pkgenv.need('lintian')
    d = pkgenv.debs(a.src, a.build)
    contents(pkgenv.deb_paths(d))
    overrides(a.src)
    lintian(d)


if __name__ == '__main__':
    raise SystemExit(pkgenv.main(body))
