"""Run the cases on every available runner and collect a JSON-ready report."""

from __future__ import annotations

import gc
import platform
import sys
import time
from collections.abc import Sequence
from typing import Any

from .._select import registry as _registry
from .._version import __version__
from .cases import CASES, Case, Unsupported
from .ceilings import measure_ceilings
from .runners import NAMES, Runner, make
from .timing import FULL, MIN_ROUNDS, QUICK, Budget, Spread, calibrate, spread, time_block


def select_cases(names: Sequence[str] | None) -> list[Case]:
    """The cases named (all by default); ValueError naming the valid ones otherwise."""
    if not names:
        return list(CASES)
    known = {c.name: c for c in CASES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"unknown case(s) {', '.join(unknown)}; expected some of {', '.join(known)}"
        )
    return [known[n] for n in names]


def machine() -> dict[str, Any]:
    """Host, library versions and GPU of this run, so a report reads per device."""
    import numpy as np
    import scipy

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": _cpu_count(),
        "python": sys.version.split()[0],
        "versions": {"gpukit": __version__, "numpy": np.__version__, "scipy": scipy.__version__},
        "gpu": None,
    }
    if "torch" in sys.modules:
        info["versions"]["torch"] = sys.modules["torch"].__version__
    status = _registry.available_backends().get("cupy")
    if status is not None and status.available:
        backend = _registry.load("cupy")
        info["versions"].update(backend.versions())
        info["gpu"] = backend.devices()[0].name
    return info


def _cpu_count() -> int | None:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _progress(total: int, enabled: bool | None):
    """A tqdm bar on stderr (shown on a terminal by default), or a no-op without tqdm."""
    if enabled is not False:
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return tqdm(
                total=total,
                disable=None if enabled is None else False,
                file=sys.stderr,
                leave=False,
                unit="case",
            )
    return _NoBar()


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def close(self) -> None:
        pass


def run(
    *,
    quick: bool = False,
    cases: Sequence[str] | None = None,
    impls: Sequence[str] | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Time every case on every available implementation; return the report.

    Parameters
    ----------
    quick : bool
        Small sizes and short timing blocks (well under a minute on a 2-core CPU).
    cases : sequence of str, optional
        Case names to run (default all: matmul, fft2, solve, cg, bias_gelu, nn_step).
    impls : sequence of str, optional
        Implementations to run (default all of ``gpukit-numpy``, ``gpukit-cupy``,
        ``numpy``, ``cupy``, ``torch-cpu``, ``torch-cuda`` that are available here).
    progress : bool, optional
        Show a tqdm progress bar on stderr; by default only on a terminal.

    Returns
    -------
    dict
        ``machine``, ``ceilings`` (per device), ``results`` (one row per case, size and
        implementation, with the spread of its blocks) and ``skipped`` (what could not
        run, and why).

    Raises
    ------
    ValueError
        An unknown case or implementation name.
    """
    chosen = select_cases(cases)
    budget = QUICK if quick else FULL
    runners: list[Runner] = []
    skipped: list[dict[str, Any]] = []
    for name in impls or NAMES:
        try:
            runners.append(make(name))
        except RuntimeError as exc:
            skipped.append({"case": None, "impl": name, "reason": str(exc)})
    devices = sorted({r.device for r in runners})
    sizes = {c.name: c.quick if quick else c.full for c in chosen}
    bar = _progress(len(devices) + sum(len(sizes[c.name]) for c in chosen) * len(runners), progress)
    bar.set_postfix_str("ceilings")
    ceilings = {device: _ceilings(device, runners, quick, budget) for device in devices}
    bar.update(len(devices))
    rows = []
    for case in chosen:
        for size in sizes[case.name]:
            bar.set_postfix_str(f"{case.name} {size}")
            rows += _time_size(case, size, runners, budget, ceilings, skipped)
            gc.collect()  # free this size's arrays (device memory too) before the next
            bar.update(len(runners))
    bar.close()
    return {
        "quick": quick,
        "machine": machine(),
        "ceilings": ceilings,
        "results": rows,
        "skipped": skipped,
    }


def _ceilings(device: str, runners: list[Runner], quick: bool, budget) -> dict[str, Any]:
    """The best copy and matmul rates any raw library reaches on ``device``.

    The hardware's ceiling, not one library's: on a CPU PyTorch's MKL may beat NumPy's
    OpenBLAS at matmul. gpukit runners judge only when no raw library is present.
    """
    here = [r for r in runners if r.device == device]
    judges = [r for r in here if r.family != "gpukit"] or here
    best: dict[str, Any] = {"measured_by": {}}
    for judge in judges:
        for unit, rate in measure_ceilings(judge, quick, budget).items():
            if rate > best.get(unit, 0.0):
                best[unit] = rate
                best["measured_by"][unit] = judge.name
    return best


def _time_size(
    case: Case,
    size: int,
    runners: list[Runner],
    budget: Budget,
    ceilings: dict[str, Any],
    skipped: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Time ``case`` at ``size`` on every runner, the runners taking turns block by block.

    Each round times one block per runner, in an order rotated every round, so that a
    disturbance (another process, a thread pool still spinning) lands on every runner
    alike rather than on one; a ratio is taken per round, between blocks that saw the
    same moment of the machine. A runner that cannot build or run the case is listed in
    ``skipped`` with the reason, and the others go on.
    """
    ready: list[tuple[Runner, Any, int]] = []
    for runner in runners:
        try:
            with runner.scope():
                fn = case.build(runner, size)
                number = calibrate(fn, runner.sync, budget)
        except Exception as exc:  # a failing case is reported, and the others still run
            _skip(skipped, case, runner, exc)
        else:
            ready.append((runner, fn, number))
    samples: dict[str, list[float]] = {runner.name: [] for runner, _, _ in ready}
    start = time.perf_counter()
    for i in range(budget.rounds):
        if not ready or (i >= MIN_ROUNDS and time.perf_counter() - start > budget.cap):
            break
        turn = i % len(ready)
        for entry in ready[turn:] + ready[:turn]:
            runner, fn, number = entry
            try:
                with runner.scope():
                    samples[runner.name].append(time_block(fn, runner.sync, number, budget.idle))
            except Exception as exc:
                _skip(skipped, case, runner, exc)
                ready.remove(entry)
    rows = [
        _row(case, size, runner, spread(samples[runner.name]), ceilings) for runner, _, _ in ready
    ]
    _add_ratios(rows, samples)
    return rows


def _skip(skipped: list[dict[str, Any]], case: Case, runner: Runner, exc: Exception) -> None:
    reason = str(exc) if isinstance(exc, Unsupported) else f"failed: {type(exc).__name__}: {exc}"
    entry = {"case": case.name, "impl": runner.name, "reason": reason}
    if entry not in skipped:
        skipped.append(entry)


def _row(
    case: Case, size: int, runner: Runner, t: Spread, ceilings: dict[str, Any]
) -> dict[str, Any]:
    """One result: the median time with its spread, throughput, and share of the ceiling.

    A share above 1 is no share: the ceiling was measured low (a busy machine) or the
    case's data sat in a cache the ceiling's large copy does not fit; ``above_ceiling``
    says so, and the table prints no percentage for it.
    """
    throughput = case.work(size) / t.median / 1e9
    ceiling = ceilings.get(runner.device, {}).get(case.unit)
    fraction = throughput / ceiling if ceiling else None
    return {
        "case": case.name,
        "size": size,
        "shape": case.shape(size),
        "impl": runner.name,
        "device": runner.device,
        "seconds": t.median,
        "seconds_range": [t.low, t.high],
        "spread": t.rel_stdev,
        "blocks": t.n,
        "unstable": t.unstable,
        "throughput": throughput,
        "unit": case.unit,
        "fraction_of_ceiling": fraction,
        "above_ceiling": fraction is not None and fraction > 1.0,
    }


RATIO_FIELDS = (
    "time_vs_gpukit",
    "time_vs_gpukit_range",
    "time_vs_gpukit_spread",
    "time_vs_gpukit_unstable",
)


def _add_ratios(rows: list[dict[str, Any]], samples: dict[str, list[float]]) -> None:
    """``time_vs_gpukit``: the median over rounds of a row's time over gpukit's on its device.

    With the per-round ratios' range, relative spread and stability; None where no gpukit
    runner shares the row's device.
    """
    ours = {r["device"]: samples[r["impl"]] for r in rows if r["impl"].startswith("gpukit-")}
    for r in rows:
        ref = ours.get(r["device"])
        if ref is None:
            r.update(dict.fromkeys(RATIO_FIELDS))
            continue
        ratio = spread([a / b for a, b in zip(samples[r["impl"]], ref, strict=True)])
        r["time_vs_gpukit"] = ratio.median
        r["time_vs_gpukit_range"] = [ratio.low, ratio.high]
        r["time_vs_gpukit_spread"] = ratio.rel_stdev
        r["time_vs_gpukit_unstable"] = ratio.unstable
