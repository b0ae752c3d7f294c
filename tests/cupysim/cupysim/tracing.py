"""What a piece of code asks of the simulated GPUs: the trace behind GPU-cost counts.

``with cupysim.trace() as t:`` records, from every host thread, each operation enqueued on a
simulated stream and each host synchronisation, allocation and cuFFT plan creation, in the
order they happen. Every event names its device and stream. Categories (``Event.kind``):

``kernel``
    a kernel launch: CuPy's elementwise/reduction kernels (modelled with NumPy: name and
    operand bytes; the launch configuration of an elementwise ufunc is CuPy's
    ``linear_launch`` of 128-thread blocks, cupy/_core/_kernel.pyx ``ElementwiseKernel`` /
    ``ufunc.__call__``; None where the simulator does not model it) and ``RawKernel`` /
    ``ElementwiseKernel`` / ``ReductionKernel`` launches (the grid and block passed).
``library``
    a cuBLAS, cuFFT, cuSOLVER or cuSPARSE routine: its operand shapes, dtype and flops (the
    standard counts, :func:`flops`). The simulator runs a library call as one operation; on
    a GPU it may be a few kernels.
``memset``, ``copy``, ``collective``
    ``cudaMemsetAsync``; ``cudaMemcpyAsync`` (``name``: ``"host to device"``,
    ``"device to host"``, ``"device to device"`` or ``"peer"``, between devices); an NCCL
    call.
``sync``
    the host waits for a stream, event or device. ``name`` is the CuPy call that waited
    (the outermost simulator frame: ``_ndarray_base.__float__``, ``Stream.synchronize``);
    ``explicit`` says whether the code asked for it (``Stream``/``Event``/``Device``
    ``.synchronize``, ``runtime.*Synchronize``) or it came with another call. CuPy's own
    implicit synchronisations: ``ndarray.get`` copies with ``copy_to_host_async`` then
    ``stream.synchronize()`` when ``blocking`` (cupy/_core/core.pyx ``get``, where CuPy also
    calls ``syncdetect._declare_synchronize()``); ``item``, ``tolist``, ``__int__``,
    ``__float__``, ``__complex__``, ``__nonzero__`` (``bool()``) and ``__repr__`` call
    ``get()`` (core.pyx); ``cupy.asnumpy`` calls ``a.get(...)`` (cupy/__init__.py);
    ``cupy.array(..., blocking=True)`` ends in ``stream.synchronize()`` (core.pyx
    ``_array_default``); ``MemoryPointer.copy_to_host``/``copy_from_host`` are the
    synchronous ``cudaMemcpy`` (cupy/cuda/memory.pyx); data-dependent output sizes
    (``nonzero``, boolean indexing, ``unique``) read a count back. ``where`` is the first
    frame outside the simulator: the line of *your* code that caused it.
``query``
    ``Stream.done`` / ``Event.done`` / ``streamQuery``: the host asks without waiting.
``alloc``
    a request to CuPy's memory pool: ``hit`` (a cached block was reused) or not (the pool
    called ``cudaMalloc``), rounded bytes.
``plan``
    a cuFFT plan created (cupy/fft/_cache.pyx ``PlanCache``: a miss of the plan cache).
``graph``
    a CUDA graph launched (``Graph.launch``, ``cudaGraphLaunch``): one device operation.
    The operations it replays follow it as events of their own kinds with ``in_graph``
    set; they count as ``graph_nodes``, not as launches (cupysim/capture.py). Work
    captured into a graph is recorded when the graph launches, not when it is captured.

Product code never sees any of this; it is the simulator recording itself. The counts are
exact for what the simulator models (docs/contributing_gpu.rst); :mod:`cupysim.cost` turns
them into an *estimate* of time.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace

import numpy as np

#: Traces being recorded (hooks test this first: nothing is done while it is empty).
active: list[Trace] = []
_lock = threading.Lock()
_tls = threading.local()

_SIM_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SIM_DIRS = tuple(os.path.join(_SIM_ROOT, d) + os.sep for d in ("cupy", "cupyx", "cupysim"))

#: Calls whose purpose is to wait: an explicit synchronisation.
_EXPLICIT = frozenset({
    "_BaseStream.synchronize", "Stream.synchronize", "ExternalStream.synchronize",
    "Event.synchronize", "Device.synchronize", "deviceSynchronize", "streamSynchronize",
    "eventSynchronize",
})  # fmt: skip
#: Calls that ask whether work is done without waiting for it.
_QUERIES = frozenset({"_BaseStream.done", "Event.done", "streamQuery", "eventQuery"})


@dataclass(frozen=True)
class Event:
    """One recorded event (see the module docstring for ``kind`` and ``name``)."""

    kind: str
    name: str
    device: int
    stream: str | None = None  # the stream's label; None for allocations and plans
    nbytes: int = 0  # operand bytes (read + written), copy or allocation size
    flops: int = 0
    dtype: str | None = None
    shapes: tuple = ()
    grid: tuple[int, ...] | None = None
    block: tuple[int, ...] | None = None
    hit: bool | None = None  # alloc: served from the pool's cache
    explicit: bool | None = None  # sync: asked for by the code
    where: str = ""  # sync: the first frame outside the simulator
    library: str | None = None  # library: "cuBLAS", "cuFFT", "cuSOLVER" or "cuSPARSE"
    in_graph: bool = False  # replayed by the graph launch before it, not launched itself


@dataclass(frozen=True)
class Summary:
    """Counts of a trace, per unit of work (``per``): a float each, so 8.1 per iteration.

    ``device_ops`` is everything enqueued on a stream but host<->device copies: kernels,
    library calls, memsets, device/peer copies and collectives (what one step costs in
    launches; a CUDA graph launch is one, ``graph_launches`` counts them and
    ``graph_nodes`` the operations they replayed); ``syncs`` are blocking host
    synchronisations.
    """

    per: float = 1
    device_ops: float = 0
    kernels: float = 0
    library_calls: float = 0
    memsets: float = 0
    collectives: float = 0
    syncs: float = 0
    explicit_syncs: float = 0
    implicit_syncs: float = 0
    queries: float = 0
    h2d_copies: float = 0
    d2h_copies: float = 0
    d2d_copies: float = 0
    peer_copies: float = 0
    h2d_bytes: float = 0
    d2h_bytes: float = 0
    d2d_bytes: float = 0
    peer_bytes: float = 0
    allocations: float = 0
    pool_hits: float = 0
    pool_misses: float = 0
    pool_miss_bytes: float = 0
    fft_plans: float = 0
    kernel_bytes: float = 0
    flops: float = 0
    graph_launches: float = 0
    graph_nodes: float = 0

    def __sub__(self, other: Summary) -> Summary:
        """The counts of ``self`` less ``other``'s, both in total (``per`` 1)."""
        a, b = self.as_dict(), other.as_dict()
        return Summary(**{k: a[k] * self.per - b[k] * other.per for k in a if k != "per"})

    def __truediv__(self, per: float) -> Summary:
        """The counts per unit of work, ``per`` units in all."""
        if per <= 0:
            raise ValueError(f"per must be positive, got {per!r}")
        d = self.as_dict()
        return Summary(per=d.pop("per") * per, **{k: v / per for k, v in d.items()})

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def table(self) -> str:
        """The non-zero counts, one per line."""
        unit = "" if self.per == 1 else f" (per unit of work, {self.per:g} units)"
        rows = [f"{k:>16} {v:,.6g}" for k, v in self.as_dict().items() if v and k != "per"]
        return "\n".join([f"GPU cost counted on the simulator{unit}:", *rows])


class Trace:
    """The events recorded while a :func:`trace` block ran (its result)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def _add(self, event: Event) -> None:
        with _lock:
            self.events.append(event)

    def select(self, kind: str | None = None, device: int | None = None, stream=None):
        """The events of one kind / device / stream label (None: any), in order."""
        return [
            e
            for e in self.events
            if (kind is None or e.kind == kind)
            and (device is None or e.device == device)
            and (stream is None or e.stream == stream)
        ]

    def streams(self) -> dict[tuple[int, str], list[Event]]:
        """Events per (device, stream label), for the operations enqueued on streams."""
        out: dict[tuple[int, str], list[Event]] = {}
        for e in self.events:
            if e.stream is not None:
                out.setdefault((e.device, e.stream), []).append(e)
        return out

    def summary(self, per: float = 1, device: int | None = None) -> Summary:
        """Counts per unit of work: ``per`` units (steps, iterations) ran in the block."""
        if per <= 0:
            raise ValueError(f"per must be positive, got {per!r}")
        c: Counter = Counter()
        for e in self.events:
            if device is not None and e.device != device:
                continue
            k = e.kind
            if e.in_graph:
                c["graph_nodes"] += 1
                if k in ("kernel", "library"):
                    c["kernel_bytes"] += e.nbytes
                    c["flops"] += e.flops
            elif k == "graph":
                c["device_ops"] += 1
                c["graph_launches"] += 1
            elif k in ("kernel", "library", "memset", "collective"):
                c["device_ops"] += 1
                c[{"kernel": "kernels", "library": "library_calls", "memset": "memsets",
                   "collective": "collectives"}[k]] += 1  # fmt: skip
                if k in ("kernel", "library"):
                    c["kernel_bytes"] += e.nbytes
                    c["flops"] += e.flops
            elif k == "copy":
                key = {"host to device": "h2d", "device to host": "d2h",
                       "device to device": "d2d", "peer": "peer"}[e.name]  # fmt: skip
                c[f"{key}_copies"] += 1
                c[f"{key}_bytes"] += e.nbytes
                if key in ("d2d", "peer"):
                    c["device_ops"] += 1
            elif k == "sync":
                c["syncs"] += 1
                c["explicit_syncs" if e.explicit else "implicit_syncs"] += 1
            elif k == "query":
                c["queries"] += 1
            elif k == "alloc":
                c["allocations"] += 1
                if e.hit:
                    c["pool_hits"] += 1
                else:
                    c["pool_misses"] += 1
                    c["pool_miss_bytes"] += e.nbytes
            elif k == "plan":
                c["fft_plans"] += 1
        return Summary(per=per, **{k: v / per for k, v in c.items()})

    def kernel_names(self) -> Counter:
        """How many times each kernel or library routine ran."""
        return Counter(e.name for e in self.events if e.kind in ("kernel", "library"))

    def syncs(self) -> Counter:
        """Blocking host synchronisations by (CuPy call, the line of code that caused it)."""
        return Counter((e.name, e.where) for e in self.events if e.kind == "sync")


@contextlib.contextmanager
def trace() -> Iterator[Trace]:
    """Record GPU work, host synchronisations and allocations while the block runs.

    Examples
    --------
    >>> import cupy, cupysim
    >>> x = cupy.ones(1000, dtype=cupy.float32)
    >>> with cupysim.trace() as t:
    ...     y = x * 2
    ...     total = float(y.sum())
    >>> s = t.summary()
    >>> s.kernels, s.syncs, s.d2h_copies
    (2.0, 1.0, 1.0)
    """
    t = Trace()
    with _lock:
        active.append(t)
    try:
        yield t
    finally:
        with _lock:
            active.remove(t)


def _emit(event: Event) -> None:
    for t in list(active):
        t._add(event)


# -- hooks (called by the simulator only while ``active``) -----------------------------------
def note(**info) -> None:
    """Describe the next operation this thread enqueues (kind, operand arrays, grid)."""
    _tls.note = info


def enqueued(stream, reads, writes, op: str) -> None:
    """An operation ``op`` was enqueued on ``stream`` (streams.check, after its checks)."""
    info = _take_note(op)
    if info.get("kind") == "graph":
        _emit(Event("graph", op, stream.device, stream.label, _nbytes(reads, writes)))
        for node in info.get("nodes", ()):
            if node.event is not None:
                _emit(replace(node.event, device=stream.device, stream=stream.label,
                              in_graph=True))  # fmt: skip
        return
    _emit(_event(stream, reads, writes, op, info))


def captured(stream, reads, writes, op: str) -> Event:
    """The event ``op`` would have been, captured into a graph (cupysim/capture.py)."""
    return _event(stream, reads, writes, op, _take_note(op))


def _take_note(op: str) -> dict:
    info = getattr(_tls, "note", None) or {}
    _tls.note = None
    if info.get("op") != op:  # a note left by an operation that failed its checks
        info = {}
    return info


def _nbytes(reads, writes) -> int:
    return sum(r.hi - r.lo for r in (*reads, *writes))


def _event(stream, reads, writes, op: str, info: dict) -> Event:
    nbytes = _nbytes(reads, writes)
    dev, label = stream.device, stream.label
    if op.startswith("memcpyAsync"):
        if "host to device" in op:
            name = "host to device"
        elif "device to host" in op:
            name = "device to host"
        else:
            name = "peer" if _other_device(reads, dev) else "device to device"
            nbytes //= 2  # read and written: the bytes moved once
        return Event("copy", name, dev, label, nbytes)
    if op == "memsetAsync":
        return Event("memset", op, dev, label, nbytes)
    if op == "cudaLaunchHostFunc":
        return Event("host", op, dev, label)
    if op.startswith("nccl"):
        return Event("collective", op, dev, label, nbytes)
    arrays = info.get("arrays", ())
    shapes = tuple(tuple(a.shape) for a in arrays)
    dtype = _dtype(arrays)
    if info.get("kind") == "library":
        axes, _tls.fft_axes = getattr(_tls, "fft_axes", None), None
        f = flops(op, arrays, axes)
        lib = library_of(op)
        return Event("library", op, dev, label, nbytes, f, dtype, shapes, library=lib)
    grid, block = info.get("grid"), info.get("block")
    if grid is None and info.get("kind") == "elementwise" and _is_elementwise(op):
        size = max((a.size for a in arrays), default=0)
        grid, block = (max(1, -(-size // 128)),), (min(128, max(size, 1)),)
    return Event("kernel", op, dev, label, nbytes, 0, dtype, shapes, grid, block)


def host_sync(device: int | None, stream_label: str | None) -> None:
    """The host waited for a stream, event (``device`` None: the current one) or device."""
    if device is None:
        from . import devices

        device = devices.current()
    cause, where = _caller()
    if cause in _QUERIES:
        _emit(Event("query", cause, device, stream_label, where=where))
        return
    _emit(Event("sync", cause, device, stream_label, explicit=cause in _EXPLICIT, where=where))


def allocation(device: int, nbytes: int, hit: bool) -> None:
    """A request to the memory pool of ``device``, served from its cache or not."""
    _emit(Event("alloc", "pool", device, None, nbytes, hit=hit))


def fft_axes(name: str, ndim: int, args, kwargs) -> None:
    """The axes the cuFFT call ``name(x, *args, **kwargs)`` about to run transforms."""
    kind = _fft_kind(name.lower())
    if kind is None:
        return
    pos = args[1] if len(args) > 1 else None
    if kind == "":
        axes = (kwargs.get("axis", -1 if pos is None else pos),)
    else:
        axes = kwargs.get("axes", pos)
        if axes is None:
            s = kwargs.get("s", args[0] if args else None)
            if kind == "2":
                axes = (-2, -1)
            else:
                axes = range(ndim) if s is None else range(-len(s), 0)
    _tls.fft_axes = tuple(int(a) % max(ndim, 1) for a in axes)


def fft_plan(device: int, key) -> None:
    """A cuFFT plan was created (the plan cache missed)."""
    _emit(Event("plan", str(key[0]), device, None, shapes=(tuple(key[1]),), dtype=key[2]))


# -- helpers ---------------------------------------------------------------------------------
def _other_device(reads, dev: int) -> bool:
    from . import memory

    for r in reads:
        found = memory.find(r.lo)
        if found is not None and found[0].device not in (dev, -1):
            return True
    return False


_CUBLAS = frozenset({
    "matmul", "dot", "vdot", "inner", "tensordot", "gemm", "gemv", "axpy", "scal", "nrm2",
    "batched_gesv",
})  # fmt: skip
_CUSPARSE = frozenset({"spmv", "spmm", "spgemm"})


def library_of(name: str) -> str:
    """The CUDA library a simulated routine stands for (cupy/_core/_routines_linalg.pyx:
    products are cuBLAS; cupy/fft: cuFFT; cupyx.scipy.sparse: cuSPARSE; cupy.linalg's
    factorisations and cupyx.lapack: cuSOLVER)."""
    if name in _CUBLAS:
        return "cuBLAS"
    if _fft_kind(name.lower()) is not None:
        return "cuFFT"
    if name in _CUSPARSE:
        return "cuSPARSE"
    return "cuSOLVER"


#: CuPy's elementwise kernels among the simulator's named operations (core.pyx ``fill``,
#: ``copyto``, ``astype`` and ``elementwise_copy`` are ElementwiseKernels; ``fix``, ``i0``
#: and ``sinc`` are CuPy ufuncs NumPy has as plain functions).
_ELEMENTWISE = frozenset({"fill", "copyto", "astype", "elementwise_copy", "fix", "i0", "sinc"})


def _is_elementwise(name: str) -> bool:
    return name in _ELEMENTWISE or isinstance(getattr(np, name, None), np.ufunc)


def _dtype(arrays) -> str | None:
    kinds = [a.dtype for a in arrays if a.dtype.kind in "fc"]
    return str(np.result_type(*kinds)) if kinds else None


def _caller() -> tuple[str, str]:
    """The outermost simulator function on the stack and the first frame outside it."""
    frame = sys._getframe(2)
    cause = ""
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(_SIM_DIRS):
            rel = os.path.relpath(path) if path.startswith(os.getcwd()) else path
            return cause, f"{rel}:{frame.f_lineno} ({frame.f_code.co_name})"
        cause = frame.f_code.co_qualname
        frame = frame.f_back
    return cause, ""


_FFT_KINDS = frozenset({"", "2", "n"})


def flops(name: str, arrays, fft_axes: tuple[int, ...] | None = None) -> int:
    """Floating-point operations of a library routine on ``arrays`` (inputs, then outputs).

    The conventional counts: a (batched) matrix product ``2 m n k``; a level-1/2 BLAS call
    ``2 n`` / ``2 m n``; an FFT ``5 N log2 N`` per complex transform of ``N`` points and half
    that for a real one (the convention of FFTW's benchFFT, https://www.fftw.org/speed/method.html);
    LU solve ``2/3 n^3 + 2 n^2 r``, Cholesky ``n^3 / 3``, QR ``2 m n^2 - 2/3 n^3``, inverse
    ``2 n^3`` (LAPACK Working Note 41's operation counts); sparse products ``2 nnz r``.
    An FFT transforms ``fft_axes`` (its default axes when None), ``N`` the larger of the
    input's and output's lengths there (a real transform's real side).
    Complex arithmetic counts 4 real operations per multiply-add pair. Unknown routines: 0.
    """
    if not arrays:
        return 0
    ins = list(arrays[:-1]) or list(arrays)
    out = arrays[-1]
    cplx = 4 if any(a.dtype.kind == "c" for a in arrays) else 1
    n = name.lower()
    if n in ("matmul", "dot", "tensordot", "inner", "vdot", "gemm", "gemv", "batched_gesv"):
        if n == "batched_gesv":
            m = ins[0].shape[-1]
            return int(cplx * (2 / 3 * m**3 + 2 * m * m) * max(1, ins[0].size // (m * m)))
        a = ins[0]
        k = a.shape[-1] if a.ndim else 1
        return int(2 * cplx * max(out.size, 1) * k) if out.ndim else int(2 * cplx * a.size)
    if n in ("nrm2", "axpy", "scal"):
        return int(2 * cplx * ins[0].size)
    kind = _fft_kind(n)
    if kind is not None:
        x = ins[0]
        if fft_axes is None:
            fft_axes = _default_axes(kind, x.ndim)
        lengths = [max(x.shape[a], out.shape[a] if out.ndim == x.ndim else 0) for a in fft_axes]
        points = int(np.prod(lengths)) if lengths else 1
        if points <= 1:
            return 0
        batch = max(1, out.size // max(int(np.prod([out.shape[a] for a in fft_axes])), 1))
        real = n.lstrip("i")[0] in "rh"
        return int((2.5 if real else 5) * points * math.log2(points) * batch)
    if n in ("spmv", "spmm"):
        nnz = ins[0].size  # the data array of the CSR matrix comes first
        cols = out.shape[1] if out.ndim > 1 else 1
        return int(2 * cplx * nnz * cols)
    mats = [a for a in ins if a.ndim >= 2]
    if not mats:
        return 0
    a = mats[0]
    m, k = a.shape[-2], a.shape[-1]
    batch = max(1, a.size // max(m * k, 1))
    rhs = out.shape[-1] if out.ndim >= 2 else 1
    table = {
        "solve": 2 / 3 * k**3 + 2 * k * k * rhs,
        "gesv": 2 / 3 * k**3 + 2 * k * k * rhs,
        "posv": k**3 / 3 + 2 * k * k * rhs,
        "potrs": 2 * k * k * rhs,
        "cholesky": k**3 / 3,
        "inv": 2 * k**3,
        "det": 2 / 3 * k**3,
        "slogdet": 2 / 3 * k**3,
        "qr": 2 * m * k * k - 2 / 3 * k**3,
        "lstsq": 2 * m * k * k - 2 / 3 * k**3,
        "gels": 2 * m * k * k - 2 / 3 * k**3,
    }
    return int(cplx * batch * table.get(n, 0))


def _fft_kind(name: str) -> str | None:
    """The kind of a cuFFT routine name: "" (1-D), "2" or "n"; None for another routine."""
    base = name.lstrip("i")
    if base[:1] in ("r", "h"):
        base = base[1:]
    if not base.startswith("fft") or base[3:] not in _FFT_KINDS:
        return None
    return base[3:]


def _default_axes(kind: str, ndim: int) -> tuple[int, ...]:
    if kind == "n":
        return tuple(range(ndim))
    return tuple(range(max(ndim - (2 if kind == "2" else 1), 0), ndim))
