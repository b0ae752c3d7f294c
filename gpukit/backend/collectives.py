"""Collectives over the devices of one backend: all-reduce, all-gather, broadcast.

One small interface, three implementations chosen by the backend
(``Backend.collectives``):

* :class:`InMemoryCollectives` -- virtual CPU devices share host memory: plain
  NumPy arithmetic, each device still gets its own buffer;
* :class:`PeerCopyCollectives` -- device-to-device copies (``cupy.copy`` inside
  ``cupy.cuda.Device(dst)``), after synchronising the source device, since a peer
  copy on the destination's stream does not wait for the source's stream (a race
  gpu4pyscf fixed twice);
* a backend's own, such as the CuPy backend's NCCL ring collectives
  (``gpukit_cupy.collectives``), built on :class:`PeerCopyCollectives`.

Collectives are called by the host between per-device phases, never from inside a
worker, so a failing worker cannot leave the others waiting at a barrier.
``parts[i]`` is the array on ``devices[i]``; results come back the same way.
Reductions of the root implementations add in device order (0, 1, ..., N-1):
deterministic, the same sum for every run with the same devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the contract's own package: a type only, not an import cycle
    from . import Backend

__all__ = ["Collectives", "InMemoryCollectives", "PeerCopyCollectives"]


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
