#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/nic: uroce on an emulated NIC driven by its DPDK poll-mode driver.

    nic.py DEVICE BUILD_ROOT [--bench] [--probe] [--selftest-stall]

DEVICE is virtio (virtio-net-pci with 2 queue pairs, vfio-pci behind qemu's
emulated intel-iommu), e1000e (net_e1000_em, uio_pci_generic), vmxnet3
(net_vmxnet3, vfio-pci) - one NIC VM with that device, the whole case
matrix (suite nic-full) - or all: one NIC VM with the three, each driven
in turn with a short set (suite nic, guest-cases.sh nic_ci). One boot of
each VM per run:

  netns nic-DEV-PID, bridge br0 (MTU 9000; the kernel's 10.78.0.3, fd78::3)
   |- tap dutI  - NIC VM: the NICs under test (virtio 00:10.0, e1000e 00:13.0,
   |              vmxnet3 00:14.0), each bound to vfio-pci or uio_pci_generic
   |              in turn, uroced --port 0000:00:SS.0 on 10.78.0.N fd78::N
   |              (N 1, 5, 6; tests/nic/guest.sh drives the run)
   |- tap kern0 - NIC VM: virtio-net for its kernel, 10.78.0.10 fd78::10
   |              (the programs' TCP side channel)
   |- tap rxe0  - rxe VM (tests/interop's image): rxe0 on 10.78.0.2 fd78::2
   '- veth h0/h1 - uroced --port net_af_packet0,iface=h1 10.78.0.4 fd78::4

The NIC VM boots Debian's kernel (the rxe rig's) with a tiny initramfs
(build-guest.sh) and the host's /usr over 9p read-only: the DPDK libraries,
PMDs, perftest and rdmacm-utils of this machine, and uroced / liburoce.so
of the build under test, shared read-only. The guest asks this script for
what only the host can do (files in OUT/req): restart the af_packet peer,
run the host side of a phase's cases, flap the NIC's link (QMP set_link),
capture on the NIC's bridge port and check the capture, send crafted
frames, run programs in the background. Verdict: every guest check ok,
the guest's uroced and ours judged by exit status and log. A guest that
makes no progress for STALL_S (240 s) fails the run at once, with the step
it was in and its dump of where its processes are (docs/interop.md).

Exit 0 pass, 1 fail (also when an image cannot be built), 77 skip (not
root, no qemu, no tun, a program not installed). Everything started here is stopped, also on failure or a signal.
"""
import fcntl
import glob
import hashlib
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

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.realpath(os.path.join(HERE, '..', '..'))
PASS, FAIL, SKIP = 0, 1, 77
# the guest's progress watchdog: a run ends when nothing the guest writes
# changed for this long (generous for TCG on a loaded host: a verdict on
# progress, not speed; a case's programs end within CASE_TIMEOUT 60 s and
# every wait loop of the guest beats), then waits this long for its dump
STALL_S = int(os.environ.get('UROCE_NIC_STALL_S', '240'))
STALL_DUMP_S = 180

# qemu device per DEVICE: how the guest binds it, its PCI slot (also the
# last byte of its MAC) and its host number on the bridge (10.78.0.N,
# fd78::N: each NIC its own addresses, so no peer's neighbour cache holds
# another NIC's MAC when one VM drives the three in turn)
DEVICES = {
    'virtio': {'bind': 'vfio-pci', 'queues': 2, 'cases': 'full', 'slot': 0x10, 'host': 1,
               'qdev': 'virtio-net-pci,mq=on,vectors=6,disable-legacy=on,'
                       'iommu_platform=on,ats=on'},
    'e1000e': {'bind': 'uio_pci_generic', 'queues': 1, 'qdev': 'e1000e', 'cases': 'short',
               'slot': 0x13, 'host': 5,
               # a NIC no DPDK PMD drives: uroced's refusal of it
               'extra': ['-device', 'rtl8139,addr=0x12,mac=52:54:00:4e:00:12']},
    'vmxnet3': {'bind': 'vfio-pci', 'queues': 1, 'qdev': 'vmxnet3', 'cases': 'short',
                'slot': 0x14, 'host': 6},
}
# 'all' (suite nic, what CI runs): one VM with the three NICs, booted once,
# a short representative set on each (guest-cases.sh nic_ci), the e1000e
# last (its VLAN phase restarts the host's peer with --vlan)
ALL = ('virtio', 'vmxnet3', 'e1000e')


def dut_mac(dev):
    return '52:54:00:4e:00:%02x' % DEVICES[dev]['slot']


HOST_MAC = '02:00:00:4e:00:04'
FAULT_MARKS = ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:',
               'SUMMARY: UndefinedBehaviorSanitizer', 'AddressSanitizer:DEADLYSIGNAL',
               "Assertion `", 'assertion failed')
VM_DEAD = re.compile(r'Kernel panic|Failed to execute /init|No working init found|'
                     r'Attempted to kill init|NICVM: exit rc=|RXEVM: exit rc=')


def say(*a):
    print('[nic]', *a, flush=True)


def skip(why):
    say('SKIP:', why)
    return SKIP


class Rig:
    def __init__(self, dev, build, out, bench):
        self.dev, self.build, self.out, self.bench = dev, build, out, bench
        self.devs = ALL if dev == 'all' else (dev,)
        self.conf = DEVICES[self.devs[0]]
        self.cases_set = 'ci' if dev == 'all' else self.conf['cases']
        self.ns = 'nic-%s-%d' % (dev, os.getpid())
        self.share = os.path.join(out, 'share')
        self.procs = {}          # name -> Popen (killed at the end)
        self.bg = {}             # the guest's background programs on the host
        self.h = None            # our af_packet uroced
        self.h_run = None
        self.h_status = []
        self.h_log = os.path.join(out, 'host-uroced.log')
        self.cap = None
        self.stall = None        # the guest's step when the watchdog fired
        self.lock = threading.Lock()

    # ---------------------------------------------------------------- host
    def nsx(self, *cmd):
        return ['ip', 'netns', 'exec', self.ns] + list(cmd)

    def sh(self, *cmd, check=True):
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if check and r.returncode:
            raise RuntimeError('%s: %s' % (' '.join(cmd), r.stdout.strip()))
        return r

    def topology(self):
        self.sh('ip', 'netns', 'add', self.ns)
        ip = lambda *a: self.sh('ip', '-n', self.ns, *a)
        ip('link', 'set', 'lo', 'up')
        ip('link', 'add', 'br0', 'type', 'bridge')
        # forward at once: no STP, no multicast snooping (ND and IGMP pass)
        ip('link', 'set', 'br0', 'type', 'bridge', 'forward_delay', '0', 'stp_state', '0',
           'mcast_snooping', '0')
        ip('link', 'set', 'br0', 'mtu', '9000', 'up')
        taps = [('dut%d' % i, ['multi_queue'] if DEVICES[d]['queues'] > 1 else [])
                for i, d in enumerate(self.devs)]
        for t, mq in taps + [('kern0', [])]:
            ip('tuntap', 'add', 'dev', t, 'mode', 'tap', *mq)
            ip('link', 'set', t, 'mtu', '9000', 'master', 'br0', 'up')
        ip('link', 'add', 'h0', 'type', 'veth', 'peer', 'name', 'h1')
        for v in ('h0', 'h1'):
            ip('link', 'set', v, 'mtu', '9000', 'up')
        ip('link', 'set', 'h0', 'master', 'br0')
        # h1 is uroced's alone: the kernel keeps no address and no IPv6 on it
        self.sh(*self.nsx('sysctl', '-qw', 'net.ipv6.conf.h1.disable_ipv6=1'))
        ip('addr', 'add', '10.78.0.3/24', 'dev', 'br0')
        ip('addr', 'add', 'fd78::3/64', 'dev', 'br0', 'nodad')

    def host_uroced(self, args):
        """(Re)start our af_packet peer with ARGS; '' on success, else why."""
        self.host_uroced_stop()
        self.h_run = tempfile.mkdtemp(prefix='nic-h-', dir=self.out)
        cmd = [os.path.join(self.build, 'emu', 'uroced'), '--run-dir', self.h_run,
               '--port', 'net_af_packet0,iface=h1', '--ip', '10.78.0.4', '--ip', 'fd78::4',
               '--mac', HOST_MAC] + args
        with open(self.h_log, 'a') as log:
            log.write('+ %s\n' % ' '.join(cmd))
            log.flush()
            self.h = subprocess.Popen(self.nsx(*cmd), stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        sock = os.path.join(self.h_run, 'uroce0.sock')
        end = time.monotonic() + 120
        while not os.path.exists(sock) and self.h.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        return '' if os.path.exists(sock) else 'uroced did not start (%s)' % self.h.poll()

    def host_uroced_stop(self):
        if not self.h:
            return
        if self.h.poll() is None:
            self.h.send_signal(signal.SIGTERM)
            try:
                self.h.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.h.pid, signal.SIGKILL)
                self.h.wait()
        self.h_status.append(self.h.returncode)
        with open(self.h_log, 'a') as log:
            log.write('uroced exit status %d\n' % self.h.returncode)
        self.h = None

    def h_env(self):
        env = dict(os.environ)
        env.update(UROCE_RUN_DIR=self.h_run,
                   LD_PRELOAD=os.path.join(self.build, 'verbs', 'liburoce.so'))
        return env

    # ---------------------------------------------------------------- images
    def images(self):
        """The rxe image (tests/interop's, shared cache) and our initramfs,
        each built once under a lock and cached by content."""
        rxevm = os.environ.get('UROCE_RXEVM_DIR',
                               os.path.join(self.build, 'tests', 'interop', 'rxevm'))
        os.makedirs(rxevm, exist_ok=True)
        with open(os.path.join(rxevm, '.lock'), 'w') as lk:
            # the same cache as tests/interop/interop.sh (same lock, same
            # content key, verified on each use): whichever test comes
            # first builds it
            fcntl.flock(lk, fcntl.LOCK_EX)
            idir = os.path.join(SRC, 'tests', 'interop')
            bvm = os.path.join(idir, 'build-vm.sh')
            h = hashlib.sha256()
            for f in ['build-vm.sh', 'guest-init.sh'] + sorted(
                    os.path.relpath(x, idir) for x in glob.glob(os.path.join(idir, 'src', '*.c'))):
                h.update(open(os.path.join(idir, f), 'rb').read())
            ikey = h.hexdigest()
            kfile = os.path.join(rxevm, 'image.key')
            have = open(kfile).read().strip() if os.path.exists(kfile) else ''
            ok = (have == ikey and all(os.path.exists(os.path.join(rxevm, f))
                                       for f in ('initrd.img', 'vmlinuz', 'kver')) and
                  subprocess.run([bvm, '--verify', os.path.join(rxevm, 'rootfs')],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0)
            if not ok:
                say('building the rxe VM image in', rxevm, '(Debian packages; cached by content)')
                if os.path.exists(kfile):
                    os.unlink(kfile)
                with open(os.path.join(rxevm, 'build.log'), 'w') as log:
                    r = subprocess.run(['nice', bvm], env=dict(os.environ, OUT=rxevm),
                                       stdout=log, stderr=subprocess.STDOUT)
                if r.returncode:
                    return None, 'the rxe VM image cannot be built (%s/build.log)' % rxevm
                open(kfile, 'w').write(ikey + '\n')
        self.rxevm = rxevm
        gdir = os.path.join(self.build, 'tests', 'nic', 'guest')
        os.makedirs(gdir, exist_ok=True)
        key = hashlib.sha256()
        for f in ('build-guest.sh', 'guest-init.sh'):
            key.update(open(os.path.join(HERE, f), 'rb').read())
        key.update(open(os.path.join(rxevm, 'kver'), 'rb').read())
        key = key.hexdigest()
        with open(os.path.join(gdir, '.lock'), 'w') as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            kf = os.path.join(gdir, 'key')
            if not (os.path.exists(os.path.join(gdir, 'nic-initrd.img')) and
                    os.path.exists(kf) and open(kf).read() == key):
                say('building the NIC VM initramfs in', gdir)
                r = subprocess.run([os.path.join(HERE, 'build-guest.sh'), rxevm, gdir],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                sys.stdout.write(r.stdout)
                if r.returncode:
                    return None, 'the NIC VM initramfs cannot be built'
                open(kf, 'w').write(key)
        self.initrd = os.path.join(gdir, 'nic-initrd.img')
        return True, ''

    # ---------------------------------------------------------------- VMs
    def boot_rxe(self, timeout):
        shutil.copy(os.path.join(SRC, 'tests', 'interop', 'runcases.sh'), self.share)
        shutil.copy(os.path.join(HERE, 'peer.sh'), self.share)
        with open(os.path.join(self.share, 'cmd.sh'), 'w') as f:
            f.write('sh /mnt/host/peer.sh\n')
        cmd = ['setsid', os.path.join(SRC, 'tests', 'interop', 'run-peer.sh'),
               '--netns', self.ns, '--tap', 'rxe0', '--bridge', 'br0', '--ip', '10.78.0.2/24',
               '--ip6', 'fd78::2/64', '--mtu', '9000', '--share', self.share,
               '--timeout', str(timeout), '--log', os.path.join(self.out, 'rxe-console.log')]
        self.procs['rxe'] = subprocess.Popen(
            cmd, env=dict(os.environ, OUT=self.rxevm), stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.out, 'run-peer.log'), 'w'))

    def boot_nic(self, timeout):
        kver = open(os.path.join(self.rxevm, 'kver')).read().strip()
        shares = [('usr', '/usr', 'ro'), ('src', SRC, 'ro'), ('build', self.build, 'ro'),
                  ('out', self.share, 'rw')]
        # each NIC: name:driver:slot:host number:qmp id:tap
        nics = ','.join('%s:%s:%02x:%d:dut%dnic:dut%d' % (
            d, DEVICES[d]['bind'], DEVICES[d]['slot'], DEVICES[d]['host'], i, i)
            for i, d in enumerate(self.devs))
        append = ('console=ttyS0 loglevel=4 panic=-1 intel_iommu=on iommu=pt hugepages=256 '
                  'nicvm_share=%s nicvm_run=%s nicvm_nics=%s nicvm_src=%s '
                  'nicvm_build=%s nicvm_out=%s nicvm_mode=%s nicvm_cases=%s' % (
                      ','.join('%s:%s%s' % (t, p, ':rw' if m == 'rw' else '') for t, p, m in shares),
                      os.path.join(HERE, 'guest.sh'), nics, SRC,
                      self.build, self.share, 'probe' if self.probe else 'bench' if self.bench else
                      'stall' if self.selftest else 'test',
                      self.cases_set))
        q = ['qemu-system-x86_64', '-machine', 'q35', '-accel', 'tcg', '-cpu', 'max',
             '-m', '1536', '-smp', '2', '-nodefaults', '-no-reboot', '-display', 'none',
             '-bios', '/usr/share/qemu/qboot.rom',
             # an IOMMU for vfio-pci (Debian's kernel has no VFIO no-IOMMU mode);
             # interrupt remapping off: TCG's IO-APIC timer does not go through it
             '-device', 'intel-iommu,intremap=off',
             '-kernel', os.path.join(self.rxevm, 'vmlinuz'), '-initrd', self.initrd,
             '-append', append, '-serial', 'file:' + os.path.join(self.out, 'nic-console.log'),
             '-qmp', 'unix:%s,server=on,wait=off' % os.path.join(self.out, 'qmp.sock')]
        for i, (tag, path, mode) in enumerate(shares):
            q += ['-fsdev', 'local,id=fs%d,path=%s,security_model=none%s' % (
                      i, path, ',readonly=on' if mode == 'ro' else ''),
                  '-device', 'virtio-9p-pci,fsdev=fs%d,mount_tag=%s' % (i, tag)]
        for i, d in enumerate(self.devs):
            nq = DEVICES[d]['queues']
            q += ['-netdev', 'tap,id=dut%d,ifname=dut%d,script=no,downscript=no,vhost=off%s' % (
                      i, i, ',queues=%d' % nq if nq > 1 else ''),
                  '-device', '%s,netdev=dut%d,id=dut%dnic,addr=0x%02x,mac=%s' % (
                      DEVICES[d]['qdev'], i, i, DEVICES[d]['slot'], dut_mac(d))]
        q += ['-netdev', 'tap,id=kn,ifname=kern0,script=no,downscript=no',
              '-device', 'virtio-net-pci,netdev=kn,addr=0x11,mac=52:54:00:4e:00:11']
        q += DEVICES['e1000e']['extra'] if 'e1000e' in self.devs else []
        with open(os.path.join(self.out, 'qemu.cmd'), 'w') as f:
            f.write(' '.join(q) + '\n')
        # qemu bounded by timeout in the session started here (--foreground:
        # timeout makes no process group of its own), which cleanup kills
        self.procs['nic'] = subprocess.Popen(
            self.nsx('timeout', '--foreground', str(timeout), *q), stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.out, 'qemu.log'), 'w'), start_new_session=True)
        self.kver = kver

    def qmp(self, cmd, args):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(os.path.join(self.out, 'qmp.sock'))
        f = s.makefile('rw')
        f.readline()
        for c in ({'execute': 'qmp_capabilities'}, {'execute': cmd, 'arguments': args}):
            f.write(json.dumps(c) + '\n')
            f.flush()
            while True:
                r = json.loads(f.readline())
                if 'return' in r or 'error' in r:
                    break
        s.close()
        return r

    # ---------------------------------------------------------------- requests
    def cases(self, fname, port0, a4='10.78.0.1', a6='fd78::1'):
        name = re.sub(r'^cases-|\.txt$', '', fname)
        # a peer that cannot answer fails the phase at once, with why
        if not self.h or self.h.poll() is not None:
            tail(self.h_log, 10)
            return 1, 'the host uroced is not running (exit status %s)' % (
                self.h.returncode if self.h else None)
        env = self.h_env()
        env.update(DEV='uroce0', GID='1', PEER='10.78.0.10', PORT0=port0, CASE_TIMEOUT='60',
                   CONNECT_TRIES='300', SYNC=os.path.join(self.share, 'sync'),
                   CM_FIRST_PAUSE='3', CM_PAUSE='5',
                   ADDR4_dut=a4, ADDR6_dut=a6, ADDR4_host='10.78.0.4',
                   ADDR6_host='fd78::4', WRAP='env UROCE_RUN_DIR=%s LD_PRELOAD=%s' % (
                       self.h_run, env['LD_PRELOAD']))
        del env['LD_PRELOAD']   # the programs' own (WRAP), not runcases.sh's shell
        with open(os.path.join(self.share, 'res', name + '.host.out'), 'w') as o:
            r = subprocess.run(self.nsx('sh', os.path.join(self.share, 'runcases.sh'), 'host',
                                        os.path.join(self.share, fname),
                                        os.path.join(self.share, 'res', name)),
                               env=env, stdout=o, stderr=subprocess.STDOUT)
        return r.returncode, ''

    def capture(self, what, args):
        """capture start TAP | stop | check VID PCP MAC"""
        pcap = os.path.join(self.out, 'capture.pcap')
        if what == 'start':
            self.cap = subprocess.Popen(self.nsx('dumpcap', '-q', '-i', args[0], '-w', pcap),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
            # dumpcap writes its header once it captures
            end = time.monotonic() + 30
            while (not os.path.exists(pcap) or os.path.getsize(pcap) < 24) and \
                    self.cap.poll() is None and time.monotonic() < end:
                time.sleep(0.05)
            return (0 if self.cap.poll() is None else 1), ''
        if what == 'stop':
            if self.cap and self.cap.poll() is None:
                self.cap.send_signal(signal.SIGINT)
                self.cap.wait(30)
            return 0, ''
        return check_capture(pcap, int(args[0]), int(args[1]), args[2])

    def badframe(self, mac, ip):
        """Two frames for the NIC under test from the bridge: a RoCE frame on
        its VLAN with a wrong IPv4 header checksum (the device's RX checksum
        offload flags it, the parser drops it) and an untagged one (not on
        its VLAN: dropped, counted drop.vlan)."""
        code = r'''
import sys
from scapy.all import Ether, Dot1Q, IP, UDP, Raw, sendp
bth = bytes([0x04, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 1]) + bytes(4)
roce = UDP(sport=0xc000, dport=4791, chksum=0) / Raw(bth + bytes(4))
ip = IP(src='10.78.0.4', dst=sys.argv[3], ttl=64, flags='DF', chksum=0x1234)
sendp(Ether(dst=sys.argv[1], src=sys.argv[2]) / Dot1Q(vlan=100, prio=3) / ip / roce,
      iface='br0', verbose=False)
sendp(Ether(dst=sys.argv[1], src=sys.argv[2]) / IP(src='10.78.0.4', dst=sys.argv[3]) / roce,
      iface='br0', verbose=False)
'''
        r = self.sh(*self.nsx(sys.executable, '-c', code, mac, HOST_MAC, ip), check=False)
        return r.returncode, r.stdout

    def bgrun(self, name, cmd):
        log = open(os.path.join(self.share, 'res', 'bg-%s.log' % name), 'w')
        self.bg[name] = subprocess.Popen(self.nsx(*cmd), env=self.h_env(), stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        return 0, ''

    def bgend(self, name, kill):
        p = self.bg.pop(name, None)
        if not p:
            return 2, 'no such program'
        if kill and p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        try:
            p.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        return (0 if kill else p.returncode), ''

    def serve(self, words):
        c, a = words[0], words[1:]
        if c == 'uroced':
            why = self.host_uroced(['--mtu', '9000'] if not a else a)
            return (1 if why else 0), why
        if c == 'cases':
            return self.cases(*a)
        if c == 'link':     # link on|off QMP-ID
            r = self.qmp('set_link', {'name': a[1], 'up': a[0] == 'on'})
            return (0 if 'return' in r else 1), json.dumps(r)
        if c == 'capture':
            return self.capture(a[0], a[1:])
        if c == 'badframe':
            return self.badframe(a[0], a[1])
        if c == 'bg':
            return self.bgrun(a[0], a[1:])
        if c == 'bgwait':
            return self.bgend(a[0], False)
        if c == 'bgkill':
            return self.bgend(a[0], True)
        return 2, 'unknown request %s' % c

    def answer(self, req):
        words = open(req).read().split()
        say('guest asks:', ' '.join(words))
        try:
            rc, text = self.serve(words)
        except Exception as e:          # one request failing must not end the rig
            rc, text = 1, 'host: %r' % e
        base = req[:-4]
        with open(base + '.done.tmp', 'w') as f:
            f.write('%d\n%s\n' % (rc, text))
        os.rename(base + '.done.tmp', base + '.done')
        os.unlink(req)

    def guest_mark(self):
        """What changes whenever the guest does something: its console and
        the files it writes in the share (results, its side's case logs, its
        requests, step and beat), not those the host or the rxe VM write."""
        sig = []
        con = os.path.join(self.out, 'nic-console.log')
        if os.path.exists(con):
            sig.append(('console', os.path.getsize(con)))
        for root, dirs, files in os.walk(self.share):
            dirs[:] = [d for d in dirs if d != 'sync']
            for f in files:
                if (f.endswith(('.done', '.done.tmp', '.host.out')) or '.host.' in f or
                        '.rxe.' in f or f.startswith('bg-') or f == 'output.log'):
                    continue
                try:
                    st = os.stat(os.path.join(root, f))
                except OSError:
                    continue
                sig.append((root, f, st.st_size, st.st_mtime_ns))
        return hash(tuple(sorted(sig)))

    def stalled(self, quiet):
        """The guest made no progress for `quiet` s: the verdict says where
        (its step, what it waits for), with the guest's own dump of where
        its processes are if it can still give one."""
        step = os.path.join(self.share, 'step')
        step = open(step).read().strip() if os.path.exists(step) else 'boot'
        pend = [open(r).read().strip() for r in glob.glob(os.path.join(self.share, '*', '*.req'))
                if os.path.exists(r)]
        say('FAIL: the guest made no progress for %d s in step "%s"%s' % (
            quiet, step, '; it waits for: ' + '; '.join(pend) if pend else ''))
        say('the console\'s last lines:')
        tail(os.path.join(self.out, 'nic-console.log'), 15)
        try:
            r = self.qmp('human-monitor-command', {'command-line': 'info cpus'})
            say('qemu: info cpus:', r.get('return', r))
        except (OSError, ValueError) as e:
            say('qemu: no answer to QMP: %r' % e)
        # the guest's watcher (guest.sh stall_watch) dumps every process
        # and uroced's stacks; bounded: a guest that cannot even do that
        # is itself the finding
        dump = os.path.join(self.share, 'stall-dump.txt')
        open(os.path.join(self.share, 'dump.req'), 'w').close()
        end = time.monotonic() + STALL_DUMP_S
        while not os.path.exists(dump) and self.procs['nic'].poll() is None and \
                time.monotonic() < end:
            time.sleep(0.5)
        if os.path.exists(dump):
            say('the guest\'s dump (%s):' % dump)
            tail(dump, 200)
        else:
            say('the guest gave no dump within %d s: its kernel or its 9p share is stuck' %
                STALL_DUMP_S)
        self.stall = step

    def serve_loop(self):
        """Answer the guest until the NIC VM is gone; a request may take long
        (a phase's cases), so each runs on its own thread. Ends early, with
        self.stall set, when the guest makes no progress for STALL_S while
        none of its requests is being served here."""
        seen = set()
        threads = []
        rxe_gone = False
        mark, since = None, time.monotonic()
        next_look = 0
        while self.procs['nic'].poll() is None:
            now = time.monotonic()
            if now >= next_look:
                next_look = now + 2
                m = self.guest_mark()
                if m != mark or any(t.is_alive() for t in threads):
                    mark, since = m, now
                elif now - since > STALL_S:
                    self.stalled(int(now - since))
                    break
            for req in sorted(glob.glob(os.path.join(self.share, 'req', '*.req'))):
                if req not in seen:
                    seen.add(req)
                    t = threading.Thread(target=self.answer, args=(req,), daemon=True)
                    t.start()
                    threads.append(t)
            # the rxe VM cannot answer any more: its requests fail at once
            if not rxe_gone and self.procs['rxe'].poll() is not None:
                rxe_gone = True
                say('the rxe VM ended (rc %s); its console:' % self.procs['rxe'].returncode)
                tail(os.path.join(self.out, 'rxe-console.log'), 15)
            if rxe_gone:
                for req in glob.glob(os.path.join(self.share, 'rxe', '*.req')):
                    base = req[:-4]
                    with open(base + '.done.tmp', 'w') as f:
                        f.write('125\nthe rxe VM is gone\n')
                    os.rename(base + '.done.tmp', base + '.done')
                    os.unlink(req)
            time.sleep(0.05)
        for t in threads:
            t.join(5)

    def wait_up(self, limit):
        """True once the NIC VM's script runs; False as soon as it cannot any
        more (qemu gone, panic, init failed), after printing why."""
        con = os.path.join(self.out, 'nic-console.log')
        end = time.monotonic() + limit
        while time.monotonic() < end:
            text = open(con, errors='replace').read() if os.path.exists(con) else ''
            if 'NICVM: up' in text:
                return True
            if VM_DEAD.search(text) or self.procs['nic'].poll() is not None:
                break
            time.sleep(0.1)
        say('FAIL: the NIC VM did not come up; the console\'s last lines:')
        tail(con, 25)
        tail(os.path.join(self.out, 'qemu.log'), 5)
        return False

    def cleanup(self):
        for p in list(self.bg.values()) + list(self.procs.values()) + [self.cap]:
            if p and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    p.kill()
                p.wait()
        self.host_uroced_stop()
        r = self.sh('ip', 'netns', 'pids', self.ns, check=False)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        self.sh('ip', 'netns', 'del', self.ns, check=False)


def tail(path, n):
    try:
        lines = open(path, errors='replace').read().splitlines()[-n:]
    except OSError:
        return
    for ln in lines:
        print('    |', ln)


def check_capture(pcap, vid, pcp, dut):
    """The frames on the NIC's bridge port, as the peers receive them: every
    frame the NIC under test sent carries VLAN vid with priority pcp and a
    valid IPv4 header checksum, and RoCE went both ways."""
    from scapy.all import rdpcap, Ether, Dot1Q, IP, UDP
    sent = got = bad = 0
    why = []
    for p in rdpcap(pcap):
        if Ether not in p:
            continue
        mine = p[Ether].src.lower() == dut
        roce = UDP in p and p[UDP].dport == 4791
        if not mine and p[Ether].dst.lower() != dut:
            continue
        if not mine:
            got += roce and Dot1Q in p
            continue
        ok = Dot1Q in p and p[Dot1Q].vlan == vid and p[Dot1Q].prio == pcp
        if ok and IP in p:
            raw = bytes(p[IP])[:p[IP].ihl * 4]
            s = sum(int.from_bytes(raw[i:i + 2], 'big') for i in range(0, len(raw), 2))
            while s >> 16:
                s = (s & 0xffff) + (s >> 16)
            ok = s == 0xffff
        sent += roce
        if not ok:
            bad += 1
            if len(why) < 5:
                why.append(p.summary())
    text = 'frames from the NIC under test: %d RoCE sent, %d wrong (tag or IPv4 checksum); ' \
           '%d tagged RoCE frames to it' % (sent, bad, got)
    for w in why:
        text += '\n  wrong: ' + w
    return (0 if sent and got and not bad else 1), text


def verdict(rig):
    fails = 0
    res = os.path.join(rig.share, 'result.log')
    lines = open(res).read().splitlines() if os.path.exists(res) else []
    oks = [ln for ln in lines if ln.startswith('ok')]
    bads = [ln for ln in lines if ln.startswith('FAIL')]
    say('%d checks ok, %d failed in the guest' % (len(oks), len(bads)))
    for ln in bads:
        say(ln)
    con = open(os.path.join(rig.out, 'nic-console.log'), errors='replace').read()
    m = re.search(r'NICVM: exit rc=(\d+)', con)
    if not m or m.group(1) != '0':
        say('FAIL: the guest script ended with %s' % (m.group(0) if m else 'no exit line'))
        tail(os.path.join(rig.out, 'nic-console.log'), 20)
        fails += 1
    if not oks:
        fails += 1
    # the daemons' ends: the guest's (it logs each exit status) and ours
    glog = os.path.join(rig.share, 'dut-uroced.log')
    gtext = open(glog, errors='replace').read() if os.path.exists(glog) else ''
    why = ['guest uroced %s' % s for s in re.findall(r'uroced exit status (\d+)', gtext) if s != '0']
    why += ['guest uroced log: %r' % ln for ln in gtext.splitlines() if any(f in ln for f in FAULT_MARKS)]
    htext = open(rig.h_log, errors='replace').read() if os.path.exists(rig.h_log) else ''
    why += ['host uroced exit status %d' % s for s in rig.h_status if s != 0]
    why += ['host uroced log: %r' % ln for ln in htext.splitlines() if any(f in ln for f in FAULT_MARKS)]
    for w in why[:10]:
        say('FAIL:', w)
    return FAIL if bads or fails or why else PASS


def selftest_verdict(rig):
    """--selftest-stall: the guest's stop_uroced gave up on a daemon that
    did not stop (dumped, killed, status 125), and the watchdog caught the
    stall that followed, with the guest's dump."""
    glog = os.path.join(rig.share, 'dut-uroced.log')
    gtext = open(glog, errors='replace').read() if os.path.exists(glog) else ''
    dump = os.path.join(rig.share, 'stall-dump.txt')
    checks = [
        ('the guest gave up on a uroced that did not stop, with its stacks',
         'did not stop' in gtext and '== uroced' in gtext),
        ('the watchdog fired in the step the guest stalled in',
         rig.stall == '%s: selftest: stalled on purpose' % rig.devs[0]),
        ('the guest dumped its processes', os.path.exists(dump) and
         'selftest-sleep' in open(dump, errors='replace').read()),
    ]
    for what, ok in checks:
        say('%s %s' % ('ok  ' if ok else 'FAIL', what))
    return PASS if all(ok for _, ok in checks) else FAIL


def main(argv):
    if len(argv) < 2 or argv[0] not in list(DEVICES) + ['all']:
        print(__doc__)
        return 2
    dev, build = argv[0], os.path.realpath(argv[1])
    bench = '--bench' in argv
    probe = '--probe' in argv   # debugging: bind the NIC, start uroced once, log why
    for f in ('emu/uroced', 'verbs/liburoce.so', 'tools/ctl/uroce-ctl'):
        if not os.path.exists(os.path.join(build, f)):
            return skip('not built: %s' % f)
    if os.geteuid() != 0:
        return skip('needs root (network namespace, taps, qemu on them)')
    for t in ('qemu-system-x86_64', 'ibv_rc_pingpong', 'ib_write_bw', 'rping', 'ucmatose',
              'udaddy', 'dumpcap', 'ip'):
        if not shutil.which(t):
            return skip('%s is not installed (tools/bootstrap.sh installs it)' % t)
    if not os.path.exists('/dev/net/tun') or not os.path.exists('/usr/share/qemu/qboot.rom'):
        return skip('no /dev/net/tun or no qemu firmware')
    try:
        import scapy.all  # noqa: F401
    except ImportError:
        return skip('python3-scapy is not installed')
    out = os.path.join(build, 'tests', 'nic', 'out-%s%s' % (
        dev, '-bench' if bench else '-selftest' if '--selftest-stall' in argv else ''))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, 'share', 'res'))
    os.makedirs(os.path.join(out, 'share', 'req'))
    os.makedirs(os.path.join(out, 'share', 'rxe'))
    rig = Rig(dev, build, out, bench)
    rig.probe = probe
    # the watchdog's own test (suite nic-full, nic_watchdog): the guest
    # leaves a uroced that ignores SIGTERM (stopped), then stops making
    # progress; passes only when both were caught, each with its dump.
    # 150 s: more than the guest's dump of the stopped daemon takes (gdb
    # bounded at 120 s), during which it writes nothing
    rig.selftest = '--selftest-stall' in argv
    if rig.selftest:
        global STALL_S
        STALL_S = 150
    ok, why = rig.images()
    if not ok:
        # as tests/interop: an image that cannot be built fails, never skips
        say('FAIL:', why)
        return FAIL
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(FAIL))
    t0 = time.monotonic()
    try:
        rig.topology()
        # qemu's own bound (GNU timeout in its process group, killed with
        # it by cleanup): past meson's timeout for the test
        limit = 1800 if dev != 'all' else 880
        # every frame of the NICs under test, for whoever reads the logs
        for i in range(len(rig.devs)):
            rig.procs['dumpcap%d' % i] = subprocess.Popen(
                rig.nsx('dumpcap', '-q', '-i', 'dut%d' % i, '-s', '256', '-w',
                        os.path.join(out, 'all-dut%d.pcap' % i)),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        if not probe and not bench:
            rig.boot_rxe(limit)
        else:
            rig.procs['rxe'] = subprocess.Popen(['sleep', str(limit)], start_new_session=True)
        rig.boot_nic(limit)
        # our af_packet peer starts while the VMs boot
        why = rig.host_uroced(['--mtu', '9000'])
        if why:
            say('FAIL: host uroced:', why)
            tail(rig.h_log, 20)
            return FAIL
        if not rig.wait_up(600):
            return FAIL
        say('NIC VM up after %.0f s' % (time.monotonic() - t0))
        rig.serve_loop()
        say('NIC VM %s after %.0f s' % ('stalled' if rig.stall is not None else 'finished',
                                        time.monotonic() - t0))
        # the rxe VM powers off when asked
        with open(os.path.join(rig.share, 'rxe', 'zzzz.req'), 'w') as f:
            f.write('exit\n')
        try:
            rig.procs['rxe'].wait(60)
        except subprocess.TimeoutExpired:
            pass
        rig.host_uroced_stop()
        if rig.selftest:
            return selftest_verdict(rig)
        v = verdict(rig)
        if rig.stall is not None:
            say('FAIL: the guest stalled in step "%s" (above)' % rig.stall)
            return FAIL
        return v
    finally:
        rig.cleanup()
        say('logs in', out)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
