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

With ``graph=True``, a steady-state block of :data:`CHECK_EVERY` iterations between two
reads is captured once as a CUDA graph (:mod:`.graphs`) and each later block is one
replay of it: the iteration number its kernels record a stop at is their captured one
plus ``sc[23]``, which the graph's last node advances (:meth:`_Steps.replay_block`). A
loop that rotates its buffers from one iteration to the next (MINRES) has a graph for
each arrangement it starts a block in. GMRES replays its Arnoldi steps between two
reads, a block of at most :data:`CHECK_EVERY` steps that ends at a read or at the
cycle's end: the steps' kernels take their position in the cycle, not an iteration
count, so each cycle replays the same graphs (:meth:`_Gmres.replay_block`).

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
from gpukit.backend.graphs import CaptureFailed

from . import graphs
from .cuda_sources import HERE as _KERNELS_DIR

__all__ = ["CHECK_EVERY", "KERNELS", "DeviceSpace", "name_expressions", "source"]

#: The most iterations between two reads of a loop's status, in steady state.
CHECK_EVERY = 10
#: The pipelined BiCGSTAB's checkpoints, where it may replace its recurrences' vectors:
#: iterations 1, 2, 4, 8, 16 and then every ``REPLACE_EVERY``, the steady-state reads.
#: A constant of its own, so that a loop read at every iteration (a callback) replaces
#: at the same iterations, and returns the same iterate, as one read every few.
REPLACE_EVERY = CHECK_EVERY
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
    "gk_bicgstab_pipe_start",
    "gk_bicgstab_pipe_omega",
    "gk_bicgstab_pipe_update",
    "gk_bicgstab_pipe_replace",
    "gk_gmres_dots",
    "gk_gmres_apply",
    "gk_gmres_residual",
    "gk_gmres_combine",
)
_SOURCE = Path(__file__).with_name("krylov.cu")
_INCLUDE = '#include "gk_common.cuh"'
_NONFINITE = KRYLOV_STOPS.index("nonfinite") + 1
_K0 = 23  # GK_K0 in krylov.cu


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
        """The device steps of loop ``method``, or None for the host's."""
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
        self.part = cupy.empty(self.grid[0] * 12, dtype=np.float64)  # 6 complex sums a block
        self.ticket = cupy.zeros(1, dtype=np.uint32)
        self.module, self.functions = _module(cupy, self.dtype), {}
        self.ctype = _CTYPES[self.dtype]
        self.stop: tuple[int, int, float] | None = None
        self.next_read = 1
        self.fresh = False  # whether the last read saw every launch so far
        self.graph: Any = None  # the solve's _krylov.GraphPlan with graph=True
        self.replays: dict[tuple, tuple[Any, list]] = {}  # _replay's captured blocks
        self.k0 = 0  # sc[23]: the iterations replays added to the captured ``k``
        self.status = 3  # the slots of ``sc`` a read copies: the stop, and a loop's flags

    def init(self, slots: dict[int, float]) -> None:
        """Upload the loop's first scalars, by their slots in ``sc`` (``krylov.cu``)."""
        values = np.zeros(32)
        values[3], values[4] = self.tol, self.eps
        for index, value in slots.items():
            values[index] = value
        self.sc = self.cupy.asarray(values)

    def launch(self, name: str, *args: Any) -> None:
        kernel = self.functions.get(name)
        if kernel is None:
            kernel = self.functions[name] = self.module.get_function(f"{name}<{self.ctype}>")
        kernel(self.grid, self.block, (np.int64(self.n), *args))
        self.fresh = False

    def _k(self, k: int) -> np.int64:
        """Iteration ``k`` as a kernel argument: the kernels add ``sc[23]`` to it."""
        return np.int64(k - self.k0)

    def reduce(self, name: str, *args: Any, k: int | None = None, flag: int | None = None):
        """Launch a reduction step: vectors, then the scalars' array and scratch."""
        tail = () if k is None else (self._k(k),)
        tail += () if flag is None else (np.int32(flag),)
        self.launch(name, *args, self.sc, self.part, self.ticket, *tail)

    def replay_block(self, k: int, iterate: Any, every: bool, carried: list) -> int:
        """Iterations ``k`` to ``k + CHECK_EVERY - 1`` as one replay of a CUDA graph (and
        how many: ``CHECK_EVERY``) when the graph option is on and the next read is due
        right after them (steady state); 0 when they must run one at a time.
        ``iterate(j)`` enqueues iteration ``j``; ``carried``: the buffers the loop
        rotates between iterations, in the order it holds them (:meth:`_replay`)."""
        last = k + CHECK_EVERY - 1
        if every or self.stop is not None or self.next_read != last or last > self.maxiter:
            return 0

        def work() -> None:
            for j in range(k, last + 1):
                iterate(j)
            advance = self.sc[_K0 : _K0 + 1]
            self.cupy.add(advance, CHECK_EVERY, out=advance)  # the next block's k

        if not self._replay((), work, carried):
            return 0
        self.k0 += CHECK_EVERY
        return CHECK_EVERY

    def _replay(self, key: tuple, work: Any, carried: list) -> bool:
        """Replay the block ``key``, captured from ``work()`` at its first use; False,
        with nothing run, when the graph option is off or the capture failed (the plan
        then warns). The loop's ``carried`` buffers are part of the key: a graph writes
        the buffers it was captured with, so a block that starts with them arranged
        otherwise is another graph; a replay leaves them as its capture did."""
        plan = self.graph
        if plan is None or not plan.enabled:
            return False
        key += tuple(map(id, carried))
        entry = self.replays.get(key)
        if entry is None:
            before = list(carried)
            try:
                replay, _ = graphs.capture(self.cupy, work)
            except CaptureFailed as exc:
                carried[:] = before
                plan.fall_back(str(exc))
                return False
            entry = self.replays[key] = (replay, list(carried))
        carried[:] = entry[1]
        entry[0].launch()
        self.fresh = False
        return True

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
        status = self.sc[: self.status].get()
        self.fresh = True
        code, iterations, estimate = status[:3]
        if code:
            self.stop = (int(code), int(iterations), float(estimate))
        self.seen(status)

    def seen(self, status: np.ndarray) -> None:
        """What a loop takes from a read besides the stop (``status``: the slots read)."""


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
        self.launch("gk_minres_update", self.v, w1, w2, w, x, self.own(y), self.sc, self._k(k))


class _Bicgstab(_Steps):
    """``sc``: 6 rho, 8 rho_prev, 10 alpha, 12 omega, 14 beta (two slots each: complex),
    16 cos_prev, 17 ||rhat||, 18 ||r||, 19 ||s||.

    Without a preconditioner the loop is the pipelined one (``pipeline_*``,
    :func:`gpukit.linalg._krylov.bicgstab`): two kernels an iteration, each after an
    operator product, instead of five. It also keeps the bounds of its recurrences' drift
    (``krylov.cu``: slots 20-22 and 24-31), and slot 5, read with the status, asks for its
    vectors to be replaced."""

    pipelined = True

    def pipeline_start(self, r: Any, ar: Any, x: Any, rnorm: float) -> None:
        """``rhat = r``, ``w = A r`` (``ar``), the first rho and alpha, judged, and the
        bounds of the recurrences' drift (``krylov.cu``)."""
        cupy = self.cupy
        self.rhat, self.w, self.t = (cupy.empty_like(r) for _ in range(3))
        self.p, self.s, self.z = (cupy.zeros_like(r) for _ in range(3))  # beta = 0 first
        self.init({16: 1.0, 17: rnorm, 18: rnorm})
        self.status, self.drifted, self.next_check = 6, False, 1
        self.reduce("gk_bicgstab_pipe_start", r, self.own(ar), x, self.rhat, self.w)
        # read at once (one sync a loop): a breakdown or NaN there ends the loop before
        # the operator is called again, as in the classic loop
        self._read()

    def seen(self, status: np.ndarray) -> None:
        # the pipelined loop's drift bounds ask for a replacement (krylov.cu, slot 5)
        self.drifted = len(status) > 5 and bool(status[5])

    def replace_due(self, k: int) -> bool:
        """Whether to replace after iteration ``k``: a checkpoint (:data:`REPLACE_EVERY`)
        at which the status, read there, has the drift bounds asking for it."""
        if k < self.next_check:
            return False
        self.next_check = k + min(k, REPLACE_EVERY)
        if not self.fresh:  # a checkpoint the reads' schedule did not fall on
            self._read()
        return self.drifted and self.stop is None

    def pipeline_omega(self, k: int, aw: Any, r: Any) -> None:
        """``t = A w`` (``aw``): the directions, ``q`` into ``r``, ``A q`` into ``w``,
        omega."""
        self.reduce("gk_bicgstab_pipe_omega", self.own(aw), r, self.w, self.t, self.p, self.s,
                    self.z, k=k)  # fmt: skip

    def pipeline_update(self, k: int, az: Any, x: Any, r: Any) -> None:
        """``v = A z`` (``az``): ``x``, ``r``, ``w``; the drift bounds; the next rho, beta
        and alpha (the last iteration judges no next rho: ``k < maxiter`` is tested on
        the device, where a replayed block's ``k`` is known)."""
        self.launch(
            "gk_bicgstab_pipe_update", self.own(az), self.rhat, x, r, self.w, self.t, self.p,
            self.s, self.z, self.sc, self.part, self.ticket, self._k(k),
            np.int64(self.maxiter),
        )  # fmt: skip

    def pipeline_replace(self, k: int, matvec: Any, x: Any, r: Any) -> None:
        """After iteration ``k``, ``r`` holding ``b - A x`` afresh: ``w = A r``,
        ``s = A p``, ``z = A s`` from their definitions, and the scalars and bounds that
        follow (three operator products; ``p``'s recurrence has no product to drift
        from)."""
        self.cupy.copyto(self.w, self.own(matvec(r)))
        self.cupy.copyto(self.s, self.own(matvec(self.p)))
        self.reduce("gk_bicgstab_pipe_replace", self.own(matvec(self.s)), self.rhat, x, r,
                    self.w, self.s, self.z, k=k)  # fmt: skip
        self.drifted = False

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
        # the last iteration judges no next rho: k < maxiter is tested on the device,
        # where a replayed block's k is known
        self.launch(
            "gk_bicgstab_update", self.own(shat), t, self.rhat, x, r, self.sc, self.part,
            self.ticket, self._k(k), np.int64(self.maxiter),
        )  # fmt: skip


class _Gmres(_Steps):
    """Arnoldi with the basis on the device, orthogonalised by classical Gram-Schmidt
    applied twice with the second pass delayed by one step (``krylov.cu``: a step is the
    product and two launches), the Hessenberg columns formed here from the steps' records,
    read every few steps, at the end of each cycle and at the last step, one copy for the
    records not read yet; the true residual at a restart stays on the device until the
    next read unless the cycle ended early (then the solve is likely done: read at once).

    Column ``j`` needs step ``j + 1``'s pass over the next row, so a read hands over the
    columns before the last step's, and a read that ends the cycle (at its last step, or
    at ``maxiter``) first makes that pass, without a product.

    ``hb``: [0] the norm of the residual the cycle started from, then ``rs`` (m + 1),
    the steps' records (``m + 1`` of ``4 (m + 2)``, the last the closing pass's) and the
    coefficients one step's two launches pass on.
    """

    def __init__(
        self, space: DeviceSpace, x: Any, tol: float, maxiter: int, m: int, to_host: Any
    ) -> None:
        super().__init__(space, x, tol, maxiter)
        cupy = self.cupy
        self.m, self.record = m, 4 * (m + 2)
        self.V = cupy.empty((m + 1, self.n), dtype=self.dtype)
        self.at_rs, self.at_records = 1, m + 2
        self.at_coef = self.at_records + (m + 1) * self.record
        self.hb = cupy.zeros(self.at_coef + 4 * (m + 1), dtype=np.float64)
        self.sums = cupy.empty(self.grid[0] * (m + 1) * 4, dtype=np.float64)
        self.hdtype = np.dtype(np.complex128 if self.dtype.kind == "c" else np.float64)
        self.started = self.pending = False
        self.taken = self.done = self.passes = self.steps = 0

    def _slot(self, at: int) -> Any:
        return self.hb[at:]

    def begin(self, r: Any, rnorm: float | None) -> None:
        """The cycle's first basis vector: ``r`` (from the restart, on the device) with
        the scale ``1 / ||r||``; the first cycle's comes from the host."""
        self.taken = self.done = self.passes = 0
        self.H = np.zeros((self.m + 1, self.m), dtype=self.hdtype)
        if not self.started:
            self.started = True
            self.cupy.copyto(self.V[0], r)
            self.hb[:2] = self.cupy.asarray(np.array([rnorm, 1.0 / rnorm]))

    def basis(self, j: int) -> Any:
        return self.V[j]  # unnormalised: A and M are linear, the kernels apply rs[j]

    def _pass(self, j: int, p: Any, nxt: bool) -> None:
        """Step ``j``'s two launches (``p``: its product); without ``nxt``, only row
        ``j``'s delayed pass (the record column ``j - 1`` needs)."""
        rs, rec = self._slot(self.at_rs), self._slot(self.at_records + j * self.record)
        coef = self._slot(self.at_coef)
        self.launch("gk_gmres_dots", self.V, np.int64(j), p, rs, rec, coef, self.sums, self.ticket)
        self.launch(
            "gk_gmres_apply", self.V, np.int64(j), p, coef, rs, rec, self.part, self.ticket,
            np.int32(nxt),
        )  # fmt: skip
        self.passes = j + 1

    def arnoldi(self, j: int, av: Any) -> None:
        self._pass(j, self.own(av), True)
        if j + 1 == self.m:  # the cycle's last column: its next row's pass now
            self._pass(self.m, self.V[self.m], False)
        self.done, self.steps = j + 1, self.steps + 1

    def replay_block(self, j: int, step: Any, every: bool, carried: list) -> int:
        """Arnoldi steps ``j`` to the next read as one replay of a CUDA graph (and how
        many), when the graph option is on and the last read was just before ``j`` in
        steady state: ``CHECK_EVERY`` steps, or fewer up to the cycle's end. 0 when they
        must run one at a time; ``every``: the cycle may end at ``maxiter``, read by
        step. ``step(i)`` enqueues step ``i``. The kernels take ``i``, the slots of its
        record and its basis rows, all the same in every cycle: one graph a block."""
        count, before = min(CHECK_EVERY, self.m - j), (self.done, self.passes, self.steps)
        if every or self.next_read != self.steps + CHECK_EVERY:
            return 0

        def work() -> None:
            for i in range(j, j + count):
                step(i)

        if not self._replay((j, count), work, carried):
            self.done, self.passes, self.steps = before
            return 0
        self.done, self.steps = j + count, before[2] + count
        self.passes = self.done + (self.done == self.m)
        return count

    def read(self, force: bool) -> tuple[float | None, list] | None:
        if not (force or self.steps >= self.next_read):
            return None
        if force and self.passes == self.done and self.done:
            self._pass(self.done, self.V[self.done], False)
        self.next_read = self.steps + min(self.steps, CHECK_EVERY)
        # the records not read yet (the first read after a restart: from the start)
        first = 0 if self.pending else self.at_records + self.taken * self.record
        hb = self.hb[first : self.at_records + self.passes * self.record].get()
        start = float(hb[0]) if self.pending else None
        self.pending = False
        formed, columns = self.passes - 1, []
        if formed > self.taken:
            records = [self._record(hb, first, j) for j in range(self.taken, formed + 1)]
            for i, j in enumerate(range(self.taken, formed)):
                columns.append(self.column(j, records[i], records[i + 1]))
            self.taken = formed
        return start, columns

    def _record(self, hb: np.ndarray, first: int, j: int) -> tuple:
        """Step ``j``'s record in ``hb`` (``self.hb[first:]``): (s, t, delta, rho, nu)."""
        rec = hb[self.at_records + j * self.record - first :][: 4 * (j + 2)]
        pairs = rec[0::2] + 1j * rec[1::2] if self.hdtype.kind == "c" else rec[0::2]
        return pairs[2 : 2 * j + 2 : 2], pairs[3 : 2 * j + 3 : 2], pairs[0], rec[2], rec[3]

    def column(self, j: int, this: tuple, after: tuple) -> tuple[np.ndarray, float, float]:
        """Hessenberg column ``j`` from the records of steps ``j`` and ``j + 1``: with
        q_j = (u - Q s) / (rho nu), A q_j = Q (t, nu delta / rho) / (rho nu)
        - A Q s / (rho nu) + u' / nu, u' = Q' s' + rho' nu' q_{j+1} (row j + 1), and
        A Q s = H[:j+1, :j] s (the columns before)."""
        s, t, delta, rho, nu = this
        s1, _, _, rho1, nu1 = after
        with np.errstate(all="ignore"):  # a breakdown's column: not finite, not taken
            first = np.append(t, nu * delta / rho) - self.H[: j + 1, :j] @ s
            col = first / (rho * nu) + s1 / nu
            hn = float(rho1 * nu1 / nu)
            h0 = math.sqrt(float(np.vdot(col, col).real) + hn * hn)
        self.H[: j + 1, j], self.H[j + 1, j] = col, hn
        return col, h0, hn

    def advance(self, x: Any, y: np.ndarray, psolve: Any) -> None:
        """``x += V[:k] y`` (``x += M V[:k] y`` with a preconditioner)."""
        yd = self.cupy.asarray(y.astype(self.dtype, copy=False))
        k, rs = np.int64(len(y)), self._slot(self.at_rs)
        if psolve is None:
            self.launch("gk_gmres_combine", self.V, k, rs, yd, x, np.int32(1))
            return
        update = self.cupy.empty_like(x)
        self.launch("gk_gmres_combine", self.V, k, rs, yd, update, np.int32(0))
        self.cupy.add(x, self.own(psolve(update)), out=x)

    def restart(self, matvec: Any, b: Any, x: Any, r: Any, now: bool) -> float | None:
        """``r = b - A x``, also the next cycle's first basis vector; its norm now, or
        with the next read."""
        ax = self.own(matvec(x))
        self.launch(
            "gk_gmres_residual", self.own(b), ax, r, self.V[0], self.hb,
            self._slot(self.at_rs), self.part, self.ticket,
        )  # fmt: skip
        if now:
            return float(self.hb[:1].get()[0])
        self.pending = True
        return None

    def reported(self, rnorm: float) -> None:
        """None: the driver recomputes the residual with its own norm, so that every
        loop reports the same quantity (``rnorm`` here is the kernel's scaled sum)."""
        return None


_STEPS: dict[str, type] = {"cg": _CG, "minres": _Minres, "bicgstab": _Bicgstab, "gmres": _Gmres}
