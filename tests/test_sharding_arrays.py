"""A ShardedArray as an array: operators, ufuncs, reductions, NumPy functions, host conversion.

Virtual CPU devices (N = 1..4) against float64 NumPy references; the fake device
backend for what only a device backend shows (host transfers counted and guarded).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

import gpukit as gk
from gpukit._select import registry as _registry

from helpers import TOL, rel_err, terms_err

NumpyBackend = type(_registry.load("numpy"))


@pytest.fixture(params=[1, 2, 3, 4], ids=lambda n: f"cpu{n}")
def cpu_devices(request: pytest.FixtureRequest):
    with gk.use_backend(NumpyBackend(request.param)) as backend:
        yield backend


def _data(rng, shape, dtype="float64"):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


# -- elementwise -----------------------------------------------------------------------------
def test_operators_and_ufuncs_stay_sharded(cpu_devices, rng):
    x, y = _data(rng, (7, 4)), _data(rng, (7, 4))
    sx, sy = gk.shard(x), gk.shard(y)
    cases = [
        (sx + sy, x + y), (sx * 2.5 - 1, x * 2.5 - 1), (1 / (sx**2 + 1), 1 / (x**2 + 1)),
        (-sx, -x), (abs(sy), abs(y)), (np.sin(sx) * np.exp(sy), np.sin(x) * np.exp(y)),
        (np.maximum(sx, sy), np.maximum(x, y)), (np.hypot(sx, 3.0), np.hypot(x, 3.0)),
        (sx // 0.5 + sx % 0.5, x // 0.5 + x % 0.5), (2.0**sx, 2.0**x),
    ]  # fmt: skip
    for got, want in cases:
        assert isinstance(got, gk.ShardedArray) and got.axis == 0 and got.devices == sx.devices
        assert got.sizes == sx.sizes and rel_err(got, want) < TOL[np.dtype("float64")]
    if cpu_devices.device_count() > 1:
        assert [s.device_id for s in (sx + sy).shards] == list(sx.devices)  # computed in place
    assert np.array_equal(gk.to_numpy(sx > sy), x > y) and (sx > sy).dtype == bool


def test_plain_operands_broadcast_spanning_or_not_the_split_axis(cpu_devices, rng):
    x = _data(rng, (7, 4))
    s = gk.shard(x)  # split along rows
    row, col, full = _data(rng, 4), _data(rng, (7, 1)), _data(rng, (7, 4))
    assert rel_err(s + row, x + row) < 1e-15  # not spanning: whole on every device
    assert rel_err(s * col, x * col) < 1e-15  # spanning the split axis: cut like x
    assert rel_err(full - s, full - x) < 1e-15
    stacked = s + _data(rng, (3, 1, 4)) * 0 + 1  # a new leading axis: the split moves to 1
    assert stacked.shape == (3, 7, 4) and stacked.axis == 1
    assert rel_err(stacked, np.broadcast_to(x + 1, (3, 7, 4))) < 1e-15
    listed = [1.0, 2.0, 3.0, 4.0]  # a list operand, as NumPy takes one
    assert rel_err(np.add(s, listed), np.add(x, listed)) < 1e-15
    f32 = gk.shard(x.astype(np.float32))
    assert (f32 * np.float32(2)).dtype == np.float32 and (f32 * 2).dtype == np.float32


def test_in_place_and_out(cpu_devices, rng):
    x, y = _data(rng, (6, 3)), _data(rng, (6, 3))
    s = gk.shard(x.copy())
    shards = s.shards
    s += 1.0
    s *= gk.shard(y)
    assert s.shards == shards and rel_err(s, (x + 1) * y) < 1e-15  # written in place
    out = gk.shard(np.empty_like(x))
    got = np.add(gk.shard(x), gk.shard(y), out=out)
    assert got is out and rel_err(out, x + y) < 1e-15
    q, r = np.divmod(gk.shard(x), 0.3)  # two outputs
    assert rel_err(q, np.divmod(x, 0.3)[0]) < 1e-15 and rel_err(r, np.divmod(x, 0.3)[1]) < 1e-15


def test_mismatched_layouts_name_both(rng):
    x = _data(rng, (8, 4))
    with gk.use_backend(NumpyBackend(4)):
        rows, cols = gk.shard(x, axis=0), gk.shard(x, axis=1)
        with pytest.raises(ValueError) as info:
            rows + cols
        text = str(info.value)
        assert "numpy.add" in text and "gk.reshard" in text
        assert "split along axis 0" in text and "split along axis 1" in text
        with pytest.raises(gk.DeviceMismatchError, match=r"over numpy:\(2, 3\).*over numpy:\(0,"):
            np.multiply(rows, gk.shard(x, devices=[2, 3]))
        uneven = gk.map_shards(lambda a: a[:1] if a.device_id == 0 else a, rows)
        assert uneven.shape == (7, 4) and uneven.sizes == (1, 2, 2, 2)
        values = gk.to_numpy(uneven)
        with pytest.raises(ValueError, match=r"shard lengths \(1, 2, 2, 2\).*\(2, 2, 2, 1\)"):
            gk.shard(values) + uneven
        assert rel_err(gk.shard(values) + gk.reshard(uneven), 2 * values) < 1e-15  # the way on
        with pytest.raises(ValueError, match="a split axis does not broadcast"):
            gk.shard(x[:1]) + x


def test_ufunc_methods_other_than_call_are_refused(rng):
    with gk.use_backend(NumpyBackend(2)):
        s = gk.shard(_data(rng, (4, 3)))
        with pytest.raises(TypeError, match=r"numpy\.add\.reduce does not accept a ShardedArray"):
            np.add.reduce(s)
        with pytest.raises(TypeError, match=r"numpy\.multiply\.outer"):
            np.multiply.outer(s, s)


def test_matmul_operator(cpu_devices, rng):
    a, b = _data(rng, (7, 5)), _data(rng, (5, 3))
    assert rel_err(gk.shard(a) @ b, a @ b) < 1e-12
    assert rel_err(b.T @ gk.shard(a.T, axis=1), b.T @ a.T) < 1e-12
    assert rel_err(gk.shard(a) @ gk.shard(b, axis=1), a @ b) < 1e-12  # b all-gathered
    with pytest.raises(ValueError, match="contracted axis"):
        gk.shard(a, axis=1) @ b


def test_views_and_casts(cpu_devices, rng):
    z = _data(rng, (5, 2), "complex128")
    s = gk.shard(z)
    assert rel_err(s.real, z.real) == 0 and rel_err(s.imag, z.imag) == 0
    assert rel_err(s.conj(), z.conj()) == 0 and rel_err(np.conjugate(s), z.conj()) == 0
    c = s.astype(np.complex64)
    assert c.dtype == np.complex64 and s.astype(s.dtype, copy=False) is s
    assert len(s) == 5 and np.shape(s) == (5, 2) and np.ndim(s) == 2 and np.size(s) == 10


# -- reductions --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128", "int64"])
def test_reductions_match_numpy(cpu_devices, rng, dtype):
    x = (_data(rng, (7, 3, 2), dtype) * 10).astype(dtype)
    s = gk.shard(x, axis=0)
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    tol = TOL.get(np.dtype(dtype), 1e-12)
    for axis in (None, 0, 1, (0, 2), (1, 2), -1):
        for keepdims in (False, True):
            for name in ("sum", "mean") + (("max", "min") if x.dtype.kind != "c" else ()):
                got = getattr(s, name)(axis=axis, keepdims=keepdims)
                want = getattr(np, name)(wide, axis=axis, keepdims=keepdims)
                assert np.shape(got) == want.shape, (name, axis)
                # a sum is as accurate as its terms are large (42 float32 terms of ~10 once
                # summed to 0.06, 5e-5 off in relative terms): judged against their magnitudes
                terms = getattr(np, name)(np.abs(wide), axis=axis, keepdims=keepdims)
                err = np.linalg.norm(np.asarray(gk.to_numpy(got), dtype=wide.dtype) - want)
                assert err <= tol * np.linalg.norm(terms), (name, axis, keepdims)
                kept = axis is not None and 0 not in np.atleast_1d(np.array(axis) % 3)
                assert isinstance(got, gk.ShardedArray) == kept
    assert s.mean().dtype == (np.float64 if dtype == "int64" else x.dtype)
    if x.dtype.kind != "c":
        assert s.sum(dtype=np.float64).dtype == np.float64


def test_numpy_reductions_dispatch_to_the_shards(cpu_devices, rng):
    x = _data(rng, (9, 4))
    s = gk.shard(x)
    # sums in another order than NumPy's: judged against their terms' magnitudes (36
    # float64 terms summing to -0.04 were 1.3e-14 off in relative terms); max/min exact
    for fn in (np.sum, np.mean):
        assert terms_err(fn(s), fn(x), fn(np.abs(x))) < 1e-14
        assert terms_err(fn(s, axis=1), fn(x, axis=1), fn(np.abs(x), axis=1)) < 1e-14
    for fn in (np.max, np.min, np.amax, np.amin):
        assert rel_err(fn(s), fn(x)) == 0 and rel_err(fn(s, axis=1), fn(x, axis=1)) == 0
    v, w = _data(rng, 11, "complex128"), _data(rng, 11, "complex128")
    terms = np.abs(v * w).sum()
    assert terms_err(np.vdot(gk.shard(v), gk.shard(w)), np.vdot(v, w), terms) < 1e-14
    assert terms_err(np.dot(gk.shard(v), gk.shard(w)), np.dot(v, w), terms) < 1e-14


def test_max_min_skip_devices_holding_no_rows(rng):
    x = _data(rng, (2, 3))
    with gk.use_backend(NumpyBackend(4)):  # shards of 1, 1, 0, 0 rows
        s = gk.shard(x)
        assert s.sizes == (1, 1, 0, 0)
        assert float(s.max()) == x.max() and float(s.min()) == x.min()
        assert np.array_equal(gk.to_numpy(s.max(axis=0)), x.max(axis=0))
        with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
            gk.shard(np.empty((0, 3))).max()
        with pytest.raises(TypeError, match="does not take 'out'"):
            s.sum(out=np.empty(()))
        with pytest.raises(TypeError, match="does not take 'initial'"):
            np.sum(s, initial=1.0)
        with pytest.raises(ValueError, match="axis 2 is out of range"):
            s.sum(axis=2)


def test_reduction_is_deterministic_in_device_order(rng):
    x = _data(rng, 1001, "float32") * 1e3
    with gk.use_backend(NumpyBackend(3)):
        s = gk.shard(x)
        first = float(s.sum())
        routes = [lambda: s.sum(), lambda: np.sum(s), lambda: gk.sharding.sum(s)]
        assert all(float(route()) == first for route in routes for _ in range(5))
    # device order: partial sums added left to right, in float32
    parts = [np.sum(p) for p in np.array_split(x, 3)]
    assert first == float((parts[0] + parts[1]) + parts[2])


@pytest.mark.parametrize(
    ("ord", "axis"),
    [(None, None), ("fro", None), (None, 0), (2, 1), (np.inf, 0), (-np.inf, 1), (0, 0),
     (1, 1), (3.5, 0), (-1, None), (1, None), (np.inf, None), (-np.inf, (1, 0)),
     (None, (0, 1))],
)  # fmt: skip
def test_norm_matches_numpy(cpu_devices, rng, ord, axis):
    x = _data(rng, (7, 5), "complex128")
    x[0, 0] = 0  # ord=0 counts non-zeros
    for keepdims in (False, True):
        got = gk.linalg.norm(gk.shard(x), ord=ord, axis=axis, keepdims=keepdims)
        want = np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
        assert np.shape(got) == np.shape(want) and rel_err(got, want) < 1e-12


@pytest.mark.parametrize(("ord", "axis"), [(None, None), (np.inf, 0), (1, 1), (3.5, 0)])
def test_float16_norms_are_float16_as_native_ones(cpu_devices, rng, ord, axis):
    """NumPy's dtype for a float16 norm, summed in float32 and correctly rounded: the
    sharded norm returned float32 where the native one returns float16."""
    x = (rng.standard_normal((7, 5)) * 300).astype(np.float16)  # float16 squares overflow
    got = gk.linalg.norm(gk.shard(x), ord=ord, axis=axis)
    want = np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis).astype(np.float16)
    native = gk.linalg.norm(x, ord=ord, axis=axis)
    assert got.dtype == native.dtype == np.float16
    # within one float16 spacing: rounded to float32, then to float16 (twice, rarely off)
    err = np.abs(np.asarray(gk.to_numpy(got), np.float64) - want.astype(np.float64))
    assert (err <= np.spacing(want).astype(np.float64)).all()


def test_norm_refuses_singular_value_norms(rng):
    with gk.use_backend(NumpyBackend(2)):
        s = gk.shard(_data(rng, (4, 4)))
        for ord in ("nuc", 2, -2):
            with pytest.raises(TypeError, match=r"singular values.*x\.gather\(\)"):
                gk.linalg.norm(s, ord=ord)
        with pytest.raises(TypeError, match=r"\(shape \(4, 4\), float16, "):  # not its copy
            gk.linalg.norm(gk.shard(_data(rng, (4, 4)).astype(np.float16)), ord="nuc")
        with pytest.raises(ValueError, match="not a matrix norm"):
            gk.linalg.norm(s, ord=3)
        with pytest.raises(TypeError, match=r"gk\.linalg\.norm: argument 'x' has dtype <U1"):
            gk.linalg.norm(gk.shard(np.array(["a", "b"])))
    with gk.use_backend(NumpyBackend(2)):  # integers are computed in float64, as NumPy
        got = np.linalg.norm(gk.shard(np.arange(5)))
    assert rel_err(got, np.linalg.norm(np.arange(5))) < 1e-15


# -- NumPy conversion -------------------------------------------------------------------------
def test_numpy_asarray_gathers_never_an_object_array(cpu_devices, rng):
    x = _data(rng, (5, 3))
    s = gk.shard(x, axis=1)
    got = np.asarray(s)
    assert type(got) is np.ndarray and got.dtype == x.dtype and np.array_equal(got, x)
    assert np.asarray(s, dtype=np.float32).dtype == np.float32
    assert np.allclose(s, x)  # a NumPy function without a sharded twin: on the gathered array
    assert np.concatenate([s, s]).shape == (10, 3)
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(s, copy=False)


def test_truth_value_as_numpy():
    with gk.use_backend(NumpyBackend(2)):
        assert bool(gk.shard(np.array([2.0]))) and not bool(gk.shard(np.array([0.0])))
        with pytest.raises(ValueError, match="ambiguous"):
            bool(gk.shard(np.ones(3)))


def test_host_conversion_on_a_device_backend_is_counted_and_guarded(fake_device, rng, caplog):
    x = _data(rng, (6, 4))
    s = gk.shard(x)  # fake device backend: two devices off the host
    gk.reset_transfer_stats()
    assert np.array_equal(np.asarray(s), x)
    moved = gk.transfer_stats().device_to_host
    assert moved.calls == 2 and moved.bytes == x.nbytes  # one copy per shard
    with caplog.at_level(logging.WARNING, logger="gpukit"), gk.transfer_guard("log"):
        np.asarray(s)
    assert "implicit device-to-host transfer of a ShardedArray" in caplog.text
    with gk.transfer_guard("disallow"):
        with pytest.raises(gk.TransferGuardError, match=r"shape \(6, 4\).*gk\.to_numpy"):
            np.asarray(s)
        with pytest.raises(gk.TransferGuardError):
            np.concatenate([s])  # no sharded twin: it would gather
        gk.reset_transfer_stats()
        # computed on the devices: nothing crosses to the host, nothing refused
        total, norm = np.sum(s + 1.0), np.linalg.norm(s)
        spectrum = np.fft.fft2(s)
        assert gk.transfer_stats().device_to_host.calls == 0
        assert gk.to_numpy(gk.reshard(s, axis=1)).shape == x.shape  # explicit: allowed
    assert rel_err(total, (x + 1).sum()) < 1e-14 and rel_err(norm, np.linalg.norm(x)) < 1e-14
    assert rel_err(spectrum, np.fft.fft2(x)) < 1e-12
