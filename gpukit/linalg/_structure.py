"""``scipy.linalg.solve``'s ``assume_a``, ``lower`` and ``transposed``, once for every backend.

The front-end turns a structure into the matrix LAPACK would read (only the triangle or
band the structure names; SciPy's solvers never look at the rest) and one of three
methods: ``"gen"`` (LU), ``"pos"`` (Cholesky of the Hermitian matrix whose *lower*
triangle is given) and ``"diagonal"``. Backends see only ``"gen"`` and ``"pos"``.
:func:`warn_ill_conditioned` is SciPy's ``LinAlgWarning``: reciprocal condition number
below the dtype's machine epsilon.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import Backend
from ..errors import warn

#: SciPy's names (``scipy.linalg.solve``, SciPy >= 1.14 long names included) -> kind.
KINDS: dict[str | None, str] = {
    None: "gen",
    "gen": "gen",
    "general": "gen",
    "banded": "gen",
    "sym": "sym",
    "symmetric": "sym",
    "her": "her",
    "hermitian": "her",
    "pos": "pos",
    "positive definite": "pos",
    "diagonal": "diagonal",
    "tridiagonal": "tridiagonal",
    "upper triangular": "upper",
    "lower triangular": "lower",
}
_NAMES = ", ".join(repr(k) for k in KINDS)


def kind(op: str, assume_a: Any) -> str:
    """The structure ``assume_a`` names: TypeError for a non-string, ValueError if unknown."""
    if assume_a is not None and not isinstance(assume_a, str):
        raise TypeError(f"{op}: assume_a must be a string or None, got {type(assume_a).__name__}")
    try:
        return KINDS[assume_a]
    except KeyError:
        raise ValueError(f"{op}: assume_a must be one of {_NAMES}; got {assume_a!r}") from None


def method(kind: str) -> str:
    """The method :func:`effective` gives structure ``kind``."""
    return kind if kind in ("pos", "diagonal") else "gen"


def effective(xp: Any, a: Any, kind: str, lower: bool, transposed: bool) -> tuple[Any, str]:
    """``(matrix, method)``: what the solver reads for structure ``kind``, transposed if
    asked (``a.T``, not the conjugate transpose, as SciPy)."""
    if kind == "gen":  # the common case first
        return (xp.swapaxes(a, -1, -2) if transposed else a), "gen"
    if kind == "diagonal":
        return a, "diagonal"
    if kind == "pos":
        # the backend's Cholesky reads the lower triangle; that of conj(a.T) is a's upper
        base = a if lower else _conj(xp, xp.swapaxes(a, -1, -2))
        # a Hermitian H has H.T = conj(H), whose lower triangle is conj of H's
        return (_conj(xp, base) if transposed else base), "pos"
    if kind in ("sym", "her"):
        a = _mirror(xp, a, lower, hermitian=kind == "her" and a.dtype.kind == "c")
    elif kind == "tridiagonal":
        a = xp.triu(xp.tril(a, 1), -1)
    elif kind in ("upper", "lower"):
        a = xp.triu(a) if kind == "upper" else xp.tril(a)
    return (xp.swapaxes(a, -1, -2) if transposed else a), "gen"


def _conj(xp: Any, a: Any) -> Any:
    return xp.conj(a) if a.dtype.kind == "c" else a


def _mirror(xp: Any, a: Any, lower: bool, hermitian: bool) -> Any:
    """The symmetric (Hermitian) matrix one triangle of ``a`` defines; a Hermitian
    matrix's diagonal is real (LAPACK ignores its imaginary part)."""
    t = xp.tril(a) if lower else xp.triu(a)
    mirrored = xp.swapaxes(t, -1, -2)
    d = xp.diagonal(a, axis1=-2, axis2=-1)
    if hermitian:
        mirrored, d = xp.conj(mirrored), xp.real(d)
    eye = xp.eye(a.shape[-1], dtype=a.dtype)
    return t + mirrored - eye * d[..., None, :]


def solve_diagonal(xp: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """``(x, rcond)`` for a diagonal ``a`` (only its diagonal is read); LinAlgError if a
    diagonal entry is zero. rcond is exact: ``min |d| / max |d|``."""
    d = xp.diagonal(a, axis1=-2, axis2=-1)
    m = xp.abs(d)
    if not bool((m != 0).all()):
        raise np.linalg.LinAlgError("a zero on the diagonal")
    x = b / (d[..., :, None] if b.ndim == a.ndim else d)
    return x, m.min(axis=-1) / m.max(axis=-1)


# dtype -> its machine epsilon (numpy.finfo is a look-up with a lock, on every call)
_EPS: dict[np.dtype, float] = {}


def eps(dtype: np.dtype) -> float:
    """The machine epsilon of ``dtype``, below which a reciprocal condition number warns."""
    return _EPS.get(dtype) or _EPS.setdefault(dtype, float(np.finfo(dtype).eps))


def warn_ill_conditioned(op: str, backend: Backend, rcond: Any, dtype: np.dtype) -> None:
    """SciPy's ``LinAlgWarning`` where a matrix's reciprocal condition number is below
    ``eps`` of ``dtype`` (NaN counts as ill-conditioned)."""
    limit = eps(dtype)
    if type(rcond) is float:  # one host matrix: no array operation
        if rcond >= limit:  # NaN is not
            return
    elif bool((rcond >= limit).all()):
        return
    from scipy.linalg import LinAlgWarning

    rc = np.asarray(backend.to_numpy(rcond), dtype=np.float64)
    ill = ~(rc >= limit)
    where = f" (at {_indices(np.argwhere(ill))} of the stack)" if rc.ndim else ""
    values = rc[ill]
    worst = np.nan if np.isnan(values).all() else float(np.nanmin(values))
    warn(
        f"{op}: matrix 'a' is ill-conditioned{where}: reciprocal condition number "
        f"{worst:.3g} < eps {limit:.3g} of {dtype}; the result may be inaccurate",
        LinAlgWarning,
    )


def _indices(bad: np.ndarray, most: int = 4) -> str:
    shown = ", ".join(str(tuple(int(i) for i in row)) for row in bad[:most])
    return shown + (f" and {len(bad) - most} more" if len(bad) > most else "")
