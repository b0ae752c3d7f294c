"""Collectives between the numpy backend's virtual CPU devices (:mod:`gpukit._host.virtual`).

The devices share host memory: plain NumPy arithmetic, each device still gets its own
buffer (the peer-copy defaults of :mod:`gpukit.backend.collectives`), except where a view
is enough.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpukit.backend.collectives import PeerCopyCollectives

__all__ = ["InMemoryCollectives"]


class InMemoryCollectives(PeerCopyCollectives):
    """Virtual devices: one memory space, nothing to synchronise; copies stay private."""

    def all_to_all(self, blocks: Sequence[Sequence[Any]]) -> list[list[Any]]:
        # One memory space: a block is placed on its destination as a view, and the
        # caller's assembly of the received blocks is the one copy made.
        return [
            [None if row[j] is None else self.backend.to_device(row[j], d, copy=False)
             for row in blocks]
            for j, d in enumerate(self.devices)
        ]  # fmt: skip
