"""Steps of the real-GPU lane that need Python (tools/gpu_lane.sh runs them).

    python tools/gpu_lane.py versions           # Python, NumPy, SciPy, CuPy, CUDA, devices
    python tools/gpu_lane.py ceilings OUT.json   # copy GB/s, float32 and TF32 matmul TFLOP/s
    python tools/gpu_lane.py cost OUT.json       # measured time per unit of issue 30's work
    python tools/gpu_lane.py summary OUT_DIR     # the dated Markdown record of a lane run

Timings use ``cupyx.profiler.benchmark`` (CUDA events around each call, after warm-up) on
inputs larger than the L2 cache, random (never zeros).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path


def _cuda(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}" if v else "none"


def versions() -> dict[str, str]:
    import numpy
    import scipy

    out = {"python": platform.python_version(), "numpy": numpy.__version__}
    out["scipy"] = scipy.__version__
    try:
        import cupy
    except ImportError as exc:
        out["cupy"] = f"not importable ({exc})"
        return out
    rt = cupy.cuda.runtime
    out |= {
        "cupy": cupy.__version__,
        "cuda_runtime": _cuda(rt.runtimeGetVersion()),
        "cuda_driver": _cuda(rt.driverGetVersion()),
    }
    for i in range(rt.getDeviceCount()):
        props = rt.getDeviceProperties(i)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        out[f"device{i}"] = f"{name}, {props['totalGlobalMem'] / 2**30:.1f} GiB"
    try:
        import torch

        out["torch"] = f"{torch.__version__} (CUDA {torch.version.cuda})"
    except ImportError:
        out["torch"] = "not installed"
    return out


def _seconds(fn, *args) -> float:
    from cupyx.profiler import benchmark

    result = benchmark(fn, args, n_repeat=20, n_warmup=5)
    return float(sorted(result.gpu_times[0])[len(result.gpu_times[0]) // 2])  # median


def ceilings() -> dict[str, float]:
    """The device's copy rate and float32/TF32 cuBLAS matmul rates, measured now."""
    import cupy
    from cupy._core import _routines_linalg as blas

    rng = cupy.random.default_rng(0)
    # 2 GiB and 8192^2: far beyond any L2 cache; GPU_LANE_QUICK=1 for a dry run of the lane
    quick = os.environ.get("GPU_LANE_QUICK") == "1"
    nbytes = 2**26 if quick else 2 * 2**30
    src = rng.standard_normal(nbytes // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    copy_s = _seconds(cupy.copyto, dst, src)
    n = 512 if quick else 8192
    a = rng.standard_normal((n, n), dtype=cupy.float32)
    b = rng.standard_normal((n, n), dtype=cupy.float32)
    f32 = cupy.dtype(cupy.float32)
    previous = blas.get_compute_type(f32)
    rates = {"copy_GBps": 2 * nbytes / copy_s / 1e9}  # bytes read plus written
    for label, compute in (("matmul_f32_TFLOPs", previous), ("matmul_tf32_TFLOPs", None)):
        blas.set_compute_type(f32, blas.COMPUTE_TYPE_TF32 if compute is None else compute)
        try:
            rates[label] = 2 * n**3 / _seconds(cupy.matmul, a, b) / 1e12
        finally:
            blas.set_compute_type(f32, previous)
    return rates


def _per_unit(
    run, lo: int, hi: int, sync, pairs: int = 9, clock=None
) -> tuple[float, float, float]:
    """Seconds per unit of ``run(k)`` in steady state, host clock around a device
    synchronisation (so launch overhead and host syncs are in it; CUDA events would hide
    the host's share): ``(median, q1, q3)`` of ``(t(hi) - t(lo)) / (hi - lo)`` over
    ``pairs`` interleaved pairs of runs.

    Interleaved pairs, not the difference of two medians: on a machine whose speed moves
    between the two series (a VM), a difference of medians came out negative
    (2026-11-26-h200.md); a pair's runs see the same machine, and the quartiles say how
    far the pairs agree."""
    clock = clock or time.perf_counter
    run(hi)  # warm up: kernels compiled, plans made, the pool grown
    sync()

    def timed(k: int) -> float:
        start = clock()
        run(k)
        sync()
        return clock() - start

    slopes = []
    for _ in range(pairs):
        t_lo = timed(lo)
        slopes.append((timed(hi) - t_lo) / (hi - lo))
    slopes.sort()
    return slopes[pairs // 2], slopes[pairs // 4], slopes[(3 * pairs) // 4]


def _row(key: str, span: tuple[float, float, float]) -> dict[str, float | list[float]]:
    """``{key: median, key_quartiles: [q1, q3]}`` in microseconds."""
    median, q1, q3 = (v * 1e6 for v in span)
    return {key: median, f"{key}_quartiles": [q1, q3]}


def cost() -> dict[str, dict[str, float | str]]:
    """The measured time of one unit of each single-device workload of
    ``asv_bench/gpu_cost.py`` (the ones the simulator counts), on the real CuPy, and of
    the same unit in its peer library (``gpu_cost.PEERS``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "asv_bench"))
    import cupy
    import gpu_cost  # the workloads live with the benchmarks

    import gpukit as gk

    gk.set_backend("cupy")
    results: dict[str, dict[str, float | str]] = {}
    for name, build in gpu_cost.WORKLOADS.items():
        try:
            run, unit = build(gk)
        except NotImplementedError as exc:  # 2 devices, Dask: not on this machine
            results[name] = {"skipped": str(exc)}
            continue
        lo, hi = gpu_cost.SPAN.get(name, gpu_cost.DEFAULT_SPAN)
        hi = lo + 4 * (hi - lo)  # a longer span than the counts' for a steadier time
        row: dict[str, float | str] = {"unit": unit}
        row.update(_row("us_per_unit", _per_unit(run, lo, hi, gk.synchronize)))
        if name in gpu_cost.PEERS:
            peer, make = gpu_cost.PEERS[name]
            try:
                sync = cupy.cuda.get_current_stream().synchronize
                if name == "mlp_step":
                    import torch

                    sync = torch.cuda.synchronize
                row["peer"] = peer
                row.update(_row("peer_us_per_unit", _per_unit(make(), lo, hi, sync)))
            except Exception as exc:  # a peer missing here must not lose gpukit's row
                row["peer"] = f"{peer}: {type(exc).__name__}: {exc}"
        results[name] = row
        print(f"{name:20s} {row}", flush=True)
    return results


def _tests(out: Path) -> str:
    xml = out / "tests.xml"
    if not xml.is_file():
        return "no test report (tests.xml missing)"
    suite = ET.parse(xml).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    total, failed = int(suite.get("tests", 0)), int(suite.get("failures", 0))
    errors, skipped = int(suite.get("errors", 0)), int(suite.get("skipped", 0))
    passed = total - failed - errors - skipped
    return f"{passed} passed, {failed} failed, {errors} errors, {skipped} skipped"


def _sanitizer(out: Path) -> list[str]:
    rows = []
    for log in sorted(out.glob("sanitizer-*.log")):
        text = log.read_text()
        verdict = "clean" if "ERROR SUMMARY: 0 errors" in text else "ERRORS (see log)"
        if log.stem == "sanitizer-missing":
            verdict = "not run: compute-sanitizer not found"
        rows.append(f"| {log.stem.removeprefix('sanitizer-')} | {verdict} |")
    return rows


def _bench(out: Path, ceil: dict[str, float]) -> list[str]:
    results, missing = [], []
    for path in sorted(out.glob("bench-*.json")):
        try:
            results += json.loads(path.read_text()).get("results", [])
        except (OSError, ValueError):  # a case cut short by its time limit
            missing.append(path.stem.removeprefix("bench-"))
    if not results:
        return ["no benchmark report (bench-*.json missing or unreadable)"]
    rows = [f"Cut short (no report): {', '.join(missing)}.", ""] if missing else []
    rows += ["| case | size | impl | time | throughput | of ceiling |", "|---|---|---|---|---|---|"]
    for r in results:
        if r.get("device") != "gpu":
            continue
        unit = r["unit"]
        limit = ceil.get("copy_GBps") if unit == "GB/s" else 1e3 * ceil.get("matmul_f32_TFLOPs", 0)
        frac = f"{r['throughput'] / limit:.0%}" if limit else "n/a"
        rows.append(
            f"| {r['case']} | {r['shape']} | {r['impl']} | {r['seconds'] * 1e3:.3f} ms "
            f"| {r['throughput']:.1f} {unit} | {frac} |"
        )
    return rows


def _cost(out: Path) -> list[str]:
    try:
        report = json.loads((out / "cost.json").read_text())
    except (OSError, ValueError):
        return ["no GPU-cost timings (cost.json missing or unreadable)"]
    rows = ["| workload | gpukit per unit | peer | peer per unit |", "|---|---|---|---|"]
    for name, r in report.items():
        if "unit" not in r:
            rows.append(f"| {name} | {r['skipped']} | | |")
            continue
        peer = _timing(r, "peer_us_per_unit") if "peer_us_per_unit" in r else ""
        rows.append(
            f"| {name} | {_timing(r, 'us_per_unit')} per {r['unit']} | {r.get('peer', '')} "
            f"| {peer} |"
        )
    return rows


def _timing(row: dict, key: str) -> str:
    """``median us (q1-q3)``, marked unstable where the pairs' middle half spans more than
    half the median or crosses zero (a cost.json of an older lane has no quartiles)."""
    median = row[key]
    quartiles = row.get(f"{key}_quartiles")
    if quartiles is None:
        return f"{median:,.1f} us"
    q1, q3 = quartiles
    unstable = q1 <= 0 or median <= 0 or (q3 - q1) > 0.5 * median
    return f"{median:,.1f} us ({q1:,.1f}-{q3:,.1f}){' unstable' if unstable else ''}"


def summary(out: Path) -> str:
    env = (out / "env.txt").read_text() if (out / "env.txt").is_file() else "(missing)"
    try:
        ceil = json.loads((out / "ceilings.json").read_text())
    except (OSError, ValueError):
        ceil = {}
    lines = [
        f"# GPU lane record, {datetime.date.today().isoformat()}",
        "",
        "Produced by `bash tools/gpu_lane.sh` (shared/GPU.md); raw logs beside this file.",
        "",
        "## Environment",
        "",
        "```text",
        env.strip(),
        "```",
        "",
        "## Ceilings measured in this run",
        "",
        *(f"- {k}: {v:.1f}" for k, v in ceil.items()),
        "",
        "## Test suite (GPUKIT_BACKEND=cupy)",
        "",
        _tests(out),
        "",
        "## compute-sanitizer memcheck, one run per kernel",
        "",
        "| kernel | verdict |",
        "|---|---|",
        *_sanitizer(out),
        "",
        "## GPU cost: measured time per unit of work (the simulator counts the same units)",
        "",
        *_cost(out),
        "",
        "## Benchmarks (GPU rows; fraction of the copy or float32 matmul ceiling)",
        "",
        *_bench(out, ceil),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["versions"]:
        for key, value in versions().items():
            print(f"{key:14s} {value}")
    elif argv[:1] == ["ceilings"] and len(argv) == 2:
        rates = ceilings()
        Path(argv[1]).write_text(json.dumps(rates, indent=2))
        print(json.dumps(rates, indent=2))
    elif argv[:1] == ["cost"] and len(argv) == 2:
        Path(argv[1]).write_text(json.dumps(cost(), indent=2))
    elif argv[:1] == ["summary"] and len(argv) == 2:
        print(summary(Path(argv[1])))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
