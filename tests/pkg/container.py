#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""uroce in containers as CI uses it (docs/running.md "Containers and CI").

  container.py --src SOURCE_DIR --build BUILD_DIR

Images built from the Debian packages with dist/container/Containerfile
(uroce: uroced as the entrypoint) and app.Containerfile (the stock
programs and the shim alone), on a base imported from the clean Debian 12
root (no registry). Then, with podman:

1. dist/container/compose.yaml's two services as written there (the
   daemon with the default settings, the tests service's own command:
   ibv_rc_pingpong -c), the daemon healthy by the image's HEALTHCHECK;
2. two more application containers on that daemon: one with the shim
   installed (app image), one with only liburoce.so mounted into the plain
   base image; ibv_rc_pingpong -c and rping -V between them;
3. user namespaces: a daemon (options from UROCED_ARGS: another device
   name, --allow-uid 1000) and applications in one uid mapping: root and
   uid 1000 use it, uid 1001 is refused by the daemon's peer-uid check; an
   application in another mapping sees the run directory as another
   user's and its shim ignores it.

Every container, volume and image carries a label unique to the run and is
removed by it. This machine's podman needs runc and explicit nofile/nproc
limits (crun refuses its hybrid cgroups): the tests add them, users do not
need them. Exit 0 pass, 1 fail, 77 skip (no podman/runc, no dpkg-dev, no
mmdebstrap)."""
import os
import re
import resource
import shutil
import subprocess
import tempfile

import yaml

import pkgenv
from pkgenv import check, h

SRC_DIST = os.path.join('dist', 'container')
# what this machine needs and users do not (see the module's text)
ENGINE = ['podman', '--runtime', 'runc']
RUN_EXTRA = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024']
TAG_PREFIX = 'uroce-pkg-'
# user namespaces: two disjoint uid ranges of the host
MAP_A, MAP_B = 2000000000, 2000065536


class Pod:
    """podman with this run's label on everything it makes."""

    def __init__(self, tag):
        self.tag = tag
        self.label = 'uroce-test=' + tag

    def __call__(self, *args, timeout=300, quiet=False):
        cmd = ENGINE + list(args)
        if not quiet:
            print('+ ' + ' '.join(cmd), flush=True)
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return 124, '(timed out after %d s)' % timeout
        return r.returncode, r.stdout + r.stderr

    def name(self, what):
        return '%s-%s' % (self.tag, what)

    def running(self, name):
        rc, out = self('inspect', '-f', '{{.State.Running}}', name, quiet=True)
        return rc == 0 and out.strip() == 'true'

    def sweep(self):
        """What runs of this test that were killed left behind (their
        process is gone): containers, volumes, images by their label."""
        label = ' {{index .Labels "uroce-test"}}'
        for ls, fmt, rm in ((['ps', '-a'], '{{.ID}}' + label, ['rm', '-f']),
                            (['volume', 'ls'], '{{.Name}}' + label, ['volume', 'rm', '-f']),
                            (['images', '-a'], '{{.ID}}' + label, ['rmi', '-f'])):
            rc, out = self(*ls, '--filter', 'label=uroce-test', '--format', fmt, quiet=True)
            dead = [ln.split()[0] for ln in out.splitlines() if rc == 0 and len(ln.split()) == 2
                    and pkgenv.owner_gone(ln.split()[1], TAG_PREFIX)]
            if dead:
                print('removing what killed runs left: ' + ' '.join(dead))
                self(*(rm + dead), quiet=True)

    def cleanup(self):
        f = 'label=' + self.label
        for kind, ls, rm in ((None, ['ps', '-a', '-q', '--filter', f], ['rm', '-f', '-t', '0']),
                             (None, ['volume', 'ls', '-q', '--filter', f], ['volume', 'rm', '-f']),
                             (None, ['images', '-a', '-q', '--filter', f], ['rmi', '-f'])):
            rc, out = self(*ls, quiet=True)
            ids = out.split() if rc == 0 else []
            if ids:
                self(*(rm + ids), quiet=True)
        left = []
        for ls in (['ps', '-a', '-q', '--filter', f], ['volume', 'ls', '-q', '--filter', f],
                   ['images', '-a', '-q', '--filter', f]):
            rc, out = self(*ls, quiet=True)
            left += out.split()
        return left


def images(pod, debs, tar):
    """The base (imported root), uroce and app images: their names."""
    base, daemon, app = pod.name('base'), pod.name('uroce'), pod.name('app')
    rc, out = pod('import', '--change', 'LABEL ' + pod.label, tar, 'localhost/' + base,
                  timeout=600)
    if not check(rc == 0, 'podman import of the clean root'):
        print(out[-2000:])
        return None
    ctx = tempfile.mkdtemp(prefix='uroce-ctx-')
    try:
        for p in pkgenv.PACKAGES:
            shutil.copy(debs[p], ctx)
        for img, cf in ((daemon, 'Containerfile'), (app, 'app.Containerfile')):
            # --network host: apt in RUN; --format docker: HEALTHCHECK
            rc, out = pod('build', '--runtime', 'runc', '--network', 'host', '--format',
                          'docker', '--layers=false', '--label', pod.label, '--build-arg',
                          'BASE=localhost/' + base, '-t', 'localhost/' + img, '-f',
                          os.path.join(pod.src, SRC_DIST, cf), ctx, timeout=900)
            if not check(rc == 0, 'podman build -f dist/container/%s' % cf):
                print(out[-4000:])
                return None
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
    return {'base': 'localhost/' + base, 'uroce': 'localhost/' + daemon,
            'uroce-app': 'localhost/' + app}


def machine_limit(name, value):
    """The limit a compose file asks for, or the most this machine's podman
    can give: runc sets it in the container without CAP_SYS_RESOURCE, so
    never above podman's own hard limit, and root here cannot raise that
    (no CAP_SYS_RESOURCE on this machine; CI runners have it)."""
    res = {'memlock': resource.RLIMIT_MEMLOCK}.get(name)
    if res is None or str(value) not in ('-1', '-1:-1', 'unlimited'):
        return value
    hard = resource.getrlimit(res)[1]
    try:
        resource.setrlimit(res, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        return value
    except (ValueError, OSError):
        pass
    if hard == resource.RLIM_INFINITY:
        return value
    print('this machine: %s limited to %d (podman\'s own hard limit)' % (name, hard))
    return '%d:%d' % (hard, hard)


def compose_run_args(svc, pod, imgs, volumes):
    """podman run arguments for a compose service (the keys compose.yaml
    uses; anything else fails the test so that the file stays runnable)."""
    known = {'image', 'pid', 'environment', 'volumes', 'depends_on', 'ulimits', 'command'}
    extra = set(svc) - known
    if extra:
        raise RuntimeError('compose.yaml uses keys this test does not run: %s' % extra)
    # compose would put them on a bridge network; the recipe needs none
    # (its traffic is the run directory and the loopback port), and a
    # machine's bridge set-up is not under test
    args = ['--network', 'none']
    if 'pid' in svc:
        args += ['--pid', svc['pid']]
    for k, v in (svc.get('environment') or {}).items():
        args += ['-e', '%s=%s' % (k, v)]
    for v in svc.get('volumes') or []:
        src, dst = v.split(':', 1)
        args += ['-v', '%s:%s' % (volumes[src], dst)]
    for k, v in (svc.get('ulimits') or {}).items():
        v = v if not isinstance(v, dict) else '%s:%s' % (v['soft'], v['hard'])
        args += ['--ulimit', '%s=%s' % (k, machine_limit(k, v))]
    cmd = [c.replace('$$', '$') for c in svc.get('command') or []]
    return args, imgs[svc['image']], cmd


def healthy(pod, name):
    """The image's HEALTHCHECK passes, while the container runs."""
    ok = h.wait_until(lambda: pod('healthcheck', 'run', name, quiet=True, timeout=60)[0] == 0,
                      lambda: pod.running(name), 180)
    if not ok:
        print(pod('logs', name)[1][-3000:])
    return ok


def stopped(pod, name, what):
    """podman stop, and the daemon's end judged as every test judges it."""
    rc, out = pod('stop', '-t', '30', name)
    _, code = pod('inspect', '-f', '{{.State.ExitCode}}', name, quiet=True)
    _, log = pod('logs', name, quiet=True)
    print('--- %s ---\n%s' % (name, log[-1500:]))
    code = int(code.strip()) if rc == 0 and code.strip().lstrip('-').isdigit() else -9
    return pkgenv.daemon_ended(code, log, what)


def compose(pod, imgs):
    """compose.yaml's services as written: the daemon, then the tests."""
    with open(os.path.join(pod.src, SRC_DIST, 'compose.yaml')) as f:
        spec = yaml.safe_load(f)
    volumes = {v: pod.name('vol-' + v) for v in spec.get('volumes', {})}
    for v in volumes.values():
        pod('volume', 'create', '--label', pod.label, v)
    d = pod.name('uroced')
    args, img, cmd = compose_run_args(spec['services']['uroced'], pod, imgs, volumes)
    rc, out = pod('run', '-d', '--name', d, '--label', pod.label, *RUN_EXTRA, *args, img, *cmd)
    if not check(rc == 0, 'compose.yaml uroced: podman run'):
        print(out)
        return None
    if not check(healthy(pod, d), 'compose.yaml uroced: healthy (uroce-ctl devices answers)'):
        return None
    tests = spec['services']['tests']
    check(tests.get('depends_on', {}).get('uroced', {}).get('condition') == 'service_healthy',
          'compose.yaml tests waits for a healthy uroced')
    args, img, cmd = compose_run_args(tests, pod, imgs, volumes)
    t = pod.name('tests')
    rc, out = pod('run', '--name', t, '--label', pod.label, *RUN_EXTRA, *args, img, *cmd,
                  timeout=300)
    print(out[-3000:])
    check(rc == 0 and out.count('iters in') >= 2,
          'compose.yaml tests: ibv_rc_pingpong -c through the daemon container')
    pod('rm', '-f', t, quiet=True)
    return d, volumes, tests


def app_args(pod, volumes, tests, extra_env=()):
    """An application container as compose.yaml's tests service is."""
    args, _, _ = compose_run_args(dict(tests, command=[]), pod, {tests['image']: None},
                                  volumes)
    args = args[2:]   # the caller says which network namespace
    for e in extra_env:
        args += ['-e', e]
    return args


def pair(pod, server, cli_args, what, count_re, want, races):
    """A server container (detached) and a client container, the client
    retried only while the server does not listen yet (races): both must
    succeed and each must count want lines of count_re."""
    srv_name = server[0]
    try:
        rc, out = pod('run', '-d', '--name', srv_name, '--label', pod.label, *server[1:])
        if not check(rc == 0, '%s: server container starts' % what):
            print(out)
            return

        def attempt():
            rc, out = pod('run', '--rm', '--label', pod.label, *cli_args, timeout=180)
            return rc == 0, out
        ok, cout = h.retry(attempt, races, limit=h.LISTEN_RETRIES, what=what + ': client',
                           alive=lambda: pod.running(srv_name), pause=0.5)
        print(cout[-2000:])
        pod('wait', srv_name, timeout=120)
        _, sout = pod('logs', srv_name, quiet=True)
        _, code = pod('inspect', '-f', '{{.State.ExitCode}}', srv_name, quiet=True)
        print('--- server ---\n' + sout[-2000:])
        check(ok and code.strip() == '0' and
              len(re.findall(count_re, cout, re.M)) >= want and
              len(re.findall(count_re, sout, re.M)) >= want, what)
    finally:
        pod('rm', '-f', '-t', '0', srv_name, quiet=True)


def two_apps(pod, imgs, d, volumes, tests, shim_dir):
    """The app image (shim installed) and the plain base image with only
    liburoce.so mounted, on the compose daemon; TCP between them through
    one network namespace (the first's)."""
    a1 = pod.name('app1')
    installed = app_args(pod, volumes, tests) + ['--network', 'none', imgs['uroce-app']]
    mounted = (app_args(pod, volumes, tests, ['LD_PRELOAD=/opt/uroce/liburoce.so']) +
               ['-v', '%s:/opt/uroce:ro' % shim_dir, '--network', 'container:' + a1,
                imgs['base']])
    # default ports: the two share a network namespace of their own
    pp = ['ibv_rc_pingpong', '-d', 'uroce0', '-g', '1', '-c', '-n', '200']
    pair(pod, [a1] + RUN_EXTRA + installed + pp, RUN_EXTRA + mounted + pp + ['127.0.0.1'],
         'ibv_rc_pingpong -c between an app container (shim installed) and a plain one '
         '(shim mounted)', r'iters in', 1, [pkgenv.PINGPONG_NOT_LISTENING])
    base = ['-v', '-V', '-C', '20', '-S', '4096', '-a', '127.0.0.1']
    pair(pod, [a1] + RUN_EXTRA + installed + ['rping', '-s'] + base,
         RUN_EXTRA + mounted + ['rping', '-c'] + base,
         'rping -V (RDMA CM) between the two application containers',
         r'ping data: rdma-ping-\d+: ', 20, [pkgenv.RPING_NOT_LISTENING])


def userns(pod, imgs):
    """Daemon and applications in user namespaces."""
    vol = pod.name('vol-userns')
    pod('volume', 'create', '--label', pod.label, vol)
    a = ['--uidmap', '0:%d:65536' % MAP_A, '--gidmap', '0:%d:65536' % MAP_A]
    b = ['--uidmap', '0:%d:65536' % MAP_B, '--gidmap', '0:%d:65536' % MAP_B]
    d = pod.name('uroced-userns')
    # :U gives the volume to the container's root (host uid MAP_A)
    rc, out = pod('run', '-d', '--name', d, '--label', pod.label, *RUN_EXTRA, *a,
                  '--network', 'none', '-v', vol + ':/run/uroce:U',
                  '-e', 'UROCED_ARGS=--dev uroce3 --allow-uid 1000', imgs['uroce'])
    if not check(rc == 0 and healthy(pod, d),
                 'a daemon container in a user namespace, options from UROCED_ARGS'):
        print(out)
        return
    rc, out = pod('exec', d, 'uroce-ctl', '--json', 'devices')
    check('"name":"uroce3"' in out, 'UROCED_ARGS=--dev uroce3 named the device')
    # the applications join the daemon's user namespace (the same mapping
    # in a namespace of their own could not mount the daemon's pid
    # namespace's /proc) and its pid namespace
    app = RUN_EXTRA + ['--userns', 'container:' + d, '--pid', 'container:' + d,
                       '--network', 'container:' + d, '-v', vol + ':/run/uroce',
                       '-e', 'LD_PRELOAD=liburoce.so', imgs['uroce-app']]
    pp = ['ibv_rc_pingpong', '-d', 'uroce3', '-g', '1', '-c', '-n', '100']
    pair(pod, [pod.name('ns-srv')] + app + pp,
         ['--user', '1000:1000'] + app + pp + ['127.0.0.1'],
         'same uid mapping: root and the allowed uid 1000 (two containers) run '
         'ibv_rc_pingpong -c', r'iters in', 1, [pkgenv.PINGPONG_NOT_LISTENING])
    rc, out = pod('run', '--rm', '--label', pod.label, '--user', '1001:1001', *app,
                  'ibv_devinfo', '-d', 'uroce3')
    print(out)
    check(rc != 0 and 'access rule refuses uid 1001' in out,
          'uid 1001 of the same mapping: refused by the daemon\'s peer-uid check')
    # the same user namespace, but a pid namespace of its own: the daemon
    # cannot tell its process, and the shim says so
    rc, out = pod('run', '--rm', '--label', pod.label, *RUN_EXTRA,
                  '--userns', 'container:' + d, '--network', 'container:' + d,
                  '-v', vol + ':/run/uroce', '-e', 'LD_PRELOAD=liburoce.so', imgs['uroce-app'],
                  'ibv_devinfo', '-d', 'uroce3')
    print(out)
    check(rc != 0 and 'the daemon cannot see this process' in out,
          'a client in a pid namespace the daemon cannot see: refused, and told why')
    other = RUN_EXTRA + b + ['--network', 'none', '-v', vol + ':/run/uroce',
                             '-e', 'LD_PRELOAD=liburoce.so',
                             imgs['uroce-app']]
    rc, out = pod('run', '--rm', '--label', pod.label, *other, 'ibv_devinfo', '-d', 'uroce3')
    print(out)
    check(rc != 0 and 'owned by another user' in out,
          'another uid mapping: its shim does not trust the run directory (not its root\'s)')
    stopped(pod, d, 'podman stop: the user-namespace uroced ends with 0, no fault in its log')


def body(a):
    pkgenv.need('podman', 'runc')
    debs = pkgenv.deb_paths(pkgenv.debs(a.src, a.build))
    tar = pkgenv.clean_root(a.build)
    pod = Pod(pkgenv.uniq(TAG_PREFIX))
    pod.src = a.src
    pod.sweep()
    shim_dir = tempfile.mkdtemp(prefix='uroce-shim-')
    try:
        # only the shim, from its package, for the container that mounts it
        x = os.path.join(shim_dir, 'x')
        subprocess.run(['dpkg-deb', '-x', debs['liburoce'], x], check=True, timeout=60)
        for root, _, files in os.walk(x):
            if 'liburoce.so' in files:
                shutil.copy(os.path.join(root, 'liburoce.so'), shim_dir)
        shutil.rmtree(x)
        os.chmod(shim_dir, 0o755)
        imgs = images(pod, debs, tar)
        if not imgs:
            return None
        got = compose(pod, imgs)
        if got:
            d, volumes, tests = got
            two_apps(pod, imgs, d, volumes, tests, shim_dir)
            stopped(pod, d, 'podman stop: the compose uroced ends with 0, no fault in its log')
        userns(pod, imgs)
    finally:
        left = pod.cleanup()
        check(not left, 'no container, volume or image of this run is left (%s)' % left)
        shutil.rmtree(shim_dir, ignore_errors=True)
    return None


if __name__ == '__main__':
    raise SystemExit(pkgenv.main(body))
