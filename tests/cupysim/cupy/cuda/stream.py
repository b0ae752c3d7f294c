"""Streams and events (modelled on cupy/cuda/stream.pyx, CuPy 14.2).

``Stream.null`` (handle 0) and ``Stream.ptds`` (cudaStreamPerThread) are singletons with
``device_id == -1``: they name the default stream of whichever device is current when
work is enqueued. The current stream is per thread and per device (``_ThreadLocal``);
``with stream:`` checks the stream belongs to the current device.
"""

from __future__ import annotations

import threading
import weakref

from cupysim import devices as _devices
from cupysim import streams as _sim
from cupysim.config import config as _config

from . import runtime as _runtime

_thread_local = threading.local()
#: Live events by handle, for ``runtime.eventQuery``.
_events: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class _ThreadLocal:
    def __init__(self) -> None:
        n = _runtime.getDeviceCount()
        default = _get_default_stream()
        self.current_stream = [default] * n
        self.current_stream_stack = [[default] for _ in range(n)]
        self.current_device_id_stack: list[int] = []

    @staticmethod
    def get() -> _ThreadLocal:
        tls = getattr(_thread_local, "tls", None)
        if tls is None:
            tls = _thread_local.tls = _ThreadLocal()
        return tls

    def push_stream(self, stream, device_id: int) -> None:
        self.current_stream_stack[device_id].append(stream)
        self.current_device_id_stack.append(device_id)
        self.set_current_stream(stream)

    def pop_stream(self) -> None:
        device_id = self.current_device_id_stack.pop()
        self.current_stream_stack[device_id].pop()
        self.set_current_stream(self.current_stream_stack[device_id][-1], device_id)

    def set_current_stream(self, stream, device_id: int = -1) -> None:
        if device_id == -1:
            device_id = stream.device_id if stream.device_id != -1 else _runtime.getDevice()
        _sim.set_current_handle(stream.ptr, device_id)
        self.current_stream[device_id] = stream

    def get_current_stream(self, device_id: int = -1):
        if device_id == -1:
            device_id = _runtime.getDevice()
        return self.current_stream[device_id]


def _get_default_stream():
    return Stream.ptds if _config.per_thread_default_stream else Stream.null


def get_current_stream(device_id: int = -1):
    """The current CUDA stream of ``device_id`` (the current device by default)."""
    return _ThreadLocal.get().get_current_stream(device_id)


class Event:
    """CUDA event, a synchronization point of CUDA streams."""

    def __init__(self, block=False, disable_timing=False, interprocess=False) -> None:
        self.ptr = 0
        if interprocess and not disable_timing:
            raise ValueError("Timing must be disabled for interprocess events")
        _devices.current()  # cudaEventCreateWithFlags needs a working driver
        self._event = _sim.SimEvent()
        self.ptr = self._event.handle
        _events[self.ptr] = self._event

    @property
    def done(self) -> bool:
        """True if the event is done (stream.pyx: ``runtime.eventQuery(self.ptr) == 0``)."""
        return _runtime.eventQuery(self.ptr) == 0

    def record(self, stream=None) -> None:
        ptr = _sim.current_handle(_devices.current()) if stream is None else stream.ptr
        _sim.record(self._event, _sim.resolve(ptr, _devices.current()))

    def synchronize(self) -> None:
        _sim.synchronize_event(self._event)


def get_elapsed_time(start_event, end_event) -> float:
    """Elapsed milliseconds between two recorded events (the simulator measures none: 0)."""
    for e in (start_event, end_event):
        if e._event.clock is None:
            raise _runtime.CUDARuntimeError(400)  # cudaErrorInvalidResourceHandle
    return 0.0


def _check_stream_device_match(device_id: int) -> int:
    curr = _runtime.getDevice()
    if device_id == -1:
        device_id = curr
    if device_id != curr:
        raise RuntimeError(
            f"The device that the stream is created on ({device_id})"
            f" does not match with the current device ({curr})"
        )
    return device_id


class _BaseStream:
    """CUDA stream: ``ptr`` (handle) and ``device_id`` (-1: the default-stream singletons)."""

    def __init__(self, ptr: int, device_id: int) -> None:
        self.ptr = ptr
        self.device_id = device_id

    def __eq__(self, other) -> bool:
        if isinstance(other, _BaseStream):
            return self.ptr == other.ptr
        return False

    def __hash__(self) -> int:
        return self.ptr

    def __enter__(self):
        device_id = _check_stream_device_match(self.device_id)
        _ThreadLocal.get().push_stream(self, device_id)
        return self

    def __exit__(self, *args) -> None:
        _ThreadLocal.get().pop_stream()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.ptr} (device {self.device_id})>"

    def use(self):
        _check_stream_device_match(self.device_id)
        _ThreadLocal.get().set_current_stream(self)
        return self

    def _sim(self) -> _sim.SimStream:
        return _sim.resolve(self.ptr, _devices.current())

    @property
    def done(self) -> bool:
        """True if all work on this stream has been done (stream.pyx: ``streamQuery == 0``)."""
        return _runtime.streamQuery(self.ptr) == 0

    def synchronize(self) -> None:
        """Waits for the stream completing all queued work."""
        _sim.synchronize(self._sim())

    def record(self, event=None):
        if event is None:
            event = Event()
        _sim.record(event._event, self._sim())
        return event

    def wait_event(self, event) -> None:
        _sim.wait_event(self._sim(), event._event)

    def launch_host_func(self, callback, arg) -> None:
        """``callback(arg)`` on the host once the work queued so far is done (stream.pyx:
        while capturing, through ``_launchHostFuncUnmanaged``, the graph keeping both)."""
        if self.is_capturing():
            _runtime._launchHostFuncUnmanaged(self.ptr, (callback, arg))
        else:
            _runtime.launchHostFunc(self.ptr, callback, arg)

    def begin_capture(self, mode=None) -> None:
        """Begin stream capture to construct a CUDA graph (stream.pyx ``begin_capture``:
        the legacy stream is refused, relaxed mode by default). cupysim/capture.py."""
        if self.ptr == 0 or self.ptr == 1:
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if mode is None:
            mode = _runtime.streamCaptureModeRelaxed
        _runtime.streamBeginCapture(self.ptr, mode)

    def end_capture(self):
        """End stream capture and return the captured :class:`cupy.cuda.Graph`."""
        from .graph import Graph

        return Graph._from_stream(_runtime.streamEndCapture(self.ptr))

    def is_capturing(self) -> bool:
        """Whether the stream is capturing (raises if the capture was invalidated)."""
        return _runtime.streamIsCapturing(self.ptr)

    @property
    def is_non_blocking(self) -> bool:
        return self._sim().kind == "non-blocking"


class Stream(_BaseStream):
    """CUDA stream: ``Stream()`` creates one on the current device, ``non_blocking=True``
    one that does not synchronise with the legacy default stream.
    """

    null = None
    ptds = None

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None) -> None:
        if null:
            ptr, device_id = 0, -1
        elif ptds:
            ptr, device_id = _runtime.streamPerThread, -1
        else:
            device_id = _runtime.getDevice()
            ptr = _sim.create(device_id, bool(non_blocking)).handle
        super().__init__(ptr, device_id)

    def __del__(self, _reserved=(0, 1, 2), _destroy=_sim.destroy) -> None:
        if getattr(self, "ptr", 0) not in _reserved:
            _destroy(self.ptr)


Stream.null = Stream(null=True)
Stream.ptds = Stream(ptds=True)


class ExternalStream(_BaseStream):
    """A stream not managed by CuPy, by handle."""

    def __init__(self, ptr: int, device_id: int = -1) -> None:
        super().__init__(ptr, device_id)


for _cls in (Event, Stream, ExternalStream, _BaseStream):
    _cls.__module__ = "cupy.cuda.stream"
