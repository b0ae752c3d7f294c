"""Overhead of sharding on virtual CPU devices: sharded vs unsharded matmul, same run.

On this machine's cores the virtual devices cannot speed a BLAS call up (it already
uses every core), so what is measured is the cost sharding adds: the target is a
sharded 2048x2048 matmul over 2 virtual devices within 10% of the unsharded one
(ratio <= 1.10). Run from the repository root::

    python -m tools.compare.sharding
"""

from __future__ import annotations

import numpy as np

import gpukit as gk
from gpukit._select import registry as _registry

from .timing import compare, table


def main(n: int = 2048, devices: int = 2) -> float:
    backend = type(_registry.load("numpy"))(devices)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n))
    b = rng.standard_normal((n, n))
    with gk.use_backend(backend):
        sa = gk.shard(a)
        pair = compare(lambda: gk.sharding.matmul(sa, b), lambda: a @ b, repeats=7)
        err = np.linalg.norm(gk.to_numpy(gk.sharding.matmul(sa, b)) - a @ b) / np.linalg.norm(a @ b)
    label = f"sharded matmul {n}x{n} float64, {devices} virtual devices"
    print(table([(label, pair, "ratio <= 1.10")]))
    print(f"relative error vs unsharded: {err:.1e}")
    return pair.ratio


if __name__ == "__main__":
    main()
