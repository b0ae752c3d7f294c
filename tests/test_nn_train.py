"""gk.nn.fit / predict: learning, batching, histories, placement; the digits example."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from subproc import ROOT, checkout_path

import gpukit as gk

from helpers import oracle, rel_err


def _blobs(rng, n=600):
    centers = 5.0 * np.eye(3, 5)  # well separated: > 99% separable
    y = rng.integers(0, 3, n)
    x = (centers[y] + rng.standard_normal((n, 5))).astype(np.float32)
    return x, y


def test_fit_learns_and_reports_history(backend, rng):
    x, y = _blobs(rng)
    model = gk.nn.Sequential(gk.nn.Linear(5, 16), gk.nn.ReLU(), gk.nn.Linear(16, 3))
    opt = gk.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    hist = gk.nn.fit(
        model, gk.nn.CrossEntropyLoss(), opt, x, y, epochs=8, batch_size=64, seed=0,
        validation=(x[:100], y[:100]), progress=False,
    )  # fmt: skip
    assert set(hist) == {"loss", "val_loss", "val_accuracy"}
    assert all(len(v) == 8 for v in hist.values())
    assert hist["loss"][-1] < hist["loss"][0] / 2
    assert hist["val_accuracy"][-1] > 0.95
    out = gk.nn.predict(model, x, batch_size=128)
    assert type(out) is np.ndarray and out.shape == (600, 3)  # host data: host result
    assert (out.argmax(axis=1) == y).mean() > 0.95
    assert model.training


def test_fit_regression_with_host_data(backend, rng):
    x = rng.standard_normal((300, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]])
    model = gk.nn.Sequential(gk.nn.Linear(3, 1))
    opt = gk.optim.Adam(model.parameters(), lr=0.05)
    with pytest.raises(TypeError) as info:  # float64 data, float32 model: never cast silently
        gk.nn.fit(model, gk.nn.MSELoss(), opt, x, y, epochs=1, batch_size=32, progress=False)
    assert str(info.value).startswith("gk.nn.fit: x has dtype float64 but the model's param")
    assert "x.astype('float32')" in str(info.value)
    x, y = x.astype(np.float32), y.astype(np.float32)
    gk.reset_transfer_stats()
    hist = gk.nn.fit(model, gk.nn.MSELoss(), opt, x, y, epochs=30, batch_size=32, progress=False)
    assert hist["loss"][-1] < 1e-3
    if backend.is_device:  # one move per batch and per array, never the whole data at once
        assert gk.transfer_stats().host_to_device.calls >= 2 * 30 * 10


def test_fit_with_data_already_on_the_device(backend, rng):
    x, y = _blobs(rng, 200)
    xd, yd = gk.asarray(x), gk.asarray(y)
    model = gk.nn.Sequential(gk.nn.Linear(5, 3, seed=0))
    opt = gk.optim.SGD(model.parameters(), lr=0.2)
    hist = gk.nn.fit(model, gk.nn.CrossEntropyLoss(), opt, xd, yd, epochs=5, batch_size=20,
                     validation=(xd, yd), progress=False)  # fmt: skip
    assert hist["val_accuracy"][-1] > 0.95
    out = gk.nn.predict(model, xd)
    assert gk.namespace(out) is backend.xp and out.shape == (200, 3)


def test_fit_is_reproducible_with_seed(backend, rng):
    x, y = _blobs(rng, 200)
    results = []
    for _ in range(2):
        model = gk.nn.Sequential(gk.nn.Linear(5, 3, seed=1))
        opt = gk.optim.SGD(model.parameters(), lr=0.1)
        gk.nn.fit(model, gk.nn.CrossEntropyLoss(), opt, x, y, epochs=2, batch_size=16, seed=4,
                  progress=False)  # fmt: skip
        results.append(gk.to_numpy(model[0].weight.data))
    assert np.array_equal(*results)


def test_fit_on_a_device_backend_moves_batches(fake_device, rng):
    x = rng.standard_normal((100, 5)).astype(np.float32)
    y = rng.standard_normal((100, 3)).astype(np.float32)
    model = gk.nn.Sequential(gk.nn.Linear(5, 3, seed=0)).to("fakedevice")

    class Plain:  # the fake device has no fused kernels: a duck-typed optimizer
        def zero_grad(self):
            model.zero_grad()

        def step(self):
            for p in model.parameters():
                p.data -= 0.1 * p.grad

    gk.reset_transfer_stats()
    with gk.transfer_guard("disallow"):  # fit's moves are explicit
        gk.nn.fit(model, gk.nn.MSELoss(), Plain(), x, y, epochs=1, batch_size=25,
                  shuffle=False, progress=False)  # fmt: skip
    assert gk.transfer_stats().host_to_device.calls == 8  # 4 batches of x and of y
    assert all(fake_device.owns(p.data) for p in model.parameters())


def test_model_input_placement(fake_device, rng):
    host_model = gk.nn.Sequential(gk.nn.Linear(2, 2, seed=0)).to("numpy")
    assert host_model([[1.0, 2.0]]).shape == (1, 2)  # lists are fine on the host
    with pytest.raises(gk.DeviceMismatchError, match="parameters are on the host"):
        host_model(gk.asarray(np.ones((1, 2), np.float32)))
    device_model = gk.nn.Sequential(gk.nn.Linear(2, 2, seed=0)).to("fakedevice")
    gk.reset_transfer_stats()
    assert fake_device.owns(device_model(np.ones((1, 2), np.float32)))
    assert gk.transfer_stats().host_to_device.calls == 1
    with gk.transfer_guard("disallow"), pytest.raises(gk.TransferGuardError):
        device_model(np.ones((1, 2), np.float32))


def test_a_device_backend_without_kernels_names_the_one_a_layer_needs(fake_device):
    """An activation layer on a plug-in's device arrays calls an internal kernel (no
    ``gk.kernels`` function): the error names it as internal; a public one by its name."""
    x = fake_device.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(NotImplementedError, match=r"^the internal kernel 'activation' has no "):
        gk.nn.Tanh()(x)
    with pytest.raises(NotImplementedError, match=r"^gk\.kernels\.bias_activation has no "):
        gk.kernels.bias_activation(x, fake_device.asarray(np.ones(3, np.float32)))


@pytest.mark.parametrize("device", [0, 1])
def test_a_device_model_takes_input_on_its_device_only(fake_device, device):
    """Warm and cold: an input of the model's array type on its device is used as it is,
    on another device refused, naming both, without moving it (the check is not a
    plan's: the device of an array is not in its type)."""
    layer = gk.nn.Linear(2, 2, seed=0).to("fakedevice", device=device)
    mine = fake_device.asarray(np.ones((3, 2), np.float32), device=device)
    other = fake_device.asarray(np.ones((3, 2), np.float32), device=1 - device)
    gk.reset_transfer_stats()
    for _ in range(2):
        y = layer(mine)
        assert fake_device.device_of(y) == device
        with pytest.raises(
            gk.DeviceMismatchError,
            match=rf"'parameters' is on fakedevice:{device} but argument 'x' is on "
            rf"fakedevice:{1 - device}",
        ):
            layer(other)
    stats = gk.transfer_stats()
    assert stats.host_to_device.calls == 0 and stats.device_to_device.calls == 0


def _fit(model, opt, x, y, **kwargs):
    kwargs = {"epochs": 1, "batch_size": 2, "progress": False, **kwargs}
    return gk.nn.fit(model, gk.nn.MSELoss(), opt, x, y, **kwargs)


def test_fit_and_predict_errors(rng):
    model = gk.nn.Sequential(gk.nn.Linear(2, 2))
    opt = gk.optim.SGD(model.parameters(), lr=0.1)
    x2, x3 = np.zeros((2, 2), np.float32), np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match="x has 3 samples but y has 2"):
        _fit(model, opt, x3, x2)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        gk.nn.predict(model, x3, batch_size=0)
    with pytest.raises(ValueError, match="epochs must be >= 0"):
        _fit(model, opt, x2, x2, epochs=-1)
    with pytest.raises(ValueError, match="x has no samples"):
        gk.nn.predict(model, np.zeros((0, 2), np.float32))
    # samples along a 1-D x's only axis: Linear(1) takes a batch of one as one sample and
    # predict used to join three-wide outputs into one long vector (found by the fuzz test)
    one_in = gk.nn.Linear(1, 3, seed=0)
    with pytest.raises(ValueError, match=r"not one row per sample; x \(shape \(2,\)\)"):
        gk.nn.predict(one_in, np.zeros(2, np.float32), batch_size=1)
    with pytest.raises(ValueError, match=r"input of shape \(2,\): its last axis must have 1"):
        gk.nn.predict(one_in, np.zeros(2, np.float32), batch_size=2)  # as one_in(x) says
    # a wrong type is a TypeError naming the argument, never an AttributeError from inside
    wrong = [
        (lambda: gk.nn.fit(None, gk.nn.MSELoss(), opt, x2, x2, epochs=1, batch_size=1),
         r"^gk\.nn\.fit: model must be a gk\.nn\.Module, got NoneType"),
        (lambda: gk.nn.fit(model, "mse", opt, x2, x2, epochs=1, batch_size=1),
         r"^gk\.nn\.fit: loss_fn must be a gk\.nn loss"),
        (lambda: gk.nn.fit(model, gk.nn.MSELoss(), model, x2, x2, epochs=1, batch_size=1),
         r"^gk\.nn\.fit: optimizer must have step\(\) and zero_grad\(\)"),
        (lambda: _fit(model, opt, None, x2), r"^gk\.nn\.fit: argument 'x' must be an array"),
        (lambda: _fit(model, opt, x2, None), r"^gk\.nn\.fit: argument 'y' must be an array"),
        (lambda: _fit(model, opt, x2, x2, epochs=1.5), r"epochs must be an integer, got 1\.5"),
        (lambda: _fit(model, opt, x2, x2, batch_size="2"), "batch_size must be an integer"),
        (lambda: _fit(model, opt, x2, x2, validation=x2), "validation must be a pair"),
        (lambda: _fit(model, opt, x2, x2.astype(np.float64)), r"^MSELoss: target has dtype f"),
        (lambda: gk.nn.predict("model", x2), r"^gk\.nn\.predict: model must be a gk\.nn\.Mo"),
        (lambda: gk.nn.predict(model, x2, batch_size=None), "batch_size must be an integer"),
        (lambda: gk.nn.predict(model, x2.astype(np.float64)),
         r"^gk\.nn\.predict: x has dtype float64 but the model's parameters are float32"),
        (lambda: gk.nn.predict(model, np.ma.masked_array(x2)), "masked array"),
    ]  # fmt: skip
    for call, match in wrong:
        with pytest.raises(TypeError, match=match):
            call()
    assert gk.nn.predict(model, [[1.0, 2.0]]).dtype == np.float32  # lists take the model's


def test_digits_example_reaches_97_percent(backend):
    oracle("sklearn")
    sim = [os.environ["CUPYSIM_PATH"]] if os.environ.get("CUPYSIM_PATH") else []  # --cupy=sim
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*sim, *checkout_path()]),
           "GPUKIT_BACKEND": backend.name}  # fmt: skip
    run = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "digits_mlp.py")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    last = run.stdout.strip().splitlines()[-1]
    accuracy = float(last.split()[2].rstrip("%")) / 100
    assert accuracy >= 0.97, run.stdout
    assert run.stdout.splitlines()[0].split() == ["epoch", "loss", "test", "loss", "test", "acc"]


def test_progress_bar_on_request(capsys, rng):
    oracle("tqdm")
    with gk.use_backend("numpy"):  # the bar is the same on every backend
        _fit_with_and_without_a_bar(capsys, rng)


def _fit_with_and_without_a_bar(capsys, rng):
    x = rng.standard_normal((40, 2)).astype(np.float32)
    model = gk.nn.Sequential(gk.nn.Linear(2, 1))
    opt = gk.optim.SGD(model.parameters(), lr=0.01)
    gk.nn.fit(model, gk.nn.MSELoss(), opt, x, x[:, :1], epochs=3, batch_size=8, progress=True)
    assert "3/3" in capsys.readouterr().err
    gk.nn.fit(model, gk.nn.MSELoss(), opt, x, x[:, :1], epochs=3, batch_size=8, progress=False)
    assert capsys.readouterr().err == ""


def test_fit_refuses_data_of_another_backend(fake_device):
    model = gk.nn.Sequential(gk.nn.Linear(2, 1, seed=0)).to("numpy")
    with gk.use_backend("fakedevice"):
        x = gk.asarray(np.ones((4, 2), np.float32))
    with pytest.raises(gk.DeviceMismatchError, match="data is on backend 'fakedevice'"):
        gk.nn.predict(model, x)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_validation_metrics_match_reference(backend, rng, reduction):
    x = rng.standard_normal((30, 5)).astype(np.float32)
    labels = rng.integers(0, 3, 30)
    bits = (rng.random((30, 2)) > 0.5).astype(np.float32)
    w, b = rng.standard_normal((3, 5)), rng.standard_normal(3)
    logits = x.astype(np.float64) @ w.T + b  # the model is not trained: lr = 0
    z = logits - logits.max(axis=1, keepdims=True)
    ce = np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(30), labels])
    for loss_fn, y, out_cols in ((gk.nn.CrossEntropyLoss(reduction), labels, 3),
                                 (gk.nn.BCEWithLogitsLoss(reduction), bits, 2)):  # fmt: skip
        model = gk.nn.Sequential(gk.nn.Linear(5, out_cols))
        model.load_state_dict({"0.weight": w[:out_cols], "0.bias": b[:out_cols]})
        opt = gk.optim.SGD(model.parameters(), lr=0.0)
        hist = gk.nn.fit(model, loss_fn, opt, x, y, epochs=1, batch_size=7,
                         validation=(x, y), progress=False)  # fmt: skip
        if out_cols == 3:
            want_loss, want_acc = ce, np.mean(logits.argmax(axis=1) == labels)
        else:
            o = logits[:, :2]
            per = np.maximum(o, 0) - o * bits + np.log1p(np.exp(-np.abs(o)))
            want_loss = per.sum(axis=1).mean() if reduction == "sum" else per.mean()
            want_acc = np.mean((o > 0) == (bits > 0.5))
        assert abs(hist["val_loss"][0] - want_loss) < 1e-5 * max(1.0, abs(want_loss))
        assert hist["val_accuracy"][0] == pytest.approx(want_acc)


def test_fit_checks_validation_before_training(rng):
    model = gk.nn.Sequential(gk.nn.Linear(2, 1, seed=0))
    before = model[0].weight.data.copy()
    opt = gk.optim.SGD(model.parameters(), lr=0.1)
    x = rng.standard_normal((8, 2)).astype(np.float32)
    with pytest.raises(ValueError, match="same non-zero length; got 8 and 5"):
        gk.nn.fit(model, gk.nn.MSELoss(), opt, x, x[:, :1], epochs=1, batch_size=4,
                  validation=(x, x[:5, :1]), progress=False)  # fmt: skip
    assert np.array_equal(model[0].weight.data, before)  # refused before any step


def test_fit_refuses_data_on_another_device_than_the_model(fake_device):
    model = gk.nn.Sequential(gk.nn.Linear(2, 1, seed=0)).to("fakedevice", device=0)
    x = fake_device.asarray(np.ones((4, 2), np.float32), device=1)
    with pytest.raises(gk.DeviceMismatchError, match=r"fakedevice:1 but .* fakedevice:0"):
        gk.nn.predict(model, x)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_fit_stops_on_a_non_finite_loss_before_updating(backend, rng, bad):
    x = rng.standard_normal((40, 3)).astype(np.float32)
    y = rng.standard_normal((40, 1)).astype(np.float32)
    y[25] = bad  # in the second batch of the first epoch (no shuffle)
    x_ok, y_ok = x[:20], y[:20]
    model = gk.nn.Sequential(gk.nn.Linear(3, 1, seed=0))
    opt = gk.optim.SGD(model.parameters(), lr=0.01)
    gk.nn.fit(model, gk.nn.MSELoss(), opt, x_ok, y_ok, epochs=1, batch_size=20, shuffle=False,
              progress=False)  # fmt: skip
    twin = gk.nn.Sequential(gk.nn.Linear(3, 1, seed=0))
    twin.load_state_dict(model.state_dict())
    twin_opt = gk.optim.SGD(twin.parameters(), lr=0.01)
    gk.nn.fit(twin, gk.nn.MSELoss(), twin_opt, x_ok, y_ok, epochs=1, batch_size=20,
              shuffle=False, progress=False)  # fmt: skip  # what the first batch alone does
    with pytest.raises(gk.NonFiniteError) as info:
        gk.nn.fit(model, gk.nn.MSELoss(), opt, x, y, epochs=3, batch_size=20, shuffle=False,
                  progress=False)  # fmt: skip
    err = info.value
    assert isinstance(err, FloatingPointError)
    assert (err.epoch, err.batch) == (0, 1) and not np.isfinite(err.value)
    assert str(err).startswith(f"gk.nn.fit: the loss is {err.value} at epoch 0, batch 1")
    assert err.history == {"loss": []}
    # stopped before the bad batch's update: exactly the weights after the good batch
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        assert np.array_equal(gk.to_numpy(p.data), gk.to_numpy(q.data))
        assert np.isfinite(gk.to_numpy(p.data)).all()


def test_predict_returns_outputs_and_predict_proba_probabilities(backend, rng):
    x = rng.standard_normal((11, 4)).astype(np.float32)
    w, b = rng.standard_normal((3, 4)) * 20, rng.standard_normal(3) * 20  # large logits
    model = gk.nn.Sequential(gk.nn.Linear(4, 3))
    model.load_state_dict({"0.weight": w, "0.bias": b})
    logits = x.astype(np.float64) @ w.astype(np.float32).T + b.astype(np.float32)
    assert rel_err(gk.nn.predict(model, x, batch_size=4), logits) < 1e-5
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax = z / z.sum(axis=1, keepdims=True)
    probs = gk.nn.predict_proba(model, x, batch_size=4)
    assert type(probs) is np.ndarray and rel_err(probs, softmax) < 1e-5
    sigmoid = 1 / (1 + np.exp(-logits))
    assert rel_err(gk.nn.predict_proba(model, x, activation="sigmoid"), sigmoid) < 1e-5
    assert np.isfinite(gk.to_numpy(probs)).all()
    with pytest.raises(ValueError, match="activation must be 'softmax' or 'sigmoid'"):
        gk.nn.predict_proba(model, x, activation="relu")


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_fit_skips_every_update_after_a_bad_batch_until_it_reads_the_device(backend, rng):
    """On a device fit reads its checks every few steps: the batches after a bad one run
    but none of their updates is applied, and the error names the bad batch (docs/nn.rst)."""
    x = rng.standard_normal((40, 3)).astype(np.float32)
    y = rng.integers(0, 2, 40)
    y[9] = 7  # batch 2 of 10 (batch_size 4, no shuffle): a label out of range
    model = gk.nn.Sequential(gk.nn.Linear(3, 2, seed=0))
    twin = gk.nn.Sequential(gk.nn.Linear(3, 2, seed=0))
    opt, twin_opt = (gk.optim.Adam(m.parameters(), lr=0.1) for m in (model, twin))
    loss_fn = gk.nn.CrossEntropyLoss()
    gk.nn.fit(twin, loss_fn, twin_opt, x[:8], y[:8], epochs=1, batch_size=4, shuffle=False,
              progress=False)  # fmt: skip  # what the two good batches alone do
    with pytest.raises(ValueError, match=r"labels must be in \[0, 2\), got values") as info:
        gk.nn.fit(model, loss_fn, opt, x, y, epochs=2, batch_size=4, shuffle=False,
                  progress=False)  # fmt: skip
    if backend.is_device:
        assert "out of range in [7, 7]" in str(info.value)
        assert "at epoch 0, batch 2 (samples 8 to 11" in str(info.value)
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        assert np.array_equal(gk.to_numpy(p.data), gk.to_numpy(q.data))
    assert opt.state_dict()["state"][0]["step"] == 2
