"""``cupyx.scipy.sparse`` (simulated): CSR matrices whose arrays live on a device.

``data``, ``indices`` and ``indptr`` are cupy arrays; products run as cuSPARSE routines
on the current device (operands must be there, cupysim.placement), valued by SciPy.
A SciPy sparse matrix given to the constructor is copied to the current device.
"""

from __future__ import annotations

import cupy as _cupy
import numpy as _numpy
import scipy.sparse as _sp
from cupy._core import core as _core
from cupysim import libs as _libs
from cupysim import placement as _placement


class SparseWarning(Warning):
    pass


class SparseEfficiencyWarning(SparseWarning):
    pass


class spmatrix:
    """Base class of sparse matrices."""

    __array_priority__ = 101

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. "
            "Please use `.get()` to construct a NumPy array explicitly."
        )


class csr_matrix(spmatrix):
    """Compressed Sparse Row matrix on the current device."""

    format = "csr"

    def __init__(self, arg1, shape=None, dtype=None, copy=False):
        if _sp.issparse(arg1):
            m = arg1.tocsr()
            if dtype is not None:
                m = m.astype(dtype)
            data, indices, indptr = (_cupy.array(v) for v in (m.data, m.indices, m.indptr))
            shape = m.shape
        elif isinstance(arg1, csr_matrix):
            data, indices, indptr = arg1.data, arg1.indices, arg1.indptr
            if copy:
                data, indices, indptr = data.copy(), indices.copy(), indptr.copy()
            shape = arg1.shape if shape is None else shape
        elif isinstance(arg1, tuple) and len(arg1) == 3:
            data, indices, indptr = arg1
            if not all(isinstance(v, _core.ndarray) for v in arg1):
                raise ValueError("data, indices and indptr must be cupy arrays")
            if copy:
                data, indices, indptr = data.copy(), indices.copy(), indptr.copy()
            if shape is None:
                shape = (indptr.size - 1, int(indices.max()) + 1 if indices.size else 0)
        elif isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
            # COO form (data, (row, col)): converted on the device, duplicates summed
            found: list = []
            host = _core._unwrap(arg1, found)
            m = _sp.csr_matrix(host, shape=shape, dtype=dtype)
            m.sum_duplicates()
            data, indices, indptr = (_core._wrap("coo2csr", v, found) for v in
                                     (m.data, m.indices, m.indptr))  # fmt: skip
            shape = m.shape
        elif isinstance(arg1, tuple) and len(arg1) == 2:
            shape = tuple(int(n) for n in arg1)
            data = _cupy.zeros(0, dtype or "d")
            indices = _cupy.zeros(0, "i")
            indptr = _cupy.zeros(shape[0] + 1, "i")
        elif isinstance(arg1, _core.ndarray):
            if arg1.ndim != 2:
                raise ValueError("expected a 2-D array")
            m = _sp.csr_matrix(arg1._np)
            data, indices, indptr = (
                _core._wrap("dense2csr", v, [arg1]) for v in (m.data, m.indices, m.indptr)
            )
            shape = m.shape
        else:
            raise ValueError("Unsupported initializer format")
        if dtype is not None and data.dtype != _numpy.dtype(dtype):
            data = data.astype(dtype)
        if data.dtype.char not in "?fdFD":
            raise ValueError(
                f"Only bool, float32, float64, complex64 and complex128 are "
                f"supported, but got {data.dtype}"
            )
        self.data, self.indices, self.indptr = data, indices, indptr
        self._shape = tuple(shape)

    # -- simulator helpers
    def _host(self):
        return _sp.csr_matrix(
            (self.data._np, self.indices._np, self.indptr._np), shape=self._shape, copy=False
        )

    def _arrays(self):
        return [self.data, self.indices, self.indptr]

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def nnz(self):
        return int(self.indptr[-1].item()) if self.indptr.size else 0

    @property
    def ndim(self):
        return 2

    @property
    def device(self):
        return self.data.device

    def get(self, stream=None):
        """A SciPy CSR copy on the host."""
        return _sp.csr_matrix(
            (self.data.get(stream), self.indices.get(stream), self.indptr.get(stream)),
            shape=self._shape,
        )

    def toarray(self, order=None, out=None):
        return _core._wrap("csr2dense", self._host().toarray(order), self._arrays())

    def todense(self, order=None, out=None):
        return self.toarray(order, out)

    def tocsr(self, copy=False):
        return self.copy() if copy else self

    def copy(self):
        return csr_matrix((self.data.copy(), self.indices.copy(), self.indptr.copy()),
                          shape=self._shape)  # fmt: skip

    def astype(self, dtype, copy=False):
        return csr_matrix((self.data.astype(dtype), self.indices, self.indptr), shape=self._shape)

    def transpose(self, axes=None, copy=False):
        return _from_host(self._host().T.tocsr(), self._arrays())

    @property
    def T(self):
        return self.transpose()

    def diagonal(self, k=0):
        return _core._wrap("diagonal", self._host().diagonal(k), self._arrays())

    def sum(self, axis=None, dtype=None, out=None):
        res = self._host().sum(axis=axis, dtype=dtype)
        return _core._wrap("sum", _numpy.asarray(res), self._arrays())

    def _spmv(self, other):
        _libs.require("cusparse")
        if isinstance(other, _core.ndarray):
            _placement.require_current("cuSPARSE", "spmv", [*self._arrays(), other])
            res = self._host() @ other._np
            return _core._wrap("spmv", _numpy.asarray(res), [*self._arrays(), other],
                               library=True)  # fmt: skip
        if isinstance(other, csr_matrix):
            _placement.require_current("cuSPARSE", "spgemm", [*self._arrays(), *other._arrays()])
            return _from_host((self._host() @ other._host()).tocsr(), self._arrays())
        if _numpy.isscalar(other):
            return csr_matrix((self.data * other, self.indices, self.indptr), shape=self._shape)
        if isinstance(other, _numpy.ndarray):
            raise TypeError(f"Unsupported type {type(other)}")
        return NotImplemented

    def dot(self, other):
        return self._spmv(other)

    def __matmul__(self, other):
        if _numpy.isscalar(other):
            raise ValueError("Scalar operands are not allowed, use '*' instead")
        return self._spmv(other)

    def __mul__(self, other):
        return self._spmv(other)

    def __rmul__(self, other):
        if _numpy.isscalar(other):
            return self._spmv(other)
        return NotImplemented

    def __neg__(self):
        return csr_matrix((-self.data, self.indices, self.indptr), shape=self._shape)

    def __repr__(self):
        return (
            f"<{self._shape[0]}x{self._shape[1]} sparse matrix of type '{self.dtype}' "
            f"with {self.nnz} stored elements in Compressed Sparse Row format>"
        )


def _from_host(m, found):
    data, indices, indptr = (_core._wrap("csr", v, found) for v in (m.data, m.indices, m.indptr))
    return csr_matrix((data, indices, indptr), shape=m.shape)


def issparse(x) -> bool:
    return isinstance(x, spmatrix)


isspmatrix = issparse


def isspmatrix_csr(x) -> bool:
    return isinstance(x, csr_matrix)


def identity(n, dtype="d", format=None):
    return csr_matrix(_sp.identity(n, dtype=dtype, format="csr"))


def eye(m, n=None, k=0, dtype="d", format=None):
    return csr_matrix(_sp.eye(m, n, k=k, dtype=dtype, format="csr"))
