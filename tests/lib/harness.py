# SPDX-License-Identifier: MIT
"""The one launcher and verdict module of the Python tests (docs/testing.md).

Every Python test that starts uroced, runs programs, retries or checks
goes through this module, so that one rule holds everywhere:

- exit 0 pass, 1 fail, 77 skip (a missing prerequisite: `skip()`), never
  0 for something that was not done;
- a daemon's end is read: its exit status and its log (sanitizer, leak
  and assertion reports) through `daemon_faults`, for every daemon a `Rig`
  started, and `main()` fails a test whose daemon faulted even when the
  test itself passed or skipped;
- a retry happens only around a named third-party race recognised by its
  exact signature (`Race`, `retry`), bounded, printed and counted;
- every wait is bounded by what it waits for (the process it waits on is
  alive: `wait_until`), not by the test's timeout;
- checks are `check()` / `verdict()` (never `assert`, which -O removes).

Usage:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    '..', 'lib'))
    import harness as h
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

PASS, FAIL, SKIP = 0, 1, 77
TIMEOUT = 90        # a hung program, not a verdict

# ---- verdicts ---------------------------------------------------------------

failures = []
partials = []     # parts of a test that could not run: the test is a skip


def part_skipped(reason):
    """A part of the test cannot run here (a tool missing, not root): the
    rest runs, and the test then ends as a skip (77), not a pass."""
    print('SKIP (part):', reason, flush=True)
    partials.append(reason)


def check(cond, what):
    """One check of many in a run: printed ok/FAIL, remembered."""
    print('%s %s' % ('ok  ' if cond else 'FAIL', what), flush=True)
    if not cond:
        failures.append(what)
    return bool(cond)


def verdict():
    """Exit status of a run of check()s: 0 when every one passed and no
    part was skipped, 77 when one was, 1 when any check failed."""
    print('%d failure(s)' % len(failures), flush=True)
    if failures:
        return FAIL
    if partials:
        return skip('parts not run: ' + '; '.join(partials))
    return PASS


def require(cond, what):
    """A check the rest of the script depends on: a failure ends the run
    (exit 1) with what was expected. Python tests use this instead of
    assert, which python3 -O removes."""
    if not cond:
        print('FAIL:', what, flush=True)
        sys.exit(FAIL)
    return True


def fail(msg):
    print('FAIL:', msg, flush=True)
    return FAIL


def skip(reason):
    """A prerequisite is missing: the test did not run (77, never 0)."""
    print('SKIP:', reason, flush=True)
    return SKIP


def need(*tools):
    """True when every program is on PATH; prints the missing ones."""
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        print('not installed:', ' '.join(missing), flush=True)
        return False
    return True


# ---- processes --------------------------------------------------------------

def kill_group(p):
    """A program and everything it forked (its own session), killed whole;
    the program itself too when it is not a session leader."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if p.poll() is None:
        p.kill()
    p.wait()


def run(cmd, env=None, timeout=TIMEOUT, quiet=False):
    """Run cmd in its own session; (exit status, output). Raises
    subprocess.TimeoutExpired (the group killed) when it overruns."""
    print('+', ' '.join(str(c) for c in cmd), flush=True)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        raise
    # leftovers of a program that exited (a forked child): gone too
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    out = out.decode(errors='replace')
    if not quiet:
        sys.stdout.write(out)
        sys.stdout.flush()
    return p.returncode, out


def wait_until(pred, alive, limit, poll=0.05):
    """True once pred() holds. False as soon as alive() does not (what we
    wait on is gone: it cannot come any more), or after limit seconds (a
    last bound against a live process that hangs)."""
    end = time.monotonic() + limit
    while True:
        if pred():
            return True
        if not alive() or time.monotonic() > end:
            return pred()
        time.sleep(poll)


class Bg:
    """A program in the background, its output collected by a thread so
    that the test can wait for a line without blocking on the pipe."""

    def __init__(self, cmd, env, tty=False, name=None):
        import pty
        self.name = name or os.path.basename(cmd[0])
        print('+ bg:', ' '.join(str(c) for c in cmd), flush=True)
        if tty:
            # a terminal: the program's stdio flushes every line, so that
            # a line it printed can be waited for
            master, slave = pty.openpty()
            self.p = subprocess.Popen(cmd, env=env, stdout=slave, stderr=slave,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
            os.close(slave)
            self.out = os.fdopen(master, 'rb', buffering=0)
        else:
            self.p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, start_new_session=True)
            self.out = self.p.stdout
        self.lines = []
        self.cv = threading.Condition()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        try:
            for ln in iter(self.out.readline, b''):
                with self.cv:
                    self.lines.append(ln.decode(errors='replace').replace('\r\n', '\n'))
                    self.cv.notify_all()
        except OSError:
            pass                # the terminal's end: EIO when the program exits
        with self.cv:
            self.cv.notify_all()

    def alive(self):
        return self.p.poll() is None

    def text(self):
        with self.cv:
            return ''.join(self.lines)

    def wait_line(self, pat, limit=60.0):
        """True once a line contains pat (a str) or matches it (a compiled
        regex); False as soon as the program has exited without it."""
        def seen():
            return any((pat.search(ln) if hasattr(pat, 'search') else pat in ln)
                       for ln in self.lines)
        end = time.monotonic() + limit
        with self.cv:
            while not seen():
                left = end - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and not self.t.is_alive()):
                    return False
                self.cv.wait(min(left, 0.5))
            return True

    def finish(self, timeout=TIMEOUT):
        """(exit status, output); status None when it overran (killed)."""
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            kill_group(self.p)
            self.t.join(5)
            return None, self.text()
        self.t.join(5)
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return self.p.returncode, self.text()

    def kill(self):
        if self.p.poll() is None:
            kill_group(self.p)
        self.t.join(5)
        return self.text()


def free_tcp_port():
    """A TCP port the kernel picked as free (bound to port 0, released):
    no fixed ports, several checkouts run their suites at once."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]
    finally:
        s.close()


def tcp_listening(port, pid=None):
    """True once something listens on TCP port (read from /proc: a probe
    connection would count as a client of the server); pid: in that
    process's network namespace."""
    base = '/proc/%d/net' % pid if pid else '/proc/net'
    for f in (base + '/tcp', base + '/tcp6'):
        try:
            with open(f) as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for r in rows:
            loc, st = r.split()[1], r.split()[3]
            if st == '0A' and int(loc.rsplit(':', 1)[1], 16) == port:
                return True
    return False


# ---- retries ----------------------------------------------------------------

class Race:
    """A third-party race we know by name and recognise by its exact
    signature in a failed attempt's output (a compiled regex)."""

    def __init__(self, name, signature, why):
        self.name = name
        self.sig = re.compile(signature)
        self.why = why

    def matches(self, out):
        return bool(self.sig.search(out or ''))


retries = []      # (race name, attempt) of this run: printed at the end


def retry(attempt, races, limit=3, what='attempt', alive=None, pause=0.0):
    """attempt() -> (ok, output, *rest). Run it again only when it failed
    with the signature of one of races (and alive(), when given, still
    holds: the other side of the race is there), at most limit more times,
    each retry printed with its reason and counted; any other failure is
    returned at once. Returns the last attempt's result."""
    n = 0
    while True:
        res = attempt()
        ok, out = res[0], res[1]
        if ok:
            return res
        race = next((r for r in races if r.matches(out)), None)
        if race is None:
            return res
        if alive is not None and not alive():
            print('%s failed with %s, and the other side has exited: a failure' %
                  (what, race.name), flush=True)
            return res
        if n >= limit:
            print('RETRY limit: %s failed %d times with %s (%s): a failure' %
                  (what, n + 1, race.name, race.why), flush=True)
            return res
        n += 1
        retries.append((race.name, n))
        print('RETRY %d/%d of %s: %s (%s)' % (n, limit, what, race.name, race.why), flush=True)
        time.sleep(pause)


# how often a client may meet its server not listening yet: the race is
# the server's start-up against ours, each retry is printed and counted
LISTEN_RETRIES = 30


def pair(srv_cmd, cli_cmd, env, ready=None, races=(), moved_on=None, srv_exits=True,
         timeout=TIMEOUT, cli_env=None, limit=LISTEN_RETRIES):
    """A server in the background and one client; (ok, client output,
    server output). ok: both exited 0 (the server only when srv_exits;
    else it must still be alive and is stopped).

    The client starts once the server is ready: ready is a line the server
    prints once it listens (str or regex), or the TCP port it listens on
    (int), or a predicate (callable, e.g. Rig.cm_listening), or None
    (start at once). A client that fails with the
    signature of one of races (the server was not listening yet) is
    retried while the server lives (retry(): bounded, printed, counted);
    one whose output matches moved_on (a Race: the server has moved past
    the point a new client could join) ends the pair at once, failed."""
    srv = Bg(srv_cmd, env, tty=isinstance(ready, (str, re.Pattern)), name='server')
    try:
        if callable(ready):
            # a predicate (Rig.cm_listening): the daemon's word that the
            # server is there, bounded by the server being alive
            if not wait_until(ready, srv.alive, timeout):
                return False, '', srv.kill() + '\nserver never became ready: %s' % (
                    getattr(ready, 'why', ready),)
        elif isinstance(ready, int):
            if not wait_until(lambda: tcp_listening(ready, srv.p.pid), srv.alive, timeout):
                return False, '', srv.kill() + '\nserver exited before it listened on TCP ' \
                    'port %d' % ready
        elif ready is not None and not srv.wait_line(ready, timeout):
            return False, '', srv.kill() + '\nserver never printed %r' % (
                getattr(ready, 'pattern', ready),)

        def attempt():
            rc, out = run(cli_cmd, cli_env or env, timeout)
            if rc != 0 and moved_on is not None and moved_on.matches(out):
                return False, '', out     # no race of races matches '': not retried
            return rc == 0, out, out
        try:
            ok, _, out = retry(attempt, races, limit, 'client', alive=srv.alive, pause=0.3)
        except subprocess.TimeoutExpired:
            sys.stdout.write('--- server (client timed out) ---\n' + srv.kill())
            raise
        if moved_on is not None and not ok and moved_on.matches(out):
            sout = srv.kill()
            sys.stdout.write('--- server (%s) ---\n%s' % (moved_on.name, sout))
            return False, out, sout
        if not ok:
            # the client failed for a reason that is not a race: the
            # server would wait for it until its timeout
            sout = srv.kill()
            sys.stdout.write('--- server (stopped: the client failed) ---\n' + sout)
            return False, out, sout
        if not srv_exits:
            alive = srv.alive()
            sout = srv.kill()
            sys.stdout.write('--- server ---\n' + sout)
            if not alive:
                print('the server exited (status %s) while it should serve' % srv.p.returncode)
            return ok and alive, out, sout
        src, sout = srv.finish(timeout)
        sys.stdout.write('--- server ---\n' + sout)
        if src != 0:
            print('server status %s' % src, flush=True)
            return False, out, sout
        return True, out, sout
    finally:
        srv.kill()


def print_retries():
    if retries:
        names = {}
        for name, _ in retries:
            names[name] = names.get(name, 0) + 1
        print('retries: %d (%s)' % (len(retries),
              ', '.join('%s x%d' % kv for kv in sorted(names.items()))), flush=True)
    else:
        print('retries: 0', flush=True)


# ---- fault accounting -------------------------------------------------------

FATES = re.compile(r'(\S+): fault drop \d+ dup \d+ reorder \d+ corrupt (\d+) delay \d+\n'
                   r'.*?\1: fault corrupt fates: icrc (\d+) hdr (\d+) other (\d+) '
                   r'masked (\d+) passed (\d+) unseen (\d+)', re.S)


def corrupt_accounting(log_text, need_icrc=True, follow_all=True):
    """Every frame uroced's fault injector corrupted, accounted for from
    the daemon's closing counters (emu/net/fault.c): caught by the ICRC,
    by a header check, no longer RoCE or ours, or passed with its flipped
    bit in an ICRC-masked field. A flip in a covered byte that passed, or
    a corrupted frame not followed, is a problem. Returns the problems
    ([] when every fault is accounted for) and prints the tally.
    follow_all=False: with dup/reorder/delay beside corrupt, a corrupted
    frame that was duplicated or held is counted, not followed."""
    devs = FATES.findall(log_text)
    if not devs:
        return ['no corrupted frame in the daemon\'s counters (no "fault corrupt fates")']
    bad = []
    for dev, n, icrc, hdr, other, masked, passed, unseen in devs:
        n, icrc, hdr, other, masked, passed, unseen = (int(x) for x in (
            n, icrc, hdr, other, masked, passed, unseen))
        print('%s: %d corrupted: ICRC %d, header %d, not RoCE/ours %d, masked field %d, '
              'passed %d, not followed %d' % (dev, n, icrc, hdr, other, masked, passed, unseen))
        if icrc + hdr + other + masked + passed + unseen != n:
            bad.append('%s: %d corrupted frames, %d accounted for' %
                       (dev, n, icrc + hdr + other + masked + passed + unseen))
        if passed:
            bad.append('%s: %d frames with a covered byte flipped passed the checks' %
                       (dev, passed))
        if unseen and follow_all:
            bad.append('%s: %d corrupted frames not followed (dup/reorder/delay with '
                       'corrupt)' % (dev, unseen))
        if need_icrc and not icrc:
            bad.append('%s: the ICRC caught none of %d corrupted frames' % (dev, n))
    return bad


# ---- daemons ----------------------------------------------------------------

# what sanitizers, glibc's assert and a crashing daemon print; an exit
# status alone is not enough (a report from a thread that went on, a
# report in a daemon that was then SIGKILLed by the test)
FAULT_MARKS = ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:',
               'SUMMARY: UndefinedBehaviorSanitizer', 'AddressSanitizer:DEADLYSIGNAL',
               'ThreadSanitizer:', "Assertion `", 'assertion failed')


def daemon_faults(statuses, log_text):
    """Why the daemons' end fails the test: a non-zero exit status (crash,
    LeakSanitizer's exit code, killed after ignoring SIGTERM) or a
    sanitizer, leak or assertion report in their log. [] when clean."""
    why = ['uroced exit status %d' % st for st in statuses if st != 0]
    why += ['uroced log: %r' % ln.strip() for ln in log_text.splitlines()
            if any(m in ln for m in FAULT_MARKS)][:5]
    return why


def stop(proc, grace=60):
    """SIGTERM, then SIGKILL; the exit status (negative: killed by that
    signal, so a daemon that ignored SIGTERM shows as -9). The grace is a
    hang bound, not a verdict on speed: a sanitized daemon's exit (leak
    scan of its whole heap) took over 20 s on a machine at load 30. A daemon the
    test itself SIGKILLed (basic-daemon_death) is 0 here: the test's doing,
    it says nothing about the daemon."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            sys.stdout.write(hang_dump(proc.pid, 'still running %ds after SIGTERM' % grace))
            kill_group(proc)
            return proc.returncode
    return 0 if proc.returncode == -signal.SIGKILL else proc.returncode


def hang_dump(pid, why):
    """What a process that does not end is doing, for the log before it
    is killed: each thread's state and kernel wait channel, and every
    thread's stack from gdb when it is installed (bounded)."""
    out = ['--- %d %s: its threads ---' % (pid, why)]
    try:
        for tid in sorted(os.listdir('/proc/%d/task' % pid), key=int):
            base = '/proc/%d/task/%s/' % (pid, tid)
            try:
                with open(base + 'stat') as f:
                    st = f.read()
                with open(base + 'wchan') as f:
                    wchan = f.read().strip()
            except OSError:
                continue
            name = st[st.index('(') + 1:st.rindex(')')]
            out.append('%s %s %s wchan %s' % (tid, name, st[st.rindex(')') + 2], wchan))
    except OSError as e:
        out.append('(no /proc: %s)' % e)
    if shutil.which('gdb'):
        try:
            r = subprocess.run(['gdb', '-nx', '-batch', '-p', str(pid), '-ex',
                                'thread apply all bt 30'], capture_output=True, text=True,
                               timeout=60)
            out.append(r.stdout[-12000:])
        except subprocess.TimeoutExpired:
            out.append('(gdb took over 60 s)')
    return '\n'.join(out) + '\n'


def accepts(path):
    """A daemon listens on the control socket path."""
    if not os.path.exists(path):
        return False
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def wait_sockets(paths, proc, limit=60.0):
    """True once every socket in paths accepts a connection; False as soon
    as proc (the daemon serving them) has exited."""
    return wait_until(lambda: all(accepts(p) for p in paths),
                      lambda: proc.poll() is None, limit)


def wait_socket(path, proc, limit=60.0):
    return wait_sockets([path], proc, limit)


rigs = []         # every Rig of this run: main() reads their verdicts


class RigError(Exception):
    """The daemon did not come up: the test fails with this reason."""


class Missing(Exception):
    """A prerequisite is missing (uroced not built): the test skips."""


class Rig:
    """Private uroced daemons sharing one run directory (mktemp), their
    output in one log. start() waits for each daemon's sockets (bounded by
    the daemon being alive); close() stops them, reads the log and
    records the faults; remove() deletes the run directory; main() does
    both for every Rig and fails the test on their faults.

        with h.Rig(uroced, 'uroce-x-') as rig:
            rig.start([], devs=['uroce0'])
            h.run(cmd, rig.penv(shim))
    """

    def __init__(self, uroced, prefix='uroce-t-', env=None):
        if not os.access(uroced, os.X_OK):
            raise Missing('no uroced at %s (not built)' % uroced)
        self.uroced = uroced
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.run_dir = self.dir
        self.env = dict(os.environ if env is None else env, UROCE_RUN_DIR=self.dir)
        self.logpath = os.path.join(self.dir, 'uroced.log')
        self.log = open(self.logpath, 'w+')
        self.procs = []
        self.statuses = []
        self.faults = []
        self.text = ''
        self.closed = False
        rigs.append(self)

    def start(self, args=(), devs=('uroce0',), env=None, limit=60.0, cmd=None):
        """Start one daemon (cmd: a wrapper such as valgrind before it) and
        wait until the control socket of each of devs accepts."""
        e = dict(self.env)
        e.update(env or {})
        argv = list(cmd or []) + [self.uroced] + list(args)
        print('+ daemon:', ' '.join(argv), flush=True)
        p = subprocess.Popen(argv, env=e, stdout=self.log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.procs.append(p)
        socks = [os.path.join(self.dir, d + '.sock') for d in devs]
        if not wait_sockets(socks, p, limit):
            st = p.poll()
            raise RigError('uroced %s did not come up (%s): %s' % (
                ' '.join(args), 'exit status %s' % st if st is not None else
                'still running after %ds' % limit, self.tail(800).strip()))
        return p

    def alive(self):
        return all(p.poll() is None for p in self.procs)

    def wait_path(self, rel, limit=60.0):
        """A file the daemons write after their socket (sysfs tree)."""
        path = os.path.join(self.dir, rel)
        return wait_until(lambda: os.path.exists(path), self.alive, limit)

    def ctl(self, args, dev='uroce0'):
        """uroce-ctl of the build beside uroced against these daemons:
        its JSON, or None when the daemon does not answer."""
        # (UROCE_CTL: the harness selftest's fake, beside its fake uroced)
        ctl = os.environ.get('UROCE_CTL') or os.path.join(
            os.path.dirname(os.path.abspath(self.uroced)), '..', 'tools', 'ctl', 'uroce-ctl')
        r = subprocess.run([ctl, '--run-dir', self.dir, '-d', dev, '--json'] + list(args),
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return None
        return json.loads(r.stdout)

    def cm_listeners(self, devs=('uroce0',)):
        """The services the IB CM engines of devs listen on, summed
        (uroce-ctl counters: cm.listeners)."""
        n = 0
        for d in devs:
            j = self.ctl(['counters', '--port'], d)
            n += (j or {}).get('cm', {}).get('listeners', 0)
        return n

    def cm_listening(self, devs=('uroce0',)):
        """A ready predicate for pair(): true once the CM engines of devs
        listen on one service more than now. A librdmacm server prints
        nothing once it listens (rping -s, ucmatose, udaddy), and a client
        whose REQ comes first is rejected (REJ 8): with several
        connections some may then come before the listen and some after,
        which neither program recovers from. A listener of a server that
        just ended goes when the daemon sees its file closed: that is
        waited for first (bounded), else a new server's listen would not
        raise the count above a base that still held the old one."""
        wait_until(lambda: self.cm_listeners(devs) == 0, self.alive, 10.0)
        base = self.cm_listeners(devs)

        def listening():
            return self.cm_listeners(devs) > base
        listening.why = 'the CM of %s listened on no new service' % ', '.join(devs)
        return listening

    def penv(self, shim, preload_first='', extra=None):
        """The programs' environment: liburoce preloaded (after the
        sanitizer runtime when an instrumented shim goes into an
        uninstrumented program, whose own leaks are not ours)."""
        e = dict(self.env)
        e['LD_PRELOAD'] = os.path.abspath(shim)
        if preload_first:
            e['LD_PRELOAD'] = preload_first + ':' + e['LD_PRELOAD']
            e['ASAN_OPTIONS'] = 'detect_leaks=0:' + e.get('ASAN_OPTIONS', '')
        e.update(extra or {})
        return e

    def tail(self, n=3000):
        self.log.flush()
        try:
            with open(self.logpath, errors='replace') as f:
                return f.read()[-n:]
        except OSError:
            return self.text[-n:]

    def stop_all(self):
        """Stop every daemon still running (SIGTERM, then SIGKILL); their
        statuses are kept for the verdict."""
        for p in self.procs:
            if p not in [q for q, _ in self.statuses]:
                self.statuses.append((p, stop(p)))
        return [st for _, st in self.statuses]

    def stop_one(self, p):
        st = stop(p)
        self.statuses.append((p, st))
        return st

    def close(self, show=3000):
        if self.closed:
            return self.faults
        self.closed = True
        sts = self.stop_all()
        self.log.seek(0)
        self.text = self.log.read()
        self.log.close()
        self.faults = daemon_faults(sts, self.text)
        if show and self.text:
            sys.stdout.write('--- uroced ---\n' + self.text[-show:])
        return self.faults

    def remove(self):
        """The run directory goes (after close(): a capture in it may be
        read between the two)."""
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def main(fn, *args):
    """Run a test function: SIGTERM (meson's timeout) becomes a clean
    exit through every finally; every Rig's daemons are stopped and
    judged; a daemon fault fails a test that passed or skipped; a
    RigError (the daemon did not come up) fails it."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(FAIL))
    try:
        rc = fn(*args)
    except Missing as e:
        rc = skip(str(e))
    except RigError as e:
        rc = fail(str(e))
    except subprocess.TimeoutExpired as e:
        rc = fail('timed out: %s' % e)
    finally:
        for r in rigs:
            r.remove()
    if rc == PASS and partials:
        rc = skip('parts not run: ' + '; '.join(partials))
    why = [w for r in rigs for w in r.faults]
    if why and rc in (PASS, SKIP):
        for w in why:
            print('FAIL:', w)
        rc = FAIL
    if retries:
        print_retries()
    if rc is None:
        rc = FAIL
    print({PASS: 'PASS', SKIP: 'SKIP'}.get(rc, 'FAIL (%s)' % rc), flush=True)
    return rc


def _cli(argv):
    """For shell harnesses (tests/interop/*.sh), the same verdicts:
      harness.py daemon-verdict STATUS LOGFILE   exit 1 and the reasons
                                                 when uroced faulted"""
    if len(argv) == 3 and argv[0] == 'daemon-verdict':
        with open(argv[2], errors='replace') as f:
            why = daemon_faults([int(argv[1])], f.read())
        for w in why:
            print('FAIL:', w)
        return FAIL if why else PASS
    print(_cli.__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(_cli(sys.argv[1:]))
