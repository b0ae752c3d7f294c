"""``cupy.random`` (simulated): draws computed by NumPy, arrays on the current device."""

from __future__ import annotations

import threading

import numpy as _numpy
from cupysim import capture as _capture

from cupy._core import core as _core
from cupy.random._generator_api import XORWOW, BitGenerator, Generator


def default_rng(seed=None):
    """A Generator on the XORWOW bit generator (cupy/random/_generator_api.pyx)."""
    if isinstance(seed, BitGenerator):
        return Generator(seed)
    if isinstance(seed, Generator):
        return seed
    return Generator(XORWOW(seed))


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


_state = threading.local()


def get_random_state():
    rs = getattr(_state, "rs", None)
    if rs is None:
        rs = _state.rs = RandomState()
    return rs


def set_random_state(rs) -> None:
    _state.rs = rs


def seed(seed=None) -> None:
    get_random_state().seed(seed)


def reset_states() -> None:
    _state.rs = None


def rand(*size, **kwargs):
    return get_random_state().rand(*size, **kwargs)


def randn(*size, **kwargs):
    return get_random_state().randn(*size, **kwargs)


def random_sample(size=None, dtype=float):
    return get_random_state().random_sample(size, dtype)


random = random_sample


def standard_normal(size=None, dtype=float):
    return get_random_state().standard_normal(size, dtype)


def normal(loc=0.0, scale=1.0, size=None, dtype=float):
    return get_random_state().normal(loc, scale, size, dtype)


def uniform(low=0.0, high=1.0, size=None, dtype=float):
    return get_random_state().uniform(low, high, size, dtype)


def randint(low, high=None, size=None, dtype="l"):
    return get_random_state().randint(low, high, size, dtype)


def permutation(a):
    return get_random_state().permutation(a)


def choice(a, size=None, replace=True, p=None):
    return get_random_state().choice(a, size, replace, p)
