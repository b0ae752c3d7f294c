"""Which part of an nn row's cost on real CuPy is the module call's machinery and which
its body: each row's whole call, its body alone and its peer, interleaved, then the
pieces the bodies are made of.

Session 17's probe (run17.sh): ``python3 nnprof2.py`` from the checkout's root with
``GPUKIT_BACKEND=cupy`` and the checkout on ``PYTHONPATH``.
"""

import timeit

import cupy
import numpy as np

import gpukit as gk
from asv_bench import calls
from gpukit.nn import losses
from gpukit.nn.module import _call, as_dtype, namespace_of, on_device_of

gk.get_backend()
sync = cupy.cuda.Device().synchronize


def best(f, n=1000):
    """The best of 5 blocks of ``n`` calls, in us per call."""
    for _ in range(100):
        f()
    times = []
    for _ in range(5):
        sync()
        times.append(timeit.timeit(f, number=n) / n)
    return min(times) * 1e6


f32 = np.float32
rng = np.random.default_rng(0)
x = cupy.asarray(rng.standard_normal((4, 8)).astype(f32))
g = cupy.asarray(rng.standard_normal((4, 8)).astype(f32))
t = cupy.asarray(rng.random((4, 8)).astype(f32))
labels = cupy.asarray(rng.integers(0, 8, 4))
rows = {label: (a, b) for label, a, b in calls.rows(cupy)}

soft, norm, drop = gk.nn.Softmax(), gk.nn.LayerNorm(8), gk.nn.Dropout(0.5, seed=0)
linear, relu = gk.nn.Linear(8, 8, seed=0), gk.nn.ReLU()
mse, xent, bce = gk.nn.MSELoss(), gk.nn.CrossEntropyLoss(), gk.nn.BCEWithLogitsLoss()
for m in (soft, norm, drop, linear, relu):
    m(x)
for loss, target in ((mse, t), (xent, labels), (bce, t)):
    loss(x, target)

# row label -> (the whole call, the body alone, on the current device)
SPLITS = {
    "nn.ReLU forward 4x8": (lambda: relu(x), lambda: relu.forward(x)),
    "nn.Softmax forward 4x8": (lambda: soft(x), lambda: soft.forward(x)),
    "nn.LayerNorm forward 4x8": (lambda: norm(x), lambda: norm.forward(x)),
    "nn.Dropout forward 4x8, training": (lambda: drop(x), lambda: drop.forward(x)),
    "nn.Linear 4x8 forward": (lambda: linear(x), lambda: linear.forward(x)),
    "nn.MSELoss 4x8": (lambda: mse(x, t), lambda: mse._forward(x, t)),
    "nn.CrossEntropyLoss 4x8": (lambda: xent(x, labels), lambda: xent._forward(x, labels)),
    "nn.BCEWithLogitsLoss 4x8": (lambda: bce(x, t), lambda: bce._forward(x, t)),
}
print("### whole call / body alone / peer, us per call (best of 5 x 1000), three rounds")
for label, (whole, body) in SPLITS.items():
    peer = rows[label][1]
    got = {"whole": [], "body": [], "peer": []}
    for _ in range(3):
        for name, f in (("whole", whole), ("body", body), ("peer", peer)):
            got[name].append(best(f))
    w, b, p = (min(v) for v in got.values())
    print(
        f"{label:36s} whole {w:7.2f}  body {b:7.2f}  peer {p:7.2f}  "
        f"machinery {w - b:+6.2f}  body over peer {b - p:+6.2f}"
    )

var = x.mean(axis=-1, keepdims=True)
d = x - t
st = xent._cache
pieces = {
    "_call(relu, x)": lambda: _call(relu, x),
    "with on_device_of(x): pass": lambda: on_device_of(x).__enter__(),
    "namespace_of(x)": lambda: namespace_of(x),
    "as_dtype(x, x.dtype)": lambda: as_dtype(x, x.dtype),
    "losses._call(mse, x, t)": lambda: losses._call(mse, x, t),
    "mse._prepare(x, t)": lambda: mse._prepare(x, t),
    "xent._check(x, labels)": lambda: xent._check(x, labels),
    "x.mean(axis=-1, keepdims=True)": lambda: x.mean(axis=-1, keepdims=True),
    "x.mean(axis=(-1,), keepdims=True)": lambda: x.mean(axis=(-1,), keepdims=True),
    "var + 1e-5 (Python float)": lambda: var + 1e-5,
    "var + np.float32(1e-5)": lambda: var + f32(1e-5),
    "x - t": lambda: x - t,
    "(d * d).sum()": lambda: (d * d).sum(),
    "total / 32 (0-d / Python int)": lambda: st[0].sum() / 32,
    "x.max(axis=-1, keepdims=True)": lambda: x.max(axis=-1, keepdims=True),
    "cupy.empty((4, 8), f32)": lambda: cupy.empty((4, 8), f32),
    "cupy.ascontiguousarray(x)": lambda: cupy.ascontiguousarray(x),
    "x.flags.c_contiguous": lambda: x.flags.c_contiguous,
    "np.int64(5)": lambda: np.int64(5),
    "cupy.cuda.get_current_stream().ptr": lambda: cupy.cuda.get_current_stream().ptr,
}
print("### pieces, us per call (best of 5 x 1000)")
for label, f in pieces.items():
    print(f"{best(f):8.3f}  {label}")
