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


@pytest.mark.xfail(
    strict=True,
    reason="issue 15 item 5: the CUDA softmax cross-entropy returns NaN for rows with -inf "
    "(masked) logits; tests/cupysim/KERNEL_FAILURES.md",
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_cross_entropy_with_masked_logits(cupy_backend, dtype, rng):
    import cupy as cp

    logits = rng.standard_normal((7, 5)).astype(dtype) * 5
    labels = rng.integers(0, 5, 7)
    mask = rng.random((7, 5)) < 0.4
    mask[np.arange(7), labels] = False  # the target class stays finite
    logits[mask] = -np.inf
    logits[0, labels[0]] = 1e30  # a very large logit
    with gk.use_backend("numpy"):
        want_loss, want_probs = gk.kernels.softmax_cross_entropy(logits, labels)
    loss, probs = gk.kernels.softmax_cross_entropy(cp.asarray(logits), cp.asarray(labels))
    assert np.isfinite(cp.asnumpy(loss)).all()
    assert rel_err(cp.asnumpy(loss), want_loss) < TOL[np.dtype(dtype)] * 10
    assert rel_err(cp.asnumpy(probs), want_probs) < TOL[np.dtype(dtype)] * 10
