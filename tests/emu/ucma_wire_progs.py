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
with bounded timeouts (tests/lib/harness.py); a client starts once the
daemon's CM listens for its server (uroce-ctl counters: cm.listeners) and
is retried only when its server was not listening yet (cm.NOT_LISTENING),
server and client together when ucmatose's connections were split across
the listen (cm.UCMATOSE_SPLIT), and the daemon's end is judged.

usage: ucma_wire_progs.py UROCED LIBUROCE PROGRAM
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'cm'))
import harness as h  # noqa: E402  (tests/lib/harness.py)
import cm  # noqa: E402  (tests/cm/cm.py: pair with the CM programs' race)

TIMEOUT = 60


def run_test():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    uroced, shim, prog = sys.argv[1:]
    if not h.need(prog.split('-')[0]):
        return h.skip('%s not installed' % prog)
    rig = h.Rig(uroced, 'uroce-wire-')
    rig.start(['--dev', 'uroce0,port=link:wire,ip=10.0.0.1',
               '--dev', 'uroce1,port=link:wire,ip=10.0.0.2'], devs=['uroce0', 'uroce1'])
    env0 = rig.penv(shim, extra={'UROCE_CM_DEVICE': 'uroce0'})
    env1 = rig.penv(shim, extra={'UROCE_CM_DEVICE': 'uroce1'})
    senv = env1
    rp = ['-p', '7000', '-C', '20', '-S', '4096', '-V', '-v']
    if prog == 'rping-wild':
        # a wildcard listener whose file is on uroce1 (the shim's primary
        # device) hears a request that arrives on uroce0: the client, also
        # on uroce1, connects to uroce0's address
        scmd = ['rping', '-s', '-a', '0.0.0.0'] + rp
        ccmd = ['rping', '-c', '-a', '10.0.0.1'] + rp
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
        scmd = ['rping', '-s', '-a', '10.0.0.1'] + rp
        ccmd = ['rping', '-c', '-a', '10.0.0.1'] + rp
        senv = env0
    elif prog == 'rping':
        scmd = ['rping', '-s', '-a', '10.0.0.2'] + rp
        ccmd = ['rping', '-c', '-a', '10.0.0.2'] + rp
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
    # the port is the private daemon's CM port space: no clash with others
    def both():
        # the client starts once the daemon's CM listens on the server's
        # service (none of these servers says when it listens)
        return h.pair(scmd, ccmd, senv, races=(cm.NOT_LISTENING,), timeout=TIMEOUT,
                      cli_env=env0, ready=rig.cm_listening(('uroce0', 'uroce1')))
    # ucmatose -c 2 whose first REQ came before the listen and the second
    # after: the client gives up on REJ 8 and the server then cannot take
    # the connection it heard (EINVAL, as with the kernel): both come again
    # (cm.UCMATOSE_SPLIT; CI saw it once under load, before the wait for
    # the listen above)
    splits = (cm.UCMATOSE_SPLIT,) if prog == 'ucmatose' else ()
    ok, cout, sout = h.retry(both, splits, limit=2, what='%s server and client' % prog)
    if not ok:
        return h.fail(prog)
    if prog == 'rdma_server-wild' and ('end 0' not in cout or 'end 0' not in sout):
        return h.fail('rdma_server/rdma_client did not end 0')
    if prog.startswith('rping') and sout.count('ping data') < 20:
        return h.fail('rping server saw %d pings' % sout.count('ping data'))
    return 0


if __name__ == '__main__':
    sys.exit(h.main(run_test))
