"""CUDA stream capture and graph replay (``Stream.begin_capture`` / ``end_capture``,
``Graph.launch``), as CuPy's source and the CUDA programming guide describe them.

Sources: cupy/cuda/stream.pyx (``begin_capture``, ``end_capture``, ``is_capturing``,
``launch_host_func``), cupy/cuda/graph.pyx (``Graph.launch``/``upload``),
cupy_backends/cuda/api/runtime.pyx (``streamBeginCapture``, ``streamEndCapture``,
``streamIsCapturing``, the ``streamCaptureMode*`` constants), cupy/cuda/memory.pyx (the
copies refused while the current stream captures), cupy_backends/cuda/libs/cublas.pyx,
cusparse.pyx, cusolver.pyx, curand.pyx (``setStream`` refuses a capturing stream), and the
CUDA C++ programming guide, "CUDA Graphs" > "Stream Capture" (below: *the guide*).

The model:

* **Recorded, not run.** An operation enqueued on a capturing stream becomes a node of the
  capture. The simulator still runs it once, at once, to learn what it writes (so that the
  shapes, dtypes and values later captured work computes from stay those a real launch
  would see); when the capture ends, memory the captured work wrote gets back the bytes it
  held before (on a GPU the work has not run: an in-place update is not applied yet), and
  memory allocated during the capture is filled with 0xFF bytes (NaN in every float type,
  -1 in signed integers): a captured result read before a replay is garbage, and here
  fails the code that reads it. (Work on *other* streams that reads that memory during the
  capture sees the captured values; on a GPU it would see the old ones.)
* **Replay** (``Graph.launch(stream)``) runs the nodes in capture order on the same
  buffers, as one operation of the launch stream: the happens-before checker sees the
  union of their reads and writes, the trace one ``graph`` launch (its nodes listed with
  ``in_graph`` set). A node's replay holds no reference to the arrays it touches, as a
  graph holds none on a GPU; the memory must be kept alive by its owner.
* **Memory freed since capture**: every byte range a graph touches must belong, at the end
  of the capture, to a live allocation (an operand of some node, or memory the capture
  allocated and still holds), and that allocation must still be alive at each replay.
  A replay touching memory freed since (its owner collected, its block released to the
  driver) raises :class:`GraphMemoryError`. Memory freed *during* the capture and not
  reused by it belongs to the pool; a replay after the pool handed it out again raises
  too. On a GPU both corrupt whoever owns the memory now, silently: the simulator is
  stricter (docs/contributing_gpu.rst).
* **Prohibited operations** (the guide, "Prohibited and Unhandled Operations"):
  synchronising or querying a capturing stream, a captured event, or the device of a
  capturing stream fails with ``cudaErrorStreamCaptureUnsupported`` (900) and invalidates
  the capture; ``end_capture`` then raises ``cudaErrorStreamCaptureInvalidated`` (901) and
  leaves capture mode (the guide, "Invalidation"). Work enqueued on the legacy default
  stream while a blocking stream of its device captures fails with
  ``cudaErrorStreamCaptureImplicit`` (906) and invalidates it; ``streamIsCapturing`` of the
  legacy stream then raises 906 without invalidating (CuPy's test_graph.py
  ``test_null_stream_cannot_capture``). Capture on the legacy stream is refused by CuPy
  itself (RuntimeError, stream.pyx ``begin_capture``).
* **CuPy's own guards** come first, with CuPy's exceptions: host<->device copies and
  synchronous memory calls raise ``RuntimeError("the current stream is capturing, ...")``
  before reaching CUDA (memory.pyx), so ``.get()``, ``cupy.asnumpy``, ``float()``,
  ``.item()``, uploads and data-dependent output sizes raise that and leave the capture
  valid (test_graph.py ``test_stream_capture_failure5`` ends its capture normally); cuBLAS,
  cuSPARSE, cuSOLVER and cuRAND raise ``NotImplementedError("calling <lib> API during
  stream capture is currently unsupported")``. cuFFT is captured.
* **Cross-stream work** (the guide, "Cross-stream Dependencies and Events"): an event
  recorded on a capturing stream is a captured event; a stream waiting on it joins the
  capture. ``end_capture`` on a joined stream fails with
  ``cudaErrorStreamCaptureUnmatched`` (903) and invalidates; on the origin stream with a
  joined stream whose work was not waited on again, ``cudaErrorStreamCaptureUnjoined``
  (904). Waiting on an event recorded outside the capture fails with
  ``cudaErrorStreamCaptureIsolation`` (905), on another capture's event with
  ``cudaErrorStreamCaptureMerge`` (902).
* **Modes** (runtime API, ``cudaStreamBeginCapture`` / ``cudaThreadExchangeStreamCaptureMode``):
  under ``streamCaptureModeGlobal`` no thread, and under ``streamCaptureModeThreadLocal``
  not the capturing thread, may call a potentially unsafe API: here ``cudaMalloc`` (a miss
  of the memory pool) fails with 900. ``streamCaptureModeRelaxed``, CuPy's default,
  allows it.

An operation the simulator cannot replay raises :class:`NotCapturable` (never runs
silently): each path offers its replay with :func:`offer` before it enqueues.
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from . import streams as _streams
from . import tracing as _trace
from .config import config
from .errors import CUDARuntimeError

#: cupy_backends/cuda/api/runtime.pxd: cudaStreamCaptureMode and cudaStreamCaptureStatus.
MODE_GLOBAL, MODE_THREAD_LOCAL, MODE_RELAXED = 0, 1, 2
STATUS_NONE, STATUS_ACTIVE, STATUS_INVALIDATED = 0, 1, 2

ILLEGAL_STATE = 401  # cudaErrorIllegalState
UNSUPPORTED = 900  # cudaErrorStreamCaptureUnsupported
INVALIDATED = 901  # cudaErrorStreamCaptureInvalidated
MERGE = 902  # cudaErrorStreamCaptureMerge
UNMATCHED = 903  # cudaErrorStreamCaptureUnmatched
UNJOINED = 904  # cudaErrorStreamCaptureUnjoined
ISOLATION = 905  # cudaErrorStreamCaptureIsolation
IMPLICIT = 906  # cudaErrorStreamCaptureImplicit

#: What a captured operation leaves in the memory it would write (hostcopy.POISON's bytes).
POISON = 0xFF

#: Captures in progress (tested first by every hook: empty, nothing else is done).
captures: list[Capture] = []
_tls = threading.local()


class NotCapturable(RuntimeError):
    """An operation the simulator cannot record into a graph (a gap of the simulator, not a
    CUDA error): it is refused rather than run outside the graph."""


class GraphMemoryError(RuntimeError):
    """A graph replay would touch memory freed since the capture (on a GPU: silent
    corruption of whoever owns it now)."""


class _Discard(_trace.Trace):
    """Keeps the trace hooks firing during a capture (captured nodes keep their events)."""

    def _add(self, event) -> None:
        pass


_DISCARD = _Discard()


class _Owner:
    """One operand of a node: its byte range, its allocation and its driver storage."""

    __slots__ = ("hi", "lo", "mem", "storage")

    def __init__(self, mem: Any, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        self.mem = weakref.ref(mem)
        storage = getattr(mem, "_storage", None)
        self.storage = None if storage is None else weakref.ref(storage)


class Node:
    """One captured operation: its replay, accesses, owners and trace event."""

    __slots__ = ("event", "label", "op", "owners", "reads", "replay", "writes")

    def __init__(self, op, label, replay, reads, writes, owners, event) -> None:
        self.op, self.label, self.replay = op, label, replay
        self.reads, self.writes, self.owners, self.event = reads, writes, owners, event


class _Offer:
    __slots__ = ("label", "op", "owners", "replay")

    def __init__(self, op, replay, owners, label) -> None:
        self.op, self.replay, self.owners, self.label = op, replay, owners, label


class Capture:
    """One capture sequence, from ``cudaStreamBeginCapture`` to ``cudaStreamEndCapture``."""

    def __init__(self, origin: _streams.SimStream, mode: int) -> None:
        self.origin, self.mode = origin, mode
        self.thread = threading.get_ident()
        self.members: list[_streams.SimStream] = [origin]
        self.nodes: list[Node] = []
        self.invalid: int | None = None  # the status that invalidated it
        self.tail: dict[int, int] = {origin.index: 0}  # steps per member stream
        self.joined: dict[int, int] = {}  # steps of a member a wait has joined back
        self.snapshots: dict[int, tuple[weakref.ref, np.ndarray, list]] = {}
        self.fresh: list[tuple[int, int]] = []  # allocations made during the capture
        self.host_funcs: list = []

    def invalidate(self, status: int) -> None:
        if self.invalid is None:
            self.invalid = status


# -- hooks of the simulator's paths ------------------------------------------------------
def capturing(stream: _streams.SimStream) -> bool:
    """Whether work enqueued on ``stream`` now is captured."""
    return bool(captures) and stream.capture is not None


def current_capturing() -> bool:
    """Whether the calling thread's current stream (on the current device) captures."""
    if not captures:
        return False
    from . import devices

    return capturing(_streams.current(devices.current()))


def offer(op: str, replay: Callable[[], Any], owners=(), label: str | None = None) -> None:
    """The next operation ``op`` this thread enqueues replays as ``replay()`` (which must
    hold no array: views of the memory only). ``owners``: ``(memory, lo, hi)`` of each
    operand, the allocations the replay needs alive."""
    _tls.offer = _Offer(op, replay, owners, label or op)


def withdraw() -> None:
    _tls.offer = None


def refuse_copy(direction: str, stream: _streams.SimStream | None = None) -> None:
    """cupy/cuda/memory.pyx: a host copy on a capturing stream (``stream``, the current one
    by default) or a synchronous call while the current stream captures raises RuntimeError
    before reaching CUDA (the capture stays valid)."""
    if capturing(stream) if stream is not None else current_capturing():
        what = {"h2d": "H2D transfers", "d2h": "D2H transfers"}.get(
            direction, "synchronous API calls"
        )
        raise RuntimeError(f"the current stream is capturing, so {what} are disallowed")


def refuse_library(library: str) -> None:
    """cupy_backends/cuda/libs/<lib>.pyx ``setStream``: NotImplementedError while the
    current stream captures (cuBLAS, cuSPARSE, cuSOLVER, cuRAND)."""
    if current_capturing():
        raise NotImplementedError(
            f"calling {library} API during stream capture is currently unsupported"
        )


def on_enqueue(stream: _streams.SimStream, reads, writes, op: str) -> bool:
    """streams.check: True when ``op`` was captured (not enqueued), False otherwise."""
    cap = stream.capture
    if cap is None:
        if stream.kind == "legacy":
            _legacy_use(stream.device)
        withdraw()
        return False
    o = getattr(_tls, "offer", None)
    _tls.offer = None
    if cap.invalid is not None:
        raise CUDARuntimeError(INVALIDATED)
    if o is None or o.op != op:
        raise NotCapturable(
            f"cupysim cannot capture {op!r} into a CUDA graph (the simulator has no replay "
            f"for it); it was not run. Run it outside the capture."
        )
    event = _trace.captured(stream, reads, writes, op) if _trace.active else None
    owners = [_Owner(mem, lo, hi) for mem, lo, hi in o.owners if mem is not None]
    cap.nodes.append(Node(op, o.label, o.replay, list(reads), list(writes), owners, event))
    cap.tail[stream.index] = cap.tail.get(stream.index, 0) + 1
    for region in writes:
        _snapshot(cap, region)
    return True


def _snapshot(cap: Capture, region) -> None:
    from . import memory

    if region.hi <= region.lo:
        return
    found = memory.find(region.lo)
    if found is None:
        return
    storage = found[0]
    snap = cap.snapshots.get(id(storage))
    if snap is None or snap[0]() is not storage:
        snap = cap.snapshots[id(storage)] = (weakref.ref(storage), storage.host.copy(), [])
    snap[2].append((region.lo - storage.ptr, region.hi - storage.ptr))


def _poison(cap: Capture) -> None:
    """The captured work has not run: memory it wrote holds what it held before, and
    memory allocated during the capture holds garbage."""
    from . import memory

    for ref, before, spans in cap.snapshots.values():
        storage = ref()
        if storage is None:
            continue
        for lo, hi in spans:
            storage.host[lo:hi] = before[lo:hi]
    cap.snapshots.clear()
    for ptr, size in cap.fresh:
        found = memory.find(ptr)
        if found is not None:
            storage, offset = found
            storage.host[offset : offset + size] = POISON
    cap.fresh.clear()


def allocated(ptr: int, size: int) -> None:
    """An allocation for work on a capturing stream: on a GPU it holds garbage until a
    replay writes it."""
    from . import devices

    cap = _streams.current(devices.current()).capture
    if cap is not None:
        cap.fresh.append((ptr, size))


def _legacy_use(device: int) -> None:
    """Work on the legacy stream while a blocking stream of ``device`` captures (the
    guide: "any attempted use of the legacy stream is invalid")."""
    hit = [c for c in captures if any(s.blocking and s.device == device for s in c.members)]
    if hit:
        for c in hit:
            c.invalidate(IMPLICIT)
        raise CUDARuntimeError(IMPLICIT)


def on_sync(stream: _streams.SimStream) -> None:
    """cudaStreamSynchronize of a capturing stream (or of the legacy one: implicit)."""
    cap = stream.capture
    if cap is not None:
        cap.invalidate(UNSUPPORTED)
        raise CUDARuntimeError(UNSUPPORTED)
    if stream.kind == "legacy":
        _legacy_use(stream.device)


def on_device_sync(device: int) -> None:
    """cudaDeviceSynchronize while a stream of ``device`` captures."""
    hit = [c for c in captures if any(s.device == device for s in c.members)]
    if hit:
        for c in hit:
            c.invalidate(UNSUPPORTED)
        raise CUDARuntimeError(UNSUPPORTED)


def query_status(stream: _streams.SimStream) -> int | None:
    """cudaStreamQuery of a capturing stream: 900, and the capture is invalid."""
    cap = stream.capture
    if cap is None:
        return None
    cap.invalidate(UNSUPPORTED)
    return UNSUPPORTED


def _event_capture(event) -> Capture | None:
    info = getattr(event, "capture", None)
    if info is None:
        return None
    cap = info[0]
    return cap if cap in captures else None


def on_event_sync(event) -> None:
    """cudaEventSynchronize / cudaEventQuery of a captured event."""
    cap = _event_capture(event)
    if cap is not None:
        cap.invalidate(UNSUPPORTED)
        raise CUDARuntimeError(UNSUPPORTED)


def on_record(event, stream: _streams.SimStream) -> bool:
    """cudaEventRecord: True when the event was captured (it marks a point of a capture)."""
    cap = stream.capture
    if cap is None:
        if stream.kind == "legacy":
            _legacy_use(stream.device)
        event.capture = None
        return False
    if cap.invalid is not None:
        raise CUDARuntimeError(INVALIDATED)
    event.capture = (cap, stream.index, cap.tail.get(stream.index, 0))
    return True


def on_wait(stream: _streams.SimStream, event) -> bool:
    """cudaStreamWaitEvent: True when the wait was captured (the stream joins or rejoins)."""
    ecap = _event_capture(event)
    cap = stream.capture
    if ecap is None:
        if cap is not None:  # a dependency on work outside the capture
            cap.invalidate(ISOLATION)
            raise CUDARuntimeError(ISOLATION)
        return False
    if cap is not None and cap is not ecap:
        cap.invalidate(MERGE)
        ecap.invalidate(MERGE)
        raise CUDARuntimeError(MERGE)
    _, index, steps = event.capture
    if cap is None:  # a fork: the stream joins the capture
        stream.capture = ecap
        ecap.members.append(stream)
        ecap.tail[stream.index] = ecap.tail.get(stream.index, 0) + 1
    if index != stream.index:
        ecap.joined[index] = max(ecap.joined.get(index, 0), steps)
    return True


def on_malloc() -> None:
    """cudaMalloc: a potentially unsafe call under the global and thread-local modes."""
    me = threading.get_ident()
    for c in captures:
        if c.mode == MODE_GLOBAL or (c.mode == MODE_THREAD_LOCAL and c.thread == me):
            c.invalidate(UNSUPPORTED)
            raise CUDARuntimeError(UNSUPPORTED)


# -- the runtime API -----------------------------------------------------------------------
def begin(stream: _streams.SimStream, mode: int) -> None:
    """cudaStreamBeginCapture."""
    if mode not in (MODE_GLOBAL, MODE_THREAD_LOCAL, MODE_RELAXED):
        raise CUDARuntimeError(1)  # cudaErrorInvalidValue
    with _streams.lock:
        if stream.capture is not None:
            raise CUDARuntimeError(ILLEGAL_STATE)
        if stream.kind == "legacy":
            # the guide: the legacy stream cannot be captured (CuPy refuses it first)
            raise CUDARuntimeError(UNSUPPORTED)
        cap = Capture(stream, mode)
        stream.capture = cap
        if not captures:
            _trace.active.append(_DISCARD)
        captures.append(cap)


def status(stream: _streams.SimStream) -> int:
    """cudaStreamIsCapturing's status (906 raised for the legacy stream, see the module)."""
    cap = stream.capture
    if cap is None:
        if stream.kind == "legacy" and any(
            s.blocking and s.device == stream.device for c in captures for s in c.members
        ):
            raise CUDARuntimeError(IMPLICIT)
        return STATUS_NONE
    return STATUS_ACTIVE if cap.invalid is None else STATUS_INVALIDATED


def _finish(cap: Capture) -> None:
    for s in cap.members:
        s.capture = None
    if cap in captures:
        captures.remove(cap)
    if not captures and _DISCARD in _trace.active:
        _trace.active.remove(_DISCARD)
    _poison(cap)


def end(stream: _streams.SimStream) -> Graph:
    """cudaStreamEndCapture: the graph, or the error that ended the capture."""
    with _streams.lock:
        cap = stream.capture
        if cap is None:
            raise CUDARuntimeError(ILLEGAL_STATE)
        if stream is not cap.origin:
            cap.invalidate(UNMATCHED)
            raise CUDARuntimeError(UNMATCHED)
        _finish(cap)
        if cap.invalid is not None:
            raise CUDARuntimeError(INVALIDATED)
        for s in cap.members[1:]:
            if cap.tail.get(s.index, 0) > cap.joined.get(s.index, 0):
                raise CUDARuntimeError(UNJOINED)
        return Graph(cap, stream.device)


def launch_host_func(stream: _streams.SimStream, callback: Callable[[], Any]) -> None:
    """cudaLaunchHostFunc: ``callback()`` once the stream's work so far is done; on a
    capturing stream, a host node of the graph (CuPy keeps the function and its argument
    alive in the graph, stream.pyx ``launch_host_func``)."""
    op = "cudaLaunchHostFunc"
    if capturing(stream):
        offer(op, callback, label="host function")
    tick = _streams.check(stream, [], [], op)
    if not tick:
        return
    if config.defer:
        from . import defer

        defer.enqueue(stream, tick, callback)
    else:
        callback()
    _streams.commit(stream, [], [], op, tick)


# -- graphs --------------------------------------------------------------------------------
class Graph:
    """A captured graph (``cudaGraph_t`` and its instantiation): nodes and the memory they
    need alive."""

    def __init__(self, cap: Capture, device: int) -> None:
        self.device = device
        self.nodes = cap.nodes
        self.owners, self.orphans = _owners(cap.nodes)
        self.reads = _unique(r for n in self.nodes for r in n.reads)
        self.writes = _unique(w for n in self.nodes for w in n.writes)
        self.taken: list[tuple[int, int]] = []  # orphan ranges the pool handed out since
        if self.orphans:
            graphs_with_orphans.add(self)

    def check_memory(self) -> None:
        for owner in self.owners:
            storage = None if owner.storage is None else owner.storage()
            if owner.mem() is None or (owner.storage is not None and storage is None):
                raise GraphMemoryError(
                    f"graph launch touches {owner.hi - owner.lo} bytes at {owner.lo:#x}, "
                    "freed since the capture: on a GPU the replay would overwrite whatever "
                    "owns that memory now. Keep every array the captured work uses alive "
                    "while the graph is launched."
                )
        if self.taken:
            lo, hi = self.taken[0]
            raise GraphMemoryError(
                f"graph launch touches {hi - lo} bytes at {lo:#x}, memory freed during the "
                "capture (a temporary) and handed out by the memory pool since: on a GPU "
                "the replay would overwrite the new owner. Keep the capture's temporaries "
                "alive (allocate them from memory the graph owns) while the graph is "
                "launched."
            )

    def launch(self, stream: _streams.SimStream) -> None:
        """cudaGraphLaunch on ``stream``: one operation running every node in order."""
        if stream.capture is not None:
            raise NotCapturable(
                "cupysim cannot capture a graph launch into another graph (a child graph "
                "node); it was not run."
            )
        self.check_memory()
        if _trace.active:
            _trace.note(op="cudaGraphLaunch", kind="graph", nodes=self.nodes)
        tick = _streams.check(stream, self.reads, self.writes, "cudaGraphLaunch")
        if config.defer:
            from . import defer

            defer.enqueue(stream, tick, self._run)
        else:
            self._run()
        _streams.commit(stream, self.reads, self.writes, "cudaGraphLaunch", tick)

    def _run(self) -> None:
        for node in self.nodes:
            node.replay()

    def dot(self, verbose: bool) -> str:
        """A DOT description of the nodes (``cudaGraphDebugDotPrint``)."""
        lines = ["digraph cupysim_graph {"]
        for i, node in enumerate(self.nodes):
            label = node.label
            if verbose:
                label += f"\\n{node.op}: {len(node.reads)} reads, {len(node.writes)} writes"
            lines.append(f'  node{i} [label="{label}"];')
            if i:
                lines.append(f"  node{i - 1} -> node{i};")
        lines.append("}")
        return "\n".join(lines) + "\n"


def _unique(regions) -> list:
    seen, out = set(), []
    for r in regions:
        key = (id(r.records), r.lo, r.hi)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _owners(nodes: list[Node]) -> tuple[list[_Owner], list[tuple[int, int]]]:
    """The live allocations covering every range the nodes touch (at the end of the
    capture), and the ranges no live allocation covers (freed during the capture)."""
    owners, dead = [], []
    for node in nodes:
        for o in node.owners:
            (owners if o.mem() is not None else dead).append(o)
    alive: dict[int, _Owner] = {}
    for o in owners:
        alive.setdefault(id(o.mem()), o)
    spans = []
    for o in alive.values():
        m = o.mem()
        spans.append((m.ptr, m.ptr + max(m.size, 1)))
    orphans = []
    for o in dead:
        if not any(lo <= o.lo and o.hi <= hi for lo, hi in spans):
            orphans.append((o.lo, o.hi))
    return list(alive.values()), orphans


#: Graphs whose capture freed memory it did not reuse (watched by the pool's malloc).
graphs_with_orphans: weakref.WeakSet = weakref.WeakSet()


def handed_out(ptr: int, size: int) -> None:
    """The memory pool handed out ``size`` bytes at ``ptr``: a graph whose capture freed a
    temporary there can no longer be replayed safely."""
    for g in list(graphs_with_orphans):
        for lo, hi in g.orphans:
            if lo < ptr + size and ptr < hi:
                g.taken.append((lo, hi))


# -- replays of the simulator's bodies -----------------------------------------------------
class Ghost:
    """An array as a replay sees it: its memory's view, no reference to its allocation."""

    __slots__ = ("_npv",)

    def __init__(self, view: np.ndarray) -> None:
        self._npv = view

    @property
    def _np(self) -> np.ndarray:
        return self._npv

    def __getattr__(self, name: str) -> Any:
        return getattr(self._npv, name)


def detach(obj: Any) -> Any:
    """``obj`` (a launch body that recomputes from its operands) with every array replaced
    by its :class:`Ghost`: the replay must not keep the arrays' memory alive."""
    from cupy._core.core import _ndarray_base

    if isinstance(obj, _ndarray_base):
        return Ghost(obj._npv)
    if isinstance(obj, types.FunctionType):
        if not obj.__closure__:
            return obj
        cells = tuple(
            types.CellType(detach(c.cell_contents)) if _filled(c) else types.CellType()
            for c in obj.__closure__
        )
        f = types.FunctionType(obj.__code__, obj.__globals__, obj.__name__, obj.__defaults__, cells)
        f.__kwdefaults__ = obj.__kwdefaults__
        return f
    if isinstance(obj, types.MethodType):
        return types.MethodType(detach(obj.__func__), detach(obj.__self__))
    if type(obj) in (list, tuple):
        return type(obj)(detach(v) for v in obj)
    if type(obj) is dict:
        return {k: detach(v) for k, v in obj.items()}
    return obj


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def owners_of(arrays) -> list[tuple[Any, int, int]]:
    """``(memory, lo, hi)`` of each array: what a replay of an operation on them needs."""
    out = []
    for x in arrays:
        data = getattr(x, "data", None)
        mem = getattr(data, "mem", None)
        if mem is None or not hasattr(x, "_region"):
            continue
        r = x._region()
        out.append((mem, r.lo, r.hi))
    return out


def offer_run(name: str, kind: str, arrays, body, replay) -> None:
    """core._run on a capturing stream: refuse what CuPy refuses, offer the replay.

    ``replay``: True when ``body`` recomputes from its operands (replayed detached), a
    callable recomputing the values ``body`` writes (detached), or None (not capturable).
    """
    if kind == "library":
        library = _trace.library_of(name)
        if library != "cuFFT":
            refuse_library(library)
    if replay is None:
        return  # streams.check refuses it: NotCapturable
    if replay is True:
        replay = body
    elif kind == "elementwise" and not isinstance(replay, Recompute):
        from . import ftz

        replay = ftz.wrap(replay, arrays)  # CuPy compiles with -ftz=true, as _run's body
    label = f"cupy_{name}" if kind == "elementwise" else name
    offer(name, detach(replay), owners_of(arrays), label)


class Recompute:
    """The replay of a value NumPy computed before its launch (core._apply): compute it
    again from the operands' views, and write the outputs the launch created."""

    __slots__ = ("args", "flush", "fn", "kwargs", "positions", "targets")

    def __init__(self, recompute, res, found, meta: bool, targets: list) -> None:
        self.fn, self.args, self.kwargs, self.flush = recompute
        self.targets = targets
        new = [i for i, leaf in enumerate(_leaves(res, meta)) if _is_new(leaf, found)]
        if len(new) != len(targets):
            raise NotCapturable("cupysim cannot capture this operation: its outputs are unclear")
        self.positions = new

    def __call__(self) -> None:
        from . import ftz

        with ftz.flushing(self.flush):
            res = self.fn(*self.args, **self.kwargs)
        leaves = _leaves(res, False)
        for i, target in zip(self.positions, self.targets, strict=True):
            target[...] = leaves[i]


_SCALARS = (np.generic, bool, int, float, complex)


def _leaves(r, meta: bool) -> list:
    """The values of a NumPy result in the order core._convert visits them."""
    if isinstance(r, np.ndarray):
        return [r]
    if isinstance(r, (tuple, list)):
        return [leaf for v in r for leaf in _leaves(v, meta)]
    if not meta and isinstance(r, _SCALARS):
        return [r]
    return []


def _is_new(leaf, found) -> bool:
    """Whether core._convert makes a new array of ``leaf`` (not an operand or its view)."""
    if not isinstance(leaf, np.ndarray):
        return True
    from cupy._core.core import _view_source

    return not any(leaf is x._npv for x in found) and _view_source(leaf, found) is None
