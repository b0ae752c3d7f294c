"""Pinned staging buffers on the cupy backend: the host refills one only after the copy that
last read it has completed.

The values are checked on a GPU and on the simulator alike. The simulator also tracks host
memory that an asynchronous copy reads (cupysim/hostcopy.py), so the mutants below (the
wait left out, the buffer released early) must raise ``StreamHazard`` there: on a GPU they
would upload torn batches now and then.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk
from gpukit.nn.train import _Batches

from helpers import simulated

pytestmark = pytest.mark.gpu

sim_only = pytest.mark.skipif(not simulated(), reason="StreamHazard is the simulator's")


@pytest.fixture(autouse=True)
def _settled(cupy_backend):
    """A test's copies complete with it: its staging blocks go back to the pool idle."""
    yield
    gk.synchronize()


def _hazard():
    from cupysim import StreamHazard

    return StreamHazard


class _Forgotten(list):
    """An event list that drops what is stored: the wait before refilling a buffer is lost."""

    def __setitem__(self, index, value) -> None:
        pass


def _batches(cupy_backend, rng):
    data = rng.standard_normal((40, 3)).astype(np.float32)
    return data, _Batches(data, cupy_backend, 0, batch_size=8)


def test_training_batches_reuse_their_staging_buffers_safely(cupy_backend, rng):
    data, batches = _batches(cupy_backend, rng)
    assert batches.pinned
    # five batches, no host synchronisation in between: each buffer is refilled twice
    got = [batches.take(slice(i, i + 8)) for i in range(0, 40, 8)]
    for i, x in enumerate(got):
        assert np.array_equal(gk.to_numpy(x), data[8 * i : 8 * i + 8])


@sim_only
def test_training_batches_without_the_wait_are_caught(cupy_backend, rng):
    _, batches = _batches(cupy_backend, rng)
    batches.events = _Forgotten([None, None])
    batches.take(slice(0, 8))
    batches.take(slice(8, 16))
    with pytest.raises(_hazard(), match="still reading it: the copy read torn data"):
        batches.take(slice(16, 24))  # refills the first buffer while its copy is in flight


def test_pinned_asarray_frees_a_pageable_source_at_once(cupy_backend, rng):
    host = rng.standard_normal(64)
    want = host.copy()
    out = gk.asarray(host, pinned=True)
    host[...] = 0.0  # staged: the caller's array is not read by the copy
    assert np.array_equal(gk.to_numpy(out), want)


@sim_only
def test_pinned_asarray_source_overwritten_too_early_is_caught(cupy_backend, rng):
    buf = gk.empty_pinned(64, np.float64)
    buf[...] = rng.standard_normal(64)
    gk.asarray(buf, pinned=True)  # copied straight from buf, asynchronously
    buf[...] = 0.0  # the docstring: not before the host has waited for the stream
    with pytest.raises(_hazard(), match="torn data"):
        gk.synchronize()


@sim_only
def test_staging_buffer_released_before_its_copy_is_caught(cupy_backend, rng, monkeypatch):
    from gpukit_cupy.memory import CupyMemoryMixin

    monkeypatch.setattr(CupyMemoryMixin, "_hold_until", lambda self, event, staged: None)
    gk.asarray(rng.standard_normal(64), pinned=True)  # its staging block goes back to the pool
    with pytest.raises(_hazard(), match="torn data"):
        gk.asarray(rng.standard_normal(64), pinned=True)  # reuses it, refilled in flight


def test_pinned_uploads_in_a_row_are_each_right(cupy_backend, rng):
    # No host synchronisation in between: each staging buffer must stay out of the pool
    # until its copy has read it, or the next upload refills it under that copy
    hosts = [rng.standard_normal(64) for _ in range(4)]
    got = [gk.asarray(h, pinned=True) for h in hosts]
    for x, h in zip(got, hosts, strict=True):
        assert np.array_equal(gk.to_numpy(x), h)


def test_staging_buffers_return_to_the_pool_once_their_copies_complete(cupy_backend, rng):
    import cupy

    pool = cupy.get_default_pinned_memory_pool()
    pool.free_all_blocks()
    for _ in range(4):
        gk.asarray(rng.standard_normal(64), pinned=True)
        gk.synchronize()
    # each upload lets go of the staging buffers whose copies have completed: the pool
    # has the one before last back (a list keeping finished copies would hold them all)
    assert pool.n_free_blocks() >= 1, "staging buffers of completed copies are still held"
