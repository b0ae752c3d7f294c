"""The memory pool, out-of-memory errors and pinned memory (cupy/cuda/memory.py, pinned)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from simhelpers import run_sim


@pytest.fixture
def pool(cp):
    p = cp.get_default_memory_pool()
    p.free_all_blocks()
    yield p
    p.set_limit(size=0)
    p.free_all_blocks()


def test_sizes_round_to_512_and_freed_blocks_are_cached(cp, pool):
    used = pool.used_bytes()
    x = cp.empty(100, dtype=np.uint8)
    assert pool.used_bytes() - used == 512
    del x
    big = 3 * 2**20 + 100  # its own block
    x = cp.empty(big, dtype=np.uint8)
    ptr = x.data.ptr
    del x
    assert pool.free_bytes() >= big
    y = cp.empty(big - 50, dtype=np.uint8)  # the cached block comes back
    assert y.data.ptr == ptr
    del y
    total = pool.total_bytes()
    pool.free_all_blocks()
    assert pool.total_bytes() <= total - big


def test_pools_are_per_device(cp, pool):
    with cp.cuda.Device(1):
        before = pool.used_bytes()
        x = cp.empty(1024, dtype=np.uint8)
        assert pool.used_bytes() - before == 1024
    assert x.device.id == 1


def test_limit_raises_cupys_out_of_memory_error(cp, pool):
    held = pool.total_bytes()  # blocks of arrays still alive
    pool.set_limit(size=held + 4096)
    assert pool.get_limit() == held + 4096
    with pytest.raises(cp.cuda.memory.OutOfMemoryError) as info:
        cp.empty(10_000, dtype=np.uint8)
    assert str(info.value) == (
        f"Out of memory allocating 10,240 bytes (allocated so far: {held:,} bytes, "
        f"limit set to: {held + 4096:,} bytes)."
    )
    assert info.value.__reduce__()[1] == (10240, held, held + 4096)
    e = pickle.loads(pickle.dumps(info.value))
    assert isinstance(e, MemoryError) and str(e) == str(info.value)
    pool.set_limit(fraction=0.5)
    assert pool.get_limit() == cp.cuda.Device().mem_info[1] // 2


def test_the_limit_frees_cached_blocks_before_failing(cp, pool):
    held = pool.total_bytes()
    x = cp.empty(3072, dtype=np.uint8)
    del x  # cached
    pool.set_limit(size=held + 4096)
    y = cp.empty(4096, dtype=np.uint8)  # memory.pyx _try_malloc frees the cache, retries
    assert y.nbytes == 4096 and pool.total_bytes() == held + 4096


def test_device_memory_is_finite():
    code = """
import cupy
free, total = cupy.cuda.runtime.memGetInfo()
print(total)
x = cupy.empty(600_000, dtype='u1')
print(total - cupy.cuda.runtime.memGetInfo()[0])
try:
    cupy.empty(600_000, dtype='u1')
except cupy.cuda.memory.OutOfMemoryError as e:
    print(e)
"""
    r = run_sim(code, CUPYSIM_MEMORY="1000000")
    assert r.stdout.splitlines() == [
        "1000000",
        "600064",
        "Out of memory allocating 600,064 bytes (allocated so far: 600,064 bytes).",
    ], r.stderr


def test_pinned_memory(cp):
    import cupyx

    p = cupyx.empty_pinned((4, 3), dtype=np.float32)
    assert isinstance(p, np.ndarray) and cp.cuda.pinned_memory.is_memory_pinned(p.ctypes.data)
    assert not cp.cuda.pinned_memory.is_memory_pinned(np.empty(4).ctypes.data)
    mem = cp.cuda.alloc_pinned_memory(100)
    assert cp.cuda.pinned_memory.is_memory_pinned(mem.ptr)
    pinned = cp.get_default_pinned_memory_pool()
    del mem
    assert pinned.n_free_blocks() >= 1
    pinned.free_all_blocks()
    assert pinned.n_free_blocks() == 0


def test_async_set_on_a_stream(cp):
    import cupyx

    host = cupyx.zeros_pinned(5)
    host[...] = np.arange(5)
    x = cp.empty(5)
    s = cp.cuda.Stream()
    x.set(host, stream=s)
    e = s.record()
    assert e.done
    np.testing.assert_array_equal(x.get(), np.arange(5))


def test_pool_and_checker_under_concurrent_threads(cp, pool):
    """Four threads allocate, compute and free on two devices and their own streams at once:
    no two live arrays share memory, every result is right, the pool's counts balance."""
    import gc
    import threading

    gc.collect()  # earlier tests' garbage freed now: the counts below must not move
    errors, live = [], []
    lock = threading.Lock()

    def work(tid):
        try:
            with cp.cuda.Device(tid % 2):
                s = cp.cuda.Stream(non_blocking=True)
                with s:
                    for i in range(60):
                        x = cp.full(100 + 37 * ((tid + i) % 5), float(tid))
                        y = x * 2 + i
                        with lock:
                            live.append((y.data.ptr, y.nbytes))
                        assert float(y[0].get(stream=s)) == 2.0 * tid + i
                        with lock:
                            live.remove((y.data.ptr, y.nbytes))
                s.synchronize()
        except BaseException as exc:
            errors.append(exc)

    used = [None, None]
    for d in (0, 1):
        with cp.cuda.Device(d):
            used[d] = pool.used_bytes()
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for d in (0, 1):
        with cp.cuda.Device(d):
            assert pool.used_bytes() == used[d]


def test_an_arena_holding_free_chunks_survives_garbage_collection(cp):
    # memory.pyx _Arena: the pool keeps arenas by weak reference, but an arena's free
    # chunks sit in a C++ std::set the collector cannot traverse, so it lives until
    # free_all_blocks empties it; the pool's figures never lose track of its bytes.
    import gc

    pool = cp.get_default_memory_pool()
    gc.collect()  # earlier tests' garbage freed now, not in the middle of this one
    pool.free_all_blocks()
    base, used = pool.total_bytes(), pool.used_bytes()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x = cp.ones(1000)
    del x  # a free chunk in the stream's arena
    stream.synchronize()
    gc.collect()
    assert pool.total_bytes() == base + 8192 and pool.used_bytes() == used
    pool.free_all_blocks()
    assert pool.total_bytes() == base
