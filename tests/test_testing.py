"""gpukit.testing: each check of assert_close fails with its own message; seeded inputs."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gpukit as gk
from gpukit._select import registry as _registry
from gpukit.testing import assert_close, default_rtol, random_array, random_spd, relative_error

NumpyBackend = type(_registry.load("numpy"))  # with virtual CPU devices: NumpyBackend(n)


def test_passes_within_the_dtype_tolerance_and_fails_beyond(rng):
    want = rng.standard_normal((6, 5))
    for dtype, rtol in (("float32", 1e-5), ("float64", 1e-12), ("float16", 1e-2)):
        assert_close(want.astype(dtype), want, dtype=dtype)  # its rounding: within tolerance
        off = want.copy()
        off[0, 0] += 3 * rtol * np.linalg.norm(want)  # 3 rtol off, far above the rounding
        with pytest.raises(AssertionError, match=rf"> rtol {rtol:g}") as info:
            assert_close(off.astype(dtype), want, check_dtype=False)
        err = float(re.search(r"relative error (\S+) >", str(info.value))[1])
        assert 2.9 * rtol < err < 3.1 * rtol


def test_failure_names_the_error_and_the_worst_entry():
    want = np.array([[1.0, 2.0], [3.0, 4.0]])
    got = want.copy()
    got[1, 0] += 1e-3
    with pytest.raises(AssertionError) as info:
        assert_close(got, want, err_msg="case 7")
    msg = str(info.value)
    assert "relative error 0.000183 > rtol 1e-12" in msg
    assert "largest difference at index (1, 0): actual 3.001, desired 3.0" in msg
    assert msg.endswith("\ncase 7")


def test_rtol_and_atol_widen_the_bound():
    want = np.array([1.0, -1.0])  # cancels: the terms' magnitudes are the error's scale
    got = want + 1e-6
    with pytest.raises(AssertionError, match="not close"):
        assert_close(got, want)
    assert_close(got, want, rtol=1e-5)
    assert_close(got, want, atol=2e-6)
    assert_close(np.zeros(3), np.zeros(3))  # zero error against a zero reference


def test_dtype_is_desireds_or_the_given_one():
    with pytest.raises(AssertionError, match=r"dtype: actual is float32, expected float64"):
        assert_close(np.ones(3, np.float32), np.ones(3))
    with pytest.raises(AssertionError, match=r"dtype: actual is float64, expected complex64 \("):
        assert_close(np.ones(3), np.ones(3), dtype="complex64")
    assert_close(np.ones(3, np.float32), np.ones(3), check_dtype=False)
    assert_close(np.ones(3, np.float32), [1.0, 1.0, 1.0])  # a list sets no dtype


def test_shape_is_checked_without_broadcasting():
    with pytest.raises(AssertionError, match=r"shape: actual is \(3,\), desired is \(1, 3\)"):
        assert_close(np.ones(3), np.ones((1, 3)))
    with pytest.raises(AssertionError, match=r"shape: actual is \(\), desired is \(1,\)"):
        assert_close(np.float64(1.0), np.ones(1))


def test_non_finite_entries_must_match():
    want = np.array([1.0, np.nan, np.inf, -np.inf])
    assert_close(want.copy(), want)
    with pytest.raises(AssertionError, match=r"NaN entries differ: 0 in actual, 1 in desired"):
        assert_close(np.array([1.0, 0.0, np.inf, -np.inf]), want)
    with pytest.raises(AssertionError, match=r"infinite entries differ: 1 in actual, 2"):
        assert_close(np.array([1.0, np.nan, np.inf, 0.0]), want)
    with pytest.raises(AssertionError, match=r"differ in sign: first at index \(3,\)"):
        assert_close(np.array([1.0, np.nan, np.inf, np.inf]), want)


def test_device_and_array_type_are_checked(fake_device):
    host = np.ones(4)
    on0, on1 = gk.asarray(host, device=0), gk.asarray(host, device=1)
    assert_close(on1, gk.asarray(host, device=1))
    with pytest.raises(AssertionError, match=r"actual is a fakedevice array on fakedevice:1, "
                       r"expected a fakedevice array on fakedevice:0 \(desired's\)"):  # fmt: skip
        assert_close(on1, on0)
    with pytest.raises(AssertionError, match=r"actual is a fakedevice array on fakedevice:0, "
                       r"expected a numpy array on host"):  # fmt: skip
        assert_close(on0, host)
    # a host reference: `like` says where the result must be
    assert_close(on1, host, like=on1)
    with pytest.raises(AssertionError, match=r"expected a fakedevice array on fakedevice:1 "
                       r"\(like's\)"):  # fmt: skip
        assert_close(on0, host, like=on1)
    assert_close(on0, host, check_device=False)


def test_sharded_arrays_compare_by_their_devices(rng):
    x = rng.standard_normal((6, 2))
    with gk.use_backend(NumpyBackend(3)):
        whole, part = gk.shard(x), gk.shard(x, devices=[0, 1])
        assert_close(whole, gk.shard(x, devices=[0, 1, 2]))
    assert_close(whole, x, check_device=False)
    with pytest.raises(AssertionError, match=r"actual is a ShardedArray on numpy devices "
                       r"\[0, 1\] \(axis 0\), expected a ShardedArray on numpy devices "
                       r"\[0, 1, 2\]"):  # fmt: skip
        assert_close(part, whole)
    with pytest.raises(AssertionError, match="expected a numpy array on host"):
        assert_close(whole, x)


def test_relative_error():
    assert relative_error([3.0, 4.0], [3.0, 4.0]) == 0.0
    assert relative_error([3.0, 4.0 + 5e-3], [3.0, 4.0]) == pytest.approx(1e-3)
    assert relative_error([1e-3], [0.0]) == pytest.approx(1e-3)  # zero reference: absolute
    assert not np.isfinite(relative_error([np.inf], [1.0]))


def test_default_rtol():
    assert [default_rtol(d) for d in ("float16", "float32", "complex64", "float64", ">c16")] == [
        1e-2, 1e-5, 1e-5, 1e-12, 1e-12]  # fmt: skip
    assert default_rtol("int8") == default_rtol(bool) == 0.0
    with pytest.raises(TypeError, match="no tolerance for dtype <U1"):
        default_rtol("U1")


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_random_array_is_seeded_and_of_its_dtype(backend, dtype):
    x = random_array((3, 4), dtype, rng=5)
    assert isinstance(x, np.ndarray) and x.shape == (3, 4) and x.dtype == dtype
    np.testing.assert_array_equal(x, random_array((3, 4), dtype, rng=np.random.default_rng(5)))
    assert not np.array_equal(x, random_array((3, 4), dtype, rng=6))
    assert (np.iscomplexobj(x) and np.abs(x.imag).sum() > 0) == (dtype.startswith("complex"))
    on = random_array((3, 4), dtype, rng=5, backend=backend.name)
    assert type(on) is type(gk.asarray(x)) and on.dtype == dtype
    np.testing.assert_array_equal(gk.to_numpy(on), x)  # drawn on the host: the same values


def test_random_array_refuses_what_it_cannot_draw():
    with pytest.raises(TypeError, match="dtype must be floating or complex, got int64"):
        random_array(3, "int64", rng=0)
    with pytest.raises(ValueError, match="device is given without a backend"):
        random_array(3, rng=0, device=1)


@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32"])
def test_random_spd_is_hermitian_positive_definite_and_well_conditioned(dtype):
    a = random_spd((2, 30, 30), dtype, rng=11)
    assert a.shape == (2, 30, 30) and a.dtype == dtype
    np.testing.assert_array_equal(a, np.conj(np.swapaxes(a, -1, -2)))
    w = np.linalg.eigvalsh(a.astype(np.complex128))
    assert w.min() >= 1 - 1e-6 and w.max() / w.min() < 6
    with pytest.raises(ValueError, match=r"shape must be n or \(..., n, n\), got \(3, 4\)"):
        random_spd((3, 4), rng=0)
    with pytest.raises(TypeError, match="dtype must be floating or complex, got int64"):
        random_spd(3, "int64", rng=0)
