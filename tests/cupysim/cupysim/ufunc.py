"""``cupy.ufunc``: CuPy's universal functions as objects, values computed by NumPy.

A port of the Python-visible half of ``cupy/_core/_kernel.pyx`` ``ufunc``: its attributes
(``name`` is ``'cupy_add'``, ``nin``, ``nout``, ``nargs``, ``types``: the loops CuPy
compiles, read from the installed CuPy into ``cupysim/_names.py``), the argument rules of
``__call__`` and the methods ``outer``, ``at``, ``reduce``, ``accumulate`` and ``reduceat``.
The loop is the one NumPy picks (it matches CuPy's for every ufunc NumPy has; ``fix``,
``i0`` and ``sinc``, plain functions in NumPy, take CuPy's loop from ``types``); one
"kernel" writes the results, on the current device and stream (cupy/_core/core.py
``_run``).
"""

from __future__ import annotations

import warnings

import numpy as np
from cupy._core import core

from . import _names
from . import ftz as _ftz

#: _scalar.pyx ``scalar_type_set``: the Python scalars a kernel argument may be (exactly
#: these types) besides NumPy scalars.
_PY_SCALARS = (bool, int, float, complex)

#: _routines_indexing.pyx ``_scatter_op_single``: the dtypes each atomic ``at`` takes.
_AT_DTYPES = {
    "add": ("int32", "int64", "float16", "float32", "float64", "uint32", "uint64"),
    "sub": ("int32", "uint32"),
    "max": ("int32", "int64", "float32", "float64", "uint32", "uint64"),
    "min": ("int32", "int64", "float32", "float64", "uint32", "uint64"),
    "and": ("int32", "int64", "uint32", "uint64"),
    "or": ("int32", "int64", "uint32", "uint64"),
    "xor": ("int32", "int64", "uint32", "uint64"),
}
_AT_NAMES = {"add": "add", "sub": "subtract", "max": "maximum", "min": "minimum",
             "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}  # fmt: skip


def _quiet():
    """NumPy's floating-point warnings off: no kernel gives them."""
    return np.errstate(all="ignore")


def _is_scalar(v) -> bool:
    return type(v) in _PY_SCALARS or isinstance(v, np.generic)


def _check_arg(v) -> None:
    # _kernel.pyx _preprocess_arg: a cupy.ndarray, else _scalar.CScalar(v), which takes
    # only Python and NumPy scalars (a list, a NumPy array, None: "Unsupported type")
    if not isinstance(v, core.ndarray) and not _is_scalar(v):
        raise TypeError(f"Unsupported type {type(v)}")


def _raise_if_invalid_cast(src: np.dtype, dst: np.dtype, casting: str, argname: str) -> None:
    """_dtype.pyx ``_raise_if_invalid_cast``: the check of a result against ``out``."""
    if src == dst or (casting == "same_kind" and src.kind == dst.kind):
        return
    if np.can_cast(src, dst, casting):
        if casting == "unsafe" and src.kind == "c" and dst.kind in "iuf":
            warnings.warn(
                "Casting complex values to real discards the imaginary part",
                np.exceptions.ComplexWarning,
                stacklevel=4,
            )
        return
    raise TypeError(
        f"Cannot cast {argname} from {src!r} to {dst!r} according to the rule '{casting}'"
    )


def _default_dtype(v) -> np.dtype:
    # _scalar.pyx numpy_dtype_from_pyscalar: the dtype of a kernel's scalar argument
    if isinstance(v, (np.ndarray, np.generic)):
        return v.dtype
    if type(v) is int and v >= 0x8000000000000000:
        return np.dtype(np.uint64)
    return np.dtype(type(v))


def _integral_power(b, e, dtype) -> np.ndarray:
    """_routines_math.pyx ``_power_preamble`` ``integral_power``, the loop of ``power`` for
    integers (``'??->b'`` for booleans): a negative exponent gives 0, or +-1 for a base of
    1 or -1, where NumPy raises."""
    dt = np.result_type(b, e) if dtype is None else dtype
    if dt == np.bool_:
        dt = np.dtype(np.int8)
    b, e = np.asarray(b).astype(dt), np.asarray(e).astype(dt)
    with np.errstate(all="ignore"):
        pos = np.power(b, np.maximum(e, 0))
    neg = np.where(b == -1, np.where(e & 1, -1, 1), np.where(b == 1, 1, 0))
    return np.where(e < 0, neg, pos).astype(dt)


class _Store:
    """The body of the launch: each result written into its output (where ``_where``)."""

    __slots__ = ("pairs", "where")

    def __init__(self, pairs, where) -> None:
        self.pairs = pairs
        self.where = where

    def __call__(self) -> None:
        for out, r in self.pairs:
            if r.dtype.kind == "c" and out.dtype.kind != "c":
                r = r.real  # the kernel's conversion; CuPy warned (or refused) already
            with _quiet():
                if self.where is None:
                    out._np[...] = r
                else:
                    np.copyto(out._np, r, casting="unsafe", where=self.where)


class ufunc:
    """Universal function (cupy/_core/_kernel.pyx ``ufunc``), computed by NumPy.

    Attributes:
        name (str): CuPy's name of the function (``'cupy_add'``).
        nin (int): Number of inputs.
        nout (int): Number of outputs.
        nargs (int): Number of all arguments.
    """

    def __init__(self, attr: str, npfn) -> None:
        name, nin, nout, scatter_op = _names.UFUNCS[attr]
        self.name = self.__name__ = name
        self.nin, self.nout, self.nargs = nin, nout, nin + nout
        self._types = tuple(_names.UFUNC_TYPES[name].split())
        self._scatter_op = scatter_op
        self._np = npfn
        # the name of its launches (cupysim.trace): NumPy's for the ufuncs NumPy has
        self._op = npfn.__name__ if isinstance(npfn, np.ufunc) else attr
        self.__doc__ = (
            f"CuPy's ``{attr}`` ufunc (computed by :func:`numpy.{attr}` on the simulated device)."
        )

    def __repr__(self) -> str:
        return f"<ufunc '{self.name}'>"

    @property
    def types(self) -> list[str]:
        """The type signatures of CuPy's loops, ``'ii->i'``."""
        return list(self._types)

    # -- _kernel.pyx ufunc.__call__
    def __call__(self, *args, **kwargs):
        out = kwargs.pop("out", None)
        where = kwargs.pop("_where", None)
        dtype = kwargs.pop("dtype", None)
        casting = kwargs.pop("casting", "same_kind")
        if dtype is not None:
            dtype = np.dtype(dtype)
        if kwargs:
            # NumPy's where=, order=, subok=, signature=, axes= are not CuPy's
            raise TypeError(f"Wrong arguments {kwargs}")
        n_args = len(args)
        if not (self.nin <= n_args <= self.nargs):
            raise TypeError(
                f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} "
                f"or {self.nargs} (with outputs), but given {n_args}."
            )
        ins, outs = args[: self.nin], list(args[self.nin :])
        if out is not None:
            if outs:
                raise ValueError("Cannot specify 'out' as both a positional and keyword argument")
            if isinstance(out, tuple):
                if len(out) != self.nout:
                    raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
                outs = list(out)
            else:
                if self.nout != 1:
                    raise ValueError("'out' must be a tuple of arrays")
                outs = [out]
        for v in ins:
            _check_arg(v)
        for o in outs:
            if o is not None:
                _check_arg(o)
        if where is not None:
            _check_arg(where)
            if isinstance(where, core.ndarray):
                if where.dtype != np.bool_:
                    raise TypeError(
                        f"Cannot cast array data from {where.dtype!r} to "
                        f"{np.dtype(np.bool_)!r} according to the rule 'safe'"
                    )
            else:
                where = bool(where)
        outs += [None] * (self.nout - len(outs))
        given = [o for o in outs if o is not None]

        found: list = []
        a = [core._unwrap(v, found) for v in ins]
        w = core._unwrap(where, found)
        shape = np.broadcast_shapes(*(np.shape(v) for v in (*a, w)), *(o.shape for o in given))
        # a kernel never warns of overflow, division by zero or invalid values
        with _ftz.flushing(_ftz.single_precision((*found, *given, dtype))), _quiet():
            res = self._compute(a, dtype)
        # _kernel.pyx _get_out_args_from_optionals: new outputs are C-contiguous; a given
        # one must have the broadcast shape and take the loop's type under ``casting``
        results = []
        for o, r in zip(outs, res, strict=True):
            if o is None:
                o = core._empty(shape, r.dtype, "C")
            else:
                if not isinstance(o, core.ndarray):
                    raise TypeError("Output arguments type must be cupy.ndarray")
                if o.shape != shape:
                    raise ValueError("Out shape is mismatched")
                _raise_if_invalid_cast(r.dtype, o.dtype, casting, "output operand")
            results.append(o)
        subtype, template = core.ndarray, None
        for v in ins:
            if isinstance(v, core.ndarray) and type(v) is not core.ndarray:
                subtype, template = type(v), v
                break
        if subtype is not core.ndarray:
            results = [
                o if o is given_o else core._as_subtype(o, subtype, template)
                for o, given_o in zip(results, outs, strict=True)
            ]
        if 0 not in shape:
            pairs = [(o, np.broadcast_to(r, shape)) for o, r in zip(results, res, strict=True)]
            body = _Store(pairs, None if where is None else np.broadcast_to(w, shape))
            core._run(self._op, found, results, body)
        return results[0] if self.nout == 1 else tuple(results)

    def _compute(self, a, dtype) -> list[np.ndarray]:
        if isinstance(self._np, np.ufunc):
            # inputs are not checked against ``casting`` (_kernel.pyx: "TODO(kataoka):
            # Typecheck `in_args` w.r.t. `casting`"), outputs are, by the caller
            try:
                res = self._np(*a, dtype=dtype, casting="unsafe")
            except ValueError:
                if self.name != "cupy_power":
                    raise
                res = _integral_power(*a, dtype)  # NumPy refuses int ** -1; CuPy computes
        else:
            # fix, i0, sinc: the first of CuPy's loops the input casts to safely
            # (_kernel.pyx _Ops._guess_routine_from_in_types, or from ``dtype``)
            src = _default_dtype(a[0])
            for sig in self._types:
                ins, outs = sig.split("->")
                if (dtype is None and np.can_cast(src, ins)) or dtype == np.dtype(outs):
                    break
            else:
                raise TypeError(f"Wrong type ({dtype or (src,)}) of arguments for {self.name}")
            res = np.asarray(self._np(np.asarray(a[0], dtype=ins))).astype(outs)
        return [np.asarray(r) for r in (res if isinstance(res, tuple) else (res,))]

    # -- _kernel.pyx ufunc's methods
    def outer(self, A, B, **kwargs):
        """Apply the ufunc to all pairs of elements of ``A`` and ``B``."""
        A = core.array(A)
        B = core.array(B)
        ndim_a, ndim_b = A.ndim, B.ndim
        A = A.reshape(A.shape + (1,) * ndim_b)
        B = B.reshape((1,) * ndim_a + B.shape)
        return self(A, B, **kwargs)

    def at(self, a, indices, b=None):
        """Apply the operation in place to ``a`` at ``indices``, unbuffered."""
        if self._scatter_op is None:
            raise NotImplementedError(f"`{self.name}.at` is not supported yet")
        if not isinstance(a, core.ndarray):
            raise AttributeError(f"'{type(a).__name__}' object has no attribute '_scatter_op'")
        key = core._index_on_device(indices)
        keys = key if isinstance(key, tuple) else (key,)
        arrays = [k for k in keys if isinstance(k, (core.ndarray, list))]
        if not arrays:
            # _routines_indexing.pyx _scatter_op, basic indices: the ufunc on the view
            view = a[key]
            self(view, b, view)
            return
        # _scatter_op_single: ``b`` cast to a's dtype, an atomic kernel for some dtypes (a
        # single boolean mask goes to _scatter_op_mask_single, which takes any)
        mask = len(arrays) == 1 and getattr(arrays[0], "dtype", None) == np.bool_
        if not mask and a.dtype.name not in _AT_DTYPES[self._scatter_op]:
            allowed = ", ".join(_AT_DTYPES[self._scatter_op])
            raise TypeError(
                f"cupy.{_AT_NAMES[self._scatter_op]}.at only supports {allowed} as data type"
            )
        v = b if isinstance(b, core.ndarray) else core.array(b, dtype=a.dtype)
        found: list = []
        k = core._unwrap(key, found)
        value = core._unwrap(v, found).astype(a.dtype, copy=False)
        target, npfn = a._np, getattr(np, _AT_NAMES[self._scatter_op])
        core._run(self._op + ".at", found, [a], lambda: npfn.at(target, k, value))

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False):
        """Reduce ``array`` with the ufunc (``add`` and ``multiply`` only, as in CuPy)."""
        if self.name == "cupy_add":
            return array.sum(axis, dtype, out, keepdims)
        if self.name == "cupy_multiply":
            return array.prod(axis, dtype, out, keepdims)
        raise NotImplementedError(f"`{self.name}.reduce` is not supported yet")

    def accumulate(self, array, axis=0, dtype=None, out=None):
        """Accumulate ``array`` with the ufunc (``add`` and ``multiply`` only)."""
        if self.name == "cupy_add":
            return array.cumsum(axis, dtype, out)
        if self.name == "cupy_multiply":
            return array.cumprod(axis, dtype, out)
        raise NotImplementedError(f"`{self.name}.accumulate` is not supported yet")

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        """Reduce ``array`` over slices given by ``indices`` (``add`` only)."""
        if self.name != "cupy_add":
            raise NotImplementedError(f"`{self.name}.reduceat` is not supported yet")
        # _routines_indexing.pyx _add_reduceat: from a cumulative sum
        import cupy

        axis = np.lib.array_utils.normalize_axis_index(axis, array.ndim)
        indices = cupy.append(indices, array.shape[axis])
        shape = [1 if i == axis else n for i, n in enumerate(array.shape)]
        acc = array.cumsum(axis, dtype)
        acc = cupy.append(cupy.zeros(shape, acc.dtype), acc, axis)
        mask = indices[:-1] >= indices[1:]
        mask = mask.reshape(-1, *([1] * (array.ndim - axis - 1)))
        res = cupy.where(
            mask,
            array.take(indices[:-1], axis),
            acc.take(indices[1:], axis) - acc.take(indices[:-1], axis),
        )
        if out is None:
            return res
        cupy.copyto(out, res)
        return out


ufunc.__module__ = "cupy._core._kernel"


def make_all() -> dict[str, ufunc]:
    """CuPy's ufuncs by attribute name; aliases are the same object, as in CuPy."""
    by_name: dict[str, ufunc] = {}
    out = {}
    for attr, (name, *_) in _names.UFUNCS.items():
        if name not in by_name:
            base = name.removeprefix("cupy_")  # an attribute of both CuPy and NumPy
            by_name[name] = ufunc(base, getattr(np, base))
        out[attr] = by_name[name]
    return out
