#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""librdmacm programs between two uroce devices over the wire.

One uroced with two devices wired back to back (link:), 10.0.0.1 and
10.0.0.2; the server runs on uroce1, the client on uroce0 (the shim's
UROCE_CM_DEVICE), so the connection can only be made with IB CM MADs on
QP1 through the daemon's CM engine (emu/cm/ibcm.c, emu/cm/ucma.c), and the
data then crosses the link. rping-self runs both on uroce0, connecting to
its own address: everything takes the port's self loop. Every byte is verified where the program can
(rping -V). The daemon, its run directory and the programs are cleaned up
with bounded timeouts.

usage: ucma_wire_progs.py UROCED LIBUROCE PROGRAM
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TIMEOUT = 60


def run(cmd, env, timeout=TIMEOUT):
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        return -1, out.decode(errors='replace')
    return p.returncode, out.decode(errors='replace')


def stop(p, grace=10):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.returncode


def main():
    # meson's timeout sends SIGTERM: clean up (daemon, programs, run dir)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    uroced, shim, prog = sys.argv[1:]
    if not shutil.which(prog.split('-')[0]):
        print('%s not installed' % prog)
        return 77
    tmp = tempfile.mkdtemp(prefix='uroce-wire-')
    run_dir = os.path.join(tmp, 'run')
    base = dict(os.environ, UROCE_RUN_DIR=run_dir)
    dlog = open(os.path.join(tmp, 'uroced.log'), 'w+')
    d = subprocess.Popen([uroced, '--dev', 'uroce0,port=link:wire,ip=10.0.0.1',
                          '--dev', 'uroce1,port=link:wire,ip=10.0.0.2'], env=base,
                         stdout=dlog, stderr=subprocess.STDOUT)
    srv = None
    rc = 1
    try:
        end = time.time() + 30
        socks = [os.path.join(run_dir, n + '.sock') for n in ('uroce0', 'uroce1')]
        while not all(os.path.exists(s) for s in socks):
            if time.time() > end or d.poll() is not None:
                print('FAIL: daemon did not start')
                return 1
            time.sleep(0.05)
        env0 = dict(base, LD_PRELOAD=shim, UROCE_CM_DEVICE='uroce0')
        env1 = dict(base, LD_PRELOAD=shim, UROCE_CM_DEVICE='uroce1')
        senv = env1
        if prog == 'rping-wild':
            # a wildcard listener whose file is on uroce1 (the shim's
            # primary device) hears a request that arrives on uroce0: the
            # client, also on uroce1, connects to uroce0's address
            scmd = ['rping', '-s', '-a', '0.0.0.0', '-p', '7000', '-C', '20', '-S', '4096', '-V', '-v']
            ccmd = ['rping', '-c', '-a', '10.0.0.1', '-p', '7000', '-C', '20', '-S', '4096', '-V', '-v']
            env0 = env1
        elif prog == 'rdma_server-wild':
            # the same through librdmacm's synchronous calls: the request
            # that came on uroce0 migrates to the server's own channel
            scmd = ['rdma_server', '-p', '7000']
            ccmd = ['rdma_client', '-s', '10.0.0.1', '-p', '7000']
            env0 = env1
        elif prog == 'rping-self':
            # both on uroce0, to its own address: on a port that does not
            # bring frames back, the CM MADs and the QPs' frames to the
            # device's own MAC take the port's self loop (docs/cm.md)
            scmd = ['rping', '-s', '-a', '10.0.0.1', '-p', '7000', '-C', '20', '-S', '4096', '-V', '-v']
            ccmd = ['rping', '-c', '-a', '10.0.0.1', '-p', '7000', '-C', '20', '-S', '4096', '-V', '-v']
            senv = env0
        elif prog == 'rping':
            scmd = ['rping', '-s', '-a', '10.0.0.2', '-p', '7000', '-C', '20', '-S', '4096', '-V', '-v']
            ccmd = ['rping', '-c', '-a', '10.0.0.2', '-p', '7000', '-C', '20', '-S', '4096', '-V', '-v']
        elif prog == 'ucmatose':
            scmd = ['ucmatose', '-b', '10.0.0.2', '-p', '7000', '-c', '2', '-C', '10']
            ccmd = ['ucmatose', '-s', '10.0.0.2', '-p', '7000', '-c', '2', '-C', '10']
        elif prog == 'udaddy':
            # rdma-core 44's udaddy has no port option (-p is its port space)
            scmd = ['udaddy', '-b', '10.0.0.2', '-c', '2', '-C', '10']
            ccmd = ['udaddy', '-s', '10.0.0.2', '-c', '2', '-C', '10']
        else:
            print('unknown program %s' % prog)
            return 2
        print('+ ' + ' '.join(scmd) + '   (uroce1)')
        # the server's output goes to a file: rping -v writes more than a
        # pipe holds before anyone would read it
        slog = open(os.path.join(tmp, 'server.log'), 'w+')
        srv = subprocess.Popen(scmd, env=senv, stdout=slog, stderr=subprocess.STDOUT)
        # the server listens soon after it starts; a client that comes too
        # early is rejected (nobody listens yet) and tries again
        cout = ''
        crc = -1
        for attempt in range(10):
            time.sleep(0.5)
            print('+ ' + ' '.join(ccmd) + '   (uroce0)')
            crc, cout = run(ccmd, env0)
            if crc == 0 or srv.poll() is not None:
                break
        try:
            srv.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
        src = srv.returncode
        slog.seek(0)
        sout = slog.read()
        slog.close()
        print('--- client (rc %d) ---\n%s--- server (rc %d) ---\n%s' % (crc, cout[-3000:], src,
                                                                      sout[-3000:]))
        if crc != 0 or src != 0:
            print('FAIL: %s' % prog)
            return 1
        if prog == 'rdma_server-wild' and ('end 0' not in cout or 'end 0' not in sout):
            print('FAIL: rdma_server/rdma_client did not end 0')
            return 1
        if prog.startswith('rping') and sout.count('ping data') < 20:
            print('FAIL: rping server saw %d pings' % sout.count('ping data'))
            return 1
        rc = 0
    finally:
        if srv and srv.poll() is None:
            srv.kill()
            srv.wait()
        drc = stop(d)
        dlog.seek(0)
        dout = dlog.read()
        dlog.close()
        print('--- uroced (rc %s) ---\n%s' % (drc, dout[-3000:]))
        if drc != 0:
            print('FAIL: daemon exit %s' % drc)
            rc = 1
        shutil.rmtree(tmp, ignore_errors=True)
    if rc == 0:
        print('ok')
    return rc


if __name__ == '__main__':
    sys.exit(main())
