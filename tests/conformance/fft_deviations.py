"""Why ``gk.fft`` fails some of NumPy's and SciPy's own tests: each reason is a documented
difference (``docs/differences.rst``, section FFT), never a bug left unfixed."""

from __future__ import annotations

LONG_DOUBLE = (
    "long double input is refused with TypeError: gpukit's dtype rules are the same on every "
    "backend, and no GPU FFT library computes in long double"
)
MESSAGES = (
    "error messages are gpukit's own (they name the function, the argument and what was "
    "expected); the exception types are NumPy's"
)
REPEATED_AXES = (
    "an axis may appear only once in axes, as in SciPy (NumPy transforms a repeated axis twice)"
)
S_WITHOUT_AXES = (
    "s without axes transforms the last len(s) axes, SciPy's rule, without NumPy 2's "
    "DeprecationWarning"
)
NONE_IN_S = (
    "None entries in s are refused with TypeError (NumPy 2 deprecated them); -1 means the "
    "input's length"
)
