# Copied from CuPy 14.2 (cupy/_creation/ranges.py, MIT licence): meshgrid and the
# mgrid/ogrid grids, pure Python over CuPy's own functions (NumPy's would return NumPy
# arrays, or views NumPy marks read-only).
"""``cupy.meshgrid``, ``cupy.mgrid`` and ``cupy.ogrid``."""

from __future__ import annotations

import math

import cupy


def meshgrid(*xi, **kwargs):
    """Coordinate matrices from 1-D coordinate arrays (a tuple of cupy.ndarray)."""
    indexing = kwargs.pop("indexing", "xy")
    copy = bool(kwargs.pop("copy", True))
    sparse = bool(kwargs.pop("sparse", False))
    if kwargs:
        raise TypeError(f"meshgrid() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if indexing not in ["xy", "ij"]:
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")

    for x in xi:
        if x.ndim != 1:
            raise ValueError("input has to be 1d")
        if not isinstance(x, cupy.ndarray):
            raise ValueError("input has to be cupy.ndarray")
    if len(xi) <= 1:
        return tuple(xi)

    meshes = []
    for i, x in enumerate(xi):
        if indexing == "xy" and i == 0:
            left_none = 1
        elif indexing == "xy" and i == 1:
            left_none = 0
        else:
            left_none = i

        expand_slices = (None,) * left_none + (slice(None),) + (None,) * (len(xi) - (left_none + 1))
        meshes.append(x[expand_slices])

    meshes_br = meshes if sparse else list(cupy.broadcast_arrays(*meshes))

    if copy:
        for i in range(len(meshes_br)):
            meshes_br[i] = meshes_br[i].copy()
    return tuple(meshes_br)


class nd_grid:
    """A multi-dimensional "meshgrid" built by indexing (``mgrid``, ``ogrid``)."""

    def __init__(self, sparse=False):
        self.sparse = sparse

    def __getitem__(self, key):
        if isinstance(key, slice):
            step = key.step
            stop = key.stop
            start = key.start
            if start is None:
                start = 0
            if isinstance(step, complex):
                step = abs(step)
                length = int(step)
                if step != 1:
                    step = (key.stop - start) / float(step - 1)
                stop = key.stop + step
                return cupy.arange(0, length, 1, float) * step + start
            else:
                return cupy.arange(start, stop, step)

        size = []
        typ = int
        for k in range(len(key)):
            step = key[k].step
            start = key[k].start
            if start is None:
                start = 0
            if step is None:
                step = 1
            if isinstance(step, complex):
                size.append(int(abs(step)))
                typ = float
            else:
                size.append(math.ceil((key[k].stop - start) / (step * 1.0)))
            if any(isinstance(v, float) for v in (step, start, key[k].stop)):
                typ = float
        if self.sparse:
            nn = [cupy.arange(_x, dtype=typ) for _x in size]
        else:
            nn = cupy.indices(size, typ)
        for k in range(len(size)):
            step = key[k].step
            start = key[k].start
            if start is None:
                start = 0
            if step is None:
                step = 1
            if isinstance(step, complex):
                step = int(abs(step))
                if step != 1:
                    step = (key[k].stop - start) / float(step - 1)
            nn[k] = nn[k] * step + start
        if self.sparse:
            slobj = [cupy.newaxis] * len(size)
            for k in range(len(size)):
                slobj[k] = slice(None, None)
                nn[k] = nn[k][tuple(slobj)]
                slobj[k] = cupy.newaxis
        return nn


mgrid = nd_grid(sparse=False)
ogrid = nd_grid(sparse=True)
