"""The CuPy rows of the per-call comparison (``asv_bench/calls.py``) for ``gk.kernels``, the
optimizer steps and the ``gk.nn`` layers and losses: each peer asks the device for what
gpukit asks (the same launches, allocations and copies), so the difference of the two is
gpukit's own cost on the host (issue 33)."""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk
from asv_bench import calls

from helpers import simulated

pytestmark = pytest.mark.gpu

#: The rows whose peer is gpukit's own kernel launched directly through CuPy.
KERNEL_ROWS = [
    "kernels.bias_activation 4x8 relu",
    "kernels.bias_activation_backward 4x8 relu",
    "kernels.softmax_cross_entropy 4x8",
    "kernels.softmax_cross_entropy_backward 4x8",
    "kernels.sgd_update 64",
    "kernels.adam_update 64",
    "kernels.matmul_tiled 8x8",
    "optim.SGD step 64",
    "optim.Adam step 64",
    "optim.AdamW step 64",
]
#: Those returning new arrays (the others update theirs in place).
RETURNING = [*KERNEL_ROWS[:4], "kernels.matmul_tiled 8x8"]


@pytest.fixture
def rows(cupy_backend):
    return {label: (ours, peer) for label, ours, peer in calls.rows(cupy_backend.xp)}


def test_every_kernel_row_has_a_cupy_peer(rows):
    assert set(KERNEL_ROWS) <= set(rows)
    assert set(KERNEL_ROWS) <= set(calls.labels())  # the rows asv and tools.peers list


@pytest.mark.parametrize("label", RETURNING)
def test_the_peer_computes_what_gpukit_computes(rows, label):
    # the same compiled kernel on the same arrays and scalars: the same bits
    ours, peer = rows[label]
    got, want = _arrays(ours()), _arrays(peer())
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a.get(), b.get())


def _arrays(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def _device_work(fn) -> list[tuple]:
    """What ``fn`` asks of the simulated device, warm: each launch (kernel, grid, block,
    operands), copy and allocation, in order."""
    import cupysim

    fn()  # warm: kernels compiled, plans made
    with cupysim.trace() as t:
        fn()
    return [
        (e.kind, e.name, e.device, e.nbytes, e.dtype, e.shapes, e.grid, e.block)
        for e in t.events
        if e.kind in ("kernel", "library", "copy", "memset", "alloc", "sync")
    ]


@pytest.mark.parametrize("label", KERNEL_ROWS)
def test_the_peer_asks_the_device_for_what_gpukit_asks(rows, label):
    if not simulated():
        pytest.skip("device work is traced on the CuPy simulator (python -m pytest --cupy=sim)")
    ours, peer = rows[label]
    work = _device_work(ours)
    assert any(kind == "kernel" for kind, *_ in work)
    assert work == _device_work(peer)


#: The user-kernel rows, whose peer is the cupy.ElementwiseKernel / ReductionKernel a CuPy
#: user writes for the same expression (gpukit's CuPy backend launches one such kernel)
USER_KERNEL_ROWS = ["elementwise 16 axpy", "reduction 16 sum of squares"]


@pytest.mark.parametrize("label", USER_KERNEL_ROWS)
def test_the_user_kernel_peer_is_one_cupy_kernel_of_the_same_result(rows, label):
    """Both sides launch one kernel of the same grid over the same operands (only its
    name differs) and agree to float64 rounding (the peer is CuPy's kernel of the
    hand-written CUDA expression, not gpukit's generated one)."""
    ours, peer = rows[label]
    got, want = ours(), peer()
    assert got.shape == want.shape and got.dtype == want.dtype == np.float64
    np.testing.assert_allclose(got.get(), want.get(), rtol=1e-14, atol=0)
    if simulated():
        ours_work, peer_work = _device_work(ours), _device_work(peer)
        assert [w for w in ours_work if w[0] == "kernel"] != []
        assert [w[:1] + w[2:] for w in ours_work] == [w[:1] + w[2:] for w in peer_work]


#: The ``gk.nn`` rows (asv_bench/calls_nn.py): every layer and loss, forward and backward.
NN_ROWS = [label for label in calls.labels() if label.startswith("nn.")]


def test_every_nn_row_has_a_cupy_peer(rows):
    assert len(NN_ROWS) == 26
    assert set(NN_ROWS) <= set(rows)


@pytest.mark.parametrize("label", NN_ROWS)
def test_the_nn_peer_computes_what_gpukit_computes(rows, label):
    """Within float32 rounding (the peers' reductions may add in another order)."""
    ours, peer = rows[label]
    got, want = ours(), peer()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.get(), want.get(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("label", NN_ROWS)
def test_the_nn_peer_asks_the_device_for_what_gpukit_asks(rows, label):
    """The same launches, allocations and copies, in the same order: the rows' difference
    is gpukit's host code alone."""
    if not simulated():
        pytest.skip("device work is traced on the CuPy simulator (python -m pytest --cupy=sim)")
    ours, peer = rows[label]
    assert _device_work(ours) == _device_work(peer)


def test_the_only_device_is_made_current_without_a_switch(cupy_backend, monkeypatch):
    """With one device, it is always the current one: ``use_device(0)`` enters no
    ``cupy.cuda.Device`` (a warm layer call made one per call); any other index is still
    CuPy's to accept or refuse."""
    import cupy

    made = []

    class Spy(cupy.cuda.Device):
        def __init__(self, *args):
            made.append(args)
            super().__init__(*args)

    monkeypatch.setattr(cupy_backend, "_count", 1)
    monkeypatch.setattr(cupy.cuda, "Device", Spy)
    layer = gk.nn.Tanh()
    x = cupy_backend.asarray(np.ones((4, 8), np.float32), device=0)
    layer(x)
    with cupy_backend.use_device(0):
        assert cupy.cuda.runtime.getDevice() == 0
    made.clear()
    np.testing.assert_allclose(layer(x).get(), np.tanh(np.ones((4, 8))), rtol=1e-6)
    layer.backward(x)
    assert made == []
    cupy_backend.use_device(1)
    assert made == [(1,)]
