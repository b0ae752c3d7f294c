"""NCCL collectives between the GPUs of one machine (``cupy.cuda.nccl``)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from gpukit.backend import Backend
from gpukit.backend.collectives import PeerCopyCollectives

__all__ = ["NcclCollectives", "communicators"]

logger = logging.getLogger("gpukit")

# device tuple -> (its communicators, a lock serialising their use), or the reason NCCL
# could not be set up for them
_comms: dict[tuple[int, ...], tuple[list[Any], threading.Lock] | str] = {}
_comms_lock = threading.Lock()


def communicators(devices: tuple[int, ...]) -> tuple[list[Any], threading.Lock] | None:
    """One NCCL communicator per device of ``devices`` and the lock their calls take, or
    None where NCCL cannot serve them.

    Made once per process and device tuple (``ncclCommInitAll`` costs tens of
    milliseconds: too much for every exchange). A failure to initialise is logged once
    (WARNING, on the ``gpukit`` logger) with its reason and remembered: the collectives
    of those devices then use peer copies.
    """
    if len(devices) < 2:
        return None
    try:
        from cupy.cuda import nccl
    except ImportError:
        return None
    if not nccl.available:  # CuPy without libnccl: peer copies, as documented
        return None
    with _comms_lock:
        found = _comms.get(devices)
        if found is None:
            try:
                found = (nccl.NcclCommunicator.initAll(list(devices)), threading.Lock())
            except Exception as exc:  # NcclError, a CUDA error, a missing symbol...
                found = f"{type(exc).__name__}: {exc}"
                logger.warning(
                    "NCCL cannot initialise communicators for devices %s (%s); their "
                    "collectives use peer copies instead",
                    devices,
                    found,
                )
            _comms[devices] = found
    return None if isinstance(found, str) else found


class NcclCollectives(PeerCopyCollectives):
    """NCCL ring collectives between GPUs (one communicator per device, made once).

    Every call runs on the calling thread's current stream of each device, where the
    buffers it reads were made and the workers' results are ordered; later work on
    those streams sees its results. One group of calls at a time per communicator set:
    NCCL matches the k-th call of each rank, so two threads' groups must not interleave.
    """

    def __init__(
        self, backend: Backend, devices: Sequence[int], comms: tuple[list[Any], threading.Lock]
    ) -> None:
        super().__init__(backend, devices)
        from cupy.cuda import nccl

        self._nccl = nccl
        self._comms, self._lock = comms

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
        with self._group():
            for comm, d, s, o in zip(self._comms, self.devices, sends, outs, strict=True):
                with cupy.cuda.Device(d):
                    stream = cupy.cuda.get_current_stream().ptr
                    comm.allReduce(
                        s.data.ptr, o.data.ptr, s.size * per_item, code, self._nccl.NCCL_SUM,
                        stream,
                    )  # fmt: skip
        return outs

    def reduce(self, parts: Sequence[Any], op: str = "sum", out: Any = None) -> Any:
        """NCCL's reduce to the first device: one call per device for the whole array."""
        import cupy

        if op != "sum":
            return super().reduce(parts, op, out)
        code, per_item = self._nccl_dtype(parts[0].dtype)
        sends = []
        for d, p in zip(self.devices, parts, strict=True):
            with cupy.cuda.Device(d):
                sends.append(cupy.ascontiguousarray(p))
        with cupy.cuda.Device(self.devices[0]):
            if out is None:
                out = cupy.empty_like(sends[0])
            elif not out.flags.c_contiguous:
                return super().reduce(parts, op, out)
        with self._group():
            for i, (comm, d, s) in enumerate(zip(self._comms, self.devices, sends, strict=True)):
                with cupy.cuda.Device(d):
                    stream = cupy.cuda.get_current_stream().ptr
                    recv = out if i == 0 else s  # only the root receives (in place allowed)
                    comm.reduce(
                        s.data.ptr, recv.data.ptr, s.size * per_item, code,
                        self._nccl.NCCL_SUM, 0, stream,
                    )  # fmt: skip
        return out

    def broadcast(self, x: Any, root: int = 0) -> list[Any]:
        import cupy

        code, per_item = self._nccl_dtype(x.dtype)
        with cupy.cuda.Device(self.devices[root]):  # a contiguous copy stays on the root
            x = cupy.ascontiguousarray(x)
        bufs = []
        for i, d in enumerate(self.devices):
            with cupy.cuda.Device(d):
                bufs.append(x if i == root else cupy.empty(x.shape, x.dtype))
        with self._group():
            for comm, d, b in zip(self._comms, self.devices, bufs, strict=True):
                with cupy.cuda.Device(d):
                    stream = cupy.cuda.get_current_stream().ptr
                    comm.broadcast(b.data.ptr, b.data.ptr, b.size * per_item, code, root, stream)
        return bufs

    def all_to_all(self, blocks: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """One NCCL group of send/receive pairs, each on its device's current stream.

        Blocks travel as bytes (``NCCL_UINT8``), so every dtype goes; a device's block
        for itself is kept as it is. Packing a strided block, the sends, the receives
        and later work of each device are ordered on that device's stream. NCCL before
        2.7 has no send/receive: peer copies then.
        """
        if self._nccl.get_version() < 2700:
            return super().all_to_all(blocks)
        import cupy

        n = self._nccl
        devs = self.devices
        packed: list[list[Any]] = []
        for d, row in zip(devs, blocks, strict=True):
            with cupy.cuda.Device(d):
                packed.append([None if b is None else cupy.ascontiguousarray(b) for b in row])
        received: list[list[Any]] = [[None] * len(devs) for _ in devs]
        for j, d in enumerate(devs):
            with cupy.cuda.Device(d):
                for i, row in enumerate(packed):
                    b = row[j]
                    if b is not None:
                        received[j][i] = b if i == j else cupy.empty(b.shape, b.dtype)
        with self._group():
            for i, (comm, d) in enumerate(zip(self._comms, devs, strict=True)):
                with cupy.cuda.Device(d):
                    stream = cupy.cuda.get_current_stream().ptr
                    for j in range(len(devs)):
                        if i == j:
                            continue
                        sent, got = packed[i][j], received[i][j]
                        if sent is not None:
                            comm.send(sent.data.ptr, sent.nbytes, n.NCCL_UINT8, j, stream)
                        if got is not None:
                            comm.recv(got.data.ptr, got.nbytes, n.NCCL_UINT8, j, stream)
        return received

    @contextlib.contextmanager
    def _group(self) -> Iterator[None]:
        """One NCCL group, alone on these communicators."""
        with self._lock:
            self._nccl.groupStart()
            try:
                yield
            finally:
                self._nccl.groupEnd()
