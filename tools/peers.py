"""gpukit against its peers, same run: the asv suite's ``track_ratio`` benchmarks, without asv.

    python -m tools.peers [-b REGEX ...] [--threads N] [--pairs N] [--cupy-sim] [--list]
    python -m tools.peers --callgrind [--calls N] [-b REGEX ...] [--cupy-sim]

Every comparison is defined once, in ``asv_bench/`` (a class deriving from
``asv_bench.peers.Comparison`` with ``track_ratio*`` methods), so the asv history and this
table measure the same thing. This runs, in one process, each parameter combination whose
asv name ``bench_x.Class.track_ratio(param, ...)`` matches a ``-b`` regex (``re.search``;
every comparison without one) the way asv does -- ``setup``, the benchmark, ``teardown``;
a ``NotImplementedError`` in ``setup`` is a skip -- and prints gpukit's and the peer's
median time per call, their difference (gpukit's own cost where the peer is the call gpukit
makes), the ratio (the median of interleaved pairs of blocks, each after an idle pause:
``gpukit._bench.timing.compare``) with its quartiles, and the comparison's target.

``--threads N`` sets ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS``
before NumPy loads, so BLAS, gpukit's host kernels and PyTorch (which the comparisons run
with BLAS's thread count) all get N. ``--cupy-sim`` puts the CuPy simulator
(``tests/cupysim``) first on the path, so the ``cupy`` rows run on the host. ``--callgrind``
runs the selected rows under ``valgrind --tool=callgrind`` instead (one thread) and prints
instructions per call, which do not move with the machine's load: meant for small calls
(``-b CallRatio``), since each side runs ``--calls`` times under the simulator of a CPU.

Exit status: 0; 1 when a row failed (an error other than a skip); 2 when no comparison
matches the regexes.
"""

from __future__ import annotations

import argparse
import gc
import glob
import importlib
import inspect
import itertools
import json
import math
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SIM_PATH = str(ROOT / "tests" / "cupysim")
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
CALLS = 2000  # per side under callgrind (instructions per call do not depend on it)
WARM_CALLS = 200  # per side before callgrind counts: plans, caches, pools


@dataclass(frozen=True)
class Row:
    """One parameter combination of one ``track_ratio*`` benchmark."""

    cls: type
    method: str
    params: tuple[Any, ...]

    @property
    def name(self) -> str:
        """asv's name of the benchmark with its parameters, as ``-b`` matches it."""
        module = self.cls.__module__.removeprefix("asv_bench.")
        args = ", ".join(repr(p) for p in self.params)
        return f"{module}.{self.cls.__name__}.{self.method}({args})"


def _param_lists(cls: type) -> list[Sequence[Any]]:
    """The benchmark's parameter lists, as asv reads ``params`` (a flat list: one axis)."""
    params = list(getattr(cls, "params", []))
    if params and not isinstance(params[0], (list, tuple)):
        params = [params]
    return params


def discover() -> list[Row]:
    """Every ``track_ratio*`` benchmark of the suite, each parameter combination a row."""
    import asv_bench
    from asv_bench.peers import Comparison

    rows = []
    for info in sorted(pkgutil.iter_modules(asv_bench.__path__), key=lambda m: m.name):
        if not info.name.startswith("bench_"):
            continue
        module = importlib.import_module(f"asv_bench.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, Comparison):
                continue
            methods = [m for m in dir(cls) if m.startswith("track_ratio")]
            for method in methods:
                for params in itertools.product(*_param_lists(cls)):
                    rows.append(Row(cls, method, params))
    return rows


def select(rows: list[Row], patterns: Sequence[str] | None) -> list[Row]:
    """The rows whose name one of ``patterns`` finds (``re.search``); all without any."""
    if not patterns:
        return rows
    regexes = [re.compile(p) for p in patterns]
    return [r for r in rows if any(rx.search(r.name) for rx in regexes)]


@dataclass
class Result:
    """What running a row gave: a pair of timings, a skip, or a failure."""

    row: Row
    pair: Any = None  # gpukit._bench.timing.Pair
    target: float | None = None
    skipped: str | None = None
    failed: str | None = None


def run_row(row: Row, pairs: int | None = None) -> Result:
    """Set the row's benchmark up, run it and tear it down, as asv does."""
    bench = row.cls()
    if pairs:
        bench.pairs = pairs
    try:
        bench.setup(*row.params)
        getattr(bench, row.method)(*row.params)
    except NotImplementedError as exc:
        return Result(row, skipped=str(exc))
    except Exception as exc:
        return Result(row, failed=f"{type(exc).__name__}: {exc}")
    finally:
        bench.teardown(*row.params)
    return Result(row, bench.last, bench.target(*row.params))


def _time(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g}{unit}"
    return f"{seconds / 1e-9:.3g}ns"


def header(width: int) -> str:
    return (
        f"{'benchmark':<{width}} {'gpukit':>9} {'peer':>9} {'diff':>9} {'ratio':>7} "
        f"{'quartiles':>13}  target"
    )


def line(result: Result, width: int) -> str:
    """One table row: the times, their difference, the ratio and whether it met its target."""
    name = f"{result.row.name:<{width}}"
    if result.skipped is not None:
        return f"{name} n/a: {result.skipped}"
    if result.failed is not None:
        return f"{name} failed: {result.failed}"
    p = result.pair
    q1, q3 = p.quartiles
    ratio = f"{p.ratio:.3f}{'!' if p.unstable else ' '}"
    target = ""
    if result.target is not None:
        target = f"<= {result.target:.2f} {'ok' if p.ratio <= result.target else 'MISSED'}"
    return (
        f"{name} {_time(p.a_seconds):>9} {_time(p.b_seconds):>9} "
        f"{_time(p.a_seconds - p.b_seconds):>9} {ratio:>7} {q1:>6.3f}-{q3:<6.3f}  {target}"
    )


def footer(results: list[Result]) -> str:
    """How to read the table, what met its target, and the machine it ran on."""
    timed = [r for r in results if r.pair is not None]
    with_target = [r for r in timed if r.target is not None]
    met = sum(r.pair.ratio <= r.target for r in with_target)
    unstable = sum(r.pair.unstable for r in timed)
    lines = [
        "",
        "gpukit, peer: median seconds per call; diff: gpukit - peer; ratio: gpukit / peer, the",
        "  median of interleaved pairs of blocks (below 1: gpukit is faster); quartiles: of the",
        "  per-pair ratios; !: unstable by pyperf's rules (the machine moved; rerun when quiet)",
        f"targets: {met} of {len(with_target)} met; {unstable} of {len(timed)} ratios unstable; "
        f"{sum(r.skipped is not None for r in results)} skipped, "
        f"{sum(r.failed is not None for r in results)} failed",
        _machine(),
    ]
    return "\n".join(lines)


def _machine() -> str:
    """Threads, BLAS kernels and load: what a reader needs to weigh the figures."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        libs = "threads unknown (pip install threadpoolctl)"
    else:
        libs = ", ".join(
            f"{os.path.basename(i['filepath'])} {i.get('architecture')} x{i['num_threads']}"
            for i in threadpool_info()
            if i["user_api"] == "blas"
        )
    torch = sys.modules.get("torch")
    threads = f"; PyTorch threads {torch.get_num_threads()}" if torch else ""
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    return (
        f"BLAS: {libs or 'none loaded'}{threads}; OPENBLAS_CORETYPE={coretype}; "
        f"load {', '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} cores"
    )


# -- callgrind ----------------------------------------------------------------------------------
def _record(bench: Any) -> list[tuple[Any, Any, Any]]:
    """Make the benchmark's ``ratio`` hand over its calls instead of timing them."""
    calls: list[tuple[Any, Any, Any]] = []

    def ratio(ours, peer, sync=lambda: None) -> float:
        calls.append((ours, peer, sync))
        return math.nan

    bench.ratio = ratio
    return calls


def _child(rows: list[Row], calls: int) -> None:
    """Under valgrind: per row, warm up, then one loop per side between getppid markers
    (three dumps a row: the set-up, gpukit's loop, the peer's loop)."""
    measured = []
    for row in rows:
        bench = row.cls()
        recorded = _record(bench)
        try:
            bench.setup(*row.params)
            getattr(bench, row.method)(*row.params)
            (ours, peer, sync), *_ = recorded
            for _ in range(WARM_CALLS):
                ours(), peer()
            gc.collect()
            gc.disable()  # a collection of the whole heap would land on one side
            os.getppid()
            for fn in (ours, peer):
                for _ in range(calls):
                    fn()
                sync()
                os.getppid()
            measured.append(row.name)
        except NotImplementedError:
            pass
        finally:
            gc.enable()
            bench.teardown(*row.params)
    print(json.dumps(measured))


def _callgrind(args: argparse.Namespace, rows: list[Row]) -> int:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("tools.peers: --callgrind needs valgrind (apt install valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [valgrind, "--tool=callgrind", "--dump-before=getppid"]
        cmd += [f"--callgrind-out-file={tmp}/cg.out", sys.executable, "-m", "tools.peers"]
        cmd += ["--child", "--calls", str(args.calls)] + (["--cupy-sim"] if args.cupy_sim else [])
        cmd += [arg for rx in args.bench or () for arg in ("-b", rx)]
        env = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, "1")}
        if args.cupy_sim:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (SIM_PATH, env.get("PYTHONPATH")) if p)
        done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr[-4000:], file=sys.stderr)
            print("tools.peers: the run under valgrind failed (above)", file=sys.stderr)
            return 1
        measured = json.loads(done.stdout.strip().splitlines()[-1])
        totals = {}
        for path in glob.glob(f"{tmp}/cg.out.*"):
            with open(path) as f:
                for text in f:
                    if text.startswith("totals:"):
                        totals[int(path.rsplit(".", 1)[1])] = int(text.split()[1])
    per_call = [totals[i] / args.calls for i in sorted(totals)]
    width = max(len(name) for name in measured) if measured else 9
    print(f"instructions per call (callgrind, {args.calls} calls a side, one thread)")
    print(f"{'benchmark':<{width}} {'gpukit':>9} {'peer':>9} {'diff':>9} {'ratio':>7}")
    for i, name in enumerate(measured):
        ours, peer = per_call[3 * i + 1], per_call[3 * i + 2]
        print(f"{name:<{width}} {ours:>9.0f} {peer:>9.0f} {ours - peer:>9.0f} {ours / peer:>7.3f}")
    skipped = len(rows) - len(measured)
    if skipped:
        print(f"{skipped} of {len(rows)} selected rows skipped (cannot run here)")
    return 0


# -- the command --------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.peers", description=__doc__.splitlines()[0])
    p.add_argument(
        "-b", "--bench", action="append", metavar="REGEX",
        help="rows whose asv name this regex finds (repeatable; default: all)",
    )  # fmt: skip
    p.add_argument("--threads", type=int, help="BLAS, OpenMP and PyTorch threads")
    p.add_argument("--pairs", type=int, help="interleaved pairs per row (default: the class's)")
    p.add_argument("--cupy-sim", action="store_true", help="the cupy rows on the CuPy simulator")
    p.add_argument("--list", action="store_true", help="list the selected rows and exit")
    p.add_argument("--callgrind", action="store_true", help="instructions per call instead")
    p.add_argument("--calls", type=int, default=CALLS, help="calls per side (--callgrind)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.threads:  # before NumPy and its BLAS load
        os.environ.update(dict.fromkeys(THREAD_VARIABLES, str(args.threads)))
    if args.cupy_sim and SIM_PATH not in sys.path:
        sys.path.insert(0, SIM_PATH)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    rows = select(discover(), args.bench)
    if not rows:
        print(f"tools.peers: nothing matches {args.bench}; --list shows them", file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(r.name for r in rows))
        return 0
    if args.child:
        _child(rows, args.calls)
        return 0
    if args.callgrind:
        return _callgrind(args, rows)
    width = max(len(r.name) for r in rows)
    print(header(width), flush=True)
    results = []
    for row in rows:
        results.append(run_row(row, args.pairs))
        print(line(results[-1], width), flush=True)
    print(footer(results))
    return 1 if any(r.failed is not None for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
