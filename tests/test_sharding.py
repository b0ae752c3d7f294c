"""Several devices on CPU: virtual devices, sharding, collectives, sharded operations.

Every test runs with N = 1, 2, 3 and 4 virtual CPU devices (a fresh numpy backend
per N, see the ``cpu_devices`` fixture) and against float64 NumPy references.
"""

from __future__ import annotations

import contextvars
import math
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpukit as gk
from gpukit._host.virtual import VirtualDeviceArray
from gpukit._runtime.workers import run_on_devices
from gpukit._select import registry as _registry

from helpers import TOL, rel_err, terms_err

NumpyBackend = type(_registry.load("numpy"))


@pytest.fixture(params=[1, 2, 3, 4], ids=lambda n: f"cpu{n}")
def cpu_devices(request: pytest.FixtureRequest):
    """A numpy backend with N virtual devices, active for the test."""
    with gk.use_backend(NumpyBackend(request.param)) as backend:
        yield backend


def _data(rng, shape, dtype="float64"):
    dt = np.dtype(dtype)
    x = rng.standard_normal(shape)
    if dt.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


# -- virtual devices -----------------------------------------------------------------------


def test_env_var_sets_device_count(monkeypatch):
    monkeypatch.setenv("GPUKIT_CPU_DEVICES", "3")
    backend = NumpyBackend()
    assert backend.device_count() == 3
    assert [d.index for d in backend.devices()] == [0, 1, 2]


# What int() takes but nobody writing the variable means: "1_0" (10), "+2", non-ASCII digits.
BAD_COUNTS = ["0", "-2", "two", "1.5", "1e9", "1_0", "+2", "\u0663", "1025", "99999999999999999999"]


@pytest.mark.parametrize("bad", BAD_COUNTS)
def test_env_var_bad_value_names_variable_and_fix(monkeypatch, bad):
    monkeypatch.setenv("GPUKIT_CPU_DEVICES", bad)
    with pytest.raises(ValueError) as info:
        NumpyBackend().device_count()
    msg = str(info.value)
    assert f"GPUKIT_CPU_DEVICES={bad!r}" in msg
    assert "Fix: set GPUKIT_CPU_DEVICES to a whole number from 1 to 1024" in msg


@pytest.mark.parametrize(("raw", "count"), [(" 3 ", 3), ("1", 1), ("1024", 1024), ("", 1)])
def test_env_var_good_values(monkeypatch, raw, count):
    monkeypatch.setenv("GPUKIT_CPU_DEVICES", raw)
    assert NumpyBackend().device_count() == count


@pytest.mark.parametrize("bad", ["0", "abc", "1e9", "1_0"])
def test_bad_env_var_is_reported_by_available_backends_and_raised_by_selection(monkeypatch, bad):
    import gpukit_numpy

    monkeypatch.setenv("GPUKIT_CPU_DEVICES", bad)
    gk.register_backend("numpy_env", gpukit_numpy.create_backend)  # a fresh numpy backend
    try:
        status = gk.available_backends()["numpy_env"]  # never raises
        assert not status.available
        assert status.reason.startswith(f"misconfigured: GPUKIT_CPU_DEVICES={bad!r}")
        with pytest.raises(ValueError, match=r"Fix: set GPUKIT_CPU_DEVICES"):
            gk.set_backend("numpy_env")
        monkeypatch.setenv("GPUKIT_CPU_DEVICES", "2")  # not remembered: fixing it fixes it
        assert gk.available_backends()["numpy_env"].reason == "2 device(s)"
    finally:
        gk.unregister_backend("numpy_env")


def test_env_var_read_at_first_use_not_import():
    code = (
        "import os, gpukit as gk; os.environ['GPUKIT_CPU_DEVICES'] = '4'; "
        "gk.set_backend('numpy'); print(gk.device_count())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "4"


def test_default_single_device_arrays_stay_plain():
    backend = NumpyBackend(1)
    assert type(backend.asarray([1.0, 2.0], device=0)) is np.ndarray
    with gk.use_backend(backend):
        assert type(gk.asarray([1.0])) is np.ndarray
        assert type(gk.shard(np.ones(3)).shards[0]) is np.ndarray


def test_placed_arrays_carry_their_device(rng):
    backend = NumpyBackend(3)
    x = _data(rng, (4, 2))
    with gk.use_backend(backend):
        assert type(gk.asarray(x)) is np.ndarray  # no device chosen: plain host data
        on2 = gk.asarray(x, device=2)
        with gk.device(1):
            on1 = gk.asarray(x)
    assert (on1.device_id, on2.device_id) == (1, 2)
    assert backend.device_of(on2) == 2
    assert (on2[1:] * 2).device_id == 2  # slices and ufunc results keep the device
    assert np.shares_memory(on2, x)  # a view: placement is free on one memory space
    assert (on2 + x).device_id == 2  # plain host data mixes with any device


def test_mixing_virtual_devices_raises(rng):
    backend = NumpyBackend(2)
    a = backend.asarray(_data(rng, 3), device=0)
    b = backend.asarray(_data(rng, 3), device=1)
    with pytest.raises(gk.DeviceMismatchError, match=r"numpy:0 and numpy:1"):
        a + b
    with pytest.raises(gk.DeviceMismatchError, match=r"argument 'b' is on numpy:1.*'a'.*numpy:0"):
        gk._dispatch.prepare(a, b, names=("a", "b"))
    with pytest.raises(gk.DeviceMismatchError):
        np.multiply(a, a, out=b)


# NumPy's function API (__array_function__), each call mixing devices 0 and 1
MIXING_FUNCTIONS = {
    "concatenate": lambda a, b: np.concatenate([a, b]),
    "stack": lambda a, b: np.stack((a, b)),
    "dot": lambda a, b: np.dot(a, b),
    "vdot": lambda a, b: np.vdot(a, b),
    "inner": lambda a, b: np.inner(a, b),
    "where": lambda a, b: np.where(a > 0, a, b),
    "where_cond": lambda a, b: np.where(b > 0, a, 0.0),
    "copyto": lambda a, b: np.copyto(a, b),
    "allclose": lambda a, b: np.allclose(a, b),
    "einsum": lambda a, b: np.einsum("i,i->", a, b),
    "outer": lambda a, b: np.outer(a, b),
    "hstack": lambda a, b: np.hstack([a, b]),
    "block": lambda a, b: np.block([a, b]),
    "dot_out": lambda a, b: np.dot(a[:1], a[:1].reshape(1, 1), out=b[:1]),
    "kwarg": lambda a, b: np.clip(a, a_min=b, a_max=None),
}


@pytest.mark.parametrize("name", sorted(MIXING_FUNCTIONS))
def test_numpy_functions_mixing_virtual_devices_raise(rng, name):
    backend = NumpyBackend(2)
    a = backend.asarray(_data(rng, 3), device=0)
    b = backend.asarray(_data(rng, 3), device=1)
    with pytest.raises(gk.DeviceMismatchError, match=r"numpy:0 and numpy:1|numpy:1 and numpy:0"):
        MIXING_FUNCTIONS[name](a, b)


def test_numpy_functions_keep_the_device_and_mix_with_host_data(rng):
    backend = NumpyBackend(2)
    x, h = _data(rng, 3), _data(rng, 3)
    a = backend.asarray(x, device=1)
    for result, want in (
        (np.concatenate([a, h]), np.concatenate([x, h])),
        (np.stack([a, a]), np.stack([x, x])),
        (np.where(a > 0, a, h), np.where(x > 0, x, h)),
        (np.outer(a, h), np.outer(x, h)),
    ):
        assert type(result) is VirtualDeviceArray and result.device_id == 1
        assert np.array_equal(result, want)
    assert [p.device_id for p in np.split(a, 3)] == [1, 1, 1]
    assert float(np.dot(a, h)) == pytest.approx(float(np.dot(x, h)))


def test_numpy_queries_on_two_virtual_devices_answer(rng):
    """Functions that read no values (memory overlap, shape, dtype) may see two devices."""
    backend = NumpyBackend(2)
    x = _data(rng, 4)
    a, b = backend.asarray(x, device=0), backend.asarray(x, device=1)
    assert np.shares_memory(a, b) and np.may_share_memory(a, b)  # placement is a view
    assert np.result_type(a, b) == x.dtype and np.shape(b) == (4,)
    assert not np.shares_memory(a, backend.asarray(x.copy(), device=1))


def test_workers_inherit_context_and_run_on_their_device():
    backend = NumpyBackend(3)
    var = contextvars.ContextVar("probe", default="unset")
    var.set("caller")
    seen = run_on_devices(
        backend,
        [
            (d, lambda: (var.get(), backend.current_device(), threading.get_ident()))
            for d in (0, 1, 2)
        ],
    )
    assert [s[0] for s in seen] == ["caller"] * 3
    assert [s[1] for s in seen] == [0, 1, 2]
    assert len({s[2] for s in seen}) == 3  # one thread per device


# -- shard / gather ------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("rows", [1, 2, 7])
def test_round_trip_uneven(cpu_devices, rng, axis, rows):
    n = cpu_devices.device_count()
    x = _data(rng, (rows, 5)) if axis == 0 else _data(rng, (3, rows))
    s = gk.shard(x, axis=axis)
    assert s.shape == x.shape and s.dtype == x.dtype and s.axis == axis % 2
    assert s.devices == tuple(range(n)) and len(s.shards) == n
    length = x.shape[axis]
    assert list(s.sizes) == [length // n + (i < length % n) for i in range(n)]
    assert np.array_equal(gk.to_numpy(s), x)
    assert np.array_equal(s.gather(), x)
    if n > 1:
        assert [sh.device_id for sh in s.shards] == list(range(n))
        assert s.gather(device=n - 1).device_id == n - 1


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(0, 6), min_size=1, max_size=3),
    n=st.integers(1, 4),
    data=st.data(),
)
def test_round_trip_property(shape, n, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    dtype = data.draw(st.sampled_from(["float32", "complex128", "int64"]))
    x = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    with gk.use_backend(NumpyBackend(n)):
        s = gk.shard(x, axis=axis)
    assert sum(s.sizes) == x.shape[axis] and s.dtype == x.dtype
    assert np.array_equal(gk.to_numpy(s), x)


def test_shard_subset_of_devices(rng):
    with gk.use_backend(NumpyBackend(4)):
        s = gk.shard(_data(rng, (6, 2)), devices=[3, 1])
    assert s.devices == (3, 1) and [sh.device_id for sh in s.shards] == [3, 1]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"axis": 2}, r"axis 2 is out of range for x of shape \(4, 3\)"),
        ({"devices": []}, "at least one device"),
        ({"devices": [0, 0]}, "must not repeat"),
        ({"devices": [7]}, "device 7 is out of range"),
    ],
)
def test_shard_bad_arguments(kwargs, match):
    with gk.use_backend(NumpyBackend(2)), pytest.raises(ValueError, match=match):
        gk.shard(np.ones((4, 3)), **kwargs)


@pytest.mark.parametrize(
    ("devices", "match"),
    [(2, r"got the integer 2; pass devices=range\(2\)"), (1.5, "got 1.5")],
)
def test_shard_devices_that_are_no_sequence_are_typeerrors(devices, match):
    """``devices=2`` (found writing a test: a bare "'int' object is not iterable")."""
    with gk.use_backend(NumpyBackend(2)), pytest.raises(TypeError, match=match):
        gk.shard(np.ones((4, 3)), devices=devices)


def test_shard_scalar_raises():
    with pytest.raises(ValueError, match="0-d"):
        gk.shard(np.float64(1.0))


# -- map_shards and its failure modes --------------------------------------------------------


def test_map_shards_matches_unsharded(cpu_devices, rng):
    x, y = _data(rng, (9, 4)), _data(rng, (9, 4))
    out = gk.map_shards(lambda a, b: np.sin(a) * b, gk.shard(x), gk.shard(y))
    assert rel_err(out, np.sin(x) * y) < TOL[np.dtype("float64")]


def test_map_shards_mismatched_arguments(rng):
    x = _data(rng, (8, 2))
    with gk.use_backend(NumpyBackend(4)):
        a = gk.shard(x)
        with pytest.raises(gk.DeviceMismatchError, match=r"sharded over numpy:\(0, 1\)"):
            gk.map_shards(np.add, a, gk.shard(x, devices=[0, 1]))
        with pytest.raises(ValueError, match="shard lengths"):
            gk.map_shards(np.add, a, gk.shard(x[:7]))
        with pytest.raises(TypeError, match="must be a ShardedArray"):
            gk.map_shards(np.add, a, x)
        with pytest.raises(TypeError, match="split axis"):
            gk.map_shards(np.sum, a)


def test_shard_error_reaches_caller_without_deadlock(rng):
    backend = NumpyBackend(4)
    started = []

    def fn(s):
        started.append(s.device_id)
        if s.device_id == 2:
            raise ZeroDivisionError("shard 2 failed")
        return s * 2

    result = {}

    def call():
        with gk.use_backend(backend):
            try:
                gk.map_shards(fn, gk.shard(_data(rng, (8, 3))))
            except ZeroDivisionError as exc:
                result["error"] = exc

    t = threading.Thread(target=call)
    t.start()
    t.join(60)  # a deadlock guard, not a timing: the call returns in milliseconds
    assert not t.is_alive(), "map_shards deadlocked after a shard raised"
    assert str(result["error"]) == "shard 2 failed"
    # the workers are healthy afterwards
    with gk.use_backend(backend):
        again = gk.map_shards(lambda s: s + 1, gk.shard(np.zeros((4, 1))))
    assert np.array_equal(gk.to_numpy(again), np.ones((4, 1)))


def test_nested_sharded_call_in_worker_does_not_deadlock(rng):
    backend = NumpyBackend(2)
    x = _data(rng, (6, 3))
    with gk.use_backend(backend):
        inner = gk.map_shards(
            lambda s: s * float(gk.sharding.sum(gk.shard(np.ones(4), devices=[0, 1]))), gk.shard(x)
        )
    assert rel_err(inner, 4 * x) < 1e-15


# -- collectives ---------------------------------------------------------------------------


def test_collectives_in_memory(cpu_devices, rng):
    n = cpu_devices.device_count()
    devs = tuple(range(n))
    coll = cpu_devices.collectives(devs)
    parts = [cpu_devices.to_device(_data(rng, (3, 2)), d) for d in devs]
    reduced = coll.all_reduce(parts)
    expected = np.sum([np.asarray(p) for p in parts], axis=0)
    for d, r in zip(devs, reduced, strict=True):
        assert rel_err(r, expected) < 1e-15 and cpu_devices.device_of(r) == d
    assert len({id(r) for r in reduced}) == n  # each device owns its buffer
    gathered = coll.all_gather([p[: i + 1] for i, p in enumerate(parts)], axis=0)
    ref = np.concatenate([np.asarray(p)[: i + 1] for i, p in enumerate(parts)])
    assert all(np.array_equal(g, ref) for g in gathered)
    bcast = coll.broadcast(parts[-1], root=n - 1)
    assert all(np.array_equal(b, np.asarray(parts[-1])) for b in bcast)  # host: devices differ
    assert [cpu_devices.device_of(b) for b in bcast] == list(devs)


# -- sharded operations against unsharded references ---------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_reductions(cpu_devices, rng, dtype):
    x, y = _data(rng, 11, dtype), _data(rng, 11, dtype)
    m = _data(rng, (7, 5), dtype)
    tol = TOL[np.dtype(dtype)]
    xs, ys, ms = gk.shard(x), gk.shard(y), gk.shard(m)
    x64, y64, m64 = (v.astype(np.complex128) for v in (x, y, m))
    # sums judged against their terms' magnitudes (CI: 11 float32 terms of ~1 summed to
    # -0.0037, 2e-5 off in relative terms)
    assert terms_err(gk.sharding.sum(xs), x64.sum(), np.abs(x64).sum()) < tol
    assert terms_err(gk.sharding.dot(xs, ys), np.dot(x64, y64), np.abs(x64 * y64).sum()) < tol
    assert rel_err(gk.sharding.norm(ms), np.linalg.norm(m64)) < tol  # no cancellation
    col = terms_err(gk.sharding.sum(ms, axis=0), m64.sum(axis=0), np.abs(m64).sum(axis=0))
    assert col < tol
    by_row = gk.sharding.sum(ms, axis=1)
    assert isinstance(by_row, gk.ShardedArray)
    assert terms_err(by_row, m64.sum(axis=1), np.abs(m64).sum(axis=1)) < tol


@pytest.mark.parametrize(
    ("shape", "ord", "axis", "keepdims"),
    [((8,), None, None, False), ((8,), 3, None, False), ((6, 4), "fro", None, False),
     ((6, 4), None, 1, False), ((6, 4), None, 0, True), ((6, 4), 3, 1, True)],
)  # fmt: skip
@pytest.mark.parametrize(
    ("dtype", "magnitude"), [("float32", 1e-30), ("float32", 1e25), ("float64", 1e-200)]
)
def test_sharded_norms_whose_powers_underflow_or_overflow_keep_their_value(
    cpu_devices, rng, shape, ord, axis, keepdims, dtype, magnitude
):
    """As gk.linalg.norm on native arrays: a float32 vector of 1e-30 entries had norm 0."""
    x = (_data(rng, shape, "float64") * magnitude).astype(dtype)
    unit = 2.0 ** -math.frexp(magnitude)[1]  # exact: keeps the reference in range
    want = np.linalg.norm(x.astype(np.float64) * unit, ord=ord, axis=axis, keepdims=keepdims)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning for a representable result
        got = gk.linalg.norm(gk.shard(x), ord=ord, axis=axis, keepdims=keepdims)
    assert got.shape == want.shape and got.dtype == x.dtype
    assert rel_err(np.asarray(gk.to_numpy(got), np.float64) * unit, want) < TOL[x.dtype]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("rows", [2, 13])
def test_matmul(cpu_devices, rng, dtype, rows):
    a, b, v = _data(rng, (rows, 6), dtype), _data(rng, (6, 4), dtype), _data(rng, 6, dtype)
    tol = TOL[np.dtype(dtype)]
    sa = gk.shard(a)
    c = gk.sharding.matmul(sa, b)
    assert isinstance(c, gk.ShardedArray) and c.shape == (rows, 4) and c.dtype == a.dtype
    a64, b64, v64 = (t.astype(np.complex128) for t in (a, b, v))
    assert terms_err(c, a64 @ b64, np.abs(a64) @ np.abs(b64)) < tol  # 6-term dots cancel
    assert terms_err(gk.sharding.matmul(sa, v), a64 @ v64, np.abs(a64) @ np.abs(v64)) < tol


def test_matmul_batched_split(cpu_devices, rng):
    a, b = _data(rng, (5, 3, 4)), _data(rng, (4, 2))
    c = gk.sharding.matmul(gk.shard(a, axis=0), b)
    assert rel_err(c, a @ b) < 1e-12


def test_matmul_bad_shapes(rng):
    with gk.use_backend(NumpyBackend(2)):
        a = gk.shard(np.ones((4, 3)))
        with pytest.raises(ValueError, match=r"3 rows to multiply 'a' of shape \(4, 3\)"):
            gk.sharding.matmul(a, np.ones((4, 2)))
        with pytest.raises(ValueError, match="contracted axis"):
            gk.sharding.matmul(gk.shard(np.ones((4, 3)), axis=1), np.ones((3, 2)))
        with pytest.raises(TypeError, match="ShardedArray"):
            gk.sharding.matmul(np.ones((4, 3)), np.ones((3, 2)))


@pytest.mark.parametrize(
    ("kind", "dtype"),
    [(k, d) for k in ("fft", "ifft", "irfft") for d in ("float32", "float64", "complex128")]
    + [("rfft", "float32"), ("rfft", "float64")],
)
def test_batched_fft(cpu_devices, rng, kind, dtype):
    x = _data(rng, (7, 3, 16), dtype)
    tol = TOL[np.result_type(dtype, np.complex64)] * 10  # FFT error grows like log n
    for axis, split in ((-1, 0), (1, 0), (0, 2)):
        got = getattr(gk.sharding, kind)(gk.shard(x, axis=split), axis=axis, norm="ortho")
        wide = np.float64 if kind == "rfft" else np.result_type(x, np.complex128)
        ref = getattr(np.fft, kind)(x.astype(wide), axis=axis, norm="ortho")
        assert got.axis == split
        assert rel_err(got, ref) < tol
    if dtype == "float32" and kind in ("fft", "rfft"):
        assert got.dtype == np.complex64  # NumPy 2's rule on every backend


def test_sharded_operations_refuse_device_mixtures(rng):
    with gk.use_backend(NumpyBackend(3)):
        a = gk.shard(_data(rng, 6))
        b = gk.shard(_data(rng, 6), devices=[2, 1, 0])
        with pytest.raises(gk.DeviceMismatchError):
            gk.sharding.dot(a, b)


def test_gk_matmul_takes_sharded_operand(cpu_devices, rng):
    a, b = _data(rng, (10, 4)), _data(rng, (4, 3))
    c = gk.matmul(gk.shard(a), b)
    assert isinstance(c, gk.ShardedArray) and rel_err(c, a @ b) < TOL[np.dtype("float64")]


def test_gk_matmul_takes_sharded_operand_warm_with_and_without_precision(cpu_devices, rng):
    # gk.matmul passes precision on only when given: the kind's implementation takes its
    # default otherwise; warm calls on host arrays of the same types first
    a, b = _data(rng, (10, 4)), _data(rng, (4, 3))
    sa = gk.shard(a)
    for _ in range(3):
        assert isinstance(gk.matmul(a, b), np.ndarray)
        for kwargs in ({}, {"precision": None}, {"precision": "highest"}):
            c = gk.matmul(sa, b, **kwargs)
            assert isinstance(c, gk.ShardedArray) and rel_err(c, a @ b) < TOL[np.dtype("float64")]
        with pytest.raises(ValueError, match="precision must be None, 'highest' or 'tf32'"):
            gk.matmul(sa, b, precision="fast")


def test_matmul_sees_in_place_writes_to_b(cpu_devices, rng):
    a, b = _data(rng, (9, 4)), _data(rng, (4, 3))
    sa = gk.shard(a)
    gk.sharding.matmul(sa, b)
    b *= -2.0  # in place: the next product must use the new values
    assert rel_err(gk.sharding.matmul(sa, b), a @ b) < TOL[np.dtype("float64")]


def test_matmul_on_a_device_backend_never_reuses_stale_copies(fake_device, rng):
    a, b = _data(rng, (9, 4)), _data(rng, (4, 3))
    sa = gk.shard(a)
    assert sa.devices == (0, 1)
    gk.sharding.matmul(sa, b)
    b *= -2.0  # a host b written in place
    assert rel_err(gk.sharding.matmul(sa, b), a @ b) < 1e-12
    db = gk.asarray(b)  # a device b (device 0) written in place
    gk.sharding.matmul(sa, db)
    db[...] = 3.0
    assert rel_err(gk.sharding.matmul(sa, db), a @ np.full((4, 3), 3.0)) < 1e-12
    with gk.transfer_guard("disallow"), pytest.raises(gk.TransferGuardError, match="'b'"):
        gk.sharding.matmul(sa, b)  # host b: an implicit transfer per device


def test_replicate_copies_once_and_is_a_snapshot(fake_device, rng):
    a, b = _data(rng, (9, 4)), _data(rng, (4, 3))
    sa = gk.shard(a)
    gk.reset_transfer_stats()
    rb = gk.sharding.replicate(b)
    assert gk.transfer_stats().host_to_device.calls == 2  # once per device, here
    assert rb.devices == (0, 1) and [fake_device.device_of(r) for r in rb.replicas] == [0, 1]
    want = a @ b
    b[...] = 0.0
    for _ in range(2):
        assert rel_err(gk.sharding.matmul(sa, rb), want) < 1e-12
    assert gk.transfer_stats().host_to_device.calls == 2  # no copy per call
    only0 = gk.sharding.replicate(gk.asarray(a[:4, :3]), devices=[0])
    with pytest.raises(gk.DeviceMismatchError, match=r"replicated on fakedevice:\(0,\)"):
        gk.sharding.matmul(sa, only0)


def test_replicate_on_virtual_devices_is_a_read_only_snapshot(cpu_devices, rng):
    a, b = _data(rng, (7, 4)), _data(rng, (4, 2))
    rb = gk.sharding.replicate(b)
    want = a @ b
    b[...] = 1.0
    assert rel_err(gk.sharding.matmul(gk.shard(a), rb), want) < TOL[np.dtype("float64")]
    assert [cpu_devices.device_of(r) for r in rb.replicas] == list(rb.devices)
    with pytest.raises(ValueError, match="read-only"):
        rb.replicas[0][0, 0] = 2.0
