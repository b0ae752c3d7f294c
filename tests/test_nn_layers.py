"""gk.nn layers: forward, input and parameter gradients vs PyTorch; finite differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpukit as gk
from gpukit.testing import assert_close

from helpers import TOL, oracle, rel_err, same_errors_warm_as_cold

# name -> (gpukit factory, torch factory taking the torch module, input shape)
LAYERS = {
    "linear": (lambda: gk.nn.Linear(5, 4), lambda nn: nn.Linear(5, 4), (3, 5)),
    "linear_3d": (lambda: gk.nn.Linear(5, 4), lambda nn: nn.Linear(5, 4), (2, 3, 5)),
    "linear_nobias": (
        lambda: gk.nn.Linear(5, 4, bias=False),
        lambda nn: nn.Linear(5, 4, bias=False),
        (3, 5),
    ),
    "relu": (gk.nn.ReLU, lambda nn: nn.ReLU(), (4, 6)),
    "leaky_relu": (lambda: gk.nn.LeakyReLU(0.2), lambda nn: nn.LeakyReLU(0.2), (4, 6)),
    "gelu": (gk.nn.GELU, lambda nn: nn.GELU(), (4, 6)),
    "gelu_tanh": (lambda: gk.nn.GELU("tanh"), lambda nn: nn.GELU("tanh"), (4, 6)),
    "silu": (gk.nn.SiLU, lambda nn: nn.SiLU(), (4, 6)),
    "tanh": (gk.nn.Tanh, lambda nn: nn.Tanh(), (4, 6)),
    "sigmoid": (gk.nn.Sigmoid, lambda nn: nn.Sigmoid(), (4, 6)),
    "softmax": (gk.nn.Softmax, lambda nn: nn.Softmax(dim=-1), (4, 6)),
    "softmax_dim0": (lambda: gk.nn.Softmax(0), lambda nn: nn.Softmax(dim=0), (4, 6)),
    "layernorm": (lambda: gk.nn.LayerNorm(6), lambda nn: nn.LayerNorm(6), (4, 6)),
    "layernorm_2axes": (
        lambda: gk.nn.LayerNorm((3, 4)),
        lambda nn: nn.LayerNorm((3, 4)),
        (2, 3, 4),
    ),
    "dropout_eval": (lambda: gk.nn.Dropout(0.3).eval(), lambda nn: nn.Dropout(0.3).eval(), (4, 6)),
}
ACTS = {
    "relu": (gk.nn.ReLU, lambda nn: nn.ReLU()),
    "leaky_relu": (lambda: gk.nn.LeakyReLU(0.1), lambda nn: nn.LeakyReLU(0.1)),
    "gelu": (gk.nn.GELU, lambda nn: nn.GELU()),
    "gelu_tanh": (lambda: gk.nn.GELU("tanh"), lambda nn: nn.GELU("tanh")),
    "silu": (gk.nn.SiLU, lambda nn: nn.SiLU()),
    "tanh": (gk.nn.Tanh, lambda nn: nn.Tanh()),
    "sigmoid": (gk.nn.Sigmoid, lambda nn: nn.Sigmoid()),
}


def _randomise(module, rng):
    """Give LayerNorm's ones/zeros random values so their gradients are exercised."""
    for p in module.parameters():  # in the parameter's own namespace, whatever is active
        p.data[...] = gk.namespace(p.data).asarray(rng.standard_normal(p.shape).astype(p.dtype))


def _torch_twin(torch, module, torch_module):
    torch_module = torch_module.double()
    state = {
        k: torch.from_numpy(gk.to_numpy(v).astype(np.float64))
        for k, v in module.state_dict().items()
    }
    torch_module.load_state_dict(state, strict=True)
    return torch_module


def _assert_close(actual, expected, scale: float = 0.0, name: str = "") -> None:
    """``||actual - expected|| <= tol * (||expected|| + scale)``, float32's tol.

    ``scale`` is the norm of the magnitudes of the terms a result sums (0: relative error):
    a result that cancels to almost nothing is only as accurate as its terms are large.
    """
    tol = TOL[np.dtype(np.float32)]
    assert_close(
        actual, expected, rtol=tol, atol=tol * scale, check_dtype=False, check_device=False,
        err_msg=name,
    )  # fmt: skip


def _check_vs_torch(module, torch_module, x, g, torch, scales=None):
    """Our float32 results vs PyTorch in float64 with the same weights (``scales``: the
    magnitudes of the terms of each result, by name: "y", "x" and the parameters')."""
    scales = scales or {}
    y = module(gk.asarray(x))
    g_dev = gk.asarray(g)
    gx = module.backward(g_dev, need_input_grad=True)
    assert np.array_equal(gk.to_numpy(g_dev), g)  # the caller's gradient is left alone
    xt = torch.from_numpy(x.astype(np.float64)).requires_grad_(True)
    yt = torch_module(xt)
    yt.backward(torch.from_numpy(g.astype(np.float64)))
    assert y.dtype == np.float32 and gx.dtype == np.float32
    _assert_close(y, yt.detach().numpy(), scales.get("y", 0.0))
    _assert_close(gx, xt.grad.numpy(), scales.get("x", 0.0))
    theirs = dict(torch_module.named_parameters())
    for name, p in module.named_parameters():
        assert p.grad.shape == p.shape
        _assert_close(p.grad, theirs[name].grad.numpy(), scales.get(name, 0.0), name)


def _two_layer_scales(model, x, g) -> dict[str, float]:
    """Norms of the term magnitudes of Linear -> act -> Linear -> act, forward and backward.

    Every activation here satisfies |act(z)| <= 1 + |z| and |act'(z)| <= 1.2 (GELU's and
    SiLU's derivatives peak near 1.1), so the magnitudes propagate as for linear layers.
    """
    w1, b1, w2, b2 = (np.abs(gk.to_numpy(p.data)).astype(np.float64) for p in model.parameters())
    ax, ag, d = np.abs(x).astype(np.float64), 1.2 * np.abs(g).astype(np.float64), 1.2
    h = 1 + ax @ w1.T + b1
    gh = d * (ag @ w2)
    norm = np.linalg.norm
    return {
        "y": norm(1 + h @ w2.T + b2),
        "x": norm(gh @ w1),
        "0.weight": norm(gh.T @ ax),
        "0.bias": norm(gh.sum(axis=0)),
        "2.weight": norm(ag.T @ h),
        "2.bias": norm(ag.sum(axis=0)),
    }


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_torch(backend, rng, name):
    torch = oracle("torch")
    make, make_torch, shape = LAYERS[name]
    module = make()
    _randomise(module, rng)
    twin = _torch_twin(torch, module, make_torch(torch.nn))
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(tuple(twin(torch.from_numpy(x).double()).shape)).astype(np.float32)
    _check_vs_torch(module, twin, x, g, torch)


@pytest.mark.parametrize("act", sorted(ACTS))
def test_fused_sequential_matches_torch(backend, rng, act):
    torch = oracle("torch")
    make, make_torch = ACTS[act]
    model = gk.nn.Sequential(gk.nn.Linear(7, 5), make(), gk.nn.Linear(5, 3), make())
    assert len(model._plan()) == 2  # both Linear + activation pairs are fused
    twin = _torch_twin(
        torch,
        model,
        torch.nn.Sequential(
            torch.nn.Linear(7, 5), make_torch(torch.nn), torch.nn.Linear(5, 3), make_torch(torch.nn)
        ),
    )
    x = rng.standard_normal((6, 7)).astype(np.float32)
    g = rng.standard_normal((6, 3)).astype(np.float32)
    # the scales: an output that cancels to almost nothing is judged against its terms
    # (found in CI: a ReLU output of norm 0.003 was 1.1e-5 off in relative terms)
    _check_vs_torch(model, twin, x, g, torch, _two_layer_scales(model, x, g))


def test_need_input_grad_false_skips_it_and_keeps_param_grads(backend, rng):
    model = gk.nn.Sequential(gk.nn.Linear(4, 3), gk.nn.ReLU(), gk.nn.Linear(3, 2))
    x = gk.asarray(rng.standard_normal((5, 4)).astype(np.float32))
    g = gk.asarray(rng.standard_normal((5, 2)).astype(np.float32))
    model(x)
    assert model.backward(g, need_input_grad=True).shape == (5, 4)
    full = [gk.to_numpy(p.grad) for p in model.parameters()]
    for ask in ({"need_input_grad": False}, {}):  # Sequential's default: not computed
        model.zero_grad()
        model(x)
        assert model.backward(g, **ask) is None
        for p, ref in zip(model.parameters(), full, strict=True):
            assert rel_err(p.grad, ref) < 1e-6


def test_single_layers_return_the_input_gradient_by_default(backend, rng):
    layer = gk.nn.Linear(4, 3)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    g = rng.standard_normal((5, 3)).astype(np.float32)
    layer(gk.asarray(x))
    gx = layer.backward(gk.asarray(g))
    w = gk.to_numpy(layer.weight.data).astype(np.float64)
    assert rel_err(gx, g.astype(np.float64) @ w) < TOL[np.dtype(np.float32)]


def test_grads_accumulate_until_zero_grad(backend, rng):
    layer = gk.nn.Linear(3, 2)
    x = gk.asarray(rng.standard_normal((4, 3)).astype(np.float32))
    g = gk.asarray(rng.standard_normal((4, 2)).astype(np.float32))
    layer(x)
    layer.backward(g)
    once = gk.to_numpy(layer.weight.grad).copy()
    layer(x)
    layer.backward(g)
    assert rel_err(layer.weight.grad, 2 * once) < 1e-6
    layer.zero_grad()
    assert layer.weight.grad is None and layer.bias.grad is None


# -- finite differences in float64 -------------------------------------------------------------
def _numeric_grad(f, a: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(a)
    flat, gflat = a.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = f()
        flat[i] = old - eps
        lo = f()
        flat[i] = old
        gflat[i] = (hi - lo) / (2 * eps)
    return out


FD_LAYERS = {
    **{k: (v[0], v[2]) for k, v in LAYERS.items() if k != "dropout_eval"},
    "dropout_train": (lambda: gk.nn.Dropout(0.4, seed=3), (4, 6)),
    "sequential_fused_gelu": (
        lambda: gk.nn.Sequential(gk.nn.Linear(5, 4), gk.nn.GELU(), gk.nn.Linear(4, 3)),
        (3, 5),
    ),
}


@pytest.mark.parametrize("name", sorted(FD_LAYERS))
def test_finite_differences_float64(rng, name):
    make, shape = FD_LAYERS[name]
    module = make().to("numpy", dtype="float64")
    _randomise(module, rng)
    state = module.state_dict()
    x = rng.standard_normal(shape)
    x += np.sign(x) * 0.05  # keep ReLU-like kinks away from the probed points
    g = rng.standard_normal(module(x).shape)

    def f():
        m = make().to("numpy", dtype="float64")  # fresh: same dropout mask every call
        m.load_state_dict(state)
        return float((m(x) * g).sum())

    module = make().to("numpy", dtype="float64")
    module.load_state_dict(state)
    module(x)
    gx = module.backward(g, need_input_grad=True)
    assert rel_err(gx, _numeric_grad(f, x)) < 1e-6
    for (pname, p), (_, arr) in zip(module.named_parameters(), state.items(), strict=True):
        assert rel_err(p.grad, _numeric_grad(f, arr)) < 1e-6, pname


# -- construction, modes, errors -----------------------------------------------------------------
def test_linear_init_follows_pytorch_bounds_and_seeds(backend):
    layer = gk.nn.Linear(100, 50, seed=7)
    w = gk.to_numpy(layer.weight.data)
    assert w.shape == (50, 100) and w.dtype == np.float32
    assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.09  # U(-1/sqrt(100), 1/sqrt(100))
    assert np.array_equal(w, gk.to_numpy(gk.nn.Linear(100, 50, seed=7).weight.data))
    gk.nn.manual_seed(3)
    a = gk.to_numpy(gk.nn.Linear(4, 4).weight.data)
    gk.nn.manual_seed(3)
    assert np.array_equal(a, gk.to_numpy(gk.nn.Linear(4, 4).weight.data))


def test_dropout_training_mask_scale_and_eval(backend, rng):
    drop = gk.nn.Dropout(0.25, seed=1)
    x = gk.asarray(rng.standard_normal((200, 50)).astype(np.float32))
    y = gk.to_numpy(drop(x))
    kept = y != 0
    assert 0.7 < kept.mean() < 0.8
    assert rel_err(y[kept], gk.to_numpy(x)[kept] / 0.75) < 1e-6
    g = gk.to_numpy(drop.backward(gk.asarray(np.ones_like(y))))
    assert np.array_equal(g != 0, kept)
    assert np.array_equal(gk.to_numpy(gk.nn.Dropout(0.25, seed=1)(x)), y)  # seeded
    assert rel_err(drop.eval()(x), gk.to_numpy(x)) == 0


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_dropout_scales_by_one_over_keep_rounded_once_to_the_dtype(backend, rng, dtype):
    """The kept elements are ``x * s`` with ``s = 1 / (1 - p)`` rounded to the input's dtype
    (PyTorch's scale), for a ``p`` whose ``s`` is inexact: the host's float32/float64
    path multiplies by a Python float, which NumPy casts to the dtype first."""
    p = float(rng.uniform(0.05, 0.95))
    x = rng.standard_normal((64, 33)).astype(dtype)
    y = gk.to_numpy(gk.nn.Dropout(p, seed=int(rng.integers(2**31)))(gk.asarray(x)))
    kept = y != 0
    assert y.dtype == np.dtype(dtype) and 0 < kept.sum() < x.size
    s = np.dtype(dtype).type(1.0 / (1.0 - p))
    assert np.array_equal(y[kept], x[kept] * s)


def test_activation_kernels_are_kept_for_floating_arrays_only(rng):
    """``_act.planned`` (an activation layer's warm call, which then skips the layer's
    conversion of integers) finds a kept kernel for floating arrays only."""
    from gpukit.nn import _act

    z = rng.integers(-3, 4, (4, 8))
    f = z.astype(np.float32)
    for _ in range(2):  # the second call would find what the first kept
        _act.forward("relu", z, None, 0.0, overwrite=False)
        _act.forward("relu", f, None, 0.0, overwrite=False)
    layer = gk.nn.ReLU()
    assert _act.planned(layer, z) is None
    assert layer._saved is None  # untouched where nothing is kept
    y = _act.planned(layer, f)
    assert y.dtype == np.float32 and np.array_equal(y, np.maximum(f, 0))
    saved, from_output = layer._saved
    assert saved is y and from_output


def test_softmax_of_integers_is_float64_without_wraparound(backend, rng):
    """Integer logits are shifted by their max in float64 (found by the fuzz test: the int64
    subtraction wrapped around and gave NaN)."""
    import scipy.special

    x = np.array([[-2, np.iinfo(np.int64).max], [3, -7]], dtype=np.int64)
    x = np.concatenate([x, rng.integers(-1000, 1000, (3, 2))])
    y = gk.nn.Softmax()(gk.asarray(x))
    assert y.dtype == np.float64
    assert rel_err(y, scipy.special.softmax(x.astype(np.float64), axis=-1)) < 1e-15


def test_layernorm_float16_statistics_do_not_overflow(backend, rng):
    """float16 rows whose squares pass 65504 (found by the fuzz test: the variance was inf
    and every output 0): statistics in float32, as PyTorch computes them for half."""
    x = np.concatenate([[[512.0, 0.0, -300.0]], rng.uniform(-400, 400, (4, 3))])
    layer = gk.nn.LayerNorm(3, dtype="float16")
    y = layer(gk.asarray(x.astype(np.float16)))
    x64 = x.astype(np.float16).astype(np.float64)
    want = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    assert y.dtype == np.float16 and rel_err(y, want) < 2e-3
    g = layer.backward(gk.asarray(np.ones_like(x, dtype=np.float16)))
    assert g.dtype == np.float16 and np.isfinite(gk.to_numpy(g)).all()
    assert layer.weight.grad.dtype == np.float16


def test_module_structure_repr_and_modes():
    model = gk.nn.Sequential(
        gk.nn.Linear(3, 4), gk.nn.GELU("tanh"), gk.nn.Dropout(0.1), gk.nn.LayerNorm(4)
    )
    assert [n for n, _ in model.named_parameters()] == [
        "0.weight",
        "0.bias",
        "3.weight",
        "3.bias",
    ]
    assert "(1): GELU(approximate='tanh')" in repr(model)
    assert "(2): Dropout(p=0.1)" in repr(model)
    model.eval()
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())


def test_a_module_mixing_in_a_base_with_arguments_initialises():
    """``Module.__init__`` ends a subclass's ``super().__init__()`` chain, as
    ``torch.nn.Module``'s does: a base after it in the MRO whose ``__init__`` takes
    arguments is not called without them. A new module trains until told otherwise."""

    class Tagged:
        def __init__(self, tag):
            self.tag = tag

    class Layer(gk.nn.Module, Tagged):
        def __init__(self):
            super().__init__()
            Tagged.__init__(self, "t")

    layer = Layer()
    assert layer.tag == "t" and layer.training
    assert not layer.eval().training and layer.train().training


def test_a_model_lives_where_its_first_parameter_does():
    """``model(x)`` places and types ``x`` by the first parameter in ``parameters()`` order
    (own parameters first, then each sub-module's, depth first), parameterless layers
    first in the model included."""
    inner = gk.nn.Sequential(gk.nn.ReLU(), gk.nn.Linear(3, 4, dtype="float64"))
    model = gk.nn.Sequential(gk.nn.Tanh(), inner, gk.nn.Linear(4, 2))
    for m in (model, inner, gk.nn.ReLU(), gk.nn.Linear(2, 2)):
        first = next(iter(m.parameters()), None)
        assert m._anchor() is first
    with pytest.raises(TypeError, match="parameters are float64"):  # the first Linear's
        model(np.ones((2, 3), dtype=np.float32))


def test_a_container_follows_a_replaced_parameter():
    """A parameter replaced inside a Sequential after calls (``m[0].weight = ...``) is
    the one the next call places and types its input by."""
    model = gk.nn.Sequential(gk.nn.Linear(2, 2), gk.nn.ReLU())
    x = np.ones((1, 2), np.float32)
    model(x)
    model[0].weight = gk.nn.Parameter(np.ones((2, 2)))
    assert model._anchor() is model.parameters()[0] is model[0].weight
    with pytest.raises(TypeError, match="parameters are float64"):
        model(x)


def test_a_custom_module_finds_its_first_parameter_as_parameters_orders_them():
    """``Module._anchor`` (what ``model(x)`` places ``x`` by) is ``parameters()[0]``: own
    parameters before a sub-module's even when the sub-module is assigned first, an
    attribute that held None and now holds a parameter, a subclass of Parameter; none
    for a module whose attributes hold only numbers, strings, tuples and arrays."""

    class Net(gk.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = gk.nn.Sequential(gk.nn.ReLU(), gk.nn.Linear(2, 2, seed=0))
            self.scale, self.name, self.sizes = 1.5, "net", (2, 2)
            self.buffer = np.zeros(2)
            self.gain = None

        def forward(self, x):
            return self.body(x)

    class Tagged(gk.nn.Parameter):
        __slots__ = ()

    net = Net()
    assert net._anchor() is net.parameters()[0] is net.body[1].weight
    net.gain = Tagged(np.ones(2))  # an own parameter: first, though assigned last
    assert net._anchor() is net.parameters()[0] is net.gain
    with pytest.raises(TypeError, match="parameters are float64"):
        net(np.ones((1, 2), np.float32))
    net.gain = None
    assert net._anchor() is net.body[1].weight
    bare = gk.nn.ReLU()
    bare.scale, bare.sizes, bare.buffer = 2, (1,), np.ones(3)
    assert bare._anchor() is None


def test_layers_and_losses_refuse_bad_input_as_well_warm_as_cold(rng):
    """A layer's or loss's refusals (shape, dtype, kind, label range, sharded input) come
    with the same type and message after many valid calls as on the first."""
    x = rng.standard_normal((4, 8)).astype(np.float32)
    labels = rng.integers(0, 8, 4)
    linear, norm, tanh = gk.nn.Linear(8, 3, seed=0), gk.nn.LayerNorm(8), gk.nn.Tanh()
    softmax, drop, xent = gk.nn.Softmax(), gk.nn.Dropout(0.5, seed=0), gk.nn.CrossEntropyLoss()
    warm = [
        lambda: linear(x),
        lambda: norm(x),
        lambda: tanh(x),
        lambda: softmax(x),
        lambda: drop(x),
        lambda: xent(x, labels),
    ]
    failing = [
        lambda: linear(x.astype(np.float64)),
        lambda: linear(x[:, :5]),
        lambda: norm(x[:, :5]),
        lambda: tanh(x.astype(np.complex64)),
        lambda: softmax(x.astype(np.complex64)),
        lambda: xent(x, labels - 5),
        lambda: xent(x, labels.astype(np.float32)),
        lambda: tanh(gk.shard(x)),
        lambda: xent(gk.shard(x), labels),
    ]
    same_errors_warm_as_cold(warm, failing)


def test_device_layers_refuse_bad_input_as_well_warm_as_cold(fake_device, rng):
    """A device array type a layer has taken is checked again for each input's dtype: a
    fake-device array of strings or complex numbers is refused with the same type and
    message after valid calls of that type as on the first."""
    x = fake_device.asarray(rng.standard_normal((4, 8)).astype(np.float32))
    softmax, drop = gk.nn.Softmax(), gk.nn.Dropout(0.5, seed=0)
    words = fake_device.asarray(np.array([["a"] * 8] * 4))
    assert type(words) is type(x)
    failing = [
        lambda: softmax(words),
        lambda: drop(words),
        lambda: softmax(x.astype(np.complex64)),
    ]
    same_errors_warm_as_cold([lambda: softmax(x), lambda: drop(x)], failing)


@pytest.mark.gpu
def test_a_kind_registered_after_warm_device_calls_is_refused(cupy_backend, monkeypatch):
    """An activation layer (and a loss) that took a device array type asks again which
    kind it is once a kind is registered: values of that type are then refused, naming
    the layer or loss; and a complex input is refused as on the first call."""
    from gpukit._dispatch import kinds
    from gpukit._runtime import plans

    tanh, mse = gk.nn.Tanh(), gk.nn.MSELoss()
    x = cupy_backend.asarray(np.ones((2, 3), np.float32))
    same_errors_warm_as_cold(
        [lambda: tanh(x), lambda: mse(x, x)], [lambda: tanh(x.astype(np.complex64))]
    )
    for name in ("_kinds", "_by_name", "_by_type"):  # the registry as it was, afterwards
        monkeypatch.setattr(kinds, name, type(getattr(kinds, name))(getattr(kinds, name)))
    device_array = type(x)
    kinds.register_kind(
        "wrapped",
        lambda t: issubclass(t, device_array),
        modules=(),
        describe=lambda v: "wrapped array",
        advice="unwrap it",
    )
    try:
        with pytest.raises(TypeError, match=r"gk\.nn\.Tanh.*wrapped array"):
            tanh(x)
        with pytest.raises(TypeError, match=r"gk\.nn\.MSELoss.*wrapped array"):
            mse(x, x)
    finally:
        monkeypatch.undo()
        plans.forget()
    np.testing.assert_allclose(gk.to_numpy(tanh(x)), np.tanh(np.ones((2, 3))), rtol=1e-6)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="approximate"):
        gk.nn.GELU("fast")
    with pytest.raises(ValueError, match=r"p must be in \[0\.0, 1\.0\], got 1\.5"):
        gk.nn.Dropout(1.5)
    with pytest.raises(ValueError, match=r"last 1 axes must be \(4,\)"):
        gk.nn.LayerNorm(4)(np.ones((2, 3), dtype=np.float32))
    with pytest.raises(TypeError, match="must be a Module"):
        gk.nn.Sequential(gk.nn.ReLU(), "relu")
    with pytest.raises(RuntimeError, match=r"Sequential\.backward called before forward"):
        gk.nn.Sequential(gk.nn.ReLU()).backward(np.ones(2))
    with pytest.raises(ValueError, match=r"Linear\(in_features=3\) got an input of shape \(2, 4\)"):
        gk.nn.Linear(3, 2)(np.ones((2, 4), np.float32))


# A wrong argument type is a TypeError naming the argument, never an AttributeError or a
# comparison error from inside.
WRONG_TYPES = [
    (lambda: gk.nn.Linear("3", 2), r"^gk\.nn\.Linear: in_features must be an integer, got '3'"),
    (lambda: gk.nn.Linear(3, 2.5), r"^gk\.nn\.Linear: out_features must be an integer"),
    (lambda: gk.nn.Linear(3, 2, dtype="int32"), r"dtype must be a floating dtype, got int32"),
    (lambda: gk.nn.Linear(3, 2, dtype="nonsense"), r"dtype must be a floating dtype"),
    (lambda: gk.nn.Linear(3, 2, seed=1.5), r"seed must be an integer"),
    (lambda: gk.nn.LeakyReLU("0.1"), r"^gk\.nn\.LeakyReLU: negative_slope must be a real"),
    (lambda: gk.nn.Softmax(dim="last"), r"^gk\.nn\.Softmax: dim must be an integer"),
    (lambda: gk.nn.Dropout("0.5"), r"^gk\.nn\.Dropout: p must be a real number"),
    (lambda: gk.nn.Dropout(None), r"^gk\.nn\.Dropout: p must be a real number"),
    (lambda: gk.nn.LayerNorm("4"), r"^gk\.nn\.LayerNorm: normalized_shape must be an int"),
    (lambda: gk.nn.LayerNorm(4, eps="1e-5"), r"^gk\.nn\.LayerNorm: eps must be a real"),
    (lambda: gk.nn.Linear(3, 2)(None), r"^gk\.nn\.Linear: argument 'x' must be an array"),
    (lambda: gk.nn.Linear(3, 2)("abc"), r"argument 'x' has dtype <U3"),
    (lambda: gk.nn.Linear(3, 2)(np.ma.masked_array(np.ones((1, 3), np.float32))),
     "masked array"),
    (lambda: gk.nn.Linear(3, 2)(np.matrix(np.ones((1, 3), np.float32))), "numpy.matrix"),
    (lambda: gk.nn.Linear(3, 2).load_state_dict([("weight", 1)]),
     r"state_dict must be a mapping"),
    (lambda: gk.nn.Linear(3, 2).to(dtype="int64"), r"dtype must be a floating dtype"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "match"), WRONG_TYPES)
def test_wrong_argument_types_are_typeerrors_naming_the_argument(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_model_refuses_an_array_of_another_dtype_and_says_how_to_fix_it():
    model = gk.nn.Sequential(gk.nn.Linear(3, 2, seed=0))
    with pytest.raises(TypeError) as info:
        model(np.ones((2, 3)))  # float64 into float32: never cast silently
    msg = str(info.value)
    assert msg.startswith("gk.nn.Sequential: x has dtype float64 but the model's parameters are")
    assert "x.astype('float32')" in msg and "model.to(dtype='float64')" in msg
    with pytest.raises(TypeError, match="x has dtype int64"):
        model(np.ones((2, 3), dtype=np.int64))
    assert model([[1, 2, 3.5]]).dtype == np.float32  # lists take the parameters' dtype
    assert model(np.ones((2, 3), np.float32)).dtype == np.float32


@pytest.mark.parametrize("name", sorted(ACTS))
def test_float16_activations_stay_float16(backend, rng, name):
    """Every activation layer keeps float16 forward and backward, within float16 rounding of
    PyTorch in float64 (on the host SciPy's ``expit`` has no float16 loop: Sigmoid and SiLU
    returned float64)."""
    torch = oracle("torch")
    make, make_torch = ACTS[name]
    x = (rng.standard_normal((5, 8)) * 2).astype(np.float16)
    g = rng.standard_normal((5, 8)).astype(np.float16)
    layer = make()
    y = layer(gk.asarray(x))
    gx = layer.backward(gk.asarray(g))
    tx = torch.tensor(x.astype(np.float64), requires_grad=True)
    ty = make_torch(torch.nn)(tx)
    ty.backward(torch.tensor(g.astype(np.float64)))
    assert y.dtype == gx.dtype == np.float16
    assert rel_err(y, ty.detach().numpy()) < 4e-3
    assert rel_err(gx, tx.grad.numpy()) < 4e-3


@pytest.mark.parametrize("name", sorted(ACTS))
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64"])
def test_integer_activations_compute_in_float64(backend, rng, name, dtype):
    """bool and integer inputs are computed in float64, as Softmax does, on every backend
    (the host raised NumPy's casting error, the GPU rounded the float32 result back to
    integers; found by the capability test)."""
    torch = oracle("torch")
    make, make_torch = ACTS[name]
    x = rng.integers(0 if dtype in ("bool", "uint16") else -3, 2 if dtype == "bool" else 4, (5, 8))
    x = x.astype(dtype)
    g = rng.standard_normal((5, 8))
    layer = make()
    y = layer(gk.asarray(x))
    gx = layer.backward(gk.asarray(g))
    tx = torch.tensor(x.astype(np.float64), requires_grad=True)
    ty = make_torch(torch.nn)(tx)
    ty.backward(torch.from_numpy(g))
    assert y.dtype == gx.dtype == np.float64
    assert rel_err(y, ty.detach().numpy()) < TOL[np.dtype(np.float64)]
    assert rel_err(gx, tx.grad.numpy()) < TOL[np.dtype(np.float64)]
    # warm (the float64 arrays' kernel is kept): converted again, not computed in the dtype
    again = layer(gk.asarray(x))
    assert again.dtype == np.float64 and np.array_equal(gk.to_numpy(again), gk.to_numpy(y))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 5), (37, 9), (4, 6, 9), (0, 3)])
@pytest.mark.parametrize("fused", [False, True], ids=["Linear", "Linear+Tanh"])
def test_bias_gradient_is_the_sum_over_every_leading_axis(backend, rng, dtype, shape, fused):
    """The bias gradient of Linear and of the fused Linear+activation (a BLAS matrix-vector
    product with ones on the host for float32/64, ``sum`` otherwise) against float64."""
    n_out = shape[-1]
    x = rng.standard_normal((*shape[:-1], 7)).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    linear = gk.nn.Linear(7, n_out, dtype=dtype, seed=int(rng.integers(1 << 30)))
    model = gk.nn.Sequential(linear, gk.nn.Tanh()) if fused else linear
    model(gk.asarray(x))
    model.backward(gk.asarray(g))
    g64 = g.astype(np.float64)
    if fused:  # d tanh(z) / dz = 1 - tanh(z)^2, z = x W^T + b
        w, b = (gk.to_numpy(p.data).astype(np.float64) for p in (linear.weight, linear.bias))
        g64 = g64 * (1 - np.tanh(x.astype(np.float64) @ w.T + b) ** 2)
    want = g64.reshape(-1, n_out).sum(axis=0)
    got = gk.to_numpy(linear.bias.grad)
    assert got.dtype == np.dtype(dtype) and got.shape == (n_out,)
    tol = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-13}[dtype]
    assert np.linalg.norm(got - want) <= tol * max(np.linalg.norm(want), 1.0)  # 0 rows: 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layernorm_of_rows_far_from_zero_is_accurate(backend, rng, dtype):
    """Rows whose mean dwarfs their spread: equal entries give exactly 0, and a spread of
    1 around 1e6 (float32) or 1e12 (float64) matches the float64 normalisation of the
    exactly centred data (the fuzz test under the simulator: a float32 row of three
    7.1e16 came out as 1, not 0, when the mean's rounding error stayed in the centring)."""
    const = np.full((2, 3), 7.1096406e16, dtype=dtype)
    y = gk.nn.LayerNorm(3, dtype=dtype)(gk.asarray(const))
    assert not gk.to_numpy(y).any()
    offset = 1e6 if dtype == "float32" else 1e12
    spread = rng.standard_normal((5, 16))
    x = (offset + spread).astype(dtype)
    exact = x.astype(np.float64) - offset  # exact: x's entries are offset + small multiples
    want = (exact - exact.mean(-1, keepdims=True)) / np.sqrt(exact.var(-1, keepdims=True) + 1e-5)
    got = gk.nn.LayerNorm(16, dtype=dtype)(gk.asarray(x))
    tol = 1e-5 if dtype == "float32" else 1e-11
    assert rel_err(got, want) < tol * (1 + offset * np.finfo(dtype).eps / exact.std())


def test_layernorm_rows_whose_sum_of_squares_overflows_on_the_host():
    """float32 [0, 2.6e19]: variance 1.7e38 (representable), sum of squares beyond float32;
    normalised to 0 (PyTorch's answer too) until the host rescaled such rows (the fuzz
    test at 6,000 examples). No overflow warning, NaN rows stay NaN, gradients finite."""
    x = np.array([[0.0, 2.6087637e19], [1.0, 2.0], [0.0, 3e38], [np.nan, 1.0]], np.float32)
    with gk.use_backend("numpy"), warnings.catch_warnings():
        warnings.simplefilter("error")
        layer = gk.nn.LayerNorm(2)
        y = gk.to_numpy(layer(x))
        g = gk.to_numpy(layer.backward(np.ones_like(x)))
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    assert np.allclose(y[:3], want[:3], rtol=1e-5) and np.isnan(y[3]).all()
    assert np.isfinite(g[:3]).all()


@pytest.mark.parametrize("cls", ["ReLU", "LeakyReLU", "Sigmoid", "Tanh", "SiLU", "GELU"])
def test_warm_host_activation_layers_follow_the_kernels_switch_and_f_order(rng, cls):
    """A host activation layer called again with an input of the same dtype and shape
    (its kernel kept) computes the activation, with the compiled kernels switched off in
    a context too, and of an F-ordered input (float64 references)."""
    from scipy.special import erf

    from gpukit._host import native

    ref = {
        "ReLU": lambda z: np.maximum(z, 0),
        "LeakyReLU": lambda z: np.where(z > 0, z, 0.01 * z),
        "Sigmoid": lambda z: 1 / (1 + np.exp(-z)),
        "Tanh": np.tanh,
        "SiLU": lambda z: z / (1 + np.exp(-z)),
        "GELU": lambda z: 0.5 * z * (1 + erf(z / np.sqrt(2))),
    }[cls]
    layer = getattr(gk.nn, cls)()
    x = rng.standard_normal((5, 7)).astype(np.float32)
    want = ref(x.astype(np.float64))
    for _ in range(2):
        assert rel_err(layer(x), want) < TOL[np.dtype(np.float32)]
        with native.disabled():
            assert rel_err(layer(x), want) < TOL[np.dtype(np.float32)]
        assert rel_err(layer(np.asfortranarray(x)), want) < TOL[np.dtype(np.float32)]


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "relu"])
def test_activation_of_a_numpy_scalar_is_computed_on_the_host(rng, name):
    """A NumPy scalar (a 0-d result of a layer's matmul) reaching the shared activation
    code is a host array: the forward gives a 0-d ndarray of the activation, and the
    backward of a scalar output the derivative (float64 references), warm and cold."""
    from gpukit.nn import _act

    ref, slope = {
        "tanh": (np.tanh, lambda y: 1 - y * y),
        "sigmoid": (lambda z: 1 / (1 + np.exp(-z)), lambda y: y * (1 - y)),
        "relu": (lambda z: np.maximum(z, 0.0), lambda y: (y > 0).astype(np.float64)),
    }[name]
    for _ in range(2):  # the second call finds its kernel kept
        z = np.float64(rng.standard_normal())
        y, saved = _act.forward(name, z, None, 0.0, overwrite=False)
        assert type(y) is np.ndarray and y.shape == ()
        assert rel_err(y, ref(float(z))) < TOL[np.dtype(np.float64)]
        g = np.float64(rng.standard_normal())
        gz, gb = _act.backward(name, g, (y[()], saved[1]), None, 0.0, want_bias=False)
        assert gb is None
        assert rel_err(gz, g * slope(ref(float(z)))) < TOL[np.dtype(np.float64)]


@pytest.mark.gpu
def test_device_activation_kernels_kept_per_slope_give_each_slope_its_zero(cupy_backend):
    """A device layer's kept kernel is shared by layers of equal slopes: ``0.0`` and
    ``-0.0`` are equal, but multiply a negative input (and its gradient) to zeros of
    opposite signs, which each layer's output keeps, as on the host."""
    x = np.array([[-2.0, -0.5, 1.0, 3.0]], np.float32)
    g = np.ones_like(x)
    for slopes in ((0.0, -0.0), (-0.0, 0.0)):
        for slope in (*slopes, *slopes):  # each layer cold, then warm
            host, device = gk.nn.LeakyReLU(slope), gk.nn.LeakyReLU(slope)
            with gk.use_backend("numpy"):
                want, want_grad = host(x), host.backward(g)
            got = gk.to_numpy(device(cupy_backend.asarray(x)))
            got_grad = gk.to_numpy(device.backward(cupy_backend.asarray(g)))
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
            np.testing.assert_array_equal(np.signbit(got_grad), np.signbit(want_grad))
            np.testing.assert_array_equal(got, want)


@pytest.mark.gpu
@pytest.mark.multi_gpu(2)
def test_one_device_activation_layer_on_two_devices(cupy_backend, rng):
    """Warm calls of one activation layer on input alternating between two GPUs (its kept
    kernels serve both): the output and gradient on the input's device, with the float64
    formula's values."""
    layer = gk.nn.SiLU()
    for device in (0, 1, 0, 1):
        x = rng.standard_normal((3, 5)).astype(np.float32)
        g = rng.standard_normal((3, 5)).astype(np.float32)
        y = layer(cupy_backend.asarray(x, device=device))
        gx = layer.backward(cupy_backend.asarray(g, device=device))
        assert cupy_backend.device_of(y) == device == cupy_backend.device_of(gx)
        z = x.astype(np.float64)
        s = 1 / (1 + np.exp(-z))
        assert rel_err(gk.to_numpy(y), z * s) < TOL[np.dtype(np.float32)]
        assert rel_err(gk.to_numpy(gx), g * s * (1 + z * (1 - s))) < TOL[np.dtype(np.float32)]


@pytest.mark.gpu
@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("dtype", ["float16", "int32"])
def test_activation_layer_converts_input_on_its_device(cupy_backend, rng, dtype):
    """An activation layer's call does not make its input's device current (its kept
    kernels launch there): a float16 input (computed in float32) or an integer one (in
    float64), and a float16 gradient, on GPU 1 while GPU 0 is current, are converted and
    computed on GPU 1, on every call (no kernel is kept for these dtypes: each call is
    cold), with the float64 formula's values."""
    import cupy

    layer = gk.nn.Tanh()
    x = (rng.standard_normal((3, 5)) * 3).astype(dtype)
    g = rng.standard_normal((3, 5)).astype(np.float16)
    want = np.tanh(x.astype(np.float64))
    tol = 1e-3 if dtype == "float16" else TOL[np.dtype(np.float64)]
    with cupy.cuda.Device(0):
        for _ in range(2):
            y = layer(cupy_backend.asarray(x, device=1))
            assert cupy_backend.device_of(y) == 1
            assert y.dtype == (np.float16 if dtype == "float16" else np.float64)
            assert rel_err(gk.to_numpy(y), want) < tol
            if dtype == "float16":
                gx = layer.backward(cupy_backend.asarray(g, device=1))
                assert cupy_backend.device_of(gx) == 1 and gx.dtype == np.float16
                assert rel_err(gk.to_numpy(gx), g * (1 - want * want)) < tol


@pytest.mark.gpu
@pytest.mark.multi_gpu(2)
def test_a_subclass_forward_of_an_activation_runs_on_its_inputs_device(cupy_backend, rng):
    """Only the activation layers' own forward computes on its input's device by itself: a
    subclass's forward of CuPy calls (or a mixin's) gets that device made current by the
    call, as every module without parameters does."""
    import cupy

    class Doubled(gk.nn.Tanh):
        def forward(self, x):
            return cupy.tanh(x) * 2

    class Mixin:
        def forward(self, x):
            return cupy.tanh(x) * 3

    class Mixed(Mixin, gk.nn.Tanh):
        pass

    assert gk.nn.Tanh._call_on_any_device and gk.nn.ReLU._call_on_any_device
    x = rng.standard_normal((3, 5)).astype(np.float32)
    with cupy.cuda.Device(0):
        for layer, scale in ((Doubled(), 2), (Mixed(), 3)):
            assert not layer._call_on_any_device
            y = layer(cupy_backend.asarray(x, device=1))
            assert cupy_backend.device_of(y) == 1
            assert rel_err(gk.to_numpy(y), scale * np.tanh(x.astype(np.float64))) < 1e-6


@pytest.mark.gpu
@pytest.mark.multi_gpu(2)
def test_kept_device_activation_kernels_launch_on_the_arrays_device(cupy_backend, rng):
    """The shared activation code called directly (as the fused steps of a Sequential
    call it) on arrays of GPU 1 while GPU 0 is current: its kept kernels launch on the
    arrays' device, cold and warm, with the float64 formula's values."""
    import cupy

    from gpukit.nn import _act

    x = rng.standard_normal((3, 5)).astype(np.float32)
    g = rng.standard_normal((3, 5)).astype(np.float32)
    z = x.astype(np.float64)
    s = 1 / (1 + np.exp(-z))
    x1, g1 = cupy_backend.asarray(x, device=1), cupy_backend.asarray(g, device=1)
    tol = TOL[np.dtype(np.float32)]
    with cupy.cuda.Device(0):
        for _ in range(2):  # cold, then the kept kernels
            y, saved = _act.forward("silu", x1, None, 0.0, overwrite=False)
            gx, _ = _act.backward("silu", g1, saved, None, 0.0, want_bias=False)
            layer = gk.nn.SiLU()
            warm_y = _act.planned(layer, x1)
            warm_gx = _act.planned_backward("silu", g1, layer._saved, 0.0)
            for got, want in ((y, z * s), (warm_y, z * s)):
                assert cupy_backend.device_of(got) == 1
                assert rel_err(gk.to_numpy(got), want) < tol
            for got in (gx, warm_gx):
                assert cupy_backend.device_of(got) == 1
                assert rel_err(gk.to_numpy(got), g * s * (1 + z * (1 - s))) < tol
