"""gpukit's showcase, the README's main job: one tour of the library on the default backend.

    python examples/showcase.py

The backend is whatever ``GPUKIT_BACKEND`` selects (``auto``: a usable GPU, else the CPU);
nothing in this file names one. Each part checks its own result against an independent
reference and the script exits non-zero if any check fails:

1. a spectral Poisson solve (``gk.fft``),
2. a Poisson solve with conjugate gradients on a sparse Laplacian (``gk.linalg.cg``),
3. a dense symmetric positive definite solve by Cholesky, checked in float64 on the host,
4. an MLP trained on scikit-learn's bundled digits (``gk.nn``, ``gk.optim``, ``gk.kernels``),
5. what moved between host and device, and what the device holds.
"""

from __future__ import annotations

import sys
import time

import digits_mlp  # the sibling examples: this script's folder is on sys.path
import numpy as np
import poisson_cg
import poisson_fft

import gpukit as gk


def section(title: str) -> None:
    print(f"\n== {title}")


def dense_solve(n: int = 1024) -> bool:
    rng = np.random.default_rng()
    m = rng.standard_normal((n, n))
    a_host = (m @ m.T / n + np.eye(n)).astype(np.float32)  # SPD, well conditioned
    b_host = rng.standard_normal(n).astype(np.float32)
    a, b = gk.asarray(a_host), gk.asarray(b_host)
    gk.linalg.solve(a, b, assume_a="pos")  # warm up
    gk.synchronize()
    t0 = time.perf_counter()
    x = gk.linalg.solve(a, b, assume_a="pos")
    gk.synchronize()
    elapsed = time.perf_counter() - t0
    reference = np.linalg.solve(a_host.astype(np.float64), b_host.astype(np.float64))
    error = np.linalg.norm(gk.to_numpy(x) - reference) / np.linalg.norm(reference)
    print(
        f"{n}x{n} float32 SPD solve (Cholesky) in {elapsed * 1e3:.1f} ms, "
        f"relative error vs float64 reference {error:.1e}"
    )
    return bool(error < 1e-4)


def main() -> int:
    backend = gk.get_backend()
    device = gk.devices()[0]
    print(f"gpukit {gk.__version__} on backend {backend.name!r}: {gk.selection_reason()}")
    print(f"device {device}: {device.name}")
    gk.reset_transfer_stats()
    ok = True

    section("1. Spectral Poisson solve, 256x256 (gk.fft)")
    ok &= poisson_fft.main(256) == 0

    section("2. Conjugate gradients on a sparse 128x128-grid Laplacian (gk.linalg.cg)")
    try:
        poisson_cg.main(128)
    except SystemExit as exc:  # the example exits with a message when its check fails
        print(exc)
        ok = False

    section("3. Dense solve (gk.linalg.solve, assume_a='pos')")
    ok &= dense_solve()

    section("4. MLP on the digits data set (gk.nn, gk.optim)")
    accuracy = digits_mlp.main()
    ok &= accuracy >= 0.97

    section("5. Transfers and memory")
    stats = gk.transfer_stats()
    print(
        f"host->device: {stats.host_to_device.calls} transfers, {stats.host_to_device.bytes:,} "
        f"bytes; device->host: {stats.device_to_host.calls}, {stats.device_to_host.bytes:,} bytes"
    )
    print(gk.memory_stats())

    print("\nall checks passed" if ok else "\nSOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
