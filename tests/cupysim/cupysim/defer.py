"""Deferred execution (``CUPYSIM_DEFER=1``): each stream's work waits in a queue.

By default the simulator runs every operation when it is enqueued. Under ``CUPYSIM_DEFER=1``
an operation whose values the simulator computes in a body (CuPy's elementwise results,
fills, copies between arrays, cuBLAS level-1/2 updates) is queued on its stream instead, and
runs only when something needs it:

* a synchronisation of the host (a stream, an event, a device; a blocking copy; a query);
* an operation ordered after it (the same stream later, or another stream through an event
  or the legacy default stream's implicit ordering) that reads memory when enqueued;
* a read of an array's values by the simulator itself for the calling thread's current
  stream: it runs what that stream's next operation is ordered after.

Queued work that nothing orders before a read stays queued, so the read sees the memory as
it was, as on a GPU where the other stream has not got there yet. Whenever several streams'
queues run, they interleave in a random order seeded by ``CUPYSIM_DEFER_SEED`` (default 0),
each stream in its own order and after the work its operations wait for.
"""

from __future__ import annotations

import random
import threading
from collections import deque

from . import streams as _streams
from .config import config

_queues: dict[int, deque] = {}
_rng = random.Random(config.defer_seed)
_tls = threading.local()
#: Operations queued and not yet run (read without the lock: a hint).
queued = 0


class _Op:
    __slots__ = ("body", "clock", "tick")

    def __init__(self, tick: int, clock: dict[int, int], body) -> None:
        self.tick, self.clock, self.body = tick, clock, body


def enqueue(stream, tick: int, body) -> None:
    """Queue ``body``, the operation just checked on ``stream`` as its ``tick``."""
    global queued
    with _streams.lock:
        _queues.setdefault(stream.index, deque()).append(_Op(tick, dict(stream.clock), body))
        queued += 1


def run_until(target: dict[int, int]) -> None:
    """Run every queued operation ``target`` covers, and what those wait for."""
    global queued
    if not queued or getattr(_tls, "running", False):
        return
    with _streams.lock:
        want = dict(target)
        while True:
            ready = sorted(i for i, q in _queues.items() if q and q[0].tick <= want.get(i, 0))
            if not ready:
                return
            index = _rng.choice(ready)
            op = _queues[index][0]
            waits = False
            for other, tick in op.clock.items():
                q = _queues.get(other)
                if other != index and q and q[0].tick <= tick:
                    want[other] = max(want.get(other, 0), tick)
                    waits = True
            if waits:
                continue  # the work it waits for is wanted now: it comes first
            _queues[index].popleft()
            queued -= 1
            _tls.running = True
            try:
                op.body()
            finally:
                _tls.running = False


def before_read(device: int) -> None:
    """The simulator reads memory for the calling thread's current stream on ``device``."""
    if queued and not getattr(_tls, "running", False):
        run_until(_streams.ordered_before(_streams.current(device)))
