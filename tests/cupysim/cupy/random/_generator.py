"""``cupy.random._generator``: the legacy ``RandomState`` and the global per-device states.

cupy/random/_generator.py keeps one state per device in a module-level dict, shared by all
threads (``_random_states``, which ``cupy.testing`` swaps around a test); draws are
NumPy's, the arrays on the current device.
"""

from __future__ import annotations

import os

import numpy as _numpy
from cupysim import capture as _capture

from cupy._core import core as _core


class RandomState:
    """Legacy random state (cupy/random/_generator.py), drawing on the current device."""

    def __init__(self, seed=None) -> None:
        self._rs = _numpy.random.RandomState(seed)

    def seed(self, seed=None) -> None:
        self._rs.seed(seed)

    def _draw(self, name, values, dtype=None):
        _capture.refuse_library("cuRAND")  # curand.pyx setStream refuses a capturing stream
        values = _numpy.asarray(values)
        if dtype is not None:
            values = values.astype(dtype)
        return _core._wrap(name, values, [])

    def rand(self, *size, dtype=float):
        return self._draw("rand", self._rs.random_sample(size), dtype)

    def randn(self, *size, dtype=float):
        return self._draw("randn", self._rs.standard_normal(size), dtype)

    def random_sample(self, size=None, dtype=float):
        return self._draw("random_sample", self._rs.random_sample(size), dtype)

    def standard_normal(self, size=None, dtype=float):
        return self._draw("standard_normal", self._rs.standard_normal(size), dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=float):
        return self._draw("normal", self._rs.normal(loc, scale, size), dtype)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=float):
        return self._draw("uniform", self._rs.uniform(low, high, size), dtype)

    def randint(self, low, high=None, size=None, dtype=int):
        return self._draw("randint", self._rs.randint(low, high, size), dtype)

    def permutation(self, num):
        if isinstance(num, _core.ndarray):
            return _core._apply("permutation", self._rs.permutation, (num,), {})
        return self._draw("permutation", self._rs.permutation(num))

    def choice(self, a, size=None, replace=True, p=None):
        return self._draw("choice", self._rs.choice(a, size, replace, p))


#: Device id -> its global RandomState, shared by every thread (cupy/random/_generator.py);
#: cupy.testing's fix_random saves and restores this dict by name, so reset_states
#: rebinds it rather than clearing it.
_random_states: dict = {}


def _current_device() -> int:
    from cupy.cuda import device

    return device.get_device_id()


def reset_states() -> None:
    global _random_states
    _random_states = {}


def get_random_state():
    """The current device's global state; the first use seeds it from ``CUPY_SEED``."""
    dev = _current_device()
    if dev not in _random_states:
        env = os.getenv("CUPY_SEED")
        # setdefault: a thread racing this one keeps whichever state landed first
        _random_states.setdefault(dev, RandomState(None if env is None else int(env)))
    return _random_states[dev]


def set_random_state(rs) -> None:
    _random_states[_current_device()] = rs


def seed(seed=None) -> None:
    """Reseed the current device's global state."""
    get_random_state().seed(seed)
