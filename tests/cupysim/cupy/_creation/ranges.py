"""``cupy.meshgrid``, ``cupy.mgrid`` and ``cupy.ogrid`` for the simulator.

NumPy's own objects would hand back NumPy arrays (or, for ``meshgrid(copy=False)``,
NumPy's broadcast views, which warn on write); these build device arrays on the current
device, with CuPy's argument rules (cupy/_creation/ranges.py).
"""

from __future__ import annotations

import numpy as np

from cupy._core import core


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-D coordinate vectors (a tuple, as CuPy returns).

    Only 1-D ``cupy.ndarray`` inputs are taken (NumPy would ravel N-D ones and upload
    host data). With ``copy=False`` the results are broadcast views of the inputs.
    """
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    for x in xi:
        if x.ndim != 1:
            raise ValueError("input has to be 1d")
        if not isinstance(x, core.ndarray):
            raise ValueError("input has to be cupy.ndarray")
    import cupy

    if len(xi) <= 1:
        # CuPy hands a single vector back as it came (no copy whatever ``copy`` says)
        return tuple(xi)
    n = len(xi)
    # which output axis each input runs along: 'xy' swaps the first two
    along = list(range(n))
    if indexing == "xy":
        along[0], along[1] = 1, 0
    full = [0] * n
    for x, ax in zip(xi, along, strict=True):
        full[ax] = x.size
    grids = []
    for x, ax in zip(xi, along, strict=True):
        g = x.reshape(tuple(x.size if d == ax else 1 for d in range(n)))
        if not sparse:
            g = cupy.broadcast_to(g, tuple(full))
        grids.append(g.copy() if copy else g)
    return tuple(grids)


class _Grid:
    """``mgrid`` (dense) or ``ogrid`` (open): ``grid[start:stop:step, ...]``.

    The bounds may be device arrays (``mgrid[x:y:10j]``) and a complex step is a number of
    points, stop included, as in NumPy; the grid is computed in one launch on the current
    device from the bounds' values.
    """

    def __init__(self, sparse: bool) -> None:
        self._numpy_grid = np.ogrid if sparse else np.mgrid
        self._name = "ogrid" if sparse else "mgrid"

    def __getitem__(self, key):
        reads: list = []

        def host(s):
            if isinstance(s, slice):
                return slice(*(core._unwrap(v, reads) for v in (s.start, s.stop, s.step)))
            return core._unwrap(s, reads)

        host_key = tuple(map(host, key)) if isinstance(key, tuple) else host(key)
        res = self._grid_of(host_key)
        # a CUDA graph recomputes the grid from the bounds' memory on replay
        return core._wrap(self._name, res, reads, recompute=(self._grid_of, (host_key,), {}, False))

    def _grid_of(self, host_key):
        res = self._numpy_grid[host_key]
        return tuple(res) if isinstance(res, list) else res

    def __len__(self) -> int:
        return 0


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)
