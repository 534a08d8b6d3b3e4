"""Run cuTile Python's own test suite on tilejit (``import cuda.tile as ct`` -> tilejit.cutile).

    python tools/cutile_suite/run.py PATH_TO_CUTILE_CHECKOUT [--simulator | --gpu] [-k EXPR]
        [--files test_tuple.py,test_scan] [--out DIR] [--timeout SECONDS] [--chunk N]
        [--report-only]

Runs pytest over the checkout's ``test/test_*.py`` (or ``--files``) in subprocesses of ``--chunk``
files each (one worker), with ``site/`` on ``PYTHONPATH`` (``import cuda.tile`` gives
tilejit.cutile: shim.py; with ``--simulator``, the default without a CUDA torch, torch's CUDA
device on CPU tensors: torch_cpu.py), ``-p cutile_suite.plugin`` (plugin.py), pytest-timeout's
``--timeout`` per test and ``-p no:cacheprovider``; nothing is written into the checkout. The
junit XML of each chunk goes to ``DIR/junit``; every failure is sorted into a bucket
(classify.py's docstring has the rules) and ``DIR/report.md`` (totals, buckets, top messages per
bucket, per-file counts) and ``DIR/failures.json`` are written.
"""
import argparse
import glob
import importlib.util
import os
import subprocess
import sys
import time

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)

from cutile_suite import classify, report  # noqa: E402


def _torch_has_cuda() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def select_files(test_dir: str, names: str) -> list:
    if not names:
        return sorted(os.path.basename(p) for p in glob.glob(os.path.join(test_dir, "test_*.py")))
    return [n if n.endswith(".py") else n + ".py" for n in names.split(",") if n]


def run_chunk(files, test_dir, junit, args, env) -> list:
    """pytest over ``files``; the cases of its junit XML. A test that kills the process (out of
    memory: signal 9, a crash) is an error case, and the chunk runs again without it."""
    cmd = [sys.executable, "-m", "pytest", *files, "-p", "cutile_suite.plugin",
           "-p", "no:cacheprovider", "-o", "junit_family=xunit1", f"--junitxml={junit}",
           "--tb=short", "-q", "--no-header", "-W", "ignore::pytest.PytestConfigWarning"]
    if importlib.util.find_spec("pytest_timeout"):
        cmd.append(f"--timeout={args.timeout}")
    if args.k:
        cmd += ["-k", args.k]
    progress, died_junit = junit + ".progress", junit.replace(".xml", ".died.xml")
    env = dict(env, CUTILE_SUITE_PROGRESS=progress)
    died = []
    while True:
        for path in (junit, died_junit, progress):      # an earlier run's
            if os.path.exists(path):
                os.remove(path)
        proc = subprocess.run(cmd + [f"--deselect={c.file}::{c.name}" for c in died],
                              cwd=test_dir, env=env, capture_output=True, text=True)
        if os.path.exists(junit):
            break
        started = open(progress).read().split() if os.path.exists(progress) else []
        tail = (proc.stdout + proc.stderr)[-4000:]
        if not started or len(died) == 5:      # not in a test, or again and again: give up
            died.append(classify.Case(",".join(files), "<pytest process>", "error",
                                      f"pytest process died (exit {proc.returncode})", tail))
            break
        file, name = started[-1].split("::", 1)
        died.append(classify.Case(file, name, "error", f"pytest process died (exit "
                                  f"{proc.returncode}) in this test", tail))
    if os.path.exists(progress):
        os.remove(progress)
    if died:
        classify.write_junit(died, died_junit)
    return (classify.read_junit(junit) if os.path.exists(junit) else []) + [
        classify.Case(os.path.basename(c.file), c.name, c.outcome, c.message, c.text)
        for c in died]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkout", help="a checkout of NVIDIA's cuTile Python (with test/ and src/)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--simulator", action="store_true", default=None,
                      help="tilejit's CPU simulator, torch 'cuda' on CPU tensors (default "
                           "without a CUDA torch)")
    mode.add_argument("--gpu", dest="simulator", action="store_false")
    ap.add_argument("-k", help="pytest -k expression")
    ap.add_argument("--files", default="", help="comma-separated test files (default: all)")
    ap.add_argument("--out", default="cutile-suite-report")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per test")
    ap.add_argument("--chunk", type=int, default=1, help="test files per pytest process")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: classify the junit XML already in DIR/junit again")
    args = ap.parse_args(argv)
    simulator = (not _torch_has_cuda()) if args.simulator is None else args.simulator

    checkout = os.path.abspath(args.checkout)
    test_dir = os.path.join(checkout, "test")
    files = select_files(test_dir, args.files)
    env = dict(os.environ, CUTILE_SUITE_CHECKOUT=checkout, PYTHONDONTWRITEBYTECODE="1",
               CUTILE_SUITE_SIMULATOR="1" if simulator else "0", TILEJIT_FULL_TRACEBACK="1",
               PYTHONPATH=os.pathsep.join([os.path.join(TOOLS, "cutile_suite", "site"), TOOLS,
                                           ROOT, os.environ.get("PYTHONPATH", "")]))
    if simulator:
        env["TILEJIT_SIMULATE"] = "1"
    junit_dir = os.path.join(args.out, "junit")
    os.makedirs(junit_dir, exist_ok=True)

    cases, start = [], time.time()
    if args.report_only:
        files = []
        for xml in sorted(glob.glob(os.path.join(junit_dir, "*.xml"))):
            cases += classify.read_junit(xml)
    for i in range(0, len(files), args.chunk):
        chunk = files[i:i + args.chunk]
        t0 = time.time()
        got = run_chunk(chunk, test_dir, os.path.abspath(os.path.join(
            junit_dir, chunk[0].replace(".py", ".xml"))), args, env)
        cases += got
        t = report.totals(got)
        print(f"{','.join(chunk)}: {t['collected']} tests, {t['passed']} passed, "
              f"{t['failed']} failed, {t['skipped']} skipped ({time.time() - t0:.0f} s)",
              flush=True)
    elapsed = time.time() - start
    header = (f"`{' '.join(['run.py'] + (argv if argv is not None else sys.argv[1:]))}`: "
              f"{'simulator' if simulator else 'GPU'}, {len(files)} files, {elapsed:.0f} s")
    path = report.write(cases, args.out, header)
    t = report.totals(cases)
    print(f"\ncollected {t['collected']}, concerning tilejit {t['concerning']}, passed "
          f"{t['passed']}, skipped {t['skipped']}, failed {t['failed']} ({elapsed:.0f} s)")
    print(report.rates(t))
    for bucket, n in t["buckets"].items():
        if n:
            print(f"  {bucket:26} {n}")
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
