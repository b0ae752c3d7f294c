"""Split work over every device: sharded matmul and batched FFT, checked against one device.

Runs on all GPUs present, or on virtual CPU devices::

    GPUKIT_BACKEND=numpy GPUKIT_CPU_DEVICES=4 python examples/multi_device.py
"""

from __future__ import annotations

import numpy as np

import gpukit as gk


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"backend {gk.get_backend().name}, devices: {[str(d) for d in gk.devices()]}")

    a = rng.standard_normal((1000, 512)).astype(np.float32)
    b = rng.standard_normal((512, 256)).astype(np.float32)
    sa = gk.shard(a, axis=0)
    print(f"rows per device: {dict(zip(sa.devices, sa.sizes, strict=True))}")

    c = gk.sharding.matmul(sa, b)
    ref = a.astype(np.float64) @ b
    err = np.linalg.norm(gk.to_numpy(c) - ref) / np.linalg.norm(ref)
    print(f"sharded matmul {a.shape} @ {b.shape}: rel. error vs float64 one-device {err:.1e}")

    signals = gk.shard(rng.standard_normal((64, 4096)).astype(np.float32), axis=0)
    spectra = gk.sharding.rfft(signals, axis=1)
    ref = np.fft.rfft(gk.to_numpy(signals).astype(np.float64), axis=1)
    err = np.linalg.norm(gk.to_numpy(spectra) - ref) / np.linalg.norm(ref)
    print(f"sharded batched rfft {signals.shape} -> {spectra.dtype}: rel. error {err:.1e}")

    total = gk.sharding.norm(sa)
    print(f"norm of a: sharded {float(total):.6f}, one device {np.linalg.norm(a):.6f}")


if __name__ == "__main__":
    main()
