"""Timed pieces of ``gk.kernels.sgd_update`` on real CuPy, with no backend selected.

Session 14's probe (run13.sh, run14.sh): ``python3 gpuparts.py`` from the checkout's
root with ``GPUKIT_BACKEND=cupy`` and the checkout on ``PYTHONPATH``.
"""

import timeit

import cupy
import numpy as np

import gpukit as gk
from gpukit._select.selection import active
from gpukit.kernels._checks import PLANS, check_updatable
from gpukit_cupy.kernels import _elementwise as ew

try:
    from gpukit.kernels._checks import _span
except ImportError:  # 9c743d6: one _spans for all arrays

    def _span(x):
        from gpukit.kernels._checks import _spans

        return _spans([x], 1)


f32 = np.float32
p, g = cupy.asarray(np.ones(64, f32)), cupy.asarray(np.ones(64, f32))
m, v = cupy.zeros(64, f32), cupy.zeros(64, f32)
sgd = ew.sgd_plain(False)
op = "gk.kernels.sgd_update"
gk.kernels.sgd_update(p, g, lr=1e-9)
gk.kernels.sgd_update(p, g, lr=1e-9)
found = [k for k in PLANS if k[0] == op]
print("plan keys:", found)
run = PLANS[found[0]]
raw = gk.kernels.sgd_update.__wrapped__
statements = {
    "gk sgd_update": lambda: gk.kernels.sgd_update(p, g, lr=1e-9),
    "front fn (__wrapped__)": lambda: raw(p, g, lr=1e-9),
    "peer": lambda: sgd(g, f32(1e-9), f32(0.0), p),
    "bound run": lambda: run(p, g, None, 1e-9, 0.0, 0.0, False, 0.0, False),
    "key tuple": lambda: (
        op,
        active(),
        type(p),
        p.dtype,
        p.shape,
        type(g),
        g.dtype,
        g.shape,
        type(None),
        None,
    ),
    "PLANS[key]": lambda: PLANS[found[0]],
    "check_updatable": lambda: check_updatable(
        op, {"param": p, "momentum_buffer": None}, {"grad": g}
    ),
    "p.flags": lambda: p.flags,
    "p.flags.c_contiguous": lambda: p.flags.c_contiguous,
    "_span(p)": lambda: _span(p),
    "p.data": lambda: p.data,
    "p.data.ptr": lambda: p.data.ptr,
    "p.nbytes": lambda: p.nbytes,
    "p.shape": lambda: p.shape,
    "p.dtype": lambda: p.dtype,
    "f32(1e-9)": lambda: f32(1e-9),
    "cupy.cuda.Device()": lambda: cupy.cuda.Device(),
    "getDevice": lambda: cupy.cuda.runtime.getDevice(),
    "gk adam_update": lambda: gk.kernels.adam_update(p, g, m, v, step=1, lr=1e-9),
    "adam __wrapped__": lambda: gk.kernels.adam_update.__wrapped__(p, g, m, v, step=1, lr=1e-9),
    "empty": lambda: None,
}
sync = cupy.cuda.Device().synchronize
for name, f in statements.items():
    for _ in range(200):
        f()
    times = []
    for _ in range(7):
        sync()
        times.append(timeit.timeit(f, number=1000) / 1000)
    print(f"{min(times) * 1e6:9.3f} us  {name}")
