"""NCCL collectives between simulated devices (cupy_backends/cuda/libs/nccl.pyx API).

Communicators made together (``NcclCommunicator.initAll``) form a clique, one rank per
device. The k-th collective call of every rank is one collective: it runs when the last
rank has called it, reading the ranks' send buffers and writing their receive buffers
(raw device pointers, found in the simulated allocations). Calls between ``groupStart()``
and ``groupEnd()`` are submitted at ``groupEnd()``; outside a group a call waits for the
other ranks (called from other threads). One thread calling all ranks without a group
would hang on real NCCL: here it raises after a timeout.

Point-to-point ``send``/``recv`` (NCCL >= 2.7, cupy_backends/cuda/libs/nccl.pyx
``NcclCommunicator.send``/``recv``) are matched per ordered pair of ranks: the k-th send
from rank i to rank j is received by the k-th recv of rank j from rank i, with the same
number of bytes. A matched pair runs when both are submitted and orders the two streams
with each other (NCCL's send and receive kernels wait for each other).

Each rank's part is an operation on its stream (checked by the stream checker), and a
completed collective orders every participating stream after all of them (NCCL's kernels
synchronise with each other).
"""

from __future__ import annotations

import threading

import numpy as np

from . import devices, memory, streams

__all__ = [
    "NCCL_AVG", "NCCL_BFLOAT16", "NCCL_CHAR", "NCCL_DOUBLE", "NCCL_FLOAT", "NCCL_FLOAT16",
    "NCCL_FLOAT32", "NCCL_FLOAT64", "NCCL_HALF", "NCCL_INT", "NCCL_INT8", "NCCL_INT32",
    "NCCL_INT64", "NCCL_MAX", "NCCL_MIN", "NCCL_PROD", "NCCL_SUM", "NCCL_UINT8",
    "NCCL_UINT32", "NCCL_UINT64", "NcclCommunicator", "NcclError", "get_build_version",
    "get_unique_id", "get_version", "groupEnd", "groupStart",
]  # fmt: skip

NCCL_INT8 = NCCL_CHAR = 0
NCCL_UINT8 = 1
NCCL_INT32 = NCCL_INT = 2
NCCL_UINT32 = 3
NCCL_INT64 = 4
NCCL_UINT64 = 5
NCCL_FLOAT16 = NCCL_HALF = 6
NCCL_FLOAT32 = NCCL_FLOAT = 7
NCCL_FLOAT64 = NCCL_DOUBLE = 8
NCCL_BFLOAT16 = 9
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4

_DTYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64,
           6: np.float16, 7: np.float32, 8: np.float64}  # fmt: skip
_ERRORS = {
    0: ("NCCL_ERROR_SUCCESS", "no error"),
    1: ("NCCL_ERROR_UNHANDLED_CUDA_ERROR", "unhandled cuda error"),
    3: ("NCCL_ERROR_INTERNAL_ERROR", "internal error"),
    4: ("NCCL_ERROR_INVALID_ARGUMENT", "invalid argument"),
    5: ("NCCL_ERROR_INVALID_USAGE", "invalid usage"),
}
#: How long a rank waits for the others before the simulator calls it a deadlock.
TIMEOUT = 10.0


class NcclError(RuntimeError):
    def __init__(self, status: int, detail: str = "") -> None:
        self.status = status
        self._detail = detail
        name, msg = _ERRORS.get(status, ("NCCL_ERROR_INTERNAL_ERROR", "internal error"))
        super().__init__(
            f"{name}: {msg} (run with NCCL_DEBUG=WARN for details)"
            + (f" [{detail}]" if detail else "")
        )

    def __reduce__(self):
        return (type(self), (self.status, self._detail))


# CuPy defines it in cupy_backends.cuda.libs.nccl, a package the simulator does not provide:
# the module named here is one pickle can import (CuPy's errors pickle).
NcclError.__module__ = "cupy.cuda.nccl"


def get_build_version() -> int:
    return 22707


def get_version() -> int:
    return 22707


def get_unique_id() -> bytes:
    import os

    return os.urandom(128)


_tls = threading.local()


def groupStart() -> None:
    _tls.depth = getattr(_tls, "depth", 0) + 1
    if _tls.depth == 1:
        _tls.queue = []


def groupEnd() -> None:
    depth = getattr(_tls, "depth", 0)
    if depth == 0:
        raise NcclError(5, "groupEnd without groupStart")
    _tls.depth = depth - 1
    if _tls.depth == 0:
        queue, _tls.queue = _tls.queue, []
        pending = [op.clique._submit(op) for op in queue]
        for op in pending:
            op.clique._wait(op)


class _Op:
    __slots__ = ("clique", "count", "done", "dtype", "error", "kind", "op", "peer", "rank",
                 "recv", "root", "send", "seq", "stream")  # fmt: skip


class _Clique:
    def __init__(self, devs: list[int]) -> None:
        self.devices = devs
        self.cond = threading.Condition()
        self.seq = [0] * len(devs)
        self.slots: dict[int, dict[int, _Op]] = {}
        # (sender, receiver) -> the sends and the recvs not matched yet, in call order
        self.p2p: dict[tuple[int, int], tuple[list[_Op], list[_Op]]] = {}

    def _submit(self, op: _Op) -> _Op:
        if op.kind in ("send", "recv"):
            return self._submit_p2p(op)
        with self.cond:
            op.seq = self.seq[op.rank]
            self.seq[op.rank] += 1
            slot = self.slots.setdefault(op.seq, {})
            slot[op.rank] = op
            if len(slot) == len(self.devices):
                del self.slots[op.seq]
                try:
                    _execute(self, slot)
                except BaseException as exc:  # every rank sees the failure
                    for o in slot.values():
                        o.error = exc
                for o in slot.values():
                    o.done = True
                self.cond.notify_all()
        return op

    def _submit_p2p(self, op: _Op) -> _Op:
        with self.cond:
            sending = op.kind == "send"
            sends, recvs = self.p2p.setdefault(
                (op.rank, op.peer) if sending else (op.peer, op.rank), ([], [])
            )
            mine, theirs = (sends, recvs) if sending else (recvs, sends)
            op.seq = len(mine)
            if not theirs:
                mine.append(op)
                return op
            other = theirs.pop(0)
            try:
                _execute_p2p(self, *((op, other) if sending else (other, op)))
            except BaseException as exc:  # both ranks see the failure
                op.error = other.error = exc
            op.done = other.done = True
            self.cond.notify_all()
        return op

    def _wait(self, op: _Op) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: op.done, timeout=TIMEOUT):
                raise NcclError(
                    5,
                    f"rank {op.rank} waited {TIMEOUT:g} s in {op.kind} #{op.seq} for the other "
                    "ranks: a single thread must call all ranks between groupStart() and "
                    "groupEnd() (real NCCL hangs here)",
                )
        if op.error is not None:
            raise op.error


def _region(ptr: int, nbytes: int, what: str, dev: int):
    found = memory.find(ptr)
    if found is None or (nbytes and ptr + nbytes > found[0].ptr + found[0].size):
        raise NcclError(4, f"{what} {ptr:#x} ({nbytes} bytes) is not simulated device memory")
    s, off = found
    if s.device != dev:
        raise NcclError(4, f"{what} {ptr:#x} is on device {s.device}, the rank's device is {dev}")
    view = s.host[off : off + nbytes]
    return view, s.region(ptr, nbytes, lambda: f"NCCL {what} {ptr:#x} ({nbytes} bytes) on "
                                               f"device {dev}")  # fmt: skip


def _reduce(arrays: list[np.ndarray], op: int) -> np.ndarray:
    stack = np.stack(arrays)
    if op == NCCL_SUM:
        return stack.sum(axis=0, dtype=stack.dtype)
    if op == NCCL_PROD:
        return stack.prod(axis=0, dtype=stack.dtype)
    if op == NCCL_MAX:
        return stack.max(axis=0)
    if op == NCCL_MIN:
        return stack.min(axis=0)
    if op == NCCL_AVG:
        return (stack.sum(axis=0) / len(arrays)).astype(stack.dtype)
    raise NcclError(4, f"unknown reduction op {op}")


def _execute(clique: _Clique, slot: dict[int, _Op]) -> None:
    ops = [slot[r] for r in range(len(clique.devices))]
    kinds = {o.kind for o in ops}
    if len(kinds) != 1:
        raise NcclError(5, f"ranks called different collectives together: {sorted(kinds)}")
    kind = ops[0].kind
    n = len(ops)
    item = np.dtype(_DTYPES[ops[0].dtype]).itemsize
    send_counts = {
        "allReduce": lambda o: o.count, "reduce": lambda o: o.count,
        "broadcast": lambda o: o.count if o.rank == o.root else 0,
        "allGather": lambda o: o.count, "reduceScatter": lambda o: o.count * n,
    }[kind]  # fmt: skip
    recv_counts = {
        "allReduce": lambda o: o.count, "reduce": lambda o: o.count if o.rank == o.root else 0,
        "broadcast": lambda o: o.count, "allGather": lambda o: o.count * n,
        "reduceScatter": lambda o: o.count,
    }[kind]  # fmt: skip
    sends, recvs, checks = [], [], []
    for o in ops:
        dev = clique.devices[o.rank]
        dt = _DTYPES[o.dtype]
        sv, sr = _region(o.send, send_counts(o) * item, "sendbuff", dev)
        rv, rr = _region(o.recv, recv_counts(o) * item, "recvbuff", dev)
        reads, writes = ([sr] if send_counts(o) else []), ([rr] if recv_counts(o) else [])
        tick = streams.check(o.stream, reads, writes, f"nccl{kind[0].upper()}{kind[1:]}")
        checks.append((o, reads, writes, tick))
        sends.append(sv.view(dt).copy())
        recvs.append(rv.view(dt))
    if kind == "allReduce":
        total = _reduce(sends, ops[0].op)
        for r in recvs:
            r[...] = total
    elif kind == "reduce":
        recvs[ops[0].root][...] = _reduce(sends, ops[0].op)
    elif kind == "broadcast":
        for r in recvs:
            r[...] = sends[ops[0].root]
    elif kind == "allGather":
        whole = np.concatenate(sends)
        for r in recvs:
            r[...] = whole
    elif kind == "reduceScatter":
        total = _reduce(sends, ops[0].op)
        for i, r in enumerate(recvs):
            r[...] = total[i * ops[i].count : (i + 1) * ops[i].count]
    for o, reads, writes, tick in checks:
        streams.commit(o.stream, reads, writes, kind, tick)
    # the collective synchronises its ranks' streams with each other
    with streams.lock:
        merged: dict[int, int] = {}
        for o in ops:
            streams._join(merged, o.stream.clock)
        for o in ops:
            streams._join(o.stream.clock, merged)


def _execute_p2p(clique: _Clique, send: _Op, recv: _Op) -> None:
    nbytes = send.count * np.dtype(_DTYPES[send.dtype]).itemsize
    expected = recv.count * np.dtype(_DTYPES[recv.dtype]).itemsize
    if nbytes != expected:
        raise NcclError(
            5, f"rank {send.rank} sends {nbytes} bytes to rank {recv.rank}, which receives "
               f"{expected} bytes"
        )  # fmt: skip
    sv, sr = _region(send.send, nbytes, "sendbuff", clique.devices[send.rank])
    rv, rr = _region(recv.recv, nbytes, "recvbuff", clique.devices[recv.rank])
    sent = streams.check(send.stream, [sr], [], "ncclSend")
    got = streams.check(recv.stream, [], [rr], "ncclRecv")
    rv[...] = sv
    streams.commit(send.stream, [sr], [], "ncclSend", sent)
    streams.commit(recv.stream, [], [rr], "ncclRecv", got)
    with streams.lock:  # sender and receiver wait for each other
        merged: dict[int, int] = {}
        for o in (send, recv):
            streams._join(merged, o.stream.clock)
        for o in (send, recv):
            streams._join(o.stream.clock, merged)


class NcclConfig:
    """nccl.pyx ``NcclConfig``: the configuration of a communicator's creation (NCCL 2.17+;
    CuPy exposes ``split_share`` only)."""

    def __init__(self, split_share=0) -> None:
        self._split_share = split_share

    @property
    def split_share(self):
        return self._split_share


class NcclCommunicator:
    """One rank of a communicator (made by ``initAll`` in a single process)."""

    def __init__(self, ndev: int, commId: bytes, rank: int, config=None) -> None:
        raise NcclError(5, "multi-process communicators are not simulated; use initAll")

    @staticmethod
    def initAll(devices_):
        if isinstance(devices_, list):
            devs = list(devices_)
        elif isinstance(devices_, int):
            devs = list(range(devices_))
        else:
            raise ValueError('"devices" should be an int or a list of int.')
        for d in devs:
            devices.check(d)
        if len(set(devs)) != len(devs):
            raise NcclError(4, f"duplicate devices {devs}")
        clique = _Clique(devs)
        comms = []
        for rank in range(len(devs)):
            c = NcclCommunicator.__new__(NcclCommunicator)
            c._clique, c._rank, c._alive = clique, rank, True
            comms.append(c)
        return comms

    def device_id(self) -> int:
        return self._clique.devices[self._rank]

    def rank_id(self) -> int:
        return self._rank

    def size(self) -> int:
        return len(self._clique.devices)

    def destroy(self) -> None:
        self._alive = False

    def abort(self) -> None:
        self._alive = False

    def _call(self, kind, send, recv, count, datatype, op=NCCL_SUM, root=0, stream=0, peer=-1):
        if not self._alive:
            raise NcclError(4, "communicator destroyed")
        if datatype not in _DTYPES:
            raise NcclError(4, f"unsupported datatype {datatype}")
        if kind in ("send", "recv") and not 0 <= peer < self.size():
            raise NcclError(4, f"peer {peer} is not a rank of this communicator")
        o = _Op()
        o.clique, o.rank, o.kind, o.send, o.recv = self._clique, self._rank, kind, send, recv
        o.count, o.dtype, o.op, o.root, o.done, o.error = count, datatype, op, root, False, None
        o.peer = peer
        o.stream = streams.resolve(stream, self.device_id())
        if o.stream.device != self.device_id():
            raise NcclError(4, f"stream of device {o.stream.device} for rank on "
                               f"device {self.device_id()}")  # fmt: skip
        if getattr(_tls, "depth", 0):
            _tls.queue.append(o)
            return
        self._clique._wait(self._clique._submit(o))

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        self._call("allReduce", sendbuf, recvbuf, count, datatype, op=op, stream=stream)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        self._call("reduce", sendbuf, recvbuf, count, datatype, op=op, root=root, stream=stream)

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream):
        self._call("broadcast", sendbuff, recvbuff, count, datatype, root=root, stream=stream)

    def bcast(self, buff, count, datatype, root, stream):
        self._call("broadcast", buff, buff, count, datatype, root=root, stream=stream)

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        self._call("reduceScatter", sendbuf, recvbuf, recvcount, datatype, op=op, stream=stream)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        self._call("allGather", sendbuf, recvbuf, count, datatype, stream=stream)

    # NCCL >= 2.7 (this simulator reports 2.27.7, so both are present)
    def send(self, sendbuf, count, datatype, peer, stream):
        self._call("send", sendbuf, 0, count, datatype, stream=stream, peer=peer)

    def recv(self, recvbuf, count, datatype, peer, stream):
        self._call("recv", 0, recvbuf, count, datatype, stream=stream, peer=peer)


NcclCommunicator.__module__ = "cupy_backends.cuda.libs.nccl"
