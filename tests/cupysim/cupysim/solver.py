"""cuSOLVER-backed routines: values from NumPy/SciPy, failures as CuPy reports them.

CuPy's ``cupy.linalg`` routines first copy their inputs to the current device with an
elementwise kernel (``a.astype(dtype, order='F', copy=True)``, cupy/linalg/_solve.py,
_decomposition.py, _eigenvalue.py), so operands on another device follow the peer-access
rule, and the results are on the current device. cuSOLVER's ``devInfo`` is ignored by
default (cupyx/_ufunc_config.py ``get_config_linalg() == 'ignore'``): a singular or
indefinite matrix gives NaN/garbage silently. Under ``cupyx.errstate(linalg='raise')``
CuPy reads ``devInfo`` back (a synchronisation of the current stream) and raises
``numpy.linalg.LinAlgError`` with cupy/linalg/_util.py's message.
"""

from __future__ import annotations

import numpy as np
from cupy._core import core

from . import devices, libs, streams
from .errors import UndefinedResult
from .runtime import check_peer_access


def _config_linalg() -> str:
    from cupyx import _ufunc_config

    return _ufunc_config.get_config_linalg()


def _prefix(dtype) -> str:
    return {"f": "s", "d": "d", "F": "c", "D": "z"}.get(np.dtype(dtype).char, "d")


def _info(routine: str, mats: list[np.ndarray]) -> list[int]:
    import scipy.linalg.lapack as lapack

    out = []
    for m in mats:
        m2 = m.reshape(-1, m.shape[-2], m.shape[-1]) if m.ndim > 2 else m[None]
        for one in m2:
            one = np.asarray(one, dtype=np.promote_types(one.dtype, np.float32))
            if not np.isfinite(one).all():
                out.append(1)
            elif "potrf" in routine:
                out.append(int(getattr(lapack, _prefix(one.dtype) + "potrf")(one, lower=True)[1]))
            elif "getrf" in routine:
                out.append(int(getattr(lapack, _prefix(one.dtype) + "getrf")(one)[2]))
            else:
                out.append(1)
    return out


def refuse_undefined(routine: str, a: np.ndarray) -> None:
    """UndefinedResult when the LU routine ``routine`` (``getrf``, ``getrfBatched``) is
    given a matrix ``a`` holding NaN or inf: cuSOLVER's ``getrf`` then returned finite
    values on an H200 (cupysim.errors.UndefinedResult), which no model can reproduce. The
    batched cuBLAS routine was not observed; it is held to the same rule rather than
    assumed to spread the NaN as LAPACK does."""
    if a.dtype.kind in "fc" and not np.isfinite(a).all():
        raise UndefinedResult(
            f"{routine} given a matrix holding NaN or inf (shape {a.shape}): on a GPU the "
            "result is undefined (finite values, devInfo 0, on an H200); check the input "
            "first (the simulator cannot know the values)"
        )


def _message(routine: str, library: str, info: list[int]) -> str:
    shown = " ".join(str(i) for i in info)  # str() of the devInfo array: "[2]", "[0 2]"
    if library == "cuBLAS":
        return (
            f"Error reported by {routine} in cuBLAS. infoArray/devInfoArray = [{shown}]."
            " Please refer to the cuBLAS documentation."
        )
    return (
        f"Error reported by {routine} in cuSOLVER. devInfo = [{shown}]. Please refer to the "
        "cuSOLVER documentation."
    )


def _stand_in(v):
    if isinstance(v, np.ndarray) and v.ndim >= 2 and v.shape[-1] == v.shape[-2]:
        eye = np.broadcast_to(np.eye(v.shape[-1], dtype=v.dtype), v.shape)
        return np.array(eye)
    return v


def _nan_like(res):
    if isinstance(res, np.ndarray):
        out = np.array(res)
        if out.dtype.kind in "fc":
            out[...] = np.nan
        return out
    if isinstance(res, tuple):
        items = [_nan_like(r) for r in res]
        return type(res)(*items) if hasattr(res, "_fields") else tuple(items)
    return res


def routine(
    name: str, npfn, cusolver: str | None, batched: str | None = None, *, cublas_batched=False
):
    """A cupy.linalg function computed by ``npfn``; ``cusolver`` names the routine CuPy
    calls (``{t}`` is the dtype prefix), ``batched`` the one for stacked matrices."""

    def f(*args, **kwargs):
        libs.require("cublas")
        libs.require("cusolver")
        found: list = []
        a = [core._unwrap(v, found) for v in args]
        k = {key: core._unwrap(v, found) for key, v in kwargs.items()}
        dev = devices.current()
        for x in found:
            check_peer_access(x, dev)
        mats = [v for v in a if isinstance(v, np.ndarray) and v.ndim >= 2][:1]
        if cusolver is not None and mats:
            tmpl = batched if (mats[0].ndim > 2 and batched) else cusolver
            if "getrf" in tmpl:
                refuse_undefined(tmpl.format(t=_prefix(mats[0].dtype)), mats[0])
        try:
            res = npfn(*a, **k)
            failed = False
        except np.linalg.LinAlgError:
            if cusolver is None:
                raise
            # cuSOLVER's potrf does not test for NaN: given one it factors on and writes
            # NaN with devInfo 0 (seen on an H200, record 2026-11-26-h200), where LAPACK
            # (NumPy's) reports a failure
            spread = "potrf" in cusolver and mats and not np.isfinite(np.tril(mats[0])).all()
            failed = not spread
            res = _nan_like(npfn(*[_stand_in(v) for v in a], **k))
        if cusolver is not None and _config_linalg() == "raise":
            # CuPy reads devInfo back: a synchronisation of the current stream
            streams.synchronize(streams.current(dev))
            if failed:
                stacked = mats and mats[0].ndim > 2
                tmpl = batched if (stacked and batched) else cusolver
                routine_name = tmpl.format(t=_prefix(mats[0].dtype if mats else "d"))
                lib = "cuBLAS" if stacked and cublas_batched else "cuSOLVER"
                raise np.linalg.LinAlgError(_message(routine_name, lib, _info(routine_name, mats)))
        return core._wrap(name, res, found, library=True)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"CuPy's ``linalg.{name}`` (cuSOLVER on the current device; values by NumPy)."
    return f
