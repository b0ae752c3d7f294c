"""Collectives over the devices of one backend: all-reduce, all-gather, broadcast.

One small interface, three implementations chosen by the backend
(``Backend.collectives``):

* :class:`InMemoryCollectives` -- virtual CPU devices share host memory: plain
  NumPy arithmetic, each device still gets its own buffer;
* :class:`PeerCopyCollectives` -- device-to-device copies (``cupy.copy`` inside
  ``cupy.cuda.Device(dst)``), after synchronising the source device, since a peer
  copy on the destination's stream does not wait for the source's stream (a race
  gpu4pyscf fixed twice);
* :class:`NcclCollectives` -- ``cupy.cuda.nccl`` ring collectives, when CuPy was
  built with NCCL and more than one device takes part.

Collectives are called by the host between per-device phases, never from inside a
worker, so a failing worker cannot leave the others waiting at a barrier.
``parts[i]`` is the array on ``devices[i]``; results come back the same way.
Reductions of the root implementations add in device order (0, 1, ..., N-1):
deterministic, the same sum for every run with the same devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .backend import Backend

__all__ = ["Collectives", "InMemoryCollectives", "NcclCollectives", "PeerCopyCollectives"]


class Collectives:
    """The interface: every method takes and returns one array per device."""

    def __init__(self, backend: Backend, devices: Sequence[int]) -> None:
        self.backend = backend
        self.devices = tuple(devices)

    def all_reduce(self, parts: Sequence[Any]) -> list[Any]:
        """The elementwise sum of ``parts``, one copy on every device."""
        raise NotImplementedError

    def all_gather(self, parts: Sequence[Any], axis: int = 0) -> list[Any]:
        """``concatenate(parts, axis)`` on every device (uneven parts allowed)."""
        raise NotImplementedError

    def broadcast(self, x: Any, root: int = 0) -> list[Any]:
        """``x`` (on ``devices[root]``) copied to every device."""
        raise NotImplementedError

    def reduce(self, parts: Sequence[Any]) -> Any:
        """The sum of ``parts`` on ``devices[0]``, added in device order."""
        total = self._fetch(parts[0], self.devices[0], copy=True)
        for p in parts[1:]:
            total += self._fetch(p, self.devices[0], copy=False)
        return total

    def _fetch(self, x: Any, device: int, copy: bool) -> Any:
        return self.backend.to_device(x, device, copy=copy)


class PeerCopyCollectives(Collectives):
    """Reduce on the first device in device order, then copy the result to the others."""

    def _fetch(self, x: Any, device: int, copy: bool) -> Any:
        self.backend.synchronize(self.backend.device_of(x))
        return super()._fetch(x, device, copy)

    def all_reduce(self, parts: Sequence[Any]) -> list[Any]:
        return self.broadcast(self.reduce(parts))

    def all_gather(self, parts: Sequence[Any], axis: int = 0) -> list[Any]:
        xp = self.backend.xp
        root = self.devices[0]
        with self.backend.use_device(root):
            whole = xp.concatenate([self._fetch(p, root, copy=False) for p in parts], axis=axis)
        return self.broadcast(whole)

    def broadcast(self, x: Any, root: int = 0) -> list[Any]:
        source = self.devices[root]
        return [x if d == source else self._fetch(x, d, copy=True) for d in self.devices]


class InMemoryCollectives(PeerCopyCollectives):
    """Virtual devices: one memory space, nothing to synchronise; copies stay private."""

    def _fetch(self, x: Any, device: int, copy: bool) -> Any:
        return self.backend.to_device(x, device, copy=copy)


class NcclCollectives(PeerCopyCollectives):
    """NCCL ring collectives between GPUs (one communicator per device, made once)."""

    def __init__(self, backend: Backend, devices: Sequence[int]) -> None:
        super().__init__(backend, devices)
        from cupy.cuda import nccl

        self._nccl = nccl
        self._comms = nccl.NcclCommunicator.initAll(list(self.devices))

    @staticmethod
    def usable(devices: Sequence[int]) -> bool:
        """NCCL is present in this CuPy build and more than one device takes part."""
        try:
            from cupy.cuda import nccl
        except ImportError:
            return False
        return len(devices) > 1 and nccl.available

    def _nccl_dtype(self, dtype: Any) -> tuple[int, int]:
        """NCCL type code and elements per array item (complex is summed as two reals)."""
        n = self._nccl
        codes = {"float16": n.NCCL_FLOAT16, "float32": n.NCCL_FLOAT32,
                 "float64": n.NCCL_FLOAT64, "int32": n.NCCL_INT32, "int64": n.NCCL_INT64,
                 "complex64": n.NCCL_FLOAT32, "complex128": n.NCCL_FLOAT64}  # fmt: skip
        name = str(dtype)
        if name not in codes:
            raise TypeError(f"NCCL cannot reduce dtype {name}")
        return codes[name], 2 if name.startswith("complex") else 1

    def all_reduce(self, parts: Sequence[Any]) -> list[Any]:
        import cupy

        code, per_item = self._nccl_dtype(parts[0].dtype)
        outs, sends = [], []
        for d, p in zip(self.devices, parts, strict=True):
            with cupy.cuda.Device(d):
                sends.append(cupy.ascontiguousarray(p))
                outs.append(cupy.empty_like(sends[-1]))
        self._nccl.groupStart()
        for comm, d, s, o in zip(self._comms, self.devices, sends, outs, strict=True):
            with self.backend.worker_context(d):
                stream = cupy.cuda.get_current_stream().ptr
                comm.allReduce(
                    s.data.ptr, o.data.ptr, s.size * per_item, code, self._nccl.NCCL_SUM, stream
                )
        self._nccl.groupEnd()
        return outs

    def broadcast(self, x: Any, root: int = 0) -> list[Any]:
        import cupy

        code, per_item = self._nccl_dtype(x.dtype)
        with cupy.cuda.Device(self.devices[root]):  # a contiguous copy stays on the root
            x = cupy.ascontiguousarray(x)
        bufs = []
        for i, d in enumerate(self.devices):
            with cupy.cuda.Device(d):
                bufs.append(x if i == root else cupy.empty(x.shape, x.dtype))
        self._nccl.groupStart()
        for comm, d, b in zip(self._comms, self.devices, bufs, strict=True):
            with self.backend.worker_context(d):
                stream = cupy.cuda.get_current_stream().ptr
                comm.broadcast(b.data.ptr, b.data.ptr, b.size * per_item, code, root, stream)
        self._nccl.groupEnd()
        return bufs
