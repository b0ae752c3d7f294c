"""CUDA streams and events as vector clocks, and the happens-before checker.

Everything the simulator runs executes at once on the host; what a GPU would run
asynchronously is tracked *logically*. Each stream has a vector clock: its own entry
counts the operations enqueued on it, the others say how far each other stream is known
to have completed before its next operation starts. The host has one clock too: what a
synchronisation (``stream.synchronize()``, ``Event.synchronize()``, ``Device.synchronize()``,
a blocking copy to the host) has shown to be complete. Work enqueued afterwards, from any
host thread, is ordered after it (it is complete: a fact, not a guess).

Ordering rules (CUDA programming guide, "Streams" > "Default Stream" and "Implicit
Synchronization"; CUDA runtime API, "Stream synchronization behavior"):

* operations on one stream run in order;
* the **legacy default stream** of a device waits for all work already enqueued on that
  device's *blocking* streams, and work enqueued later on a blocking stream waits for the
  legacy stream's work ("Any operation in the legacy stream ...");
* streams created with ``cudaStreamNonBlocking`` (``Stream(non_blocking=True)``) do not
  synchronise with the legacy stream;
* the **per-thread default stream** (``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1``) is a
  blocking stream of its thread: it synchronises with the legacy stream only, not with
  other streams ("The per-thread default stream is not a non-blocking stream and will
  synchronize with the legacy default stream if both are used in a program");
* devices are separate contexts: nothing orders one device's streams with another's except
  events, host synchronisation and NCCL collectives;
* ``cudaStreamWaitEvent`` orders a stream after the work an event captured.

Every memory access (kernel operand, copy source or destination) is checked against the
recorded accesses of its allocation's byte range: a read whose last writer, or a write whose
last reader or writer, was another stream not ordered before it raises
:class:`~cupysim.errors.StreamHazard`. Ranges are an array's byte extent (first to last
element), so interleaved strided views of one buffer count as overlapping.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable

from . import capture as _capture
from . import tracing as _trace
from .config import config
from .errors import CUDARuntimeError, StreamHazard

INVALID_HANDLE = 400  # cudaErrorInvalidResourceHandle

#: cupy_backends runtime constants: the stream handles CUDA reserves.
STREAM_NULL = 0
STREAM_LEGACY = 1  # cudaStreamLegacy
STREAM_PER_THREAD = 2  # cudaStreamPerThread

lock = threading.RLock()
_indices = itertools.count()
_handles = itertools.count(0x7F3A_0000_1000, 0x200)
host_clock: dict[int, int] = {}
_by_handle: dict[int, SimStream] = {}
_legacy: dict[int, SimStream] = {}
_on_device: dict[int, weakref.WeakSet] = {}
_tls = threading.local()


def _join(into: dict[int, int], other: dict[int, int]) -> None:
    for k, v in other.items():
        if into.get(k, 0) < v:
            into[k] = v


class SimStream:
    """One CUDA stream: its device, kind and vector clock."""

    __slots__ = (
        "__weakref__", "capture", "clock", "count", "device", "handle", "index", "kind", "label",
    )  # fmt: skip

    def __init__(self, device: int, kind: str, handle: int, label: str) -> None:
        self.device = device
        self.kind = kind  # "legacy" | "per-thread" | "blocking" | "non-blocking"
        self.handle = handle
        self.label = label
        self.index = next(_indices)
        self.count = 0
        self.clock: dict[int, int] = {}
        self.capture = None  # the capture sequence it belongs to (cupysim/capture.py)
        _on_device.setdefault(device, weakref.WeakSet()).add(self)

    @property
    def blocking(self) -> bool:
        return self.kind in ("blocking", "per-thread")

    def __repr__(self) -> str:
        return self.label


def legacy(device: int) -> SimStream:
    with lock:
        s = _legacy.get(device)
        if s is None:
            s = _legacy[device] = SimStream(
                device, "legacy", STREAM_NULL, f"the legacy default stream of device {device}"
            )
        return s


def per_thread(device: int) -> SimStream:
    table = getattr(_tls, "ptds", None)
    if table is None:
        table = _tls.ptds = {}
    s = table.get(device)
    if s is None:
        name = threading.current_thread().name
        with lock:
            s = table[device] = SimStream(
                device,
                "per-thread",
                STREAM_PER_THREAD,
                f"the per-thread default stream of device {device} (thread {name!r})",
            )
    return s


def create(device: int, non_blocking: bool) -> SimStream:
    """``cudaStreamCreateWithPriority``: a new stream on ``device`` with a fresh handle."""
    with lock:
        handle = next(_handles)
        kind = "non-blocking" if non_blocking else "blocking"
        s = SimStream(device, kind, handle, f"Stream {handle:#x} (device {device}, {kind})")
        _by_handle[handle] = s
        return s


def destroy(handle: int, _streams: dict = _by_handle) -> None:
    # atomic; called from __del__, also at interpreter exit, when this module's globals
    # may already be None (hence the table bound as a default)
    _streams.pop(handle, None)


def resolve(handle: int, device: int) -> SimStream:
    """The stream a handle names when ``device`` is current (0 is the default stream)."""
    if handle == STREAM_NULL:
        # cupy_backends/cuda/stream.pyx: with PTDS on, a current stream of 0 means
        # cudaStreamPerThread.
        return per_thread(device) if config.per_thread_default_stream else legacy(device)
    if handle == STREAM_LEGACY:
        return legacy(device)
    if handle == STREAM_PER_THREAD:
        return per_thread(device)
    s = _by_handle.get(handle)
    if s is None:
        raise CUDARuntimeError(INVALID_HANDLE)
    return s


def current_handle(device: int) -> int:
    """The calling thread's current stream handle on ``device`` (cupy_backends stream.pyx)."""
    table = getattr(_tls, "current", None)
    handle = 0 if table is None else table.get(device, 0)
    if handle == STREAM_NULL and config.per_thread_default_stream:
        return STREAM_PER_THREAD
    return handle


def set_current_handle(handle: int, device: int) -> None:
    table = getattr(_tls, "current", None)
    if table is None:
        table = _tls.current = {}
    table[device] = handle


def current(device: int) -> SimStream:
    """The stream work on ``device`` is enqueued on by the calling thread now."""
    return resolve(current_handle(device), device)


def ordered_before(stream: SimStream) -> dict[int, int]:
    """What the next operation enqueued on ``stream`` would be ordered after (no tick)."""
    with lock:
        clock = dict(stream.clock)
        _implicit(stream, clock)
        clock[stream.index] = stream.count
        return clock


def _implicit(stream: SimStream, clock: dict[int, int]) -> None:
    _join(clock, host_clock)
    if stream.kind == "legacy":
        for other in list(_on_device.get(stream.device, ())):
            if other.blocking:
                _join(clock, other.clock)
    elif stream.blocking:
        leg = _legacy.get(stream.device)
        if leg is not None:
            _join(clock, leg.clock)


def _run_until(clock: dict[int, int]) -> None:
    """Under CUPYSIM_DEFER, run the queued work ``clock`` covers (cupysim/defer.py)."""
    if config.defer:
        from . import defer

        defer.run_until(clock)


def _begin(stream: SimStream) -> dict[int, int]:
    """Enqueue one operation on ``stream``: apply the implicit orderings, tick its clock."""
    clock = stream.clock
    _implicit(stream, clock)
    stream.count += 1
    clock[stream.index] = stream.count
    return clock


class Access:
    """One recorded access to a byte range of an allocation."""

    __slots__ = ("hi", "lo", "name", "stream", "tick", "write")

    def __init__(self, lo, hi, stream, tick, write, name):
        self.lo, self.hi, self.stream, self.tick, self.write, self.name = (
            lo,
            hi,
            stream,
            tick,
            write,
            name,
        )


class Region:
    """Bytes ``[lo, hi)`` of an allocation (``records``: its access list), and what it is."""

    __slots__ = ("describe", "hi", "lo", "records")

    def __init__(self, records: list, lo: int, hi: int, describe: Callable[[], str]) -> None:
        self.records, self.lo, self.hi, self.describe = records, lo, hi, describe


def _conflict(region: Region, stream: SimStream, clock: dict[int, int], write: bool):
    for rec in region.records:
        if rec.hi <= region.lo or rec.lo >= region.hi or rec.stream is stream:
            continue
        if not (write or rec.write):
            continue
        idx = rec.stream.index
        if clock.get(idx, 0) >= rec.tick or host_clock.get(idx, 0) >= rec.tick:
            continue
        return rec
    return None


def _hazard(region: Region, stream: SimStream, write: bool, op: str, rec: Access):
    now = "write" if write else "read"
    then = "wrote" if rec.write else "read"
    return StreamHazard(
        f"stream hazard on {region.describe()}: {now} on {stream.label} (in {op!r}) is not "
        f"ordered after {rec.stream.label}, which {then} it (in {rec.name!r}); nothing "
        f"synchronises the two streams in between. Synchronize the first stream "
        f"(Stream.synchronize, Device.synchronize) or record an Event on it and make the "
        f"second wait for it (Stream.wait_event)."
    )


def _record(region: Region, stream: SimStream, tick: int, write: bool, op: str) -> None:
    lo, hi = region.lo, region.hi
    recs = region.records
    if write:
        recs[:] = [r for r in recs if not (lo <= r.lo and r.hi <= hi)]
    else:
        recs[:] = [
            r
            for r in recs
            if not (r.stream is stream and not r.write and lo <= r.lo and r.hi <= hi)
        ]
    if len(recs) > 32:  # work the host has seen complete orders before anything enqueued later
        recs[:] = [r for r in recs if host_clock.get(r.stream.index, 0) < r.tick]
    recs.append(Access(lo, hi, stream, tick, write, op))


def check(stream: SimStream, reads: list[Region], writes: list[Region], op: str) -> int:
    """Enqueue an operation reading ``reads`` and writing ``writes`` on ``stream``.

    Raises StreamHazard when an access is unordered with another stream's conflicting
    access; returns the operation's tick for :func:`commit` (0: captured into a CUDA graph,
    not enqueued: cupysim/capture.py).
    """
    if _capture.captures and _capture.on_enqueue(stream, reads, writes, op):
        return 0
    with lock:
        clock = _begin(stream)
        _run_until(clock)  # what it is ordered after has run before it reads memory
        for region in reads:
            rec = _conflict(region, stream, clock, False)
            if rec is not None:
                raise _hazard(region, stream, False, op, rec)
        for region in writes:
            rec = _conflict(region, stream, clock, True)
            if rec is not None:
                raise _hazard(region, stream, True, op, rec)
        if _trace.active:
            _trace.enqueued(stream, reads, writes, op)
        return stream.count


def commit(stream: SimStream, reads: list[Region], writes: list[Region], op: str, tick: int):
    """Record the accesses of a checked operation (once it has run)."""
    if not tick:  # captured: it did not run on the stream
        return
    with lock:
        for region in reads:
            _record(region, stream, tick, False, op)
        for region in writes:
            _record(region, stream, tick, True, op)


def operation(stream: SimStream, reads: list[Region], writes: list[Region], op: str) -> None:
    """:func:`check` and :func:`commit` in one (the operation cannot fail in between)."""
    commit(stream, reads, writes, op, check(stream, reads, writes, op))


# -- synchronisation ----------------------------------------------------------------------
def _settle() -> None:
    """The host clock advanced: copies to and from host memory it now knows complete land."""
    from . import hostcopy

    hostcopy.settle()


def synchronize(stream: SimStream) -> None:
    """The host waits for everything enqueued on ``stream`` (cudaStreamSynchronize)."""
    if _capture.captures:
        _capture.on_sync(stream)
    with lock:
        _run_until(stream.clock)
        _join(host_clock, stream.clock)
        _settle()
    if _trace.active:
        _trace.host_sync(stream.device, stream.label)


def synchronize_device(device: int) -> None:
    """cudaDeviceSynchronize: the host waits for every stream of ``device``."""
    if _capture.captures:
        _capture.on_device_sync(device)
    with lock:
        legacy(device)
        every: dict[int, int] = {}
        for s in list(_on_device.get(device, ())):
            _join(every, s.clock)
        _run_until(every)
        _join(host_clock, every)
        _settle()
    if _trace.active:
        _trace.host_sync(device, None)


class SimEvent:
    """A CUDA event: the clock of the stream it was last recorded on (None: never)."""

    __slots__ = ("__weakref__", "capture", "clock", "handle")

    def __init__(self) -> None:
        self.clock: dict[int, int] | None = None
        self.capture = None  # (capture, stream index, steps) when recorded in a capture
        self.handle = next(_handles)


def record(event: SimEvent, stream: SimStream) -> None:
    """cudaEventRecord: the event completes after all work enqueued on ``stream`` so far."""
    if _capture.captures and _capture.on_record(event, stream):
        return
    with lock:
        event.clock = dict(_begin(stream))


def wait_event(stream: SimStream, event: SimEvent) -> None:
    """cudaStreamWaitEvent: later work on ``stream`` waits for the event's work."""
    if _capture.captures and _capture.on_wait(stream, event):
        return
    with lock:
        if event.clock is not None:
            _join(stream.clock, event.clock)


def synchronize_event(event: SimEvent) -> None:
    """cudaEventSynchronize / a successful cudaEventQuery: the host saw the work complete."""
    if _capture.captures:
        _capture.on_event_sync(event)
    with lock:
        if event.clock is not None:
            _run_until(event.clock)
            _join(host_clock, event.clock)
            _settle()
    if _trace.active:
        _trace.host_sync(None, None)
