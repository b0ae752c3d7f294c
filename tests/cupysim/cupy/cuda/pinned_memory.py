"""Page-locked host memory and CuPy's pinned pool (cupy/cuda/pinned_memory.pyx).

The pool rounds sizes up to a power of two of 512-byte units (``internal.clp2``) and keeps
freed blocks for reuse by size until ``free_all_blocks``. ``is_memory_pinned(ptr)`` is true
for addresses inside a simulated ``cudaHostAlloc`` allocation.
"""

from __future__ import annotations

import ctypes
import threading
import weakref

from cupysim import memory as _sim

from . import runtime as _runtime


class PinnedMemory:
    """A ``cudaHostAlloc`` allocation, freed with the object."""

    def __init__(self, size: int, flags: int = 0) -> None:
        self.size = size
        self.ptr = 0
        self._storage = None
        if size > 0:
            self._storage = _sim.host_alloc(size)
            self.ptr = self._storage.ptr

    def __int__(self) -> int:
        return self.ptr


def _return_block(pool: weakref.ref, mem: PinnedMemory) -> None:
    p = pool()
    if p is not None:
        p._free(mem)


class PooledPinnedMemory(PinnedMemory):
    """Pinned memory from a pool: returned to it when freed (a weakref.finalize callback,
    see cupy/cuda/memory.py PooledMemory)."""

    def __init__(self, mem: PinnedMemory, pool: weakref.ref) -> None:
        self.ptr, self.size = mem.ptr, mem.size
        self._storage = None
        weakref.finalize(self, _return_block, pool, mem)


class PinnedMemoryPointer:
    """Pointer of a pinned memory: ``mem`` and ``ptr``."""

    def __init__(self, mem, offset: int) -> None:
        self.mem = mem
        self.ptr = mem.ptr + offset

    def __int__(self) -> int:
        return self.ptr

    def size(self) -> int:
        return self.mem.size - (self.ptr - self.mem.ptr)

    def _buffer(self, nbytes: int):
        """A ctypes buffer over the memory that keeps this pointer (and its block) alive."""
        buf = (ctypes.c_uint8 * nbytes).from_address(self.ptr) if nbytes else bytearray()
        if nbytes:
            buf._owner = self
        return buf


def _malloc(size: int) -> PinnedMemoryPointer:
    return PinnedMemoryPointer(PinnedMemory(size), 0)


def _clp2(x: int) -> int:
    x = int(x)  # a NumPy integer size (count * dtype.itemsize) is a size too
    return 1 << (x - 1).bit_length() if x > 1 else x


class PinnedMemoryPool:
    """Memory pool for pinned memory on the host."""

    def __init__(self, allocator=_malloc) -> None:
        self._free_blocks: dict[int, list[PinnedMemory]] = {}
        self._in_use: set[int] = set()
        self._alloc = allocator
        self._weakref = weakref.ref(self)
        self._allocation_unit_size = 512
        self._lock = threading.Lock()

    def malloc(self, size: int) -> PinnedMemoryPointer:
        if size == 0:
            return PinnedMemoryPointer(PinnedMemory(0), 0)
        unit = self._allocation_unit_size
        size = _clp2((size + unit - 1) // unit * unit)
        with self._lock:
            free = self._free_blocks.get(size)
            mem = free.pop() if free else None
        if mem is None:
            try:
                mem = self._alloc(size).mem
            except _runtime.CUDARuntimeError as e:
                if e.status != _runtime._errorMemoryAllocation:
                    raise
                self.free_all_blocks()
                mem = self._alloc(size).mem
        with self._lock:
            self._in_use.add(id(mem))
        return PinnedMemoryPointer(PooledPinnedMemory(mem, self._weakref), 0)

    def _free(self, mem: PinnedMemory) -> None:
        with self._lock:
            self._in_use.discard(id(mem))
            self._free_blocks.setdefault(mem.size, []).append(mem)

    def free_all_blocks(self) -> None:
        """Release free all blocks."""
        with self._lock:
            self._free_blocks.clear()

    def n_free_blocks(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._free_blocks.values())


_current_allocator = None


def alloc_pinned_memory(size: int) -> PinnedMemoryPointer:
    """Calls the current pinned allocator (the default pinned pool's ``malloc``)."""
    return (_current_allocator or _malloc)(size)


def set_pinned_memory_allocator(allocator=None) -> None:
    global _current_allocator
    _current_allocator = allocator


def is_memory_pinned(data: int) -> bool:
    return _runtime.pointerGetMemoryType(data) == _runtime.memoryTypeHost
