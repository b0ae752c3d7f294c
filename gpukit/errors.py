"""The exception and warning types every gpukit backend raises.

Each type subclasses the builtin or NumPy type a user already catches, so
``except ValueError`` or ``except numpy.linalg.LinAlgError`` keeps working
whichever backend ran the operation.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

__all__ = [
    "BackendUnavailableError",
    "ConvergenceWarning",
    "DeviceMismatchError",
    "GpukitError",
    "GpukitWarning",
    "KernelSyntaxError",
    "LinAlgError",
    "NonFiniteError",
    "OutOfMemoryError",
    "SchedulerUnreachableError",
    "TransferGuardError",
    "UnknownBackendError",
    "WorkerLostError",
]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str, category: type[Warning]) -> None:
    """Emit a warning attributed to the first caller outside gpukit (pandas' rule).

    A fixed ``stacklevel`` breaks whenever a wrapper adds a frame; this walks the stack to
    the user's code, so ``-W error`` and warning filters point at the user's own line.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)


#: The fix printed with every "cannot use the GPU" message.
GPU_FIX = (
    'install the CuPy build matching your CUDA driver (pip install "gpukit[cuda12]" '
    'or "gpukit[cuda13]"), or run on the CPU with GPUKIT_BACKEND=numpy'
)


class GpukitError(Exception):
    """Base class of every exception gpukit raises itself."""


class GpukitWarning(UserWarning):
    """Base class of every warning gpukit emits."""


class UnknownBackendError(GpukitError, ValueError):
    """A backend name that no registered backend carries.

    Examples
    --------
    >>> import gpukit as gk
    >>> try:
    ...     gk.set_backend("tpu")
    ... except gk.UnknownBackendError as e:
    ...     print(type(e).__mro__[2].__name__)
    ValueError
    """


class BackendUnavailableError(GpukitError, RuntimeError):
    """A registered backend that cannot run here (library missing, no driver, no device).

    Attributes
    ----------
    backend : str
        The backend's name.
    reason : str
        Why it cannot run (the underlying error, e.g. ``cudaErrorInsufficientDriver``).
    """

    def __init__(self, backend: str, reason: str, fix: str | None = None):
        self.backend = backend
        self.reason = reason
        self.fix = fix
        msg = f"backend {backend!r} cannot run here: {reason}"
        if fix:
            msg += f". Fix: {fix}"
        super().__init__(msg)


class DeviceMismatchError(GpukitError, ValueError):
    """Arrays of two device backends, or of two devices, given to one operation."""


class TransferGuardError(GpukitError, RuntimeError):
    """An implicit host/device transfer while the transfer guard says ``disallow``."""


class KernelSyntaxError(GpukitError, SyntaxError):
    """A ``gk.elementwise``/``gk.reduction`` body uses a construct outside the kernel language.

    Raised when the kernel is defined; the message names the construct, and ``filename``
    and ``lineno`` point at the line (as a Python ``SyntaxError`` does).
    """


class LinAlgError(GpukitError, np.linalg.LinAlgError):
    """A singular or non-positive-definite matrix, raised on every backend.

    Examples
    --------
    >>> import numpy as np
    >>> issubclass(LinAlgError, np.linalg.LinAlgError)
    True
    """


class OutOfMemoryError(GpukitError, MemoryError):
    """An allocation that failed inside a gpukit operation, after one retry.

    Raised by every gpukit operation when its backend runs out of memory twice: once,
    then again after gpukit released the pool's unused blocks. The message names the
    operation, the bytes asked for, what the device had, and the fixes.

    Attributes
    ----------
    operation : str or None
        The public operation that failed (``"gk.fft.fft"``).
    requested : int or None
        Bytes the failed allocation asked for; ``None`` where the library does not say.
    stats : gpukit.MemoryStats or None
        The device's memory figures just after the second failure.

    Examples
    --------
    >>> issubclass(OutOfMemoryError, MemoryError)
    True
    """

    def __init__(
        self,
        message: str,
        *,
        operation: str | None = None,
        requested: int | None = None,
        stats: object = None,
    ):
        super().__init__(message)
        self.operation = operation
        self.requested = requested
        self.stats = stats


class SchedulerUnreachableError(GpukitError, TimeoutError):
    """No Dask scheduler answered at the address :func:`gpukit.distributed.client` was
    given (``GPUKIT_DASK_SCHEDULER``) in time; the message names the address."""


class WorkerLostError(GpukitError, RuntimeError):
    """A Dask worker died while computing a step gpukit started (a Krylov iteration, a
    conversion to shards); the computation stopped rather than finishing elsewhere."""


class NonFiniteError(GpukitError, FloatingPointError):
    """A computation produced NaN or infinity where continuing would spread it.

    Raised by :func:`gpukit.nn.fit` when a batch's loss is not finite (a learning rate
    too high, bad data): training stops before that batch's update, so the model keeps
    the weights of the last finite step. A :class:`FloatingPointError`, as NumPy raises
    for invalid floating-point results under ``np.errstate(all="raise")``.

    Attributes
    ----------
    epoch, batch : int or None
        Where it happened (0-based), when it happened in a loop.
    value : float or None
        The non-finite value.
    history : dict or None
        What :func:`gpukit.nn.fit` would have returned for the epochs completed.

    Examples
    --------
    >>> issubclass(NonFiniteError, FloatingPointError)
    True
    """

    def __init__(
        self,
        message: str,
        *,
        epoch: int | None = None,
        batch: int | None = None,
        value: float | None = None,
        history: dict | None = None,
    ):
        super().__init__(message)
        self.epoch, self.batch, self.value, self.history = epoch, batch, value, history


class ConvergenceWarning(GpukitWarning):
    """An iterative method stopped before reaching its tolerance."""
