"""Same-run ratios for issue 3's matmul and FFT performance targets (numpy backend).

    PYTHONPATH=. python tools/compare/fft_matmul.py

Each row times gpukit against its peer with tools/compare/timing.py (interleaved,
idle pause between sides, median of per-pair ratios); ratio = gpukit / peer seconds.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import scipy.fft

import gpukit as gk
from tools.compare.timing import Pair, compare, table


def main() -> None:
    gk.set_backend("numpy")
    rng = np.random.default_rng(0)
    rows: list[tuple[str, Pair, str]] = []

    a8 = rng.standard_normal((8, 8)).astype(np.float32)
    rows.append(
        (
            "matmul 8x8 float32 vs numpy.matmul",
            compare(lambda: gk.matmul(a8, a8), lambda: np.matmul(a8, a8), repeats=9),
            "< 1.30",
        )
    )
    a512 = rng.standard_normal((512, 512)).astype(np.float32)
    rows.append(
        (
            "matmul 512 float32 vs numpy.matmul",
            compare(lambda: gk.matmul(a512, a512), lambda: np.matmul(a512, a512)),
            "< 1.05",
        )
    )

    shape = (16, 512, 512)
    x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    label = "fft2 16x512x512 c64"
    rows.append(
        (
            f"{label} vs numpy.fft",
            compare(lambda: gk.fft.fft2(x), lambda: np.fft.fft2(x), repeats=5, block=0.3),
            "< 0.333 (>= 3x faster)",
        )
    )
    rows.append(
        (
            f"{label} vs scipy.fft w=-1",
            compare(lambda: gk.fft.fft2(x), lambda: scipy.fft.fft2(x, workers=-1)),
            "< 1.05",
        )
    )
    if importlib.util.find_spec("torch"):
        import torch

        tx = torch.from_numpy(x)
        rows.append(
            (
                f"{label} vs torch CPU",
                compare(lambda: gk.fft.fft2(x), lambda: torch.fft.fft2(tx)),
                "",
            )
        )
    print(f"gpukit fft engine: {gk.fft.engine()}; {os.cpu_count()} cores")
    print(table(rows))


if __name__ == "__main__":
    main()
