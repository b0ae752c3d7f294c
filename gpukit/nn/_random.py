"""Seeding of parameter initialisation and dropout masks (``gk.nn.manual_seed``)."""

from __future__ import annotations

import numpy as np

__all__ = ["generator", "manual_seed"]

_global = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Seed the generator that initialises layers and seeds dropout masks.

    Layers built after the call, without their own ``seed=``, draw their initial
    weights (and Dropout its mask seed) from this generator, so a script that calls
    ``manual_seed`` first builds the same network every run.

    Parameters
    ----------
    seed : int
        Non-negative seed.

    Examples
    --------
    >>> import gpukit as gk
    >>> gk.nn.manual_seed(0)
    >>> a = gk.nn.Linear(3, 2).weight.data
    >>> gk.nn.manual_seed(0)
    >>> bool((gk.nn.Linear(3, 2).weight.data == a).all())
    True
    """
    global _global
    _global = np.random.default_rng(seed)


def generator(seed: int | None) -> np.random.Generator:
    """A generator of its own for ``seed``, or the global one (``manual_seed``)."""
    return _global if seed is None else np.random.default_rng(seed)
