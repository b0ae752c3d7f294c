"""NumPy's ``numpy/fft/tests/test_pocketfft.py``, from the installed wheel, on ``gk.fft``."""

from __future__ import annotations

from . import fft_deviations as why
from .upstream_fft import check_deviations, deviation_fixture, load, numpy_backend_fixture

globals().update(load("numpy.fft.tests.test_pocketfft"))

_S_OPS = ("fftn", "ifftn", "rfftn", "irfftn")
DEVIATIONS: dict[str, str] = {
    "TestFFT1D::test_identity_long_short[longdouble]": why.LONG_DOUBLE,
    "TestFFT1D::test_identity_long_short_reversed[longdouble]": why.LONG_DOUBLE,
    "TestFFT1D::test_fft_bad_out": why.MESSAGES,  # "must be of ArrayType"
    **{
        f"TestFFT1D::test_ifft[{n}]": why.MESSAGES for n in ("None", "backward", "ortho", "forward")
    },
    "TestFFT1D::test_rfftn": why.REPEATED_AXES,  # axes=(0, 0, 1), gh-27159
    **{f"TestFFT1D::test_s_axes_none[{op}]": why.S_WITHOUT_AXES for op in _S_OPS},
    **{f"TestFFT1D::test_s_axes_none_2D[{op}]": why.S_WITHOUT_AXES for op in ("fft2", "ifft2")},
    **{
        f"TestFFT1D::test_s_contains_none[{op}]": why.NONE_IN_S for op in (*_S_OPS, "fft2", "ifft2")
    },
}

_expected_deviation = deviation_fixture(DEVIATIONS)
_numpy_backend = numpy_backend_fixture()


def test_deviations_are_upstream_tests_with_documented_reasons(request):
    check_deviations(DEVIATIONS, globals(), request)
