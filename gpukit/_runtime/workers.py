"""One worker thread per device: run each device's share of the work there.

Chainer's ``parallel_updater`` and gpu4pyscf's ``multi_gpu`` are the model: device
*i*'s work runs in a thread of its own, inside ``backend.worker_context(i)``
(``cupy.cuda.Device(i)`` plus that device's stream on CuPy, the virtual device on
NumPy), so launches on different devices overlap. Each task runs in a copy of the
caller's ``contextvars`` context: the backend selection, transfer guard and any
other ContextVar the caller set are seen by the workers.

An exception in one device's task reaches the caller; tasks not yet started are
cancelled and the others are waited for, so no worker is left touching the data
and nothing deadlocks. A task that itself fans out (a ``map_shards`` function
calling a sharded operation) runs its sub-tasks inline, so a worker never waits
on its own queue.
"""

from __future__ import annotations

import contextvars
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from ..backend import Backend

__all__ = ["map_devices", "run_on_devices"]

T = TypeVar("T")

_pools: weakref.WeakKeyDictionary[Backend, dict[int, ThreadPoolExecutor]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()
_local = threading.local()  # .worker: True inside one of our worker threads


def _pool(backend: Backend, device: int) -> ThreadPoolExecutor:
    with _lock:
        pools = _pools.setdefault(backend, {})
        pool = pools.get(device)
        if pool is None:
            pool = pools[device] = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"gpukit-{backend.name}:{device}"
            )
        return pool


def _run(backend: Backend, device: int, fn: Callable[[], T]) -> T:
    outer = getattr(_local, "worker", False)
    _local.worker = True
    try:
        with backend.worker_context(device):
            return fn()
    finally:
        _local.worker = outer


def run_on_devices(backend: Backend, tasks: Sequence[tuple[int, Callable[[], T]]]) -> list[T]:
    """Run ``fn`` of each ``(device, fn)`` on that device's worker; results in order.

    Returns when every task has returned (on CuPy: once its kernels are *queued*; the
    host waits for the device only where a result is read). With one task, or from
    inside a worker, tasks run inline in the calling thread, in the device's context.

    Raises
    ------
    Exception
        The first (in task order) exception a task raised, after the other tasks
        finished or were cancelled.
    """
    if len(tasks) == 1 or getattr(_local, "worker", False):
        return [_run(backend, device, fn) for device, fn in tasks]
    futures: list[Future[T]] = [
        _pool(backend, device).submit(contextvars.copy_context().run, _run, backend, device, fn)
        for device, fn in tasks
    ]
    done, pending = wait(futures, return_when=FIRST_EXCEPTION)
    if pending and any(f.exception() is not None for f in done):
        for f in pending:
            f.cancel()
        wait(pending)  # the running ones finish their shard; none is left mid-write
    for f in futures:
        if not f.cancelled() and f.exception() is not None:
            raise f.exception()  # type: ignore[misc]
    return [f.result() for f in futures]


def map_devices(
    backend: Backend, devices: Sequence[int], fn: Callable[..., T], *per_device: Sequence[Any]
) -> list[T]:
    """``[fn(*args_i) on device i]`` for the i-th entry of each sequence in ``per_device``."""
    return run_on_devices(
        backend,
        [
            (d, (lambda args=tuple(seq[i] for seq in per_device): fn(*args)))
            for i, d in enumerate(devices)
        ],
    )
