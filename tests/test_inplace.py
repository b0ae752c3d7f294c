"""In-place operations: a failed call changes nothing, and none is re-run after running out
of memory (it could apply its update twice: AdamW decaying the weights twice, SGD scaling
the momentum twice).

Failures are injected as the out-of-memory tests of test_memory.py inject them: a
``MemoryError`` from the allocation the operation makes, which the numpy backend claims.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import gpukit as gk
from gpukit import _dispatch

N = 600_000  # several blocks of the numpy updates (gpukit_numpy.kernels._BLOCK)


@pytest.fixture(autouse=True)
def _numpy_backend():
    """Host arrays and injected host failures: the numpy backend, whatever the default
    (``--cupy=sim`` makes it cupy)."""
    with gk.use_backend("numpy") as b:
        yield b


def _arrays(rng, n=N, dtype=np.float64):
    p, g = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    m, v = rng.standard_normal(n).astype(dtype), rng.random(n).astype(dtype)
    return p, g, m, v


UPDATES = {
    "sgd": lambda p, g, m, v: gk.kernels.sgd_update(p, g, lr=0.1),
    "sgd_momentum_wd": lambda p, g, m, v: gk.kernels.sgd_update(
        p, g, m, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01
    ),
    "sgd_nesterov": lambda p, g, m, v: gk.kernels.sgd_update(
        p, g, m, lr=0.1, momentum=0.9, nesterov=True
    ),
    "adam_l2": lambda p, g, m, v: gk.kernels.adam_update(
        p, g, m, v, step=3, lr=0.01, weight_decay=0.1
    ),
    "adamw": lambda p, g, m, v: gk.kernels.adam_update(
        p, g, m, v, step=3, lr=0.01, weight_decay=0.1, decoupled=True
    ),
}


@pytest.fixture
def failing_workspace(monkeypatch):
    """Make the numpy updates' one allocation fail; yields the list of attempts. Plain
    SGD allocates nothing on BLAS ``axpy`` (gpukit_numpy.blas), nor any update in
    gpukit's compiled kernels (gpukit._host.native): their ufunc paths are tested."""
    import gpukit_numpy.kernels as reference
    from gpukit._host import native

    monkeypatch.setattr(reference._blas, "axpy", lambda dtype: None)
    calls = []

    def fail(dtype):
        calls.append(dtype)
        raise MemoryError("injected: cannot allocate the update's scratch")

    monkeypatch.setattr(reference, "_workspace", fail)
    with native.disabled():
        yield calls


@pytest.mark.parametrize("name", sorted(UPDATES))
def test_a_failed_kernel_update_changes_nothing_and_is_not_rerun(rng, failing_workspace, name):
    arrays = _arrays(rng)
    before = [a.copy() for a in arrays]
    with gk.use_backend("numpy"), pytest.raises(gk.OutOfMemoryError) as info:
        UPDATES[name](*arrays)
    assert len(failing_workspace) == 1  # tried once, never re-run
    assert "updates its arguments in place, so it was not re-run" in str(info.value)
    assert isinstance(info.value.__cause__, MemoryError)
    for a, b in zip(arrays, before, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UPDATES))
def test_kernel_updates_allocate_nothing_once_running(rng, name, dtype):
    # The only allocation is the workspace, made before the first write: a failure can
    # only happen before anything changed (the test above).
    arrays = _arrays(rng, dtype=dtype)
    with gk.use_backend("numpy"):
        UPDATES[name](*arrays)  # this thread's workspace now exists
        tracemalloc.start()
        try:
            UPDATES[name](*arrays)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 64 * 1024 <= arrays[0].nbytes // 10


def test_a_read_only_buffer_is_refused_before_anything_is_written(rng):
    p, g, m, v = _arrays(rng, 10)
    before = [p.copy(), m.copy()]
    v.flags.writeable = False
    with pytest.raises(ValueError, match=r"^gk\.kernels\.adam_update: exp_avg_sq is updated in "):
        gk.kernels.adam_update(p, g, m, v, step=1, lr=0.1, weight_decay=0.1, decoupled=True)
    assert np.array_equal(p, before[0]) and np.array_equal(m, before[1])
    p.flags.writeable = False
    with pytest.raises(ValueError, match="param is updated in place but is read-only"):
        gk.kernels.sgd_update(p, g, lr=0.1)


@pytest.mark.parametrize(
    "call",
    [
        lambda p, g, m, v: gk.kernels.adam_update(p, g, m, m, step=1, lr=0.1),
        lambda p, g, m, v: gk.kernels.adam_update(p, g, p, v, step=1, lr=0.1),
        lambda p, g, m, v: gk.kernels.adam_update(p, p, m, v, step=1, lr=0.1),
        lambda p, g, m, v: gk.kernels.adam_update(p[1:], g[1:], m[:-1], m[1:], step=1, lr=0.1),
        lambda p, g, m, v: gk.kernels.sgd_update(p, p, lr=0.1),
        lambda p, g, m, v: gk.kernels.sgd_update(p, g, p, lr=0.1, momentum=0.9),
        lambda p, g, m, v: gk.kernels.sgd_update(p[1:], p[:-1], lr=0.1),
    ],
    ids=["m_is_v", "m_is_p", "g_is_p", "m_overlaps_v", "sgd_g_is_p", "sgd_buf_is_p", "shifted"],
)
def test_overlapping_arguments_are_refused(rng, call):
    arrays = _arrays(rng, 10)
    before = [a.copy() for a in arrays]
    with pytest.raises(ValueError, match=r"^gk\.kernels\.\w+: \w+ and \w+ overlap in memory"):
        call(*arrays)
    for a, b in zip(arrays, before, strict=True):
        assert np.array_equal(a, b)


# -- optimizers ------------------------------------------------------------------------------
OPTIMIZERS = {
    "sgd_momentum": lambda ps: gk.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.1),
    "adam": lambda ps: gk.optim.Adam(ps, lr=0.1),
    "adamw": lambda ps: gk.optim.AdamW(ps, lr=0.1, weight_decay=0.5),
}


def _params(rng, dtypes=(np.float64, np.float32, np.float64)):
    params = [gk.nn.Parameter(rng.standard_normal((3, 4)).astype(d)) for d in dtypes]
    for p in params:
        p.grad = rng.standard_normal(p.shape).astype(p.dtype)
    return params


def _snapshot(opt, params):
    state = {
        id(p): {k: (v.copy() if hasattr(v, "copy") else v) for k, v in s.items()}
        for p, s in opt.state.items()
    }
    return [p.data.copy() for p in params], state


def _assert_unchanged(opt, params, snapshot):
    data, state = snapshot
    for p, d in zip(params, data, strict=True):
        assert np.array_equal(p.data, d)
    assert set(state) == {id(p) for p in opt.state}
    for p, s in opt.state.items():
        for k, v in s.items():
            assert np.array_equal(v, state[id(p)][k])


def _fail_on_call(monkeypatch, module, name, k):
    """Make ``module.name`` raise MemoryError from its k-th call on (1-based): memory that
    stays short, so a retry fails too."""
    real = getattr(module, name)
    calls = []

    def patched(*args, **kwargs):
        calls.append(1)
        if len(calls) >= k:
            raise MemoryError(f"injected: call {k} of {name}")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, patched)
    return calls


@pytest.mark.parametrize("steps_before", [0, 2])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_failed_optimizer_step_changes_nothing(rng, monkeypatch, name, steps_before):
    params = _params(rng)
    opt = OPTIMIZERS[name](params)
    twin_params = [gk.nn.Parameter(p.data.copy()) for p in params]
    twin = OPTIMIZERS[name](twin_params)
    for _ in range(steps_before):
        for p, q in zip(params, twin_params, strict=True):
            q.grad = p.grad.copy()
        opt.step()
        twin.step()
    snapshot = _snapshot(opt, params)
    # fail while preparing the third parameter: a strided gradient is copied, and on the
    # first step the state of every parameter is allocated, before any is updated
    params[2].grad = np.asfortranarray(params[2].grad)
    calls = _fail_on_call(monkeypatch, np, "ascontiguousarray", 1)
    with pytest.raises(gk.OutOfMemoryError, match=r"gk\.optim\.Optimizer\.step ran out"):
        opt.step()
    assert len(calls) == 1  # not re-run
    monkeypatch.undo()
    _assert_unchanged(opt, params, snapshot)
    # the next step is the step that failed, done once (no double decay, no double momentum)
    for p, q in zip(params, twin_params, strict=True):
        q.grad = np.ascontiguousarray(p.grad).copy()
    opt.step()
    twin.step()
    for p, q in zip(params, twin_params, strict=True):
        assert np.array_equal(p.data, q.data)


@pytest.mark.parametrize("name", ["sgd_momentum", "adam"])
def test_a_failed_first_step_allocates_no_state(rng, monkeypatch, name):
    params = _params(rng)
    opt = OPTIMIZERS[name](params)
    snapshot = _snapshot(opt, params)
    # the second flat state buffer (momentum: the float32 parameters'; Adam: exp_avg_sq)
    _fail_on_call(monkeypatch, np, "zeros_like", 2)
    with pytest.raises(gk.OutOfMemoryError):
        opt.step()
    monkeypatch.undo()
    _assert_unchanged(opt, params, snapshot)
    assert opt.state == {}


def test_a_failed_kernel_in_a_step_changes_no_parameter(rng, failing_workspace):
    params = _params(rng)
    opt = gk.optim.AdamW(params, lr=0.1)
    snapshot = _snapshot(opt, params)
    with pytest.raises(gk.OutOfMemoryError):
        opt.step()
    assert len(failing_workspace) == 1  # the first kernel; no parameter was written
    _assert_unchanged(opt, params, snapshot)


# -- nn: backward, load_state_dict, to --------------------------------------------------------
def _mlp():
    return gk.nn.Sequential(
        gk.nn.Linear(4, 5, seed=0), gk.nn.ReLU(), gk.nn.Linear(5, 2, seed=1), gk.nn.Tanh()
    )


def test_a_failed_backward_pass_adds_no_gradient(rng, monkeypatch):
    model = _mlp()
    x = rng.standard_normal((6, 4)).astype(np.float32)
    model.backward(np.ones_like(model(x)))  # gradients accumulated once
    before = {n: p.grad.copy() for n, p in model.named_parameters()}
    # the first Linear's backward runs last: the second one has added its gradients by then
    real = gk.nn.Linear._backward

    def fail_first(self, *args):
        if self is model[0]:
            raise MemoryError("injected")
        return real(self, *args)

    monkeypatch.setattr(gk.nn.Linear, "_backward", fail_first)
    model(x)
    with pytest.raises(gk.OutOfMemoryError, match=r"gk\.nn\.Sequential\.backward ran out"):
        model.backward(np.ones((6, 2), np.float32))
    for n, p in model.named_parameters():
        assert np.array_equal(p.grad, before[n]), n
    monkeypatch.undo()
    model.backward(np.ones((6, 2), np.float32))  # and a pass that succeeds adds them all
    for n, p in model.named_parameters():
        assert np.allclose(p.grad, 2 * before[n]), n


def test_backward_before_forward_is_a_runtime_error():
    for module, g in ((gk.nn.Linear(2, 3), np.ones((1, 3), np.float32)),
                      (gk.nn.ReLU(), np.ones(3)), (gk.nn.LayerNorm(3), np.ones((1, 3))),
                      (gk.nn.Softmax(), np.ones(3)), (gk.nn.Dropout(0.5), np.ones(3)),
                      (_mlp(), np.ones((1, 2), np.float32))):  # fmt: skip
        name = type(module).__name__
        with pytest.raises(RuntimeError, match=rf"^{name}\.backward called before forward"):
            module.backward(g)
    with pytest.raises(RuntimeError, match=r"MSELoss\.backward called before the loss"):
        gk.nn.MSELoss().backward()


def test_a_failed_load_state_dict_changes_no_parameter(rng):
    model = _mlp()
    before = {k: v.copy() for k, v in model.state_dict().items()}

    class Broken:
        shape = (2,)

        def __array__(self, dtype=None, copy=None):
            raise MemoryError("injected")

    good = {k: rng.standard_normal(v.shape) for k, v in before.items()}
    with pytest.raises(TypeError, match=r"^2\.bias: a value of dtype complex128 cannot be"):
        model.load_state_dict({**good, "2.bias": good["2.bias"] + 1j})
    with pytest.raises(MemoryError):
        model.load_state_dict({**good, "2.bias": Broken()})
    for k, v in model.state_dict().items():
        assert np.array_equal(v, before[k])


def test_a_failed_move_leaves_every_parameter_where_it_was(rng, monkeypatch, fake_device):
    model = _mlp().to("numpy")
    before = {k: v.copy() for k, v in model.state_dict().items()}
    _fail_on_call(monkeypatch, _dispatch, "asarray", 3)
    with pytest.raises(gk.OutOfMemoryError, match=r"gk\.nn\.Module\.to ran out of memory"):
        model.to("fakedevice")
    monkeypatch.undo()
    for k, v in model.state_dict().items():
        assert type(v) is np.ndarray and np.array_equal(v, before[k])
    model.to("fakedevice")
    assert all(fake_device.owns(p.data) for p in model.parameters())
