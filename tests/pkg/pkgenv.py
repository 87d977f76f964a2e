# SPDX-License-Identifier: MIT
"""What the package and container tests (tests/pkg) share.

- `debs(src, build)`: the Debian packages of the source tree, built once per
  build directory and tree content (`dpkg-buildpackage -us -uc -b` in a copy
  of the tree) and kept in <build>/pkg-cache/debs-<key>/.
- `clean_root(build)`: a clean Debian 12 root as a tar, made with
  mmdebstrap from the machine's own Debian sources and cached by content
  (<build>/pkg-cache/root-<key>.tar; the key: the sources, the package
  indexes the machine's apt has, mmdebstrap's version and arguments), as
  tests/interop's VM image is. A new root is verified before it is cached
  (a wrong one is never kept). It keeps apt's lists, so `apt-get install
  ./uroce_*.deb` in it resolves at once.
- `Root`: a private copy of that root, entered the way chroot is, in a
  mount, pid (and optionally network) namespace of its own held by one
  process: every command of a test shares one /proc (the daemon checks its
  clients' /proc/<pid>/mem against its own), and when the holder goes, the
  kernel ends every process in it and drops every mount. Nothing is ever
  mounted in the host's namespace.

Parallel test processes share the caches under file locks; a wait for a
lock is a wait for the process that holds it, which releases it by
exiting."""
import argparse
import contextlib
import ctypes
import fcntl
import glob
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, os.path.join(HERE, '..', 'cm'))
import harness as h  # noqa: E402  (tests/lib/harness.py)
from harness import check  # noqa: E402,F401  (re-exported for the tests)
import cm  # noqa: E402  (tests/cm/cm.py: the RDMA CM programs' races)

BUILD_TIMEOUT = 1500     # dpkg-buildpackage of the tree on a loaded machine
ROOT_TIMEOUT = 900       # mmdebstrap
APT_TIMEOUT = 600        # one apt-get run inside a root
# The clean root's extra packages: the stock verbs and RDMA CM programs the
# tests run through the installed shim
ROOT_INCLUDE = 'ibverbs-utils,rdmacm-utils'
# The three packages users install (not the dbgsym ones)
PACKAGES = ('uroce', 'liburoce', 'uroce-ports')
ENV = {'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
       'HOME': '/root', 'LANG': 'C.UTF-8', 'DEBIAN_FRONTEND': 'noninteractive',
       'TERM': 'dumb'}


# A client that came before its server listened (the programs' start-up
# against ours): it alone comes again, printed and counted (docs/testing.md)
PINGPONG_NOT_LISTENING = h.Race(
    'client before the listen (TCP)', r"(?m)^Couldn't connect to \S+:\d+$",
    'the ibv_*_pingpong server did not listen on its TCP port yet')
RPING_NOT_LISTENING = cm.NOT_LISTENING
# The cached root's apt lists are older than the mirror's pool
APT_STALE = h.Race(
    'the mirror moved on', r'(?m)^(Err:\d+ .* 404 +Not Found|E: Unable to fetch some archives)',
    "the cached root's apt lists name packages the mirror has replaced")


def need(*tools):
    """Every program installed, or the test is a skip (77)."""
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        raise h.Missing('not installed: ' + ' '.join(missing))


def main(body):
    """The command line of every test here (--src SOURCE_DIR --build
    BUILD_DIR): the verdict of body(args)'s checks (harness.main: 77 for
    harness.Missing, SIGTERM ends through every finally)."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--src', required=True)
    ap.add_argument('--build', required=True)
    a = ap.parse_args()

    def run():
        rc = body(a)
        return h.verdict() if rc is None else rc
    return h.main(run)


def daemon_ended(rc, log, what):
    """A daemon's end judged as every test judges it (harness.daemon_faults:
    exit status, sanitizer, leak and assertion reports in its log)."""
    why = h.daemon_faults([rc if rc is not None else -9], log)
    for w in why:
        print('  ' + w)
    return check(not why, what)


def uniq(prefix):
    """A name no other test run on the machine uses: prefix, this test's
    pid (for owner_gone), '-', a random tag."""
    return '%s%d-%04x' % (prefix, os.getpid(), random.randrange(0x10000))


def owner_gone(name, prefix):
    """For a name made by uniq(prefix): its test process has exited."""
    try:
        pid = int(name[len(prefix):].split('-')[0])
    except ValueError:
        return False
    return name.startswith(prefix) and not os.path.exists('/proc/%d' % pid)


_PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when this test process dies, so
    a killed test leaves no root holder or container boot behind."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# ---- caches under <build>/pkg-cache ------------------------------------------

def cache_dir(build):
    d = os.path.join(build, 'pkg-cache')
    os.makedirs(os.path.join(d, 'tmp'), mode=0o700, exist_ok=True)
    return d


@contextlib.contextmanager
def locked(path):
    with open(path, 'w') as f:
        fcntl.flock(f, fcntl.LOCK_EX)   # released when its holder exits
        yield


def tree_files(src):
    """The files git knows or would take (work in progress included),
    without build directories."""
    r = subprocess.run(['git', '-C', src, 'ls-files', '-co', '--exclude-standard', '-z'],
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        raise h.Missing('%s is not a git checkout: %s' % (src, r.stderr.decode().strip()))
    return sorted(f for f in r.stdout.decode().split('\0')
                  if f and not f.startswith(('build', 'obj-'))
                  and os.path.isfile(os.path.join(src, f)))


def tree_key(src, files):
    """Of what the packages are built from: tests/ is not (-Dtests=false:
    meson does not enter it), so editing a test does not rebuild them."""
    h = hashlib.sha256()
    for f in files:
        if f.startswith('tests/'):
            continue
        p = os.path.join(src, f)
        h.update(f.encode() + b'\0%o\0' % (os.stat(p).st_mode & 0o111))
        with open(p, 'rb') as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:16]


_in_use = []   # shared locks on the cache entries this process uses


def _use(entry):
    """Hold a shared lock on entry's .use file for this process's life: a
    test that made a newer entry (the tree changed during a run) does not
    remove it under us."""
    f = open(entry + '.use', 'a')
    fcntl.flock(f, fcntl.LOCK_SH)
    _in_use.append(f)
    return entry


def _drop_others(cache, pattern, keep):
    """Remove the other entries of pattern that no test process uses."""
    for old in glob.glob(os.path.join(cache, pattern)):
        if old == keep or old.endswith('.use'):
            continue
        with open(old + '.use', 'a') as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue        # in use: the next run removes it
            shutil.rmtree(old, ignore_errors=True) if os.path.isdir(old) else os.unlink(old)
            os.unlink(old + '.use')


def debs(src, build):
    """Directory with the packages of this tree (uroce_*.deb, liburoce_*.deb,
    uroce-ports_*.deb, their dbgsym packages, .changes, .buildinfo)."""
    need('dpkg-buildpackage', 'dh')
    cache = cache_dir(build)
    files = tree_files(src)
    out = os.path.join(cache, 'debs-' + tree_key(src, files))
    with locked(os.path.join(cache, 'debs.lock')):
        _use(out)
        if os.path.isfile(os.path.join(out, 'done')):
            return out
        tmp = tempfile.mkdtemp(prefix='debs-build-', dir=os.path.join(cache, 'tmp'))
        try:
            tree = os.path.join(tmp, 'uroce')
            for f in files:
                os.makedirs(os.path.dirname(os.path.join(tree, f)), exist_ok=True)
                shutil.copy2(os.path.join(src, f), os.path.join(tree, f))
            print('+ dpkg-buildpackage -us -uc -b (once per tree content and build dir)',
                  flush=True)
            # -d: meson or ninja may come from elsewhere than a Debian package
            p = subprocess.Popen(['dpkg-buildpackage', '-us', '-uc', '-b', '-d', '-j2'],
                                 cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, start_new_session=True)
            try:
                log, _ = p.communicate(timeout=BUILD_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                raise RuntimeError('dpkg-buildpackage did not finish in %d s' % BUILD_TIMEOUT)
            made = [f for f in os.listdir(tmp) if f.endswith(('.deb', '.changes', '.buildinfo'))]
            if p.returncode != 0 or not any(f.startswith('uroce_') for f in made):
                print(log[-8000:])
                raise RuntimeError('dpkg-buildpackage failed (%d)' % p.returncode)
            os.makedirs(out, exist_ok=True)
            for f in made:
                shutil.move(os.path.join(tmp, f), os.path.join(out, f))
            with open(os.path.join(out, 'build.log'), 'w') as f:
                f.write(log)
            open(os.path.join(out, 'done'), 'w').close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        _drop_others(cache, 'debs-*', out)
    return out


def deb_paths(d, names=PACKAGES):
    """{package: path} of the built packages users install."""
    got = {}
    for n in names:
        m = glob.glob(os.path.join(d, '%s_*.deb' % n))
        if len(m) != 1:
            raise RuntimeError('%s: %d %s_*.deb' % (d, len(m), n))
        got[n] = m[0]
    return got


def debian_targets():
    """The machine's Debian 12 package indexes as apt sees them:
    [(uri, suite, component, index file)]."""
    r = subprocess.run(['apt-get', 'indextargets', '--format',
                        '$(ORIGIN)|$(TARGET_OF)|$(REPO_URI)|$(RELEASE)|$(COMPONENT)|'
                        '$(FILENAME)'],
                       capture_output=True, text=True, timeout=60)
    got = []
    for line in r.stdout.splitlines():
        f = line.split('|')
        if len(f) == 6 and f[0] == 'Debian' and f[1] == 'deb' and f[3].startswith('bookworm'):
            got.append(tuple(f[2:]))
    return got


def debian_sources(targets):
    """Those suites as deb822 sources text, None when there are none."""
    suites = {}
    for uri, suite, comp, _ in targets:
        suites.setdefault((uri, suite), set()).add(comp)
    if not suites:
        return None
    return '\n'.join('Types: deb\nURIs: %s\nSuites: %s\nComponents: %s\n' %
                     (uri, suite, ' '.join(sorted(comps)))
                     for (uri, suite), comps in sorted(suites.items()))


# how the clean root is made: Debian 12 with apt (--variant=apt, as the
# issue's user made it) and its lists kept
MMDEBSTRAP = ['mmdebstrap', '--quiet', '--variant=apt', '--skip=cleanup/apt/lists',
              '--include=' + ROOT_INCLUDE, 'bookworm']
# what a usable root holds (verify_root): apt with lists to resolve the
# packages' dependencies, the stock programs the tests run
ROOT_MUST = ('./usr/bin/apt-get', './usr/bin/dpkg', './usr/bin/ibv_rc_pingpong',
             './usr/bin/ibv_devinfo', './usr/bin/rping', './usr/sbin/chroot')
ROOT_MUST_RE = (r'^\./usr/lib/x86_64-linux-gnu/libibverbs\.so\.1$',
                r'^\./usr/lib/x86_64-linux-gnu/librdmacm\.so\.1$',
                r'^\./usr/lib/x86_64-linux-gnu/libc\.so\.6$',
                r'^\./var/lib/apt/lists/.*_bookworm_.*Packages',
                r'^\./etc/apt/sources\.list(\.d/.*)?$')


def verify_root(tar):
    """[] when the tar is a usable clean root, else what it lacks."""
    r = subprocess.run(['tar', '-tf', tar], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return ['tar -t: ' + r.stderr.strip()[-500:]]
    names = set(r.stdout.splitlines())
    miss = [m for m in ROOT_MUST if m not in names]
    miss += [m for m in ROOT_MUST_RE if not any(re.match(m, n) for n in names)]
    return miss


def root_key(targets, sources):
    """What makes the root: the sources, the contents of the package
    indexes the machine's apt has (an apt-get update that brings new ones
    makes a new root), mmdebstrap's version and arguments, the checks."""
    k = hashlib.sha256()
    ver = subprocess.run(['mmdebstrap', '--version'], capture_output=True, text=True,
                         timeout=60).stdout
    k.update(('%s|%s|%s|%s|%s' % (sources, ver, MMDEBSTRAP, ROOT_MUST, ROOT_MUST_RE)).encode())
    for *_, fn in sorted(targets):
        try:
            with open(fn, 'rb') as f:
                k.update(hashlib.sha256(f.read()).digest())
        except OSError:
            k.update(b'absent:' + fn.encode())
    return k.hexdigest()[:16]


def clean_root(build):
    """A tar of a clean Debian 12 root (mmdebstrap --variant=apt), cached
    by content (root_key) once verified (verify_root)."""
    need('mmdebstrap')
    targets = debian_targets()
    sources = debian_sources(targets)
    if not sources:
        raise h.Missing('no Debian bookworm apt sources with lists on this machine '
                        '(apt-get update)')
    cache = cache_dir(build)
    out = os.path.join(cache, 'root-%s.tar' % root_key(targets, sources))
    with locked(os.path.join(cache, 'root.lock')):
        _use(out)
        if os.path.isfile(out):
            return out
        tmp = tempfile.mkdtemp(prefix='root-build-', dir=os.path.join(cache, 'tmp'))
        try:
            src = os.path.join(tmp, 'debian.sources')
            with open(src, 'w') as f:
                f.write(sources)
            print('+ %s (once per key: %s)' % (' '.join(MMDEBSTRAP), os.path.basename(out)),
                  flush=True)
            r = subprocess.run(MMDEBSTRAP + [os.path.join(tmp, 'root.tar'), src],
                               capture_output=True, text=True, timeout=ROOT_TIMEOUT)
            if r.returncode != 0:
                print(r.stdout[-3000:] + r.stderr[-3000:])
                raise RuntimeError('mmdebstrap failed (%d)' % r.returncode)
            bad = verify_root(os.path.join(tmp, 'root.tar'))
            if bad:
                raise RuntimeError('mmdebstrap made a root without %s: not cached' % bad)
            os.rename(os.path.join(tmp, 'root.tar'), out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        _drop_others(cache, 'root-*.tar', out)
    return out


# ---- roots -------------------------------------------------------------------

def _mounted_below(path):
    """Mount points at or below path in this (the host's) mount namespace."""
    path = os.path.realpath(path)
    with open('/proc/self/mountinfo') as f:
        return [ln.split()[4] for ln in f
                if ln.split()[4] == path or ln.split()[4].startswith(path + '/')]


def _children(pid):
    try:
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def sweep(build):
    """Roots of earlier runs whose test process is gone (killed before it
    could remove them): named root-<pid>-*, removed when nothing is mounted
    there."""
    for d in glob.glob(os.path.join(cache_dir(build), 'tmp', 'root-*-*')):
        try:
            pid = int(os.path.basename(d).split('-')[1])
        except ValueError:
            continue
        if not os.path.exists('/proc/%d' % pid) and not _mounted_below(d):
            shutil.rmtree(d, ignore_errors=True)


# Run by the holder (in its new namespaces, before it becomes the root's
# pid 1): the root's /dev is the host's (bound), /dev/shm and /run its own
# tmpfs, /sys read-only; /proc was mounted for the new pid namespace by
# unshare --mount-proc.
_HOLDER = r'''set -e
r=$1
mount --rbind /dev "$r/dev"
mount -t tmpfs -o mode=1777,size=256m tmpfs "$r/dev/shm"
mount -t tmpfs -o mode=755 tmpfs "$r/run"
mount -t sysfs -o ro sysfs "$r/sys"
exec chroot "$r" /bin/sleep infinity
'''


class Root:
    """A private root tree; start() enters it (see the module's text)."""

    def __init__(self, path):
        self.dir = path
        self.holder = None
        self.pid = None       # the holder's pid 1 in the host's pid namespace
        self.net = False

    @classmethod
    def from_tar(cls, build, tar):
        d = tempfile.mkdtemp(prefix='root-%d-' % os.getpid(), dir=os.path.join(cache_dir(build),
                                                                              'tmp'))
        os.chmod(d, 0o755)
        r = subprocess.run(['tar', '-xpf', tar, '--numeric-owner', '-C', d],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            shutil.rmtree(d, ignore_errors=True)
            raise RuntimeError('tar -x %s: %s' % (tar, r.stderr[-2000:]))
        return cls(d)

    def clone(self, build):
        """A copy of this (stopped) root."""
        d = tempfile.mkdtemp(prefix='root-%d-' % os.getpid(), dir=os.path.join(cache_dir(build),
                                                                              'tmp'))
        os.rmdir(d)
        r = subprocess.run(['cp', '-a', '--reflink=auto', self.dir, d], capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError('cp -a: ' + r.stderr[-2000:])
        return Root(d)

    def path(self, p):
        return os.path.join(self.dir, p.lstrip('/'))

    def start(self, net=False):
        """Enter the root: with net, in a network namespace of its own
        (only lo, down, until the test adds interfaces)."""
        if not net:
            # the host's resolver, for apt
            shutil.copyfile('/etc/resolv.conf', self.path('/etc/resolv.conf'),
                            follow_symlinks=True) if os.path.exists('/etc/resolv.conf') \
                else None
        self.net = net
        self.holder = subprocess.Popen(
            ['unshare', '--mount', '--propagation', 'private', '--pid', '--fork',
             '--kill-child', '--mount-proc=' + self.path('/proc')] + (['--net'] if net else []) +
            ['--', '/bin/sh', '-c', _HOLDER, 'holder', self.dir],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=die_with_parent)
        # its pid 1 is ready once it has chrooted (the mounts come first)
        while self.holder.poll() is None:
            kids = _children(self.holder.pid)
            if kids:
                try:
                    if os.readlink('/proc/%d/root' % kids[0]) == os.path.realpath(self.dir):
                        self.pid = kids[0]
                        return self
                except OSError:
                    pass
            time.sleep(0.05)
        out = self.holder.stdout.read().decode(errors='replace')
        raise RuntimeError('entering %s failed (%s): %s' % (self.dir, self.holder.returncode,
                                                            out.strip()))

    def _argv(self, cmd):
        return (['nsenter', '--target', str(self.pid), '--mount', '--pid', '--root', '--wd'] +
                (['--net'] if self.net else []) + ['--'] + list(cmd))

    def run(self, cmd, env=None, timeout=300, check_rc=None, quiet=False, input=None):
        """cmd inside the root: (exit status, stdout+stderr)."""
        e = dict(ENV, **(env or {}))
        if not quiet:
            print('+ [root] ' + ' '.join(cmd), flush=True)
        try:
            r = subprocess.run(self._argv(cmd), env=e, capture_output=True, text=True,
                               timeout=timeout, input=input, errors='replace')
        except subprocess.TimeoutExpired as t:
            out = (t.stdout or b'')
            out = out.decode(errors='replace') if isinstance(out, bytes) else out
            return 124, out + '\n(timed out after %d s)' % timeout
        return r.returncode, r.stdout + r.stderr

    def apt_install(self, args):
        """apt-get install args in the root: (exit status, output). A root
        cached before the mirror moved on (a point release, a security
        update) names .debs the mirror no longer has: apt-get update in
        the root and install again, once, printed and counted."""
        def attempt():
            return self.run(['apt-get', 'install', '-y', '-q'] + list(args),
                            timeout=APT_TIMEOUT)
        res = attempt()
        if res[0] != 0 and APT_STALE.matches(res[1]):
            print('RETRY 1/1 of apt-get install: %s (%s)' % (APT_STALE.name, APT_STALE.why),
                  flush=True)
            h.retries.append((APT_STALE.name, 1))
            rc, out = self.run(['apt-get', 'update', '-q'], timeout=APT_TIMEOUT)
            if rc != 0:
                return rc, res[1] + '\n' + out
            res = attempt()
        return res

    def popen(self, cmd, env=None, log=None):
        """cmd inside the root, in the background: a Bg."""
        print('+ [root] ' + ' '.join(cmd) + ' &', flush=True)
        return Bg(self._argv(cmd), dict(ENV, **(env or {})), log)

    def host_net(self, cmd, timeout=60):
        """A host program (ip) in the root's network namespace."""
        r = subprocess.run(['nsenter', '--target', str(self.pid), '--net', '--'] + cmd,
                           capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + r.stderr

    def stop(self):
        """End every process in the root and its mounts."""
        if self.holder is None:
            return
        if self.holder.poll() is None:
            os.kill(self.holder.pid, signal.SIGKILL)   # --kill-child: pid 1 follows
        self.holder.wait()
        if self.pid:
            # pid 1 gone: the kernel kills the rest of its namespace
            end = time.monotonic() + 60
            while os.path.exists('/proc/%d' % self.pid) and time.monotonic() < end:
                time.sleep(0.05)
        self.holder.stdout.close()
        self.holder = self.pid = None

    def remove(self):
        self.stop()
        left = _mounted_below(self.dir)
        if left:
            # never delete through a mount (a bound /dev would be the host's)
            raise RuntimeError('still mounted below %s: %s' % (self.dir, left))
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def copy_in(self, files, dest):
        d = self.path(dest)
        os.makedirs(d, exist_ok=True)
        for f in files:
            shutil.copy2(f, d)
        return [os.path.join(dest, os.path.basename(f)) for f in files]

    def snapshot(self, skip=('proc', 'sys', 'dev', 'run', 'tmp', 'var/lib/apt', 'var/cache',
                             'var/log', 'var/lib/dpkg', 'etc/ld.so.cache')):
        """{path: what} of the root's files: type, mode, owner, and for
        regular files the size and a hash of the contents."""
        snap = {}
        for top, dirs, files in os.walk(self.dir):
            rel = os.path.relpath(top, self.dir)
            rel = '' if rel == '.' else rel
            dirs[:] = [d for d in dirs if os.path.join(rel, d) not in skip]
            for n in dirs + files:
                p = os.path.join(rel, n)
                if p in skip:
                    continue
                st = os.lstat(os.path.join(top, n))
                what = '%o %d:%d' % (st.st_mode, st.st_uid, st.st_gid)
                if os.path.islink(os.path.join(top, n)):
                    what += ' -> ' + os.readlink(os.path.join(top, n))
                elif os.path.isfile(os.path.join(top, n)) and n in files:
                    with open(os.path.join(top, n), 'rb') as f:
                        what += ' %d %s' % (st.st_size, hashlib.sha1(f.read()).hexdigest())
                snap['/' + p] = what
        return snap


class Bg:
    """A background program: its output to a file, stopped with its whole
    process tree (the program inside the root is nsenter's child)."""

    def __init__(self, argv, env, log=None):
        self.log = log or tempfile.NamedTemporaryFile(prefix='uroce-pkg-', suffix='.log',
                                                      delete=False).name
        self._f = open(self.log, 'w')
        self.p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=self._f,
                                  stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self):
        return self.p.poll() is None

    def output(self):
        with open(self.log, errors='replace') as f:
            return f.read()

    def signal(self, sig):
        """To the program itself (nsenter's child), not to nsenter."""
        for k in _children(self.p.pid):
            try:
                os.kill(k, sig)
            except ProcessLookupError:
                pass

    def wait(self, timeout):
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout=30):
        """SIGTERM, then SIGKILL: its exit status (None if it had to be
        killed)."""
        if self.p.poll() is None:
            self.signal(signal.SIGTERM)
            if self.wait(timeout) is None:
                self.signal(signal.SIGKILL)
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
                self.close()
                return None
        self.close()
        return self.p.returncode

    def close(self):
        if not self._f.closed:
            self._f.close()

    def remove_log(self):
        self.close()
        with contextlib.suppress(OSError):
            os.unlink(self.log)
