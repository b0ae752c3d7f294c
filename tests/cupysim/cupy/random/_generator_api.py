"""``cupy.random.Generator`` (cupy/random/_generator_api.pyx): draws on the current device.

The bit stream is NumPy's PCG64, not cuRAND's XORWOW: same distributions, other numbers.
"""

from __future__ import annotations

import numpy

from cupy._core import core


class Generator:
    """Container for the bit generator and the distributions it draws from."""

    def __init__(self, bit_generator) -> None:
        self.bit_generator = bit_generator
        self._rng = numpy.random.Generator(numpy.random.PCG64(bit_generator._seed))

    def _out(self, name, values, out):
        if out is None:
            return core._wrap(name, values, [])
        out[...] = core._wrap(name, values, [])
        return out

    def random(self, size=None, dtype=numpy.float64, out=None):
        size = out.shape if out is not None and size is None else size
        return self._out("random", self._rng.random(size, dtype=dtype), out)

    def standard_normal(self, size=None, dtype=numpy.float64, out=None):
        size = out.shape if out is not None and size is None else size
        return self._out("standard_normal", self._rng.standard_normal(size, dtype=dtype), out)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=numpy.float64):
        return self._out("uniform", self._rng.uniform(low, high, size).astype(dtype), None)

    def integers(self, low, high=None, size=None, dtype=numpy.int64, endpoint=False):
        values = self._rng.integers(low, high, size, dtype=dtype, endpoint=endpoint)
        return self._out("integers", numpy.asarray(values), None)

    def standard_exponential(self, size=None, dtype=numpy.float64, method="inv", out=None):
        size = out.shape if out is not None and size is None else size
        return self._out("standard_exponential", self._rng.standard_exponential(size, dtype), out)


class BitGenerator:
    def __init__(self, seed=None) -> None:
        self._seed = numpy.random.SeedSequence(seed)


class XORWOW(BitGenerator):
    """cuRAND's default bit generator (simulated by NumPy's PCG64 seeded the same way)."""


Generator.__module__ = "cupy.random._generator_api"
