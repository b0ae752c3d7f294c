"""Compare the key asv benchmarks of this commit with the last landed one, in one run.

Run it before every submission that touches a hot path::

    python tools/regression_check.py [BASE] [--head REV] [--factor 1.10] [--threads N]
                                     [-b REGEX ...]

BASE is the last landed commit: ``origin/main`` when there is one, else name it. The
script runs ``asv continuous BASE HEAD`` on the key benchmarks (:data:`KEY`: dense solve,
matmul, FFT, CG, an MLP training step, on the numpy backend). asv prints the benchmarks
that changed significantly (``+``: slower), then the script prints the median of every
key benchmark at both commits. It exits 1 when asv finds a benchmark slower by more than
``--factor`` and the difference significant (asv's statistics on the samples of both
commits), or when a selected benchmark has no figure at either commit (it failed or was
skipped there, or a regex matched nothing: no comparison is no pass); 0 otherwise, 2 on
a usage error.

``asv continuous`` installs each commit, so it cannot run in the ``existing`` environment
of ``asv.conf.json`` (the working tree as installed): it runs on a copy of that
configuration with a virtualenv under ``.asv/env/`` (git-ignored; made on the first run,
which needs PyPI, and reused), holding this interpreter's Python and the NumPy, SciPy and
threadpoolctl versions installed here, and wheels of both commits built from git. The
suite is the checked commit's ``asv_bench/``, run from a scratch copy: in the checkout it
puts the checkout first on ``sys.path``, and both commits would run the working tree's
gpukit.
Results go to the scratch folder too, so the checkout is left as it was found;
uncommitted changes are not measured.

Timing needs a quiet machine: with every core busy elsewhere, a multi-threaded BLAS
waits for its descheduled threads and runs several times slower at random, and no
statistic recovers the code's figure. ``--threads 1`` is steadier on a shared machine,
but hides what only threads show (such as two OpenBLAS thread pools competing); rerun a
flagged result before believing it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: asv -b regexes of the key benchmarks, gpukit on the numpy backend only (its peers do
#: not change between commits); asv matches them against ``name(param, ...)``.
KEY = [
    r"bench_linalg\.Solve\.time_solve(_pos)?\('numpy', (256|1024), 'float64'\)",
    r"bench_matmul\.Matmul\.time_gpukit\('numpy', (8|512), 'float64'\)",
    r"bench_fft\.FFT2\.time_gpukit\('numpy', '256x64x64', 'complex128'\)",
    r"bench_iterative\.PoissonCG\.time_cg\('numpy', 'gpukit', 256\)",
    r"bench_iterative\.DenseCG\.time_cg\('gpukit'\)",
    r"bench_nn\.TrainStep\.time_step\('numpy', 256, 'gpukit'\)",
]

#: Rounds per commit, alternating between the two (asv's default is 2): a drift of the
#: machine's load weighs on both commits.
ROUNDS = 4

#: What ``--threads`` sets for the benchmark processes, which asv starts with this one's
#: environment.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

#: What the benchmarks import besides gpukit, pinned to the versions installed here.
REQUIREMENTS = ("numpy", "scipy", "threadpoolctl")


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def _commit(rev: str) -> str | None:
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except subprocess.CalledProcessError:
        return None


def _config(scratch: str, head: str) -> str:
    """A copy of asv.conf.json building each commit into a virtualenv, with ``head``'s
    suite copied beside it; returns its path."""
    with open(os.path.join(ROOT, "asv.conf.json")) as f:
        conf = json.load(f)
    suite = conf["benchmark_dir"]
    archive = subprocess.run(
        ["git", "archive", head, suite, f":(exclude){suite}/results"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", scratch], input=archive, check=True)
    # asv reads paths relative to its configuration file, which lives in the scratch folder
    conf["repo"] = ROOT
    conf["benchmark_dir"] = os.path.join(scratch, suite)
    conf["env_dir"] = os.path.join(ROOT, ".asv", "env")
    conf["results_dir"] = os.path.join(scratch, "results")
    conf["html_dir"] = os.path.join(scratch, "html")
    conf["environment_type"] = "virtualenv"
    conf["pythons"] = [f"{sys.version_info.major}.{sys.version_info.minor}"]
    req = {}
    for name in REQUIREMENTS:
        try:
            req[name] = version(name)
        except PackageNotFoundError:
            req[name] = ""  # not installed here: the latest
    conf["matrix"] = {"req": req}
    # the wheel alone: its dependencies are the matrix's pinned versions
    conf["build_command"] = ["python -m pip wheel --no-deps -w {build_cache_dir} {build_dir}"]
    conf["install_command"] = [
        "in-dir={env_dir} python -m pip install --no-deps --force-reinstall {wheel_file}"
    ]
    conf["uninstall_command"] = ["return-code=any python -m pip uninstall -y {project}"]
    path = os.path.join(scratch, "asv.conf.json")
    with open(path, "w") as f:
        json.dump(conf, f)
    return path


def _figures(results: str, commit: str, regexes: list[str]) -> tuple[dict, list[str]]:
    """``({label: median or None}, unmatched)`` for the benchmarks ``regexes`` select in
    asv's result file of ``commit`` (None: failed or skipped there), and the regexes
    that selected nothing."""
    files = [f for f in os.listdir(results) if f.startswith(commit[:8]) and f.endswith(".json")]
    if not files:
        return {}, regexes
    with open(os.path.join(results, files[0])) as f:
        data = json.load(f)
    column = {name: i for i, name in enumerate(data["result_columns"])}
    figures, matched = {}, set()
    for name, row in data["results"].items():
        values, params = row[column["result"]], row[column["params"]]
        if not params:  # asv keeps one value, not a list, for a benchmark without params
            values, params = [values], []
        for value, combo in zip(values, itertools.product(*params), strict=True):
            label = f"{name}({', '.join(combo)})" if params else name
            hits = {r for r in regexes if re.search(r, label)}
            if hits:
                matched |= hits
                finite = isinstance(value, float) and math.isfinite(value)
                figures[label] = value if finite else None
    return figures, [r for r in regexes if r not in matched]


def _report(names: tuple[str, str], figures: tuple[dict, dict]) -> bool:
    """Print the selected benchmarks' medians at both commits; whether one has no figure
    at either."""
    base, head = figures
    missing = False
    print(f"\n| benchmark | {names[0]} | {names[1]} | ratio |")
    print("|---|---|---|---|")
    for label in sorted(base.keys() | head.keys()):
        before, after = base.get(label), head.get(label)
        if before is None or after is None:
            missing = True
            ratio = "NO FIGURE"
        else:
            ratio = f"{after / before:.2f}"
        print(f"| {label} | {_time(before)} | {_time(after)} | {ratio} |")
    return missing


def _time(seconds: float | None) -> str:
    """A time in asv's units: 1.23 ms, 45.6 us."""
    if seconds is None:
        return "n/a"
    scale, unit = next(
        ((s, u) for s, u in ((1.0, "s"), (1e-3, "ms")) if seconds >= s), (1e-6, "us")
    )
    return f"{seconds / scale:.3g} {unit}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", help="the last landed commit (default origin/main)")
    parser.add_argument("--head", default="HEAD", help="the commit to check (default HEAD)")
    parser.add_argument(
        "--factor", type=float, default=1.10, help="slowdown that fails (default 1.10)"
    )
    parser.add_argument(
        "-b", "--bench", action="append", help="asv -b regex, instead of the key benchmarks"
    )
    parser.add_argument(
        "--threads", type=int, help="BLAS/OpenMP threads of the benchmarks (default: all)"
    )
    args = parser.parse_args(argv)
    base = args.base or "origin/main"
    base_hash, head_hash = _commit(base), _commit(args.head)
    if base_hash is None:
        parser.error(
            f"no commit {base!r} here: name the last landed commit, e.g. "
            "`python tools/regression_check.py HEAD~3`"
        )
    if head_hash is None:
        parser.error(f"no commit {args.head!r} here")
    if base_hash == head_hash:
        parser.error(f"{base} and {args.head} are the same commit: nothing to compare")
    if args.head == "HEAD" and _git("status", "--porcelain", "--untracked-files=no"):
        print("regression_check: uncommitted changes are not measured", file=sys.stderr)
    machine = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tools", "asv_machine.py")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    regexes = args.bench or KEY
    with tempfile.TemporaryDirectory() as scratch:
        command = [
            sys.executable, "-m", "asv", "continuous", "--config", _config(scratch, head_hash),
            "--machine", machine, "--factor", str(args.factor),
            "--attribute", f"rounds={ROUNDS}", "--show-stderr",
        ]  # fmt: skip
        for regex in regexes:
            command += ["-b", regex]
        command += [base_hash, head_hash]
        print(f"regression_check: {base} ({base_hash[:8]}) -> {args.head} ({head_hash[:8]})")
        threads = args.threads or "all"
        print(
            f"regression_check: machine {machine}, BLAS threads {threads}, fails above "
            f"x{args.factor}",
            flush=True,
        )
        env = dict(os.environ)
        if args.threads:
            for name in THREAD_VARIABLES:
                env[name] = str(args.threads)
        slower = subprocess.run(command, cwd=ROOT, env=env).returncode != 0
        results = os.path.join(scratch, "results", machine)
        found = [
            _figures(results, commit, regexes) if os.path.isdir(results) else ({}, regexes)
            for commit in (base_hash, head_hash)
        ]
    names = (f"{base} ({base_hash[:8]})", f"{args.head} ({head_hash[:8]})")
    failed = _report(names, (found[0][0], found[1][0])) or slower
    for regex in {r for _, unmatched in found for r in unmatched}:
        print(f"regression_check: no benchmark matches {regex!r}")
        failed = True
    if slower:
        print("regression_check: asv found a significant slowdown (+ in its table above)")
    print(f"regression_check: {'FAILED' if failed else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
