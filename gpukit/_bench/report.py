"""``gpukit bench``'s report as the plain-text table it prints."""

from __future__ import annotations

from typing import Any


def _time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def render(report: dict[str, Any]) -> str:
    """The report as a table: time, throughput, fraction of the device's ceiling, vs gpukit."""
    m = report["machine"]
    gpu = f", GPU {m['gpu']}" if m["gpu"] else ", no GPU"
    quick = " --quick" if report["quick"] else ""
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    lines = [f"gpukit bench{quick}: {m['processor']} ({m['cpu_count']} cores){gpu}; {versions}"]
    lines += ["", "Ceilings measured now (float32):"]
    for device, c in report["ceilings"].items():
        by = c["measured_by"]
        lines.append(
            f"  {device}: copy {c['GB/s']:.1f} GB/s ({by['GB/s']}), "
            f"matmul {c['GFLOP/s']:.1f} GFLOP/s ({by['GFLOP/s']})"
        )
    header = (
        f"{'case':<10} {'problem':<34} {'impl':<13} {'time':>9} {'throughput':>16} "
        f"{'ceiling':>8} {'vs gk':>6}"
    )
    lines += ["", header, "-" * len(header)]
    previous = None
    for r in report["results"]:
        if previous is not None and (r["case"], r["size"]) != previous:
            lines.append("")
        previous = (r["case"], r["size"])
        frac = "-" if r["fraction_of_ceiling"] is None else f"{100 * r['fraction_of_ceiling']:.0f}%"
        ratio = "-" if r["time_vs_gpukit"] is None else f"{r['time_vs_gpukit']:.2f}"
        lines.append(
            f"{r['case']:<10} {r['shape']:<34} {r['impl']:<13} {_time(r['seconds']):>9} "
            f"{r['throughput']:>8.2f} {r['unit']:<7} {frac:>8} {ratio:>6}"
        )
    lines += [
        "",
        "ceiling: share of this device's copy (GB/s) or matmul (GFLOP/s) rate measured above",
        "vs gk: time over gpukit's time on the same device (above 1: gpukit is faster)",
    ]
    if report["skipped"]:
        lines += ["", "Not run:"]
        for s in report["skipped"]:
            where = f"{s['case']} on {s['impl']}" if s["case"] else s["impl"]
            lines.append(f"  {where}: {s['reason']}")
    return "\n".join(lines)
