"""This machine's measured ceilings, per device: a large copy (GB/s), a large matmul (GFLOP/s).

The fraction of a ceiling a case reaches says how far it is from what the hardware
does at best with the same library stack -- the honest scale for "fast".
"""

from __future__ import annotations

from .runners import Runner
from .timing import Budget, measure

# (copy MiB, matmul n) per device, for --quick and for the default run
SIZES = {
    ("cpu", True): (128, 1024),
    ("cpu", False): (512, 2048),
    ("gpu", True): (512, 4096),
    ("gpu", False): (2048, 8192),
}


def measure_ceilings(r: Runner, quick: bool, budget: Budget) -> dict[str, float]:
    """``{"GB/s": copy rate, "GFLOP/s": float32 matmul rate}`` of runner ``r``'s device."""
    mib, n = SIZES[(r.device, quick)]
    xp = r.xp
    copy_s = measure(_copy(r, mib), r.sync, budget)
    a, b = r.put(_random((n, n))), r.put(_random((n, n)))
    mm_s = measure(lambda: xp.matmul(a, b), r.sync, budget)
    return {"GB/s": 2 * mib * 2**20 / copy_s / 1e9, "GFLOP/s": 2 * n**3 / mm_s / 1e9}


def _copy(r: Runner, mib: int):
    src, dst = r.put(_random(mib * 2**20 // 4)), r.put(_random(mib * 2**20 // 4))
    if r.family == "torch":
        return lambda: dst.copy_(src)
    return lambda: r.xp.copyto(dst, src)


def _random(shape):
    import numpy as np

    # random, not ones: some hardware is faster on constant data
    return np.random.default_rng(0).standard_normal(shape).astype("float32")
