"""Every registered kernel on the GPU against its NumPy reference.

Sizes are not multiples of the block size (1, 7, 1000003 elements; 1 and 10007
classes) and every output buffer is poisoned with NaN before the launch, so an
element a kernel fails to write, or writes out of bounds of its row, shows.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import CASES

import gpukit as gk

from helpers import TOL, rel_err

pytestmark = pytest.mark.gpu

GPU_CASES = [
    pytest.param(kernel, run, dtype, id=f"{kernel}-{cid}-{dtype}")
    for kernel, cid, run in CASES
    for dtype in gk.kernels.KERNELS[kernel].dtypes
]


@pytest.fixture
def cupy_backend():
    status = gk.available_backends()["cupy"]
    if not status.available:
        pytest.skip(f"backend 'cupy' unavailable: {status.reason}")
    with gk.use_backend("cupy") as b:
        yield b


def _poisoned_pool(cp, nbytes: int) -> None:
    """Fill free pool memory with NaN: the outputs allocated next reuse these blocks.

    All-ones bytes are a NaN as float32 and as float64 alike (a float64 NaN seen as two
    float32 words is a NaN and a 0.0, which would hide an unwritten float32 element).
    """
    blocks = [cp.full(max(1, nbytes), 0xFF, dtype=np.uint8) for _ in range(3)]
    cp.cuda.Device().synchronize()
    del blocks


@pytest.mark.parametrize("kernel, run, dtype", GPU_CASES)
def test_kernel_matches_reference(cupy_backend, kernel, run, dtype, request):
    import cupy as cp

    seed = int(np.random.default_rng().integers(2**62))
    request.node.gpukit_seed = seed
    with gk.use_backend("numpy"):
        want = run(lambda a: a, np.random.default_rng(seed), dtype)
    _poisoned_pool(cp, max(w.nbytes for w in want))
    got = run(cp.asarray, np.random.default_rng(seed), dtype)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, cp.ndarray)
        assert g.shape == w.shape and g.dtype == w.dtype
        host = cp.asnumpy(g)
        assert np.isfinite(host).all(), f"{kernel}: unwritten (NaN) or non-finite outputs"
        # Each side rounds differently (FMA contraction, libdevice vs libm): a few ulps.
        assert rel_err(host, w) < TOL[np.dtype(dtype)] * 10


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
