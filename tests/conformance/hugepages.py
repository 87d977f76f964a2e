# SPDX-License-Identifier: MIT
"""2 MB huge pages reserved for the length of a run (docs/conformance.md).

rdma-core's huge-page tests (test_odp's two) skip unless
/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages is non-zero. CI runs
as root, so a run that asks raises it by N over what it was and puts the
old value back when it ends. Runs in parallel (meson runs the modules at
once, and several checkouts may run suites on one machine) add up: under a
lock, each run leaves a file named after its pid in STATE holding its N;
the pool is the value from before plus the N of every live run, so one
run's pages are never another's. The first one records the value from
before, the last one to leave (or the next run, when the ones before were
killed and left only dead pids) restores it. Without root, or when the kernel
gives no page, nothing is changed and the tests skip.
"""
import fcntl
import os

NR = '/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'
STATE = '/run/lock/uroce-hugepages'


def _read(path):
    with open(path) as f:
        return int(f.read().strip() or 0)


def _write(path, v):
    with open(path, 'w') as f:
        f.write('%d\n' % v)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


class Reservation:
    def __init__(self, n):
        self.n = n
        self.held = False
        self.enough = n == 0

    def _locked(self, fn):
        os.makedirs(STATE, mode=0o700, exist_ok=True)
        with open(os.path.join(STATE, 'lock'), 'w') as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            return fn()

    def _holders(self):
        """{pid: pages} of live holders; files of dead ones are removed"""
        live = {}
        for fn in os.listdir(STATE):
            if not fn.isdigit():
                continue
            path = os.path.join(STATE, fn)
            if _alive(int(fn)):
                try:
                    live[int(fn)] = _read(path)
                except (OSError, ValueError):
                    live[int(fn)] = 0
            else:
                os.unlink(path)
        return live

    def _enter(self):
        prev_file = os.path.join(STATE, 'prev')
        if not self._holders() and not os.path.exists(prev_file):
            _write(prev_file, _read(NR))
        prev = _read(prev_file)
        _write(os.path.join(STATE, str(os.getpid())), self.n)
        self.held = True
        want = prev + sum(self._holders().values())
        if _read(NR) < want:
            try:
                _write(NR, want)
            except OSError as e:
                print('huge pages: cannot reserve (%s)' % e)
        got = _read(NR)
        # the pages asked for are there (the kernel may give fewer when
        # memory is fragmented; the suite's tests then say so)
        self.enough = got >= want
        print('huge pages: %d of 2 MB reserved (%d before the run)' % (got, prev))

    def _leave(self):
        os.unlink(os.path.join(STATE, str(os.getpid())))
        self.held = False
        rest = self._holders()
        prev_file = os.path.join(STATE, 'prev')
        if rest:
            # give back this run's share only: pages still mapped by the
            # others stay theirs (the kernel frees only free pages)
            want = _read(prev_file) + sum(rest.values())
            if _read(NR) > want:
                _write(NR, want)
            return
        prev_file = os.path.join(STATE, 'prev')
        prev = _read(prev_file)
        _write(NR, prev)
        os.unlink(prev_file)
        print('huge pages: back to %d' % _read(NR))

    def __enter__(self):
        if self.n <= 0 or not os.path.exists(NR) or os.geteuid() != 0:
            if self.n > 0:
                print('huge pages: not reserved (needs root and %s)' % NR)
            return self
        self._locked(self._enter)
        return self

    def __exit__(self, *exc):
        if self.held:
            self._locked(self._leave)
        return False
