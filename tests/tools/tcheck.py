# SPDX-License-Identifier: MIT
"""The verdict of the tools tests that check many things in one run
(ctl_test.py, install_test.py, pcap_cli_test.py, pcap_cm_test.py,
and tests/pkg): every check printed ok/FAIL,
the run fails if any did."""

failures = []


def check(cond, what):
    print('%s %s' % ('ok  ' if cond else 'FAIL', what), flush=True)
    if not cond:
        failures.append(what)
    return cond


def verdict():
    """Exit status: 0 when every check passed, else 1."""
    print('%d failure(s)' % len(failures))
    return 1 if failures else 0
