#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CI's skip rule (docs/testing.md): every test that skipped in a build
must be listed for that build in tests/ci-skips.txt; any other skip fails.

  ci_skips.py LIST BUILD=TESTLOG.json [BUILD=TESTLOG.json...]
BUILD is plain or asan. Exit 0 when every skip is listed, 1 otherwise
(or when a log is missing or holds no test: a phase that ran nothing)."""
import json
import sys


def allowed(path):
    out = {}
    for ln in open(path):
        ln = ln.split('#', 1)[0].strip()
        if not ln:
            continue
        build, name, _ = (ln.split(None, 2) + [''])[:3]
        out.setdefault(name, set()).add(build)
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    ok = allowed(sys.argv[1])
    bad = 0
    for arg in sys.argv[2:]:
        build, log = arg.split('=', 1)
        try:
            rows = [json.loads(ln) for ln in open(log) if ln.strip()]
        except OSError as e:
            print('FAIL: %s: %s' % (build, e))
            bad += 1
            continue
        if not rows:
            print('FAIL: %s: no test ran' % build)
            bad += 1
        for r in rows:
            if r.get('result') != 'SKIP':
                continue
            name = r['name'].split(' / ', 1)[-1]
            builds = ok.get(name, set())
            if build in builds or 'any' in builds:
                print('skip allowed on CI (%s): %s' % (build, name))
            else:
                print('FAIL: %s skipped in the %s build; tests/ci-skips.txt does not allow it'
                      % (name, build))
                bad += 1
    print('%d unexpected skip(s)' % bad)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
