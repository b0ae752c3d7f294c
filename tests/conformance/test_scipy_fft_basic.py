"""SciPy's ``scipy/fft/tests/test_basic.py``, from the installed wheel, on ``gk.fft``."""

from __future__ import annotations

from . import fft_deviations as why
from .upstream_fft import (
    check_deviations,
    deviation_fixture,
    load,
    numpy_backend_fixture,
    xp_fixture,
)

globals().update(load("scipy.fft.tests.test_basic"))

_LONG = ("longdouble", "clongdouble")
DEVIATIONS: dict[str, str] = {
    "TestFFT::test_dtypes_nonstandard[longdouble]": why.LONG_DOUBLE,
    **{
        f"test_fft_with_order[{fn}-{order}-{dtype}]": why.LONG_DOUBLE
        for fn in ("fft", "fft2", "fftn", "ifft", "ifft2", "ifftn")
        for order in ("F", "non-contiguous")
        for dtype in _LONG
    },
}

xp = xp_fixture()
_expected_deviation = deviation_fixture(DEVIATIONS)
_numpy_backend = numpy_backend_fixture()


def test_deviations_are_upstream_tests_with_documented_reasons(request):
    check_deviations(DEVIATIONS, globals(), request)
