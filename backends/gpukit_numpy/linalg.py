"""NumPy/SciPy linear algebra: LAPACK Cholesky (potrf/potrs) where it beats numpy.linalg,
and LAPACK's condition estimates.

``numpy.linalg.solve`` is the fastest general path here (1.2-1.7x faster than
``scipy.linalg.solve``, which checks and copies more). ``gk.linalg.solve`` also needs the
reciprocal condition number SciPy warns on: for one matrix it is LAPACK's estimate from
the factors, as in SciPy (``gesv`` or ``getrf``/``getrs`` with ``gecon``,
``potrf``/``pocon``/``potrs``: the estimate costs about a fifth of the factorisation);
a stack keeps numpy.linalg's batched solve and the exact value from the inverse (the
default of ``LinalgOps``). LAPACK ``info`` codes are re-raised as
``numpy.linalg.LinAlgError``, which the front-end turns into ``gk.LinAlgError``.

The LAPACK calls of solve, cholesky and cho_solve go to NumPy's own library
(:mod:`.lapack`) once an argument has more than :data:`_ONE_THREAD` entries, so that
they run on the thread pool NumPy's products use rather than on SciPy's, which would
fight NumPy's still-spinning threads for the cores; smaller calls, and every call where
NumPy's library has no LAPACK under a known name, go through SciPy's wrappers, called
the same way.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from gpukit._host import native as _native
from gpukit.backend._ops.linalg import LinalgOps

from .lapack import routines as numpy_lapack

#: Up to this many entries in each argument, a LAPACK call goes through SciPy's wrappers:
#: OpenBLAS makes such a call on the calling thread, waking no pool (alternating with a
#: 256x256 gk.matmul, a 64x64 solve took no longer than alone, a 128x128 one 10x), and
#: f2py's wrappers cost less per call than ctypes (a 4x4 solve's four calls: 3.4 us
#: against 7 us on one core).
_ONE_THREAD = 64 * 64


@functools.cache
def _lapack(name: str, dtype: np.dtype):
    """SciPy's LAPACK routine ``name`` for ``dtype`` (looked up once: it costs microseconds)."""
    from scipy.linalg import lapack

    return lapack.get_lapack_funcs((name,), dtype=dtype)[0]


def _own(name: str, dtype: np.dtype):
    """NumPy's LAPACK routine ``name`` for ``dtype``, called as SciPy's is, or SciPy's
    where NumPy's library has none (for any routine of ``dtype``)."""
    found = numpy_lapack(dtype)
    return _lapack(name, dtype) if found is None else getattr(found, name)


def _lookup(a: np.ndarray, b: np.ndarray | None = None):
    """The lookup of LAPACK routines for a call on ``a`` (and ``b``): ``_own`` where one
    has more than :data:`_ONE_THREAD` entries, else ``_lapack``. One lookup serves all the
    calls on one matrix: a pivot array goes only to its own library's ``getrs``."""
    # :func:`_lookup_for`'s test, without its call and max() (a warm small call's cost)
    if a.size > _ONE_THREAD or (b is not None and b.size > _ONE_THREAD):
        return _own
    return _lapack


def _lookup_for(*sizes: int):
    """:func:`_lookup` for arguments of ``sizes`` entries."""
    return _own if max(sizes) > _ONE_THREAD else _lapack


@functools.cache
def _blas(name: str, dtype: np.dtype):
    """The BLAS routine ``name`` for ``dtype``, looked up once."""
    from scipy.linalg import blas

    return blas.get_blas_funcs((name,), dtype=dtype)[0]


def _fortran(a: np.ndarray, lower: bool) -> tuple[np.ndarray, bool]:
    """``(m, lower)`` to hand LAPACK for the triangle ``lower`` of ``a``, Fortran-ordered if
    a view can be: f2py gives LAPACK a Fortran-ordered array, and copies anything else
    (transposing: 4x a plain copy's time at n=1000). A C-ordered real ``a`` is read as
    ``a.T``, whose other triangle holds the same entries; for a complex ``a`` that
    triangle holds their conjugates, so it keeps its layout."""
    if a.dtype.kind != "c":
        flags = a.flags  # a new object at each read
        if flags.c_contiguous and not flags.f_contiguous:
            return a.T, not lower
    return a, lower


def _potrf(a: np.ndarray, clean: bool = True) -> np.ndarray:
    """Lower factor of one matrix from its lower triangle, in whichever order LAPACK wrote
    it (:func:`_potrs` and :func:`_pocon` take either); upper triangle zeroed if
    ``clean``, else what LAPACK left there (they never read it). SciPy's wrapper zeroes
    the upper triangle of a lower factor in Fortran order at 0.3x the factorisation's
    own time (n=1024, one thread; that of an upper factor at 0.03x)."""
    m, lower = _fortran(a, lower=True)
    # the upper triangle of a real a.T gives U = L.T; options by position (f2py parses
    # keywords at a cost per call)
    c, info = _lookup(a)("potrf", a.dtype)(m, lower, clean)
    if info > 0:
        raise np.linalg.LinAlgError(f"leading minor of order {info} is not positive definite")
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of potrf")
    return c if lower else c.T


def _potrs(c: np.ndarray, b: np.ndarray) -> np.ndarray:
    m, lower = _fortran(c, lower=True)
    x, info = _lookup(c, b)("potrs", c.dtype)(m, b, lower)  # (c, b, lower)
    if info != 0:
        raise ValueError(f"illegal value in argument {-info} of potrs")
    return x


def _batched(fn, c: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Apply a one-matrix LAPACK helper over the broadcast batch dimensions."""
    if b is None:
        out = np.empty_like(c)
        for i in np.ndindex(c.shape[:-2]):
            out[i] = fn(c[i])
        return out
    batch = np.broadcast_shapes(c.shape[:-2], b.shape[:-2])
    c = np.broadcast_to(c, batch + c.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(b.shape, np.result_type(c, b))
    for i in np.ndindex(batch):
        out[i] = fn(c[i], b[i])
    return out


def _lu_solver(lapack, dtype: np.dtype, finite=None):
    """``solve(a, b) -> (x, rcond)`` for matrices of ``dtype`` by LU with ``lapack``'s
    routines (:func:`_lookup`), estimating 1/cond_1(a) as ``scipy.linalg.solve``.

    SciPy's wrappers (up to :data:`_ONE_THREAD` entries) factor and solve in one call,
    ``gesv``, on the Fortran-ordered copy of ``a`` f2py makes: one wrapper's cost per
    call less than ``getrf`` then ``getrs``, for a transposing copy that costs nothing
    next to the factorisation at such sizes. NumPy's library, for larger ones, factors
    a C-ordered ``a`` as ``a.T``, which it already is in Fortran order (a transposing
    copy of a large matrix is slow): ``getrs(trans=1)`` then solves with ``a`` itself
    (the transpose, also for complex ``a``). Either way the 1-norm of ``a`` is the
    infinity norm of ``a.T``. The routines are looked up here, once for every call.

    The norm comes first, as in SciPy. With ``finite`` (the backend's
    ``linalg_all_finite``) it is also the screen of ``a``
    (:meth:`~gpukit.backend.Backend.linalg_solve_plan`): LAPACK's ``xLANGE`` gives NaN
    or inf for an ``a`` holding either, so a finite norm proves ``a`` finite in no pass
    of its own; only a non-finite one (finite entries can overflow it) is looked at
    entry by entry, and a NaN or inf ``a`` is refused before it is factored.
    """
    lange, gecon = lapack("lange", dtype), lapack("gecon", dtype)

    def screened(a: np.ndarray, anorm: float) -> None:
        if finite is not None and anorm - anorm != 0 and not finite(a):  # NaN or inf
            raise np.linalg.LinAlgError("matrix holds NaN or inf")

    if lapack is _lapack:
        gesv = _lapack("gesv", dtype)

        def solve_small(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
            # optional arguments by position: f2py parses keywords at a cost per call
            anorm = lange("1", a) if a.flags.f_contiguous else lange("I", a.T)
            if anorm - anorm != 0:  # NaN or inf: screened's steps, past the common case
                screened(a, anorm)
            lu, _, x, info = gesv(a, b)
            if info > 0:
                raise np.linalg.LinAlgError(f"singular matrix: U[{info - 1}, {info - 1}] is zero")
            if info < 0:
                raise ValueError(f"illegal value in argument {-info} of gesv")
            return x, float(gecon(lu, anorm, "1")[0])

        return solve_small
    getrf, getrs = lapack("getrf", dtype), lapack("getrs", dtype)

    def solve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
        t, trans, norm = (a, 0, "1") if a.flags.f_contiguous else (a.T, 1, "I")
        anorm = lange(norm, t)
        screened(a, anorm)
        lu, piv, info = getrf(t)
        if info > 0:
            raise np.linalg.LinAlgError(f"singular matrix: U[{info - 1}, {info - 1}] is zero")
        rcond, _ = gecon(lu, anorm, norm)
        x, info = getrs(lu, piv, b, trans)
        if info != 0:
            raise ValueError(f"illegal value in argument {-info} of getrs")
        return x, float(rcond)

    return solve


def _hermitian_norm1(a: np.ndarray) -> float:
    """1-norm of the Hermitian matrix H whose lower triangle ``a`` holds (real diagonal).

    H is Hermitian, so its largest column sum is its largest row sum, ``max(|H| @ 1)``:
    one BLAS ``symv`` on ``|a|`` reading only its lower triangle (``numpy.tril`` alone
    costs more than the whole solve for small matrices). Past :data:`_ONE_THREAD`
    entries, LAPACK's ``lansy``/``lanhe`` in NumPy's library, which need no ``|a|``.
    """
    if a.size > _ONE_THREAD:
        own = numpy_lapack(a.dtype)
        if own is not None:
            return own.norm1_hermitian(a)
    t = np.abs(a)
    if a.dtype.kind == "c":  # LAPACK reads the real part of a Hermitian diagonal
        np.fill_diagonal(t, np.abs(a.diagonal().real))
    symv = _blas("symv", t.dtype)
    ones = np.ones(t.shape[0], dtype=t.dtype)
    if t.flags.f_contiguous:
        return float(symv(1.0, t, ones, lower=1).max())
    return float(symv(1.0, t.T, ones, lower=0).max())  # t.T: Fortran order, no copy


def _pocon(c: np.ndarray, anorm: float) -> float:
    m, lower = _fortran(c, lower=True)
    rcond, _ = _lookup(c)("pocon", c.dtype)(m, anorm, "L" if lower else "U")  # uplo
    return rcond


#: Up to this order, one matrix is handed to LAPACK here rather than to numpy.linalg,
#: whose own checks, type resolution and ``errstate`` cost more than the factorisation.
_SMALL = 64
#: The dtypes LAPACK takes (the front-end casts every other one to one of these).
_LAPACK_DTYPES = frozenset(np.dtype(c) for c in "fdFD")


def _small(a: np.ndarray) -> bool:
    """Whether ``a`` is one C-ordered matrix for the direct LAPACK paths: ``a.T`` is then
    a Fortran-ordered view that f2py hands LAPACK without a copy."""
    return (
        a.ndim == 2
        and 0 < a.shape[0] <= _SMALL
        and a.flags.c_contiguous
        and a.dtype in _LAPACK_DTYPES
    )


#: The dtype of Python's floats, in which the determinant of a small matrix is formed.
_FLOAT64 = np.dtype(np.float64)


def _lu_diagonal(a: np.ndarray) -> tuple[list[float], bool] | None:
    """For one float64 matrix of order 1 to :data:`_SMALL`: the diagonal of U in its LU
    factorisation (``getrf`` on ``a.T``: ``det(a.T) = det(a)``) as Python floats, and
    whether its row exchanges are odd in number; None for any other ``a``. A zero pivot
    (``info > 0``) is on the diagonal: the matrix is singular, its determinant zero.
    ``a.T`` is a Fortran-ordered view of a C-ordered ``a``; f2py's copy of any other
    small one, transposing or not, costs nothing next to the factorisation."""
    if a.dtype is not _FLOAT64 or a.ndim != 2 or not 0 < a.shape[0] <= _SMALL:
        return None
    lu, piv, _ = _lapack("getrf", _FLOAT64)(a.T)
    pivots = piv.tolist()  # counting from 0
    odd = False
    if pivots != _IN_ORDER[len(pivots)]:  # no exchange (a dominant diagonal): one comparison
        for i, p in enumerate(pivots):
            if p != i:
                odd = not odd
    return lu.diagonal().tolist(), odd


#: The pivots of an LU factorisation without row exchanges, by order (0 to :data:`_SMALL`).
_IN_ORDER = [list(range(n)) for n in range(_SMALL + 1)]


@functools.cache
def _strictly_lower(rows: int, columns: int) -> np.ndarray:
    """The mask of a ``rows`` x ``columns`` matrix's entries below the diagonal."""
    mask = np.tri(rows, columns, -1, dtype=bool)
    mask.flags.writeable = False
    return mask


#: Machine epsilon of each LAPACK dtype (numpy.linalg.lstsq's default rcond: eps * max(M, N)).
_EPS = {d: float(np.finfo(d).eps) for d in _LAPACK_DTYPES}


def _lstsq(a: np.ndarray, b: np.ndarray, rcond: float | None) -> tuple[Any, Any, int, Any]:
    """numpy.linalg.lstsq of one small matrix by ``gelsd`` (numpy.linalg's routine),
    as ``(x, residuals, rank, s)`` with NumPy's shapes: the residuals are the squared
    norms of the rows of ``gelsd``'s output below ``x`` (LAPACK's documented residual),
    given only when ``a`` has full column rank and more rows than columns."""
    m, n = a.shape
    vector = b.ndim == 1
    rhs = b[:, None] if vector else b
    k = rhs.shape[1]
    if m < n:  # gelsd writes x over b, which must hold max(M, N) rows
        padded = np.zeros((n, k), dtype=b.dtype)
        padded[:m] = rhs
        rhs = padded
    cond = _EPS[a.dtype] * max(m, n) if rcond is None else rcond
    sizes = _lapack("gelsd_lwork", a.dtype)(m, n, k, cond)
    if sizes[-1] != 0:
        raise ValueError(f"illegal value in argument {-sizes[-1]} of gelsd")
    work = [int(w.real) for w in sizes[:-1]]  # complex gelsd gives its lwork as complex
    x, s, rank, info = _lapack("gelsd", a.dtype)(a, rhs, *work, cond)
    if info > 0:
        raise np.linalg.LinAlgError("SVD did not converge in Linear Least Squares")
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of gelsd")
    if rank == n and m > n:
        tail = x[n:]
        residuals = (tail.real**2 + tail.imag**2 if tail.dtype.kind == "c" else tail**2).sum(0)
    else:
        residuals = np.empty(0, dtype=s.dtype)
    solution = x[:n, 0] if vector else np.ascontiguousarray(x[:n])  # C-ordered, as NumPy's
    return solution, residuals, int(rank), s


#: The real scalar type of a vector's norm, for the dtypes BLAS takes.
_NORM_SCALAR = {np.dtype(c): np.dtype(c.lower()).type for c in "fdFD"}


@functools.cache
def _nrm2(dtype: np.dtype) -> tuple[type, Any] | None:
    """``(scalar type of the norm, BLAS nrm2)`` for vectors of ``dtype``, None where BLAS
    takes no such vector: one look-up a call where there were two."""
    scalar = _NORM_SCALAR.get(dtype)
    return None if scalar is None else (scalar, _blas("nrm2", dtype))


#: Arrays from this many entries up are first checked through their sum.
_SUM_CHECK_MIN = 1 << 18
#: Arrays of at most this many entries are first checked through their sum in Python.
_PYTHON_SUM_MAX = 64


class NumpyLinalg(LinalgOps):
    """numpy.linalg for general matrices, LAPACK Cholesky for positive-definite ones,
    LAPACK's condition estimates for one matrix."""

    def linalg_all_finite(self, x: Any) -> bool:
        """Whether every entry of ``x`` is finite: the compiled kernel's answer
        (:func:`gpukit._host.native.all_finite`: one pass, no temporary), else NumPy's.

        Where the kernel does not take ``x`` (another dtype or layout, the module not
        built): ``isfinite(x).all()`` writes a boolean array of ``x``'s size, 1.5 ms for
        a 2000x2000 float64 matrix, against 1.0 for its sum, on one core, so a large
        array is summed first. A NaN or inf entry makes the sum NaN or inf (``inf -
        inf`` is NaN), so a finite sum proves ``x`` finite; only a non-finite one, which
        huge finite entries can also give, is looked at entry by entry. NumPy sums on
        the calling thread. A BLAS mat-vec with ones is as quick on two threads, but
        leaves NumPy's OpenBLAS threads spinning while the LAPACK call that follows
        (SciPy's: another OpenBLAS, another thread pool) wants every core: on two busy
        cores ``gk.linalg.solve`` at n=1000 took 1.7x as long behind it. The entries are
        counted rather than reduced with ``all()``: NumPy's count of true values skips
        the reduction machinery, whose set-up is most of a small check; a small array is
        summed in Python, cheaper than any NumPy call.
        """
        found = _native.all_finite(x)
        if found is not None:
            return found
        size = x.size
        if size <= _PYTHON_SUM_MAX:
            total = sum((x if x.ndim == 1 else x.ravel()).tolist())
            if total - total == 0:  # NaN for a NaN, an infinity or an overflowing sum
                return True
        elif size >= _SUM_CHECK_MIN:
            with np.errstate(all="ignore"):  # inf - inf, an overflowing sum: a check, not news
                if np.isfinite(x.sum()):
                    return True
        return np.count_nonzero(np.isfinite(x)) == size

    def linalg_norm_quiet(self, x: Any, ord: Any, axis: Any, keepdims: bool) -> Any:
        """A whole vector's 2-norm from BLAS ``nrm2``, which scales as it sums: no power
        under- or overflows, and no floating-point flag is raised, so no ``errstate``
        is entered (NumPy's ``dot`` reports an overflowing square); other norms as by
        default. A NumPy scalar of the real dtype, as ``numpy.linalg.norm``'s."""
        if axis is None and not keepdims and x.ndim == 1 and ord in (None, 2) and x.size:
            found = _nrm2(x.dtype)
            if found is not None:
                scalar, nrm2 = found
                return scalar(nrm2(x))
        return super().linalg_norm_quiet(x, ord, axis, keepdims)

    def krylov_space(self, dtype: np.dtype) -> Any:
        from .krylov import host_space  # SciPy's BLAS: imported by the first Krylov solve

        return host_space(dtype)

    def linalg_matvec(self, a: Any) -> Any:
        """A host sparse matrix's product moves to diagonal storage when the matrix is
        banded (:mod:`gpukit_numpy.sparse_product`); any other operator as by default."""
        if self.linalg_is_sparse(a):
            from .sparse_product import sparse_product

            return sparse_product(a)
        return super().linalg_matvec(a)

    def linalg_solve_rcond(self, a: Any, b: Any, assume_a: str) -> tuple[Any, Any]:
        if a.ndim != 2 or a.shape[0] == 0:  # a stack: numpy's batched solve, exact rcond
            return super().linalg_solve_rcond(a, b, assume_a)
        if assume_a == "pos":
            # the norm's temporary |a| is freed before the factor takes its place: one
            # matrix of memory at a time, whose pages the allocator keeps for the next call
            anorm = _hermitian_norm1(a)
            c = _potrf(a, clean=False)
            return _potrs(c, b), float(_pocon(c, anorm))
        return _lu_solver(_lookup(a, b), a.dtype)(a, b)

    def linalg_solve_plan(
        self, assume_a: str, shape: tuple[int, ...], rhs_shape: tuple[int, ...], dtype: Any
    ) -> Any:
        """One general matrix: the LU solver with its LAPACK routines looked up now."""
        if len(shape) != 2 or assume_a != "gen":
            return super().linalg_solve_plan(assume_a, shape, rhs_shape, dtype)
        return _lu_solver(_lookup_for(math.prod(shape), math.prod(rhs_shape)), dtype)

    def linalg_solve_plan_screened(
        self, assume_a: str, shape: tuple[int, ...], rhs_shape: tuple[int, ...], dtype: Any
    ) -> Any:
        """One general matrix: the LU solver screening ``a`` through the norm its
        condition estimate takes (:func:`_lu_solver`)."""
        if len(shape) != 2 or assume_a != "gen":
            return super().linalg_solve_plan_screened(assume_a, shape, rhs_shape, dtype)
        lapack = _lookup_for(math.prod(shape), math.prod(rhs_shape))
        return _lu_solver(lapack, dtype, self.linalg_all_finite)

    def linalg_inv(self, a: Any) -> Any:
        """One small matrix by ``getrf``/``getri`` on ``a.T``: ``inv(a.T) = inv(a).T``,
        Fortran-ordered, so its transpose is C-ordered as numpy.linalg's."""
        if not _small(a):
            return super().linalg_inv(a)
        lu, piv, info = _lapack("getrf", a.dtype)(a.T)
        if info > 0:
            raise np.linalg.LinAlgError(f"singular matrix: U[{info - 1}, {info - 1}] is zero")
        # (lu, piv, lwork, overwrite_lu) by position, lwork SciPy's default: f2py parses
        # keywords at ~2k instructions a call
        inverse, info = _lapack("getri", a.dtype)(lu, piv, max(3 * len(piv), 1), 1)
        if info != 0:
            raise ValueError(f"illegal value in argument {-info} of getri")
        return inverse.T

    def linalg_det(self, a: Any) -> Any:
        """One small float64 matrix from ``getrf``'s diagonal, in Python (numpy.linalg's
        type resolution and ``errstate`` cost more than the factorisation): a NumPy
        float64 as numpy.linalg's, 0.0 for a singular matrix."""
        lu = _lu_diagonal(a)
        if lu is None:
            return super().linalg_det(a)
        diagonal, odd = lu
        det = math.prod(diagonal)  # in order, as the loop it replaces: the same rounding
        if odd:
            det = -det
        if math.isinf(det):  # numpy.linalg's, which warns of the overflow as NumPy does
            return super().linalg_det(a)
        return np.float64(det + 0.0)  # + 0.0: a zero pivot gives 0.0, never -0.0

    def linalg_slogdet(self, a: Any) -> tuple[Any, Any]:
        """One small float64 matrix from ``getrf``'s diagonal, in Python, summing the
        logarithms in numpy.linalg's order: NumPy float64s, ``(0.0, -inf)`` for a
        singular matrix, as numpy.linalg's."""
        lu = _lu_diagonal(a)
        if lu is None:
            return super().linalg_slogdet(a)
        diagonal, odd = lu
        sign, logdet = (-1.0 if odd else 1.0), 0.0
        for d in diagonal:
            if d < 0:
                sign = -sign
            elif d == 0:
                return np.float64(0.0), np.float64(-math.inf)
            logdet += math.log(abs(d))
        return np.float64(sign), np.float64(logdet)

    def linalg_eigh(self, a: Any, uplo: str) -> tuple[Any, Any]:
        """One small matrix by ``syevd``/``heevd`` (numpy.linalg's routine), handed the
        Fortran-ordered ``a.T`` where its other triangle holds the same entries."""
        if not _small(a):
            return super().linalg_eigh(a, uplo)
        m, lower = _fortran(a, uplo == "L")
        name = "heevd" if a.dtype.kind == "c" else "syevd"
        w, v, info = _lapack(name, a.dtype)(m, 1, lower)  # (a, compute_v, lower): by position
        if info > 0:
            raise np.linalg.LinAlgError("eigenvalues did not converge")
        if info < 0:
            raise ValueError(f"illegal value in argument {-info} of {name}")
        return w, np.ascontiguousarray(v)

    def linalg_svd(self, a: Any, full_matrices: bool, compute_uv: bool) -> Any:
        """One small matrix by ``gesdd`` (numpy.linalg's routine) on ``a.T``: from
        ``a.T = u @ diag(s) @ vt`` (Fortran-ordered factors), ``a``'s are ``U = vt.T``
        and ``Vh = u.T`` (the transposes of unitary matrices), C-ordered."""
        if not _small(a) or not 0 < a.shape[1] <= _SMALL:
            return super().linalg_svd(a, full_matrices, compute_uv)
        # (a, compute_uv, full_matrices) by position: f2py parses keywords per call
        u, s, vt, info = _lapack("gesdd", a.dtype)(a.T, int(compute_uv), int(full_matrices))
        if info > 0:
            raise np.linalg.LinAlgError("SVD did not converge")
        if info < 0:
            raise ValueError(f"illegal value in argument {-info} of gesdd")
        return (vt.T, s, u.T) if compute_uv else s

    def linalg_qr(self, a: Any, mode: str) -> Any:
        """One small matrix by ``geqrf`` and ``orgqr``/``ungqr`` (numpy.linalg's routines)
        as numpy.linalg.qr: ``R`` the upper triangle of the factored rows, ``Q`` from the
        reflectors (padded to M columns for ``"complete"``), both C-ordered."""
        if not _small(a) or not 0 < a.shape[1] <= _SMALL:
            return super().linalg_qr(a, mode)
        m, n = a.shape
        k = min(m, n)
        qr, tau, _, info = _lapack("geqrf", a.dtype)(a)
        if info != 0:
            raise ValueError(f"illegal value in argument {-info} of geqrf")
        r = (qr if mode == "complete" else qr[:k]).copy()  # C-ordered
        np.copyto(r, 0, where=_strictly_lower(*r.shape))
        if mode == "r":
            return r
        if mode == "complete" and m > n:
            reflectors = np.zeros((m, m), dtype=a.dtype, order="F")
            reflectors[:, :n] = qr
        else:
            reflectors = qr[:, :k] if mode == "reduced" else qr[:, :m]
        name = "ungqr" if a.dtype.kind == "c" else "orgqr"
        q, _, info = _lapack(name, a.dtype)(reflectors, tau)
        if info != 0:
            raise ValueError(f"illegal value in argument {-info} of {name}")
        return np.ascontiguousarray(q), r

    def linalg_lstsq(self, a: Any, b: Any, rcond: float | None) -> tuple[Any, Any, int, Any]:
        if not (0 < a.shape[0] <= _SMALL and 0 < a.shape[1] <= _SMALL and b.size) or (
            a.dtype not in _LAPACK_DTYPES
        ):
            return super().linalg_lstsq(a, b, rcond)
        return _lstsq(a, b, rcond)

    def linalg_cholesky(self, a: Any) -> Any:
        if a.dtype.kind not in "fc" or a.dtype.itemsize < 4:
            return super().linalg_cholesky(a)
        if a.ndim > 2:
            return _batched(_potrf, a)
        return np.ascontiguousarray(_potrf(a))  # C-ordered, as numpy.linalg.cholesky

    def linalg_cho_solve(self, c: Any, b: Any) -> Any:
        dtype = np.result_type(c, b, np.float32)
        c, b = c.astype(dtype, copy=False), b.astype(dtype, copy=False)
        if c.ndim == 2 and b.ndim <= 2:
            return _potrs(c, b)
        if b.ndim == 1:
            return _batched(_potrs, c, b[:, None])[..., 0]
        return _batched(_potrs, c, b)
