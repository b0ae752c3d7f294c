"""The cuSOLVER calls behind the simulated ``cupyx.lapack`` (values from SciPy's LAPACK).

Each call runs as a library routine on the current device and stream: its operands must
be on the current device (cupysim.placement), the accesses go through the stream checker,
and ``devInfo`` is only looked at under ``cupyx.errstate(linalg='raise')`` (a
synchronisation, then LinAlgError with CuPy's message); otherwise a failed factorisation
leaves NaN, CuPy's silent garbage.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.linalg.lapack as lapack
from cupy._core import core

from . import devices, placement, streams
from .solver import _config_linalg, _message, _prefix, refuse_undefined


def assert_cupy_array(*arrays) -> None:
    for a in arrays:
        if not isinstance(a, core.ndarray):
            raise np.linalg.LinAlgError("cupy.linalg only supports cupy.ndarray")


def assert_stacked_2d(*arrays) -> None:
    for a in arrays:
        if a.ndim < 2:
            raise np.linalg.LinAlgError(
                f"{a.ndim}-dimensional array given. Array must be at least two-dimensional"
            )


def assert_stacked_square(*arrays) -> None:
    for a in arrays:
        m, n = a.shape[-2:]
        if m != n:
            raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _call(routine: str, reads, writes, body) -> None:
    placement.require_current("cuSOLVER", routine, [*reads, *writes])
    core._run(routine, reads, writes, body, kind="library")


def _check(routine: str, info: list[int]) -> None:
    if _config_linalg() != "raise":
        return
    streams.synchronize(streams.current(devices.current()))
    if any(info):
        raise np.linalg.LinAlgError(_message(routine, "cuSOLVER", info))


def getrf_getrs(a, b) -> None:
    t = _prefix(a.dtype)
    info = [0]
    refuse_undefined(t + "getrf", a._np)

    def body():
        lu, piv, inf = getattr(lapack, t + "getrf")(a._np)
        info[0] = int(inf)
        if inf > 0:
            a._np[...] = lu
            b._np[...] = np.nan
            return
        a._np[...] = lu
        b._np[...] = sla.lu_solve((lu, piv), b._np, check_finite=False)

    _call(t + "getrf", [a, b], [a, b], body)
    _check(t + "getrf", info)


def _potrf(m: np.ndarray) -> tuple[np.ndarray, int]:
    c, inf = getattr(lapack, _prefix(m.dtype) + "potrf")(m, lower=True, clean=True)
    return c, int(inf)


def potrf_potrs(a, b, batched: bool):
    """potrf then potrs with ``CUBLAS_FILL_MODE_LOWER``, as cupyx/lapack.py ``posv`` calls them.

    cuSOLVER reads memory column-major. The 2-D path hands it an F-ordered copy: it reads
    the lower triangle of ``a``. The batched path (``_batched_posv``) hands it C-ordered
    copies: each matrix is read as its transpose, so the lower triangle cuSOLVER sees is
    ``a``'s *upper* one, and the factor is written back transposed; CuPy conjugates ``b``
    before and the solution after, so ``x`` solves the Hermitian matrix of ``a``'s upper
    triangle. ``b`` is (batch, n, nrhs) in C order; each right-hand side is solved alone.
    """
    t = _prefix(a.dtype)
    infos: list[int] = []

    def body():
        mats = a._np.reshape(-1, a.shape[-1], a.shape[-1]) if batched else a._np[None]
        rhs = b._np if batched else b._np[None]
        for i in range(mats.shape[0]):
            seen = mats[i].T if batched else mats[i]  # the column-major matrix in memory
            c, inf = _potrf(seen)
            infos.append(inf)
            seen[...] = c
            if inf > 0:
                rhs[i][...] = np.nan
            else:
                rhs[i][...] = sla.cho_solve((c, True), rhs[i], check_finite=False)

    routine = t + ("potrfBatched" if batched else "potrf")
    _call(routine, [a, b], [a, b], body)
    _check(routine, infos)
    return b


def potrs_inplace(L, b, lower: bool) -> None:
    t = _prefix(b.dtype)

    # cuSOLVER's potrs solves without looking at the values: a NaN or inf in the factor
    # spreads into the solution (SciPy would refuse the input)
    def body():
        b._np[...] = sla.cho_solve((L._np, lower), b._np, check_finite=False)

    _call(t + "potrs", [L, b], [b], body)
    _check(t + "potrs", [0])


def batched_potrs(L, b, lower: bool):
    import cupy

    b_shape = b.shape
    if b.ndim < L.ndim:
        b = b[..., None]
    dtype = np.promote_types(np.promote_types(L.dtype, b.dtype), "f")
    L = L.astype(dtype, order="C", copy=False)
    b = b.astype(dtype, order="C", copy=False)
    out = cupy.empty(b.shape, dtype=dtype)
    t = _prefix(dtype)

    def body():
        Ls = L._np.reshape(-1, L.shape[-1], L.shape[-1])
        bs = b._np.reshape(-1, *b.shape[-2:])
        os_ = out._np.reshape(-1, *b.shape[-2:])
        for i in range(Ls.shape[0]):
            os_[i][...] = sla.cho_solve((Ls[i], lower), bs[i], check_finite=False)

    _call(t + "potrsBatched", [L, b], [out], body)
    _check(t + "potrsBatched", [0])
    return out.reshape(b_shape)


def compute(name: str, operands, fn):
    """A routine with a new result on the current device (values ``fn(*host views)``)."""
    placement.require_current("cuSOLVER", name, operands)
    res = fn(*(x._np for x in operands))
    return core._wrap(name, res, list(operands), library=True)
