"""Where an nn layer's host time goes on real CuPy: each layer of the call timed alone,
then cProfile of whole rows.

Session 17's probe (run16.sh): ``python3 nnprof.py`` from the checkout's root with
``GPUKIT_BACKEND=cupy`` and the checkout on ``PYTHONPATH``.
"""

import contextlib
import cProfile
import io
import pstats
import sys
import timeit

import cupy
import numpy as np

import gpukit as gk
import gpukit_cupy.kernels as ck
from asv_bench import calls
from gpukit import _dispatch
from gpukit._dispatch import dtypes as _dtypes
from gpukit._dispatch.kinds import kind_of
from gpukit.kernels._direct import kernel
from gpukit.nn import _act
from gpukit.nn.module import _call, on_device_of
from gpukit_cupy.kernels import _elementwise as ew

gk.get_backend()
sync = cupy.cuda.Device().synchronize


def best(f, n=2000):
    """The best of 7 blocks of ``n`` calls, in ns per call."""
    for _ in range(200):
        f()
    times = []
    for _ in range(7):
        sync()
        times.append(timeit.timeit(f, number=n) / n)
    return min(times) * 1e9


x = cupy.asarray(np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32))
g = cupy.asarray(np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32))
relu = gk.nn.ReLU()
relu(x)
k = ew.act_forward("relu")
kb = ew.act_backward("relu", False)
s = np.float32(0)
null = contextlib.nullcontext()
pieces = {
    "peer: kernel(x, s)": lambda: k(x, s),
    "peer: kernel(x, 0.0) (a Python float)": lambda: k(x, 0.0),
    "ck.activation(x, 'relu', 0.0)": lambda: ck.activation(x, "relu", 0.0),
    "_direct.kernel(x, 'activation') look-up": lambda: kernel(x, "activation"),
    "_act._device_forward": lambda: _act._device_forward(x, None, "relu", 0.0),
    "_act.forward": lambda: _act.forward("relu", x, None, 0.0, overwrite=False),
    "relu.forward(x)": lambda: relu.forward(x),
    "_call(relu, x)": lambda: _call(relu, x),
    "relu(x)": lambda: relu(x),
    "x.data.device_id": lambda: x.data.device_id,
    "cupy.cuda.runtime.getDevice()": cupy.cuda.runtime.getDevice,
    "x.dtype.type(0.0)": lambda: x.dtype.type(0.0),
    "x.dtype": lambda: x.dtype,
    "x.shape": lambda: x.shape,
    "_dispatch.owner_of(x)": lambda: _dispatch.owner_of(x),
    "kind_of(x)": lambda: kind_of(x),
    "hasattr(x, 'dtype')": lambda: hasattr(x, "dtype"),
    "_dtypes.check": lambda: _dtypes.check("gk.nn.ReLU", "x", x),
    "relu._anchor()": relu._anchor,
    "on_device_of(x) enter/exit": lambda: on_device_of(x).__enter__(),
    "nullcontext enter/exit": lambda: null.__exit__(None, None, null.__enter__()),
    "peer backward: kernel(g, x, s)": lambda: kb(g, x, s),
    "relu.backward(g)": lambda: relu.backward(g),
    "ck.activation_backward": lambda: ck.activation_backward(g, x, "relu", 0.0, False),
}
print("### ReLU 4x8 float32, pieces (ns per call, best of 7 x 2000)")
for label, f in pieces.items():
    print(f"{best(f):9.0f}  {label}")

rows = {label: (a, b) for label, a, b in calls.rows(cupy)}
for label in sys.argv[1:] or [
    "nn.ReLU forward 4x8",
    "nn.ReLU backward 4x8",
    "nn.CrossEntropyLoss 4x8",
    "nn.Linear 4x8 forward",
    "nn.LayerNorm forward 4x8",
    "nn.MSELoss 4x8",
]:
    ours, peer = rows[label]
    t_ours, t_peer = best(ours, 500), best(peer, 500)
    print(
        f"### {label}: gk {t_ours / 1e3:.2f} us, peer {t_peer / 1e3:.2f} us, "
        f"over {(t_ours - t_peer) / 1e3:+.2f}"
    )
    for f, who in ((ours, "gk"), (peer, "peer")):
        profile = cProfile.Profile()
        sync()
        profile.enable()
        for _ in range(2000):
            f()
        profile.disable()
        sync()
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(22)
        lines = [line for line in out.getvalue().splitlines() if line.strip()]
        print(f"-- cProfile {who}:")
        print("\n".join(lines[3:]))
