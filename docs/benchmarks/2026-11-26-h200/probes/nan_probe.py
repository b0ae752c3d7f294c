"""Probe: what cuSOLVER and gpukit do with a NaN/inf matrix (check_finite=False)."""

import cupy
import cupyx
import numpy as np

import gpukit as gk
from gpukit import get_backend

rng = np.random.default_rng(0)
m = rng.standard_normal((4, 4))
a = m @ m.T + 4 * np.eye(4)
be = get_backend()
orig = type(be).linalg_all_finite


def traced(self, x):
    r = orig(self, x)
    print(f"    all_finite(shape={x.shape}) -> {r}")
    return r


type(be).linalg_all_finite = traced
for val, idx in [
    (np.nan, (0, 0)),
    (np.inf, (0, 0)),
    (np.nan, (1, 2)),
    (np.nan, (2, 1)),
    (np.nan, (3, 3)),
]:
    bad = a.copy()
    bad[idx] = val
    for name in ("inv", "cholesky"):
        for mode in ("ignore", "raise"):
            try:
                with cupyx.errstate(linalg=mode):
                    out = getattr(cupy.linalg, name)(cupy.asarray(bad))
                print(
                    f"cupy.linalg.{name} {val}@{idx} {mode}: finite={bool(cupy.isfinite(out).all())} {cupy.asnumpy(out).ravel()[:6]}"
                )
            except Exception as e:
                print(f"cupy.linalg.{name} {val}@{idx} {mode}: {type(e).__name__}: {e}")
        for attempt in ("cold", "warm"):
            print(f"  gk.linalg.{name} {val}@{idx} {attempt}:")
            try:
                out = getattr(gk.linalg, name)(cupy.asarray(bad), check_finite=False)
                print(
                    f"    returned finite={bool(cupy.isfinite(out).all())} {cupy.asnumpy(out).ravel()[:6]}"
                )
            except Exception as e:
                print(f"    {type(e).__name__}: {e}")
