"""Device memory: stats, limits, the out-of-memory policy, pinned transfers, info."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

import gpukit as gk
from gpukit import _info
from gpukit._dispatch.inputs import prepare
from gpukit._runtime.memory import operation
from gpukit._select import configure as _memlimit
from gpukit._select import registry as _registry
from gpukit.errors import GpukitWarning

from fakedevice import FakeDeviceBackend, FakeOutOfMemory
from helpers import oracle, rel_err

MiB = 2**20


@operation("gk.test_scale")
def scale(x, factor, out=None):
    """A front-end operation as the other areas write them, on the fake device's kernel."""
    backend, (x,) = prepare(x, names=("x",))
    return backend.scale(x, factor, out=out)


@operation("gk.test_empty")
def empty(nbytes):
    """An operation that allocates ``nbytes`` on the active backend."""
    return gk.xp.empty(nbytes, dtype=np.uint8)


@pytest.fixture
def fake():
    """A fresh fake device (its own pool counters), active for the test."""
    backend = FakeDeviceBackend()
    # Arrays find their backend through the registry, so the fresh instance must be the
    # registered one (another test may already have loaded the default instance).
    gk.register_backend("fakedevice", lambda: backend, replace=True)
    try:
        with gk.use_backend("fakedevice"):
            yield backend
    finally:
        gk.register_backend("fakedevice", FakeDeviceBackend, replace=True)


def device_array(backend, rng, n=64):
    return backend.asarray(rng.standard_normal(n).astype(np.float32))


# -- stats ----------------------------------------------------------------------------------
def test_memory_stats_numpy_contract():
    with gk.use_backend("numpy"):
        s = gk.memory_stats()
        assert gk.memory_stats(0) == dataclasses.replace(s, free=gk.memory_stats(0).free)
        with pytest.raises(ValueError, match="device 5 is out of range"):
            gk.memory_stats(5)
    assert (s.backend, s.device) == ("numpy", 0)
    # NumPy has no pool and counts nothing: those figures are unknown, not invented.
    assert s.in_use is s.pool_held is s.pool_unused is s.limit is None
    assert isinstance(s.total, int) and isinstance(s.free, int)
    assert 0 < s.free <= s.total
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.free = 0


def test_memory_stats_counts_pool(fake):
    fake.allocate(3 * MiB)
    fake.cached[0] = MiB
    s = gk.memory_stats()
    assert (s.backend, s.device, s.in_use, s.pool_held, s.pool_unused) == (
        "fakedevice",
        0,
        3 * MiB,
        4 * MiB,
        MiB,
    )
    assert s.free == fake.memory_total - 4 * MiB
    assert gk.memory_stats(1).in_use == 0


def test_empty_cache_releases_active_backend(fake):
    fake.cached[1] = MiB
    gk.empty_cache()
    assert fake.releases == 1
    assert gk.memory_stats(1).pool_unused == 0


# -- out of memory: translation, retry, out= ------------------------------------------------
def test_retry_after_release_succeeds(fake, rng):
    x = device_array(fake, rng)
    fake.fail_allocations(1)
    y = scale(x, 3.0)
    assert fake.releases == 1
    assert rel_err(y, np.asarray(x, dtype=np.float64) * 3.0) < 1e-6


def test_oom_after_retry_is_explained(fake, rng):
    x = device_array(fake, rng)
    fake.fail_allocations(2)
    with pytest.raises(gk.OutOfMemoryError) as info:
        scale(x, 2.0)
    err = info.value
    assert isinstance(err, MemoryError)
    assert fake.releases == 1  # released once, retried once
    assert (err.operation, err.requested) == ("gk.test_scale", x.nbytes)
    assert err.stats.backend == "fakedevice" and err.stats.total == fake.memory_total
    msg = str(err)
    for part in ("gk.test_scale", "fakedevice:0", f"{x.nbytes:,} bytes", "free"):
        assert part in msg
    for fix in ("smaller batch", "gk.empty_cache()", "GPUKIT_MEMORY_LIMIT", "sharding"):
        assert fix in msg
    assert isinstance(err.__cause__, FakeOutOfMemory)


def test_out_is_untouched_on_failure(fake, rng):
    x = device_array(fake, rng)
    sentinel = np.full(x.shape, -7.0, dtype=np.float32)
    # Without the policy the kernel leaves `out` half-written: the hazard is real.
    raw = fake.asarray(sentinel)
    fake.fail_allocations(1)
    with pytest.raises(FakeOutOfMemory):
        fake.scale(x, 2.0, out=raw)
    assert not np.array_equal(raw, sentinel)

    out = fake.asarray(sentinel)
    fake.fail_allocations(2)
    with pytest.raises(gk.OutOfMemoryError):
        scale(x, 2.0, out=out)
    np.testing.assert_array_equal(out, sentinel)


@pytest.mark.parametrize("positional", [False, True])
def test_out_receives_result_on_success(fake, rng, positional):
    x = device_array(fake, rng)
    out = fake.asarray(np.zeros(x.shape, dtype=np.float64))
    fake.fail_allocations(1)  # also through a retry
    y = scale(x, -1.5, out) if positional else scale(x, -1.5, out=out)
    assert y is out
    assert rel_err(out, np.asarray(x, dtype=np.float64) * -1.5) < 1e-6


def test_out_casting_follows_numpy(fake, rng):
    x = device_array(fake, rng)
    out = fake.asarray(np.full(x.shape, 5, dtype=np.int32))
    with pytest.raises(TypeError):  # float into int is not a same_kind cast
        scale(x, 2.0, out=out)
    np.testing.assert_array_equal(out, 5)


def test_other_errors_pass_through(fake):
    @operation("gk.test_bad")
    def bad():
        raise ValueError("argument 'x' must be 2-D")

    with pytest.raises(ValueError, match="must be 2-D"):
        bad()
    assert fake.releases == 0


def test_nested_operations_retry_once(fake, rng):
    x = device_array(fake, rng)

    @operation("gk.test_outer")
    def outer(x):
        return scale(x, 2.0)

    fake.fail_allocations(5)
    with pytest.raises(gk.OutOfMemoryError, match=r"gk\.test_scale"):
        outer(x)
    assert fake.releases == 1


def test_numpy_oom_is_translated():
    shape = (10**6, 10**6, 100)  # 400 TB of float32: malloc refuses at once
    with gk.use_backend("numpy"):

        @operation("gk.test_huge")
        def huge():
            return np.empty(shape, dtype=np.float32)

        with pytest.raises(gk.OutOfMemoryError) as info:
            huge()
    assert info.value.requested == 4 * 10**14
    assert f"{4 * 10**14:,} bytes" in str(info.value)
    assert "gk.test_huge" in str(info.value) and "no memory pool" in str(info.value)
    assert info.value.stats.backend == "numpy"


def test_numpy_requested_bytes():
    mod = importlib.import_module("gpukit_numpy.memory")
    assert mod.requested_bytes(ValueError()) is None
    assert mod.requested_bytes(MemoryError()) == -1
    try:
        np.empty((10**7, 10**7, 10), dtype=np.complex64)
    except MemoryError as exc:
        assert mod.requested_bytes(exc) == 8 * 10**15


def test_cupy_oom_bytes():
    cupy = oracle("cupy")
    oom_bytes = importlib.import_module("gpukit_cupy.memory").oom_bytes
    assert oom_bytes(cupy.cuda.memory.OutOfMemoryError(123_456, 1000, 0)) == 123_456
    assert oom_bytes(cupy.cuda.memory.OutOfMemoryError(2048, 1000, 4096)) == 2048
    assert oom_bytes(cupy.cuda.runtime.CUDARuntimeError(2)) == -1  # cudaErrorMemoryAllocation
    assert oom_bytes(cupy.cuda.runtime.CUDARuntimeError(1)) is None  # cudaErrorInvalidValue
    assert oom_bytes(MemoryError("host")) is None  # the host backend's, not CuPy's
    assert oom_bytes(ValueError("CUBLAS_STATUS_ALLOC_FAILED")) is None  # not from CuPy


# -- limits ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("4000000000", ("bytes", 4_000_000_000)),
        (4_000_000_000, ("bytes", 4_000_000_000)),
        (np.int64(1024), ("bytes", 1024)),
        ("4GiB", ("bytes", 4 * 2**30)),
        ("512 MB", ("bytes", 512 * 10**6)),
        ("1.5gib", ("bytes", 3 * 2**29)),
        ("80%", ("percent", 80.0)),
        ("100%", ("percent", 100.0)),
        ("none", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_limit(value, expected):
    assert _memlimit.parse_limit(value, "GPUKIT_MEMORY_LIMIT") == expected


@pytest.mark.parametrize(
    "value", ["abc", "-5", "0", "0%", "150%", "4G", "4 GB x", "80 %%", 0.8, True, -1, 0]
)
def test_parse_limit_rejects(value):
    with pytest.raises(ValueError) as info:
        _memlimit.parse_limit(value, "GPUKIT_MEMORY_LIMIT")
    assert "GPUKIT_MEMORY_LIMIT" in str(info.value) and repr(value) in str(info.value)


@pytest.fixture
def fresh_backend():
    """Register a fresh fake device under a new name; yields its name."""
    gk.register_backend("fakemem", FakeDeviceBackend, replace=True)
    yield "fakemem"
    gk.unregister_backend("fakemem")


def test_env_limit_applied_before_first_use(monkeypatch, fresh_backend):
    monkeypatch.setenv("GPUKIT_MEMORY_LIMIT", "25%")
    backend = _registry.load(fresh_backend)
    assert backend.limits == [2**28, 2**28]
    with gk.use_backend(fresh_backend):
        assert gk.memory_stats(1).limit == 2**28


def test_bad_env_limit_fails_first_use(monkeypatch, fresh_backend):
    monkeypatch.setenv("GPUKIT_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match=r"GPUKIT_MEMORY_LIMIT must be .*'lots'"):
        _registry.load(fresh_backend)
    monkeypatch.setenv("GPUKIT_MEMORY_LIMIT", "1MiB")
    assert _registry.load(fresh_backend).limits == [MiB, MiB]


def test_env_limit_checked_on_host(monkeypatch):
    from gpukit_numpy import NumpyBackend

    monkeypatch.setenv("GPUKIT_MEMORY_LIMIT", "200%")
    with pytest.raises(ValueError, match=r"GPUKIT_MEMORY_LIMIT .*'200%'"):
        _memlimit.configure(NumpyBackend())
    monkeypatch.setenv("GPUKIT_MEMORY_LIMIT", "80%")
    _memlimit.configure(NumpyBackend())  # valid; nothing to cap on the host


def test_set_memory_limit_per_device(fake, rng):
    gk.set_memory_limit("1KiB", device=1)
    assert fake.limits == [None, 1024]
    gk.set_memory_limit("50%")
    assert fake.limits == [2**29, 2**29]
    with pytest.raises(ValueError, match=r"set_memory_limit limit must be .*'8 bits'"):
        gk.set_memory_limit("8 bits")
    with pytest.raises(ValueError, match="device 2 is out of range"):
        gk.set_memory_limit(MiB, device=2)
    gk.set_memory_limit(None)
    assert fake.limits == [None, None]


def test_allocation_above_limit_then_recovery(fake, rng):
    x = device_array(fake, rng, n=1024)  # 4 KiB
    gk.set_memory_limit(1024)
    with pytest.raises(gk.OutOfMemoryError) as info:
        scale(x, 2.0)
    assert info.value.stats.limit == 1024 and "capped at 1.00 KiB" in str(info.value)
    gk.set_memory_limit(None)
    assert rel_err(scale(x, 2.0), np.asarray(x, dtype=np.float64) * 2) < 1e-6


def test_set_memory_limit_on_host_warns():
    with gk.use_backend("numpy"):
        with pytest.raises(ValueError):
            gk.set_memory_limit("-1GiB")
        with pytest.warns(GpukitWarning, match=r"no memory pool .* not enforced"):
            gk.set_memory_limit("4GiB")
        assert gk.memory_stats().limit is None


# -- pinned transfers -----------------------------------------------------------------------
def test_pinned_asarray_is_a_counted_transfer(fake, rng):
    x = rng.standard_normal((8, 5))
    gk.reset_transfer_stats()
    y = gk.asarray(x, dtype="float32", pinned=True)
    assert fake.owns(y) and y.dtype == np.float32
    assert rel_err(y, x) < 1e-6
    h2d = gk.transfer_stats().host_to_device
    assert (h2d.calls, h2d.bytes) == (1, x.size * 4)


def test_pinned_on_host_backend(rng):
    x = rng.standard_normal(6)
    with gk.use_backend("numpy"):
        buf = gk.empty_pinned(6)
        buf[...] = x
        y = gk.asarray(buf, pinned=True)
    assert type(y) is np.ndarray and rel_err(y, x) == 0


# -- gpukit info and the one byte formatter -------------------------------------------------
def test_format_bytes():
    from gpukit._runtime.memstats import format_bytes

    assert format_bytes(None) == "unknown"
    assert format_bytes(1023) == "1,023 bytes"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(3 * 2**30, exact=True) == "3.00 GiB (3,221,225,472 bytes)"
    assert format_bytes(5 * 2**40) == "5.00 TiB"


def test_info_renders_pool_figures_with_the_shared_formatter(fake):
    info = _info.collect()
    fake_rows = [d for d in info["devices"] if d["device"].startswith("fakedevice")]
    assert [d["device"] for d in fake_rows] == ["fakedevice:0", "fakedevice:1"]
    memory = {"free": 2**30, "in_use": 512 * MiB, "pool_held": 2**30, "limit": None}
    info["devices"] = [{**fake_rows[0], "memory": {**memory, "pool_unused": 512 * MiB}}]
    text = _info.render(info)
    assert "memory 1.00 GiB" in text  # the fake device's total
    assert "free 1.00 GiB, pool 1.00 GiB (in use 512.00 MiB, unused 512.00 MiB), limit none" in text


def test_info_shows_memory_per_device():
    info = _info.collect()
    host = next(d for d in info["devices"] if d["device"] == "numpy:0")
    assert host["memory"]["pool_held"] is None and host["memory"]["free"] > 0
    assert "no memory pool" in _info.render(info)


# -- on a GPU -------------------------------------------------------------------------------
gpu_only = pytest.mark.parametrize(
    "backend", [pytest.param("cupy", marks=pytest.mark.gpu)], indirect=True
)


@gpu_only
def test_gpu_allocation_above_limit(backend):
    held = gk.memory_stats().in_use
    gk.set_memory_limit(held + 64 * MiB)
    try:
        with pytest.raises(gk.OutOfMemoryError) as info:
            empty(2**30)
        err = info.value
        assert (err.operation, err.requested) == ("gk.test_empty", 2**30)
        assert err.stats.limit == held + 64 * MiB and err.stats.free > 0
        assert "gk.test_empty" in str(err) and f"{2**30:,} bytes" in str(err)
    finally:
        gk.set_memory_limit(None)
    y = empty(2**30)  # the process keeps working
    assert y.nbytes == 2**30


@gpu_only
def test_gpu_empty_cache_returns_memory(backend):
    x = empty(2**30)
    del x
    before = gk.memory_stats()
    assert before.pool_unused >= 2**30
    gk.empty_cache()
    after = gk.memory_stats()
    # free_all_blocks keeps blocks split with a live neighbour, so not necessarily 0
    assert after.pool_unused <= before.pool_unused - 2**30
    assert after.free >= before.free + 2**30 * 9 // 10


@gpu_only
def test_gpu_pinned_transfer(backend, rng):
    x = rng.standard_normal((257, 33))
    staged = gk.asarray(x, pinned=True)
    pinned = gk.empty_pinned(x.shape, x.dtype)
    pinned[...] = x
    direct = gk.asarray(pinned, pinned=True)
    assert backend.owns(staged) and backend.owns(direct)
    assert rel_err(staged, x) == 0 and rel_err(direct, x) == 0
