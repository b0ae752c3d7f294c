"""Every allocation failure reaches the user as gk.OutOfMemoryError, whichever public
callable met it: fast paths, constructors, nn, optimizers, files.

Failures are real where a size makes them so (a product of petabytes: malloc refuses at
once) and injected otherwise (a ``MemoryError`` from a function the callable uses, as
test_memory.py injects them), and each test names the callable whose message it expects.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk
from gpukit import _dispatch
from gpukit.nn import _act

HUGE = 2**40  # elements: 4-8 TiB, refused by malloc at once


def _lazy_huge(dtype=np.float32, shape=(HUGE,)):
    """A huge array that costs nothing: a broadcast view of one element."""
    return np.broadcast_to(np.ones(1, dtype), shape)


def _model():
    return gk.nn.Sequential(gk.nn.Linear(4, 3, seed=0), gk.nn.ReLU(), gk.nn.Linear(3, 2, seed=1))


def _raise_memory_error(*args, **kwargs):
    raise MemoryError("injected")


def _fit(model=None):
    model = model or _model()
    x = np.ones((8, 4), np.float32)
    y = np.ones((8, 2), np.float32)
    opt = gk.optim.SGD(model.parameters(), lr=0.1)
    return gk.nn.fit(model, gk.nn.MSELoss(), opt, x, y, epochs=1, batch_size=4, progress=False)


def _optimizer(opt_cls, params=None):
    params = params or [gk.nn.Parameter(np.ones(3)) for _ in range(2)]
    for p in params:
        p.grad = np.ones(3)
    return opt_cls(params, lr=0.1)


class _Built:
    """A case whose object is built before the failure is injected: ``run(build())``."""

    def __init__(self, build, run) -> None:
        self.build, self.run = build, run

    def __call__(self):
        return self.run(self.built)


def _backward():
    model = _model()
    model(np.ones((2, 4), np.float32))
    model.backward(np.ones((2, 2), np.float32))


def _loss_backward():
    loss_fn = gk.nn.MSELoss()
    loss_fn(np.ones(3), np.zeros(3))
    loss_fn.backward()


# name -> (call, what to inject: None for a real failure, else (object, attribute))
CASES = {
    "gk.matmul": (lambda: gk.matmul(_lazy_huge(shape=(2**22, 1)), np.ones((1, 2**22))), None),
    "gk.asarray": (lambda: gk.asarray(_lazy_huge(np.float64), dtype=np.float32), None),
    "gk.kernels.bias_activation": (
        lambda: gk.kernels.bias_activation(
            _lazy_huge(shape=(HUGE // 2, 2)), np.ones(2, np.float32)
        ),
        None,
    ),
    "gk.nn.Linear": (lambda: gk.nn.Linear(2**24, 2**24), None),
    "gk.nn.LayerNorm": (lambda: gk.nn.LayerNorm((2**24, 2**24)), None),
    "gk.nn.Module.__call__": (
        lambda: gk.nn.Linear(4, 2**10, seed=0)(_lazy_huge(shape=(2**32, 4))),
        None,
    ),
    "gk.nn.loss": (lambda: gk.nn.MSELoss()(_lazy_huge(), _lazy_huge()), None),
    "gk.nn.Sequential.backward": (_backward, (_act, "backward")),
    "gk.nn.loss.backward": (_loss_backward, (gk.nn.MSELoss, "_backward")),
    "gk.nn.fit": (_fit, (_act, "forward")),
    "gk.nn.predict": (
        lambda: gk.nn.predict(_model(), np.ones((3, 4), np.float32)),
        (_act, "forward"),
    ),
    "gk.nn.predict_proba": (
        lambda: gk.nn.predict_proba(_model(), np.ones((3, 4), np.float32)),
        (_act, "forward"),
    ),
    # Adam's moments are allocated at its first step, its flat buffers at construction
    "gk.optim.Optimizer.step": (
        _Built(lambda: _optimizer(gk.optim.Adam), lambda opt: opt.step()),
        (np, "zeros_like"),
    ),
    "gk.optim.Optimizer": (lambda: _optimizer(gk.optim.Adam), (np, "zeros_like")),
    "gk.optim.Optimizer.add_param_group": (
        _Built(
            lambda: _optimizer(gk.optim.SGD),
            lambda opt: opt.add_param_group({"params": [gk.nn.Parameter(np.ones(2))]}),
        ),
        (np, "zeros_like"),
    ),
    "gk.nn.Module.to": (lambda: _model().to("fakedevice"), (_dispatch, "to_numpy")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_allocation_failures_are_out_of_memory_errors(monkeypatch, name):
    call, inject = CASES[name]
    if isinstance(call, _Built):
        call.built = call.build()
    if inject is not None:
        monkeypatch.setattr(*inject, _raise_memory_error)
    with gk.use_backend("numpy"), pytest.raises(gk.OutOfMemoryError) as info:
        call()
    err = info.value
    assert err.operation == name, str(err)
    assert str(err).startswith(f"{name} ran out of memory on numpy:0")
    assert isinstance(err.__cause__, MemoryError)


def test_to_numpy_save_and_load_state_dict_of_a_device_array(fake_device, monkeypatch, tmp_path):
    x = fake_device.asarray(np.ones(3, np.float32))

    def oom(x):
        from fakedevice import FakeOutOfMemory

        raise FakeOutOfMemory(x.nbytes)

    monkeypatch.setattr(fake_device, "to_numpy", oom)
    for call in (
        lambda: gk.to_numpy(x),
        lambda: gk.nn.save({"w": x}, tmp_path / "w.npz"),
        lambda: (
            gk.nn.Linear(3, 1, seed=0)
            .to("numpy")
            .load_state_dict({"weight": x.reshape(1, 3), "bias": np.zeros(1)})
        ),
    ):
        with pytest.raises(gk.OutOfMemoryError, match=r"^gk\.to_numpy ran out of memory on "):
            call()
    assert not list(tmp_path.iterdir())  # no file, no temporary


def test_load_of_a_file_too_big_for_memory(tmp_path, monkeypatch):
    path = tmp_path / "w.npz"
    gk.nn.save({"w": np.ones(3)}, path)
    monkeypatch.setattr(np, "empty", _raise_memory_error)
    with gk.use_backend("numpy"), pytest.raises(gk.OutOfMemoryError, match=r"^gk\.nn\.load ran"):
        gk.nn.load(path)
