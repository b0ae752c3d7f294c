"""gpukit against its peers, same run: the asv suite's ``track_ratio`` benchmarks, without asv.

    python -m tools.peers [-b REGEX ...] [--threads N] [--pairs N] [--cupy-sim] [--list]
                          [--json FILE] [--plot FILE]
    python -m tools.peers --from FILE --plot FILE
    python -m tools.peers --callgrind [--calls N] [-b REGEX ...] [--cupy-sim]

Every comparison is defined once, in ``asv_bench/`` (a class deriving from
``asv_bench.peers.Comparison`` with ``track_ratio*`` methods), so the asv history and this
table measure the same thing. This runs, in one process, each parameter combination whose
asv name ``bench_x.Class.track_ratio(param, ...)`` matches a ``-b`` regex (``re.search``;
every comparison without one) the way asv does -- ``setup``, the benchmark, ``teardown``;
a ``NotImplementedError`` in ``setup`` is a skip -- and prints gpukit's and the peer's
median time per call, the ratio (the median of interleaved pairs of blocks, each after an
idle pause: ``gpukit._bench.timing.compare``) with its quartiles, gpukit's cost over the
peer's from the pairs, ``over`` = (ratio - 1) x the peer's median (gpukit's own cost where
the peer is the call gpukit makes), and the comparison's targets: a largest ratio
(``target``), a most seconds of ``over`` (``overhead_target``: ``CallRatio``'s 2 us), or
both, with ``ok`` or ``MISSED`` (a cost target on the per-pair costs' quartiles: met when
the third quartile's is within it, missed when the first quartile's exceeds it,
``unresolved`` between).

``--threads N`` sets ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS``
before NumPy loads, so BLAS, gpukit's host kernels and PyTorch (which the comparisons run
with BLAS's thread count) all get N. ``--cupy-sim`` puts the CuPy simulator
(``tests/cupysim``) first on the path, so the ``cupy`` rows run on the host. ``--callgrind``
runs the selected rows under ``valgrind --tool=callgrind`` instead (one thread) and prints
instructions per call, which do not move with the machine's load: meant for small calls
(``-b CallRatio``), since each side runs ``--calls`` times under the simulator of a CPU.
String hashing is fixed there (``PYTHONHASHSEED=0`` unless it is set), so that a count
compares from one run to the next.

``--json FILE`` writes the run's results with the conditions they were measured in (date,
commit, processor, threads, load before and after); ``--plot FILE`` draws them (matplotlib:
``pip install -e ".[bench]"``): per comparison, the ratio of each row with its quartiles
and target, one panel per value of the parameters between the first and the last that
vary, the conditions in the title. ``--from FILE`` draws a saved ``--json`` instead of
running.

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
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
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
    target: float | None = None  # the largest ratio the comparison accepts
    overhead_target: float | None = None  # the most seconds of gpukit's cost per call
    skipped: str | None = None
    failed: str | None = None

    @property
    def met(self) -> bool | None:
        """Whether the timed row met every target it has; None without a target, or where
        the run cannot tell (:attr:`resolved`)."""
        if self.pair is None or (self.target is None and self.overhead_target is None):
            return None
        if not self.resolved:
            return None
        return (self.target is None or self.pair.ratio <= self.target) and (
            self.overhead_target is None or cost_range(self.pair)[1] <= self.overhead_target
        )

    @property
    def resolved(self) -> bool:
        """Whether the run can judge the cost target: the per-pair costs' quartiles
        (:func:`cost_range`) both lie on one side of it. Met: even the third quartile's
        cost is within the target; missed: even the first quartile's exceeds it. A call of
        hundreds of microseconds on a shared machine moves by more than 2 us from pair to
        pair, and its median cost says nothing about a 2 us goal either way."""
        if self.pair is None or self.overhead_target is None:
            return True
        low, high = cost_range(self.pair)
        return high <= self.overhead_target or low > self.overhead_target


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
    return Result(row, bench.last, bench.target(*row.params), bench.overhead_target(*row.params))


def _time(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g}{unit}"
    return f"{seconds / 1e-9:.3g}ns"


def overhead(pair: Any) -> float:  # a gpukit._bench.timing.Pair
    """gpukit's seconds per call over the peer's, from the pairs: (ratio - 1) x the peer's
    median. Both sides of a pair ran back to back, so the machine's drift between pairs
    (several percent on a shared VM) cancels, where the difference of the two medians
    keeps it: a millisecond call's 1 % is 10 us."""
    return (pair.ratio - 1.0) * pair.b_seconds


def cost_range(pair: Any) -> tuple[float, float]:  # a gpukit._bench.timing.Pair
    """gpukit's cost per call at the first and third quartiles of the per-pair ratios:
    (q - 1) x the peer's median. With seven pairs the two quartiles bound the median
    about as an 80 % interval would."""
    q1, q3 = pair.quartiles
    return (q1 - 1.0) * pair.b_seconds, (q3 - 1.0) * pair.b_seconds


def header(width: int) -> str:
    return (
        f"{'benchmark':<{width}} {'gpukit':>9} {'peer':>9} {'over':>9} {'ratio':>7} "
        f"{'quartiles':>13}  target"
    )


def line(result: Result, width: int) -> str:
    """One table row: the times, gpukit's cost over the peer's, the ratio and whether it met
    its target."""
    name = f"{result.row.name:<{width}}"
    if result.skipped is not None:
        return f"{name} n/a: {result.skipped}"
    if result.failed is not None:
        return f"{name} failed: {result.failed}"
    p = result.pair
    q1, q3 = p.quartiles
    ratio = f"{p.ratio:.3f}{'!' if p.unstable else ' '}"
    goals = []
    if result.target is not None:
        goals.append(f"<= {result.target:.2f}")
    if result.overhead_target is not None:
        goals.append(f"over <= {_time(result.overhead_target)}")
    if not result.resolved:
        low, high = cost_range(p)
        verdict = f"unresolved ({_time(low)} to {_time(high)})"
    else:
        verdict = "ok" if result.met else "MISSED"
    target = f"{', '.join(goals)} {verdict}" if goals else ""
    return (
        f"{name} {_time(p.a_seconds):>9} {_time(p.b_seconds):>9} "
        f"{_time(overhead(p)):>9} {ratio:>7} {q1:>6.3f}-{q3:<6.3f}  {target}"
    )


def footer(results: list[Result]) -> str:
    """How to read the table, what met its target, and the machine it ran on."""
    timed = [r for r in results if r.pair is not None]
    with_target = [r for r in timed if r.met is not None]
    met = sum(bool(r.met) for r in with_target)
    unresolved = sum(not r.resolved for r in timed)
    unstable = sum(r.pair.unstable for r in timed)
    lines = [
        "",
        "gpukit, peer: median seconds per call; ratio: gpukit / peer, the median of interleaved",
        "  pairs of blocks (below 1: gpukit is faster); over: (ratio - 1) x peer, gpukit's cost",
        "  per call over the peer's, paired; quartiles: of the per-pair ratios; !: unstable by",
        "  pyperf's rules (the machine moved; rerun when quiet); a cost target is met when the",
        "  cost at the third quartile is within it, missed when the first quartile's exceeds",
        "  it, unresolved between (rerun, or judge the row by --callgrind)",
        f"targets: {met} of {len(with_target)} met"
        + (f", {unresolved} unresolved" if unresolved else "")
        + f"; {unstable} of {len(timed)} ratios unstable; "
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
        # string hashes fixed: a long row's count moved by up to 10k instructions from one
        # run of the same code to the next with the process's random hash seed
        env.setdefault("PYTHONHASHSEED", "0")
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


# -- the record and its plot --------------------------------------------------------------------
def _processor() -> str:
    """The processor's model name (``platform.processor()`` is empty on Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            for text in f:
                if text.startswith("model name"):
                    return text.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str:
    """``git describe --always --dirty`` of the checkout, or "unknown"."""
    done = subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def record(results: list[Result], argv: Sequence[str], load_before: Sequence[float]) -> dict:
    """The timed rows of a run and what they were measured in, as ``--json`` writes them."""
    rows = []
    for r in results:
        if r.pair is None:
            continue
        q1, q3 = r.pair.quartiles
        rows.append({
            "benchmark": f"{r.row.cls.__name__}.{r.row.method}",
            "param_names": list(getattr(r.row.cls, "param_names", [])),
            "params": [p if isinstance(p, (int, float, str)) else repr(p) for p in r.row.params],
            "gpukit_seconds": r.pair.a_seconds,
            "peer_seconds": r.pair.b_seconds,
            "ratio": r.pair.ratio,
            "overhead_seconds": overhead(r.pair),
            "quartiles": [q1, q3],
            "unstable": r.pair.unstable,
            "target": r.target,
            "overhead_target": r.overhead_target,
            "resolved": r.resolved,
        })  # fmt: skip
    return {
        "conditions": {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "commit": _commit(),
            "processor": f"{_processor()}, {os.cpu_count()} cores",
            "machine": _machine(),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "command": "python -m tools.peers " + " ".join(argv),
        },
        "rows": rows,
    }


def _panels(rows: list[dict]) -> list[tuple[str, int | None, int | None, list[dict]]]:
    """One benchmark's rows by panel: ``(title, x, series, rows)``. Of the parameters that
    vary among the rows, the first is the x axis and the last (if another) the series;
    each combination of those between them is a panel, named in its title with the
    parameters that do not vary."""
    names, width = rows[0]["param_names"], len(rows[0]["params"])
    varying = [i for i in range(width) if len({str(r["params"][i]) for r in rows}) > 1]
    x = varying[0] if varying else None
    series = varying[-1] if len(varying) > 1 else None
    shown = [i for i in range(width) if i not in (x, series)]
    panels: dict[str, list[dict]] = {}
    for r in rows:
        fixed = ", ".join(f"{names[i]}={r['params'][i]!r}" for i in shown)
        panels.setdefault(r["benchmark"] + (f"  ({fixed})" if fixed else ""), []).append(r)
    return [(title, x, series, mine) for title, mine in panels.items()]


def figure(doc: dict) -> Any:
    """The ratios of a ``--json`` record as a matplotlib Figure: a panel per benchmark and
    combination of the parameters between the x axis and the series (:func:`_panels`),
    each row's ratio on a log scale with its quartiles and target, the conditions above."""
    from gpukit._bench import plot as bench_plot

    plt = bench_plot.pyplot()
    panels = []
    for bench in dict.fromkeys(r["benchmark"] for r in doc["rows"]):
        panels += _panels([r for r in doc["rows"] if r["benchmark"] == bench])
    fig, axes = plt.subplots(len(panels), 1, figsize=(14, 4.6 * len(panels)), squeeze=False)
    for ax, (title, x, series, rows) in zip(axes[:, 0], panels, strict=True):

        def label(r: dict, i: int | None) -> str:
            return "" if i is None else str(r["params"][i])

        cats = list(dict.fromkeys(label(r, x) for r in rows))
        kinds = list(dict.fromkeys(label(r, series) for r in rows))
        width = 0.8 / len(kinds)
        for j, kind in enumerate(kinds):
            mine = [r for r in rows if label(r, series) == kind]
            xs = [cats.index(label(r, x)) - 0.4 + width * (j + 0.5) for r in mine]
            ratios = [r["ratio"] for r in mine]
            below = [r["ratio"] - r["quartiles"][0] for r in mine]
            above = [r["quartiles"][1] - r["ratio"] for r in mine]
            name = None if series is None else f"{rows[0]['param_names'][series]}={kind}"
            ax.errorbar(xs, ratios, yerr=[below, above], fmt="o", ms=4, capsize=2, label=name)
            goals = [(at, r["target"]) for at, r in zip(xs, mine, strict=True) if r["target"]]
            if goals:
                dash = max(4.0, 600 * width / len(cats))  # points: about the slot's width
                ax.plot(*zip(*goals, strict=True), "_", color="black", ms=dash, mew=1.5)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_yscale("log")
        many = len(cats) > 6
        ax.set_xticks(
            range(len(cats)), cats, rotation=50 if many else 0, ha="right" if many else "center"
        )
        if x is not None:
            ax.set_xlabel(rows[0]["param_names"][x])
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("gpukit time / peer time")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        if series is not None:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # off the points
    c = doc["conditions"]
    load = f"load {c['load_before'][0]:.1f} before, {c['load_after'][0]:.1f} after (1-min average)"
    fig.suptitle(
        "Same-run ratios (median of interleaved pairs; bars: quartiles; black dash: target)\n"
        f"{c['date']}, {c['commit']}; {c['processor']}; {load}\n{c['machine']}",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def write_plot(doc: dict, path: str) -> None:
    """Draw :func:`figure` of ``doc`` into ``path``."""
    from gpukit._bench import plot as bench_plot

    fig = figure(doc)
    fig.savefig(path, dpi=100)
    bench_plot.pyplot().close(fig)


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
    p.add_argument("--json", metavar="FILE", help="write the results and conditions to FILE")
    p.add_argument("--plot", metavar="FILE", help="plot the ratios into FILE (matplotlib)")
    p.add_argument("--from", dest="source", metavar="FILE", help="plot a saved --json, no run")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    if args.source or args.plot:
        from gpukit._bench import plot as bench_plot

        if args.source and not args.plot:
            parser().error("--from needs --plot FILE")
        if args.callgrind or args.list:
            parser().error("--plot draws timed ratios: not with --callgrind or --list")
        bench_plot.check(args.plot)  # matplotlib and the file's folder, before any run
    if args.source:
        with open(args.source) as f:
            write_plot(json.load(f), args.plot)
        return 0
    load_before = os.getloadavg()
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
    if args.json or args.plot:
        doc = record(results, argv, load_before)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=1)
        if args.plot and doc["rows"]:
            write_plot(doc, args.plot)
    return 1 if any(r.failed is not None for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
