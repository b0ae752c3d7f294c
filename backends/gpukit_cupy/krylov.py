"""The Krylov loops' vector space on the GPU: CuPy, with the loops' steps fused on the device.

The loops of :mod:`gpukit.linalg._krylov` are written as a few *steps* around the
operator calls. Here each step is one launch of a kernel of ``krylov.cu``: the vector
updates, the dot products they need and the scalar work that follows (alpha, beta, the
rotations, the tests that end the loop) in one pass, with the scalars kept in a small
device array. Nothing comes to the host during an iteration: the host reads the loop's
status (one small copy and one synchronisation) at iterations 1, 2, 4, 8, 16 and then
every :data:`CHECK_EVERY`, at the last, and at every iteration when a callback must see
the iterate. A stop is recorded on the device when it happens, and every later update is
skipped there, so the iterate the host gets, its iteration count and the residual
estimate are those of the iteration that stopped; what the device did after it, until
the host looked, is discarded (at most ``CHECK_EVERY - 1`` iterations of work).

``axpy``/``xpay`` (one ``cupy.ElementwiseKernel`` each) serve the driver and the other
spaces built on this one (sharded vectors); everything else is CuPy's.
"""

from __future__ import annotations

import functools
import math
import threading
from pathlib import Path
from typing import Any

import numpy as np

from gpukit.backend._ops.linalg import KRYLOV_STOPS

from .cuda_sources import HERE as _KERNELS_DIR

__all__ = ["CHECK_EVERY", "KERNELS", "DeviceSpace", "name_expressions", "source"]

#: The most iterations between two reads of a loop's status, in steady state.
CHECK_EVERY = 10
_BLOCK = 256  # GK_KB in krylov.cu
_CTYPES = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.complex64): "gk_cx<float>",
    np.dtype(np.complex128): "gk_cx<double>",
}
#: The kernels of ``krylov.cu``, each instantiated for the four dtypes.
KERNELS = (
    "gk_cg_alpha",
    "gk_cg_update",
    "gk_cg_rho",
    "gk_cg_direction",
    "gk_minres_start",
    "gk_minres_basis",
    "gk_minres_alfa",
    "gk_minres_next",
    "gk_minres_beta",
    "gk_minres_update",
    "gk_bicgstab_start",
    "gk_bicgstab_direction",
    "gk_bicgstab_alpha",
    "gk_bicgstab_half",
    "gk_bicgstab_omega",
    "gk_bicgstab_update",
)
_SOURCE = Path(__file__).with_name("krylov.cu")
_INCLUDE = '#include "gk_common.cuh"'
_NONFINITE = KRYLOV_STOPS.index("nonfinite") + 1


def source() -> str:
    """``krylov.cu`` with ``gk_common.cuh`` pasted in place of its include (as the
    ``.cu`` files of ``kernels/`` are: CuPy's cache is keyed on the text)."""
    common = (_KERNELS_DIR / "gk_common.cuh").read_text()
    return _SOURCE.read_text().replace(_INCLUDE, common, 1)


def name_expressions(dtype: Any) -> tuple[str, ...]:
    """Every kernel of ``krylov.cu`` for ``dtype`` vectors, as RawModule names them."""
    t = _CTYPES[np.dtype(dtype)]
    return tuple(f"{name}<{t}>" for name in KERNELS)


_modules: dict[tuple[int, np.dtype], Any] = {}
_lock = threading.Lock()


def _module(cupy: Any, dtype: np.dtype) -> Any:
    """The compiled kernels for ``dtype`` on the current device (compiled on first use)."""
    key = (cupy.cuda.Device().id, dtype)
    module = _modules.get(key)
    if module is None:
        with _lock:
            module = _modules.get(key)
            if module is None:
                module = _modules[key] = cupy.RawModule(
                    code=source(),
                    options=("--std=c++17",),
                    name_expressions=list(name_expressions(dtype)),
                )
    return module


@functools.cache
def _sm_count(cupy: Any, device: int) -> int:
    return int(cupy.cuda.Device(device).attributes["MultiProcessorCount"])


@functools.cache
def _kernels(xp: Any) -> tuple[Any, Any]:
    axpy = xp.ElementwiseKernel("T x, T alpha", "T y", "y = y + alpha * x", "gk_krylov_axpy")
    xpay = xp.ElementwiseKernel("T x, T beta", "T y", "y = x + beta * y", "gk_krylov_xpay")
    return axpy, xpay


class DeviceSpace:
    """``cupy`` with fused in-place ``axpy`` and ``xpay`` for ``dtype`` vectors, and the
    loops' fused steps (:meth:`krylov_steps`).

    A vector of another dtype (a user operator's result) takes CuPy's ufuncs under NumPy's
    casting rules, as the loops' unfused updates would.
    """

    def __init__(self, xp: Any, dtype: Any) -> None:
        self._xp, self._type = xp, np.dtype(dtype).type
        self._axpy, self._xpay = _kernels(xp)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._xp, name)

    def axpy(self, alpha: Any, x: Any, y: Any) -> None:
        """``y += alpha * x`` in one pass."""
        if x.dtype == y.dtype and y.dtype.type is self._type:
            self._axpy(x, self._type(alpha), y)
        else:
            self._xp.add(y, self._xp.multiply(x, alpha), out=y)

    def xpay(self, x: Any, beta: Any, y: Any) -> None:
        """``y = x + beta * y`` in one pass."""
        if x.dtype == y.dtype and y.dtype.type is self._type:
            self._xpay(x, self._type(beta), y)
        else:
            self._xp.add(self._xp.multiply(y, beta, out=y), x, out=y)

    def krylov_steps(self, method: str) -> type | None:
        """The device steps of loop ``method`` (GMRES: the host's, for now)."""
        if np.dtype(self._type) not in _CTYPES:
            return None
        return _STEPS.get(method)


class _Steps:
    """What the device steps share: the scalars' array ``sc`` (``krylov.cu`` lays it out),
    the reductions' scratch, the launches, and the reads of the status."""

    def __init__(self, space: DeviceSpace, x: Any, tol: float, maxiter: int) -> None:
        cupy = space._xp
        self.cupy, self.maxiter = cupy, maxiter
        self.n, self.dtype = x.shape[0], x.dtype
        self.eps = float(np.finfo(x.dtype).eps)
        self.tol = tol
        blocks = min(-(-self.n // _BLOCK), 4 * _sm_count(cupy, cupy.cuda.Device().id))
        self.grid, self.block = (max(blocks, 1),), (_BLOCK,)
        self.part = cupy.empty(self.grid[0] * 8, dtype=np.float64)  # 4 complex sums a block
        self.ticket = cupy.zeros(1, dtype=np.uint32)
        self.module = _module(cupy, self.dtype)
        self.ctype = _CTYPES[self.dtype]
        self.stop: tuple[int, int, float] | None = None
        self.next_read = 1
        self.fresh = False  # whether the last read saw every launch so far

    def init(self, slots: dict[int, float]) -> None:
        """Upload the loop's first scalars, by their slots in ``sc`` (``krylov.cu``)."""
        values = np.zeros(24)
        values[3], values[4] = self.tol, self.eps
        for index, value in slots.items():
            values[index] = value
        self.sc = self.cupy.asarray(values)

    def launch(self, name: str, *args: Any) -> None:
        kernel = self.module.get_function(f"{name}<{self.ctype}>")
        kernel(self.grid, self.block, (np.int64(self.n), *args))
        self.fresh = False

    def reduce(self, name: str, *args: Any, k: int | None = None, flag: int | None = None):
        """Launch a reduction step: vectors, then the scalars' array and scratch."""
        tail = () if k is None else (np.int64(k),)
        tail += () if flag is None else (np.int32(flag),)
        self.launch(name, *args, self.sc, self.part, self.ticket, *tail)

    def own(self, v: Any) -> Any:
        """``v`` (an operator's result) as a contiguous vector of the solve's dtype."""
        if v.dtype == self.dtype and v.flags.c_contiguous:
            return v
        return self.cupy.ascontiguousarray(v, dtype=self.dtype)

    @property
    def stopped(self) -> bool:
        return self.stop is not None

    def poll(self, k: int, every: bool) -> tuple[int, int, float] | None:
        if self.stop is None and (every or k >= self.next_read or k >= self.maxiter):
            self._read()
            self.next_read = k + min(k, CHECK_EVERY)
        return self.stop

    def final(self) -> tuple[int, int, float] | None:
        if self.stop is None and not self.fresh:
            self._read()
        return self.stop

    def _read(self) -> None:
        code, iterations, estimate = self.sc[:3].get()
        self.fresh = True
        if code:
            self.stop = (int(code), int(iterations), float(estimate))


class _CG(_Steps):
    """``sc``: 5 rho, 6 alpha, 7 beta."""

    def start(self, r: Any, z: Any, rnorm: float) -> None:
        self.preconditioned = z is not r
        if not self.preconditioned:
            rho = rnorm * rnorm
            if math.isfinite(rho):
                self.init({5: rho})
            else:  # known here: the device skips every step
                self.init({0: _NONFINITE})
                self.stop = (_NONFINITE, 0, 0.0)
            return
        self.init({})
        self.reduce("gk_cg_rho", r, self.own(z), k=0)

    def step(self, k: int, p: Any, q: Any, x: Any, r: Any) -> None:
        q = self.own(q)
        self.reduce("gk_cg_alpha", p, q, k=k)
        self.reduce("gk_cg_update", p, q, x, r, k=k, flag=int(self.preconditioned))

    def direction(self, k: int, r: Any, z: Any, p: Any) -> None:
        z = self.own(z)
        if self.preconditioned:
            self.reduce("gk_cg_rho", r, z, k=k)
        self.launch("gk_cg_direction", z, p, self.sc)


class _Minres(_Steps):
    """``sc``: 5 beta, 6 oldb, 7 alfa, 8 dbar, 9 epsln, 10 phibar, 11 tnorm2, 12 cs,
    13 sn, 14 oldeps, 15 delta, 16 gamma, 17 phi."""

    def start(self, r: Any, y: Any, rnorm: float) -> None:
        self.preconditioned = y is not r
        self.v = self.cupy.empty_like(r)
        y = self.own(y)
        if self.preconditioned:
            self.init({12: -1.0})
            self.reduce("gk_minres_start", r, y)
        else:
            self.init({5: rnorm, 10: rnorm, 12: -1.0})
        self.launch("gk_minres_basis", y, self.v, self.sc)

    def lanczos(self, k: int, av: Any, r1: Any, r2: Any, nxt: Any) -> None:
        self.reduce("gk_minres_alfa", self.own(av), r1, self.v, nxt, k=k)
        if self.preconditioned:  # y = M nxt needs nxt whole first
            self.reduce("gk_minres_next", r2, nxt, k=k, flag=0)

    def rotate(self, k: int, r1: Any, r2: Any, y: Any) -> None:
        if self.preconditioned:
            self.reduce("gk_minres_beta", r2, self.own(y), k=k)
        else:  # r1 is the previous r2, r2 the new vector, y is r2
            self.reduce("gk_minres_next", r1, r2, k=k, flag=1)

    def update(self, k: int, w: Any, w1: Any, w2: Any, x: Any, y: Any) -> None:
        self.launch("gk_minres_update", self.v, w1, w2, w, x, self.own(y), self.sc, np.int64(k))


class _Bicgstab(_Steps):
    """``sc``: 6 rho, 8 rho_prev, 10 alpha, 12 omega, 14 beta (two slots each: complex),
    16 cos_prev, 17 ||rhat||, 18 ||r||, 19 ||s||."""

    def start(self, r: Any, rnorm: float) -> None:
        self.rhat = r.copy()
        self.v = self.cupy.zeros_like(r)
        self.init({6: 1.0, 8: 1.0, 10: 1.0, 12: 1.0, 16: 1.0, 17: rnorm, 18: rnorm})
        self.reduce("gk_bicgstab_start", self.rhat, r)

    def direction(self, k: int, r: Any, p: Any) -> None:
        if k > 1:
            self.launch("gk_bicgstab_direction", r, self.v, p, self.sc)

    def project(self, k: int, phat: Any, av: Any, x: Any, r: Any) -> None:
        self.reduce("gk_bicgstab_alpha", self.rhat, self.own(av), self.v, k=k)
        self.reduce("gk_bicgstab_half", self.own(phat), self.v, x, r, k=k)

    def stabilise(self, k: int, shat: Any, t: Any, x: Any, r: Any) -> None:
        t = self.own(t)
        self.reduce("gk_bicgstab_omega", t, r, k=k)
        self.reduce(
            "gk_bicgstab_update", self.own(shat), t, self.rhat, x, r, k=k,
            flag=int(k < self.maxiter),
        )  # fmt: skip


_STEPS: dict[str, type] = {"cg": _CG, "minres": _Minres, "bicgstab": _Bicgstab}
