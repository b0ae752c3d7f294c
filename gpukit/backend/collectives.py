"""Collectives over the devices of one backend: all-reduce, all-gather, broadcast, all-to-all.

One small interface (part of the backend contract: ``Backend.collectives`` returns one)
and its default; a backend chooses its own:

* :class:`PeerCopyCollectives` -- device-to-device copies (``Backend.to_device``),
  each ordered after the work queued on its source device and before that device's
  later work by events, since a peer copy on the destination's stream does not wait
  for the source's stream (a race gpu4pyscf fixed twice);
* a backend's own, built on :class:`PeerCopyCollectives`: the CuPy backend's NCCL ring
  collectives (``gpukit_cupy.collectives``), the numpy backend's in-memory ones for its
  virtual CPU devices (``gpukit_numpy.collectives``).

Collectives are called by the host between per-device phases, never from inside a
worker, so a failing worker cannot leave the others waiting at a barrier. They queue
their work on the calling thread's current stream of each device, where the workers'
results are ordered (:mod:`gpukit._runtime.workers`); the host does not wait.
``parts[i]`` is the array on ``devices[i]``; results come back the same way.
Reductions of the root implementations add in device order (0, 1, ..., N-1):
deterministic, the same sum for every run with the same devices.

:meth:`Collectives.all_to_all` is the exchange behind ``gk.reshard`` and the
distributed FFT's transposes: every device sends one block to every other, MPI's
``Alltoallv``; NCCL runs it as one group of send/receive pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the contract's own package: a type only, not an import cycle
    from . import Backend

__all__ = ["Collectives", "PeerCopyCollectives"]


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

    def all_to_all(self, blocks: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """Every device sends ``blocks[i][j]`` (on ``devices[i]``, None: nothing) to ``devices[j]``.

        Returns ``received`` with ``received[j][i]`` on ``devices[j]`` (None where nothing
        was sent), of the block's shape and dtype. A block may be a non-contiguous view.
        A received block may share memory with the sent one (``i == j``, or virtual
        devices' one memory space): the caller copies before writing into either.
        """
        raise NotImplementedError

    def reduce(self, parts: Sequence[Any], op: str = "sum", out: Any = None) -> Any:
        """``parts`` combined on ``devices[0]`` in device order (``op``: sum, max or min);
        into ``out`` when given (an array on ``devices[0]`` shaped like the parts, which
        may be ``parts[0]`` itself), which is returned."""
        xp = self.backend.xp
        fold = {"sum": xp.add, "max": xp.maximum, "min": xp.minimum}[op]
        root = self.devices[0]
        if out is None:
            total = self._fetch(parts[0], root, copy=True)
        else:
            total = out
            if parts[0] is not out:
                with self.backend.use_device(root):
                    out[...] = self._fetch(parts[0], root, copy=False)
        with self.backend.use_device(root):  # CuPy computes on the current device
            for p in parts[1:]:
                total = fold(total, self._fetch(p, root, copy=False), out=total)
        return total

    def _fetch(self, x: Any, device: int, copy: bool) -> Any:
        return self.backend.to_device(x, device, copy=copy)


class PeerCopyCollectives(Collectives):
    """Reduce on the first device in device order, then copy the result to the others."""

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

    def all_to_all(self, blocks: Sequence[Sequence[Any]]) -> list[list[Any]]:
        return [
            [None if row[j] is None else self._fetch(row[j], d, copy=i != j)
             for i, row in enumerate(blocks)]
            for j, d in enumerate(self.devices)
        ]  # fmt: skip
