"""``cupy.c_`` and ``cupy.r_`` for the simulator.

NumPy's ``c_``/``r_`` would build NumPy arrays; these apply NumPy's rules for the index
expression (slices as ranges, a leading string directive, scalars and arrays joined
along an axis) to the values of the device arrays given, and the result is one new array
on the current device, made in one launch as a concatenation is (cupy/_indexing/
generate.py).
"""

from __future__ import annotations

import numpy as np

from cupy._core import core


class _Concatenator:
    def __init__(self, name: str, numpy_obj) -> None:
        self._name, self._numpy_obj = name, numpy_obj

    def __getitem__(self, key):
        reads: list = []
        parts = key if isinstance(key, tuple) else (key,)
        host = []
        for p in parts:
            if isinstance(p, slice):
                p = slice(*(core._unwrap(v, reads) for v in (p.start, p.stop, p.step)))
            elif isinstance(p, np.ndarray):
                # CuPy takes device arrays and scalars, not host arrays
                raise TypeError(f"Unsupported type {type(p)}")
            else:
                p = core._unwrap(p, reads)
            host.append(p)
        host_key = tuple(host) if isinstance(key, tuple) else host[0]
        res = self._joined(host_key)
        # a CUDA graph recomputes the result from the parts' memory on replay
        return core._wrap(
            "concatenate", res, reads, recompute=(self._joined, (host_key,), {}, False)
        )

    def _joined(self, host_key) -> np.ndarray:
        return np.asarray(self._numpy_obj[host_key])

    def __len__(self) -> int:
        return 0


r_ = _Concatenator("r_", np.r_)
c_ = _Concatenator("c_", np.c_)
