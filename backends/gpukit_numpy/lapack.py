"""NumPy's own LAPACK for the dense solvers of :mod:`.linalg`, on NumPy's BLAS thread pool.

SciPy's LAPACK wrappers call the OpenBLAS SciPy's wheels bundle, whose thread pool is not
NumPy's. OpenBLAS workers spin for a while after a call, so a loop alternating a NumPy
product and a SciPy factorisation has each library's pool take the cores the other's
still spins on: on a 2-core machine ``gk.matmul`` then ``gk.linalg.solve`` at n=256
took 15 ms against 0.9 ms for the two alone. NumPy's library holds LAPACK too, with
NumPy's pool behind it.

The routines are found by name in NumPy's library (:mod:`._library`), under the names of
the builds that use 64-bit integers (ILP64): scipy-openblas64 (NumPy 2 wheels), OpenBLAS
with a ``64_`` suffix (NumPy 1 wheels) and MKL's ``_64`` names. Fortran LAPACK takes
every argument by reference, so an integer's width is not a matter of registers, as for
:mod:`.blas`'s by-value BLAS calls: an LP64 routine would read the low half of each
64-bit count and write its pivots as 32-bit integers. The plain names (``dgetrf_``),
which may be either, are not tried. Character arguments are followed by their hidden
lengths (``size_t``, gfortran's convention; a routine that has none ignores them).

Each routine is wrapped with the calling convention of SciPy's wrapper of the same name
(:mod:`scipy.linalg.lapack`), for the arguments gpukit passes, so :mod:`.linalg` calls
either the same way: inputs are never overwritten (a factorisation works on a
Fortran-ordered copy), ``info`` is returned, and a pivot array goes only to the
``getrs`` of the same provider. Before first use the set for a dtype is checked on
small problems with exact answers; where a name does not resolve (Windows, other BLAS
builds) or the check fails, :func:`routines` returns None and :mod:`.linalg` keeps
SciPy's wrappers.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from gpukit._host.native import address

from ._library import PerDtype, library, routine

__all__ = ["Lapack", "routines"]

_NAMES = ("scipy_{}_64_", "{}_64_", "{}_64")
_LETTERS = {np.dtype(c): letter for c, letter in zip("fdFD", "sdcz", strict=True)}
#: the C type of a real result (xLANGE, xLANSY): single precision for s and c
_REAL = {"s": ctypes.c_float, "d": ctypes.c_double, "c": ctypes.c_float, "z": ctypes.c_double}

#: routine -> (character arguments, other arguments, returns a real number); a routine
#: whose name depends on the field is given by its real name
_SIGNATURES = {
    "getrf": (0, 6, False),
    "getrs": (1, 8, False),
    "gecon": (1, 8, False),
    "lange": (1, 5, True),
    "potrf": (1, 4, False),
    "potrs": (1, 7, False),
    "pocon": (1, 8, False),
    "laset": (1, 6, False),
    "lansy": (2, 4, True),  # lanhe for complex: the Hermitian matrix's norm
}
_TRANS = {0: b"N", 1: b"T", 2: b"C"}

Routine = Callable[..., Any]


def _refs(values: tuple[float, ...], dtype: Any) -> tuple[np.ndarray, list[int]]:
    """``values`` in a fresh array of ``dtype`` and the address of each, for arguments
    passed by reference (the caller holds the array, read or not, while the routine runs)."""
    held = np.array(values, dtype)
    base = address(held)
    return held, [base + k * held.itemsize for k in range(len(values))]


class Lapack:
    """NumPy's LAPACK routines for one dtype, called as SciPy's wrappers are.

    Each method returns what SciPy's wrapper of that name returns, for the arguments
    shown; matrices come back Fortran-ordered and inputs are left as they were.
    """

    def __init__(self, dtype: np.dtype, found: dict[str, Routine]) -> None:
        self.dtype = dtype
        self.real = np.dtype(dtype.char.lower())
        self._found = found
        self._zero = np.zeros(1, dtype)  # laset's ALPHA and BETA, only ever read

    def _matrix(self, a: np.ndarray) -> np.ndarray:
        """``a`` as LAPACK reads it: Fortran-ordered and aligned, copied only if need be."""
        return np.require(a, self.dtype, ["F", "A"])

    def _rhs(self, b: np.ndarray) -> tuple[np.ndarray, int]:
        """A Fortran-ordered copy of ``b`` to solve in place, and its number of columns."""
        x = np.array(b, self.dtype, order="F")
        return x, 1 if x.ndim == 1 else x.shape[1]

    def getrf(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """``(lu, piv, info)``: ``a``'s LU factors and the pivots (1-based) for :meth:`getrs`."""
        lu = np.array(a, self.dtype, order="F")
        m, n = lu.shape
        piv = np.empty(min(m, n), np.int64)
        ints, (pm, pn, plda, pinfo) = _refs((m, n, max(1, m), 0), np.int64)
        self._found["getrf"](pm, pn, address(lu), plda, address(piv), pinfo)
        return lu, piv, int(ints[3])

    def getrs(
        self, lu: np.ndarray, piv: np.ndarray, b: np.ndarray, trans: int = 0
    ) -> tuple[np.ndarray, int]:
        """``(x, info)`` solving ``op(a) x = b`` from :meth:`getrf`'s factors."""
        lu = self._matrix(lu)
        x, k = self._rhs(b)
        n = lu.shape[0]
        ints, (pn, pk, plda, pinfo) = _refs((n, k, max(1, n), 0), np.int64)
        self._found["getrs"](
            _TRANS[trans], pn, pk, address(lu), plda, address(piv), address(x), plda, pinfo, 1
        )
        return x, int(ints[3])

    def _condition(self, name: str, flag: bytes, a: np.ndarray, anorm: float) -> tuple[Any, int]:
        """``(rcond, info)`` from ``gecon``/``pocon``: real work 4n and 3n entries with n
        integers, complex 2n and 2n, with 2n and n reals (the integers' room holds them)."""
        a = self._matrix(a)
        n = a.shape[0]
        work, aux = np.empty(4 * n, self.dtype), np.empty(2 * n, np.int64)
        scalars, (panorm, prcond) = _refs((anorm, 0.0), self.real)
        ints, (pn, plda, pinfo) = _refs((n, max(1, n), 0), np.int64)
        self._found[name](
            flag, pn, address(a), plda, panorm, prcond, address(work), address(aux), pinfo, 1
        )
        return scalars[1], int(ints[2])

    def gecon(self, lu: np.ndarray, anorm: float, norm: str = "1") -> tuple[Any, int]:
        """``(rcond, info)``: the reciprocal condition number estimated from the LU
        factors and ``anorm``, the ``norm`` ("1" or "I") of the matrix factored."""
        return self._condition("gecon", norm.encode(), lu, anorm)

    def lange(self, norm: str, a: np.ndarray) -> float:
        """The ``norm`` ("1" or "I") of ``a``."""
        a = self._matrix(a)
        m, n = a.shape
        work = np.empty(max(1, m), self.real)
        _held, (pm, pn, plda) = _refs((m, n, max(1, m)), np.int64)
        return float(
            self._found["lange"](norm.encode(), pm, pn, address(a), plda, address(work), 1)
        )

    def potrf(self, a: np.ndarray, lower: int = 0, clean: int = 1) -> tuple[np.ndarray, int]:
        """``(c, info)``: the Cholesky factor of the triangle ``lower`` of ``a``, the other
        triangle zeroed if ``clean``, else as ``a`` had it."""
        c = np.array(a, self.dtype, order="F")
        n = c.shape[0]
        ints, (pn, plda, pinfo, pm) = _refs((n, max(1, n), 0, n - 1), np.int64)
        self._found["potrf"](b"L" if lower else b"U", pn, address(c), plda, pinfo, 1)
        if clean and n > 1:
            # the strict other triangle: the triangle of the (n-1)-square block one column
            # right of a lower factor's diagonal, one row below an upper factor's
            start = address(c) + (c.strides[1] if lower else c.itemsize)
            zero = address(self._zero)
            self._found["laset"](b"U" if lower else b"L", pm, pm, zero, zero, start, plda, 1)
        return c, int(ints[2])

    def potrs(self, c: np.ndarray, b: np.ndarray, lower: int = 0) -> tuple[np.ndarray, int]:
        """``(x, info)`` solving ``a x = b`` from the Cholesky factor in the triangle
        ``lower`` of ``c``."""
        c = self._matrix(c)
        x, k = self._rhs(b)
        n = c.shape[0]
        ints, (pn, pk, plda, pinfo) = _refs((n, k, max(1, n), 0), np.int64)
        self._found["potrs"](
            b"L" if lower else b"U", pn, pk, address(c), plda, address(x), plda, pinfo, 1
        )
        return x, int(ints[3])

    def pocon(self, c: np.ndarray, anorm: float, uplo: str = "U") -> tuple[Any, int]:
        """``(rcond, info)``: the reciprocal condition number estimated from the Cholesky
        factor in the triangle ``uplo`` ("L" or "U") of ``c`` and the matrix's 1-norm."""
        return self._condition("pocon", uplo.encode(), c, anorm)

    def norm1_hermitian(self, a: np.ndarray) -> float:
        """The 1-norm of the Hermitian matrix whose lower triangle ``a`` holds (its
        diagonal read as real), from that triangle alone: no temporary. A C-ordered
        ``a`` is read as ``a.T``, whose upper triangle holds the same entries, conjugated
        for a complex ``a``: the same magnitudes, the same real diagonal."""
        if a.flags.c_contiguous and not a.flags.f_contiguous:
            m, uplo = a.T, b"U"
        else:
            m, uplo = self._matrix(a), b"L"
        n = m.shape[0]
        work = np.empty(max(1, n), self.real)
        _held, (pn, plda) = _refs((n, max(1, n)), np.int64)
        norm = self._found["lansy"](b"1", uplo, pn, address(m), plda, address(work), 1, 1)
        return float(norm)


def _bound_routine(lib: ctypes.CDLL, letter: str, name: str) -> Routine | None:
    chars, others, real = _SIGNATURES[name]
    if name == "lansy" and letter in "cz":
        name = "lanhe"
    found = routine(lib, [pattern.format(letter + name) for pattern in _NAMES])
    if found is not None:
        found.argtypes = [ctypes.c_char_p] * chars + [ctypes.c_void_p] * others
        found.argtypes += [ctypes.c_size_t] * chars
        found.restype = _REAL[letter] if real else None
    return found


def _close(got: Any, want: Any, tol: float) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    return bool(np.linalg.norm(got - want) <= tol * np.linalg.norm(want))


def _works(lp: Lapack) -> bool:
    """Whether ``lp`` gives the known answers of small problems: factors exact in binary
    (a wrong binding, argument or integer width shows), norms, solutions and condition
    estimates close, and ``info`` where a factorisation fails."""
    tol = 64 * float(np.finfo(lp.dtype).eps)
    unit = 1j if lp.dtype.kind == "c" else 0

    def as_dtype(x: Any) -> np.ndarray:
        x = np.asarray(x)
        return (x if unit else x.real).astype(lp.dtype)

    def norm1(x: np.ndarray) -> float:
        return float(np.abs(x).sum(0).max())

    low = as_dtype([[2, 0, 0], [1 + unit, 2, 0], [1, 1 - unit, 2]])
    h = low @ low.conj().T  # Gaussian integers; potrf's divisions by 2 and sqrt(4) exact
    a = np.tril(h) + np.triu(np.full((3, 3), 99, lp.dtype), 1)  # the upper triangle: unread
    c, info = lp.potrf(a, lower=1, clean=1)
    if info != 0 or not np.array_equal(c, low):
        return False
    for layout in (a, np.asfortranarray(a)):
        if not _close(lp.norm1_hermitian(layout), norm1(h), tol):
            return False
    want = as_dtype([1, 2 - unit, 3])
    x, info = lp.potrs(c, h @ want, lower=1)
    exact = 1 / (norm1(h) * norm1(np.linalg.inv(h.astype(np.complex128))))
    rcond, _ = lp.pocon(c, norm1(h), "L")
    if info != 0 or not _close(x, want, tol) or not exact * (1 - tol) <= rcond <= 3 * exact:
        return False
    if lp.potrf(as_dtype([[1, 2], [2, 1]]), lower=1)[1] != 2:
        return False
    g = as_dtype([[1, 2, 0], [4, 1, unit], [2, 0, 4]])  # the rows pivoted
    lu, piv, info = lp.getrf(g)
    if info != 0 or not _close([lp.lange("1", g), lp.lange("I", g)], [7, 6], tol):
        return False
    for trans, op in ((0, g), (1, g.T)):
        x, info = lp.getrs(lu, piv, op @ want, trans=trans)
        if info != 0 or not _close(x, want, tol):
            return False
    exact = 1 / (norm1(g) * norm1(np.linalg.inv(g.astype(np.complex128))))
    rcond, _ = lp.gecon(lu, norm1(g), "1")
    if not exact * (1 - tol) <= rcond <= 3 * exact:
        return False
    return lp.getrf(as_dtype([[1, 2], [2, 4]]))[2] == 2


def _bind(dtype: np.dtype) -> Lapack | None:
    """The checked routines for ``dtype``, or None."""
    lib = library()
    if lib is None:
        return None
    found = {}
    for name in _SIGNATURES:
        bound = _bound_routine(lib, _LETTERS[dtype], name)
        if bound is None:
            return None
        found[name] = bound
    lp = Lapack(dtype, found)
    return lp if _works(lp) else None


_bound = PerDtype(_bind)


def routines(dtype: np.dtype) -> Lapack | None:
    """NumPy's LAPACK routines for ``dtype`` (float32/64, complex64/128), or None where
    unavailable (then SciPy's wrappers do the work).

    Examples
    --------
    >>> import numpy as np
    >>> from gpukit_numpy.lapack import routines
    >>> lp = routines(np.dtype(np.float64))
    >>> if lp is None:
    ...     from scipy.linalg import lapack as lp
    ...     potrf = lp.dpotrf
    ... else:
    ...     potrf = lp.potrf
    >>> c, info = potrf(np.array([[4.0, 2.0], [2.0, 5.0]]), lower=1)
    >>> c.tolist(), info
    ([[2.0, 0.0], [1.0, 2.0]], 0)
    """
    dtype = np.dtype(dtype)
    return _bound(dtype) if dtype in _LETTERS else None
