"""Device memory and CuPy's memory pool, modelled on cupy/cuda/memory.pyx (CuPy 14.2).

The pool keeps CuPy's algorithm: sizes rounded up to 512 bytes (``_round_size``), one
arena of free chunks per stream (``_get_stream_identifier``: the per-thread default stream
has one per thread), best fit with splitting (``_Arena.get_chunk``), merging of freed
neighbours (``try_merge_chunk``), ``free_all_blocks`` releasing only unsplit chunks, and
``_try_malloc``: past the limit or on ``cudaErrorMemoryAllocation`` it frees the cached
blocks (then runs ``gc.collect()``) and retries before raising ``OutOfMemoryError``.
"""

from __future__ import annotations

import bisect
import gc
import itertools
import os
import threading
import weakref

from cupysim import capture as _capture
from cupysim import devices as _devices
from cupysim import hostcopy as _hostcopy
from cupysim import memory as _sim
from cupysim import streams as _streams
from cupysim import tracing as _trace
from cupysim.config import config as _config
from cupysim.errors import CUDARuntimeError, OutOfMemoryError

from . import runtime as _runtime

__all__ = [
    "BaseMemory",
    "Memory",
    "MemoryPointer",
    "MemoryPool",
    "OutOfMemoryError",
    "PooledMemory",
    "UnownedMemory",
    "alloc",
    "get_allocator",
    "set_allocator",
]

_ALLOCATION_UNIT_SIZE = 512
_allocation_unit_size = _ALLOCATION_UNIT_SIZE


def _round_size(size: int) -> int:
    """Round up to the cudaMalloc alignment CuPy assumes (memory.pyx ``_round_size``)."""
    return (size + _ALLOCATION_UNIT_SIZE - 1) // _ALLOCATION_UNIT_SIZE * _ALLOCATION_UNIT_SIZE


class BaseMemory:
    """Memory on a CUDA device: ``ptr``, ``size``, ``device_id``, ``device``."""

    ptr = 0
    size = 0
    device_id = -1
    _storage = None

    def __int__(self) -> int:
        return self.ptr

    @property
    def device(self):
        from .device import Device

        return Device(self.device_id)


class Memory(BaseMemory):
    """A ``cudaMalloc`` allocation on the current device, freed with the object."""

    def __init__(self, size: int, *, block: bool = False) -> None:
        self.size = size
        self.device_id = _devices.current()
        self.ptr = 0
        self._storage = None
        if size > 0:
            # Under the address sanitizer a pool's blocks (``block``) only reserve device
            # bytes: each array cut from one gets its own exact-size storage (PooledMemory
            # below). An allocation outside the pool holds its bytes itself.
            keep = not (block and _exact())
            self._storage = _sim.device_malloc(size, self.device_id, storage=keep)
            self.ptr = self._storage.ptr


def _exact() -> bool:
    return _config.sanitize == "address"


class UnownedMemory(BaseMemory):
    """Device memory not allocated by CuPy (``ptr`` must lie in a simulated allocation)."""

    def __init__(self, ptr: int, size: int, owner, device_id: int | None = None) -> None:
        found = _sim.find(ptr)
        # memory outside the simulated pools (a kernel module's __device__ globals): wrapped
        # as is, without access records
        self._storage = found[0] if found else _sim.foreign(ptr, size, device_id)
        self.ptr, self.size, self._owner = ptr, size, owner
        if device_id is None:
            device_id = found[0].device if found else _devices.current()
        self.device_id = device_id


class _Chunk:
    __slots__ = ("arena", "mem", "next", "offset", "prev", "size")

    def __init__(self, mem: BaseMemory, offset: int, size: int, arena) -> None:
        self.mem, self.offset, self.size, self.arena = mem, offset, size, arena
        self.prev = self.next = None

    def ptr(self) -> int:
        # memory.pyx _Chunk: ``cpdef intptr_t ptr(self)``, a method
        return self.mem.ptr + self.offset

    def split(self, size: int):
        if self.size == size:
            return None
        rest = _Chunk(self.mem, self.offset + size, self.size - size, self.arena)
        self.size = size
        if self.next is not None:
            rest.next = self.next
            rest.next.prev = rest
        self.next = rest
        rest.prev = self
        return rest

    def merge_next(self) -> None:
        nxt = self.next
        nxt.arena = None  # memory.pyx: the merged chunk is free, so it has no arena
        self.size += nxt.size
        self.next = nxt.next
        if self.next is not None:
            self.next.prev = self


_seq = itertools.count()


class _Arena:
    """Free chunks of one stream, ordered by (size, insertion) like memory.pyx's std::set.

    memory.pyx ``_Arena``: its lifetime is tied to its chunks and "only an empty Arena can
    be free'd"; the index is a C++ ``std::set`` the garbage collector cannot see into, so
    an arena holding free chunks is never collected (the pool only has a weak reference).
    Here the index is a Python list the collector would traverse, so the pool's ``held``
    set keeps every arena with free chunks alive.
    """

    __slots__ = ("__weakref__", "held", "index", "keys")

    def __init__(self, held: set) -> None:
        self.held = held
        self.index: list[tuple[int, int, _Chunk]] = []
        self.keys: dict[int, tuple[int, int, _Chunk]] = {}

    def _insert(self, chunk: _Chunk) -> None:
        key = (chunk.size, next(_seq), chunk)
        bisect.insort(self.index, key, key=lambda k: k[:2])
        self.keys[id(chunk)] = key
        self.held.add(self)

    def _emptied(self) -> None:
        if not self.index:
            self.held.discard(self)

    def _remove(self, chunk: _Chunk) -> bool:
        key = self.keys.pop(id(chunk), None)
        if key is None:
            return False
        i = bisect.bisect_left(self.index, key[:2], key=lambda k: k[:2])
        del self.index[i]
        self._emptied()
        return True

    def insert_chunk(self, chunk: _Chunk, merge: bool = True) -> None:
        if merge:
            while chunk.next is not None and self._remove(chunk.next):
                chunk.merge_next()
            while chunk.prev is not None and self._remove(chunk.prev):
                chunk = chunk.prev
                chunk.merge_next()
        self._insert(chunk)

    def get_chunk(self, size: int) -> _Chunk | None:
        i = bisect.bisect_left(self.index, (size, -1), key=lambda k: k[:2])
        if i == len(self.index):
            return None
        chunk = self.index.pop(i)[2]
        del self.keys[id(chunk)]
        self._emptied()
        rest = chunk.split(size)
        if rest is not None:
            self.insert_chunk(rest, merge=False)
        return chunk

    def free_all(self) -> int:
        freed = 0
        keep = []
        for key in self.index:
            chunk = key[2]
            if chunk.next is not None or chunk.prev is not None:
                keep.append(key)
                continue
            self.keys.pop(id(chunk), None)
            chunk.arena = None
            freed += chunk.size
        self.index = keep
        self._emptied()
        return freed


def _stream_identifier(ptr: int) -> int:
    # memory.pyx _get_stream_identifier: the per-thread default stream is one per thread.
    if ptr != _runtime.streamPerThread:
        return ptr
    return -threading.get_ident()


def _return_chunk(pool: weakref.ref, chunk: _Chunk) -> None:
    p = pool()
    if p is not None:
        p._free(chunk)


class PooledMemory(BaseMemory):
    """Memory from a pool: returns its chunk to the pool when freed.

    The return is a ``weakref.finalize`` callback, not ``__del__``: the finalizer registry
    keeps the chunk (and its block) reachable, so the garbage collector never finalizes
    a block whose chunk is about to go back into a live arena.
    """

    def __init__(self, chunk: _Chunk, pool: weakref.ref, nbytes: int) -> None:
        self.size = chunk.size
        self.device_id = chunk.mem.device_id
        if _exact() and nbytes > 0:
            self._storage = _sim.exact(nbytes, self.device_id)
            self.ptr = self._storage.ptr
        else:
            self._storage = chunk.mem._storage
            self.ptr = chunk.ptr()
        self._finalizer = weakref.finalize(self, _return_chunk, pool, chunk)

    def free(self) -> None:
        self._finalizer()


class MemoryPointer:
    """Pointer into device memory: ``mem`` and an offset (memory.pyx ``MemoryPointer``)."""

    __slots__ = ("__weakref__", "device_id", "mem", "ptr")

    def __init__(self, mem: BaseMemory, offset: int) -> None:
        self.mem = mem
        self.device_id = mem.device_id
        self.ptr = mem.ptr + offset

    def __int__(self) -> int:
        return self.ptr

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self.ptr - self.mem.ptr + offset)

    def __radd__(self, offset: int) -> MemoryPointer:
        return self + offset

    def __iadd__(self, offset: int) -> MemoryPointer:
        self.ptr += offset
        return self

    def __sub__(self, offset: int) -> MemoryPointer:
        return self + -offset

    def __isub__(self, offset: int) -> MemoryPointer:
        self.ptr -= offset
        return self

    @property
    def device(self):
        from .device import Device

        return Device(self.device_id)

    # -- copies: each is a stream operation (reads the source, writes the destination)
    def _view(self, size: int):
        s = self.mem._storage
        start = self.ptr - s.ptr
        return s.host[start : start + size]

    def _region(self, size: int):
        s = self.mem._storage
        return s.region(
            self.ptr, size, lambda: f"{size} bytes at {self.ptr:#x} on device {self.device_id}"
        )

    def _stream(self, stream):
        return _streams.resolve(
            _current_ptr() if stream is None else stream.ptr, _devices.current()
        )

    def copy_from_device_async(self, src: MemoryPointer, size: int, stream=None) -> None:
        """A device-to-device copy (peer copies need no peer access: memcpyDefault)."""
        if size <= 0:
            return
        _devices.enable_peer_access(src.device_id, self.device_id)
        s = self._stream(stream)
        reads, writes = [src._region(size)], [self._region(size)]
        if _capture.captures:
            _capture.offer("memcpyAsync", _Copy(self._view(size), src._view(size)),
                           [(src.mem, src.ptr, src.ptr + size), (self.mem, self.ptr,
                            self.ptr + size)], "memcpy device to device")  # fmt: skip
        tick = _streams.check(s, reads, writes, "memcpyAsync")
        self._view(size)[...] = src._view(size)
        _streams.commit(s, reads, writes, "memcpyAsync", tick)

    def copy_from_device(self, src: MemoryPointer, size: int) -> None:
        if _capture.captures:  # memory.pyx: no synchronous call while the stream captures
            _capture.refuse_copy("sync")
        self.copy_from_device_async(src, size)

    def copy_from_host_async(self, mem, size: int, stream=None) -> None:
        if size <= 0:
            return
        s = self._stream(stream)
        if _capture.captures:  # memory.pyx: H2D transfers are refused while capturing
            _capture.refuse_copy("h2d", s)
        writes = [self._region(size)]
        op = "memcpyAsync (host to device)"
        tick = _streams.check(s, [], writes, op)
        host = _host_bytes(mem, size)
        _hostcopy.from_host(s, _hostcopy.pinned_view(host.ctypes.data, size), op)
        self._view(size)[...] = host
        _streams.commit(s, [], writes, op, tick)

    def copy_from_host(self, mem, size: int) -> None:
        if _capture.captures:
            _capture.refuse_copy("sync")
        self.copy_from_host_async(mem, size)
        _streams.synchronize(_streams.current(_devices.current()))

    def copy_to_host_async(self, mem, size: int, stream=None) -> None:
        if size <= 0:
            return
        s = self._stream(stream)
        if _capture.captures:  # memory.pyx: D2H transfers are refused while capturing
            _capture.refuse_copy("d2h", s)
        reads = [self._region(size)]
        op = "memcpyAsync (device to host)"
        tick = _streams.check(s, reads, [], op)
        host = _host_bytes(mem, size)
        if not _hostcopy.to_host(
            s, _hostcopy.pinned_view(host.ctypes.data, size), self._view(size), op
        ):
            host[...] = self._view(size)
        _streams.commit(s, reads, [], op, tick)

    def copy_to_host(self, mem, size: int) -> None:
        if _capture.captures:
            _capture.refuse_copy("sync")
        s = _streams.current(_devices.current())
        self.copy_to_host_async(mem, size)
        _streams.synchronize(s)

    def copy_from_async(self, mem, size: int, stream=None) -> None:
        if isinstance(mem, MemoryPointer):
            self.copy_from_device_async(mem, size, stream)
        else:
            self.copy_from_host_async(mem, size, stream)

    def copy_from(self, mem, size: int) -> None:
        if isinstance(mem, MemoryPointer):
            self.copy_from_device(mem, size)
        else:
            self.copy_from_host(mem, size)

    def memset_async(self, value: int, size: int, stream=None) -> None:
        if size <= 0:
            return
        s = self._stream(stream)
        writes = [self._region(size)]
        if _capture.captures:
            _capture.offer("memsetAsync", _Memset(self._view(size), value & 0xFF),
                           [(self.mem, self.ptr, self.ptr + size)], "memset")  # fmt: skip
        tick = _streams.check(s, [], writes, "memsetAsync")
        self._view(size)[...] = value & 0xFF
        _streams.commit(s, [], writes, "memsetAsync", tick)

    def memset(self, value: int, size: int) -> None:
        if _capture.captures:
            _capture.refuse_copy("sync")
        self.memset_async(value, size)


class _Copy:
    """A graph's replay of a device copy: the two ranges' views (no allocation held)."""

    __slots__ = ("dst", "src")

    def __init__(self, dst, src) -> None:
        self.dst, self.src = dst, src

    def __call__(self) -> None:
        self.dst[...] = self.src


class _Memset:
    __slots__ = ("dst", "value")

    def __init__(self, dst, value: int) -> None:
        self.dst, self.value = dst, value

    def __call__(self) -> None:
        self.dst[...] = self.value


def _current_ptr() -> int:
    return _streams.current_handle(_devices.current())


def _host_bytes(mem, size: int):
    import ctypes

    import numpy as np

    ptr = mem if isinstance(mem, int) else getattr(mem, "value", None) or int(mem)
    return np.frombuffer((ctypes.c_uint8 * size).from_address(ptr), np.uint8)


class SingleDeviceMemoryPool:
    """Memory pool for one device (memory.pyx ``SingleDeviceMemoryPool``)."""

    def __init__(self, allocator=None) -> None:
        self._allocator = _block_malloc if allocator is None else allocator
        self._arenas: dict[int, weakref.ref] = {}
        self._held: set[_Arena] = set()  # arenas holding free chunks (see _Arena)
        self._lock = threading.RLock()
        self._total_bytes = 0
        self._in_use_bytes = 0
        self._total_bytes_limit = 0
        self._device_id = _devices.current()
        self._weakref = weakref.ref(self)
        self.set_limit(**_parse_limit_string())

    def _arena(self, ident: int) -> _Arena:
        ref = self._arenas.get(ident)
        arena = None if ref is None else ref()
        if arena is None:
            for key in [k for k, r in self._arenas.items() if r() is None]:
                del self._arenas[key]
            arena = _Arena(self._held)
            self._arenas[ident] = weakref.ref(arena)
        return arena

    def malloc(self, size: int) -> MemoryPointer:
        rounded = _round_size(size)
        if rounded == 0:
            return MemoryPointer(Memory(0), 0)
        ident = _stream_identifier(_current_ptr())
        with self._lock:
            arena = self._arena(ident)
            chunk = arena.get_chunk(rounded)
        if _trace.active:
            _trace.allocation(self._device_id, rounded, hit=chunk is not None)
        if chunk is not None and _capture.graphs_with_orphans:
            _capture.handed_out(chunk.ptr(), rounded)
        if chunk is None:
            mem = self._try_malloc(rounded)
            chunk = _Chunk(mem, 0, rounded, arena)
        with self._lock:
            self._in_use_bytes += chunk.size
        return MemoryPointer(PooledMemory(chunk, self._weakref, size), 0)

    def _free(self, chunk: _Chunk) -> None:
        with self._lock:
            self._in_use_bytes -= chunk.size
            if chunk.arena is not None:
                chunk.arena.insert_chunk(chunk)

    def free_all_blocks(self, stream=None) -> None:
        """Free all **non-split** blocks of one arena or all of them."""
        with self._lock:
            if stream is None:
                idents = tuple(self._arenas)
            else:
                ident = _stream_identifier(stream.ptr)
                if ident not in self._arenas:
                    return
                idents = (ident,)
            freed = 0
            for ident in idents:
                arena = self._arenas[ident]()
                if arena is None:
                    del self._arenas[ident]
                else:
                    freed += arena.free_all()
            self._total_bytes -= freed

    def n_free_blocks(self) -> int:
        with self._lock:
            return sum(len(a.index) for r in self._arenas.values() if (a := r()) is not None)

    def used_bytes(self) -> int:
        return self._in_use_bytes

    def free_bytes(self) -> int:
        return self._total_bytes - self._in_use_bytes

    def total_bytes(self) -> int:
        return self._total_bytes

    def set_limit(self, size=None, fraction=None) -> None:
        if size is None:
            if fraction is None:
                size = 0
            else:
                if not 0 <= fraction <= 1:
                    raise ValueError(f"memory limit fraction out of range: {fraction}")
                _, total = _runtime.memGetInfo()
                size = fraction * total
            self.set_limit(size=size)
            return
        if fraction is not None:
            raise ValueError("size and fraction cannot be specified at one time")
        if size < 0:
            raise ValueError(f"memory limit size out of range: {size}")
        self._total_bytes_limit = int(size)

    def get_limit(self) -> int:
        return self._total_bytes_limit

    def _try_block_total_bytes(self, size: int) -> bool:
        limit = self._total_bytes_limit or 2**64 - 1
        if size > limit:
            raise OutOfMemoryError(size, self._total_bytes, limit)
        with self._lock:
            if self._total_bytes <= limit - size:
                self._total_bytes += size
                return True
        return False

    def _try_malloc(self, size: int) -> BaseMemory:
        # memory.pyx _try_malloc: free the cache (then gc) and retry before raising.
        limit = self._total_bytes_limit
        ok = self._try_block_total_bytes(size)
        if not ok:
            self.free_all_blocks(None)
            ok = self._try_block_total_bytes(size)
        if not ok:
            gc.collect()
            self.free_all_blocks(None)
            ok = self._try_block_total_bytes(size)
        if not ok:
            raise OutOfMemoryError(size, self._total_bytes, limit)
        mem = None
        oom = False
        try:
            for attempt in range(3):
                try:
                    mem = self._allocator(size).mem
                    break
                except CUDARuntimeError as e:
                    if e.status != _runtime._errorMemoryAllocation:
                        raise
                    if attempt:
                        gc.collect()
                        gc.collect()
                    self.free_all_blocks(None)
            else:
                oom = True
        finally:
            if mem is None:
                with self._lock:
                    self._total_bytes -= size
                if oom:
                    raise OutOfMemoryError(size, self._total_bytes, limit)
        return mem


def _parse_limit_string(limit=None) -> dict:
    if limit is None:
        limit = os.environ.get("CUPY_GPU_MEMORY_LIMIT")
    size = fraction = None
    if limit is not None:
        if limit.endswith("%"):
            fraction = float(limit[:-1]) / 100.0
        else:
            size = int(limit)
    return {"size": size, "fraction": fraction}


class MemoryPool:
    """Memory pool for all GPU devices on the host (one SingleDeviceMemoryPool each)."""

    def __init__(self, allocator=None) -> None:
        self._allocator = _block_malloc if allocator is None else allocator
        self._pools: tuple[SingleDeviceMemoryPool, ...] | None = None
        self._lock = threading.Lock()

    def _device_pool(self) -> SingleDeviceMemoryPool:
        dev = _devices.current()
        if self._pools is None:
            n = _runtime.getDeviceCount()
            prev = _devices.current()
            pools = []
            try:
                for i in range(n):
                    _devices.set_current(i)
                    pools.append(SingleDeviceMemoryPool(self._allocator))
            finally:
                _devices.set_current(prev)
            with self._lock:
                if self._pools is None:
                    self._pools = tuple(pools)
        return self._pools[dev]

    def malloc(self, size: int) -> MemoryPointer:
        return self._device_pool().malloc(size)

    def free_all_blocks(self, stream=None) -> None:
        self._device_pool().free_all_blocks(stream=stream)

    def n_free_blocks(self) -> int:
        return self._device_pool().n_free_blocks()

    def used_bytes(self) -> int:
        return self._device_pool().used_bytes()

    def free_bytes(self) -> int:
        return self._device_pool().free_bytes()

    def total_bytes(self) -> int:
        return self._device_pool().total_bytes()

    def set_limit(self, size=None, fraction=None) -> None:
        self._device_pool().set_limit(size=size, fraction=fraction)

    def get_limit(self) -> int:
        return self._device_pool().get_limit()


def _malloc(size: int) -> MemoryPointer:
    return MemoryPointer(Memory(size), 0)


def _block_malloc(size: int) -> MemoryPointer:
    """``_malloc`` for a pool's block (the pools' default allocator: see Memory)."""
    return MemoryPointer(Memory(size, block=True), 0)


def malloc_managed(size: int) -> MemoryPointer:
    """memory.pyx ``malloc_managed``: unified memory, not simulated (it fails loudly)."""
    raise NotImplementedError("cupysim: managed memory (cudaMallocManaged) is not simulated")


def malloc_async(size: int) -> MemoryPointer:
    """memory.pyx ``malloc_async``: stream-ordered allocation, not simulated (it fails
    loudly)."""
    raise NotImplementedError(
        "cupysim: stream-ordered allocation (cudaMallocAsync) is not simulated"
    )


_state = threading.local()
_default_allocator = _malloc


def alloc(size: int) -> MemoryPointer:
    """Calls the current allocator (the default pool's ``malloc``)."""
    mp = get_allocator()(size)
    if _capture.captures:  # garbage until a replay writes it (cupysim/capture.py)
        _capture.allocated(mp.ptr, size)
    return mp


def set_allocator(allocator=None) -> None:
    global _current_allocator
    if getattr(_state, "allocator", None) is not None:
        # memory.pyx set_allocator refuses inside using_allocator: the global one would be
        # shadowed on this thread anyway
        raise ValueError(
            "Can't change the global allocator inside `using_allocator` context manager"
        )
    _current_allocator = _malloc if allocator is None else allocator


def get_allocator():
    return getattr(_state, "allocator", None) or _current_allocator


_current_allocator = _malloc
