"""Out of memory on the cupy backend: the retry frees cuFFT's cached plans too, and the
error describes the device that ran out, not the current one.

The pools are capped with :func:`gpukit.set_memory_limit` (CuPy's ``MemoryPool.set_limit``),
so the tests run the same on a real GPU and on the simulator; one more runs a simulated
device that is itself small (``CUPYSIM_MEMORY``).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from subproc import ROOT, run_python

import gpukit as gk

from helpers import rel_err, simulated

pytestmark = pytest.mark.gpu

MiB = 2**20


@pytest.fixture
def cupy_backend(cupy_backend):
    """conftest's, with every device's limit lifted and the pools emptied afterwards."""
    yield cupy_backend
    for d in range(cupy_backend.device_count()):
        gk.set_memory_limit(None, device=d)
    gk.empty_cache()


def _device(count: int) -> int:
    return 1 if count > 1 else 0


def test_the_retry_releases_cached_fft_plans(cupy_backend, rng):
    """Plans cached by earlier transforms hold pool memory; the retry gives it back. The
    limit leaves less room than the output alone takes, so the transform succeeds only
    through the retry, whatever size cuFFT's work areas are (on an H200 a 197,504-point
    plan took 12.8 MB, four times the simulator's model)."""
    import cupy

    dev = _device(cupy_backend.device_count())
    gk.empty_cache()
    for k in range(6):  # 6 plans, each shape its own
        gk.fft.fft(gk.asarray(np.ones(196_608 + 64 * k, np.complex128), device=dev))
    host = rng.standard_normal(MiB // 2) + 0j  # 8 MiB in, 8 MiB out
    x = gk.asarray(host, device=dev)
    with gk.device(dev):
        cache = cupy.fft.config.get_plan_cache()
        held = cache.get_curr_memsize()
        assert held >= 8 * MiB, cache  # what the retry can give back: more than is missing
        gk.set_memory_limit(cupy.get_default_memory_pool().used_bytes() + 7 * MiB, device=dev)
    with gk.device(0):
        y = gk.fft.fft(x)
    assert y.device.id == dev and rel_err(y, np.fft.fft(host)) < 1e-12
    with gk.device(dev):
        assert cache.get_curr_memsize() < held  # the earlier plans are gone


def test_empty_cache_clears_the_plans_of_every_device_and_worker(cupy_backend, rng):
    import cupy

    devs = list(range(cupy_backend.device_count()))
    x = rng.standard_normal((4 * len(devs), 64)) + 0j
    gk.sharding.fft(gk.shard(x, devices=devs), axis=1)  # plans in the device workers
    for d in devs:
        gk.fft.fft(gk.asarray(x, device=d))  # and in this thread
        gk.asarray(np.zeros(1 << 20), device=d)  # a whole 8 MiB block, unused once freed
    gc.collect()  # arrays earlier tests left in reference cycles: freed now, not later
    gk.empty_cache()
    for d in devs:
        with gk.device(d):
            assert cupy.fft.config.get_plan_cache().get_curr_size() == 0
            # Whole free blocks are released (the 8 MiB one among them). What may stay is
            # blocks holding arrays earlier tests keep (CuPy cannot release part of a
            # block); gpukit's own long-lived buffers are outside the pool.
            stats = gk.memory_stats(d)
            assert stats.in_use <= stats.pool_held < 1 << 20, stats

    seen = []
    gk.map_shards(
        lambda s: seen.append(cupy.fft.config.get_plan_cache().get_curr_size()) or s,
        gk.shard(x, devices=devs),
    )
    assert seen == [0] * len(devs)


@pytest.mark.multi_gpu(2)
def test_the_error_describes_the_device_that_ran_out(cupy_backend):
    gk.set_memory_limit(100 * MiB, device=0)
    gk.set_memory_limit(64 * MiB, device=1)
    filler = gk.asarray(np.zeros(50 * MiB // 8), device=0)
    x = gk.asarray(np.ones(40 * MiB // 16, np.complex128), device=1)
    with gk.device(0), pytest.raises(gk.OutOfMemoryError) as caught:
        gk.fft.fft(x)  # 40 MiB more on device 1: over its cap, twice
    err = caught.value
    assert "gk.fft.fft ran out of memory on cupy:1" in str(err)
    assert err.stats.device == 1 and err.stats.limit == 64 * MiB
    assert err.stats.in_use >= x.nbytes and err.stats.in_use < filler.nbytes


@pytest.mark.multi_gpu(2)
def test_a_sharded_operation_names_the_device_whose_shard_ran_out(cupy_backend):
    gk.set_memory_limit(64 * MiB, device=1)
    filler = gk.asarray(np.zeros(40 * MiB // 8), device=1)
    s = gk.shard(np.ones((2, 10 * MiB // 16), np.complex128), devices=[0, 1])
    with pytest.raises(gk.OutOfMemoryError) as caught:
        gk.sharding.fft(s, axis=1)
    assert "on cupy:1" in str(caught.value) and caught.value.stats.device == 1
    del filler


def test_a_small_simulated_device_reports_its_own_figures(cupy_backend):
    """The device itself is full (not a pool cap): the figures are device 1's."""
    if not simulated():
        pytest.skip("CUPYSIM_MEMORY sizes simulated devices only (python -m pytest --cupy=sim)")
    code = """
import numpy as np, gpukit as gk
MiB = 2**20
with gk.use_backend("cupy"):
    keep = gk.asarray(np.zeros(56 * MiB // 8), device=0)
    x = gk.asarray(np.ones(24 * MiB // 16, np.complex128), device=1)
    try:
        gk.fft.fft(x)  # 24 MiB out and a 24 MiB plan: more than device 1 has
    except gk.OutOfMemoryError as err:
        s = err.stats
        print(s.device, s.total, s.free, gk.memory_stats(0).free)
        print(err)
"""
    r = run_python(code, env={"CUPYSIM_MEMORY": str(64 * MiB), "CUPYSIM_DEVICES": "2"},
                   extra_path=[str(ROOT / "backends")])  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    figures, message = r.stdout.splitlines()[0], r.stdout
    device, total, free, free0 = (int(v) for v in figures.split())
    assert device == 1 and total == 64 * MiB
    assert free >= 12 * MiB and free0 <= 8 * MiB  # device 1's free memory, not device 0's
    assert "ran out of memory on cupy:1" in message


def test_gpukits_long_lived_buffers_never_hold_a_pooled_block(cupy_backend):
    """A pool splits a cached free block to serve a small request and keeps the whole
    block while any part is used (cupy/cuda/memory.pyx): a status slot or a kernel's
    counter kept for good, cut from a freed 64 MiB block, held all of it against
    ``gk.empty_cache()``."""
    import cupy

    dev = _device(cupy_backend.device_count())
    gk.empty_cache()
    held = gk.memory_stats(dev).pool_held
    with cupy.cuda.Device(dev):
        block = cupy.empty(64 * MiB, dtype=np.uint8)
        del block  # a cached free block of 64 MiB
        kept = cupy_backend.persistent(np.arange(4, dtype=np.int64), dev)
        # the cross-entropy kernel's block counter: one per stream, made at its first use
        with cupy.cuda.Stream():
            logits = gk.asarray(np.array([[0.5, 1.0, -1.0]] * 3, dtype=np.float32))
            loss = gk.nn.CrossEntropyLoss()(logits, gk.asarray(np.array([0, 1, 2])))
            value = float(loss)
        del logits, loss
    gc.collect()
    gk.empty_cache()
    assert gk.memory_stats(dev).pool_held <= held
    assert kept.device.id == dev and kept.get().tolist() == [0, 1, 2, 3]
    # mean over the rows of logsumexp(row) - row[label], labels 0, 1, 2
    want = np.log(np.exp([0.5, 1.0, -1.0]).sum()) - (0.5 + 1.0 - 1.0) / 3
    assert value == pytest.approx(want, rel=1e-6)


def test_a_long_lived_buffer_on_a_full_device_releases_the_pools_blocks_first(cupy_backend):
    """Outside the pool, a buffer needs its own ``cudaMalloc``: when the pool's cached
    blocks fill the device, they are released and the allocation tried again, as the
    pool does before it reports being out of memory."""
    if not simulated():
        pytest.skip("CUPYSIM_MEMORY sizes simulated devices only (python -m pytest --cupy=sim)")
    code = """
import numpy as np, cupy, gpukit as gk
with gk.use_backend("cupy"):
    backend = gk.get_backend()
    block = cupy.empty(64 * 2**20, dtype=np.uint8)  # all of the device
    del block  # cached by the pool
    print(cupy.cuda.runtime.memGetInfo()[0], gk.memory_stats().pool_held)
    kept = backend.persistent(np.arange(3, dtype=np.int64), 0)
    print(kept.get().tolist(), gk.memory_stats().pool_held)
"""
    r = run_python(code, env={"CUPYSIM_MEMORY": str(64 * MiB)},
                   extra_path=[str(ROOT / "backends")])  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    full, after = r.stdout.splitlines()
    assert full == f"0 {64 * MiB}"
    assert after == "[0, 1, 2] 0"


PINNED_INPUTS = {
    "big-endian": lambda h: h.astype(">f8"),
    "big-endian int": lambda h: (h * 10).astype(">i4"),
    "strided": lambda h: h[:, ::2],
    "F-order": lambda h: np.asfortranarray(h),
    "reversed": lambda h: h[::-1],
    "big-endian strided": lambda h: h.astype(">c16")[::2, 1::2],
    "empty": lambda h: h[:0],
    "0-d": lambda h: h[1, 1].copy(),
}


@pytest.mark.parametrize("kind", PINNED_INPUTS)
def test_pinned_staging_takes_what_the_pageable_path_takes(cupy_backend, rng, kind):
    host = PINNED_INPUTS[kind](rng.standard_normal((6, 8)))
    dev = _device(cupy_backend.device_count())
    pageable = gk.asarray(host, device=dev)
    with gk.device(0):
        pinned = gk.asarray(host, device=dev, pinned=True)
    assert pinned.device.id == dev and pinned.shape == host.shape
    assert pinned.dtype == pageable.dtype and pinned.dtype.isnative
    assert np.array_equal(gk.to_numpy(pinned), host)


def test_pinned_staging_of_a_view_of_pinned_memory(cupy_backend, rng):
    buf = gk.empty_pinned((6, 8), np.float32)
    buf[...] = rng.standard_normal((6, 8))
    for view in (buf, buf[:, ::3], buf.T):
        got = gk.asarray(view, pinned=True)
        assert np.array_equal(gk.to_numpy(got), view)
