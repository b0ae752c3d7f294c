"""Getting an operation's inputs where it runs: :func:`prepare`, ``gk.asarray``, ``gk.to_numpy``.

Every front-end function calls :func:`prepare` once with its array arguments. It applies
the placement rule (:func:`gpukit._runtime.placement.placement`): the operation runs on
the backend and device of its device-array inputs, otherwise on the active backend; host
inputs (NumPy arrays, lists, scalars) reaching a device backend are moved to its current
device, counted and subject to the transfer guard.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._runtime import device_status as _status
from .._runtime import plans as _plans
from .._runtime import transfer as _transfer
from .._runtime.devices import check_device
from .._runtime.placement import owner_of, placement, settled
from .._select.selection import active, get_backend
from ..backend import Backend
from . import dtypes as _dtypes
from .capabilities import checked, declare, same
from .decorator import operation

if TYPE_CHECKING:
    from .._typing import Array

__all__ = [
    "asarray",
    "checked_device",
    "keep",
    "keep_placed",
    "on_device",
    "placed",
    "plan_for",
    "plan_for_all",
    "plan_for_pair",
    "prepare",
    "remember_checked",
    "to_numpy",
    "untouched",
]

_ndarray = np.ndarray
# (active backend, argument types) -> the backend ``prepare`` returns them on untouched,
# or None when they need the per-call placement (placement.settled decides, once)
_settled = _plans.table()
# (operation, active backend, the arrays' types and dtypes) -> the backend a front-end's
# dtype checks and ``prepare`` left such arrays on, unchanged (see placed)
_placed = _plans.table()


# device array type -> its backend, for the types of no kind that _dtypes.check took as
# they were (see checked_device)
_checked_device = _plans.table()


def checked_device(x: Any) -> Backend | None:
    """The backend of the device array ``x`` when its type passed the input checks before
    (of no kind, not refused by :func:`gpukit._dispatch.dtypes.check`) and its dtype is a
    native numeric one: such an input needs neither check again. Else None: check it,
    then :func:`remember_checked`. Callers that are not operations (layers, losses)
    use it; an operation's checks are kept in its plans."""
    owner = _checked_device.get(type(x))
    return owner if owner is not None and x.dtype in _dtypes.NATIVE_NUMERIC else None


def remember_checked(x: Any, since: int) -> None:
    """Keep ``x``'s type for :func:`checked_device` when ``x``, which passed the kind test
    and :func:`gpukit._dispatch.dtypes.check` unchanged (the checks read before
    generation ``since``), is a device array with a native numeric dtype (forgotten when
    a backend or a kind registers, as every plan is)."""
    owner = owner_of(x)
    if owner is not None and x.dtype in _dtypes.NATIVE_NUMERIC:
        _plans.remember(_checked_device, type(x), owner, since)


class _Device:
    """A plan key's last part where its arrays are two or more on one device of a backend
    with several: :func:`placement` compares their devices on every call, so the key
    names the device they share, and a call with them on another device, or on two, does
    not find the plan."""

    __slots__ = ("id",)

    def __init__(self, device: int) -> None:
        self.id = device


_devices: dict[int, _Device] = {}
# array type -> the device backend owning it when that backend has several devices, else
# None (host data, a backend with one device): whether a plan key may name a device
_several = _plans.table()


def _owner_of_several(x: Any) -> Backend | None:
    """``x``'s device backend when it has several devices, else None (kept per type)."""
    try:
        return _several[type(x)]
    except KeyError:
        since = _plans.generation()
        owner = owner_of(x)
        if owner is not None and owner.device_count() == 1:
            owner = None
        return _plans.remember(_several, type(x), owner, since)


def _one_device(arrays: Sequence[Any]) -> _Device | None:
    """The device all of ``arrays`` (None entries aside) are on, when they are two or
    more arrays of one device backend with several devices; else None."""
    owner = device = None
    count = 0
    for x in arrays:
        if x is None:
            continue
        backend = _several.get(type(x), _several)  # the table itself: a type not seen yet
        if backend is _several:
            backend = _owner_of_several(x)
        if backend is None:  # host data (moved per call, never planned so), or one device
            return None
        d = backend.device_of(x)
        if owner is None:
            owner, device = backend, d
        elif backend is not owner or d != device:
            return None
        count += 1
    if count < 2:
        return None
    return _devices.get(device) or _devices.setdefault(device, _Device(device))


def _look_up(plans: dict[Any, Any], key: Any, arrays: Sequence[Any]) -> tuple[Any, Any]:
    """``(plan, key)`` of arrays the first of which is of a device backend with several
    devices: :func:`keep` keeps a plan for two or more of them on one device only under
    ``key`` naming that device (:class:`_Device`), so that key is the one looked up, and a
    warm call does one look-up. Raises TypeError for an unhashable key."""
    mark = _one_device(arrays)
    if mark is not None:
        key = (*key, mark)
    return plans.get(key), key


def on_device(plans: dict[Any, Any], key: Any, arrays: Sequence[Any]) -> tuple[Any, Any]:
    """``(plan, key)`` after ``key`` missed in ``plans``: the plan kept for ``arrays`` on
    the one device they share (:class:`_Device`), or ``(None, key)``; ``key`` for
    :func:`keep`, naming that device where there is one.

    The second look-up of :func:`placed`, :func:`plan_for_pair` and :func:`plan_for_all`,
    for a front-end that builds its key inline (``gk.kernels``): with the arrays on a
    backend of several devices, ``keep`` keeps a plan only under such a key.
    """
    mark = _one_device(arrays)
    if mark is None:
        return None, key
    key = (*key, mark)
    return plans.get(key), key


def prepare(*arrays: Any, names: Sequence[str] | None = None) -> tuple[Backend, list[Any]]:
    """Choose the backend for an operation and bring its array inputs there.

    Parameters
    ----------
    *arrays
        The operation's array arguments (``None`` entries pass through).
    names : sequence of str, optional
        The arguments' names, for error messages (default ``x0, x1, ...``).

    Returns
    -------
    backend : Backend
        Where the operation runs.
    arrays : list
        The inputs as that backend's native arrays, on one device.
    """
    selected = active()  # get_backend() once one is resolved, without its fallbacks
    if selected is not None:
        if not selected.is_device:
            for x in arrays:  # NumPy arrays on a host backend stay as they are, unplanned
                if x is not None and type(x) is not _ndarray:
                    break
            else:
                return selected, list(arrays)
        as_is = untouched(selected, arrays)
        if as_is is not None:
            return as_is, list(arrays)
    if names is None:
        names = [f"x{i}" for i in range(len(arrays))]
    owner, device = placement(arrays, names)
    backend = owner or get_backend()
    if not backend.is_device:
        return backend, list(arrays)
    out = []
    for x, name in zip(arrays, names, strict=True):
        if x is None or owner_of(x) is backend:
            out.append(x)
            continue
        host = np.asarray(x)
        if _transfer.guarded():  # a log or a refusal names the device: asked only then
            to = backend.current_device() if device is None else device
            _transfer.check_implicit(
                name, host.shape, host.dtype, host.nbytes, f"{backend.name}:{to}"
            )
        out.append(backend.asarray(host, device=device))  # None: the current device
        _transfer.record("host_to_device", host.nbytes)
    return backend, out


def untouched(selected: Backend | None, arrays: Sequence[Any]) -> Backend | None:
    """The backend :func:`prepare` hands ``arrays`` back on untouched while ``selected`` is
    active, whatever their values: no transfer, no device to compare; else None.

    It follows from the arrays' types alone (:func:`gpukit._runtime.placement.settled`),
    so a front-end's plan may keep it (:mod:`gpukit._runtime.plans`).
    """
    key = (selected, *map(type, arrays))
    try:
        return _settled[key]
    except KeyError:
        since = _plans.generation()
        return _plans.remember(_settled, key, settled(selected, arrays), since)


def placed(op: str, arrays: Sequence[Any]) -> tuple[Backend | None, Any]:
    """``(backend, key)``: where ``op``'s front-end placed arrays of these types and dtypes
    unchanged before, or None; ``key`` for :func:`keep_placed` (None: not keyable).

    For a front-end whose dtype checks depend only on the dtypes: a hit means the checks
    passed and :func:`prepare` handed the arrays back untouched, so both may be skipped.
    """
    key = (op, active())
    for x in arrays:  # a loop, not a comprehension: no function frame per call
        key += (type(x), getattr(x, "dtype", None))
    try:
        if arrays and _several.get(type(arrays[0])) is not None:
            return _look_up(_placed, key, arrays)
        return _placed[key], key
    except KeyError:
        return on_device(_placed, key, arrays)
    except TypeError:  # an unhashable dtype attribute
        return None, None


def keep_placed(
    key: Any, since: int, backend: Backend, given: Sequence[Any], out: Sequence[Any]
) -> None:
    """Keep ``backend`` under ``key`` (from :func:`placed`, read before generation
    ``since``) when the front-end's checks and :func:`prepare` handed every array of
    ``given`` back as ``out`` unchanged, as they would any arrays of the same types."""
    keep(_placed, key, since, backend, backend, given, out)


def plan_for(plans: dict[Any, Any], op: str, x: Any, *static: Any) -> tuple[Any, Any]:
    """``(plan, key)``: the plan ``op`` keeps in ``plans`` for an array of ``x``'s type,
    dtype and shape with the other arguments ``static`` (each through
    :func:`gpukit._runtime.plans.token` where its type matters), or None; ``key`` for
    :func:`keep` (None: ``x`` or an argument cannot be keyed)."""
    try:
        # a tuple concatenated: the display with *static builds a list first (~300
        # instructions a warm call)
        key = (op, active(), type(x), x.dtype, x.shape) + static  # noqa: RUF005
        return plans[key], key
    except KeyError:
        return None, key
    except (AttributeError, TypeError):  # no dtype (a list), an unhashable argument
        return None, None


def plan_for_pair(plans: dict[Any, Any], op: str, x: Any, y: Any, static: Any) -> tuple[Any, Any]:
    """:func:`plan_for` of two arrays ``x`` and ``y`` (the types, dtypes and shapes of
    both) and one other argument ``static`` (a tuple of them, or through
    :func:`gpukit._runtime.plans.token` where its type matters): ``(plan, key)``, key
    None when either is not an array (a list) or ``static`` is unhashable."""
    try:
        key = (op, active(), type(x), x.dtype, x.shape, type(y), y.dtype, y.shape, static)
        if _several.get(type(x)) is not None:
            return _look_up(plans, key, (x, y))
        return plans[key], key
    except KeyError:
        return on_device(plans, key, (x, y))
    except (AttributeError, TypeError):  # no dtype (a list), an unhashable argument
        return None, None


def plan_for_all(
    plans: dict[Any, Any], op: Any, args: Sequence[Any], *static: Any
) -> tuple[Any, Any]:
    """:func:`plan_for` over several arguments, arrays or scalars (each argument's type,
    and its dtype and shape when it has them), for front-ends whose arguments are all
    alike (``gk.elementwise`` kernels): ``(plan, key)``, key None when not keyable."""
    parts = [op, active()]
    for x in args:  # a loop, not a comprehension: no function frame per call
        parts += (type(x), getattr(x, "dtype", None), getattr(x, "shape", None))
    try:
        key = (*parts, *static)
        if args and _several.get(type(args[0])) is not None:  # listed only then
            return _look_up(plans, key, [x for x in args if hasattr(x, "dtype")])
        return plans[key], key
    except KeyError:
        return on_device(plans, key, [x for x in args if hasattr(x, "dtype")])
    except TypeError:  # an unhashable dtype, shape or argument
        return None, None


def keep(
    plans: dict[Any, Any],
    key: Any,
    since: int,
    plan: Any,
    backend: Backend,
    given: Sequence[Any],
    out: Sequence[Any],
) -> None:
    """Keep ``plan`` under ``key`` (from :func:`plan_for`, :func:`plan_for_all` or
    :func:`placed`, read before generation ``since``) when the front-end's checks handed
    every array of ``given`` back as ``out`` unchanged on ``backend``, where
    :func:`prepare` leaves any arrays of those types (no transfer, one device), or the key
    names the one device they share: a warm call then needs neither. With no selection
    resolved yet (``key[1]`` None) that holds for device arrays alone."""
    if key is None:
        return
    for x, y in zip(given, out, strict=True):
        if x is not y:
            return
    if type(key[-1]) is _Device or untouched(key[1], out) is backend:
        _plans.remember(plans, key, plan, since)


@operation("gk.asarray")
def asarray(
    obj: Any, dtype: Any = None, device: int | None = None, *, pinned: bool = False
) -> Array:
    """Convert ``obj`` to a native array of the active backend (an explicit transfer).

    Parameters
    ----------
    obj : array_like
        Data: a NumPy or CuPy array, nested lists, a scalar.
    dtype : dtype, optional
        Wanted dtype; by default inferred as NumPy would.
    device : int, optional
        Device index for the result; the current device when omitted.
    pinned : bool, default False
        Stage a host-to-device copy through page-locked (pinned) host memory and run it
        asynchronously on the current stream, so the host goes on (preparing the next
        batch) while the device copies; work queued later on that stream waits for it.
        A host array already in pinned memory (:func:`gpukit.empty_pinned`) is copied
        without staging: do not overwrite it until the host has waited for the stream
        (a result read on the host, :func:`gpukit.synchronize`). Ignored on the numpy
        backend and for arrays already on the device. Counted as a transfer like any
        other. See the Memory page.

    Returns
    -------
    array
        A ``numpy.ndarray`` on the numpy backend, a ``cupy.ndarray`` on cupy. No copy is
        made when ``obj`` already is such an array with that dtype and device.

    Raises
    ------
    ValueError
        ``device`` is out of range for the active backend.
    TypeError
        ``obj`` or ``dtype`` is not numeric (strings, objects, datetimes, long double: not
        every backend holds them), or ``obj`` is None, a ``numpy.ma`` masked array (its
        mask would be lost) or a ``numpy.matrix``.

    Examples
    --------
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     x = gk.asarray([[1, 2], [3, 4]], dtype="float32")
    >>> x.dtype, x.shape
    (dtype('float32'), (2, 2))
    """
    # numeric, native order, a real array: a NumPy array or a device array of a native
    # numeric dtype has nothing for the check to refuse or convert (None, masked arrays,
    # matrices are host)
    if type(obj) is _ndarray:
        source = None
        if obj.dtype not in _dtypes.NATIVE_NUMERIC:
            obj = _dtypes.check("gk.asarray", "obj", obj)
    else:
        source = owner_of(obj)
        kind = getattr(obj, "dtype", None) if source is not None else None
        if type(kind) not in _dtypes.NUMERIC_DTYPE_CLASSES or kind not in _dtypes.NATIVE_NUMERIC:
            obj = _dtypes.check("gk.asarray", "obj", obj)
    if dtype is not None and np.dtype(dtype).char not in _dtypes.NUMERIC_CHARS:
        raise TypeError(f"gk.asarray: dtype {np.dtype(dtype)} is not {_dtypes.NUMERIC}")
    backend = get_backend()
    if device is not None:
        device = check_device(backend, device)
    if source is not None and source is not backend:
        obj = to_numpy(obj)  # a device array of another backend goes through the host
        source = None
    if backend.is_device and source is None:
        host = np.asarray(obj, dtype=dtype)
        if pinned:
            out = backend.asarray_pinned(host, device=device)
        else:
            out = backend.asarray(host, device=device)
        _transfer.record("host_to_device", host.nbytes)
        return out
    return backend.asarray(obj, dtype, device)  # by position: no keywords to parse


declare("gk.asarray", checked("gk.asarray", "obj"))


@operation("gk.to_numpy")
def to_numpy(x: Any) -> np.ndarray:
    """Copy ``x`` to a host ``numpy.ndarray`` (an explicit transfer, always allowed).

    Parameters
    ----------
    x : array_like or ShardedArray
        A native array of any backend, a :class:`gpukit.ShardedArray` (gathered on the
        host), or anything ``numpy.asarray`` accepts.

    Returns
    -------
    numpy.ndarray
        The data on the host; ``x`` itself when it already is a NumPy array.

    Raises
    ------
    TypeError
        ``x`` is None, a ``numpy.ma`` masked array or a ``numpy.matrix``.
    OutOfMemoryError
        The host copy could not be allocated.
    ValueError, NonFiniteError
        An error ``x``'s device recorded since the host last looked (a label out of
        range in ``gk.nn.CrossEntropyLoss``; :doc:`/nn`, "Errors found on the device"):
        raised here, after the copy, because the host has just waited for that device.

    Examples
    --------
    >>> import gpukit as gk
    >>> gk.to_numpy(gk.asarray([1, 2, 3])).tolist()
    [1, 2, 3]
    """
    backend = owner_of(x)
    if backend is None:
        if type(x) is not _ndarray:  # a device array is none of what this refuses
            _dtypes.refuse_foreign("gk.to_numpy", "x", x)
        return np.asarray(x)
    out = backend.to_numpy(x)
    _transfer.record("device_to_host", out.nbytes)
    _status.raise_pending(backend, backend.device_of(x))  # the host waited: report now
    return out


declare("gk.to_numpy", same)
