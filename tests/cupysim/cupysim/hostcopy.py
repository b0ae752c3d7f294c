"""Host memory touched by asynchronous copies, until the host knows they are complete.

``cudaMemcpyAsync`` between the device and page-locked host memory returns at once; the copy
reads (host to device) or writes (device to host) the host buffer whenever its stream gets
to it. Between pageable host memory and the device the CUDA runtime API only says the call
"might be synchronous with respect to host" ("API synchronization behavior"), so a program
cannot count on it either: both kinds are tracked here. Until the host has seen the copy
complete (a synchronisation of its stream, device or a later event: streams.host_clock),
the host may neither write a buffer a copy reads nor read or write one a copy writes.

The simulator cannot trap a Python write or read of host memory. It models the copies at
the points where it sees host buffers:

* a copy **from** the host keeps a snapshot of the bytes at issue. When the host learns the
  copy completed, or when a later copy touches the same bytes, the buffer must still hold
  them: if not, the host wrote it while the copy was in flight, and the copy read torn data
  (on a GPU, whichever bytes the DMA engine saw) -> :class:`~cupysim.errors.StreamHazard`;
* a copy **to** the host fills the destination with 0xFF bytes (NaN in every float type, -1
  in every signed integer) and delivers the values when the host learns it completed: a
  premature host read sees garbage, as it would see stale bytes on a GPU, and a host write
  in between is found at delivery (the copy would have overwritten it) -> StreamHazard;
* a new copy touching bytes an unfinished copy touches, not ordered after it on the device,
  raises StreamHazard at once (a copy writing the host ordered after one reading it settles
  the first).

Only host memory the simulator can keep alive is tracked: NumPy arrays (``ndarray.set``,
``ndarray.get``, ``cupy.asarray`` of a pinned array) and simulated pinned allocations
(``MemoryPointer.copy_*_host_async`` with a pinned pointer). A raw pointer to pageable memory
is copied at once, as before.
"""

from __future__ import annotations

import numpy as np

from . import memory as _memory
from . import streams as _streams
from .errors import StreamHazard

#: Bytes a copy to the host leaves in its destination until the host sees it complete.
POISON = 0xFF


class _Copy:
    """One copy in flight: the host bytes it touches and what they must hold."""

    __slots__ = ("data", "expect", "host", "lo", "op", "stream", "tick", "to_host")

    def __init__(self, host, stream, tick, to_host, data, op) -> None:
        # A uint8 view of the host bytes that keeps them alive. For pinned memory, a view of
        # the allocation itself, not of the caller's array: holding that array would keep a
        # pooled block out of the pinned pool, and hide a block reused while still in flight.
        pinned = pinned_view(host.ctypes.data, host.nbytes)
        self.host = host if pinned is None else pinned
        self.lo = host.ctypes.data
        self.stream, self.tick, self.to_host, self.op = stream, tick, to_host, op
        self.data = data  # the device bytes a copy to the host delivers
        self.expect = host.copy()  # what the host bytes must hold while it is in flight

    @property
    def hi(self) -> int:
        return self.lo + self.host.nbytes

    def touched(self) -> bool:
        return not np.array_equal(self.host, self.expect)

    def complete(self) -> bool:
        return _streams.host_clock.get(self.stream.index, 0) >= self.tick


_inflight: list[_Copy] = []


def host_view(arr: np.ndarray) -> np.ndarray | None:
    """A uint8 view of a contiguous NumPy array's bytes (None: not contiguous or empty)."""
    if arr.size == 0 or not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        return None
    return arr.reshape(-1, order="A").view(np.uint8)


def pinned_array(arr: np.ndarray) -> np.ndarray | None:
    """:func:`host_view` of ``arr`` if its bytes are simulated pinned memory."""
    view = host_view(arr)
    return None if view is None or pinned_view(view.ctypes.data, view.nbytes) is None else view


def pinned_view(ptr: int, size: int) -> np.ndarray | None:
    """A view of ``size`` bytes at ``ptr`` if they lie in a simulated pinned allocation."""
    found = _memory.find(ptr)
    if found is None or found[0].kind != "pinned" or found[1] + size > found[0].size:
        return None
    storage, offset = found
    return storage.host[offset : offset + size]


def _describe(c: _Copy) -> str:
    return f"{c.host.nbytes} bytes of host memory at {c.lo:#x}"


def _touched_hazard(c: _Copy) -> StreamHazard:
    if c.to_host:
        what = (
            f"the host wrote {_describe(c)} while {c.op!r} on {c.stream.label} was still "
            "writing it (the copy overwrites the host's values when it lands)"
        )
    else:
        what = (
            f"the host wrote {_describe(c)} while {c.op!r} on {c.stream.label} was still "
            "reading it: the copy read torn data"
        )
    return StreamHazard(
        f"stream hazard on host memory: {what}. Wait for the copy before touching its host "
        "buffer (Stream.synchronize, or Event.synchronize on an event recorded after it)."
    )


def _deliver(c: _Copy) -> None:
    if c.to_host:
        c.host[...] = c.data


def settle() -> None:
    """Deliver every copy the host now knows complete; raise if the host touched one's bytes.

    Called (with ``streams.lock`` held) whenever ``streams.host_clock`` advances.
    """
    if not _inflight:
        return
    done = [c for c in _inflight if c.complete()]
    if not done:
        return
    _inflight[:] = [c for c in _inflight if not c.complete()]
    hazard = None
    for c in done:
        if hazard is None and c.touched():
            hazard = _touched_hazard(c)
        _deliver(c)
    if hazard is not None:
        raise hazard


def _conflicts(host: np.ndarray, stream, clock: dict[int, int], to_host: bool, op: str):
    lo = host.ctypes.data
    hi = lo + host.nbytes
    keep = []
    for i, c in enumerate(_inflight):
        if c.hi <= lo or c.lo >= hi:
            keep.append(c)
            continue
        if c.touched():
            _inflight[:] = keep + _inflight[i + 1 :]
            raise _touched_hazard(c)
        ordered = c.stream is stream or clock.get(c.stream.index, 0) >= c.tick
        if not (to_host or c.to_host):  # two reads of the same bytes
            keep.append(c)
            continue
        if not ordered:
            now = "writes" if to_host else "reads"
            then = "writes" if c.to_host else "reads"
            raise StreamHazard(
                f"stream hazard on host memory: {op!r} on {stream.label} {now} "
                f"{_describe(c)}, which {c.op!r} on {c.stream.label} still {then}; nothing "
                "orders the two copies. Synchronize the first copy's stream, or make the "
                "second stream wait for an event recorded after it."
            )
        _deliver(c)  # the device runs it first: its bytes are there for the new copy
    _inflight[:] = keep


def from_host(stream, host: np.ndarray | None, op: str) -> None:
    """A copy on ``stream`` (just checked: its tick is ``stream.count``) reads ``host``."""
    if host is None:
        return
    with _streams.lock:
        _conflicts(host, stream, stream.clock, False, op)
        _inflight.append(_Copy(host, stream, stream.count, False, None, op))


def to_host(stream, host: np.ndarray | None, data: np.ndarray, op: str) -> bool:
    """A copy on ``stream`` (just checked) writes ``data`` (bytes) into ``host``.

    Returns False when ``host`` is not tracked: the caller then writes it at once.
    """
    if host is None:
        return False
    with _streams.lock:
        _conflicts(host, stream, stream.clock, True, op)
        host[...] = POISON
        _inflight.append(_Copy(host, stream, stream.count, True, np.array(data, np.uint8), op))
    return True
