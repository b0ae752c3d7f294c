"""The CuPy rows of the per-call comparison (``asv_bench/calls.py``) for ``gk.kernels`` and
the optimizer steps: each peer launches the kernel gpukit launches, so the difference of
the two is gpukit's own cost on the host (issue 33)."""

from __future__ import annotations

import numpy as np
import pytest

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
