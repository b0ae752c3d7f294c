"""``cupy.ufunc`` objects for the simulator: CuPy's attributes and argument rules, NumPy's
values.

CuPy's ufuncs (cupy/_core/_kernel.pyx ``ufunc``) are objects, not functions: they have a
``name`` (``'cupy_add'``), ``nin``/``nout``/``nargs``, the loops CuPy compiles
(``types``; read from the installed CuPy into :mod:`cupysim._names`), and the methods
``outer``, ``at``, ``reduce``, ``accumulate`` and ``reduceat`` that NumPy reaches through
``__array_ufunc__``. Here each one checks its arguments the way CuPy does, lets NumPy
pick the loop and compute the values (with every floating-point warning off, as a kernel
gives none), and writes the outputs in one "kernel" on the current device and stream
(cupy/_core/core.py ``_run``), so placement and stream ordering are checked as for any
other launch.
"""

from __future__ import annotations

import warnings

import numpy as np
from cupy._core import core

from . import _names
from . import ftz as _ftz

#: The Python types a kernel takes as a scalar argument, matched exactly (a subclass such
#: as a user's ``int`` subclass, or a list, is not a scalar to CuPy: _scalar.pyx).
_PY_SCALAR_TYPES = frozenset({bool, int, float, complex})

#: Which dtypes each ``ufunc.at`` scatter supports (CuPy has atomic kernels for these only:
#: cupy/_core/_routines_indexing.pyx), and the NumPy ufunc computing its values.
_SCATTER = {
    "add": (np.add, {"int32", "int64", "uint32", "uint64", "float16", "float32", "float64"}),
    "sub": (np.subtract, {"int32", "uint32"}),
    "max": (np.maximum, {"int32", "int64", "uint32", "uint64", "float32", "float64"}),
    "min": (np.minimum, {"int32", "int64", "uint32", "uint64", "float32", "float64"}),
    "and": (np.bitwise_and, {"int32", "int64", "uint32", "uint64"}),
    "or": (np.bitwise_or, {"int32", "int64", "uint32", "uint64"}),
    "xor": (np.bitwise_xor, {"int32", "int64", "uint32", "uint64"}),
}


def _is_kernel_scalar(v) -> bool:
    return type(v) in _PY_SCALAR_TYPES or isinstance(v, np.generic)


def _require_kernel_arg(v) -> None:
    """A kernel argument is a cupy.ndarray or a scalar; anything else (a list, a NumPy
    array: a hidden upload) is refused as CuPy refuses it."""
    if not (isinstance(v, core.ndarray) or _is_kernel_scalar(v)):
        raise TypeError(f"Unsupported type {type(v)}")


def _check_output_cast(src: np.dtype, dst: np.dtype, casting: str) -> None:
    """The loop's result type must cast to a given output under ``casting``
    (cupy/_core/_dtype.pyx); complex into real under ``'unsafe'`` warns, as NumPy's does."""
    same_kind_ok = casting == "same_kind" and src.kind == dst.kind
    if src == dst or same_kind_ok:
        return
    if not np.can_cast(src, dst, casting):
        raise TypeError(
            f"Cannot cast output operand from {src!r} to {dst!r} according to the rule '{casting}'"
        )
    if src.kind == "c" and dst.kind in "iuf":
        warnings.warn(
            "Casting complex values to real discards the imaginary part",
            np.exceptions.ComplexWarning,
            stacklevel=4,
        )


def _scalar_dtype(v) -> np.dtype:
    """The dtype a kernel gives a scalar argument (Python ints past int64 are uint64)."""
    if isinstance(v, (np.ndarray, np.generic)):
        return v.dtype
    if type(v) is int and v > np.iinfo(np.int64).max:
        return np.dtype(np.uint64)
    return np.dtype(type(v))


def _power_of_integers(base, exp, dtype) -> np.ndarray:
    """Integer ``power`` as CuPy's kernel computes it: NumPy refuses a negative exponent,
    CuPy's loop (cupy/_core/_routines_math.pyx) gives 1 for a base of 1, +-1 for -1 by the
    exponent's parity, and 0 otherwise. Booleans compute in int8."""
    t = np.dtype(dtype) if dtype is not None else np.result_type(base, exp)
    if t.kind == "b":
        t = np.dtype(np.int8)
    b = np.asarray(base).astype(t)
    e = np.asarray(exp).astype(t)
    negative = e < 0
    with np.errstate(all="ignore"):
        r = np.power(b, np.where(negative, 0, e))
    odd = (e % 2) != 0
    tiny = np.where(b == 1, 1, np.where(b == -1, np.where(odd, -1, 1), 0)).astype(t)
    return np.where(negative, tiny, r).astype(t)


class _Writer:
    """The body of a ufunc's launch: each computed value stored in its output."""

    __slots__ = ("mask", "stores")

    def __init__(self, stores, mask) -> None:
        self.stores, self.mask = stores, mask

    def __call__(self) -> None:
        with np.errstate(all="ignore"):
            for dst, values in self.stores:
                if values.dtype.kind == "c" and dst.dtype.kind != "c":
                    values = values.real  # the cast was judged (and warned) before
                if self.mask is None:
                    dst._np[...] = values
                else:
                    np.copyto(dst._np, values, casting="unsafe", where=self.mask)


class ufunc:
    """A CuPy universal function (cupy/_core/_kernel.pyx), valued by NumPy.

    Attributes:
        name (str): CuPy's name (``'cupy_add'``).
        nin (int): Number of inputs.
        nout (int): Number of outputs.
        nargs (int): ``nin + nout``.
    """

    def __init__(self, name: str, nin: int, nout: int, scatter, values) -> None:
        self.name = self.__name__ = name
        self.nin, self.nout, self.nargs = nin, nout, nin + nout
        self._loops = tuple(_names.UFUNC_TYPES[name].split())
        self._scatter = scatter
        self._values = values
        short = name.removeprefix("cupy_")
        # launches are traced under NumPy's name where NumPy has the ufunc
        self._launch_name = values.__name__ if isinstance(values, np.ufunc) else short
        self.__doc__ = f"CuPy's ``{short}`` ufunc (values by :func:`numpy.{short}`)."

    def __repr__(self) -> str:
        return f"<ufunc '{self.name}'>"

    @property
    def types(self) -> list[str]:
        """CuPy's loops as ``'ii->i'`` signatures."""
        return list(self._loops)

    # -- calling ---------------------------------------------------------------------------
    def _outputs_given(self, args, out) -> list:
        positional = list(args[self.nin :])
        if out is None:
            return positional + [None] * (self.nout - len(positional))
        if positional:
            raise ValueError("Cannot specify 'out' as both a positional and keyword argument")
        if not isinstance(out, tuple):
            if self.nout != 1:
                raise ValueError("'out' must be a tuple of arrays")
            return [out]
        if len(out) != self.nout:
            raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
        return list(out)

    def __call__(self, *args, out=None, dtype=None, casting="same_kind", _where=None, **extra):
        if extra:
            # NumPy's where=, order=, subok=, signature= ... are not CuPy's
            raise TypeError(f"Wrong arguments {extra}")
        if not self.nin <= len(args) <= self.nargs:
            raise TypeError(
                f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} "
                f"or {self.nargs} (with outputs), but given {len(args)}."
            )
        outs = self._outputs_given(args, out)
        inputs = args[: self.nin]
        for v in (*inputs, *(o for o in outs if o is not None)):
            _require_kernel_arg(v)
        mask = _where
        if mask is not None:
            _require_kernel_arg(mask)
            if not isinstance(mask, core.ndarray):
                mask = bool(mask)
            elif mask.dtype != np.bool_:
                raise TypeError(
                    f"Cannot cast array data from {mask.dtype!r} to {np.dtype(np.bool_)!r} "
                    "according to the rule 'safe'"
                )
        dtype = None if dtype is None else np.dtype(dtype)

        reads: list = []
        host_in = [core._unwrap(v, reads) for v in inputs]
        host_mask = core._unwrap(mask, reads)
        given = [o for o in outs if o is not None]
        shape = np.broadcast_shapes(
            *(np.shape(v) for v in host_in), np.shape(host_mask), *(o.shape for o in given)
        )
        precision = _ftz.single_precision((*reads, *given, dtype))
        with _ftz.flushing(precision), np.errstate(all="ignore"):
            values = self._compute(host_in, dtype)

        # the first input of an ndarray subclass gives new outputs its class
        template = next(
            (v for v in inputs if isinstance(v, core.ndarray) and type(v) is not core.ndarray),
            None,
        )
        results = []
        for o, r in zip(outs, values, strict=True):
            if o is None:
                o = core._empty(shape, r.dtype, "C")  # new outputs are C-contiguous
                if template is not None:
                    o = core._as_subtype(o, type(template), template)
            else:
                if not isinstance(o, core.ndarray):
                    raise TypeError("Output arguments type must be cupy.ndarray")
                if o.shape != shape:
                    raise ValueError("Out shape is mismatched")
                _check_output_cast(r.dtype, o.dtype, casting)
            results.append(o)
        if 0 not in shape:
            stores = [(o, np.broadcast_to(r, shape)) for o, r in zip(results, values, strict=True)]
            where = None if mask is None else np.broadcast_to(host_mask, shape)

            def replay() -> None:
                # a CUDA graph recomputes from the operands' memory as it is at replay
                with _ftz.flushing(precision), np.errstate(all="ignore"):
                    fresh = self._compute(host_in, dtype)
                again = [
                    (o, np.broadcast_to(r, shape)) for o, r in zip(results, fresh, strict=True)
                ]
                _Writer(again, where)()

            core._run(self._launch_name, reads, results, _Writer(stores, where), replay=replay)
        return results[0] if self.nout == 1 else tuple(results)

    def _compute(self, host_in, dtype) -> list[np.ndarray]:
        if not isinstance(self._values, np.ufunc):
            return [self._compute_from_loops(host_in[0], dtype)]
        try:
            # CuPy does not check inputs against ``casting`` (outputs only): cast freely
            res = self._values(*host_in, dtype=dtype, casting="unsafe")
        except ValueError:
            if self.name != "cupy_power":
                raise
            res = _power_of_integers(*host_in, dtype)
        return [np.asarray(r) for r in (res if isinstance(res, tuple) else (res,))]

    def _compute_from_loops(self, x, dtype) -> np.ndarray:
        """fix, i0, sinc: plain functions in NumPy, so CuPy's own loop list picks the
        types: the first loop the input casts to safely, or the one giving ``dtype``."""
        src = _scalar_dtype(x)
        for loop in self._loops:
            loop_in, loop_out = loop.split("->")
            wanted = np.dtype(loop_out) == dtype if dtype is not None else np.can_cast(src, loop_in)
            if wanted:
                return np.asarray(self._values(np.asarray(x, dtype=loop_in))).astype(loop_out)
        raise TypeError(f"Wrong type ({dtype or (src,)}) of arguments for {self.name}")

    # -- methods ---------------------------------------------------------------------------
    def outer(self, A, B, **kwargs):
        """The ufunc of every element of ``A`` with every element of ``B``."""
        a, b = core.array(A), core.array(B)
        # a gets b.ndim trailing axes of length 1 and broadcasting does the rest
        return self(a[(Ellipsis,) + (None,) * b.ndim], b, **kwargs)

    def at(self, a, indices, b=None):
        """Apply the ufunc to ``a`` in place at ``indices``, repeated indices each counting."""
        if self._scatter is None:
            raise NotImplementedError(f"`{self.name}.at` is not supported yet")
        if not isinstance(a, core.ndarray):
            raise AttributeError(f"'{type(a).__name__}' object has no attribute '_scatter_op'")
        key = core._index_on_device(indices)
        parts = key if isinstance(key, tuple) else (key,)
        advanced = [p for p in parts if isinstance(p, (core.ndarray, list))]
        if not advanced:
            # basic indexing: a view, updated by an ordinary call
            view = a[key]
            self(view, b, view)
            return
        npfn, dtypes = _SCATTER[self._scatter]
        one_mask = len(advanced) == 1 and getattr(advanced[0], "dtype", None) == np.bool_
        # integer indices go to CuPy's atomic kernels, which exist for some dtypes only
        if not one_mask and a.dtype.name not in dtypes:
            supported = ", ".join(sorted(dtypes))
            raise TypeError(f"cupy.{npfn.__name__}.at only supports {supported} as data type")
        update = b if isinstance(b, core.ndarray) else core.array(b, dtype=a.dtype)
        reads: list = []
        host_key = core._unwrap(key, reads)
        host_update = core._unwrap(update, reads).astype(a.dtype, copy=False)
        target = a._np
        core._run(
            self._launch_name + ".at",
            reads,
            [a],
            lambda: npfn.at(target, host_key, host_update),
            replay=True,
        )

    def _only(self, method: str, *names: str) -> None:
        if self.name.removeprefix("cupy_") not in names:
            raise NotImplementedError(f"`{self.name}.{method}` is not supported yet")

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False):
        """``sum`` for ``add``, ``prod`` for ``multiply``; CuPy has no other reduce."""
        self._only("reduce", "add", "multiply")
        how = array.sum if self.name == "cupy_add" else array.prod
        return how(axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        """``cumsum`` for ``add``, ``cumprod`` for ``multiply``; CuPy has no other."""
        self._only("accumulate", "add", "multiply")
        how = array.cumsum if self.name == "cupy_add" else array.cumprod
        return how(axis=axis, dtype=dtype, out=out)

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        """Sums over the slices ``indices[i]:indices[i+1]`` along ``axis`` (``add`` only).

        The result type is CuPy's: its reduceat goes through a cumulative sum (of
        ``cumsum``'s dtype) taken together with the input, so a small integer input sums in
        the default integer; the values are NumPy's ``add.reduceat`` in that type.
        """
        self._only("reduceat", "add")
        import cupy

        axis = np.lib.array_utils.normalize_axis_index(axis, array.ndim)
        acc = np.cumsum(np.zeros(1, array.dtype), dtype=dtype).dtype
        rtype = np.result_type(array.dtype, acc)
        reads: list = []
        host, idx = core._unwrap(array, reads), core._unwrap(indices, reads)
        shape = list(array.shape)
        shape[axis] = len(idx)
        res = cupy.empty(tuple(shape), rtype) if out is None else out
        if out is not None and out.shape != res.shape:
            raise ValueError("Out shape is mismatched")

        def body():
            with np.errstate(all="ignore"):
                v = np.add.reduceat(host.astype(acc), np.asarray(idx, np.intp), axis=axis)
            res._np[...] = v.astype(rtype)

        core._run(self._launch_name + ".reduceat", reads, [res], body, replay=True)
        return res


ufunc.__module__ = "cupy._core._kernel"


def make_all() -> dict[str, ufunc]:
    """CuPy's ufuncs by attribute name; an alias (``abs``/``absolute``) is the same object."""
    made: dict[str, ufunc] = {}
    table = {}
    for attr, (name, nin, nout, scatter) in _names.UFUNCS.items():
        if name not in made:
            made[name] = ufunc(name, nin, nout, scatter, getattr(np, name.removeprefix("cupy_")))
        table[attr] = made[name]
    return table
