"""Run the cases on every available runner and collect a JSON-ready report."""

from __future__ import annotations

import gc
import platform
import sys
from collections.abc import Sequence
from typing import Any

from .._select import registry as _registry
from .._version import __version__
from .cases import CASES, Case, Unsupported
from .ceilings import measure_ceilings
from .runners import NAMES, Runner, make
from .timing import FULL, QUICK, measure


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
        implementation) and ``skipped`` (what could not run, and why).

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
            for runner in runners:
                bar.set_postfix_str(f"{case.name} {size} {runner.name}")
                row = _time_one(case, size, runner, budget, ceilings, skipped)
                if row is not None:
                    rows.append(row)
                bar.update()
    bar.close()
    _add_ratios(rows)
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


def _time_one(case, size, runner, budget, ceilings, skipped) -> dict[str, Any] | None:
    try:
        with runner.scope():
            fn = case.build(runner, size)
            seconds = measure(fn, runner.sync, budget)
    except Unsupported as exc:
        reason = str(exc)
    except Exception as exc:  # a failing case is reported, and the others still run
        reason = f"failed: {type(exc).__name__}: {exc}"
    else:
        throughput = case.work(size) / seconds / 1e9
        ceiling = ceilings.get(runner.device, {}).get(case.unit)
        return {
            "case": case.name,
            "size": size,
            "shape": case.shape(size),
            "impl": runner.name,
            "device": runner.device,
            "seconds": seconds,
            "throughput": throughput,
            "unit": case.unit,
            "fraction_of_ceiling": throughput / ceiling if ceiling else None,
        }
    finally:
        fn = None
        gc.collect()  # free this case's arrays (device memory too) before the next
    entry = {"case": case.name, "impl": runner.name, "reason": reason}
    if entry not in skipped:
        skipped.append(entry)
    return None


def _add_ratios(rows: list[dict[str, Any]]) -> None:
    """``time_vs_gpukit``: a row's time over gpukit's on the same device, case and size."""
    key = lambda r: (r["case"], r["size"], r["device"])  # noqa: E731
    ours = {key(r): r["seconds"] for r in rows if r["impl"].startswith("gpukit")}
    for r in rows:
        ref = ours.get(key(r))
        r["time_vs_gpukit"] = r["seconds"] / ref if ref else None
