"""pyFFTW transforms for the numpy backend: cheap first calls, safe under threads and fork.

Planning. ``GPUKIT_FFTW_PLANNER``, read when a plan is made, is ``estimate`` (the
default: FFTW picks an algorithm from heuristics in microseconds), ``measure``,
``patient`` or ``exhaustive`` (``FFTW_``-prefixed names are accepted too). The measuring
efforts time candidate algorithms on the first transform of each shape, which takes
seconds for large shapes; what they learn (FFTW's "wisdom") is kept in the file
``GPUKIT_FFTW_WISDOM`` (default ``$XDG_CACHE_HOME/gpukit/fftw-wisdom.json``, ``off``
to keep none), read before the first measured plan and replaced atomically after each
new one, so a later process plans the same shapes at once.

Threads. Plans live in one LRU cache shared by every thread. Each is made on buffers it
owns, so planning never writes into a caller's array (FFTW's measuring planner
overwrites the arrays it is given), and runs under its own lock: the input is copied
(cropped or zero-padded) into the plan's buffer and the transform written into a fresh
array. Making and destroying FFTW plans, and reading or writing wisdom, hold one
planner lock; nothing else waits for it.

Fork. FFTW's worker threads do not survive ``fork()``: a multi-threaded plan run in a
child hangs (measured with pyFFTW 0.15). A fork handler holds both locks across the
fork, so no plan is being made or destroyed in another thread at that moment; the
child starts with an empty cache and fresh locks and runs FFTW single-threaded.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pyfftw

from gpukit.errors import GpukitWarning

__all__ = ["PLANNER_VAR", "WISDOM_VAR", "planner", "transform", "wisdom_path"]

PLANNER_VAR = "GPUKIT_FFTW_PLANNER"
WISDOM_VAR = "GPUKIT_FFTW_WISDOM"
_EFFORTS = ("estimate", "measure", "patient", "exhaustive")
#: Plans kept (each holds an input and an output buffer of its shape); CuPy keeps 16
#: cuFFT plans by default.
MAX_PLANS = 16
_WISDOM_KEYS = ("double", "single", "longdouble")  # pyFFTW's export order
_WISDOM_FORMAT = "gpukit-fftw-wisdom-1"
_MAX_WISDOM_BYTES = 16 << 20
#: Smaller transforms run on one thread: waking FFTW's workers costs more than they save
#: (a 64-point transform took 0.2 us on one thread, 300 us on two, on a 2-core machine).
THREADED_MIN_SIZE = 1 << 16


def planner() -> str:
    """The planning effort ``GPUKIT_FFTW_PLANNER`` asks for (``estimate`` by default)."""
    raw = os.environ.get(PLANNER_VAR, "")
    effort = raw.strip().lower().removeprefix("fftw_") or "estimate"
    if effort not in _EFFORTS:
        raise ValueError(
            f"{PLANNER_VAR}={raw!r} is not one of {', '.join(_EFFORTS)} "
            "(estimate plans at once; the others time algorithms on the first call)"
        )
    return effort


def wisdom_path() -> Path | None:
    """Where measured plans' wisdom is kept (``GPUKIT_FFTW_WISDOM``); None when off."""
    raw = os.environ.get(WISDOM_VAR)
    if raw is None:
        cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        return Path(cache) / "gpukit" / "fftw-wisdom.json"
    raw = raw.strip()
    return None if raw.lower() in ("", "off", "none", "0") else Path(raw).expanduser()


class _Plan:
    """One FFTW plan, its own buffers, and who is using it."""

    __slots__ = ("fftw", "lock", "out", "retired", "users")

    def __init__(self, fftw: Any) -> None:
        self.fftw = fftw
        self.out = fftw.output_array  # put back after each call: no caller's array is kept
        self.lock = threading.Lock()
        self.users = 1
        self.retired = False


_planner = threading.Lock()  # making and destroying FFTW plans; wisdom files
_state = threading.Lock()  # _plans, _retired, users counts
_plans: OrderedDict[tuple[Any, ...], _Plan] = OrderedDict()
_retired: list[_Plan] = []  # evicted while in use; destroyed by the next planner
_inherited: list[_Plan] = []  # the parent's plans in a forked child: never run, never freed
_single_threaded = False  # in a forked child
_wisdom_read = False
_wisdom_warned = False


def _acquire(key: tuple[Any, ...], make: Any) -> _Plan:
    with _state:
        plan = _plans.get(key)
        if plan is not None:
            _plans.move_to_end(key)
            plan.users += 1
            return plan
    with _planner:
        with _state:
            plan = _plans.get(key)
            if plan is not None:  # another thread made it while this one waited
                _plans.move_to_end(key)
                plan.users += 1
                return plan
        new = _Plan(make())
        with _state:
            _plans[key] = new
            doomed = [p for p in _retired if not p.users]
            _retired[:] = [p for p in _retired if p.users]
            while len(_plans) > MAX_PLANS:
                old = _plans.popitem(last=False)[1]
                if old.users:
                    old.retired = True
                else:
                    doomed.append(old)
        for old in doomed:  # FFTW takes pyFFTW's planner lock to destroy: do it under ours
            old.fftw = old.out = None
        return new


def _release(plan: _Plan) -> None:
    with _state:
        plan.users -= 1
        if plan.retired and not plan.users:
            _retired.append(plan)


def _shapes(kind: str, shape: tuple[int, ...], s: tuple[int, ...], axes: tuple[int, ...]):
    """(input buffer shape, output shape) of ``kind`` for transform lengths ``s``."""
    inner, outer = list(shape), list(shape)
    for n, a in zip(s, axes, strict=True):
        inner[a] = outer[a] = n
    if kind == "rfftn":
        outer[axes[-1]] = s[-1] // 2 + 1
    elif kind == "irfftn":
        inner[axes[-1]] = s[-1] // 2 + 1
    return tuple(inner), tuple(outer)


def _result_dtype(kind: str, dtype: np.dtype) -> np.dtype:
    if kind == "rfftn":
        return np.result_type(dtype, np.complex64)
    return np.finfo(dtype).dtype if kind == "irfftn" else np.dtype(dtype)


def _make(kind: str, inner, outer, dtype, axes, threads: int, effort: str) -> Any:
    """An FFTW plan on fresh buffers of its own (measuring planners overwrite them)."""
    if effort != "estimate":
        _read_wisdom()
    a = pyfftw.empty_aligned(inner, dtype)
    b = pyfftw.empty_aligned(outer, _result_dtype(kind, dtype))
    direction = "FFTW_FORWARD" if kind in ("fftn", "rfftn") else "FFTW_BACKWARD"
    flags = (f"FFTW_{effort.upper()}", "FFTW_DESTROY_INPUT")  # the buffer is refilled per call
    fftw = pyfftw.FFTW(a, b, axes=axes, direction=direction, flags=flags, threads=threads)
    if effort != "estimate":
        _write_wisdom()
    return fftw


def _load_into(buffer: np.ndarray, x: np.ndarray) -> None:
    """Copy ``x`` into ``buffer``, cropped or zero-padded to its shape."""
    common = tuple(slice(0, min(b, n)) for b, n in zip(buffer.shape, x.shape, strict=True))
    if buffer.shape != x.shape:
        buffer.fill(0)
    buffer[common] = x[common]


def transform(
    kind: str,
    x: np.ndarray,
    s: tuple[int, ...],
    axes: tuple[int, ...],
    norm: str | None,
    workers: int,
) -> np.ndarray:
    """``fftn``, ``ifftn``, ``rfftn`` or ``irfftn`` of ``x`` (already in its working dtype)."""
    inner, outer = _shapes(kind, x.shape, s, axes)
    result = pyfftw.empty_aligned(outer, _result_dtype(kind, x.dtype))
    if 0 in inner or 0 in outer:
        return result  # nothing to transform, and FFTW cannot plan empty batches
    small = max(math.prod(inner), result.size) < THREADED_MIN_SIZE
    threads = 1 if _single_threaded or small else workers
    effort = planner()
    key = (kind, inner, outer, x.dtype.str, axes, threads, effort)
    plan = _acquire(key, lambda: _make(kind, inner, outer, x.dtype, axes, threads, effort))
    try:
        with plan.lock:
            buffer = plan.fftw.input_array
            _load_into(buffer, x)
            plan.fftw.update_arrays(buffer, result)
            plan.fftw(normalise_idft=norm in (None, "backward"), ortho=norm == "ortho")
            plan.fftw.update_arrays(buffer, plan.out)
    finally:
        _release(plan)
    return result


# -- wisdom ---------------------------------------------------------------------------------


def _warn_once(message: str) -> None:
    global _wisdom_warned
    if not _wisdom_warned:
        _wisdom_warned = True
        warnings.warn(message, GpukitWarning, stacklevel=2)


def _import_wisdom_file(path: Path) -> None:
    """Add the wisdom saved in ``path`` to FFTW's (quietly nothing if it is missing)."""
    try:
        with path.open("rb") as f:
            raw = f.read(_MAX_WISDOM_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        _warn_once(f"cannot read FFTW wisdom from {path} ({exc}); planning without it")
        return
    try:
        if len(raw) > _MAX_WISDOM_BYTES:
            raise ValueError("too large")
        data = json.loads(raw.decode("ascii"))
        if data.get("format") != _WISDOM_FORMAT:
            raise ValueError("unknown format")
        wisdom = tuple(data[k].encode("ascii") for k in _WISDOM_KEYS)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeError):
        _warn_once(
            f"{path} is not an FFTW wisdom file written by gpukit; planning without it "
            f"(it is replaced by the next measured plan; set {WISDOM_VAR} to keep it elsewhere)"
        )
        return
    pyfftw.import_wisdom(wisdom)  # FFTW ignores wisdom of another FFTW version


def _read_wisdom() -> None:
    """Load the wisdom file before this process's first measured plan."""
    global _wisdom_read
    path = wisdom_path()
    if not _wisdom_read and path is not None:
        _import_wisdom_file(path)
    _wisdom_read = True


def _write_wisdom() -> None:
    """Merge FFTW's wisdom into the wisdom file, replacing it atomically."""
    path = wisdom_path()
    if path is None:
        return
    _import_wisdom_file(path)  # keep what other processes saved meanwhile
    data = {"format": _WISDOM_FORMAT}
    data.update(zip(_WISDOM_KEYS, (w.decode("ascii") for w in pyfftw.export_wisdom()), strict=True))
    try:
        _atomic_write(path, json.dumps(data).encode("ascii"))
    except OSError as exc:
        _warn_once(f"cannot save FFTW wisdom to {path} ({exc}); set {WISDOM_VAR} elsewhere or off")


def _atomic_write(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` so that readers see the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -- fork -----------------------------------------------------------------------------------


def _before_fork() -> None:
    _planner.acquire()
    _state.acquire()


def _after_fork_in_parent() -> None:
    _state.release()
    _planner.release()


def _after_fork_in_child() -> None:
    global _planner, _state, _plans, _retired, _single_threaded
    _inherited.extend([*_plans.values(), *_retired])  # their worker threads are gone
    _planner, _state = threading.Lock(), threading.Lock()
    _plans, _retired = OrderedDict(), []
    _single_threaded = True


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)
