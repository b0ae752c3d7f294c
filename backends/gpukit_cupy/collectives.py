"""NCCL collectives between the GPUs of one machine (``cupy.cuda.nccl``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from gpukit.backend import Backend
from gpukit.backend.collectives import PeerCopyCollectives

__all__ = ["NcclCollectives"]


_comms: dict[tuple[int, ...], list[Any]] = {}  # device tuple -> its communicators
_comms_lock = threading.Lock()


def _communicators(devices: tuple[int, ...]) -> list[Any]:
    """One communicator per device of ``devices``, made once per process and device tuple
    (``ncclCommInitAll`` costs tens of milliseconds: too much for every exchange)."""
    from cupy.cuda import nccl

    with _comms_lock:
        comms = _comms.get(devices)
        if comms is None:
            comms = _comms[devices] = nccl.NcclCommunicator.initAll(list(devices))
        return comms


class NcclCollectives(PeerCopyCollectives):
    """NCCL ring collectives between GPUs (one communicator per device, made once)."""

    def __init__(self, backend: Backend, devices: Sequence[int]) -> None:
        super().__init__(backend, devices)
        from cupy.cuda import nccl

        self._nccl = nccl
        self._comms = _communicators(self.devices)

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

    def all_to_all(self, blocks: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """One NCCL group of send/receive pairs, each on its device's worker stream.

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
            with self.backend.worker_context(d):
                packed.append([None if b is None else cupy.ascontiguousarray(b) for b in row])
        received: list[list[Any]] = [[None] * len(devs) for _ in devs]
        for j, d in enumerate(devs):
            with self.backend.worker_context(d):  # allocated for the stream that fills it
                for i, row in enumerate(packed):
                    b = row[j]
                    if b is not None:
                        received[j][i] = b if i == j else cupy.empty(b.shape, b.dtype)
        n.groupStart()
        try:
            for i, (comm, d) in enumerate(zip(self._comms, devs, strict=True)):
                with self.backend.worker_context(d):
                    stream = cupy.cuda.get_current_stream().ptr
                    for j in range(len(devs)):
                        if i == j:
                            continue
                        sent, got = packed[i][j], received[i][j]
                        if sent is not None:
                            comm.send(sent.data.ptr, sent.nbytes, n.NCCL_UINT8, j, stream)
                        if got is not None:
                            comm.recv(got.data.ptr, got.nbytes, n.NCCL_UINT8, j, stream)
        finally:
            n.groupEnd()
        return received
