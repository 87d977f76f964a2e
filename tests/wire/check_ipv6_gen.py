#!/usr/bin/python3
# Regenerate the IPv6 test capture and compare it with the committed copy.
# Exit 77 (skip) if scapy is not installed.
import filecmp
import subprocess
import sys

gen, committed, out = sys.argv[1:4]
try:
    import scapy  # noqa: F401
except ImportError:
    print("scapy not available")
    sys.exit(77)
subprocess.run([sys.executable, gen, out], check=True)
if not filecmp.cmp(committed, out, shallow=False):
    print("%s differs from %s: rerun %s" % (out, committed, gen))
    sys.exit(1)
print("ipv6_scapy.pcap is up to date")
