"""Checking kernel launches without running them, for tests of shapes at the limits.

A kernel at the shapes where launch limits bite (a million rows, more than 2**31
elements) takes minutes to simulate on the host, or memory the host does not have.
Inside :func:`launch_check_only` every launch still compiles the kernel, converts and
checks its arguments, checks the launch configuration against the device's limits
(``Function._check_config``: the CUDA programming guide's "Technical Specifications per
Compute Capability" table, ``gridDim.x`` <= 2**31 - 1, ``gridDim.y``/``z`` <= 65,535,
at most 1,024 threads a block, the shared memory per block) and the placement and
stream-order rules (``cupysim.runtime.launch``), then skips the kernel's body. Outputs
keep whatever their memory held: a test in this mode asserts on the launches it
recorded, never on values. Host memory for device arrays is reserved lazily, so an
array of 2**31 + 1 elements costs address space only until something writes it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["Launch", "active", "launch_check_only", "record"]


@dataclass(frozen=True)
class Launch:
    """One launch that passed every check: the kernel, its grid, block and shared memory."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int


_lock = threading.Lock()
_recorders: list[list[Launch]] = []


def active() -> bool:
    """Whether launches skip their bodies (some thread is inside ``launch_check_only``)."""
    return bool(_recorders)


def record(launch: Launch) -> None:
    with _lock:
        for launches in _recorders:
            launches.append(launch)


@contextmanager
def launch_check_only() -> Iterator[list[Launch]]:
    """Check every kernel launch inside and skip its body; yields the launches, in order.

    The mode is process-wide (a launch from a worker thread is checked only, too).
    """
    launches: list[Launch] = []
    with _lock:
        _recorders.append(launches)
    try:
        yield launches
    finally:
        with _lock:
            _recorders.remove(launches)
