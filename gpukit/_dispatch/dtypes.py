"""The one input check of the numerical front-ends: the same TypeError on every backend.

A front-end checks each array argument here *before* :func:`gpukit._dispatch.prepare`,
so a dtype that not every backend computes with (strings, objects, datetimes, long
double, ...) is refused by gpukit with one message, rather than by whichever library
or host-to-device copy meets it first (a ``ValueError`` from NumPy's casts, a
``UFuncTypeError``, CuPy's "Unsupported dtype", or silent success on the host only).
So are the array types whose meaning no backend keeps: ``numpy.ma`` masked arrays (the
mask would be dropped silently) and ``numpy.matrix`` (``*`` and indexing mean other
things), and ``None`` where an array is required. docs/numerics.rst states the rule.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Collection
from typing import Any

import numpy as np

__all__ = [
    "NATIVE_NUMERIC",
    "NUMERIC",
    "NUMERIC_CHARS",
    "check",
    "check_operator",
    "refuse_foreign",
    "words",
]

#: Type characters of the dtypes every backend computes with (CuPy's set): bool,
#: integers, float16/32/64, complex64/128, in either byte order.
NUMERIC_CHARS = frozenset("?bBhHiIlLqQefdFD")
#: The same dtypes in native byte order, for hot paths (``dtype in`` a set of dtypes
#: is cheaper than ``dtype.char in``).
NATIVE_NUMERIC = frozenset(np.dtype(c) for c in NUMERIC_CHARS)
#: Their classes (``numpy.dtypes.Float64DType``, ...): ``type(d) in`` it proves ``d`` a
#: dtype for a tenth of the cost of ``isinstance(d, np.dtype)``, which goes through
#: NumPy's dtype metaclass (about 1k instructions)
NUMERIC_DTYPE_CLASSES = frozenset(type(np.dtype(c)) for c in NUMERIC_CHARS)
#: What :data:`NUMERIC` accepts, in words (for messages).
NUMERIC = "a numeric dtype (bool, integer, float16/32/64 or complex64/128)"


def check(op: str, name: str, x: Any, accepted: Collection[np.dtype] | None = None) -> Any:
    """Raise ``TypeError`` unless ``x``'s dtype is accepted; return ``x``.

    Parameters
    ----------
    op : str
        The public operation (``"gk.matmul"``), for the message.
    name : str
        The argument's name.
    x : array_like
        The argument; lists, scalars and other objects without a NumPy dtype are
        converted with :func:`numpy.asarray` and returned converted.
    accepted : collection of numpy.dtype, optional
        The dtypes accepted; any numeric dtype (:data:`NUMERIC`) when omitted.

    Returns
    -------
    object
        ``x``; ``numpy.asarray(x)`` when ``x`` had no NumPy dtype; a native-byte-order
        copy of a non-native (big-endian) NumPy array with a numeric dtype.

    Raises
    ------
    TypeError
        Naming ``op``, the argument, the dtype seen and what is accepted; or naming the
        argument when it is None, a ``numpy.ma`` masked array or a ``numpy.matrix``.

    Examples
    --------
    >>> import numpy as np
    >>> check("gk.matmul", "a", [1, 2]).dtype
    dtype('int64')
    >>> check("gk.matmul", "a", np.array(["x"]))
    Traceback (most recent call last):
    ...
    TypeError: gk.matmul: argument 'a' has dtype <U1; expected a numeric dtype (bool, integer, float16/32/64 or complex64/128)
    """  # noqa: E501
    if type(x) is np.ndarray:  # the exact type first: the common case costs nothing
        dtype = x.dtype
    else:
        refuse_foreign(op, name, x)
        dtype = getattr(x, "dtype", None)
        if type(dtype) not in NUMERIC_DTYPE_CLASSES and not isinstance(dtype, np.dtype):
            x = np.asarray(x)
            dtype = x.dtype
    if accepted is None:
        if dtype in NATIVE_NUMERIC:  # the common case, one set look-up
            return x
        if dtype.char in NUMERIC_CHARS:
            # CuPy reinterprets the bytes of a non-native (big-endian) host array
            # instead of converting them (cupy/cupy#3652): convert here, once.
            if not dtype.isnative and type(x) is np.ndarray:
                x = x.astype(dtype.newbyteorder("="))
            return x
        expected = NUMERIC
    else:
        if dtype in accepted:
            return x
        if not dtype.isnative and dtype.newbyteorder("=") in accepted:
            return x.astype(dtype.newbyteorder("=")) if type(x) is np.ndarray else x
        expected = words(accepted)
    raise TypeError(f"{op}: argument {name!r} has dtype {dtype}; expected {expected}")


def refuse_foreign(op: str, name: str, x: Any) -> None:
    """TypeError for None, a ``numpy.ma`` masked array or a ``numpy.matrix`` argument.

    Examples
    --------
    >>> import numpy as np
    >>> refuse_foreign("gk.matmul", "a", np.ma.masked_array([1.0, 2.0], mask=[0, 1]))
    Traceback (most recent call last):
    ...
    TypeError: gk.matmul: argument 'a' is a numpy.ma masked array; gpukit would ignore its mask. Fill the masked entries (a.filled(value)) or drop them (a.compressed()), then pass a plain array
    """  # noqa: E501
    cls = type(x)
    if cls in _PLAIN:
        return
    if x is None:
        raise TypeError(f"{op}: argument {name!r} must be an array, got None")
    ma = sys.modules.get("numpy.ma")  # not imported: x cannot be a masked array
    if ma is not None and isinstance(x, ma.MaskedArray):
        raise TypeError(
            f"{op}: argument {name!r} is a numpy.ma masked array; gpukit would ignore its "
            f"mask. Fill the masked entries ({name}.filled(value)) or drop them "
            f"({name}.compressed()), then pass a plain array"
        )
    if isinstance(x, np.matrix):
        raise TypeError(
            f"{op}: argument {name!r} is a numpy.matrix, whose operators and indexing mean "
            f"other things than an array's; pass np.asarray({name})"
        )
    if len(_PLAIN) < _PLAIN_MAX and _honest(cls):
        _PLAIN.add(cls)


def _honest(cls: type) -> bool:
    """Whether instances of ``cls`` report ``cls`` as their class, whatever they hold: no
    class along its MRO defines ``__class__`` or a Python ``__getattribute__``, as proxies
    do (claiming their target's class, and their own while they have none)."""
    for c in cls.__mro__[:-1]:
        found = vars(c)
        if "__class__" in found:
            return False
        look_up = found.get("__getattribute__")
        if look_up is not None and not isinstance(look_up, types.WrapperDescriptorType):
            return False
    return True


#: The types :func:`refuse_foreign` passed: whether a type is None's or a masked array's or
#: matrix's subclass does not change (and no masked array exists before ``numpy.ma`` is
#: imported), so a device array's type is checked once, not on every call
_PLAIN: set[type] = set()
_PLAIN_MAX = 64  # a bound for programs that make classes as they go (mocks do)


def words(dtypes: Collection[np.dtype]) -> str:
    """``"float32, float64 or complex64"``."""
    names = [str(np.dtype(d)) for d in dtypes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def check_operator(op: str, name: str, a: Any) -> None:
    """:func:`check` for an operator argument that may carry no dtype (a callable, a
    LinearOperator without one, a list of row blocks): only a NumPy dtype is checked."""
    if isinstance(getattr(a, "dtype", None), np.dtype):
        check(op, name, a)
