"""The backend contract: what a gpukit backend provides and what it may rely on.

A backend translates gpukit's validated, dispatched calls to one array library.
The front-end (``gpukit.*``) owns validation, dispatch, transfers and errors; a
backend only translates. Methods written against ``self.xp`` live here once
(thinc's ``Ops`` pattern), so a backend overrides only what its library does
differently or faster.

A backend is a subclass of :class:`Backend` made by a zero-argument factory.
The factory raises :class:`~gpukit.errors.BackendUnavailableError` when the
backend cannot run on this machine (library missing, no driver, no device);
gpukit then lists it as unavailable with that reason.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from ._ops.fft import FFTOps
from ._ops.linalg import LinalgOps
from ._ops.user import UserKernelOps
from .collectives import PeerCopyCollectives
from .graphs import CaptureFailed
from .kernels import KERNELS

__all__ = ["Backend", "Device"]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)


@dataclass(frozen=True)
class Device:
    """One device of a backend, as listed by :func:`gpukit.devices`.

    Attributes
    ----------
    backend : str
        Name of the backend owning the device.
    index : int
        The device's ordinal within its backend (``cupy.cuda.Device(index)`` on CuPy).
    name : str
        Human-readable model name (``"NVIDIA H100 80GB HBM3"``, ``"cpu"``).
    memory_total : int or None
        Bytes of memory on the device; ``None`` where it cannot be known.
    compute_capability : str or None
        ``"9.0"`` for an H100; ``None`` for non-CUDA devices.
    """

    backend: str
    index: int
    name: str
    memory_total: int | None = None
    compute_capability: str | None = None

    def __str__(self) -> str:
        return f"{self.backend}:{self.index}"


class Backend(FFTOps, LinalgOps, UserKernelOps):
    """Base class of every gpukit backend.

    Subclasses set :attr:`name`, :attr:`xp` and :attr:`is_device`, and implement
    the array-placement methods below. Everything else has a default written
    against :attr:`xp`.

    Attributes
    ----------
    name : str
        The name users select the backend by (``GPUKIT_BACKEND=name``).
    xp : module
        The array namespace (``numpy``, ``cupy``, ...).
    is_device : bool
        ``True`` when arrays live off the host, so that host inputs reaching this
        backend are transfers, counted and governed by the transfer guard.
    flushes_single_subnormals : bool
        ``True`` when the backend's kernels read and write single-precision (float32,
        complex64) subnormals as zeros of the same sign (CUDA's flush-to-zero mode);
        double precision keeps them on every backend (docs/numerics.rst).
    lu_spreads_nan : bool
        ``True`` when the backend's LU factorisation (behind ``solve``, ``inv``) turns a
        NaN or inf in the matrix into NaN in its result, as LAPACK's does. cuSOLVER's
        may return finite values instead, so that with ``check_finite=False`` a
        non-finite matrix can give a finite, meaningless answer (docs/linalg.rst).
    """

    name: str = "abstract"
    xp: ModuleType
    is_device: bool = False
    flushes_single_subnormals: bool = False
    lu_spreads_nan: bool = True

    # -- array placement: every backend implements these ------------------------------------
    def owns(self, x: Any) -> bool:
        """Whether ``x`` is one of this backend's native arrays.

        The answer must follow from ``type(x)`` alone: gpukit asks once per type and
        keeps the answer until the registry changes (:mod:`gpukit._runtime.plans`)."""
        raise NotImplementedError

    def capture_graph(self, work: Any) -> tuple[Any, Any]:
        """Capture ``work()`` (device work, no host synchronisation) once, without running
        it: returns the :class:`~gpukit.backend.graphs.Captured` work, whose ``launch()``
        replays it in one launch, and what ``work()`` returned. Raises
        :class:`~gpukit.backend.graphs.CaptureFailed` with the reason when it cannot (here:
        this backend has no graphs)."""
        raise CaptureFailed(f"the {self.name} backend has no CUDA graphs")

    def asarray(self, obj: Any, dtype: Any = None, device: int | None = None) -> Any:
        """Convert ``obj`` to a native array on ``device`` (the current device if None)."""
        raise NotImplementedError

    def to_numpy(self, x: Any) -> np.ndarray:
        """Copy a native array to a host ``numpy.ndarray``."""
        return np.asarray(x)

    def device_of(self, x: Any) -> int:
        """Index of the device the native array ``x`` lives on."""
        return 0

    def device_count(self) -> int:
        """Number of devices this backend can use."""
        return 1

    def devices(self) -> list[Device]:
        """Describe every device this backend can use."""
        return [Device(self.name, i, self.name) for i in range(self.device_count())]

    def current_device(self) -> int:
        """Index of the device new arrays are placed on in this thread."""
        return 0

    def use_device(self, index: int) -> contextlib.AbstractContextManager[Any]:
        """Context manager making ``index`` the current device (already validated)."""
        return contextlib.nullcontext()

    def synchronize(self, device: int | None = None) -> None:
        """Block until queued work on ``device`` (every device if None) is done."""

    # -- ordering between streams of work -------------------------------------------------------
    # A device backend queues work asynchronously on streams: the calling thread's current
    # stream of each device, and each device's worker stream. Work that crosses streams is
    # ordered with these two, never by blocking the host (CUDA events on CuPy).
    def record_event(self, device: int) -> Any:
        """A marker of the work queued so far on the calling thread's current stream of
        ``device`` (None where work runs in program order, as on the host)."""
        return None

    def wait_event(self, event: Any, device: int) -> None:
        """Make work the calling thread queues on ``device`` from now on wait for ``event``
        (from :meth:`record_event`, on any device; None: nothing to wait for)."""

    # -- several devices: see gpukit._runtime.workers, .collectives, gpukit.sharding ---------
    def worker_context(self, index: int) -> contextlib.AbstractContextManager[Any]:
        """Context a per-device worker thread runs device ``index``'s work in.

        CuPy adds the device's own stream, so work of different devices overlaps;
        :func:`gpukit._runtime.workers.run_on_devices` orders it with the caller's.
        """
        return self.use_device(index)

    def to_device(self, x: Any, device: int, copy: bool = True) -> Any:
        """``x`` (a native array of any layout) on ``device``; ``copy=False`` may return
        ``x`` or a view.

        Ordered on the calling thread's current streams without blocking the host: the
        copy waits for the work queued on ``x``'s device, and work queued there later
        (reusing ``x``'s memory) waits for the copy. Call it from the thread that owns
        the data, not from a per-device worker.
        """
        return self.asarray(x.copy() if copy else x, device=device)

    def collectives(self, devices: tuple[int, ...]) -> Any:
        """The :class:`~gpukit.backend.collectives.Collectives` for ``devices`` (peer copies)."""
        return PeerCopyCollectives(self, devices)

    def versions(self) -> dict[str, str]:
        """Library versions worth reporting in ``gpukit info``."""
        return {}

    # -- numerics: see gpukit._matmul and gpukit._select.configure ----------------------------
    def matmul(self, a: Any, b: Any, precision: str | None) -> Any:
        """``a @ b`` with NumPy's broadcasting; ``precision`` is ``None``, ``"highest"`` or
        ``"tf32"``, a hint a backend without reduced-precision products ignores."""
        return self.xp.matmul(a, b)

    def set_tf32(self, enabled: bool) -> None:
        """Whether matrix products whose call names no precision use TF32 (``GPUKIT_TF32``).

        Applied once, when the backend is created. A backend without reduced-precision
        products ignores it.
        """

    # -- memory: see gpukit._runtime (memory, memstats, memlimit, pinned) -----------------
    def out_of_memory(self, exc: BaseException) -> int | None:
        """Bytes asked for if ``exc`` is our allocation failure (-1: unknown), else None."""
        return -1 if isinstance(exc, MemoryError) else None

    def release_unused(self) -> None:
        """Return pooled, unused memory of every device to the system (``gk.empty_cache``),
        with what the calling thread's library caches (FFT plans) hold; gpukit calls it in
        each of its device workers too."""

    def persistent(self, host: np.ndarray, device: int) -> Any:
        """A copy of ``host`` on ``device`` for one of gpukit's buffers that live as long as
        the process (a device's status slots, a kernel's counters).

        A backend with a memory pool allocates it outside the pool: a pool serves a small
        request by splitting a cached free block and keeps the whole block while any part
        of it is in use, so a few bytes kept for good could hold a large block against
        :meth:`release_unused`. The default is :meth:`asarray`.
        """
        return self.asarray(host, device=device)

    def memory_stats(self, device: int) -> dict[str, int | None]:
        """Memory figures of ``device`` in bytes, ``None`` where unknown.

        Keys: ``free`` and ``total`` (the device), ``in_use`` (blocks held by live arrays),
        ``pool_held`` (everything the pool holds, in use or cached) and ``limit`` (the
        pool's cap, ``None`` when uncapped).
        """
        return {"free": None, "total": None, "in_use": None, "pool_held": None, "limit": None}

    def set_memory_limit(self, device: int, nbytes: int | None) -> bool:
        """Cap the pool of ``device`` at ``nbytes`` (None: no cap); False if there is no pool."""
        return False

    def asarray_pinned(self, host: np.ndarray, device: int | None = None) -> Any:
        """Copy ``host`` to ``device`` staged through pinned memory, asynchronously.

        The default is a plain :meth:`asarray`: a backend without pinned memory has
        nothing faster to offer.
        """
        return self.asarray(host, device=device)

    def empty_pinned(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialised host array in page-locked memory (plain memory by default)."""
        return np.empty(shape, dtype=dtype)

    # -- custom kernels: see gpukit.kernels -----------------------------------------------------
    def kernel(self, name: str) -> Any:
        """The implementation of the registered kernel ``name``: ``gk.kernels.<name>``, or
        one of the internal kernels ``gk.nn`` and ``gk.optim`` call
        (:data:`gpukit.backend.kernels.INTERNAL_KERNELS`).

        On a backend of several devices, the internal ``activation`` and
        ``activation_backward`` (and what their ``bind`` returns) must compute and
        allocate on their first array's device whichever device is current: an
        activation layer's warm call makes no device current for them."""
        what = f"gk.kernels.{name}" if name in KERNELS else f"the internal kernel {name!r}"
        raise NotImplementedError(
            f"{what} has no implementation on backend {self.name!r}; "
            "run it on the numpy or cupy backend"
        )

    # -- shared helpers -------------------------------------------------------------------------
    def nbytes(self, x: Any) -> int:
        """Size of a native array in bytes."""
        return int(x.nbytes)

    def __repr__(self) -> str:
        return f"<gpukit backend {self.name!r}>"
