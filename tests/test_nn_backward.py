"""gk.nn backward passes: the gradient's shape, the warm host activation pass, all-or-nothing
gradients (deferred, or added by an atomic layer at its end), threads and fork."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import weakref

import numpy as np
import pytest
from scipy.special import erf

import gpukit as gk
from gpukit._host import native
from gpukit._runtime import plans
from gpukit.nn import _act, _gemm, module

from helpers import TOL, rel_err, same_errors_warm_as_cold, softsign_layer

ACTS = ["ReLU", "LeakyReLU", "Sigmoid", "Tanh", "SiLU", "GELU"]


@pytest.fixture(autouse=True)
def _host():
    """Layers made on the host whichever backend the run selects: these are host paths."""
    with gk.use_backend("numpy"):
        yield


def _derivative(cls: str, z: np.ndarray) -> np.ndarray:
    """d act(z) / dz in float64."""
    s = 1 / (1 + np.exp(-z))
    return {
        "ReLU": lambda: (z > 0).astype(np.float64),
        "LeakyReLU": lambda: np.where(z > 0, 1.0, 0.01),
        "Sigmoid": lambda: s * (1 - s),
        "Tanh": lambda: 1 - np.tanh(z) ** 2,
        "SiLU": lambda: s * (1 + z * (1 - s)),
        "GELU": lambda: (
            0.5 * (1 + erf(z / np.sqrt(2))) + z * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
        ),
    }[cls]()


def _activation(cls: str, z: np.ndarray) -> np.ndarray:
    """act(z) in float64."""
    return {
        "ReLU": lambda: np.maximum(z, 0),
        "LeakyReLU": lambda: np.where(z > 0, z, 0.01 * z),
        "Sigmoid": lambda: 1 / (1 + np.exp(-z)),
        "Tanh": lambda: np.tanh(z),
        "SiLU": lambda: z / (1 + np.exp(-z)),
        "GELU": lambda: 0.5 * z * (1 + erf(z / np.sqrt(2))),
    }[cls]()


def _layers() -> dict[str, gk.nn.Module]:
    layers = {cls: getattr(gk.nn, cls)() for cls in ACTS}
    layers.update(
        Linear=gk.nn.Linear(8, 8, seed=0),
        Softmax=gk.nn.Softmax(),
        LayerNorm=gk.nn.LayerNorm(8),
        Dropout=gk.nn.Dropout(0.5, seed=0),
        Activation=softsign_layer(),
        Sequential=gk.nn.Sequential(gk.nn.Linear(8, 8, seed=1), gk.nn.Tanh()),
    )
    return layers


@pytest.mark.parametrize("name", sorted(_layers()))
def test_backward_refuses_a_gradient_of_another_shape(rng, name):
    """A gradient of another shape than the last forward output's is a ValueError naming
    both shapes, warm as cold, and adds no gradient: more elements (the compiled
    activation pass once read past the saved input's end), as many in another shape,
    fewer, and shapes that broadcast (Dropout and Softmax once broadcast them silently)."""
    layer = _layers()[name]
    x = rng.standard_normal((4, 8)).astype(np.float32)
    g = rng.standard_normal((4, 8)).astype(np.float32)
    layer(x)
    params = list(layer.parameters())
    wrong = [(8, 8), (8, 4), (3, 8), (4, 1), (1, 8), (32,)]
    for shape in wrong:
        with pytest.raises(ValueError) as info:
            layer.backward(np.ones(shape, np.float32))
        assert str(info.value).startswith(
            f"{name}.backward: grad_output has shape {shape} but the last forward pass's "
            "output has shape (4, 8); they must match"
        )
    assert all(p.grad is None for p in params)
    same_errors_warm_as_cold(
        [lambda: layer.backward(g)],
        [lambda shape=shape: layer.backward(np.ones(shape, np.float32)) for shape in wrong],
    )


def test_every_backend_refuses_a_gradient_of_another_shape(backend, xp, rng):
    """Device arrays too: a model's and a layer's backward refuse a broadcastable gradient
    of another shape, and take one of the output's."""
    model = gk.nn.Sequential(gk.nn.Linear(8, 4, seed=0), gk.nn.ReLU())
    drop = gk.nn.Dropout(0.5, seed=0)
    x = xp.asarray(rng.standard_normal((4, 8)).astype(np.float32))
    for layer, name, shape in ((model, "Sequential", (4, 4)), (drop, "Dropout", (4, 8))):
        layer(x)
        with pytest.raises(ValueError, match=rf"^{name}\.backward: grad_output has shape \(4, 1\)"):
            layer.backward(xp.ones((4, 1), np.float32))
        g = xp.ones(shape, np.float32)
        out = layer.backward(g, need_input_grad=True)
        assert type(out) is type(g) and out.shape == (4, 8)
    assert all(p.grad is not None for p in model.parameters())


def test_backward_takes_a_list_seen_as_numpy_sees_it(rng):
    """A list gradient is checked by its NumPy shape: the output's is taken, another refused."""
    layer = gk.nn.Tanh()
    x = rng.standard_normal((2, 3))
    layer(x)
    g = rng.standard_normal((2, 3))
    want = g * (1 - np.tanh(x) ** 2)
    assert rel_err(layer.backward(g.tolist()), want) < TOL[np.dtype(np.float64)]
    with pytest.raises(ValueError, match=r"grad_output has shape \(3,\) but .* \(2, 3\)"):
        layer.backward([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"grad_output has shape no shape \(a ragged"):
        layer.backward([[1.0], [1.0, 2.0]])


def _linear(rng, n=4):
    return gk.nn.Linear(n, n, seed=int(rng.integers(2**31)))


def _reference(m, v):
    """The forward pass of a model of Sequential, Linear, Tanh and Dropout(0), in float64."""
    if isinstance(m, gk.nn.Sequential):
        for layer in m:
            v = _reference(layer, v)
        return v
    if isinstance(m, gk.nn.Linear):
        return v @ m.weight.data.astype(np.float64).T + m.bias.data
    return np.tanh(v) if isinstance(m, gk.nn.Tanh) else v


@pytest.mark.parametrize(
    "layout", ["unfused", "fused", "nested", "appended", "appended inside", "inner"]
)
def test_a_module_at_two_positions_of_a_sequential_refuses_backward(rng, layout):
    """A module instance at two positions (a Linear in two fused pairs or not, inside a
    nested Sequential, appended after a forward pass to the model or to a Sequential
    inside it, twice inside an inner Sequential)
    keeps only its last forward pass's inputs: its backward would give the earlier
    position the later one's gradients. The backward refuses it, naming the module and
    both positions, and adds no gradient; the forward pass alone stays right."""
    x = rng.standard_normal((3, 4)).astype(np.float32)
    lin = _linear(rng)
    where = {"unfused": (0, 3), "fused": (0, 2), "nested": (0, 2), "appended": (0, 2)}
    if layout == "unfused":
        model = gk.nn.Sequential(lin, gk.nn.Tanh(), gk.nn.Dropout(0.0), lin)
    elif layout == "fused":
        model = gk.nn.Sequential(lin, gk.nn.Tanh(), lin, gk.nn.Tanh())
    elif layout == "nested":
        model = gk.nn.Sequential(gk.nn.Sequential(lin, gk.nn.Tanh()), gk.nn.Dropout(0.0), lin)
    elif layout == "appended":
        model = gk.nn.Sequential(lin, gk.nn.Tanh())
        model(x)  # planned without the reuse
        model.append(lin)
    elif layout == "appended inside":
        inner = gk.nn.Sequential(gk.nn.Tanh())
        model = gk.nn.Sequential(lin, inner)
        model(x)  # planned without the reuse
        inner.append(lin)  # the outer model now holds lin at positions 0 and 1
        where[layout] = (0, 1)
    else:
        tanh = gk.nn.Tanh()
        model = gk.nn.Sequential(gk.nn.Sequential(tanh, gk.nn.Dropout(0.0), tanh), lin)
        where["inner"] = (0, 2)
    name = "Tanh" if layout == "inner" else "Linear"
    y = model(x)
    assert rel_err(y, _reference(model, x.astype(np.float64))) < TOL[np.dtype(np.float32)]
    first, second = where[layout]
    with pytest.raises(
        RuntimeError, match=rf"one {name} instance is used at positions {first} and {second}"
    ):
        model.backward(np.ones_like(y), need_input_grad=True)
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("layout", ["two fused steps", "fused and alone"])
def test_an_activation_in_a_fused_step_and_elsewhere_is_no_reuse(rng, layout):
    """A fused Linear + activation step keeps the activation's state itself: one Tanh
    instance after two Linears (both fused), or fused once and on its own once, gives the
    float64 gradients of the chain (no refusal)."""
    x = rng.standard_normal((3, 4))
    g = rng.standard_normal((3, 4))
    tanh = gk.nn.Tanh()
    lin1 = _linear(rng).to(dtype="float64")
    lin2 = _linear(rng).to(dtype="float64")
    second = lin2 if layout == "two fused steps" else gk.nn.Dropout(0.0)
    model = gk.nn.Sequential(lin1, tanh, second, tanh)
    y = model(x)
    gx = model.backward(g, need_input_grad=True)
    w1, b1 = lin1.weight.data, lin1.bias.data
    h = np.tanh(x @ w1.T + b1)
    if layout == "two fused steps":
        w2, b2 = lin2.weight.data, lin2.bias.data
        want = np.tanh(h @ w2.T + b2)
        dz2 = g * (1 - want * want)
        dh = dz2 @ w2
        assert rel_err(lin2.weight.grad, dz2.T @ h) < TOL[np.dtype(np.float64)]
    else:
        want = np.tanh(h)
        dh = g * (1 - want * want)
    dz1 = dh * (1 - h * h)
    assert rel_err(y, want) < TOL[np.dtype(np.float64)]
    assert rel_err(lin1.weight.grad, dz1.T @ x) < TOL[np.dtype(np.float64)]
    assert rel_err(lin1.bias.grad, dz1.sum(axis=0)) < TOL[np.dtype(np.float64)]
    assert rel_err(gx, dz1 @ w1) < TOL[np.dtype(np.float64)]


def test_a_custom_module_whose_output_has_no_shape_is_not_checked():
    """A forward returning something without a shape (a tuple) leaves its backward's
    gradient to the module."""

    class Pair(gk.nn.Module):
        def forward(self, x):
            return x, 2 * x

        def backward(self, grad_output, *, need_input_grad=True):
            a, b = grad_output
            return a + 2 * b

    pair = Pair()
    pair(np.ones(3))
    assert pair.backward((np.ones(3), np.ones(3))).tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize("cls", ACTS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(5, 7), (3, 4, 6), (9,)])
def test_warm_activation_backward_matches_float64_references(rng, cls, dtype, shape):
    """An activation layer's backward, cold then warm (its compiled pass kept), with the
    compiled kernels switched off, of strided and F-ordered gradients (which the kept
    pass does not take), and of a float64 gradient for a float32 layer (promoted, as
    NumPy promotes)."""
    plans.forget()  # cold: no pass kept by an earlier test
    layer = getattr(gk.nn, cls)()
    x = rng.standard_normal(shape).astype(dtype)
    layer(x)
    wide = rng.standard_normal((*shape[:-1], 2 * shape[-1])).astype(dtype)
    g = np.ascontiguousarray(wide[..., ::2])
    d = _derivative(cls, x.astype(np.float64))
    want = g.astype(np.float64) * d
    tol = TOL[np.dtype(dtype)]
    for _ in range(3):
        got = layer.backward(g)
        assert got.dtype == np.dtype(dtype) and got.shape == shape
        assert rel_err(got, want) < tol
    kept = _act.planned_backward(layer._name, g, layer._saved, layer.negative_slope)
    assert kept is not None and rel_err(kept, want) < tol  # the warm calls' compiled pass
    with native.disabled():
        assert rel_err(layer.backward(g), want) < tol
    assert rel_err(layer.backward(wide[..., ::2]), want) < tol
    assert rel_err(layer.backward(np.asfortranarray(g)), want) < tol
    if dtype == "float32":
        g64 = g.astype(np.float64)
        got = layer.backward(g64)
        assert got.dtype == np.float64 and rel_err(got, g64 * d) < tol


@pytest.mark.parametrize("cls", ACTS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_warm_fused_linear_activation_passes_match_float64_references(rng, cls, dtype):
    """Two of a Sequential's Linear + activation steps (one fused host pass each for the
    activation's and the bias's gradients, kept per dtype and shape; the first step's
    gradient written over the second's input gradient, a temporary), cold then warm,
    with the compiled kernels switched off too: every gradient against float64."""
    plans.forget()
    act = getattr(gk.nn, cls)
    linears = [gk.nn.Linear(6, 5, seed=0, dtype=dtype), gk.nn.Linear(5, 4, seed=1, dtype=dtype)]
    model = gk.nn.Sequential(linears[0], act(), linears[1], act())
    x = rng.standard_normal((7, 6)).astype(dtype)
    g = rng.standard_normal((7, 4)).astype(dtype)
    (w1, b1), (w2, b2) = ((m.weight.data.astype(float), m.bias.data.astype(float)) for m in linears)
    z1 = x.astype(float) @ w1.T + b1
    h = _activation(cls, z1)
    z2 = h @ w2.T + b2
    dz2 = g.astype(float) * _derivative(cls, z2)
    dz1 = (dz2 @ w2) * _derivative(cls, z1)
    want = [dz1 @ w1, dz1.T @ x.astype(float), dz1.sum(0), dz2.T @ h, dz2.sum(0)]
    tol = TOL[np.dtype(dtype)]
    for off in (False, False, False, True):
        for p in model.parameters():
            p.grad = None
        with native.disabled() if off else contextlib.nullcontext():
            model(x)
            gx = model.backward(g, need_input_grad=True)
        got = [gx, linears[0].weight.grad, linears[0].bias.grad]
        got += [linears[1].weight.grad, linears[1].bias.grad]
        assert gx.dtype == np.dtype(dtype)
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            assert rel_err(a, b) < tol, (off, k)
    # a warm pass runs on the kept compiled passes, one per step each way (ReLU, Sigmoid
    # and Tanh write their forward over the product), and they do the work
    ran = []

    def counted(table, key):
        run = table[key]

        def spy(*args):
            done = run(*args)
            ran.append((key, done is not None and done is not False))
            return done

        table[key] = spy

    for key in [k for k in _act._PASSES if k[5]]:
        counted(_act._PASSES, key)
    for key in list(_act._IN_PLACE):
        counted(_act._IN_PLACE, key)
    model(x)
    model.backward(g)
    in_place = cls in ("ReLU", "Sigmoid", "Tanh")
    assert len(ran) == (4 if in_place else 2) and all(done for _, done in ran)
    shapes = [key[3] if len(key) == 6 else key[2] for key, _ in ran]
    assert sorted(shapes) == sorted([(7, 5), (7, 4)] * (2 if in_place else 1))


@pytest.mark.parametrize("n", [1, 4, 6])
def test_a_fused_step_with_a_bias_of_another_length_computes_as_numpy_does(rng, n):
    """A Linear whose bias was replaced by one of another length: a Sequential's fused
    step broadcasts a bias of one and refuses others, as the Linear alone does (NumPy's
    addition), where the compiled kernels once read past a short bias's end."""
    lin = gk.nn.Linear(3, 5, seed=0, dtype="float64")
    lin.bias = gk.nn.Parameter(np.full(n, 7.0))
    x = rng.standard_normal((2, 3))
    for model in (gk.nn.Sequential(lin, gk.nn.ReLU()), gk.nn.Sequential(lin, gk.nn.GELU())):
        if n == 1:
            z = x @ lin.weight.data.T + 7.0
            want = np.maximum(z, 0) if type(model[1]) is gk.nn.ReLU else _activation("GELU", z)
            for _ in range(2):
                assert rel_err(model(x), want) < TOL[np.dtype(np.float64)]
        else:
            with pytest.raises(ValueError, match="broadcast"):
                model(x)


def test_the_host_gradient_pass_refuses_arrays_of_other_shapes():
    """The host activation gradient gives the kernels addresses: arrays whose rows differ
    are refused before they run."""
    from gpukit._host.activations import gradient

    with pytest.raises(ValueError, match=r"grad \(8, 8\), v \(4, 8\) and out \(8, 8\)"):
        gradient(np.ones((8, 8)), np.ones((4, 8)), "relu", 0.0)


class _FailingProduct:
    """``_gemm.matmul`` that raises MemoryError on the call numbered ``fail`` (from 0)."""

    def __init__(self, fail: int) -> None:
        self.real, self.fail, self.calls = _gemm.matmul, fail, 0

    def __call__(self, *args, **kwargs):
        n, self.calls = self.calls, self.calls + 1
        if n == self.fail:
            raise MemoryError("injected")
        return self.real(*args, **kwargs)


@pytest.mark.parametrize("held", [False, True], ids=["no-gradient", "gradient-held"])
@pytest.mark.parametrize("slots", [False, True], ids=["plain", "optimizer-slots"])
def test_a_failed_linear_backward_adds_no_gradient(rng, monkeypatch, held, slots):
    """A Linear adds its gradients only once all three are computed (it defers nothing to
    a list): a pass whose input-gradient product fails leaves every gradient as it was,
    with or without gradients held, written into an optimizer's flat buffer or not; the
    next pass adds them."""
    layer = gk.nn.Linear(6, 3, seed=0)
    if slots:
        gk.optim.SGD(layer.parameters(), lr=0.1)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    g = rng.standard_normal((5, 3)).astype(np.float32)
    layer(x)
    if held:
        layer.backward(g)
    before = {n: None if p.grad is None else p.grad.copy() for n, p in layer.named_parameters()}
    monkeypatch.setattr(_gemm, "matmul", _FailingProduct(1))  # the input gradient's product
    with pytest.raises(gk.OutOfMemoryError, match=r"gk\.nn\.Linear\.backward ran out"):
        layer.backward(g)
    for n, p in layer.named_parameters():
        assert (p.grad is None) if before[n] is None else np.array_equal(p.grad, before[n]), n
    monkeypatch.undo()
    layer.backward(g)
    want_w = g.T.astype(np.float64) @ x.astype(np.float64)
    times = 2 if held else 1
    assert rel_err(layer.weight.grad, times * want_w) < TOL[np.dtype(np.float32)]
    assert rel_err(layer.bias.grad, times * g.astype(np.float64).sum(0)) < TOL[np.dtype(np.float32)]


def test_an_out_of_memory_pass_frees_its_gradients_before_memory_is_released(rng, monkeypatch):
    """The gradients a failed outermost pass was holding (a fused Linear + ReLU's, waiting
    to be added) are garbage by the time the out-of-memory policy releases memory."""
    from gpukit._runtime import memory

    model = gk.nn.Sequential(
        gk.nn.Linear(6, 5, seed=0), gk.nn.ReLU(), gk.nn.Linear(5, 3, seed=1), gk.nn.ReLU()
    )
    x = rng.standard_normal((4, 6)).astype(np.float32)
    model(x)
    made, alive = [], []
    failing, real_release = _FailingProduct(2), memory._release  # the first step's weight

    def product(*args, **kwargs):
        out = failing(*args, **kwargs)
        made.append(weakref.ref(out))
        return out

    def release(backend):
        real_release(backend)  # collects first
        alive.append(sum(ref() is not None for ref in made))

    monkeypatch.setattr(_gemm, "matmul", product)
    monkeypatch.setattr(memory, "_release", release)
    with pytest.raises(gk.OutOfMemoryError, match=r"gk\.nn\.Sequential\.backward ran out"):
        model.backward(np.ones((4, 3), np.float32))
    assert len(made) == 2 and alive == [0]
    assert all(p.grad is None for p in model.parameters())


def test_a_subclass_backward_is_deferred_unless_it_says_it_is_atomic(monkeypatch):
    """A subclass defining its own backward (or Linear's body), or a mixin supplying one,
    is not taken to be atomic, even of an atomic layer: the gradients it adds before
    failing are dropped with the pass."""

    class Scaled(gk.nn.ReLU):
        def __init__(self):
            super().__init__()
            self.scale = gk.nn.Parameter(np.ones(1))

        def backward(self, grad_output, *, need_input_grad=True):
            self.scale.accumulate(np.ones(1))
            raise ValueError("after adding")

    class Plain(gk.nn.ReLU):
        pass

    class Decayed(gk.nn.Linear):  # Linear's backward around a body of its own
        def _backward(self, g, need_input_grad, grad_bias):
            self.weight.accumulate(0.1 * self.weight.data)
            return super()._backward(g, need_input_grad, grad_bias)

    class Mixin:  # a backward from a class that is not a Module, before Linear
        def backward(self, grad_output, *, need_input_grad=True):
            self.weight.accumulate(np.ones_like(self.weight.data))
            raise ValueError("after adding")

    class Mixed(Mixin, gk.nn.Linear):
        pass

    def atomic(cls):
        return module._honoured(cls, "_atomic_backward", ("backward", "_backward"))

    for cls in (Scaled, Decayed, Mixed):
        assert not atomic(cls), cls.__name__
    assert atomic(gk.nn.ReLU) and atomic(Plain) and atomic(gk.nn.Linear)
    layer = Scaled()
    layer(np.ones(2))
    with pytest.raises(ValueError, match="after adding"):
        layer.backward(np.ones(2))
    assert layer.scale.grad is None
    mixed = Mixed(3, 2, seed=0)
    mixed(np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match="after adding"):
        mixed.backward(np.ones((1, 2), np.float32))
    assert mixed.weight.grad is None
    decayed = Decayed(3, 2, seed=0)
    decayed(np.ones((1, 3), np.float32))
    monkeypatch.setattr(_gemm, "matmul", _FailingProduct(1))
    with pytest.raises(gk.OutOfMemoryError):
        decayed.backward(np.ones((1, 2), np.float32))
    assert decayed.weight.grad is None


def _mlp(seed: int) -> gk.nn.Sequential:
    return gk.nn.Sequential(
        gk.nn.Linear(6, 5, seed=seed, dtype="float64"),
        gk.nn.ReLU(),
        gk.nn.Linear(5, 3, seed=seed + 1, dtype="float64"),
    )


def test_backward_passes_in_threads_add_each_their_own_gradients(rng):
    """Passes running at once in several threads (each its own outermost pass, nested and
    atomic layers alike) add exactly their own gradients: none lost to, or taken from,
    another thread's pass."""
    n_threads, passes = 4, 200
    x = rng.standard_normal((4, 6)).astype(np.float64)
    g = rng.standard_normal((4, 3)).astype(np.float64)
    solo = _mlp(0)
    solo(x)
    solo.backward(g)
    one = {n: p.grad.copy() for n, p in solo.named_parameters()}
    models = [(_mlp(0), gk.nn.Linear(6, 3, seed=0, dtype="float64")) for _ in range(n_threads)]
    barrier, errors = threading.Barrier(n_threads), []

    def work(model, layer):
        try:
            barrier.wait()
            for _ in range(passes):
                model(x)
                model.backward(g)
                layer(x)
                layer.backward(g)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=pair) for pair in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    want_linear = g.T @ x
    for model, layer in models:
        for n, p in model.named_parameters():
            assert rel_err(p.grad, passes * one[n]) < 1e-12, n
        assert rel_err(layer.weight.grad, passes * want_linear) < 1e-12


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_during_another_threads_pass_adds_its_gradients(rng):
    """A process forked while another thread is inside a backward pass: the child's own
    passes add their gradients (the other thread's pass, and its list, are not the
    child's)."""
    x = rng.standard_normal((4, 6))
    g = rng.standard_normal((4, 3))
    inside, release = threading.Event(), threading.Event()

    class Waiting(gk.nn.Module):
        def forward(self, x):
            return x

        def backward(self, grad_output, *, need_input_grad=True):
            inside.set()
            release.wait(30)
            return grad_output

    outer = gk.nn.Sequential(gk.nn.Linear(6, 3, seed=0, dtype="float64"), Waiting())
    outer(x)
    worker = threading.Thread(target=lambda: outer.backward(g))
    worker.start()
    assert inside.wait(30)
    try:
        pid = os.fork()
        if pid == 0:  # the child: exit 0 if its pass added the gradient within 60 s
            try:
                signal.alarm(60)
                model = gk.nn.Linear(6, 3, seed=0, dtype="float64")
                model(x)
                model.backward(g)
                ok = model.weight.grad is not None and np.allclose(model.weight.grad, g.T @ x)
                os._exit(0 if ok else 3)
            except BaseException:  # never back into pytest in the child
                os._exit(4)
    finally:
        release.set()
        worker.join()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert np.allclose(outer[0].weight.grad, g.T @ x)
