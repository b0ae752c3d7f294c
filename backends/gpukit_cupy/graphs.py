"""A block of device work captured once as a CUDA graph and replayed in one launch.

Through CuPy's stream capture (cupy/cuda/stream.pyx ``begin_capture``/``end_capture``,
cupy/cuda/graph.pyx ``Graph.launch``): the work is recorded on a stream of its own, not
run, and each :meth:`Captured.launch` replays it on the caller's current stream, on the
same buffers. What gpukit needs around CuPy's capture:

* the capture's allocations are the graph's: CuPy's pool would take back a temporary freed
  during the capture and hand it out again while the graph still writes it, so every
  block the captured work allocates stays with the :class:`Captured` until it goes
  (PyTorch's graphs keep a private pool for the same reason);
* capture failing is an outcome, not an error: CuPy refuses host copies (``.get()``,
  ``float()``, uploads) and the cuBLAS, cuSPARSE, cuSOLVER and cuRAND calls during a
  capture, and CUDA refuses synchronisation. :func:`capture` ends the capture, leaves the
  stream usable and raises :class:`~gpukit.backend.graphs.CaptureFailed` with the reason,
  so that the caller runs the work as before and says why once.

The captured work must not depend on host values that change between replays: kernel
arguments are baked in. Values that change live in device memory the work reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from gpukit.backend.graphs import CaptureFailed

__all__ = ["Captured", "capture"]

_streams: dict[int, Any] = {}
_lock = threading.Lock()


def _capture_stream(cupy: Any) -> Any:
    """A non-blocking stream of the current device for captures (CuPy refuses to capture
    the legacy default stream, and a blocking one forbids the legacy stream meanwhile)."""
    device = cupy.cuda.Device().id
    with _lock:
        stream = _streams.get(device)
        if stream is None:
            stream = _streams[device] = cupy.cuda.Stream(non_blocking=True)
    return stream


class Captured:
    """Captured device work: :meth:`launch` replays it on the current stream."""

    def __init__(self, cupy: Any, graph: Any, held: list) -> None:
        self._cupy, self._graph = cupy, graph
        self._held = held  # the capture's allocations, alive as long as the graph

    def launch(self) -> None:
        """Replay the work: one graph launch on the current stream, ordered after the work
        enqueued there before it and before the work enqueued after it."""
        self._graph.launch(self._cupy.cuda.get_current_stream())


def capture(cupy: Any, work: Callable[[], Any]) -> tuple[Captured, Any]:
    """Capture ``work()`` (device work only) as a CUDA graph, without running it.

    Returns the :class:`Captured` work and what ``work()`` returned (arrays whose values
    the replays write). Raises :class:`~gpukit.backend.graphs.CaptureFailed`, with CuPy's
    or CUDA's reason, when the work cannot be captured; the capture is then ended and
    nothing of it has run.
    """
    stream = _capture_stream(cupy)
    held: list = []
    malloc = cupy.cuda.get_allocator()

    def keep(size: int) -> Any:
        memory = malloc(size)
        held.append(memory)
        return memory

    with stream, cupy.cuda.using_allocator(keep):
        stream.begin_capture()
        try:
            out = work()
        except (RuntimeError, NotImplementedError) as exc:
            _abandon(stream)
            raise CaptureFailed(str(exc)) from exc
        except BaseException:
            _abandon(stream)
            raise
        try:
            graph = stream.end_capture()
        except RuntimeError as exc:  # CUDARuntimeError: the capture was invalidated
            raise CaptureFailed(str(exc)) from exc
    return Captured(cupy, graph, held), out


def _abandon(stream: Any) -> None:
    """End a capture whose work failed (the stream leaves capture mode either way)."""
    try:
        stream.end_capture()
    except RuntimeError:
        pass
