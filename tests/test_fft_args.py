"""gk.fft's NumPy 2 / SciPy arguments: ``s`` with -1, the Hermitian N-D transforms,
``workers`` and ``out``, on every function and backend, against float64 SciPy."""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest
import scipy.fft

import gpukit as gk

from helpers import TOL, rel_err

NORMS = [None, "backward", "ortho", "forward"]
PRECISIONS = ["single", "double"]
REAL_IN = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
REAL_OUT = {"irfft", "hfft", "irfft2", "hfft2", "irfftn", "hfftn"}
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
TWO_D = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
TRANSFORMS = ONE_D + TWO_D + N_D


def _input(rng, name, shape, precision):
    real = rng.standard_normal(shape)
    if name in REAL_IN:
        return real.astype(np.float32 if precision == "single" else np.float64)
    x = real + 1j * rng.standard_normal(shape)
    return x.astype(np.complex64 if precision == "single" else np.complex128)


def _result_dtype(name, precision):
    if name in REAL_OUT:
        return np.dtype(np.float32 if precision == "single" else np.float64)
    return np.dtype(np.complex64 if precision == "single" else np.complex128)


def _reference(name, x, **kwargs):
    """SciPy in float64 on the host, with ``s``'s -1 entries spelled out."""
    x = np.asarray(x).astype(np.float64 if name in REAL_IN else np.complex128)
    s = kwargs.get("s")
    if s is not None:
        axes = kwargs.get("axes") or range(x.ndim - len(s), x.ndim)
        kwargs["s"] = [x.shape[a] if n == -1 else n for n, a in zip(s, axes, strict=True)]
    return getattr(scipy.fft, name)(x, **kwargs)


# -- s = -1: the input's length along that axis (NumPy 2) -----------------------------------

# Each norm once, each with another s/axes case.
S_AXES_NORM = [
    ((-1, 8), (0, 2), None),  # keep axis 0 (5), pad axis 2
    ((3, -1), (2, 1), "backward"),  # crop axis 2, keep axis 1 (a non-last axis last)
    ((-1, -1), (1, 0), "ortho"),  # every length kept, axes reversed
    ((-1, 4), (2, 0), "forward"),  # keep axis 2 (7), crop axis 0
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(("s", "axes", "norm"), S_AXES_NORM)
@pytest.mark.parametrize("name", TWO_D + N_D)
def test_s_minus_one_keeps_the_input_length(backend, rng, name, s, axes, norm, precision):
    x = _input(rng, name, (5, 6, 7), precision)  # odd lengths on two axes
    got = getattr(gk.fft, name)(gk.asarray(x), s=s, axes=axes, norm=norm)
    ref = _reference(name, x, s=s, axes=axes, norm=norm)
    assert got.dtype == _result_dtype(name, precision)
    assert got.shape == ref.shape
    assert rel_err(got, ref) < TOL[got.dtype]


@pytest.mark.parametrize("name", ["irfftn", "hfftn", "irfft2", "hfft2"])
def test_s_minus_one_on_the_hermitian_axis_is_the_input_length(backend, rng, name):
    # NumPy 2's rule: -1 is m, the input's length, not the default 2 * (m - 1).
    x = _input(rng, name, (4, 5), "double")
    got = getattr(gk.fft, name)(gk.asarray(x), s=(-1, -1), axes=(0, 1))
    assert got.shape == (4, 5)
    assert rel_err(got, _reference(name, x, s=(4, 5), axes=(0, 1))) < 1e-12
    if name == "irfftn":
        assert rel_err(got, np.fft.irfftn(x, s=(4, 5), axes=(0, 1))) < 1e-12


def test_s_minus_one_without_axes_means_the_last_axes(backend, rng):
    x = _input(rng, "fftn", (3, 4, 5), "double")
    got = gk.fft.fftn(gk.asarray(x), s=(-1, 8))
    assert got.shape == (3, 4, 8)
    assert rel_err(got, scipy.fft.fftn(x, s=(4, 8), axes=(1, 2))) < 1e-12


@pytest.mark.parametrize("s", [(0, 4), (-2, 4), (4, -3)])
@pytest.mark.parametrize("name", TWO_D + N_D)
def test_s_other_than_minus_one_below_one_is_a_valueerror(backend, name, s):
    x = gk.asarray(np.ones((4, 4), np.float64 if name in REAL_IN else np.complex128))
    with pytest.raises(ValueError, match=r"length along axis \d is -?\d, it must be at least 1"):
        getattr(gk.fft, name)(x, s=s, axes=(0, 1))


def test_n_minus_one_is_refused_as_numpy_does(backend):
    with pytest.raises(ValueError, match="length along axis 0 is -1, it must be at least 1"):
        gk.fft.fft(gk.asarray(np.ones(4, np.complex64)), n=-1)


@pytest.mark.parametrize(
    ("s", "match"),
    [([None, 4], "contains None; use -1 for x's own length"), (4.0, "s must be a sequence"),
     ("ab", "s must be an integer, got 'a'"), ((4, 2.0), "s must be an integer, got 2.0")],
)  # fmt: skip
def test_non_integer_s_is_a_typeerror(backend, s, match):
    with pytest.raises(TypeError, match=match) as info:
        gk.fft.fftn(gk.asarray(np.ones((4, 4))), s=s, axes=(0, 1))
    assert str(info.value).startswith("gk.fft.fftn: s")


def test_a_scalar_s_is_one_length_as_in_scipy(backend, rng):
    x = _input(rng, "fftn", (3, 5), "double")
    got = gk.fft.fftn(gk.asarray(x), s=8)
    assert rel_err(got, scipy.fft.fftn(x, s=8)) < 1e-12


# -- the Hermitian N-D transforms (SciPy's hfft2, hfftn, ihfft2, ihfftn) -------------------


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(
    ("s", "axes", "norm"),
    [(None, None, None), ((6, 9), (0, 2), "backward"), ((5, 4), (2, 0), "ortho"),
     (None, (1,), "forward")],
)  # fmt: skip
@pytest.mark.parametrize("name", ["hfftn", "ihfftn", "hfft2", "ihfft2"])
def test_hermitian_transforms_match_scipy(backend, rng, name, s, axes, norm, precision):
    if name.endswith("2") and axes is not None and len(axes) != 2:
        axes = (0, 1)
    x = _input(rng, name, (5, 6, 7), precision)
    kwargs = {"s": s, "axes": axes, "norm": norm}
    if name.endswith("2") and axes is None:
        kwargs.pop("axes")  # the default (-2, -1)
    got = getattr(gk.fft, name)(gk.asarray(x), **kwargs)
    ref = _reference(name, x, **kwargs)
    assert got.dtype == _result_dtype(name, precision)
    assert got.shape == ref.shape
    assert rel_err(got, ref) < TOL[got.dtype]


@pytest.mark.parametrize("norm", NORMS)
def test_hfftn_inverts_ihfftn(backend, rng, norm):
    x = rng.standard_normal((4, 6, 9))  # odd last axis: its length must be passed back
    back = gk.fft.hfftn(gk.fft.ihfftn(gk.asarray(x), norm=norm), s=x.shape, norm=norm)
    assert rel_err(back, x) < 1e-12


def test_hermitian_default_path_of_the_backend_contract(fake_device, rng):
    """A backend without its own Hermitian transforms (FFTOps on numpy.fft) gets them."""
    x = _input(rng, "hfftn", (3, 4, 5), "double")
    got = gk.fft.hfftn(gk.asarray(x), s=(4, 7), axes=(0, 2), norm="ortho")
    assert rel_err(got, scipy.fft.hfftn(x, s=(4, 7), axes=(0, 2), norm="ortho")) < 1e-12
    xr = x.real.copy()
    got = gk.fft.ihfft2(gk.asarray(xr), norm="forward")
    assert rel_err(got, scipy.fft.ihfft2(xr, norm="forward")) < 1e-12


# -- workers ----------------------------------------------------------------------------------


def _call(name, x, **kwargs):
    fn = getattr(gk.fft, name)
    return fn(x, axis=0, **kwargs) if name in ONE_D else fn(x, axes=(0, 1), **kwargs)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("workers", [None, 1, 2, -1])
@pytest.mark.parametrize("name", TRANSFORMS)
def test_every_transform_takes_workers(backend, rng, name, workers, precision):
    x = _input(rng, name, (9, 5), precision)
    got = _call(name, gk.asarray(x), workers=workers)
    ref = _reference(name, x, axis=0) if name in ONE_D else _reference(name, x, axes=(0, 1))
    assert got.dtype == _result_dtype(name, precision)
    assert rel_err(got, ref) < TOL[got.dtype]


@pytest.mark.parametrize("name", TRANSFORMS)
def test_every_transform_validates_workers(backend, name):
    x = gk.asarray(np.ones((4, 4), np.float64 if name in REAL_IN else np.complex128))
    with pytest.raises(ValueError, match=f"gk.fft.{name}: workers must not be zero"):
        _call(name, x, workers=0)


@pytest.mark.parametrize(
    ("workers", "error", "match"),
    [
        (-(os.cpu_count() or 1) - 1, ValueError, r"workers=-\d+ is out of range"),
        (1.5, TypeError, "workers must be an integer, got 1.5"),
        ("2", TypeError, "workers must be an integer, got '2'"),
        (True, TypeError, "workers must be an integer, got True"),
    ],
)
def test_bad_workers(backend, workers, error, match):
    with pytest.raises(error, match=match):
        gk.fft.fft(gk.asarray(np.ones(4, np.complex128)), workers=workers)


def test_workers_counts_back_from_the_core_count(backend, rng):
    x = _input(rng, "fft", (3, 8), "double")
    lowest = -(os.cpu_count() or 1)  # one thread
    assert rel_err(gk.fft.fft(gk.asarray(x), workers=lowest), np.fft.fft(x)) < 1e-12


# -- out ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("name", TRANSFORMS)
def test_out_receives_the_result_and_is_returned(backend, xp, rng, name, precision):
    x = _input(rng, name, (9, 5), precision)
    ref = _reference(name, x, axis=0) if name in ONE_D else _reference(name, x, axes=(0, 1))
    out = xp.full(ref.shape, 7, dtype=_result_dtype(name, precision))
    got = _call(name, gk.asarray(x), out=out)
    assert got is out
    assert rel_err(out, ref) < TOL[out.dtype]


@pytest.mark.parametrize("name", TRANSFORMS)
def test_out_by_position_as_numpy(backend, xp, rng, name):
    x = _input(rng, name, (6, 5), "double")
    ref = _reference(name, x)
    out = xp.zeros(ref.shape, dtype=_result_dtype(name, "double"))
    fn = getattr(gk.fft, name)
    assert fn(gk.asarray(x), None, None if name not in ONE_D else -1, None, out) is out
    assert rel_err(out, ref) < 1e-12


def test_out_may_be_the_input_and_non_contiguous(backend, xp, rng):
    x = _input(rng, "fft", (6, 6), "double")
    a = gk.asarray(x.copy())
    assert gk.fft.fft2(a, out=a) is a  # in place
    assert rel_err(a, np.fft.fft2(x)) < 1e-12
    b = gk.asarray(x.copy())
    view = b.T  # NumPy's "overwrite in a transpose" case
    assert gk.fft.fft(b, axis=0, out=view) is view
    assert rel_err(view, np.fft.fft(x, axis=0)) < 1e-12


def test_out_of_a_lower_precision_is_a_same_kind_cast(backend, xp, rng):
    x = _input(rng, "rfft", (16,), "double")
    out = xp.zeros(9, dtype=np.complex64)
    gk.fft.rfft(gk.asarray(x), out=out)
    assert out.dtype == np.complex64
    assert rel_err(out, np.fft.rfft(x)) < 1e-6


OUT_ERRORS = [
    (lambda xp: xp.zeros((4, 2), np.complex128), ValueError, r"out has wrong shape \(4, 2\); "),
    (lambda xp: xp.zeros(8, np.float64), TypeError, r"out has dtype float64, but the complex128"),
    (lambda xp: xp.zeros(8, np.int64), TypeError, "cannot be cast to it under 'same_kind'"),
    (lambda xp: [0j] * 8, TypeError, "out must be an array, got list"),
    (lambda xp: "", TypeError, "out must be an array, got str"),
    (lambda xp: np.complex128(0), TypeError, "out must be an array, got complex128"),
]


@pytest.mark.parametrize(("make", "error", "match"), OUT_ERRORS)
def test_bad_out_is_refused_before_any_work(backend, xp, make, error, match):
    out = make(xp)
    before = gk.to_numpy(out).copy() if hasattr(out, "shape") else None
    with pytest.raises(error, match=match) as info:
        gk.fft.fft(gk.asarray(np.arange(8.0)), out=out)
    assert str(info.value).startswith("gk.fft.fft: ")
    if before is not None:
        assert np.array_equal(gk.to_numpy(out), before)  # untouched


def test_read_only_out_is_a_valueerror():
    out = np.zeros(8, np.complex128)
    out.flags.writeable = False
    with (
        gk.use_backend("numpy"),
        pytest.raises(ValueError, match=r"gk\.fft\.fft: out is read-only"),
    ):
        gk.fft.fft(np.arange(8.0), out=out)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_every_transform_checks_the_shape_of_out(backend, xp, name):
    x = gk.asarray(np.ones((4, 6), np.float64 if name in REAL_IN else np.complex128))
    out = xp.zeros((3, 3), dtype=np.complex128)
    with pytest.raises(ValueError, match=f"gk.fft.{name}: out has wrong shape"):
        _call(name, x, out=out)


def test_out_with_s_must_have_the_cropped_shape(backend, xp, rng):
    x = _input(rng, "fftn", (10, 5, 6), "double")  # NumPy's test_fftn_out_and_s_interaction
    with pytest.raises(ValueError, match=r"out has wrong shape \(10, 5, 6\); .* \(3, 3, 3\)"):
        gk.fft.fftn(gk.asarray(x), s=(3, 3, 3), axes=(0, 1, 2), out=xp.zeros(x.shape, x.dtype))
    out = xp.zeros((3, 3, 3), np.complex128)
    gk.fft.fftn(gk.asarray(x), s=(3, 3, 3), axes=(0, 1, 2), out=out)
    assert rel_err(out, np.fft.fftn(x, s=(3, 3, 3), axes=(0, 1, 2))) < 1e-12


def test_out_on_another_device_is_a_device_mismatch(fake_device):
    x = gk.asarray(np.ones(4, np.complex128), device=0)
    out = gk.asarray(np.zeros(4, np.complex128), device=1)
    with pytest.raises(gk.DeviceMismatchError, match="argument 'out' is on fakedevice:1"):
        gk.fft.fft(x, out=out)


def test_host_out_for_a_device_input_is_refused(fake_device):
    x = gk.asarray(np.ones(4, np.complex128))
    out = np.zeros(4, np.complex128)
    with pytest.raises(TypeError, match="out must be an array of the fakedevice backend"):
        gk.fft.fft(x, out=out)
    assert not out.any()


# -- fftfreq / rfftfreq device ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_on_a_chosen_device(fake_device, name):
    got = getattr(gk.fft, name)(6, 0.5, device=1)
    assert fake_device.owns(got) and fake_device.device_of(got) == 1
    assert rel_err(got, getattr(np.fft, name)(6, 0.5)) == 0


@pytest.mark.parametrize(
    ("device", "error", "match"),
    [("cpu", TypeError, "device must be a device index of the numpy backend"),
     (True, TypeError, "device must be a device index"),
     (5, ValueError, "device 5 is out of range")],
)  # fmt: skip
def test_frequencies_reject_a_bad_device(device, error, match):
    with gk.use_backend("numpy"), pytest.raises(error, match=match):
        gk.fft.fftfreq(4, device=device)


# -- signatures: NumPy's and SciPy's, less the differences docs/differences.rst lists ---------

#: SciPy parameters gk.fft does not take (docs/differences.rst says why).
NOT_TAKEN = {"overwrite_x", "plan", "xp"}


def _params(fn):
    return inspect.signature(fn).parameters


@pytest.mark.parametrize("name", [n for n in gk.fft.__all__ if n != "engine"])
def test_signature_is_numpys_and_scipys(name):
    ours = _params(getattr(gk.fft, name))
    if hasattr(np.fft, name):  # same positional order and defaults; NumPy's "a" is our "x"
        theirs = {("x" if k == "a" else k): p for k, p in _params(getattr(np.fft, name)).items()}
        assert list(ours)[: len(theirs)] == list(theirs)
        for key, param in theirs.items():
            assert ours[key].default == param.default, key
    for key, param in _params(getattr(scipy.fft, name)).items():
        if key not in NOT_TAKEN:
            assert key in ours and ours[key].default == param.default, key
