"""Every public operation runs on the device holding its input, not on the current one.

CuPy allocates on the *current* device and hands cuBLAS, cuSOLVER, cuFFT and cuSPARSE raw
pointers without checking where they point; an elementwise kernel given another device's
array reads it through peer access (a ``PerformanceWarning``) or fails without it. So each
public operation is called with its input on device 1 while device 0 is current: its
result must be on device 1, match a NumPy/SciPy reference, leave device 0 current and
raise no ``PerformanceWarning`` (on the CuPy simulator a library call on another device's
operands raises ``DevicePlacementError``).

The cases are keyed by the public modules' ``__all__``: a name added to the API without a
case here, or a reason it takes no array, fails :func:`test_every_public_name_is_covered`.
"""

from __future__ import annotations

import gc
import os
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.fft as sfft

import gpukit as gk
import gpukit.fft
import gpukit.kernels
import gpukit.linalg
import gpukit.nn
import gpukit.optim
import gpukit.sharding
import gpukit.sparse
from gpukit.testing import random_spd

from helpers import rel_err, softsign_layer

pytestmark = [pytest.mark.gpu, pytest.mark.multi_gpu(2)]

MODULES = {
    "gk": gk,
    "gk.fft": gk.fft,
    "gk.linalg": gk.linalg,
    "gk.sparse": gk.sparse,
    "gk.kernels": gk.kernels,
    "gk.sharding": gk.sharding,
    "gk.nn": gk.nn,
    "gk.optim": gk.optim,
}

# Public names that take no array (nothing to place), each with the reason.
NOT_ON_ARRAYS = {
    **dict.fromkeys(
        ["gk.Backend", "gk.BackendStatus", "gk.Capability", "gk.Device", "gk.MemoryStats",
         "gk.ShardedArray", "gk.sharding.Replicated", "gk.linalg.IterativeInfo"],
        "a type (its operations are covered by the functions that make and take it)",
    ),
    **dict.fromkeys(
        ["gk.BackendUnavailableError", "gk.ConvergenceWarning", "gk.DeviceMismatchError",
         "gk.GpukitError", "gk.GpukitWarning", "gk.LinAlgError", "gk.NonFiniteError",
         "gk.OutOfMemoryError",
         "gk.TransferGuardError", "gk.UnknownBackendError", "gk.errors"],
        "an error or warning type",
    ),
    **dict.fromkeys(
        ["gk.__version__", "gk.available_backends", "gk.get_backend", "gk.register_backend",
         "gk.unregister_backend", "gk.selection_reason", "gk.set_backend", "gk.use_backend",
         "gk.xp", "gk.transfer_guard", "gk.transfer_stats", "gk.reset_transfer_stats",
         "gk.device_count", "gk.devices", "gk.device", "gk.fft.engine"],
        "backend selection, settings or counters: no array, no device work",
    ),
    "gk.empty_pinned": "host memory: no device",
    "gk.capabilities": "answers from the declarations: no array, no device work",
    "gk.sparse.issparse": "a type question, answered without touching the data",
    "gk.kernels.ACTIVATIONS": "a constant",
    "gk.kernels.KERNELS": "the kernel registry, a constant",
    "gk.nn.manual_seed": "seeds the host generators of new layers",
    "gk.optim.LRScheduler": "a base class (its subclasses are covered)",
    "gk.nn.Module": "a base class (Sequential and the layers are covered)",
    "gk.optim.Optimizer": "a base class (SGD, Adam and AdamW are covered)",
}  # fmt: skip


def on1(host: Any) -> Any:
    """``host`` as an array on device 1."""
    return gk.asarray(host, device=1)


def _fft_case(name: str) -> Callable:
    """gk.fft.<name> on device 1; float32 input (a dtype cast on the device) and ``out=``."""

    def case(rng):
        x = rng.standard_normal((6, 8))
        if not name.startswith(("r", "ih")):
            x = x + 1j * rng.standard_normal(x.shape)
        want = getattr(sfft, name)(x)
        if name.endswith("shift"):
            return getattr(gk.fft, name)(on1(x)), want
        single = x.astype(np.complex64 if x.dtype.kind == "c" else np.float32)
        got = getattr(gk.fft, name)(on1(single))  # computed in single precision: a cast
        assert got.device.id == 1 and rel_err(got, want) < 1e-5
        with gk.device(1):  # out= on the input's device: the result is copied into it
            out = gk.xp.empty(want.shape, want.dtype)
        assert getattr(gk.fft, name)(on1(x), out=out) is out
        return out, want

    return case


def _sharded_fft_case(name: str) -> Callable:
    def case(rng):
        x = rng.standard_normal((6, 8))
        if not name.startswith(("r", "ih")):
            x = x + 1j * rng.standard_normal(x.shape)
        axes = {"fftshift": 0, "ifftshift": 0}.get(name)
        kw = {} if axes is None else {"axes": axes}
        want = getattr(sfft, name)(x, **kw)
        return getattr(gk.sharding, name)(gk.shard(x, axis=0, devices=[1]), **kw), want

    return case


def _solver_case(name: str) -> Callable:
    def case(rng):
        a, b = random_spd(30, rng=rng), rng.standard_normal(30)
        x, info = getattr(gk.linalg, name)(on1(a), on1(b), rtol=1e-12, maxiter=500)
        assert info.converged
        return x, np.linalg.solve(a, b)

    return case


def _memory_stats(rng):
    before = [gk.memory_stats(d).in_use for d in (0, 1)]
    block = on1(np.ones(1 << 16))  # 512 KiB on device 1 only
    after = [gk.memory_stats(d).in_use for d in (0, 1)]
    assert after[1] - before[1] >= block.nbytes and after[0] == before[0]
    return block, np.ones(1 << 16)


def _set_memory_limit(rng):
    try:
        gk.set_memory_limit(1 << 30, device=1)
        assert gk.memory_stats(1).limit == 1 << 30 and gk.memory_stats(0).limit != 1 << 30
    finally:
        gk.set_memory_limit(None, device=1)
    return None


def _empty_cache(rng):
    x = on1(np.ones(1 << 16))
    del x
    assert gk.memory_stats(1).pool_unused > 0
    gc.collect()  # arrays left in reference cycles: freed now, not after empty_cache
    gk.empty_cache()
    assert gk.memory_stats(1).pool_unused == 0
    return None


def _synchronize(rng):
    host = rng.standard_normal(100)
    x = gk.matmul(on1(host[None]), on1(np.eye(100)))  # queued on device 1
    gk.synchronize(1)
    return x, host[None]


def _nn_linear(rng, sequential=False):
    layer = gk.nn.Linear(4, 3, seed=0)
    model = (gk.nn.Sequential(layer) if sequential else layer).to("cupy", device=1)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    w, bias = (gk.to_numpy(p.data).astype(np.float64) for p in (layer.weight, layer.bias))
    y = model(x)  # host input: moved to the model's device
    assert model.backward(on1(np.ones((5, 3), np.float32)), need_input_grad=True).device.id == 1
    return y, x @ w.T + bias


def _nn_layer(name: str, reference: Callable, training: bool = True) -> Callable:
    def case(rng):
        layer = getattr(gk.nn, name)().to("cupy", device=1).train(training)
        x = rng.standard_normal((5, 4)).astype(np.float32)
        y = layer(on1(x))
        g = layer.backward(on1(np.ones_like(x)))
        assert g.device.id == 1
        return y, reference(x.astype(np.float64))

    return case


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _gelu(x):
    from scipy.special import erf

    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def _loss_case(name: str, reference: Callable, targets: Callable) -> Callable:
    def case(rng):
        logits = rng.standard_normal((6, 3)).astype(np.float32)
        y = targets(rng)
        fn = getattr(gk.nn, name)()
        loss = fn(on1(logits), on1(y))
        assert fn.backward().device.id == 1
        return loss, reference(logits.astype(np.float64), y)

    return case


def _cross_entropy(z, y):
    p = _softmax(z)
    return -np.log(p[np.arange(len(y)), y]).mean()


def _bce(z, y):
    return np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z))))


def _optim_case(name: str, **kw) -> Callable:
    def case(rng):
        layer = gk.nn.Linear(4, 3, seed=0).to("cupy", device=1)
        opt = getattr(gk.optim, name)(layer.parameters(), lr=0.1, **kw)
        w0 = gk.to_numpy(layer.weight.data).astype(np.float64)
        layer.weight.grad = on1(np.ones((3, 4), np.float32))
        layer.bias.grad = on1(np.ones(3, np.float32))
        opt.step()
        assert layer.weight.data.device.id == 1
        return layer.weight.data, w0 - 0.1  # Adam's first step is lr * sign(grad) too

    return case


def _graphed_step(rng):
    layer = gk.nn.Linear(4, 3, seed=0).to("cupy", device=1)
    opt = gk.optim.SGD(layer.parameters(), lr=0.1)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    y = rng.standard_normal((8, 3)).astype(np.float32)
    w, b = (gk.to_numpy(p.data).astype(np.float64) for p in (layer.weight, layer.bias))
    step = gk.nn.GraphedStep(layer, gk.nn.MSELoss(), opt, on1(x), on1(y))
    for _ in range(3):  # eager, captured, replayed (the capture may fall back: same values)
        step(on1(x), on1(y))
        g = 2.0 * (x @ w.T + b - y) / y.size  # d mean((xW^T + b - y)^2) / d prediction
        w, b = w - 0.1 * g.T @ x, b - 0.1 * g.sum(axis=0)
    assert layer.weight.data.device.id == 1
    return layer.weight.data, w


def _scheduler_case(name: str, **kw) -> Callable:
    def case(rng):
        layer = gk.nn.Linear(4, 3, seed=0).to("cupy", device=1)
        opt = gk.optim.SGD(layer.parameters(), lr=0.1)
        sched = getattr(gk.optim, name)(opt, **kw)
        w0 = gk.to_numpy(layer.weight.data).astype(np.float64)
        layer.weight.grad = on1(np.ones((3, 4), np.float32))
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] < 0.1
        return layer.weight.data, w0 - 0.1

    return case


def _fit_predict(rng):
    net = gk.nn.Sequential(gk.nn.Linear(4, 8, seed=0), gk.nn.ReLU(), gk.nn.Linear(8, 3, seed=1))
    net = net.to("cupy", device=1)
    x, y = rng.standard_normal((32, 4)).astype(np.float32), rng.integers(0, 3, 32)
    opt = gk.optim.SGD(net.parameters(), lr=0.1)
    hist = gk.nn.fit(net, gk.nn.CrossEntropyLoss(), opt, x, y, epochs=1, batch_size=8,
                     progress=False)  # fmt: skip
    assert np.isfinite(hist["loss"]).all()
    out = gk.nn.predict(net, x, batch_size=8)
    (w1, b1), (w2, b2) = [
        [gk.to_numpy(p.data).astype(np.float64) for p in (m.weight, m.bias)]
        for m in (net[0], net[2])
    ]
    return out, np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def _predict_proba(rng):
    net = gk.nn.Linear(4, 3, seed=0).to("cupy", device=1)
    x = rng.standard_normal((10, 4)).astype(np.float32)
    w, b = (gk.to_numpy(p.data).astype(np.float64) for p in (net.weight, net.bias))
    return gk.nn.predict_proba(net, x, batch_size=4), _softmax(x @ w.T + b)


def _save_load(rng):
    net = gk.nn.Linear(4, 3, seed=0).to("cupy", device=1)
    other = gk.nn.Linear(4, 3, seed=5).to("cupy", device=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "weights.npz")
        gk.nn.save(net, path)
        other.load_state_dict(gk.nn.load(path))
    return other.weight.data, gk.to_numpy(net.weight.data)


def _data_parallel(rng):
    net = gk.nn.Linear(4, 3, seed=0).to("cupy", device=1)
    model = gk.nn.DataParallel(net, devices=[1])
    x = rng.standard_normal((5, 4)).astype(np.float32)
    w, b = (gk.to_numpy(p.data).astype(np.float64) for p in (net.weight, net.bias))
    return model(x), x @ w.T + b


def _kernel_cases() -> dict[str, Callable]:
    def bias_act(rng):
        x, b = rng.standard_normal((5, 4)), rng.standard_normal(4)
        return gk.kernels.bias_activation(on1(x), on1(b), "relu"), np.maximum(x + b, 0)

    def bias_act_bwd(rng):
        g, x, b = rng.standard_normal((5, 4)), rng.standard_normal((5, 4)), rng.standard_normal(4)
        gx, gb = gk.kernels.bias_activation_backward(on1(g), on1(x), on1(b), "relu")
        assert gb.device.id == 1
        return gx, g * (x + b > 0)

    def tiled(rng):
        a, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 7), (7, 3)))
        return gk.kernels.matmul_tiled(on1(a), on1(b)), a.astype(np.float64) @ b

    def sce(rng):
        z, y = rng.standard_normal((6, 3)), rng.integers(0, 3, 6)
        loss, probs = gk.kernels.softmax_cross_entropy(on1(z), on1(y))
        assert loss.device.id == 1
        return probs, _softmax(z)

    def sce_bwd(rng):
        p, y = _softmax(rng.standard_normal((6, 3))), rng.integers(0, 3, 6)
        g = rng.standard_normal(6)
        want = (p - np.eye(3)[y]) * g[:, None]
        return gk.kernels.softmax_cross_entropy_backward(on1(p), on1(y), on1(g)), want

    def sgd(rng):
        p, g = rng.standard_normal(10), rng.standard_normal(10)
        param = on1(p)
        gk.kernels.sgd_update(param, on1(g), lr=0.1)
        return param, p - 0.1 * g

    def adam(rng):
        p, g = rng.standard_normal(10), rng.standard_normal(10)
        param, m, v = on1(p), on1(np.zeros(10)), on1(np.zeros(10))
        gk.kernels.adam_update(param, on1(g), m, v, step=1, lr=0.1)
        return param, p - 0.1 * g / (np.abs(g) + 1e-8)

    return {
        "gk.kernels.bias_activation": bias_act,
        "gk.kernels.bias_activation_backward": bias_act_bwd,
        "gk.kernels.matmul_tiled": tiled,
        "gk.kernels.softmax_cross_entropy": sce,
        "gk.kernels.softmax_cross_entropy_backward": sce_bwd,
        "gk.kernels.sgd_update": sgd,
        "gk.kernels.adam_update": adam,
    }


def _norms(rng):
    """A plain norm and one whose squares underflow (1e-200: its rescue runs too)."""
    a = rng.standard_normal((6, 4))
    got = tuple(gk.linalg.norm(on1(v), axis=0) for v in (a, a * 2.0**-700))
    # judged scaled back (rel_err's own norms of 1e-211 would underflow to a vacuous 0)
    assert rel_err(gk.to_numpy(got[1]) * 2.0**700, np.linalg.norm(a, axis=0)) < 1e-12
    return got, (np.linalg.norm(a, axis=0), None)


def _sharded_norms(rng):
    """As :func:`_norms` for a ShardedArray on device 1 (its rescue runs on that device)."""
    x = rng.standard_normal((6, 4))
    got = tuple(gk.sharding.norm(gk.shard(v, devices=[1]), axis=1) for v in (x, x * 2.0**-700))
    assert rel_err(gk.to_numpy(got[1]) * 2.0**700, np.linalg.norm(x, axis=1)) < 1e-12
    return got, (np.linalg.norm(x, axis=1), None)


def _sharded(rng, fn, reference, devices=(1,)):
    x = rng.standard_normal((6, 4))
    return fn(gk.shard(x, devices=list(devices))), reference(x)


def _within(device: int, fn: Callable[[], Any]) -> Any:
    with gk.device(device):
        return fn()


def _layer_norm(rng):
    layer = gk.nn.LayerNorm(4).to("cupy", device=1)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return layer(on1(x)), (x - mu) / np.sqrt(var + 1e-5)


def _linalg_cases() -> dict[str, Callable]:
    def solve(rng):
        a, b = random_spd(6, rng=rng), rng.standard_normal((6, 2))
        return gk.linalg.solve(on1(a), on1(b), assume_a="pos"), np.linalg.solve(a, b)

    def solve_general(rng):
        a, b = random_spd(6, rng=rng) + np.triu(np.ones((6, 6))), rng.standard_normal(6)
        return gk.linalg.solve(on1(a), on1(b)), np.linalg.solve(a, b)

    def cho_solve(rng):
        a, b = random_spd(6, rng=rng), rng.standard_normal(6)
        return gk.linalg.cho_solve(on1(np.linalg.cholesky(a)), on1(b)), np.linalg.solve(a, b)

    def lstsq(rng):
        a, b = rng.standard_normal((8, 5)), rng.standard_normal(8)
        return gk.linalg.lstsq(on1(a), on1(b)), tuple(np.linalg.lstsq(a, b))

    def qr(rng):
        a = rng.standard_normal((6, 4))
        q, r = gk.linalg.qr(on1(a))
        assert r.device.id == 1
        return gk.matmul(q, r), a

    def unary(fn: Callable, reference: Callable, make=None) -> Callable:
        def case(rng):
            a = random_spd(6, rng=rng) if make is None else make(rng)
            return fn(on1(a)), reference(a)

        return case

    def rect(rng):
        return rng.standard_normal((6, 4))

    return {
        "gk.linalg.solve": lambda rng: (solve(rng), solve_general(rng))[0],
        "gk.linalg.cho_solve": cho_solve,
        "gk.linalg.lstsq": lstsq,
        "gk.linalg.qr": qr,
        "gk.linalg.inv": unary(gk.linalg.inv, np.linalg.inv),
        "gk.linalg.det": unary(gk.linalg.det, np.linalg.det),
        "gk.linalg.slogdet": unary(gk.linalg.slogdet, lambda a: tuple(np.linalg.slogdet(a))),
        "gk.linalg.cholesky": unary(gk.linalg.cholesky, np.linalg.cholesky),
        "gk.linalg.eigh": unary(lambda a: gk.linalg.eigh(a).eigenvalues, np.linalg.eigvalsh),
        "gk.linalg.svd": unary(lambda a: gk.linalg.svd(a, compute_uv=False),
                               lambda a: np.linalg.svd(a, compute_uv=False), rect),
        "gk.linalg.norm": _norms,
        **{f"gk.linalg.{n}": _solver_case(n) for n in ("cg", "bicgstab", "gmres", "minres")},
    }  # fmt: skip


@gk.elementwise(in_dtypes="T", out_dtype="T")
def _axpy_kernel(a, x, y):
    return a * x + y


@gk.reduction
def _sum_of_squares(x):
    return sum(x * x)  # the kernel language's sum, not Python's


def _activation(rng):
    layer = softsign_layer().to("cupy", device=1)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    y = layer(on1(x))
    g = layer.backward(on1(np.ones_like(x)))
    assert g.device.id == 1
    return y, x.astype(np.float64) / (1 + np.abs(x.astype(np.float64)))


def _top_level_cases() -> dict[str, Callable]:
    def namespace(rng):
        import cupy

        assert gk.namespace(on1(np.ones(2))) is cupy

    def shard(rng):
        x = np.arange(8.0).reshape(4, 2)
        return gk.shard(on1(x), axis=1, devices=[1]), x

    return {
        "gk.asarray": lambda rng: (gk.asarray(on1(np.arange(3.0)), dtype="f4"), np.arange(3.0)),
        "gk.to_numpy": lambda rng: (gk.to_numpy(on1(np.arange(3.0))), np.arange(3.0)),
        "gk.namespace": namespace,
        "gk.matmul": lambda rng: (gk.matmul(on1(2 * np.eye(3)), on1(np.ones((3, 2)))),
                                  2 * np.ones((3, 2))),
        "gk.shard": shard,
        "gk.map_shards": lambda rng: _sharded(rng, lambda s: gk.map_shards(lambda a: a + 1, s),
                                              lambda x: x + 1),
        "gk.reshard": lambda rng: _sharded(rng, lambda s: gk.reshard(s, axis=1), lambda x: x),
        "gk.memory_stats": _memory_stats,
        "gk.set_memory_limit": _set_memory_limit,
        "gk.empty_cache": _empty_cache,
        "gk.synchronize": _synchronize,
        "gk.elementwise": lambda rng: (_axpy_kernel(2.0, on1(np.arange(3.0)), on1(np.ones(3))),
                                       2 * np.arange(3.0) + 1),
        "gk.reduction": lambda rng: (_sum_of_squares(on1(np.arange(4.0))), np.float64(14.0)),
    }  # fmt: skip


def _sparse_cases() -> dict[str, Callable]:
    import scipy.sparse as sp

    def csr(rng):
        a = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.5)
        m = gk.sparse.csr_matrix(on1(a))
        assert m.data.device.id == 1
        return _within(1, m.toarray), a

    def poisson(rng):
        t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(3, 3))
        return _within(1, lambda: gk.sparse.poisson2d(3).toarray()), sp.kronsum(t, t).toarray()

    return {"gk.sparse.csr_matrix": csr, "gk.sparse.poisson2d": poisson}


def _sharding_cases() -> dict[str, Callable]:
    def dot(rng):
        v, w = rng.standard_normal(7), rng.standard_normal(7)
        return gk.sharding.dot(gk.shard(v, devices=[1]), gk.shard(w, devices=[1])), v @ w

    def replicate(rng):
        a = rng.standard_normal((3, 3))
        return gk.sharding.replicate(on1(a), devices=[1]).on(1), a

    return {
        **{f"gk.sharding.{n}": _sharded_fft_case(n) for n in gk.sharding.__all__ if "fft" in n},
        "gk.sharding.sum": lambda rng: _sharded(rng, gk.sharding.sum, np.sum),
        "gk.sharding.norm": _sharded_norms,
        "gk.sharding.vdot": lambda rng: _sharded(rng, lambda s: gk.sharding.vdot(s, s),
                                                 lambda x: np.vdot(x, x)),
        "gk.sharding.dot": dot,
        "gk.sharding.matmul": lambda rng: _sharded(
            rng, lambda s: gk.sharding.matmul(s, on1(2 * np.eye(4))), lambda x: 2 * x),
        "gk.sharding.replicate": replicate,
    }  # fmt: skip


def _nn_cases() -> dict[str, Callable]:
    def parameter(rng):
        return gk.nn.Parameter(on1(np.ones(3))).data, np.ones(3)

    return {
        "gk.nn.Linear": _nn_linear,
        "gk.nn.Sequential": lambda rng: _nn_linear(rng, sequential=True),
        "gk.nn.Parameter": parameter,
        "gk.nn.ReLU": _nn_layer("ReLU", lambda x: np.maximum(x, 0)),
        "gk.nn.LeakyReLU": _nn_layer("LeakyReLU", lambda x: np.where(x > 0, x, 0.01 * x)),
        "gk.nn.Tanh": _nn_layer("Tanh", np.tanh),
        "gk.nn.Sigmoid": _nn_layer("Sigmoid", _sigmoid),
        "gk.nn.SiLU": _nn_layer("SiLU", lambda x: x * _sigmoid(x)),
        "gk.nn.GELU": _nn_layer("GELU", _gelu),
        "gk.nn.Softmax": _nn_layer("Softmax", _softmax),
        "gk.nn.Dropout": _nn_layer("Dropout", lambda x: x, training=False),
        "gk.nn.LayerNorm": _layer_norm,
        "gk.nn.MSELoss": _loss_case("MSELoss", lambda z, y: np.mean((z - y) ** 2),
                                    lambda rng: rng.standard_normal((6, 3)).astype(np.float32)),
        "gk.nn.CrossEntropyLoss": _loss_case("CrossEntropyLoss", _cross_entropy,
                                             lambda rng: rng.integers(0, 3, 6)),
        "gk.nn.BCEWithLogitsLoss": _loss_case(
            "BCEWithLogitsLoss", _bce, lambda rng: rng.integers(0, 2, (6, 3)).astype("f4")),
        "gk.nn.fit": _fit_predict,
        "gk.nn.GraphedStep": _graphed_step,
        "gk.nn.predict": _fit_predict,
        "gk.nn.predict_proba": _predict_proba,
        "gk.nn.save": _save_load,
        "gk.nn.load": _save_load,
        "gk.nn.DataParallel": _data_parallel,
        "gk.nn.Activation": _activation,
        "gk.optim.SGD": _optim_case("SGD"),
        "gk.optim.Adam": _optim_case("Adam"),
        "gk.optim.AdamW": _optim_case("AdamW", weight_decay=0.0),
        "gk.optim.StepLR": _scheduler_case("StepLR", step_size=1),
        "gk.optim.CosineAnnealingLR": _scheduler_case("CosineAnnealingLR", T_max=4),
    }  # fmt: skip


CASES: dict[str, Callable[[np.random.Generator], Any]] = {
    **_top_level_cases(),
    **{f"gk.fft.{n}": _fft_case(n) for n in gk.fft.__all__ if "fft" in n and "freq" not in n},
    "gk.fft.fftfreq": lambda rng: (gk.fft.fftfreq(8, 0.5, device=1), np.fft.fftfreq(8, 0.5)),
    "gk.fft.rfftfreq": lambda rng: (gk.fft.rfftfreq(8, device=1), np.fft.rfftfreq(8)),
    **_linalg_cases(),
    **_sparse_cases(),
    **_kernel_cases(),
    **_sharding_cases(),
    **_nn_cases(),
}

# Operations that launch gpukit's own CUDA kernels (cupy.RawModule).
NEEDS_KERNELS = {
    *_kernel_cases(), "gk.nn.Linear", "gk.nn.Sequential", "gk.nn.ReLU", "gk.nn.LeakyReLU",
    "gk.nn.Tanh", "gk.nn.Sigmoid", "gk.nn.SiLU", "gk.nn.GELU", "gk.nn.CrossEntropyLoss",
    "gk.nn.fit", "gk.nn.GraphedStep", "gk.nn.predict", "gk.nn.DataParallel", "gk.optim.SGD",
    "gk.optim.Adam",
    "gk.optim.AdamW", "gk.optim.StepLR", "gk.optim.CosineAnnealingLR",
}  # fmt: skip


def _public_names() -> list[str]:
    return [f"{prefix}.{n}" for prefix, m in MODULES.items() for n in m.__all__]


def test_every_public_name_is_covered():
    names = set(_public_names())
    assert names - set(CASES) - set(NOT_ON_ARRAYS) == set(), "public names without a case"
    assert (set(CASES) | set(NOT_ON_ARRAYS)) - names == set(), "cases for names not public"
    assert set(CASES) & set(NOT_ON_ARRAYS) == set()


def _arrays(value: Any) -> list[Any]:
    if isinstance(value, gk.ShardedArray):
        assert value.devices == (1,)
        return list(value.shards)
    if isinstance(value, tuple | list):
        return [a for v in value for a in _arrays(v)]
    return [value] if hasattr(value, "device") and not isinstance(value, np.ndarray) else []


@pytest.mark.parametrize("name", sorted(CASES))
def test_operation_runs_on_its_inputs_device(cupy_backend, rng, name):
    import cupy
    from cupy._util import PerformanceWarning

    if name in NEEDS_KERNELS and not hasattr(cupy, "RawModule"):
        pytest.skip("launches gpukit's CUDA kernels, which this CuPy cannot run (no RawModule)")
    with gk.device(0), warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)  # no peer reads behind our back
        result = CASES[name](rng)
        assert cupy_backend.current_device() == 0
    if result is None:  # the case checked what it is about itself
        return
    got, want = result
    placed = _arrays(got)
    assert [a.device.id for a in placed] == [1] * len(placed), name
    if isinstance(want, tuple):
        for g, w in zip(got, want, strict=False):
            assert w is None or rel_err(g, w) < 1e-5, name  # None: the case judged it
    else:
        assert rel_err(got, want) < 1e-5, name
    cupy_backend.synchronize()


def test_bias_activation_backward_refuses_an_output_on_another_device(cupy_backend, rng):
    """``output=`` is placed with the other arrays: on another device, the same
    DeviceMismatchError as any argument; on the inputs' device, the derivative's source."""
    g, x = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    b = rng.standard_normal(4)
    y = np.tanh(x + b)
    with pytest.raises(gk.DeviceMismatchError, match="argument 'output' is on"):
        gk.kernels.bias_activation_backward(
            on1(g), on1(x), on1(b), "tanh", output=gk.asarray(y, device=0)
        )
    gx, _ = gk.kernels.bias_activation_backward(on1(g), on1(x), on1(b), "tanh", output=on1(y))
    assert gx.device.id == 1 and rel_err(gx, g * (1 - y * y)) < 1e-12
