"""``gk.elementwise`` and ``gk.reduction``: a kernel written once, in a subset of Python.

The decorated function's body is parsed (never run) into the kernel language of
:mod:`gpukit.backend.userkernel`; a construct outside it is refused at the decorator.
A call validates its arguments here, once, as every gpukit operation does (dtypes,
broadcasting, the backend and device through :func:`gpukit._dispatch.prepare`), then
asks the backend for one translation: a generated CuPy kernel (one launch) on cupy,
NumPy ufunc calls evaluated in cache-sized blocks on the host.
"""

from __future__ import annotations

import functools
import numbers
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast, overload

import numpy as np

from ._dispatch import dtypes as _dtypes
from ._dispatch import operation, prepare
from ._dispatch.capabilities import declare
from ._dispatch.inputs import keep, plan_for_all
from ._dispatch.kinds import kind_of
from ._runtime import plans as _plans
from ._runtime.plans import token
from ._select.selection import active
from .backend.userkernel import Body, ReductionBody, parse_elementwise, parse_reduction, replace

__all__ = ["ElementwiseKernel", "ReductionKernel", "elementwise", "reduction"]

#: The dtypes a kernel computes in; ``"T"`` binds to one of them at each call.
KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
DtypeSpec = str | type | np.dtype | None
# the key of plan_for_all: (kernel, active backend, each argument's type, dtype and shape,
# a reduction's axis and keepdims through token) -> (the backend's evaluation planned for
# such arguments, the conversions of _Kernel._plan): a warm call's checks, placement and
# dtype binding, done
_PLANS = _plans.table()


@functools.cache
def _key_function(loose: tuple[bool, ...], options: int) -> Any:
    """``key(kernel, args, *options)``: :func:`gpukit._dispatch.inputs.plan_for_all`'s
    key of a call with ``len(loose)`` arguments ``args`` and ``options`` tokens (the first
    look-up of a warm call), as one tuple display, without that function's loop; ``args``
    is the call's tuple, unpacked here (passing it on with ``*args`` would copy it). Another
    argument count raises ValueError; hashing the key of an argument that cannot be keyed
    (an unhashable dtype or shape) raises TypeError.

    An argument's dtype and shape are read as attributes, which costs less than
    ``getattr`` with a default, but raises AttributeError where it has none (a scalar),
    except at the positions ``loose`` marks (``key.loose``), where ``getattr`` gives None
    as plan_for_all's does: a kernel widens its key to the positions where it met one
    (:meth:`_Kernel._widen`)."""
    names = [f"x{i}" for i in range(len(loose))]
    tokens = [f"o{i}" for i in range(options)]
    parts = [
        f"type({x}), getattr({x}, 'dtype', None), getattr({x}, 'shape', None)"
        if wide
        else f"type({x}), {x}.dtype, {x}.shape"
        for x, wide in zip(names, loose, strict=True)
    ]
    source = f"def key({', '.join(['kernel', 'args', *tokens])}):\n"
    source += f"    ({''.join(f'{x}, ' for x in names)}) = args\n"
    source += f"    return (kernel, active(), {', '.join(parts + tokens)})\n"
    scope: dict[str, Any] = {"active": active}
    exec(compile(source, f"<gk kernel key of {len(loose)}>", "exec"), scope)  # generated names
    key = scope["key"]
    key.loose = loose
    return key


def _dtype_spec(what: str, value: Any, argument: str) -> np.dtype | None:
    """A declared dtype: None for the placeholder ``"T"``; TypeError outside float32/64."""
    if isinstance(value, str) and value == "T":
        return None
    try:
        dt = np.dtype(value)
    except TypeError:
        dt = None
    if dt not in KERNEL_DTYPES:
        raise TypeError(
            f"{what}: {argument} must be 'T', float32 or float64 (the dtypes a kernel "
            f"computes in), got {value!r}"
        )
    return dt


def _in_specs(what: str, in_dtypes: Any, params: tuple[str, ...]) -> tuple[np.dtype | None, ...]:
    if isinstance(in_dtypes, list | tuple):
        if len(in_dtypes) != len(params):
            raise ValueError(
                f"{what}: in_dtypes has {len(in_dtypes)} entries but the function has "
                f"{len(params)} parameters ({', '.join(params)}); give one per parameter"
            )
        return tuple(_dtype_spec(what, d, f"in_dtypes[{i}]") for i, d in enumerate(in_dtypes))
    return (_dtype_spec(what, in_dtypes, "in_dtypes"),) * len(params)


class _Kernel:
    """What elementwise and reduction kernels share: dtypes, argument checks, placement."""

    _what = ""
    _options = 0  # the options a call is planned for (tokens at the end of its key)
    __name__: str  # the function's, set by update_wrapper
    __wrapped__: Callable[..., Any]

    def __init__(self, fn: Callable[..., Any], body: Body, in_dtypes: Any, out_dtype: Any):
        functools.update_wrapper(cast(Any, self), fn)  # name, docstring, help(kernel)
        self._body = body
        self.params = body.params
        self._key = _key_function((False,) * len(body.params), self._options)
        self.in_dtypes = _in_specs(self._what, in_dtypes, body.params)
        self.out_dtype = _dtype_spec(self._what, out_dtype, "out_dtype")
        if self.out_dtype is None and all(d is not None for d in self.in_dtypes):
            raise TypeError(
                f"{self._what}: out_dtype is 'T' but no parameter is 'T' to bind it; "
                "name the output dtype"
            )

    @property
    def op(self) -> str:
        return f"{self._what} {self._body.name!r}"

    def result_dtype(self, *args: Any) -> np.dtype:
        """The dtype of ``self(*args)``, from the arguments' dtypes (nothing is computed)."""
        checked, scalar = self._check(args)
        return self._out(checked, scalar)

    def _check(self, args: tuple[Any, ...]) -> tuple[list[Any], list[bool]]:
        """The arguments' count and dtypes: (arguments, which are scalars)."""
        op, params = self.op, self.params
        if len(args) != len(params):
            raise TypeError(
                f"{op} takes {len(params)} arguments ({', '.join(params)}), got {len(args)}"
            )
        scalar = [_is_scalar(a) for a in args]
        checked = [
            a if s or kind_of(a) is not None else _dtypes.check(op, n, a)
            for a, s, n in zip(args, scalar, params, strict=True)
        ]
        for a, s, n in zip(checked, scalar, params, strict=True):
            computable(op, n, np.dtype(type(a) if s and not isinstance(a, np.generic) else a.dtype))
        return checked, scalar

    def _out(self, values: list[Any], scalar: list[bool]) -> np.dtype:
        return self._bind(values, scalar) if self.out_dtype is None else self.out_dtype

    def _plan(
        self, args: tuple[Any, ...]
    ) -> tuple[tuple[Any, ...], list[Any], list[Any], list[Any]]:
        """Check and place ``args``: ``(plan, values, arrays, placed)``.

        ``plan`` is ``(backend, conversions, broadcast shape, out dtype)``: what every call
        with arguments of these types, dtypes and shapes decides alike. ``conversions``
        are ``(position, convert)`` for the values not in their parameter's dtype (every
        scalar, by value; arrays by a cast). ``values`` are the arguments on the backend,
        ``arrays`` the array arguments as given and ``placed`` as the checks and
        :func:`prepare` made them (:func:`gpukit._dispatch.inputs.keep` keeps the plan
        when they are the same objects).
        """
        op, params = self.op, self.params
        checked, scalar = self._check(args)
        given = [a for a, s in zip(args, scalar, strict=True) if not s]
        arrays = [a for a, s in zip(checked, scalar, strict=True) if not s]
        names = tuple(n for n, s in zip(params, scalar, strict=True) if not s)
        backend, placed = prepare(*arrays, names=names)
        placed = [a if hasattr(a, "dtype") else backend.asarray(a) for a in placed]
        it = iter(placed)
        values = [a if s else next(it) for a, s in zip(checked, scalar, strict=True)]
        t = self._bind(values, scalar)
        conversions: list[tuple[int, Callable[[Any], Any]]] = []
        for i, (a, s, n, spec) in enumerate(
            zip(values, scalar, params, self.in_dtypes, strict=True)
        ):
            dt = t if spec is None else spec
            if s:
                conversions.append((i, dt.type))
            elif not np.can_cast(a.dtype, dt, "safe"):
                raise TypeError(
                    f"{op}: argument {n!r} has dtype {a.dtype}, which the kernel's {dt} "
                    f"parameter cannot hold without loss; convert it ({n}.astype('{dt}')) "
                    "or declare the parameter wider"
                )
            elif a.dtype != dt:
                conversions.append((i, operator.methodcaller("astype", dt)))
        shapes = [tuple(a.shape) for a in placed]
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            seen = ", ".join(f"{n} {s}" for n, s in zip(names, shapes, strict=True))
            raise ValueError(f"{op}: the arguments' shapes do not broadcast: {seen}") from None
        plan = (backend, tuple(conversions), shape, self._out(values, scalar))
        return plan, values, given, placed

    def _planned(
        self, args: tuple[Any, ...], *options: Any
    ) -> tuple[Callable[..., Any], list[Any]]:
        """A call that missed its plan: ``(run, values)``, the backend's evaluation
        planned by :meth:`_plan` for ``args`` and ``options`` (a reduction's axis and
        keepdims) and the arguments converted to their parameters' dtypes. The plan is
        looked up and kept as :func:`gpukit._dispatch.inputs.plan_for_all` and
        :func:`~gpukit._dispatch.inputs.keep` say: for arguments of the same types, dtypes
        and shapes when the checks and :func:`prepare` handed the arrays back unchanged."""
        plan, key = plan_for_all(_PLANS, self, args, *map(token, options))
        if plan is not None:  # kept for arrays sharing one of several devices
            return plan[0], _converted(args, plan[1])
        since = _plans.generation()
        plan, values, arrays, placed = self._plan(args, *options)
        backend, conversions = plan[0], plan[1]
        values = _converted(values, conversions)
        run = self._evaluation(backend, tuple(v.dtype for v in values), plan)
        keep(_PLANS, key, since, (run, conversions), backend, arrays, placed)
        return run, values

    def _widen(self, args: tuple[Any, ...]) -> None:
        """Read the dtype and shape with a default (:func:`_key_function`) at the positions
        where an argument of ``args`` lacks them, after the key raised AttributeError."""
        loose = self._key.loose
        if len(args) == len(loose):
            wide = tuple(
                w or not (hasattr(x, "dtype") and hasattr(x, "shape"))
                for w, x in zip(loose, args, strict=True)
            )
            if wide != loose:  # one assignment: threads never see a key without its marks
                self._key = _key_function(wide, self._options)

    def _evaluation(
        self, backend: Any, dtypes: tuple[np.dtype, ...], plan: tuple[Any, ...]
    ) -> Callable[..., Any]:
        """The backend's evaluation of this kernel for arguments of ``dtypes`` (converted)
        and :meth:`_plan`'s ``plan``, as a function of the arguments alone."""
        raise NotImplementedError

    def _bind(self, values: list[Any], scalar: list[bool]) -> np.dtype:
        """The dtype ``"T"`` stands for: the promoted dtype of its arguments, in float32 or
        float64 (integers and bools compute in float64, as in every gpukit operation)."""
        bound = [
            v if s else v.dtype
            for v, s, spec in zip(values, scalar, self.in_dtypes, strict=True)
            if spec is None
        ]
        return compute_dtype(np.result_type(*bound) if bound else np.dtype(np.float64))


def computable(op: str, name: str, dtype: np.dtype) -> None:
    """TypeError unless a kernel computes arguments of ``dtype`` (real, not float16)."""
    if dtype.kind not in "biuf" or dtype == np.float16:
        raise TypeError(
            f"{op}: argument {name!r} has dtype {dtype}; expected a real dtype computed "
            "in float32 or float64 (bool, integer, float32, float64): convert "
            "float16 to float32"
        )


def compute_dtype(promoted: np.dtype) -> np.dtype:
    """What ``"T"`` binds to for ``"T"`` arguments of the ``promoted`` dtype: float32 and
    float64 stay, bools and integers compute in float64."""
    return promoted if promoted in KERNEL_DTYPES else np.dtype(np.float64)


def _declare(op: str) -> None:
    """The capabilities of a kernel whose parameters and output are ``"T"``."""

    def rule(dtype: np.dtype) -> np.dtype:
        computable(op, "x", dtype)
        return compute_dtype(dtype)

    declare(op, rule)


def _is_scalar(x: Any) -> bool:
    return isinstance(x, numbers.Number | np.generic) and not isinstance(x, np.ndarray)


class ElementwiseKernel(_Kernel):
    """A kernel made by :func:`elementwise`: call it with one argument per parameter.

    Attributes
    ----------
    params : tuple of str
        The parameter names.
    in_dtypes : tuple of numpy.dtype or None
        Each parameter's dtype (None: the placeholder ``"T"``).
    out_dtype : numpy.dtype or None
        The result's dtype (None: ``"T"``).
    """

    _what = "gk.elementwise"

    if TYPE_CHECKING:  # the operation below is the call: one call level less

        def __call__(self, *args: Any) -> Any: ...

    def _evaluation(
        self, backend: Any, dtypes: tuple[np.dtype, ...], plan: tuple[Any, ...]
    ) -> Callable[..., Any]:
        _, _, shape, out = plan
        return backend.user_elementwise_plan(self._body, dtypes, shape, out)

    def __repr__(self) -> str:
        return f"<gk.elementwise {self._body.name}({', '.join(self.params)})>"


class ReductionKernel(_Kernel):
    """A kernel made by :func:`reduction`: ``kernel(*args, axis=None, keepdims=False)``.

    Attributes
    ----------
    params, in_dtypes, out_dtype
        As :class:`ElementwiseKernel`'s.
    reducer : str
        ``"sum"``, ``"prod"``, ``"max"`` or ``"min"``.
    """

    _what = "gk.reduction"
    _options = 2  # axis, keepdims

    def __init__(self, fn: Callable[..., Any], body: ReductionBody, in_dtypes: Any, out_dtype: Any):
        super().__init__(fn, body.map, in_dtypes, out_dtype)
        self._reduction = body
        self.reducer = body.reducer

    if TYPE_CHECKING:  # the operation below is the call: one call level less

        def __call__(
            self, *args: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False
        ) -> Any: ...

    def __repr__(self) -> str:
        return f"<gk.reduction {self._body.name}({', '.join(self.params)}) by {self.reducer}>"

    def _plan(
        self, args: tuple[Any, ...], axis: Any = None, keepdims: Any = False
    ) -> tuple[tuple[Any, ...], list[Any], list[Any], list[Any]]:
        """:meth:`_Kernel._plan`'s, with the axes reduced (non-negative ints, or None for
        all) and keepdims (a bool) appended to the plan."""
        plan, values, arrays, placed = super()._plan(args)
        op, shape = self.op, plan[2]
        axes = reduction_axes(op, axis, len(shape))
        if not isinstance(keepdims, bool | np.bool_):
            raise TypeError(f"{op}: keepdims must be a bool, got {keepdims!r}")
        reduced = shape if axes is None else [shape[a] for a in axes]
        if self.reducer in ("max", "min") and 0 in reduced:
            raise ValueError(
                f"{op}: a {self.reducer} over zero elements (shape {shape}, axis {axis!r}) "
                "has no value"
            )
        return (*plan, axes, bool(keepdims)), values, arrays, placed

    def _evaluation(
        self, backend: Any, dtypes: tuple[np.dtype, ...], plan: tuple[Any, ...]
    ) -> Callable[..., Any]:
        _, _, shape, out, axes, keepdims = plan
        return backend.user_reduction_plan(self._reduction, dtypes, shape, out, axes, keepdims)

    @functools.cached_property
    def pieces(self) -> tuple[ReductionKernel, ElementwiseKernel]:
        """This reduction split for data on several devices: the reduction without its
        final expression (each device's partial result, in ``out_dtype``) and the final
        expression as an elementwise kernel of the combined partials."""
        fn, r = self.__wrapped__, self._reduction
        in_dtypes = tuple("T" if d is None else d for d in self.in_dtypes)
        out = "T" if self.out_dtype is None else self.out_dtype
        partial = ReductionKernel(fn, ReductionBody(r.map, r.reducer, ("reduced",)), in_dtypes, out)
        final = Body(r.map.name, ("r",), (), replace(r.final, ("reduced",), ("var", "r")))
        return partial, ElementwiseKernel(fn, final, "T", out)


@operation("gk.elementwise", plain=(ElementwiseKernel,))
def _elementwise(kernel: ElementwiseKernel, *args: Any) -> Any:
    try:
        run, conversions = _PLANS[kernel._key(kernel, args)]
    except (KeyError, ValueError, TypeError, AttributeError) as missed:
        # no plan yet, another argument count, not keyable, a scalar where the key had none
        if isinstance(missed, AttributeError):
            kernel._widen(args)
        run, values = kernel._planned(args)
        return run(values)
    return run(_converted(args, conversions) if conversions else args)


ElementwiseKernel.__call__ = _elementwise  # type: ignore[method-assign, assignment]


_declare("gk.elementwise")


def reduction_axes(op: str, axis: Any, ndim: int) -> tuple[int, ...] | None:
    """``axis`` as non-negative ints (None: every axis); TypeError/ValueError naming it."""
    if axis is None:
        return None
    axes = (axis,) if not isinstance(axis, list | tuple) else tuple(axis)
    out = []
    for a in axes:
        try:
            a = operator.index(a)
        except TypeError:
            raise TypeError(f"{op}: axis must be an int or a tuple of ints, got {axis!r}") from None
        if not -ndim <= a < ndim:
            raise ValueError(f"{op}: axis {a} is out of range for {ndim}-d arguments")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: axis {axis!r} repeats an axis")
    return tuple(out)


@operation("gk.reduction", plain=(ReductionKernel,))
def _reduction(
    kernel: ReductionKernel, *args: Any, axis: Any = None, keepdims: bool = False
) -> Any:
    try:
        run, conversions = _PLANS[kernel._key(kernel, args, token(axis), token(keepdims))]
    except (KeyError, ValueError, TypeError, AttributeError) as missed:  # as _elementwise's
        if isinstance(missed, AttributeError):
            kernel._widen(args)
        run, values = kernel._planned(args, axis, keepdims)
        return run(values)
    return run(_converted(args, conversions) if conversions else args)


ReductionKernel.__call__ = _reduction  # type: ignore[method-assign, assignment]


def _converted(args: Sequence[Any], conversions: tuple[Any, ...]) -> list[Any]:
    """``args`` with each ``(position, convert)`` of ``conversions`` applied."""
    values = list(args)
    for i, convert in conversions:
        values[i] = convert(values[i])
    return values


_declare("gk.reduction")


@overload
def elementwise(fn: Callable[..., Any], /) -> ElementwiseKernel: ...
@overload
def elementwise(
    *, in_dtypes: DtypeSpec | Sequence[DtypeSpec] = "T", out_dtype: DtypeSpec = "T"
) -> Callable[[Callable[..., Any]], ElementwiseKernel]: ...
def elementwise(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    in_dtypes: DtypeSpec | Sequence[DtypeSpec] = "T",
    out_dtype: DtypeSpec = "T",
) -> ElementwiseKernel | Callable[[Callable[..., Any]], ElementwiseKernel]:
    """Make an elementwise kernel of a Python function, for every backend.

    The function's body is read, never run: assignments and one ``return``, in the
    kernel language of docs/user_kernels.rst (arithmetic, comparisons, ``and``/``or``/
    ``not``, ``a if c else b``, ``where``, ``pi``/``e``/``inf``/``nan`` and the math
    functions NumPy and CUDA share: ``exp``, ``log``, ``log1p``, ``expm1``, ``sqrt``,
    ``sin``, ``cos``, ``tan``, ``tanh``, ``erf``, ``erfc``, ``abs``, ``minimum``,
    ``maximum``, ``floor``, ``ceil``, ... by bare name or as ``np.<name>``). On cupy a
    call is one generated ``cupy.ElementwiseKernel`` launch; on numpy, NumPy ufunc calls
    evaluated block by block.

    Parameters
    ----------
    fn : function
        The per-element function, one parameter per input.
    in_dtypes : dtype, "T", or a sequence of them, default "T"
        Each parameter's dtype (one for all, or one per parameter): ``float32``,
        ``float64``, or ``"T"``, which binds at each call to the promoted dtype of the
        ``"T"`` arguments (integers and bools to float64). An argument is cast to its
        parameter's dtype when that loses nothing (TypeError otherwise).
    out_dtype : dtype or "T", default "T"
        The result's dtype. Literals compute in it; an operation takes the wider of its
        operands' dtypes, as NumPy does.

    Returns
    -------
    ElementwiseKernel
        Called with one array or scalar per parameter; the arrays broadcast, as NumPy's.
        Accepts sharded arrays (shard by shard) and Dask arrays (chunk by chunk).

    Raises
    ------
    gpukit.errors.KernelSyntaxError
        A construct outside the kernel language; the message names it and its line.
    TypeError
        A dtype other than float32, float64 or "T"; at a call, an argument of another
        real dtype that its parameter cannot hold, or of a complex or float16 dtype.
    ValueError
        ``in_dtypes`` does not have one entry per parameter; at a call, shapes that do
        not broadcast.

    See Also
    --------
    reduction : A kernel reducing a mapped expression.
    gpukit.nn.Activation : A layer made of an elementwise kernel and its gradient.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> @gk.elementwise(in_dtypes="T", out_dtype="T")
    ... def softplus(x):
    ...     return log1p(exp(-abs(x))) + maximum(x, 0.0)
    >>> softplus(np.array([-1.0, 0.0, 2.0], dtype=np.float32)).round(4)
    array([0.3133, 0.6931, 2.1269], dtype=float32)
    """
    if fn is None:
        return functools.partial(_make_elementwise, in_dtypes=in_dtypes, out_dtype=out_dtype)
    return _make_elementwise(fn, in_dtypes=in_dtypes, out_dtype=out_dtype)


def _make_elementwise(fn: Callable[..., Any], *, in_dtypes: Any, out_dtype: Any) -> Any:
    return ElementwiseKernel(fn, parse_elementwise(fn), in_dtypes, out_dtype)


def _make_reduction(fn: Callable[..., Any], *, in_dtypes: Any, out_dtype: Any) -> Any:
    return ReductionKernel(fn, parse_reduction(fn), in_dtypes, out_dtype)


@overload
def reduction(fn: Callable[..., Any], /) -> ReductionKernel: ...
@overload
def reduction(
    *, in_dtypes: DtypeSpec | Sequence[DtypeSpec] = "T", out_dtype: DtypeSpec = "T"
) -> Callable[[Callable[..., Any]], ReductionKernel]: ...
def reduction(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    in_dtypes: DtypeSpec | Sequence[DtypeSpec] = "T",
    out_dtype: DtypeSpec = "T",
) -> ReductionKernel | Callable[[Callable[..., Any]], ReductionKernel]:
    """Make a reduction kernel of a Python function, for every backend.

    The function returns ``final(reducer(mapped))``: one ``sum``, ``prod``, ``max`` or
    ``min`` of an elementwise expression of the parameters (in the language of
    :func:`elementwise`), inside an expression of the reduced value and constants only
    (``sqrt(sum(w * x * x))``). On cupy a call is one generated ``cupy.ReductionKernel``
    launch; on numpy, the mapped expression, the NumPy reduction and the final
    expression.

    Parameters
    ----------
    fn : function
        The function, one parameter per input.
    in_dtypes, out_dtype
        As :func:`elementwise`'s. The reduction accumulates in the mapped expression's
        dtype.

    Returns
    -------
    ReductionKernel
        Called as ``kernel(*args, axis=None, keepdims=False)``: the arguments broadcast,
        then ``axis`` (an int, a tuple, or None for all) of the broadcast shape is
        reduced. Returns an array (0-d for a full reduction) of ``out_dtype``. Accepts
        sharded arrays (every array argument sharded alike) and Dask arrays.

    Raises
    ------
    gpukit.errors.KernelSyntaxError
        A construct outside the kernel language, no reduction or more than one, or an
        argument used outside the reduction.
    TypeError, ValueError
        As :func:`elementwise`; at a call, an ``axis`` out of range or repeated, or a
        ``max``/``min`` over zero elements (ValueError).

    See Also
    --------
    elementwise : An elementwise kernel.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> @gk.reduction
    ... def weighted_norm(x, w):
    ...     return sqrt(sum(w * x * x))
    >>> float(weighted_norm(np.array([3.0, 4.0]), np.array([1.0, 1.0])))
    5.0
    """
    if fn is None:
        return functools.partial(_make_reduction, in_dtypes=in_dtypes, out_dtype=out_dtype)
    return _make_reduction(fn, in_dtypes=in_dtypes, out_dtype=out_dtype)
