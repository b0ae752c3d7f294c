"""Every registered kernel on the GPU against its NumPy reference.

Sizes are not multiples of the block size (1, 7, 1000003 elements; 1 and 10007
classes) and every output buffer is poisoned with NaN before the launch, so an
element a kernel fails to write, or writes out of bounds of its row, shows.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import CASES, INTERNAL_CASES

import gpukit as gk
from gpukit.backend.kernels import spec

from helpers import TOL, rel_err

pytestmark = pytest.mark.gpu

GPU_CASES = [
    pytest.param(kernel, run, dtype, id=f"{kernel}-{cid}-{dtype}")
    for kernel, cid, run in CASES
    for dtype in gk.kernels.KERNELS[kernel].dtypes
]


def _poisoned_pool(cp, nbytes: int) -> None:
    """Fill free pool memory with NaN: the outputs allocated next reuse these blocks.

    All-ones bytes are a NaN as float32 and as float64 alike (a float64 NaN seen as two
    float32 words is a NaN and a 0.0, which would hide an unwritten float32 element).
    """
    blocks = [cp.full(max(1, nbytes), 0xFF, dtype=np.uint8) for _ in range(3)]
    cp.cuda.Device().synchronize()
    del blocks


def _float64_reference(run, seed: int, dtype):
    """The case's outputs from the float64 reference formulas, and the inputs it drew.

    The inputs are drawn in ``dtype`` exactly as on the GPU, then widened, so the only
    difference left is the kernel's rounding. ``matmul_tiled`` takes float32 only: its
    reference formula is the float64 product.
    """
    inputs = []

    def widen(a):
        inputs.append(a)
        return a.astype(np.float64) if a.dtype.kind == "f" else a

    with gk.use_backend("numpy"), pytest.MonkeyPatch.context() as mp:
        mp.setattr(gk.kernels, "matmul_tiled", np.matmul)
        want = run(widen, np.random.default_rng(seed), dtype)
    return want, [np.asarray(a, dtype=np.float64) if a.dtype.kind == "f" else a for a in inputs]


def _scales(kernel: str, inputs: list, want: list) -> list:
    """Per output, the size of the terms its formula adds up (absolute, float64).

    A float32 kernel's error is a few ulps of these terms, not of the result: where they
    cancel (gelu_tanh's derivative for z < -1, 0.5 z (1 + erf) for negative z, probs
    minus target, a momentum step) the result is small and its relative error large.
    Each bound is the textbook one: the sum of the magnitudes of the terms.
    """
    if kernel == "bias_activation":
        x, b = inputs
        return [1.0 + np.abs(x + b)]
    if kernel == "bias_activation_backward":
        gy, x, b = inputs
        gx = np.abs(gy) * (1.0 + np.abs(x + b))  # derivatives are O(1); gelu_tanh's O(|z|)
        return [gx, gx.reshape(-1, b.size).sum(axis=0)]
    if kernel in ("sgd_update", "adam_update"):
        total = sum(np.abs(a) for a in inputs)  # param, grad and the state, elementwise
        return [total for _ in want]
    if kernel == "softmax_cross_entropy":
        logits = inputs[0]
        spread = np.abs(logits - logits.max(axis=1, keepdims=True)).max(axis=1)
        return [1.0 + spread + np.log(logits.shape[1]), 1.0 + spread[:, None]]
    if kernel == "softmax_cross_entropy_backward":
        return [np.broadcast_to(np.abs(inputs[2])[:, None], want[0].shape)]
    a, b = inputs  # matmul_tiled
    return [np.abs(a) @ np.abs(b)]


@pytest.mark.parametrize("kernel, run, dtype", GPU_CASES)
def test_kernel_matches_reference(cupy_backend, kernel, run, dtype, rng, request):
    """Each output element within a few ulps of its formula's terms of the float64 value.

    The seed comes from the ``rng`` fixture (``GPUKIT_TEST_SEED`` replays a failure).
    """
    import cupy as cp

    seed = request.node.gpukit_seed
    want, inputs = _float64_reference(run, seed, dtype)
    _poisoned_pool(cp, max(w.nbytes for w in want))
    got = run(cp.asarray, np.random.default_rng(seed), dtype)
    assert len(got) == len(want)
    u = np.finfo(dtype).eps
    for g, w, scale in zip(got, want, _scales(kernel, inputs, want), strict=True):
        assert isinstance(g, cp.ndarray)
        assert g.shape == w.shape and g.dtype == np.dtype(dtype)
        host = cp.asnumpy(g).astype(np.float64)
        assert np.isfinite(host).all(), f"{kernel}: unwritten (NaN) or non-finite outputs"
        # 64 ulps: libdevice/libm functions (a few ulps each), FMA contraction, and a
        # reduction's order of summation (its error grows with the length summed).
        terms = np.abs(w) + scale
        length = max(1, inputs[0].size // max(1, w.size))  # terms summed per output
        bound = 64 * u * np.sqrt(length) * terms
        worst = np.argmax(np.abs(host - w) - bound)
        assert np.abs(host - w).flat[worst] <= bound.flat[worst], (
            f"{kernel}: element {worst}: {host.flat[worst]!r}, want {w.flat[worst]!r} "
            f"(terms {terms.flat[worst]:.3g})"
        )


@pytest.mark.multi_gpu(2)
def test_kernels_run_on_the_inputs_device(cupy_backend, rng):
    import cupy as cp

    x = rng.standard_normal((7, 5)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    with cp.cuda.Device(1):
        dx, db = cp.asarray(x), cp.asarray(b)
    with cp.cuda.Device(0):  # the current device is not the inputs'
        y = gk.kernels.bias_activation(dx, db, "gelu")
    assert y.device.id == 1
    with gk.use_backend("numpy"):
        want = gk.kernels.bias_activation(x, b, "gelu")
    assert rel_err(y, want) < 1e-6


def _xent_reference(logits, labels, eps):
    """Loss, probs and d(loss)/d(logits) in float64, from their definitions.

    Masked (-inf) logits have probability 0; with ``eps > 0`` they make the loss +inf
    (the smoothed target puts mass on them) and the gradient stays finite, as in PyTorch.
    """
    z = logits.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    rows, c = z.shape
    s = np.exp(z).sum(axis=1)
    probs = np.exp(z) / s[:, None]
    target = np.full(z.shape, eps / c)
    target[np.arange(rows), labels] += 1.0 - eps
    with np.errstate(invalid="ignore"):  # 0 * -inf where eps == 0
        smooth = np.where(target > 0, target * z, 0.0).sum(axis=1)
    return np.log(s) - smooth, probs, probs - target


def _assert_close(got, want, dtype):
    """Elementwise relative agreement (a norm would hide a small row beside a huge one)."""
    got = np.asarray(got, dtype=np.float64)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(
        got[finite], want[finite], rtol=TOL[np.dtype(dtype)] * 10, atol=TOL[np.dtype(dtype)]
    )


def _xent_both_ways(logits, labels, eps, dtype):
    """Forward and backward on the GPU against the float64 reference."""
    import cupy as cp

    want_loss, want_probs, want_grad = _xent_reference(logits, labels, eps)
    loss, probs = gk.kernels.softmax_cross_entropy(
        cp.asarray(logits), cp.asarray(labels), label_smoothing=eps
    )
    grad = gk.kernels.softmax_cross_entropy_backward(
        probs, cp.asarray(labels), cp.ones(len(labels), dtype=dtype), label_smoothing=eps
    )
    _assert_close(cp.asnumpy(loss), want_loss, dtype)
    _assert_close(cp.asnumpy(probs), want_probs, dtype)
    _assert_close(cp.asnumpy(grad), want_grad, dtype)
    with gk.use_backend("numpy"):  # the NumPy twin gives the same answers
        twin_loss, twin_probs = gk.kernels.softmax_cross_entropy(
            logits, labels, label_smoothing=eps
        )
        twin_grad = gk.kernels.softmax_cross_entropy_backward(
            twin_probs, labels, np.ones(len(labels), dtype=dtype), label_smoothing=eps
        )
    _assert_close(twin_loss, want_loss, dtype)
    _assert_close(twin_grad, want_grad, dtype)


@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_cross_entropy_with_masked_logits(cupy_backend, dtype, eps, rng):
    logits = rng.standard_normal((7, 5)).astype(dtype) * 5
    labels = rng.integers(0, 5, 7)
    mask = rng.random((7, 5)) < 0.4
    mask[:, 0] = True  # every row has one (first in some thread's stride: the old NaN)
    mask[np.arange(7), labels] = False  # the target class stays finite
    logits[mask] = -np.inf
    logits[0, labels[0]] = 1e30  # a very large logit
    _xent_both_ways(logits, labels, eps, dtype)
    if eps:  # PyTorch's answer: the loss of a row with a masked class is +inf
        assert np.isinf(_xent_reference(logits, labels, eps)[0][mask.any(axis=1)]).all()


@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_cross_entropy_with_huge_logits(cupy_backend, dtype, eps, rng):
    big = float(np.finfo(np.float32).max)
    logits = rng.standard_normal((6, 5)).astype(dtype)
    labels = rng.integers(0, 5, 6)
    logits[0, labels[0]] = 1e30  # the target dominates: loss 0
    logits[1, (labels[1] + 1) % 5] = 1e30  # another class dominates: loss ~1e30
    logits[2, labels[2]] = big
    logits[3, (labels[3] + 1) % 5] = big
    logits[4] += 1e30  # every logit huge: only their differences matter
    logits[5, :] = big  # a tie at the maximum, and c * max overflows a naive sum
    _xent_both_ways(logits, labels, eps, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_strided_inputs_are_read_in_place(cupy_backend, dtype, rng):
    """CuPy's kernel types read strided inputs directly: the same bits as contiguous copies."""
    import cupy as cp

    def both(fn, *arrays):
        """fn on strided device views and on contiguous copies of them."""
        views = [cp.asarray(a)[::2, 1::3] if a.ndim == 2 else cp.asarray(a)[::2] for a in arrays]
        assert not any(v.flags.c_contiguous for v in views)
        dense = [cp.ascontiguousarray(v) for v in views]
        return fn(*views), fn(*dense)

    big = lambda *shape: (rng.standard_normal(shape) * 3).astype(dtype)  # noqa: E731
    x, gy, b = big(14, 30), big(14, 30), big(20)
    for got, want in (
        both(lambda x, b: gk.kernels.bias_activation(x, b[:10], "gelu"), x, b),
        *zip(
            *both(
                lambda g, x, b: gk.kernels.bias_activation_backward(g, x, b[:10], "silu"), gy, x, b
            ),
            strict=True,
        ),
        both(
            lambda p, lab, gl: gk.kernels.softmax_cross_entropy_backward(
                p, lab[:7] % 10, gl[:7], label_smoothing=0.1
            ),
            big(14, 30),
            rng.integers(0, 10, 14),
            big(14),
        ),
    ):
        np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(want))
    # In-place updates: the gradient may be strided (the updated arrays must be contiguous).
    p0, m0, v0 = big(100), big(100), np.abs(big(100))
    grad = cp.asarray(big(200))[::2]
    for update in (
        lambda p, m, v, g: gk.kernels.sgd_update(p, g, m, lr=0.1, momentum=0.9, nesterov=True),
        lambda p, m, v, g: gk.kernels.adam_update(p, g, m, v, step=3, lr=0.01, weight_decay=0.1),
    ):
        strided = [cp.asarray(a) for a in (p0, m0, v0)]
        dense = [cp.asarray(a) for a in (p0, m0, v0)]
        update(*strided, grad)
        update(*dense, cp.ascontiguousarray(grad))
        for s, d in zip(strided, dense, strict=True):
            np.testing.assert_array_equal(cp.asnumpy(s), cp.asnumpy(d))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_updates_allocate_no_device_memory(cupy_backend, dtype, rng):
    """The in-place updates write into their outputs and copy nothing, a strided grad included."""
    import cupy as cp

    n = 1001
    p, m = (cp.asarray(rng.standard_normal(n).astype(dtype)) for _ in range(2))
    v = cp.asarray(rng.random(n).astype(dtype))
    grad = cp.asarray(rng.standard_normal(2 * n).astype(dtype))[::2]
    updates = (
        lambda: gk.kernels.sgd_update(p, grad, lr=0.1, weight_decay=0.1),
        lambda: gk.kernels.sgd_update(p, grad, m, lr=0.1, momentum=0.9, nesterov=True),
        lambda: gk.kernels.adam_update(p, grad, m, v, step=2, lr=0.01, decoupled=True),
    )
    pool = cp.get_default_memory_pool()
    for update in updates:
        update()  # compiled, and anything cached made
        pool.free_all_blocks()
        before = pool.total_bytes()
        update()
        assert pool.total_bytes() == before


def test_warm_updates_refuse_overlapping_device_arrays(cupy_backend, rng):
    """After warm calls, device arrays that share memory are refused, naming both
    arguments, and nothing is written: an array passed twice, contiguous views of one
    buffer overlapping by as little as one element (their spans compared) and a strided
    gradient reaching into the parameter (the array library's test); adjacent views and
    a strided gradient beside the parameter are accepted and updated as a float64
    reference."""
    import cupy as cp

    p, g, m = (rng.standard_normal(8) for _ in range(3))
    v = rng.random(8)
    dp, dg, dm, dv = (cp.asarray(a) for a in (p, g, m, v))
    for _ in range(3):
        gk.kernels.sgd_update(dp, dg, lr=0.0)
        gk.kernels.adam_update(dp, dg, dm, dv, step=1, lr=0.0)
    flat = cp.asarray(np.concatenate([p, g, rng.standard_normal(8)]))
    before = [cp.asnumpy(a) for a in (dp, dm, dv, flat)]
    refused = [
        (lambda: gk.kernels.sgd_update(dp, dp, lr=0.1), "param and grad"),
        (lambda: gk.kernels.sgd_update(flat[:8], flat[7:15], lr=0.1), "param and grad"),
        (lambda: gk.kernels.sgd_update(flat[8:16], flat[::3], lr=0.1), "param and grad"),
        (lambda: gk.kernels.adam_update(dp, dg, dm, dp, step=2, lr=0.1), "param and exp_avg_sq"),
        (
            lambda: gk.kernels.adam_update(flat[:8], dg, flat[8:16], flat[15:23], step=2, lr=0.1),
            "exp_avg and exp_avg_sq",
        ),
    ]
    for call, match in refused:
        with pytest.raises(ValueError, match=match + " overlap in memory"):
            call()
    for got, want in zip((dp, dm, dv, flat), before, strict=True):
        np.testing.assert_array_equal(cp.asnumpy(got), want)
    host = before[3].copy()
    gk.kernels.sgd_update(flat[:8], flat[8:16], lr=0.25)  # adjacent views
    host[:8] -= 0.25 * host[8:16]
    gk.kernels.sgd_update(flat[:8], flat[8:24:2], lr=0.5)  # strided, beside the parameter
    host[:8] -= 0.5 * host[8:24:2]
    assert rel_err(flat, host) < TOL[np.dtype(np.float64)]


# -- the internal kernels (gpukit.backend.kernels.INTERNAL_KERNELS) --------------------------
@pytest.mark.parametrize(
    "run, dtype",
    [
        pytest.param(run, dtype, id=f"{kernel}-{cid}-{dtype}")
        for kernel, cid, run in INTERNAL_CASES
        if "1000003" not in cid  # the tests below take those sizes
        for dtype in spec(kernel).dtypes
    ],
)
def test_internal_case_runs_as_its_reference(cupy_backend, run, dtype, rng, request):
    """Each case the GPU lane runs under compute-sanitizer launches here as gk.nn launches
    it, and gives what the NumPy reference gives for the same inputs (the tests below
    check each kernel against float64 formulas)."""
    import cupy as cp

    seed = request.node.gpukit_seed
    with gk.use_backend("numpy"):
        want = run(np.asarray, np.random.default_rng(seed), dtype)
    got = run(cp.asarray, np.random.default_rng(seed), dtype)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, cp.ndarray) and g.shape == w.shape and g.dtype == w.dtype
        if w.dtype.kind == "f":
            # 64 ulps of terms up to 64 (inputs of scale 3 and 5: gelu_tanh's derivative
            # adds terms of O(|x|) that cancel to a small result, as the bounds below say)
            bound = 64 * np.finfo(dtype).eps * (np.abs(w) + 64)
            assert (np.abs(cp.asnumpy(g) - w) <= bound).all()
        else:  # the status buffer: what was flagged, exactly
            np.testing.assert_array_equal(cp.asnumpy(g), w)


def _internal(name: str):
    """The GPU launcher and the NumPy reference of internal kernel ``name``."""
    import gpukit_cupy.kernels as gpu
    import gpukit_numpy.kernels as host

    return getattr(gpu, name), getattr(host, name)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows, classes", [(1, 1), (7, 10), (4301, 3)])
def test_softmax_cross_entropy_train(cupy_backend, rows, classes, dtype, eps, reduction, rng):
    """The reduced loss and its gradient in one launch, against float64 definitions; more
    rows than the grid has blocks, and twice in a row (the block counter is reused)."""
    import cupy as cp

    gpu, host = _internal("softmax_cross_entropy_train")
    logits = rng.standard_normal((rows, classes)).astype(dtype) * 5
    labels = rng.integers(0, classes, rows)
    per_row, _, grad = _xent_reference(logits, labels, eps)
    scale = 1.0 / rows if reduction == "mean" else 1.0
    want_loss = np.array(per_row.sum() * scale)
    for _ in range(2):
        loss, g = gpu(cp.asarray(logits), cp.asarray(labels), eps, reduction)
        assert loss.shape == () and loss.dtype == dtype and g.dtype == dtype
        _assert_close(cp.asnumpy(loss), want_loss, dtype)
        _assert_close(cp.asnumpy(g), grad * scale, dtype)
    twin_loss, twin_grad = host(logits, labels, eps, reduction)
    _assert_close(twin_loss, want_loss, dtype)
    _assert_close(twin_grad, grad * scale, dtype)


def test_softmax_cross_entropy_train_flags_bad_labels(cupy_backend):
    import cupy as cp

    gpu, host = _internal("softmax_cross_entropy_train")
    logits, labels = np.zeros((3, 4)), np.array([0, 9, -2])
    big = np.iinfo(np.int64).max
    want = np.array([0, big, big, -big - 1, 0, big, 0, 0], dtype=np.int64)
    want[:5] = [1, 5, -2, 9, 4]
    status = cp.asarray(np.array([0, big, big, -big - 1, 0, big, 0, 0], dtype=np.int64))
    loss, g = gpu(cp.asarray(logits), cp.asarray(labels), 0.0, "mean", status, 5)
    assert np.isnan(float(loss)) and np.isnan(cp.asnumpy(g)[1:]).all()
    np.testing.assert_array_equal(cp.asnumpy(status), want)
    twin = np.array([0, big, big, -big - 1, 0, big, 0, 0], dtype=np.int64)
    host(logits, labels, 0.0, "mean", twin, 5)
    np.testing.assert_array_equal(twin, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_flag_nonfinite(cupy_backend, dtype):
    """The first non-finite value's serial and kind are kept; finite values change nothing."""
    import cupy as cp

    gpu, host = _internal("flag_nonfinite")
    big = np.iinfo(np.int64).max
    fresh = np.array([0, big, big, -big - 1, 0, big, 0, 0], dtype=np.int64)
    calls = [(1.5, 1), (np.inf, 4), (np.nan, 2), (-np.inf, 7)]
    status, twin = cp.asarray(fresh), fresh.copy()
    for value, serial in calls:
        gpu(cp.asarray(np.array(value, dtype=dtype)), status, serial)
        host(np.array(value, dtype=dtype), twin, serial)
    want = fresh.copy()
    want[0], want[5], want[6] = 2, 2, 1  # the NaN of call 2: the earliest serial flagged
    np.testing.assert_array_equal(cp.asnumpy(status), want)
    np.testing.assert_array_equal(twin, want)


def _assert_within_ulps(got, want, scale, dtype) -> None:
    """``got`` (device) within 64 ulps of ``want``'s terms, as the registered kernels."""
    import cupy as cp

    host = cp.asnumpy(got).astype(np.float64)
    assert np.isfinite(host).all(), "unwritten (NaN) or non-finite outputs"
    bound = 64 * np.finfo(dtype).eps * (np.abs(want) + scale)
    assert (np.abs(host - want) <= bound).all(), np.abs(host - want).max()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [1, 7, 1000003])
@pytest.mark.parametrize("act", gk.kernels.ACTIVATIONS)
def test_activation(cupy_backend, act, size, dtype, rng):
    """An activation layer's forward pass on the device: one launch, against the float64
    formula (the NumPy reference on float64 inputs); a strided input is read in place."""
    import cupy as cp

    gpu, host = _internal("activation")
    x = rng.standard_normal((7, size)).astype(dtype) * 3
    want = host(x.astype(np.float64), act, 0.01)
    _poisoned_pool(cp, x.nbytes)
    got = gpu(cp.asarray(x), act, 0.01)
    assert got.shape == x.shape and got.dtype == dtype and got.flags.c_contiguous
    _assert_within_ulps(got, want, 1.0 + np.abs(x), dtype)
    strided = gpu(cp.asarray(x)[::2, ::-1], act, 0.01)  # no copy made first: CuPy indexes it
    assert strided.flags.c_contiguous
    _assert_within_ulps(strided, want[::2, ::-1], 1.0 + np.abs(x[::2, ::-1]), dtype)
    twin = host(x, act, 0.01)
    assert twin.dtype == dtype
    assert np.all(np.abs(twin - want) <= 64 * np.finfo(dtype).eps * (np.abs(want) + 1 + np.abs(x)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [1, 7, 1000003])
@pytest.mark.parametrize("act", gk.kernels.ACTIVATIONS)
def test_activation_backward(cupy_backend, act, size, dtype, rng):
    """``grad_y * act'(x)``, and from the forward output for the activations whose
    derivative is a function of it, against the float64 formulas; the identity's is
    ``grad_y`` itself, as ``bias_activation_backward``'s."""
    import cupy as cp

    from gpukit._host.activations import FROM_OUTPUT

    gpu, host = _internal("activation_backward")
    x = rng.standard_normal((7, size)).astype(dtype) * 3
    gy = rng.standard_normal((7, size)).astype(dtype)
    d_gy = cp.asarray(gy)
    if act == "identity":
        assert gpu(d_gy, cp.asarray(x), act, 0.01, False) is d_gy
        assert host(gy, x, act, 0.01, False) is gy
        return
    scale = np.abs(gy) * (1.0 + np.abs(x))  # derivatives are O(1); gelu_tanh's O(|z|)
    want = host(gy.astype(np.float64), x.astype(np.float64), act, 0.01, False)
    _poisoned_pool(cp, x.nbytes)
    got = gpu(d_gy, cp.asarray(x), act, 0.01, False)
    assert got.shape == x.shape and got.dtype == dtype
    _assert_within_ulps(got, want, scale, dtype)
    strided = gpu(d_gy[:, ::-1], cp.asarray(x)[:, ::-1], act, 0.01, False)
    _assert_within_ulps(strided, want[:, ::-1], scale[:, ::-1], dtype)
    twin = host(gy, x, act, 0.01, False)
    assert np.all(np.abs(twin - want) <= 64 * np.finfo(dtype).eps * (np.abs(want) + scale))
    if act not in FROM_OUTPUT:  # a derivative not written with the output: refused alike
        for run, g in ((gpu, d_gy), (host, gy)):
            with pytest.raises(ValueError, match="not a function of its output"):
                run(g, g, act, 0.01, True)
    else:
        y = _internal("activation")[1](x, act, 0.01)  # the forward output, in dtype
        want = host(gy.astype(np.float64), y.astype(np.float64), act, 0.01, True)
        got = gpu(d_gy, cp.asarray(y), act, 0.01, True)
        _assert_within_ulps(got, want, np.abs(gy) * (1.0 + np.abs(y)), dtype)
