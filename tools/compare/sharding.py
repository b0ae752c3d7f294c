"""Sharding on virtual CPU devices against the unsharded call, same run.

On this machine's cores the virtual devices cannot speed a BLAS call or an FFT up (each
already uses every core), so what is measured is the cost sharding adds:

* a sharded 2048x2048 matmul over 2 virtual devices, target within 10% of the unsharded
  one (ratio <= 1.10);
* the distributed ``fft2`` of a 2048x2048 complex64 array split along its rows, with and
  without ``transposed_out``, against ``gk.fft.fft2`` of the whole array (same engine);
* ``gk.reshard`` of a 2048x4096 float32 array from rows to columns against one copy of
  the whole array (the same bytes written).

Run from the repository root::

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
    z = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64)
    r = rng.standard_normal((n, 2 * n)).astype(np.float32)
    with gk.use_backend(backend):
        sa, sz, sr = gk.shard(a), gk.shard(z), gk.shard(r)
        matmul = compare(lambda: gk.sharding.matmul(sa, b), lambda: a @ b, repeats=7)
        err = np.linalg.norm(gk.to_numpy(gk.sharding.matmul(sa, b)) - a @ b) / np.linalg.norm(a @ b)
        fft = compare(lambda: gk.fft.fft2(sz), lambda: gk.fft.fft2(z), repeats=7)
        fft_t = compare(
            lambda: gk.sharding.fft2(sz, transposed_out=True), lambda: gk.fft.fft2(z), repeats=7
        )
        move = compare(lambda: gk.reshard(sr, axis=1), r.copy, repeats=7)
    where = f"{devices} virtual devices"
    print(table([
        (f"sharded matmul {n}x{n} float64, {where}", matmul, "ratio <= 1.10"),
        (f"fft2 {n}x{n} complex64 split rows, {where}", fft, "vs unsharded fft2"),
        ("  transposed_out=True", fft_t, "vs unsharded fft2"),
        (f"reshard {n}x{2 * n} float32 rows->cols, {where}", move, "vs one copy"),
    ]))  # fmt: skip
    print(f"matmul relative error vs unsharded: {err:.1e}")
    return matmul.ratio


if __name__ == "__main__":
    main()
