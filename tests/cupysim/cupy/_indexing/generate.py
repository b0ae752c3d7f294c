# Copied from CuPy 14.2 (cupy/_indexing/generate.py, MIT licence): the ``c_`` and ``r_``
# concatenators, pure Python over CuPy's own functions (NumPy's would return NumPy arrays).
"""``cupy.c_`` and ``cupy.r_``."""

from __future__ import annotations

import numpy

import cupy


class AxisConcatenator:
    """Translates slice objects to concatenation along an axis (see :obj:`cupy.r_`)."""

    def _output_obj(self, obj, ndim, ndmin, trans1d):
        k2 = ndmin - ndim
        if trans1d < 0:
            trans1d += k2 + 1
        defaxes = list(range(ndmin))
        k1 = trans1d
        axes = defaxes[:k1] + defaxes[k2:] + defaxes[k1:k2]
        return obj.transpose(axes)

    def __init__(self, axis=0, matrix=False, ndmin=1, trans1d=-1):
        self.axis = axis
        self.trans1d = trans1d
        self.matrix = matrix
        self.ndmin = ndmin

    def __getitem__(self, key):
        trans1d = self.trans1d
        ndmin = self.ndmin
        objs = []
        arrays = []
        scalars = []
        if isinstance(key, str):
            raise NotImplementedError
        if not isinstance(key, tuple):
            key = (key,)

        for i, k in enumerate(key):
            if isinstance(k, slice):
                raise NotImplementedError
            elif isinstance(k, str):
                if i != 0:
                    raise ValueError("special directives must be the first entry.")
                raise NotImplementedError
            elif type(k) in numpy.ScalarType:
                newobj = cupy.array(k, ndmin=ndmin)
                scalars.append(i)
            else:
                newobj = cupy.array(k, copy=False, ndmin=ndmin)
                if ndmin > 1:
                    ndim = cupy.array(k, copy=False).ndim
                    if trans1d != -1 and ndim < ndmin:
                        newobj = self._output_obj(newobj, ndim, ndmin, trans1d)
                arrays.append(newobj)

            objs.append(newobj)

        final_dtype = numpy.result_type(*arrays, *[key[k] for k in scalars])
        if final_dtype is not None:
            for k in scalars:
                objs[k] = objs[k].astype(final_dtype)

        return cupy.concatenate(tuple(objs), axis=self.axis)

    def __len__(self):
        return 0


class CClass(AxisConcatenator):
    def __init__(self):
        super().__init__(-1, ndmin=2, trans1d=0)


c_ = CClass()


class RClass(AxisConcatenator):
    def __init__(self):
        super().__init__()


r_ = RClass()
