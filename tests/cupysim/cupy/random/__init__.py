"""``cupy.random`` (simulated): draws computed by NumPy, arrays on the current device."""

from __future__ import annotations

from cupy.random import _generator
from cupy.random._generator import (  # noqa: F401
    RandomState,
    get_random_state,
    reset_states,
    set_random_state,
)
from cupy.random._generator_api import XORWOW, BitGenerator, Generator

seed = _generator.seed


def default_rng(seed=None):
    """A Generator on the XORWOW bit generator (cupy/random/_generator_api.pyx)."""
    if isinstance(seed, BitGenerator):
        return Generator(seed)
    if isinstance(seed, Generator):
        return seed
    return Generator(XORWOW(seed))


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
