"""``cupy.cuda``: devices, streams, memory (simulated)."""

from __future__ import annotations

import contextlib

from cupy.cuda import (  # noqa: F401
    compiler,
    cub,
    device,
    driver,
    graph,
    memory,
    nvrtc,
    pinned_memory,
    runtime,
    stream,
    texture,
)
from cupy.cuda.device import Device, get_cublas_handle, get_device_id  # noqa: F401
from cupy.cuda.graph import Graph  # noqa: F401
from cupy.cuda.memory import (  # noqa: F401
    BaseMemory,
    Memory,
    MemoryPointer,
    MemoryPool,
    UnownedMemory,
    alloc,
    get_allocator,
    set_allocator,
)
from cupy.cuda.pinned_memory import (  # noqa: F401
    PinnedMemory,
    PinnedMemoryPointer,
    PinnedMemoryPool,
    alloc_pinned_memory,
    set_pinned_memory_allocator,
)
from cupy.cuda.stream import (  # noqa: F401
    Event,
    ExternalStream,
    Stream,
    get_current_stream,
    get_elapsed_time,
)

_available = None


@contextlib.contextmanager
def using_allocator(allocator=None):
    """The calling thread allocates with ``allocator`` inside the block (cupy/cuda/__init__.py
    ``using_allocator``; None: plain ``cudaMalloc``, no pool)."""
    previous = getattr(memory._state, "allocator", None)
    memory._state.allocator = memory._malloc if allocator is None else allocator
    try:
        yield
    finally:
        memory._state.allocator = previous


def is_available() -> bool:
    global _available
    if _available is None:
        _available = False
        try:
            _available = runtime.getDeviceCount() > 0
        except Exception:
            pass
    return _available


def __getattr__(name):
    # cupy/cuda/__init__.py: loaded (and the library found) on first access
    if name in ("cufft", "cublas"):
        import importlib

        return importlib.import_module(f"cupy.cuda.{name}")
    raise AttributeError(f"module 'cupy.cuda' has no attribute {name!r}")
