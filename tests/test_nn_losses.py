"""gk.nn losses: value and d(loss)/d(output) vs PyTorch in float64."""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk

from helpers import TOL, oracle, rel_err

F32 = TOL[np.dtype(np.float32)]


def _torch_loss(torch, name, out, target, reduction, smoothing):
    F = torch.nn.functional
    if name == "mse":
        return F.mse_loss(out, target, reduction=reduction)
    if name == "ce":
        return F.cross_entropy(out, target, reduction=reduction, label_smoothing=smoothing)
    return F.binary_cross_entropy_with_logits(out, target, reduction=reduction)


CASES = [
    ("mse", "mean", 0.0),
    ("mse", "sum", 0.0),
    ("ce", "mean", 0.0),
    ("ce", "sum", 0.0),
    ("ce", "mean", 0.1),
    ("ce", "sum", 0.3),
    ("bce", "mean", 0.0),
    ("bce", "sum", 0.0),
]


@pytest.mark.parametrize(("name", "reduction", "smoothing"), CASES)
def test_loss_matches_torch(backend, rng, name, reduction, smoothing):
    torch = oracle("torch")
    out = (3 * rng.standard_normal((9, 5))).astype(np.float32)
    if name == "mse":
        target = rng.standard_normal((9, 5)).astype(np.float32)
        loss_fn = gk.nn.MSELoss(reduction)
        t_target = torch.from_numpy(target.astype(np.float64))
    elif name == "ce":
        target = rng.integers(0, 5, 9)
        loss_fn = gk.nn.CrossEntropyLoss(reduction, label_smoothing=smoothing)
        t_target = torch.from_numpy(target)
    else:
        target = rng.random((9, 5)).astype(np.float32)
        loss_fn = gk.nn.BCEWithLogitsLoss(reduction)
        t_target = torch.from_numpy(target.astype(np.float64))
    loss = loss_fn(gk.asarray(out), gk.asarray(target))
    grad = loss_fn.backward()
    t_out = torch.from_numpy(out.astype(np.float64)).requires_grad_(True)
    t_loss = _torch_loss(torch, name, t_out, t_target, reduction, smoothing)
    t_loss.backward()
    assert grad.shape == out.shape and grad.dtype == np.float32
    assert rel_err(float(loss), t_loss.item()) < F32
    assert rel_err(grad, t_out.grad.numpy()) < F32


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("reduction", "smoothing"), [("mean", 0.0), ("sum", 0.2)])
def test_cross_entropy_loss_keeps_the_logits_dtype(backend, rng, dtype, reduction, smoothing):
    """The loss is of the logits' dtype (the host's is not cast again: it already is), and
    its value that of the float64 formula."""
    out = (3 * rng.standard_normal((6, 4))).astype(dtype)
    target = rng.integers(0, 4, 6)
    loss = gk.nn.CrossEntropyLoss(reduction, label_smoothing=smoothing)(
        gk.asarray(out), gk.asarray(target)
    )
    z = out.astype(np.float64)
    logp = z - z.max(axis=1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
    per = -(1 - smoothing) * logp[np.arange(6), target] - smoothing / 4 * logp.sum(axis=1)
    want = per.mean() if reduction == "mean" else per.sum()
    assert loss.dtype == dtype
    assert rel_err(float(loss), want) < TOL[np.dtype(dtype)]


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # empty mean
def test_one_cross_entropy_loss_changed_between_calls(backend, rng):
    """One loss object called warm on batches of other sizes, label dtypes, reductions and
    smoothings (a device keeps its kernel per arrays and reduction): each call's loss and
    gradient are those of the float64 formula for that call."""
    loss_fn = gk.nn.CrossEntropyLoss()
    calls = [
        (6, "int64", "mean", 0.0),
        (6, "int64", "mean", 0.0),
        (6, "int32", "mean", 0.0),
        (6, "int64", "sum", 0.0),
        (3, "int64", "sum", 0.2),
        (6, "int64", "mean", 0.1),
        (0, "int64", "sum", 0.0),
        (0, "int64", "mean", 0.0),
        (6, "int64", "mean", 0.0),
    ]
    for rows, labels_dtype, reduction, smoothing in calls:
        loss_fn.reduction, loss_fn.label_smoothing = reduction, smoothing
        out = (3 * rng.standard_normal((rows, 4))).astype(np.float32)
        target = rng.integers(0, 4, rows).astype(labels_dtype)
        loss = float(loss_fn(gk.asarray(out), gk.asarray(target)))
        grad = gk.to_numpy(loss_fn.backward())
        z = out.astype(np.float64)
        logp = z - z.max(axis=1, keepdims=True, initial=-np.inf)
        logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
        onehot = np.eye(4)[target]
        soft = (1 - smoothing) * onehot + smoothing / 4
        per = -(soft * logp).sum(axis=1)
        scale = 1 / rows if reduction == "mean" and rows else 1.0
        if rows == 0 and reduction == "mean":
            assert np.isnan(loss)
        else:
            assert rel_err(loss, per.sum() * scale) < F32
        assert grad.shape == (rows, 4)
        if rows:
            assert rel_err(grad, (np.exp(logp) - soft) * scale) < F32


def test_float16_cross_entropy_is_computed_in_float32(backend, rng):
    """float16 logits are computed in float32 and rounded once, on every backend (the GPU
    kernel was launched on float16 data as if it were float64; found by the capability
    test on the simulator)."""
    torch = oracle("torch")
    out = (3 * rng.standard_normal((9, 5))).astype(np.float16)
    target = rng.integers(0, 5, 9)
    loss_fn = gk.nn.CrossEntropyLoss(label_smoothing=0.1)
    loss = loss_fn(gk.asarray(out), gk.asarray(target))
    grad = loss_fn.backward()
    t_out = torch.from_numpy(out.astype(np.float64)).requires_grad_(True)
    t_loss = torch.nn.functional.cross_entropy(t_out, torch.from_numpy(target), label_smoothing=0.1)
    t_loss.backward()
    assert loss.dtype == grad.dtype == np.float16
    f16 = np.finfo(np.float16).eps  # the float32 result rounded once to float16
    assert rel_err(float(loss), t_loss.item()) < f16
    assert rel_err(grad, t_out.grad.numpy()) < f16


def test_bce_is_stable_for_large_logits():
    loss_fn = gk.nn.BCEWithLogitsLoss("sum")
    out = np.array([200.0, -200.0], dtype=np.float32)
    loss = float(loss_fn(out, np.array([1.0, 0.0], dtype=np.float32)))
    assert loss == 0.0 and np.all(np.isfinite(loss_fn.backward()))


def test_loss_errors():
    with pytest.raises(ValueError, match="reduction must be"):
        gk.nn.MSELoss("none")
    with pytest.raises(ValueError, match="label_smoothing"):
        gk.nn.CrossEntropyLoss(label_smoothing=2.0)
    with pytest.raises(ValueError, match=r"target shape \(3,\) must equal output shape \(2,\)"):
        gk.nn.MSELoss()(np.zeros(2), np.zeros(3))
    with pytest.raises(TypeError, match="integer class labels, got dtype float64"):
        gk.nn.CrossEntropyLoss()(np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(ValueError, match=r"integer class labels of shape \(2,\), got shape \(3,"):
        gk.nn.CrossEntropyLoss()(np.zeros((2, 3)), np.zeros(3, int))
    for classless in ((0, 0), (2, 0)):  # found by the fuzz test: a division by C on CuPy
        with pytest.raises(ValueError, match=r"\(N, C\) with C >= 1 classes"):
            gk.nn.CrossEntropyLoss()(np.zeros(classless), np.zeros(classless[0], int))
    with pytest.raises(TypeError, match=r"MSELoss: target has dtype float64 but the output is fl"):
        gk.nn.MSELoss()(np.zeros(2, np.float32), np.zeros(2))
    with pytest.raises(TypeError, match=r"BCEWithLogitsLoss: target has dtype int64"):
        gk.nn.BCEWithLogitsLoss()(np.zeros(2), np.array([0, 1]))
    with pytest.raises(TypeError, match=r"^MSELoss: argument 'output' must be an array, got None"):
        gk.nn.MSELoss()(None, np.zeros(2))
    with pytest.raises(TypeError, match="label_smoothing must be a real number"):
        gk.nn.CrossEntropyLoss(label_smoothing="0.1")
    with pytest.raises(ValueError, match=r"labels must be in \[0, 3\)"):
        gk.nn.CrossEntropyLoss()(np.zeros((2, 3)), np.array([0, 3]))
    with pytest.raises(ValueError, match=r"got values in \[-1, 0\]"):
        gk.nn.CrossEntropyLoss()(np.zeros((2, 3)), np.array([0, -1], dtype=np.int32))
    with pytest.raises(RuntimeError, match="before the loss"):
        gk.nn.MSELoss().backward()


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint64"])
def test_cross_entropy_refuses_host_labels_out_of_range_of_every_integer_dtype(dtype):
    """One reduction of the labels seen as unsigned finds a label too large and, for
    signed labels, a negative one (each of them huge once unsigned), at every width."""
    logits = np.zeros((3, 4), np.float32)
    bad = [[0, 4, 1]] + ([[0, -1, 1], [-128, 0, 1]] if dtype[0] == "i" else [])
    for labels in bad:
        with pytest.raises(ValueError, match=r"labels must be in \[0, 4\), got values in"):
            gk.nn.CrossEntropyLoss()(logits, np.array(labels, dtype))
    good = np.array([0, 3, 1], dtype)
    assert np.isclose(float(gk.nn.CrossEntropyLoss()(logits, good)), np.log(4), rtol=1e-6)


@pytest.mark.parametrize("labels", [[0, 3], [-1, 0]], ids=["too-large", "negative"])
def test_cross_entropy_refuses_labels_out_of_range_on_every_backend(backend, labels):
    """The same ValueError on every backend: on the host at the call; on a device at the
    next host read (docs/nn.rst), with every optimizer step on that device skipped until
    then (a label out of range gives its row a NaN loss, which a step would spread into
    every weight)."""
    model = gk.nn.Linear(3, 3, dtype="float64", seed=0)
    opt = gk.optim.SGD(model.parameters(), lr=0.5)
    before = gk.to_numpy(model.weight.data).copy()
    x, good = gk.asarray(np.eye(2, 3)), gk.asarray(np.array([0, 1], dtype=np.int32))
    target = gk.asarray(np.array(labels, dtype=np.int32))
    loss_fn = gk.nn.CrossEntropyLoss()
    if not backend.is_device:
        with pytest.raises(ValueError, match=r"labels must be in \[0, 3\), got values in"):
            loss_fn(model(x), target)
        return
    bad = labels[0] if labels[0] else labels[1]
    match = rf"labels must be in \[0, 3\), got values out of range in \[{bad}, {bad}\]"
    for read in (gk.to_numpy, lambda _: gk.synchronize()):
        loss = loss_fn(model(x), target)  # no error yet: a check here would wait for the GPU
        model.backward(loss_fn.backward())
        opt.step()
        opt.zero_grad()
        loss_fn(model(x), good)  # a good batch after the bad one is skipped too
        model.backward(loss_fn.backward())
        opt.step()
        opt.zero_grad()
        with pytest.raises(ValueError, match=match):
            read(loss)
        assert np.array_equal(gk.to_numpy(model.weight.data), before)
    loss_fn(model(x), good)  # reported, the status is clear: steps are applied again
    model.backward(loss_fn.backward())
    opt.step()
    assert not np.array_equal(gk.to_numpy(model.weight.data), before)


@pytest.mark.gpu
@pytest.mark.multi_gpu(2)
def test_one_cross_entropy_loss_on_two_devices(cupy_backend, rng):
    """Warm calls of one loss object on logits that alternate between two GPUs (its kept
    kernels are per device): the loss and gradient are on the logits' device, with the
    float64 formula's values."""
    loss_fn = gk.nn.CrossEntropyLoss()
    for device in (0, 1, 0, 1):
        out = (3 * rng.standard_normal((5, 4))).astype(np.float32)
        target = rng.integers(0, 4, 5)
        x = cupy_backend.asarray(out, device=device)
        loss = loss_fn(x, cupy_backend.asarray(target, device=device))
        grad = loss_fn.backward()
        assert cupy_backend.device_of(loss) == cupy_backend.device_of(grad) == device
        z = out.astype(np.float64)
        logp = z - z.max(axis=1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
        assert rel_err(float(loss), -logp[np.arange(5), target].mean()) < F32
        want = (np.exp(logp) - np.eye(4)[target]) / 5
        assert rel_err(gk.to_numpy(grad), want) < F32


def test_device_losses_refuse_bad_input_as_well_warm_as_cold(fake_device, rng):
    """A loss that took device arrays of a type takes the next ones without checking that
    type again, but not their dtypes, devices or a host target: strings, complex output,
    a host target (moved: counted) and arrays on two devices are treated after valid calls
    as on the first."""
    from helpers import same_errors_warm_as_cold

    x = fake_device.asarray(rng.standard_normal((4, 3)).astype(np.float32))
    t = fake_device.asarray(rng.standard_normal((4, 3)).astype(np.float32))
    words = fake_device.asarray(np.array([["a"] * 3] * 4))
    t1 = fake_device.asarray(rng.standard_normal((4, 3)).astype(np.float32), device=1)
    mse, bce = gk.nn.MSELoss(), gk.nn.BCEWithLogitsLoss()
    failing = [
        lambda: mse(x, words),
        lambda: mse(words, t),
        lambda: bce(x.astype(np.complex64), t.astype(np.complex64)),
        lambda: mse(x, t1),
    ]
    same_errors_warm_as_cold([lambda: mse(x, t), lambda: bce(x, t)], failing)
    host = rng.standard_normal((4, 3)).astype(np.float32)
    before = gk.transfer_stats().host_to_device.calls
    got = mse(x, host)  # warm: the host target is still an implicit, counted transfer
    assert gk.transfer_stats().host_to_device.calls == before + 1
    want = np.mean((np.asarray(x, np.float64) - host) ** 2)
    assert rel_err(float(got), want) < F32


@pytest.mark.gpu
@pytest.mark.multi_gpu(2)
def test_a_warm_loss_runs_on_its_arrays_device_and_refuses_two(cupy_backend, rng):
    """After warm calls on GPU 0, a loss of arrays on GPU 1 (GPU 0 current) computes
    there, and one of arrays on both devices is refused as on a cold call."""
    import cupy

    loss_fn = gk.nn.MSELoss()
    out, target = (rng.standard_normal((4, 3)).astype(np.float32) for _ in range(2))
    want = np.mean((out.astype(np.float64) - target) ** 2)
    with cupy.cuda.Device(0):
        for _ in range(2):
            loss_fn(cupy_backend.asarray(out), cupy_backend.asarray(target))
        got = loss_fn(cupy_backend.asarray(out, device=1), cupy_backend.asarray(target, device=1))
        assert cupy_backend.device_of(got) == 1 and rel_err(float(got), want) < F32
        with pytest.raises(gk.DeviceMismatchError, match="target"):
            loss_fn(cupy_backend.asarray(out, device=1), cupy_backend.asarray(target))
