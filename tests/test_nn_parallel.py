"""gk.nn.DataParallel on N = 1..4 virtual CPU devices against training on one device.

The reference is the same model trained without DataParallel on the same batches
(gk.nn itself is checked against PyTorch in test_nn_layers / test_nn_optim).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gpukit as gk
from gpukit._select import registry as _registry

from helpers import rel_err

NumpyBackend = type(_registry.load("numpy"))
F32 = 1e-4  # parameters after a few steps differ by reassociated sums only
F64 = 1e-10


@pytest.fixture(params=[1, 2, 3, 4], ids=lambda n: f"cpu{n}")
def cpu_devices(request: pytest.FixtureRequest):
    with gk.use_backend(NumpyBackend(request.param)) as backend:
        yield backend


def mlp(seed=0, dtype="float32"):
    return gk.nn.Sequential(
        gk.nn.Linear(6, 16, seed=seed), gk.nn.GELU(), gk.nn.Linear(16, 16, seed=seed + 1),
        gk.nn.Tanh(), gk.nn.LayerNorm(16), gk.nn.Linear(16, 3, seed=seed + 2),
    ).to(dtype=dtype)  # fmt: skip


def params_err(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    return max(rel_err(sb[k], np.asarray(gk.to_numpy(sa[k]), dtype=np.float64)) for k in sa)


def step(model, loss_fn, opt, xb, yb, need_input_grad=False):
    opt.zero_grad()
    loss = loss_fn(model(xb), yb)
    g = model.backward(loss_fn.backward(), need_input_grad=need_input_grad)
    opt.step()
    return float(loss), g


OPTIMIZERS = {
    "sgd": lambda p: gk.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3),
    # eps well above float32 rounding of a gradient: with the default 1e-8, Adam's first
    # step lr * g / (|g| + eps) turns a component that cancels to ~3e-8 into a full step
    # whose size depends on summation order (one seed in ~1,500 fits crossed F32)
    "adam": lambda p: gk.optim.Adam(p, lr=1e-2, eps=1e-6),
}
LOSSES = {
    "mse_mean": (gk.nn.MSELoss, "mean"),
    "mse_sum": (gk.nn.MSELoss, "sum"),
    "ce_mean": (gk.nn.CrossEntropyLoss, "mean"),
    "bce_sum": (gk.nn.BCEWithLogitsLoss, "sum"),
}
BATCHES = [13, 2, 1, 7, 4]  # uneven splits and fewer samples than devices


def targets(rng, kind, n):
    if kind.startswith("ce"):
        return rng.integers(0, 3, n)
    if kind.startswith("bce"):
        return (rng.random((n, 3)) > 0.5).astype(np.float64)
    return rng.standard_normal((n, 3))


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
@pytest.mark.parametrize("loss_name", list(LOSSES))
def test_training_matches_one_device(cpu_devices, rng, opt_name, loss_name):
    single, dp = mlp(dtype="float64"), gk.nn.DataParallel(mlp(dtype="float64"))
    assert dp.devices == tuple(range(cpu_devices.device_count()))
    cls, reduction = LOSSES[loss_name]
    loss_fn = cls(reduction=reduction)
    opt1, opt2 = OPTIMIZERS[opt_name](single.parameters()), OPTIMIZERS[opt_name](dp.parameters())
    for n in BATCHES:
        xb = rng.standard_normal((n, 6))
        yb = targets(rng, loss_name, n)
        l1, _ = step(single, loss_fn, opt1, xb, yb)
        l2, _ = step(dp, loss_fn, opt2, xb, yb)
        assert abs(l1 - l2) <= F64 * max(1.0, abs(l1))
    assert params_err(dp, single) < F64
    dp.broadcast_parameters()
    for replica, device in zip(dp.replicas, dp.devices, strict=True):  # identical copies
        for p, q in zip(replica.parameters(), dp.parameters(), strict=True):
            assert np.array_equal(gk.to_numpy(p.data), gk.to_numpy(q.data))  # two devices
            assert cpu_devices.device_of(p.data) == device


def test_input_gradient_and_accumulation_match_one_device(cpu_devices, rng):
    single, dp = mlp(dtype="float64"), gk.nn.DataParallel(mlp(dtype="float64"))
    loss_fn = gk.nn.MSELoss()
    opt1, opt2 = gk.optim.SGD(single.parameters(), lr=0.1), gk.optim.SGD(dp.parameters(), lr=0.1)
    x = rng.standard_normal((2, 9, 6))
    y = rng.standard_normal((2, 9, 3))
    for model, opt in ((single, opt1), (dp, opt2)):
        opt.zero_grad()
        for xb, yb in zip(x, y, strict=True):  # two backward passes accumulate
            loss_fn(model(xb), yb)
            model.gx = model.backward(loss_fn.backward(), need_input_grad=True)
    for p, q in zip(single.parameters(), dp.parameters(), strict=True):
        assert rel_err(q.grad, p.grad) < 1e-12
    assert rel_err(dp.gx, single.gx) < 1e-12
    opt1.step()
    opt2.step()
    assert params_err(dp, single) < 1e-12


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_fit_matches_one_device(cpu_devices, rng, opt_name):
    x = rng.standard_normal((53, 6)).astype(np.float32)  # last batch: 3 rows
    y = rng.integers(0, 3, 53)
    single, dp = mlp(), gk.nn.DataParallel(mlp())
    hists = [
        gk.nn.fit(m, gk.nn.CrossEntropyLoss(), OPTIMIZERS[opt_name](m.parameters()), x, y,
                  epochs=3, batch_size=10, seed=1, validation=(x[:20], y[:20]), progress=False)
        for m in (single, dp)
    ]  # fmt: skip
    for key in hists[0]:
        assert rel_err(hists[1][key], hists[0][key]) < 1e-4
    assert params_err(dp, single) < F32
    assert rel_err(gk.nn.predict(dp, x, batch_size=16), gk.nn.predict(single, x)) < 1e-5


def test_state_dict_has_no_prefix_and_round_trips(tmp_path, rng):
    with gk.use_backend(NumpyBackend(3)):
        dp = gk.nn.DataParallel(mlp(seed=4))
        plain = mlp(seed=9)
        assert list(dp.state_dict()) == list(plain.state_dict())
        gk.nn.save(dp, tmp_path / "w.npz")
        plain.load_state_dict(gk.nn.load(tmp_path / "w.npz"))
        x = rng.standard_normal((7, 6)).astype(np.float32)
        assert rel_err(plain(x), gk.to_numpy(dp(x))) < 1e-6
        fresh = mlp(seed=11)
        dp.load_state_dict(fresh.state_dict())  # every replica uses the loaded values
        assert rel_err(dp(x), gk.to_numpy(fresh(x))) < 1e-6
        assert "DataParallel(" in repr(dp) and "(module): Sequential(" in repr(dp)


def test_modes_and_dropout_streams(rng):
    with gk.use_backend(NumpyBackend(2)):
        dp = gk.nn.DataParallel(gk.nn.Sequential(gk.nn.Linear(4, 64, seed=0), gk.nn.Dropout(0.5)))
        dp.eval()
        assert not any(m.training for r in dp.replicas for m in r.modules())
        x = np.ones((2, 4), dtype=np.float32)
        out = gk.to_numpy(dp(x))
        assert np.array_equal(out[0], out[1])  # no dropout in eval mode
        dp.train()
        assert all(m.training for r in dp.replicas for m in r.modules())
        out = gk.to_numpy(dp(x))
        assert not np.array_equal(out[0] == 0, out[1] == 0)  # independent masks per device


class _Fragile(gk.nn.Module):
    """A Linear that raises on a NaN input row (forward) or NaN gradient (backward)."""

    def __init__(self):
        super().__init__()
        self.lin = gk.nn.Linear(3, 2, seed=0)

    def forward(self, x):
        if np.isnan(np.asarray(x)).any():
            raise FloatingPointError(f"NaN input on device {getattr(x, 'device_id', 0)}")
        return self.lin.forward(x)

    def backward(self, g, *, need_input_grad=True):
        if np.isnan(np.asarray(g)).any():
            raise FloatingPointError("NaN gradient")
        return self.lin.backward(g, need_input_grad=need_input_grad)


def test_error_on_one_device_reaches_caller_without_deadlock(rng):
    backend = NumpyBackend(4)
    result = {}

    def run():
        with gk.use_backend(backend):
            dp = gk.nn.DataParallel(_Fragile())
            x = rng.standard_normal((8, 3)).astype(np.float32)
            dp(x)
            dp.backward(np.ones((8, 2), np.float32), need_input_grad=False)
            before = [p.grad.copy() for p in dp.parameters()]
            bad = x.copy()
            bad[-1, 0] = np.nan  # the last device's rows
            try:
                dp(bad)
            except FloatingPointError as exc:
                result["forward"] = str(exc)
            dp(x)
            g = np.ones((8, 2), np.float32)
            g[0, 0] = np.nan  # the first device's rows
            try:
                dp.backward(g, need_input_grad=False)
            except FloatingPointError as exc:
                result["backward"] = str(exc)
            result["kept"] = all(
                np.array_equal(p.grad, b) for p, b in zip(dp.parameters(), before, strict=True)
            )
            dp(x)  # the workers are still usable
            result["again"] = dp.backward(np.ones((8, 2), np.float32), need_input_grad=True).shape

    t = threading.Thread(target=run)
    t.start()
    t.join(60)  # a deadlock guard, not a timing: the calls return in milliseconds
    assert not t.is_alive(), "DataParallel deadlocked after a device raised"
    assert result == {
        "forward": "NaN input on device 3",
        "backward": "NaN gradient",
        "kept": True,
        "again": (8, 3),
    }


def test_bad_arguments():
    with gk.use_backend(NumpyBackend(2)):
        with pytest.raises(TypeError, match="needs a Module"):
            gk.nn.DataParallel(np.ones(3))
        with pytest.raises(ValueError, match="with parameters"):
            gk.nn.DataParallel(gk.nn.ReLU())
        with pytest.raises(ValueError, match="repeat"):
            gk.nn.DataParallel(mlp(), devices=[1, 1])
        dp = gk.nn.DataParallel(mlp(), devices=[1])
        assert dp.devices == (1,) and dp.module[0].weight.data.device_id == 1
        with pytest.raises(RuntimeError, match=r"DataParallel\.backward called before forward"):
            dp.backward(np.ones((2, 3), np.float32))
        with pytest.raises(ValueError, match="at least one sample"):
            dp(np.ones((0, 6), np.float32))
        with pytest.raises(ValueError, match="move the wrapped module"):
            dp.to(device=0)
        assert dp.to(dtype="float64").module[0].weight.dtype == np.float64


def test_multi_device_example_agrees_with_one_device():
    import os
    import re
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "GPUKIT_BACKEND": "numpy", "GPUKIT_CPU_DEVICES": "3",
           "PYTHONPATH": root}  # fmt: skip
    out = subprocess.run(
        [sys.executable, os.path.join(root, "examples", "multi_device.py")],
        capture_output=True, text=True, check=True, env=env, timeout=300,
    ).stdout  # fmt: skip
    assert "rows per device {0: 768, 1: 768, 2: 768}" in out
    diffs = [float(v) for v in re.findall(r"rel\. difference ([0-9.e+-]+)", out)]
    assert len(diffs) == 2 and diffs[0] < 1e-10 and diffs[1] < 1e-4
