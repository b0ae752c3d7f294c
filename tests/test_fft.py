"""gk.fft against float64 NumPy references on every backend; scipy.fft backends honoured."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.fft
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from subproc import run_python

import gpukit as gk

from helpers import TOL, rel_err

NORMS = [None, "backward", "ortho", "forward"]
SINGLE_DOUBLE = [("float32", "complex64"), ("float64", "complex128")]
ROOT = Path(__file__).resolve().parents[1]


def _signal(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _expected_dtype(name, in_dtype):
    single = np.dtype(in_dtype) in (np.float16, np.float32, np.complex64)
    real_out = name in ("irfft", "hfft", "irfft2", "irfftn")
    if real_out:
        return np.dtype(np.float32 if single else np.float64)
    return np.dtype(np.complex64 if single else np.complex128)


# name, real input?, kwargs of n/axis
ONE_D = [
    ("fft", False),
    ("ifft", False),
    ("rfft", True),
    ("ihfft", True),
    ("irfft", False),
    ("hfft", False),
]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("n", [None, 7])  # 7 pads axis -1 (6) and crops axis 0 (9)
@pytest.mark.parametrize(("name", "real_in"), ONE_D)
@pytest.mark.parametrize(("real_dtype", "complex_dtype"), SINGLE_DOUBLE)
def test_one_d_matches_numpy(backend, rng, name, real_in, n, axis, norm, real_dtype, complex_dtype):
    dtype = real_dtype if real_in else complex_dtype
    x = _signal(rng, (9, 6), dtype)  # odd length along axis 0
    got = getattr(gk.fft, name)(gk.asarray(x), n=n, axis=axis, norm=norm)
    ref = getattr(np.fft, name)(x.astype(np.result_type(x, np.float64)), n=n, axis=axis, norm=norm)
    assert got.dtype == _expected_dtype(name, dtype)
    assert got.shape == ref.shape
    assert rel_err(got, ref) < TOL[got.dtype]


N_DIM = [
    ("fft2", False, (-2, -1)),
    ("ifft2", False, (-2, -1)),
    ("rfft2", True, (-2, -1)),
    ("irfft2", False, (-2, -1)),
    ("fftn", False, None),
    ("ifftn", False, None),
    ("rfftn", True, None),
    ("irfftn", False, None),
]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(("s", "axes"), [(None, "default"), ((5, 8), (0, 2)), (None, (2, 0))])
@pytest.mark.parametrize(("name", "real_in", "default_axes"), N_DIM)
@pytest.mark.parametrize(("real_dtype", "complex_dtype"), SINGLE_DOUBLE)
def test_n_dim_matches_numpy(
    backend, rng, name, real_in, default_axes, s, axes, norm, real_dtype, complex_dtype
):
    dtype = real_dtype if real_in else complex_dtype
    x = _signal(rng, (3, 4, 7), dtype)
    kwargs = {"s": s, "norm": norm}
    if axes != "default":
        kwargs["axes"] = axes
    elif s is not None:
        kwargs["axes"] = default_axes
    got = getattr(gk.fft, name)(gk.asarray(x), **kwargs)
    ref = getattr(np.fft, name)(x.astype(np.result_type(x, np.float64)), **kwargs)
    assert got.dtype == _expected_dtype(name, dtype)
    assert got.shape == ref.shape
    assert rel_err(got, ref) < TOL[got.dtype]


def test_batched_fft2_of_a_stack(backend, rng):
    x = _signal(rng, (5, 16, 33), "complex64")
    got = gk.fft.fft2(gk.asarray(x))
    assert got.dtype == np.complex64
    assert rel_err(got, np.fft.fft2(x.astype(np.complex128))) < 1e-5


@pytest.mark.parametrize(
    ("name", "in_dtype", "out_dtype"),
    [
        ("fft", "float16", "complex64"),
        ("fft", "float32", "complex64"),
        ("fft", "int64", "complex128"),
        ("fft", "bool", "complex128"),
        ("rfft", "float16", "complex64"),
        ("rfft", "int32", "complex128"),
        ("irfft", "complex64", "float32"),
        ("irfft", "float32", "float32"),
        ("hfft", "complex128", "float64"),
        ("ihfft", "float32", "complex64"),
    ],
)
def test_dtype_rules(backend, name, in_dtype, out_dtype):
    x = np.arange(1, 9).astype(in_dtype)
    got = getattr(gk.fft, name)(gk.asarray(x))
    assert got.dtype == np.dtype(out_dtype)
    ref = getattr(np.fft, name)(x.astype(np.result_type(x.dtype, np.float64)))
    assert rel_err(got, ref) < TOL[got.dtype]


def test_real_transforms_refuse_complex_input(backend):
    with pytest.raises(TypeError, match=r"gk.fft.rfft: x must be real, got complex64"):
        gk.fft.rfft(gk.asarray(np.ones(4, np.complex64)))


ERRORS = [
    ("fft", {"norm": "unitary"}, "norm must be None, 'backward', 'ortho' or 'forward'"),
    ("fft", {"axis": 2}, r"axis=\(2,\) is out of range for x with 2 dimension\(s\)"),
    ("fft", {"n": 0}, "transform length along axis 1 is 0"),
    ("fft2", {"axes": (0, 0)}, "repeats an axis"),
    ("fftn", {"s": (4, 4), "axes": (0,)}, "must have the same length"),
    ("fftn", {"s": (2, 2, 2)}, "more entries than x has dimensions"),
    ("fftn", {"axes": ()}, "must name at least one axis"),
]


@pytest.mark.parametrize(("name", "kwargs", "match"), ERRORS)
def test_invalid_arguments_raise_valueerror(backend, name, kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        getattr(gk.fft, name)(gk.asarray(np.ones((3, 4))), **kwargs)
    assert str(info.value).startswith(f"gk.fft.{name}: ")


def test_irfft_of_length_one_input_needs_n(backend):
    with pytest.raises(ValueError, match=r"length along axis 0 is 0.*pass n explicitly"):
        gk.fft.irfft(gk.asarray(np.ones(1, np.complex64)))
    assert gk.fft.irfft(gk.asarray(np.ones(1, np.complex64)), n=1).shape == (1,)


def test_zero_dimensional_input_raises(backend):
    with pytest.raises(ValueError, match="at least one dimension"):
        gk.fft.fft(gk.asarray(np.float32(1.0)))


def test_non_integer_n_raises_typeerror(backend):
    with pytest.raises(TypeError, match="n must be an integer"):
        gk.fft.fft(gk.asarray(np.ones(4)), n=4.0)


@pytest.mark.parametrize("n", [1, 8, 9])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_frequencies_match_numpy(backend, n, d):
    got = gk.fft.fftfreq(n, d)
    assert backend.owns(got)
    assert rel_err(got, np.fft.fftfreq(n, d)) < 1e-12
    assert rel_err(gk.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d)) < 1e-12


def test_frequencies_take_numpy_integers_and_floats(backend):
    n, d = np.int64(6), np.float64(0.5)
    assert rel_err(gk.fft.fftfreq(n, d), np.fft.fftfreq(n, d)) < 1e-12
    assert rel_err(gk.fft.rfftfreq(np.uint8(6), 2), np.fft.rfftfreq(6, 2.0)) < 1e-12


@pytest.mark.parametrize(("n", "d"), [(0, 1.0), (4, 0.0)])
def test_frequencies_reject_bad_arguments(backend, n, d):
    with pytest.raises(ValueError, match=r"gk.fft.fftfreq: (n must be at least 1|d must be)"):
        gk.fft.fftfreq(n, d)


@pytest.mark.parametrize(("n", "d"), [(4.0, 1.0), (True, 1.0), (4, "1"), (4, 1j), (4, True)])
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_reject_non_numbers_with_typeerror(backend, name, n, d):
    with pytest.raises(TypeError, match=rf"gk\.fft\.{name}: (n must be an integer|d must be)"):
        getattr(gk.fft, name)(n, d)


@pytest.mark.parametrize("axes", [None, 0, (1,), (0, 2), (-1, 0)])
def test_shifts_match_numpy(backend, rng, axes):
    x = _signal(rng, (5, 4, 7), "float64")
    got = gk.fft.fftshift(gk.asarray(x), axes=axes)
    assert rel_err(got, np.fft.fftshift(x, axes=axes)) == 0
    assert rel_err(gk.fft.ifftshift(got, axes=axes), x) == 0


def test_shift_rejects_out_of_range_axis(backend):
    with pytest.raises(ValueError, match=r"gk.fft.fftshift: axes=3 is out of range"):
        gk.fft.fftshift(gk.asarray(np.ones((2, 2))), axes=3)


_round_trip = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_shapes = st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple)


@_round_trip
@given(
    shape=_shapes, dtype=st.sampled_from(["complex64", "complex128"]), norm=st.sampled_from(NORMS)
)
def test_fftn_round_trip(backend, rng, shape, dtype, norm):
    x = _signal(rng, shape, dtype)
    back = gk.fft.ifftn(gk.fft.fftn(gk.asarray(x), norm=norm), norm=norm)
    assert back.dtype == np.dtype(dtype)
    assert rel_err(back, x) < TOL[np.dtype(dtype)]


@_round_trip
@given(shape=_shapes, dtype=st.sampled_from(["float32", "float64"]), norm=st.sampled_from(NORMS))
def test_rfftn_round_trip(backend, rng, shape, dtype, norm):
    x = _signal(rng, shape, dtype)
    back = gk.fft.irfftn(gk.fft.rfftn(gk.asarray(x), norm=norm), s=shape, norm=norm)
    assert back.dtype == np.dtype(dtype)
    assert rel_err(back, x) < TOL[np.dtype(dtype)]


@_round_trip
@given(
    n=st.integers(1, 33), dtype=st.sampled_from(["float32", "float64"]), norm=st.sampled_from(NORMS)
)
def test_hfft_round_trip(backend, rng, n, dtype, norm):
    x = _signal(rng, (n,), dtype)
    back = gk.fft.hfft(gk.fft.ihfft(gk.asarray(x), norm=norm), n=n, norm=norm)
    assert rel_err(back, x) < TOL[np.dtype(dtype)]


def test_engine_names_the_library(backend):
    assert gk.fft.engine() == ("cufft" if backend.name == "cupy" else "scipy")


class _RecordingFFT:
    """A user's own ``scipy.fft`` backend: records each call, then lets SciPy compute it.

    With ``upcast`` it computes in double precision, as a double-only library would.
    """

    __ua_domain__ = "numpy.scipy.fft"

    def __init__(self, upcast: bool = False) -> None:
        self.calls: list[tuple[str, object]] = []
        self.upcast = upcast

    def __ua_function__(self, method, args, kwargs):
        self.calls.append((method.__name__, kwargs.get("workers")))
        x, *rest = args
        if self.upcast:
            x = np.asarray(x).astype(np.result_type(x, np.float64))
        with scipy.fft.set_backend("scipy", only=True):
            return method(x, *rest, **kwargs)


#: gpukit's transform -> the scipy.fft function the numpy backend calls for it
SCIPY_CALLED = {
    "fft": "fft", "ifft": "ifft", "rfft": "rfft", "irfft": "irfft", "hfft": "hfft",
    "ihfft": "ihfft", "fft2": "fftn", "ifft2": "ifftn", "rfft2": "rfftn", "irfft2": "irfftn",
    "hfft2": "hfftn", "ihfft2": "ihfftn", "fftn": "fftn", "ifftn": "ifftn", "rfftn": "rfftn",
    "irfftn": "irfftn", "hfftn": "hfftn", "ihfftn": "ihfftn",
}  # fmt: skip
REAL_IN = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
REAL_OUT = {"irfft", "hfft", "irfft2", "hfft2", "irfftn", "hfftn"}


def _half_precision_case(rng, name):
    """(float32/complex64 input of ``name``, its float64 SciPy reference, result dtype)."""
    x = _signal(rng, (6, 8), "float32" if name in REAL_IN else "complex64")
    ref = getattr(scipy.fft, name)(x.astype(np.result_type(x, np.float64)))
    return x, ref, np.dtype(np.float32 if name in REAL_OUT else np.complex64)


@pytest.mark.parametrize("name", list(SCIPY_CALLED))
def test_scipy_fft_set_backend_is_honoured(rng, name):
    x, ref, dtype = _half_precision_case(rng, name)
    mine = _RecordingFFT()
    with gk.use_backend("numpy"), scipy.fft.set_backend(mine):
        got = getattr(gk.fft, name)(x, workers=1)
    assert mine.calls == [(SCIPY_CALLED[name], 1)]
    assert got.dtype == dtype and got.shape == ref.shape
    assert rel_err(got, ref) < TOL[got.dtype]
    with gk.use_backend("numpy"):
        getattr(gk.fft, name)(x)
    assert len(mine.calls) == 1  # only inside the with block


def test_scipy_fft_global_backend_is_honoured(rng):
    x, ref, dtype = _half_precision_case(rng, "fft2")
    mine = _RecordingFFT()
    scipy.fft.set_global_backend(mine)
    try:
        with gk.use_backend("numpy"):
            got = gk.fft.fft2(x)
    finally:
        scipy.fft.set_global_backend("scipy")
    assert [name for name, _ in mine.calls] == ["fftn"]
    assert got.dtype == dtype and rel_err(got, ref) < TOL[got.dtype]


@pytest.mark.parametrize("name", ["fft", "irfft", "rfft2", "hfftn"])
def test_a_plugged_in_library_that_upcasts_keeps_the_dtype_rules(rng, name):
    x, ref, dtype = _half_precision_case(rng, name)
    mine = _RecordingFFT(upcast=True)
    out = np.empty(ref.shape, dtype)
    with gk.use_backend("numpy"), scipy.fft.set_backend(mine):
        got = getattr(gk.fft, name)(x)
        warm = getattr(gk.fft, name)(x)  # planned: the result's dtype is still checked
        into = getattr(gk.fft, name)(x, out=out)
    assert len(mine.calls) == 3
    assert got.dtype == dtype and rel_err(got, ref) < TOL[got.dtype]
    assert warm.dtype == dtype and rel_err(warm, ref) < TOL[warm.dtype]
    assert into is out and rel_err(out, ref) < TOL[out.dtype]


@pytest.mark.parametrize("precision", ["single", "double"])
def test_every_transform_gives_the_documented_dtype_cold_and_warm(backend, rng, precision):
    # the cupy backend declares fft_keeps_dtype: its results are not checked, so this
    # proves the declaration for every kind
    for name in SCIPY_CALLED:
        real = name in REAL_IN
        dtype = ("float32" if real else "complex64") if precision == "single" else None
        dtype = dtype or ("float64" if real else "complex128")
        x = _signal(rng, (4, 6), dtype)
        ref = getattr(scipy.fft, name)(x.astype(np.result_type(x, np.float64)))
        single = precision == "single"
        if name in REAL_OUT:
            expected = np.dtype(np.float32 if single else np.float64)
        else:
            expected = np.dtype(np.complex64 if single else np.complex128)
        on = gk.asarray(x)
        for call in ("cold", "warm"):
            got = getattr(gk.fft, name)(on)
            assert got.dtype == expected, (name, call)
            assert rel_err(got, ref) < TOL[expected], (name, call)


def test_poisson_example_runs_and_checks_itself():
    env = {**os.environ, "GPUKIT_BACKEND": "numpy"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "backends")])
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "poisson_fft.py")],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "backend numpy" in done.stdout and "residual" in done.stdout


def test_numpy_backend_fft_does_not_import_cupy():
    # gpukit's own FFT code never imports CuPy on the numpy backend.
    code = (
        "import sys, numpy as np, gpukit as gk; gk.set_backend('numpy');"
        "y = gk.fft.fft2(np.ones((4, 6), np.complex64)); gk.fft.rfft(np.ones(5));"
        "print(gk.fft.engine(), float(y[0, 0].real), 'cupy' in sys.modules)"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["scipy", "24.0", "False"]


@pytest.mark.parametrize("fn", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("n", [None, 5, 13])
def test_one_axis_transforms_are_scipys_nd_transform_bit_for_bit(rng, fn, n):
    """A one-axis transform calls scipy.fft's one-axis function (cheaper argument handling):
    the same pocketfft call as the n-d function over that axis, to the bit."""
    x = rng.standard_normal((3, 8, 6))
    if fn != "rfft":
        x = x + 1j * rng.standard_normal(x.shape)
    with gk.use_backend("numpy"):
        got = getattr(gk.fft, fn)(x, n=n, axis=1, norm="ortho")
    s = (n if n is not None else (2 * (8 - 1) if fn == "irfft" else 8),)
    want = getattr(scipy.fft, fn + "n")(x, s=s, axes=(1,), norm="ortho")
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
