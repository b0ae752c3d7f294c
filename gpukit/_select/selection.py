"""Which backend is active: late, context-local selection.

Resolution order for :func:`get_backend`:

1. the innermost ``with use_backend(...)`` of the current context (a ContextVar,
   so threads and asyncio tasks never see each other's choice);
2. the process default set by :func:`set_backend`;
3. ``GPUKIT_BACKEND`` (``auto`` when unset), read at the first use, not at import.

``auto`` takes ``cupy`` when CuPy imports and a CUDA device is usable, otherwise
``numpy``, and logs why on the ``gpukit`` logger. A backend named explicitly
that cannot run raises :class:`~gpukit.errors.BackendUnavailableError`; only
``auto`` falls back.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from contextvars import ContextVar

from ..backend import Backend
from ..errors import BackendUnavailableError
from . import registry as _registry

__all__ = ["active", "get_backend", "selection_reason", "set_backend", "use_backend"]

logger = logging.getLogger("gpukit")

ENV_VAR = "GPUKIT_BACKEND"

_scoped: ContextVar[Backend | None] = ContextVar("gpukit_backend", default=None)
_default: Backend | None = None
_default_reason = ""
_lock = threading.Lock()


def _set_default(backend: Backend, reason: str) -> None:
    """Make ``backend`` the default (the caller holds ``_lock``)."""
    global _default, _default_reason
    _default, _default_reason = backend, reason


def _auto() -> tuple[Backend, str]:
    try:
        backend = _registry.load("cupy")
    except BackendUnavailableError as exc:
        reason = f"{ENV_VAR}=auto chose numpy because cupy is unavailable: {exc.reason}"
        logger.info(reason)
        return _registry.load("numpy"), reason
    reason = f"{ENV_VAR}=auto chose cupy: CuPy imports and {backend.device_count()} GPU(s) usable"
    logger.info(reason)
    return backend, reason


def _resolve(name: str, how: str) -> tuple[Backend, str]:
    if not isinstance(name, str):
        raise TypeError(
            f"backend name must be a str (or, for use_backend, a Backend); "
            f"got {type(name).__name__} {name!r}"
        )
    name = name.strip().lower()
    if name in ("", "auto"):
        return _auto()
    return _registry.load(name), f"{how} named {name!r}"


def _default_backend() -> Backend:
    with _lock:
        if _default is None:
            _set_default(*_resolve(os.environ.get(ENV_VAR, "auto"), ENV_VAR))
        return _default


def active() -> Backend | None:
    """The backend selected in this context, or None while none is resolved yet.

    The innermost ``use_backend`` block's backend, else the process default; unlike
    :func:`get_backend` it never reads ``GPUKIT_BACKEND`` nor loads a backend, so a hot
    path can ask it on every call and fall back to :func:`get_backend` on None.

    Returns
    -------
    gpukit.backend.Backend or None
        The active backend, or None before the first call that needed one.

    Examples
    --------
    >>> from gpukit._select import selection
    >>> with selection.use_backend("numpy") as b:
    ...     selection.active() is b
    True
    """
    return _scoped.get() or _default


def get_backend() -> Backend:
    """The backend active in this context.

    Returns
    -------
    gpukit.backend.Backend
        An object with at least ``.name`` and ``.xp`` (the array namespace).

    Raises
    ------
    UnknownBackendError
        ``GPUKIT_BACKEND`` names no registered backend.
    BackendUnavailableError
        ``GPUKIT_BACKEND`` names a backend that cannot run here.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.get_backend().name
    'numpy'
    """
    backend = _scoped.get() or _default
    if backend is not None:
        return backend
    try:
        return _default_backend()
    except BackendUnavailableError as exc:
        _registry.trim_traceback(exc)  # the user's call and the reason, not gpukit's frames
        raise


def selection_reason() -> str:
    """Why the active backend was chosen, in words (shown by ``gpukit info``).

    Returns
    -------
    str
        The reason: the ``use_backend`` block in force, the ``set_backend`` call, or what
        ``GPUKIT_BACKEND`` said (for ``auto``, why cupy was or was not usable).

    Raises
    ------
    UnknownBackendError, BackendUnavailableError
        As for :func:`get_backend`, when no backend has been selected yet.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     gk.selection_reason()
    "use_backend('numpy')"
    """
    scoped = _scoped.get()
    if scoped is not None:
        return f"use_backend({scoped.name!r})"
    get_backend()
    return _default_reason


def set_backend(name: str) -> Backend:
    """Make ``name`` the process-wide default backend.

    A ``with use_backend(...)`` block still takes precedence inside it. The name is
    checked now: an unknown or unusable backend raises and the default is unchanged.

    Parameters
    ----------
    name : str
        ``"auto"``, ``"numpy"``, ``"cupy"`` or a registered plug-in name.

    Returns
    -------
    gpukit.backend.Backend
        The backend now selected.

    Raises
    ------
    UnknownBackendError
        No backend of that name is registered.
    BackendUnavailableError
        The backend cannot run here; the message says why and how to fix it.
    TypeError
        ``name`` is not a string.

    Examples
    --------
    >>> import gpukit as gk
    >>> gk.set_backend("numpy").name
    'numpy'
    """
    try:
        backend, reason = _resolve(name, "set_backend")
    except BackendUnavailableError as exc:
        _registry.trim_traceback(exc)
        raise
    with _lock:
        _set_default(backend, reason)
    return backend


@contextlib.contextmanager
def use_backend(name: str | Backend) -> Iterator[Backend]:
    """Select a backend for the duration of a ``with`` block, in this context only.

    The selection lives in a ContextVar: other threads and asyncio tasks keep their
    own, and the previous selection is restored when the block exits, also on error.

    Parameters
    ----------
    name : str or Backend
        A backend name (``"auto"`` allowed) or a backend object.

    Yields
    ------
    gpukit.backend.Backend
        The backend selected inside the block.

    Raises
    ------
    UnknownBackendError, BackendUnavailableError, TypeError
        As for :func:`set_backend`.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy") as b:
    ...     x = gk.asarray([1.0, 2.0])
    >>> type(x).__module__, b.name
    ('numpy', 'numpy')
    """
    try:
        backend = name if isinstance(name, Backend) else _resolve(name, "use_backend")[0]
    except BackendUnavailableError as exc:
        _registry.trim_traceback(exc)
        raise
    token = _scoped.set(backend)
    try:
        yield backend
    finally:
        _scoped.reset(token)
