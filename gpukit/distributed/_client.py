"""``gk.distributed.client()``: the process's one Dask client, and computing through it.

With ``GPUKIT_DASK_SCHEDULER`` set (an address such as ``tcp://10.0.0.5:8786``), the
client connects there; otherwise it starts an in-process ``LocalCluster`` (worker threads
in this process, as many as the machine has cores), so a script written for a cluster
runs on a laptop unchanged. One client per process, made under a lock; a forked child
makes its own. The client is Dask's default scheduler while it is open.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ..errors import SchedulerUnreachableError, WorkerLostError

__all__ = ["ENV_VAR", "client", "close", "computing", "status"]

#: The environment variable naming the scheduler to connect to.
ENV_VAR = "GPUKIT_DASK_SCHEDULER"

_lock = threading.Lock()
_client: Any = None
_pid: int | None = None
_address: str | None = None


def _reset_in_child() -> None:
    # The parent's client (its sockets, its event-loop thread) is unusable in a forked
    # child, and the lock may have been held at the fork: start afresh.
    global _lock, _client, _pid, _address
    _lock, _client, _pid, _address = threading.Lock(), None, None, None


os.register_at_fork(after_in_child=_reset_in_child)


def _open() -> Any:
    """The client made here, if it is still open in this process."""
    if _client is None or _pid != os.getpid() or _client.status in ("closing", "closed"):
        return None
    return _client


def client(*, timeout: float = 30.0) -> Any:
    """The process's Dask client: a connection to ``GPUKIT_DASK_SCHEDULER``, or an
    in-process cluster.

    The first call makes it; later calls return the same client until it is closed
    (:func:`close`, ``client.close()`` or leaving a ``with`` block), after which the next
    call makes a new one. Thread-safe; a forked child makes its own. The client becomes
    Dask's default scheduler, so ``.compute()`` on gpukit's lazy results runs there.

    Parameters
    ----------
    timeout : float, default 30
        Seconds to wait for the scheduler at ``GPUKIT_DASK_SCHEDULER`` to answer.

    Returns
    -------
    distributed.Client
        Usable as a context manager: ``with gk.distributed.client() as c:`` closes it
        (and the in-process cluster it started) at the end of the block.

    Raises
    ------
    SchedulerUnreachableError
        No scheduler answered at ``GPUKIT_DASK_SCHEDULER`` within ``timeout`` seconds
        (the message names the address).
    ValueError
        ``GPUKIT_DASK_SCHEDULER`` is not an address Dask understands, or ``timeout`` is
        not positive.
    ImportError
        Dask's ``distributed`` is not installed (``pip install "gpukit[dask]"``).

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import gpukit as gk
    >>> with gk.distributed.client() as c:  # an in-process cluster on this machine
    ...     x = da.ones((4, 6), chunks=(2, 6))
    ...     y = gk.matmul(x, np.ones((6, 3)))
    ...     y.compute().tolist()[0]
    [6.0, 6.0, 6.0]
    """
    global _client, _pid, _address
    if not (isinstance(timeout, int | float) and timeout > 0):
        raise ValueError(
            f"gk.distributed.client: timeout must be a positive number of seconds, got {timeout!r}"
        )
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError(
            'gk.distributed.client needs Dask\'s distributed: pip install "gpukit[dask]"'
        ) from exc
    with _lock:
        current = _open()
        if current is not None:
            return current
        address = os.environ.get(ENV_VAR, "").strip() or None
        if address is None:
            made = Client(processes=False, dashboard_address=":0", set_as_default=True)
        else:
            made = _connect(Client, address, float(timeout))
        _client, _pid, _address = made, os.getpid(), address
        return made


@contextlib.contextmanager
def _undone_on_failure() -> Iterator[None]:
    """A Client makes itself Dask's default scheduler before it connects, and a failed one
    does not undo that: every later ``.compute()`` would ask for a client. Undo it here."""
    import dask

    saved = {"scheduler": dask.config.get("scheduler", None)}
    try:
        yield
    except BaseException:
        dask.config.set(saved)
        raise


def _connect(client_type: type, address: str, timeout: float) -> Any:
    try:
        with _undone_on_failure():
            return client_type(address, timeout=timeout, set_as_default=True)
    except ValueError as exc:
        error: Exception = ValueError(
            f"{ENV_VAR}={address!r} is not a Dask scheduler address ({exc}); expected e.g. "
            "tcp://host:8786"
        )
    except (OSError, TimeoutError) as exc:
        error = SchedulerUnreachableError(
            f"no Dask scheduler answered at {address} ({ENV_VAR}) within {timeout:g} s: "
            f"{exc}. Start one there (dask scheduler; dask worker {address}), fix "
            f"{ENV_VAR}, or unset it to use an in-process cluster"
        )
    # The half-made Client is garbage in a reference cycle (through the traceback just
    # dropped). Finalize it now: its __del__ stops its event-loop runner, and run by the
    # collector at a random later moment -- while another Client or LocalCluster starts
    # its runner under distributed's class-wide LoopRunner lock -- it deadlocks (seen:
    # the test suite hung in LocalCluster() after the failed-connection tests).
    gc.collect()
    raise error


def close() -> None:
    """Close the client made by :func:`client` (and its in-process cluster), if open.

    Examples
    --------
    >>> import gpukit as gk
    >>> c = gk.distributed.client()
    >>> gk.distributed.close()
    >>> c.status
    'closed'
    """
    global _client
    with _lock:
        current, _client = _open(), None
    if current is not None:
        current.close()


def status() -> dict[str, Any] | None:
    """The open client's set-up, for ``gpukit info``: None when there is none."""
    with _lock:
        current, address = _open(), _address
    if current is None:
        return None
    workers = current.scheduler_info().get("workers", {})
    return {
        "scheduler": current.scheduler.address,
        "kind": f"connected ({ENV_VAR})" if address else "in-process LocalCluster",
        "workers": len(workers),
        "threads": sum(w.get("nthreads", 0) for w in workers.values()),
    }


def _device_chunks(like: Any) -> bool:
    """Whether the Dask array ``like`` has chunks of a device backend (CuPy's)."""
    from .._runtime.placement import owner_of

    owner = owner_of(getattr(like, "_meta", None))
    return owner is not None and owner.is_device


@contextlib.contextmanager
def computing(op: str, like: Any = None) -> Iterator[None]:
    """A Dask computation gpukit starts: device chunks computed in order, a worker's death
    one error.

    Dask's threaded scheduler runs tasks on threads of its own, and under CuPy's per-thread
    default stream (``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1``) each thread queues device
    work on a stream of its own, which nothing orders with the others': Dask's own tasks
    (a concatenation, an element-wise step) would read chunks another thread's stream is
    still writing. So when ``like`` (a Dask array of the computation) has device chunks and
    no scheduler is configured (no distributed client, no ``dask.config`` choice), gpukit
    computes on the calling thread; a configured scheduler is used as it is.
    """
    import dask

    serial = like is not None and dask.config.get("scheduler", None) is None
    serial = serial and _device_chunks(like)
    with dask.config.set(scheduler="synchronous") if serial else contextlib.nullcontext():
        with _killed_worker(op):
            yield


@contextlib.contextmanager
def _killed_worker(op: str) -> Iterator[None]:
    """Turn a Dask worker's death during a computation gpukit started into one error."""
    try:
        yield
    except Exception as exc:
        # Only distributed raises KilledWorker, so it is imported already when one comes.
        killed = getattr(sys.modules.get("distributed"), "KilledWorker", None)
        if killed is None or not isinstance(exc, killed):
            raise
        raise WorkerLostError(
            f"{op}: a Dask worker died while computing it ({exc}); the computation was "
            "stopped, not finished elsewhere. Check the worker's log (out of memory?), "
            "then run the call again"
        ) from exc
