#!/usr/bin/python3
"""run_fuzz.py - run a libFuzzer target, deterministically (CI) or open-ended.

CI verdict (what `meson test --suite fuzz` runs):
    run_fuzz.py --ci FUZZER CORPUS_DIR ARTIFACT_DIR --seed N --runs N [--max-len N]
  The committed corpus is copied to a temporary directory (the repository is never
  written to), then the fuzzer runs every corpus input and N mutations with the fixed
  seed: the same build gives the same inputs, so a verdict never depends on luck or on
  the speed of the machine. Crash/leak/timeout reproducers land in ARTIFACT_DIR.

Open-ended fuzzing (by hand, not a verdict):
    run_fuzz.py --open TARGET --time SECONDS [--build DIR] [--jobs N]
  TARGET is a fuzzer name without the fuzz_ prefix (wire_parse, ctl, rings). Random
  seed (printed), time-bounded, and the corpus grows in DIR/fuzz-work/TARGET (seeded
  from tests/fuzz/corpus/TARGET); findings land in DIR/fuzz-artifacts/TARGET. A finding
  goes into the committed corpus once fixed (see docs/fuzzing.md).
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def fuzz_env():
    env = dict(os.environ)
    # UBSan must stop the run (its default is to print and continue); meson sets
    # these too, this covers running the script by hand.
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    return env


def run(cmd):
    print("run_fuzz: " + " ".join(cmd), flush=True)
    rc = subprocess.call(cmd, env=fuzz_env())
    print("run_fuzz: fuzzer exit %d" % rc, flush=True)
    return 1 if rc else 0


def common_args(artdir, max_len):
    args = ["-rss_limit_mb=2048", "-error_exitcode=1", "-timeout_exitcode=1",
            "-print_final_stats=1",
            "-artifact_prefix=" + os.path.join(os.path.abspath(artdir), "")]
    if max_len:
        args.append("-max_len=%d" % max_len)
    return args


def ci(a):
    os.makedirs(a.artifacts, exist_ok=True)
    names = sorted(n for n in os.listdir(a.corpus) if not n.startswith("."))
    if not names:
        sys.exit("run_fuzz: empty corpus %s" % a.corpus)
    work = tempfile.mkdtemp(prefix="uroce-fuzz-")
    try:
        for n in names:
            shutil.copyfile(os.path.join(a.corpus, n), os.path.join(work, n))
        print("run_fuzz: %d corpus inputs, seed %d, %d runs" % (len(names), a.seed, a.runs),
              flush=True)
        # A generous per-input timeout: the verdict must not depend on load.
        cmd = [a.fuzzer, "-seed=%d" % a.seed, "-runs=%d" % a.runs, "-timeout=120"]
        cmd += common_args(a.artifacts, a.max_len) + [work]
        return run(cmd)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def open_ended(a):
    fuzzer = os.path.join(a.build, "tests", "fuzz", "fuzz_" + a.target)
    if not os.access(fuzzer, os.X_OK):
        sys.exit("run_fuzz: %s not built (a clang build is needed: see docs/fuzzing.md)" % fuzzer)
    seeds = os.path.join(HERE, "corpus", a.target)
    work = os.path.join(a.build, "fuzz-work", a.target)
    art = os.path.join(a.build, "fuzz-artifacts", a.target)
    os.makedirs(work, exist_ok=True)
    os.makedirs(art, exist_ok=True)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 2**31)
    print("run_fuzz: open-ended %s for %d s, seed %d; corpus %s (+ %s), findings in %s" %
          (a.target, a.time, seed, work, seeds, art), flush=True)
    cmd = [fuzzer, "-seed=%d" % seed, "-max_total_time=%d" % a.time, "-timeout=10"]
    if a.jobs > 1:
        cmd += ["-jobs=%d" % a.jobs, "-workers=%d" % a.jobs]
    cmd += common_args(art, a.max_len) + [work, seeds]
    return run(cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    m = ap.add_mutually_exclusive_group(required=True)
    m.add_argument("--ci", nargs=3, metavar=("FUZZER", "CORPUS_DIR", "ARTIFACT_DIR"))
    m.add_argument("--open", metavar="TARGET")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--time", type=int, default=600)
    ap.add_argument("--max-len", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                     "build-fuzz"))
    a = ap.parse_args()
    if a.ci:
        a.fuzzer, a.corpus, a.artifacts = a.ci
        if a.seed is None:
            sys.exit("run_fuzz: --ci needs a fixed --seed")
        return ci(a)
    a.target = a.open
    return open_ended(a)


if __name__ == "__main__":
    sys.exit(main())
