"""``gpukit bench``'s report as the plain-text table it prints."""

from __future__ import annotations

from typing import Any

from .timing import UNSTABLE_EXTREME, UNSTABLE_STDEV


def _time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _share(r: dict[str, Any]) -> str:
    if r["fraction_of_ceiling"] is None:
        return "-"
    if r["above_ceiling"]:
        return ">100%?"  # no share: a measurement problem, explained under the table
    return f"{100 * r['fraction_of_ceiling']:.0f}%"


def _pm(rel: float | None, unstable: bool | None) -> str:
    """A relative spread as ``4%``, marked ``!`` when pyperf's rules call it unstable."""
    return "-" if rel is None else f"{100 * rel:.0f}%{'!' if unstable else ''}"


def render(report: dict[str, Any]) -> str:
    """The report as a table: time and its spread, throughput, share of the ceiling, vs gpukit.

    Unstable figures are marked ``!`` and a share above the measured ceiling prints as
    ``>100%?``, never as a percentage; warnings under the table count both and say why.
    """
    m = report["machine"]
    gpu = f", GPU {m['gpu']}" if m["gpu"] else ", no GPU"
    quick = " --quick" if report["quick"] else ""
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    lines = [f"gpukit bench{quick}: {m['processor']} ({m['cpu_count']} cores){gpu}; {versions}"]
    lines += ["", "Ceilings measured now (float32, best block):"]
    for device, c in report["ceilings"].items():
        by = c["measured_by"]
        lines.append(
            f"  {device}: copy {c['GB/s']:.1f} GB/s ({by['GB/s']}), "
            f"matmul {c['GFLOP/s']:.1f} GFLOP/s ({by['GFLOP/s']})"
        )
    header = (
        f"{'case':<10} {'problem':<34} {'impl':<13} {'time':>9} {'+-':>5} {'throughput':>16} "
        f"{'ceiling':>7} {'vs gk':>6} {'+-':>5}"
    )
    lines += ["", header, "-" * len(header)]
    previous = None
    results = report["results"]
    for r in results:
        if previous is not None and (r["case"], r["size"]) != previous:
            lines.append("")
        previous = (r["case"], r["size"])
        ratio = "-" if r["time_vs_gpukit"] is None else f"{r['time_vs_gpukit']:.2f}"
        lines.append(
            f"{r['case']:<10} {r['shape']:<34} {r['impl']:<13} {_time(r['seconds']):>9} "
            f"{_pm(r['spread'], r['unstable']):>5} {r['throughput']:>8.2f} {r['unit']:<7} "
            f"{_share(r):>7} {ratio:>6} "
            f"{_pm(r['time_vs_gpukit_spread'], r['time_vs_gpukit_unstable']):>5}"
        )
    blocks = sorted({r["blocks"] for r in results}) or [0]
    per = str(blocks[0]) if len(blocks) == 1 else f"{blocks[0]}-{blocks[-1]}"
    lines += [
        "",
        f"time: median of {per} blocks per row, the implementations taking turns block by block;",
        "  +-: the blocks' standard deviation over their mean",
        "ceiling: share of this device's copy (GB/s) or matmul (GFLOP/s) rate measured above",
        "vs gk: time over gpukit's on the same device, median over the turns (above 1: gpukit",
        "  is faster); +-: the spread of those per-turn ratios",
        f"!: unstable by pyperf's rules (+- over {100 * UNSTABLE_STDEV:.0f}%, or a block "
        f"{100 * UNSTABLE_EXTREME:.0f}% or more off the mean)",
    ]
    if report["skipped"]:
        lines += ["", "Not run:"]
        for s in report["skipped"]:
            where = f"{s['case']} on {s['impl']}" if s["case"] else s["impl"]
            lines.append(f"  {where}: {s['reason']}")
    lines += _warnings(results)
    return "\n".join(lines)


def _warnings(results: list[dict[str, Any]]) -> list[str]:
    """What the table must not be read for: unstable figures, shares above the ceiling."""
    unstable = sum(bool(r["unstable"] or r["time_vs_gpukit_unstable"]) for r in results)
    above = sum(r["above_ceiling"] for r in results)
    lines = []
    if unstable:
        lines += [
            "",
            f"WARNING: {unstable} of {len(results)} rows are unstable (!): their blocks disagree,",
            "  so the machine was busy while they ran; read those times and ratios as noise, not",
            "  as a result, and rerun on an idle machine (without --quick for longer blocks)",
        ]
    if above:
        lines += [
            "",
            f"WARNING: {above} of {len(results)} rows run above the measured ceiling (>100%?),",
            "  which no real share does: the ceiling was measured low (a busy machine) or the",
            "  case's data sat in a cache the ceiling's large copy does not fit; no share is",
            "  printed for them",
        ]
    return lines
