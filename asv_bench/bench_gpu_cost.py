"""GPU cost per unit of work, counted on the CuPy simulator: the counts in the history.

For each workload of ``gpu_cost.WORKLOADS`` (issue 30's list: the MLP training step, a
DataParallel step on 2 devices, a cg/bicgstab/minres iteration and a GMRES Arnoldi step,
fft2 of 16x512x512 complex64, a sharded matmul on 2 devices, solve 1000, a Dask matmul on
CuPy chunks), the steady-state device operations, host syncs, host<->device copies and pool
misses of one unit, and the *estimated* microseconds on an H100 and an H200
(``cupysim.estimate``: counts times datasheet constants, not a measurement). Counts are
exact and deterministic, so any change in the history is a change in the code.

Runs without a GPU: the simulator loads from ``tests/cupysim`` when the real CuPy is not
imported in the process; otherwise every benchmark here is skipped (NotImplementedError).
"""

from __future__ import annotations

from . import gpu_cost


class GPUCost:
    """Counts per unit of work (a step, an iteration, a transform), steady state."""

    params = list(gpu_cost.WORKLOADS)
    param_names = ["workload"]
    timeout = 600

    def setup_cache(self):
        try:
            gpu_cost.simulator()
        except NotImplementedError as exc:
            return {"skip": str(exc)}
        out = {}
        for name in gpu_cost.WORKLOADS:
            span = gpu_cost.SPAN.get(name, gpu_cost.DEFAULT_SPAN)
            try:
                s, t_lo, t_hi = gpu_cost.measure(name, span)
            except NotImplementedError as exc:
                out[name] = {"skip": str(exc)}
                continue
            row = {k: round(v, 6) for k, v in s.as_dict().items()}  # exact ratios, no 3.0999..
            for gpu in ("H100", "H200"):
                row[f"estimate_{gpu}"] = gpu_cost.estimate(t_lo, t_hi, span, gpu).total * 1e6
            out[name] = row
        return out

    def setup(self, cache, workload):
        row = cache.get(workload) if "skip" not in cache else cache
        if row is None or "skip" in row:
            raise NotImplementedError(row["skip"] if row else f"{workload} was not measured")

    def track_device_ops(self, cache, workload):
        return cache[workload]["device_ops"]

    def track_host_syncs(self, cache, workload):
        return cache[workload]["syncs"]

    def track_host_device_copies(self, cache, workload):
        row = cache[workload]
        return row["h2d_copies"] + row["d2h_copies"]

    def track_pool_misses(self, cache, workload):
        return cache[workload]["pool_misses"]

    def track_estimated_us_h100(self, cache, workload):
        return cache[workload]["estimate_H100"]

    def track_estimated_us_h200(self, cache, workload):
        return cache[workload]["estimate_H200"]

    track_device_ops.unit = "operations"
    track_host_syncs.unit = "syncs"
    track_host_device_copies.unit = "copies"
    track_pool_misses.unit = "misses"
    track_estimated_us_h100.unit = "us (estimate)"
    track_estimated_us_h200.unit = "us (estimate)"
