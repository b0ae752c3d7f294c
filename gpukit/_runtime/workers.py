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

A worker's stream is ordered with the caller's explicitly, never by blocking the
host nor by relying on CUDA's legacy default stream (which CuPy's per-thread default
stream, ``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1``, does not have): each task waits
for an event recorded on the caller's current stream of its device, and the caller's
stream waits for an event the task recorded on its own stream when it returned.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from ..backend import Backend

__all__ = ["failed_device", "map_devices", "on_every_worker", "run_on_devices"]

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


def _run(backend: Backend, device: int, fn: Callable[[], T], ready: Any) -> tuple[T, Any]:
    """``fn()`` in device ``device``'s worker context, after ``ready``; with the event
    marking the end of the work it queued."""
    outer = getattr(_local, "worker", False)
    _local.worker = True
    try:
        with backend.worker_context(device):
            backend.wait_event(ready, device)  # the caller's work on this device comes first
            return fn(), backend.record_event(device)
    except BaseException as exc:
        if failed_device(exc) is None:  # the innermost device a nested task failed on
            with contextlib.suppress(AttributeError):  # an exception type without __dict__
                exc.gpukit_device = device
        raise
    finally:
        _local.worker = outer


def failed_device(exc: BaseException) -> int | None:
    """The device whose worker task raised ``exc`` (None: not raised in a device's task)."""
    return getattr(exc, "gpukit_device", None)


def on_every_worker(backend: Backend, fn: Callable[[], Any]) -> None:
    """Run ``fn()`` once on each worker thread ``backend`` has started, and wait.

    For state a library keeps per thread (CuPy's cuFFT plan caches). From inside a
    worker it does nothing: waiting on the workers' queues there could deadlock.
    """
    if getattr(_local, "worker", False):
        return
    with _lock:
        pools = list(_pools.get(backend, {}).values())
    for future in [pool.submit(fn) for pool in pools]:
        future.result()


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
    ready = [backend.record_event(device) for device, _ in tasks]
    if len(tasks) == 1 or getattr(_local, "worker", False):
        results = []
        for (device, fn), event in zip(tasks, ready, strict=True):
            results.append(_run(backend, device, fn, event))
            backend.wait_event(results[-1][1], device)
        return [r for r, _ in results]
    futures: list[Future[tuple[T, Any]]] = [
        _pool(backend, device).submit(
            contextvars.copy_context().run, _run, backend, device, fn, event
        )
        for (device, fn), event in zip(tasks, ready, strict=True)
    ]
    done, pending = wait(futures, return_when=FIRST_EXCEPTION)
    if pending and any(f.exception() is not None for f in done):
        for f in pending:
            f.cancel()
        wait(pending)  # the running ones finish their shard; none is left mid-write
    for (device, _), f in zip(tasks, futures, strict=True):
        if not f.cancelled() and f.exception() is None:  # what they wrote, also on failure
            backend.wait_event(f.result()[1], device)
    for f in futures:
        if not f.cancelled() and f.exception() is not None:
            raise f.exception()  # type: ignore[misc]
    return [f.result()[0] for f in futures]


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
