"""NumPy's ``numpy/fft/tests/test_helper.py``, from the installed wheel, on ``gk.fft``."""

from __future__ import annotations

from .upstream_fft import check_deviations, deviation_fixture, load, numpy_backend_fixture

globals().update(load("numpy.fft.tests.test_helper"))

DEVIATIONS: dict[str, str] = {}

_expected_deviation = deviation_fixture(DEVIATIONS)
_numpy_backend = numpy_backend_fixture()


def test_deviations_are_upstream_tests_with_documented_reasons(request):
    check_deviations(DEVIATIONS, globals(), request)
