"""Where backends come from: built-ins, entry points, and ``register_backend``.

Built-in backends are packages named ``gpukit_<name>`` under ``backends/``; they
are found by import, or next to this package in a source checkout, so they need
no installed metadata. Third-party backends register through the entry-point
group ``gpukit.backends`` (value: a zero-argument factory returning a
:class:`~gpukit.backend.Backend`), or in code with :func:`register_backend`.
Entry points are scanned once, on the first question that needs them. A backend
that fails to load is remembered as unavailable with its reason; a plug-in that
is broken (raises anything but ``BackendUnavailableError``) also warns. A factory
raising ``ValueError`` reports a malformed setting (``GPUKIT_CPU_DEVICES=abc``): the error
reaches whoever selected the backend and is not remembered, so fixing the setting fixes
the next use. Nothing here runs at ``import gpukit``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from ..backend import Backend
from ..errors import GPU_FIX, BackendUnavailableError, GpukitWarning, UnknownBackendError
from .configure import configure

__all__ = [
    "BackendStatus",
    "available_backends",
    "debug",
    "load",
    "loaded",
    "on_change",
    "register_backend",
    "trim_traceback",
]

ENTRY_POINT_GROUP = "gpukit.backends"
#: Set to 1 to see the underlying exception chain of a backend that cannot run.
DEBUG_VAR = "GPUKIT_DEBUG"
logger = logging.getLogger("gpukit")

# name -> (module, the array modules whose arrays this backend owns)
_BUILTINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "numpy": ("gpukit_numpy", ("numpy",)),
    "cupy": ("gpukit_cupy", ("cupy",)),
}

Factory = Callable[[], Backend]


@dataclass(frozen=True)
class BackendStatus:
    """Whether a registered backend can run here, and why not.

    Attributes
    ----------
    name : str
        The backend's name.
    available : bool
        True when the backend loaded and found a usable device.
    reason : str
        Why it is unavailable (the underlying error), or what it found when available.
    source : str
        ``"builtin"``, ``"entry point <dist>"`` or ``"register_backend"``.
    """

    name: str
    available: bool
    reason: str
    source: str


@dataclass
class _Entry:
    name: str
    factory: Factory
    source: str
    array_modules: tuple[str, ...] = ()
    instance: Backend | None = None
    error: BackendUnavailableError | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


_entries: dict[str, _Entry] = {}
_lock = threading.RLock()
_scanned_entry_points = False
_listeners: list[Callable[[], None]] = []


def on_change(callback: Callable[[], None]) -> None:
    """Call ``callback()`` whenever the set of backends changes: one registered, removed,
    or created (which changes :func:`loaded`). Caches of decisions that depend on which
    backend owns which array type (the dispatch plans) empty themselves this way."""
    with _lock:
        _listeners.append(callback)


def _changed() -> None:
    for callback in list(_listeners):
        callback()


class _SourceTreeFinder(importlib.abc.MetaPathFinder):
    """Finds the built-in backend packages in ``backends/`` of a source checkout.

    Appended after the regular finders, so an installed copy always wins; it makes
    ``import gpukit_numpy`` work from a checkout on ``PYTHONPATH`` with no metadata.
    """

    root = Path(__file__).resolve().parent.parent / "backends"

    def find_spec(self, fullname, path=None, target=None):
        if path is not None or fullname not in _BUILTIN_MODULES:
            return None
        init = self.root / fullname / "__init__.py"
        if not init.is_file():
            return None
        return importlib.util.spec_from_file_location(
            fullname, init, submodule_search_locations=[str(init.parent)]
        )


_BUILTIN_MODULES = frozenset(module for module, _ in _BUILTINS.values())
if not any(isinstance(f, _SourceTreeFinder) for f in sys.meta_path):
    sys.meta_path.append(_SourceTreeFinder())


def _builtin_factory(module: str) -> Factory:
    def factory() -> Backend:
        return importlib.import_module(module).create_backend()

    return factory


def _ensure_builtins() -> None:
    for name, (module, array_modules) in _BUILTINS.items():
        if name not in _entries:
            _entries[name] = _Entry(name, _builtin_factory(module), "builtin", array_modules)


def _scan_entry_points() -> None:
    global _scanned_entry_points
    if _scanned_entry_points:
        return
    _scanned_entry_points = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep.dist, "name", None) or "unknown distribution"
        if ep.name in _entries:
            warnings.warn(
                f"gpukit: ignoring entry point {ep.name!r} from {dist}: "
                f"a backend of that name is already registered ({_entries[ep.name].source})",
                GpukitWarning,
                stacklevel=3,
            )
            continue
        _entries[ep.name] = _Entry(ep.name, _entry_point_factory(ep), f"entry point {dist}")


def _entry_point_factory(ep) -> Factory:
    def factory() -> Backend:
        obj = ep.load()
        return obj()

    return factory


def register_backend(
    name: str, factory: Factory, *, array_modules: tuple[str, ...] = (), replace: bool = False
) -> None:
    """Register a backend under ``name``, made by ``factory`` on first use.

    Parameters
    ----------
    name : str
        The name users select it by (``GPUKIT_BACKEND=name``, ``use_backend(name)``).
    factory : callable
        Zero-argument callable returning a :class:`gpukit.backend.Backend`. It should
        raise :class:`gpukit.BackendUnavailableError` when the backend cannot run here.
    array_modules : tuple of str, optional
        Modules whose arrays the backend owns. When such a module has been imported,
        gpukit asks this backend whether an unknown array is its own.
    replace : bool, default False
        Replace an existing registration of the same name.

    Raises
    ------
    ValueError
        If ``name`` is already registered and ``replace`` is False, or is not a valid name.
    TypeError
        If ``factory`` is not callable.

    Examples
    --------
    >>> import gpukit as gk
    >>> from gpukit_numpy import NumpyBackend
    >>> class Verbose(NumpyBackend):
    ...     name = "verbose"
    >>> gk.register_backend("verbose", Verbose)
    >>> with gk.use_backend("verbose") as b:
    ...     print(b.name)
    verbose
    >>> gk.unregister_backend("verbose")
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"backend name must be an identifier-like string, got {name!r}")
    if not callable(factory):
        raise TypeError(f"factory for backend {name!r} must be callable, got {type(factory)!r}")
    with _lock:
        _ensure_builtins()
        if name in _entries and not replace:
            raise ValueError(
                f"a backend named {name!r} is already registered "
                f"({_entries[name].source}); pass replace=True to replace it"
            )
        _entries[name] = _Entry(name, factory, "register_backend", tuple(array_modules))
    _changed()


def unregister_backend(name: str) -> None:
    """Remove a backend registered with :func:`register_backend` (built-ins stay).

    Parameters
    ----------
    name : str
        The backend's name. Unknown names and built-in backends are left alone.

    Examples
    --------
    >>> import gpukit as gk
    >>> from gpukit_numpy import NumpyBackend
    >>> gk.register_backend("scratch", NumpyBackend)
    >>> gk.unregister_backend("scratch")
    >>> "scratch" in gk.available_backends()
    False
    """
    with _lock:
        entry = _entries.get(name)
        if entry is not None and entry.source != "builtin":
            del _entries[name]
    _changed()


def _entry(name: str) -> _Entry:
    with _lock:
        _ensure_builtins()
        if name not in _entries:
            _scan_entry_points()
        if name not in _entries:
            known = ", ".join(sorted(_entries))
            raise UnknownBackendError(
                f"unknown gpukit backend {name!r}; registered backends: {known} "
                "(and 'auto', which picks cupy when a GPU is usable, else numpy)"
            )
        return _entries[name]


def load(name: str) -> Backend:
    """Return the backend ``name``, creating it on first use.

    Raises
    ------
    UnknownBackendError
        No backend of that name is registered.
    BackendUnavailableError
        The backend is registered but cannot run here; the message says why and how to fix it.
    """
    entry = _entries.get(name) or _entry(name)
    if entry.instance is not None:
        return entry.instance
    with entry.lock:
        if entry.instance is None and entry.error is None:
            _create(entry)
    if entry.error is not None:
        _raise(entry.error)
    assert entry.instance is not None
    return entry.instance


def _raise(error: BackendUnavailableError) -> NoReturn:
    """Raise a fresh copy of a remembered failure: the reason and the fix, in a few lines.

    Re-raising the stored exception itself would grow its traceback on every call (and
    race between threads). The underlying exception chain (CUDA's error, an ImportError)
    is shown only with ``GPUKIT_DEBUG=1``; it is always logged at DEBUG level on the
    ``gpukit`` logger when the backend first fails.
    """
    fresh = BackendUnavailableError(error.backend, error.reason, error.fix)
    if debug():
        raise fresh from error
    raise fresh from None


def debug() -> bool:
    """Whether ``GPUKIT_DEBUG`` asks for full exception chains and tracebacks."""
    return os.environ.get(DEBUG_VAR, "").strip() not in ("", "0")


def trim_traceback(exc: BackendUnavailableError) -> None:
    """Cut gpukit's frames from ``exc``, which a public function then re-raises (bare ``raise``).

    A user needs the call that failed, the reason and the fix, not gpukit's frames (JAX
    filters its tracebacks the same way); ``GPUKIT_DEBUG=1`` keeps them all. A bare ``raise``
    adds no frame of its own: Python 3.11 and later re-raise the exception with the traceback
    it carries, cleared here, so the traceback ends at the user's call; Python 3.10 re-raises
    the traceback it caught, cut here after the public function's frame.
    """
    if debug():
        return
    if exc.__traceback__ is not None:
        exc.__traceback__.tb_next = None
    exc.with_traceback(None)


def _create(entry: _Entry) -> None:
    try:
        _build(entry)
    finally:
        if entry.error is not None:
            logger.debug("backend %r cannot run", entry.name, exc_info=entry.error)


def _build(entry: _Entry) -> None:
    try:
        backend = entry.factory()
    except BackendUnavailableError as exc:
        entry.error = exc
        return
    except ValueError:
        # A malformed setting (GPUKIT_CPU_DEVICES=abc): the caller gets the message naming
        # it; not remembered, so the next use after fixing the variable succeeds.
        raise
    except ImportError as exc:
        entry.error = BackendUnavailableError(
            entry.name,
            f"a library it needs is not installed ({exc})",
            GPU_FIX if entry.name == "cupy" else None,
        )
        entry.error.__cause__ = exc
        return
    except Exception as exc:  # a broken plug-in must never break gpukit
        entry.error = BackendUnavailableError(
            entry.name, f"the backend failed to load: {type(exc).__name__}: {exc}"
        )
        entry.error.__cause__ = exc
        warnings.warn(
            f"gpukit: backend {entry.name!r} ({entry.source}) is broken and was marked "
            f"unavailable: {type(exc).__name__}: {exc}",
            GpukitWarning,
            stacklevel=5,
        )
        return
    if not isinstance(backend, Backend):
        entry.error = BackendUnavailableError(
            entry.name,
            f"its factory returned {type(backend).__name__}, not a gpukit.backend.Backend",
        )
        warnings.warn(f"gpukit: {entry.error}", GpukitWarning, stacklevel=5)
        return
    configure(backend)  # GPUKIT_TF32, GPUKIT_MEMORY_LIMIT: before gpukit computes with it
    entry.instance = backend
    _changed()


def loaded() -> list[Backend]:
    """Backends already created, plus those whose array module has been imported.

    Used to find the owner of an array without importing any array library.
    """
    out = []
    with _lock:
        _ensure_builtins()
        entries = list(_entries.values())
    for entry in entries:
        if entry.instance is None and not any(m in sys.modules for m in entry.array_modules):
            continue
        if entry.instance is None and entry.error is None:
            with entry.lock:
                if entry.instance is None and entry.error is None:
                    _create(entry)
        if entry.instance is not None:
            out.append(entry.instance)
    return out


def available_backends() -> dict[str, BackendStatus]:
    """Every registered backend, whether it can run here, and why not.

    Loading a backend to answer may import its library (CuPy), but never raises: a
    backend that cannot be created, or whose settings are malformed (``GPUKIT_MEMORY_LIMIT``,
    ``GPUKIT_CPU_DEVICES``), is listed as unavailable with the reason and the fix.

    Returns
    -------
    dict of str to BackendStatus
        Keyed by backend name, in registration order.

    Examples
    --------
    >>> import gpukit as gk
    >>> status = gk.available_backends()
    >>> status["numpy"].available
    True
    """
    with _lock:
        _ensure_builtins()
        _scan_entry_points()
        names = list(_entries)
    out = {}
    for name in names:
        entry = _entries[name]
        try:
            backend = load(name)
        except BackendUnavailableError as exc:
            out[name] = BackendStatus(name, False, exc.reason, entry.source)
        except ValueError as exc:  # a malformed setting (GPUKIT_MEMORY_LIMIT...): say which
            out[name] = BackendStatus(name, False, f"misconfigured: {exc}", entry.source)
        else:
            try:
                n = backend.device_count()
            except ValueError as exc:  # a plug-in reading a malformed setting lazily
                out[name] = BackendStatus(name, False, f"misconfigured: {exc}", entry.source)
            else:
                out[name] = BackendStatus(name, True, f"{n} device(s)", entry.source)
    return out
