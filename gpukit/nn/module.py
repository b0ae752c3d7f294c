"""Module and Parameter: the containers every layer is built from.

A module's forward pass (``module(x)``) keeps what its backward pass needs;
``module.backward(grad_output)`` returns the gradient with respect to the input and
accumulates the gradients of the parameters into ``Parameter.grad`` (Torch7's
``forward``/``backward``, PyTorch's naming and initialisation).

Every subclass's ``forward`` and ``backward`` are wrapped when the class is made
(:meth:`Module.__init_subclass__`): ``backward`` before ``forward`` is a ``RuntimeError``,
a ``grad_output`` of another shape than the last forward output's a ``ValueError``, and a
backward pass is all or nothing: the gradients it produces are added to the
parameters' ``.grad`` only once the whole pass has succeeded, so a failed pass leaves
them as they were (a backward pass is never re-run: it is an in-place operation). An
allocation failure in ``model(x)`` or ``backward`` becomes :class:`~gpukit.OutOfMemoryError`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from .. import _dispatch
from .._dispatch import dtypes as _dtypes
from .._dispatch.kinds import kind_of
from .._runtime import devices as _devices
from .._runtime import plans as _plans
from .._runtime.memory import Policy, operation
from .._select import registry as _registry
from .._select.selection import get_backend, use_backend
from ..errors import DeviceMismatchError


class _Pass(threading.local):
    """The gradients of the backward pass running in this thread, added to the parameters
    when it has finished (None outside a pass). Per thread, not per context: worker
    threads, which may run a context copied from the caller's (DataParallel), run
    passes of their own; and a pass never yields to other code in its thread."""

    pending: list[tuple[Parameter, Any]] | None = None


_pass = _Pass()


__all__ = ["Module", "Parameter"]

_ndarray = np.ndarray
#: Types of attribute values that are never a parameter or a module (Module._anchor)
_LEAVES = frozenset({bool, int, float, str, tuple, list, dict, type(None), _ndarray})
_UNSET: Any = object()  # need_input_grad not passed: the subclass's default applies
_NO_FORWARD: Any = object()  # Module._output_shape before the first forward pass


class Parameter:
    """A trainable array and its accumulated gradient.

    Parameters
    ----------
    data : array
        The values, a native array of any backend.

    Attributes
    ----------
    data : array
        The values; optimizers update it in place.
    grad : array or None
        The gradient accumulated by ``backward`` since the last ``zero_grad``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> p = gk.nn.Parameter(np.zeros(3, dtype="float32"))
    >>> p.shape, p.grad is None
    ((3,), True)
    """

    __slots__ = ("_slot", "data", "grad")

    def __init__(self, data: Any) -> None:
        _dispatch.reject("gk.nn.Parameter", data=data)  # a sharded array is no parameter
        self.data = data
        self.grad: Any = None
        # (data view, gradient view) in an optimizer's flat buffers (gpukit.nn._flat)
        # (data view, gradient slot, the FlatBuffer holding them or None): gpukit/nn/_flat.py
        self._slot: tuple[Any, Any, Any] | None = None

    def _grad_target(self) -> Any:
        """Where a backward pass may write this parameter's gradient, or None.

        The parameter's slot in a flat gradient buffer (``gpukit/nn/_flat.py``) when it
        has one, holds no gradient (it was zeroed) and the current backward pass has not
        produced one for it yet; a layer computing the gradient into it (``out=``) saves
        the optimizer a copy. None otherwise: compute a new array and :meth:`accumulate`.
        """
        slot = self._slot
        if slot is None or self.grad is not None or slot[0] is not self.data:
            return None
        pending = _pass.pending
        if pending is not None and any(q is self for q, _ in pending):
            return None  # used twice in one pass: the second gradient is added to the first
        return slot[1]

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of :attr:`data`."""
        return tuple(self.data.shape)

    @property
    def dtype(self) -> np.dtype:
        """Dtype of :attr:`data`."""
        return self.data.dtype

    def accumulate(self, grad: Any) -> None:
        """Add ``grad`` to :attr:`grad` (taking ``grad`` over when there is none yet).

        Inside a module's ``backward`` the addition waits until the whole backward pass
        has succeeded.
        """
        pending = _pass.pending
        if pending is not None:
            pending.append((self, grad))
        elif self.grad is None:
            self.grad = grad
        else:
            self.grad += grad

    def __repr__(self) -> str:
        return f"Parameter(shape={self.shape}, dtype={self.dtype})"


class Module:
    """Base class of layers and models.

    Subclasses implement :meth:`forward` and :meth:`backward`; parameters and
    sub-modules are the :class:`Parameter` and :class:`Module` attributes, named
    as PyTorch names them (``"0.weight"`` for a :class:`~gpukit.nn.Sequential`).

    Examples
    --------
    >>> import gpukit as gk
    >>> model = gk.nn.Sequential(gk.nn.Linear(4, 3, seed=0), gk.nn.ReLU())
    >>> [name for name, _ in model.named_parameters()]
    ['0.weight', '0.bias']
    >>> model
    Sequential(
      (0): Linear(in_features=4, out_features=3, bias=True)
      (1): ReLU()
    )
    """

    # a class default, not an instance attribute set in __init__: a layer's parameters
    # then come first among its attributes, where Module._anchor looks on every call
    training: bool = True
    # the last forward output's shape: None where it has none, _NO_FORWARD before the
    # first forward pass (backward needs what a forward pass kept)
    _output_shape: Any = _NO_FORWARD
    # Whether the class's backward adds its gradients to parameters only after everything
    # it computes has succeeded (or adds none): then its outermost pass needs no list of
    # gradients to add at the end (_backward_op). Honoured only for the backward of the
    # class that says so (_honoured).
    _atomic_backward: bool = False
    # Whether the class's forward computes on its input's device by itself (its kernels
    # launch there, and anything it allocates is made there): a call of a module without
    # parameters then does not make the input's device current first (_call). Honoured
    # only for the forward of the class that says so (_honoured), as _call_on_any_device.
    _forward_on_input_device: bool = False
    _call_on_any_device: bool = False

    def __init__(self) -> None:
        """Nothing to set (``training`` is the class's default until ``train``/``eval``);
        defined so that a subclass's ``super().__init__()`` ends here, as in
        ``torch.nn.Module``, whatever other bases a subclass mixes in."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap the subclass's ``forward`` and ``backward`` (see the module docstring)."""
        super().__init_subclass__(**kwargs)
        cls._call_on_any_device = _honoured(cls, "_forward_on_input_device", ("forward",))
        cls.forward = _forward_op(getattr(cls.forward, "raw", cls.forward), cls.__name__)
        cls.backward = _backward_op(
            getattr(cls.backward, "raw", cls.backward),
            cls.__name__,
            _honoured(cls, "_atomic_backward", ("backward", "_backward")),
        )

    # -- computation -------------------------------------------------------------------------
    def forward(self, x: Any) -> Any:
        """Compute the output for ``x``, keeping what :meth:`backward` needs."""
        raise NotImplementedError(f"{type(self).__name__} does not implement forward")

    def backward(self, grad_output: Any, *, need_input_grad: bool = True) -> Any:
        """Gradient with respect to the last forward's input; accumulates parameter grads.

        With ``need_input_grad=False`` the input gradient is not computed and None is
        returned. Single layers compute it by default (a hand-composed network needs it
        from every layer but the first); :class:`~gpukit.nn.Sequential`, the model, does
        only when asked (``need_input_grad=True``), as PyTorch computes the gradient of a
        network's input only for an input that requires it.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement backward")

    def __call__(self, x: Any) -> Any:
        """``forward(x)``, with ``x`` placed where the parameters live.

        Host data given to a device model is moved there (an implicit, counted transfer);
        lists and scalars take the parameters' dtype. An array of another dtype than the
        parameters is a ``TypeError``: convert it, or the model (``model.to(dtype=...)``).
        """
        # the memory policy's steps inline (gk.nn.Module.__call__): one call level less
        # than @operation on the path of every layer
        try:
            if type(x) is _ndarray and x.dtype.isnative:
                # _call's host path, one call level less again: a NumPy array for a module
                # without parameters, or with host parameters of the array's dtype
                anchor = self._anchor()
                if anchor is None:
                    return self.forward(x)
                ref = anchor.data
                if type(ref) is _ndarray and ref.dtype == x.dtype:
                    return self.forward(x)
            return _call(self, x)
        except Exception as exc:
            claimed = _CALL.claim(exc)
            if claimed is None:
                raise
        return _CALL.retry(claimed, (self, x), {})

    def _call_kind(self, x: Any) -> Any:
        """``self(x)`` for a sharded (or other kind of) array: refused, naming the layer
        (:class:`~gpukit.nn.DataParallel` takes a sharded batch)."""
        cls = type(self)
        where = "gk.nn" if cls.__module__.startswith("gpukit.nn") else cls.__module__
        _dispatch.reject(f"{where}.{cls.__qualname__}", x=x)

    def _anchor(self) -> Parameter | None:
        """The first parameter: where the module lives and its dtype."""
        # _iter_parameters' order (own parameters, then the children's) in one pass over
        # the attributes, without its generators: most of the cost of calling a layer
        # that has no parameters
        children = None
        for value in self.__dict__.values():
            if type(value) in _LEAVES:
                continue
            if isinstance(value, Parameter):
                return value
            if isinstance(value, Module):
                if children is None:
                    children = [value]
                else:
                    children.append(value)
        if children is not None:
            for child in children:
                found = child._anchor()
                if found is not None:
                    return found
        return None

    # -- structure ---------------------------------------------------------------------------
    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct sub-modules and their names."""
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value

    def children(self) -> Iterator[Module]:
        """The direct sub-modules."""
        for _, m in self.named_children():
            yield m

    def modules(self) -> Iterator[Module]:
        """This module and every sub-module, depth first."""
        yield self
        for child in self.children():
            yield from child.modules()

    def _iter_parameters(self) -> Iterator[Parameter]:
        for value in vars(self).values():
            if isinstance(value, Parameter):
                yield value
        for child in self.children():
            yield from child._iter_parameters()

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """Every parameter with its dotted name (``"0.weight"``), as in PyTorch."""
        for name, value in vars(self).items():
            if isinstance(value, Parameter):
                yield prefix + name, value
        for name, child in self.named_children():
            yield from child.named_parameters(f"{prefix}{name}.")

    def parameters(self) -> list[Parameter]:
        """Every parameter, in :meth:`named_parameters` order."""
        return list(self._iter_parameters())

    def zero_grad(self) -> None:
        """Forget the accumulated gradients (``grad = None``, PyTorch's default)."""
        for p in self._iter_parameters():
            p.grad = None

    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout active) on this module and its sub-modules."""
        for m in self.modules():
            m.training = mode
        return self

    def eval(self) -> Module:
        """Set evaluation mode (Dropout off); same as ``train(False)``."""
        return self.train(False)

    # -- placement ---------------------------------------------------------------------------
    @operation("gk.nn.Module.to")
    def to(self, backend: Any = None, device: int | None = None, dtype: Any = None) -> Module:
        """Move the parameters to ``backend``/``device`` and/or cast them to ``dtype``.

        Parameters
        ----------
        backend : str or Backend, optional
            Target backend; the active one when omitted.
        device : int, optional
            Device index on that backend; its current device when omitted.
        dtype : dtype, optional
            New floating dtype of the parameters.

        Returns
        -------
        Module
            ``self``. Gradients are dropped.

        Examples
        --------
        >>> import gpukit as gk
        >>> layer = gk.nn.Linear(2, 2, seed=0).to("numpy", dtype="float64")
        >>> layer.weight.dtype
        dtype('float64')
        """
        if dtype is not None and np.dtype(dtype).kind != "f":
            raise TypeError(f"Module.to: dtype must be a floating dtype, got {np.dtype(dtype)}")
        with use_backend(backend if backend is not None else get_backend()) as target:
            if device is not None:
                _devices.check_device(target, device)
            where = target.current_device() if device is None else device
            moved = []  # every parameter moved before any is replaced: all or nothing
            for p in self._iter_parameters():
                data = p.data
                owner = _dispatch.owner_of(data) or _host_backend()
                if owner is not target or owner.device_of(data) != where:
                    data = _dispatch.asarray(_dispatch.to_numpy(data), device=where)
                if dtype is not None and data.dtype != np.dtype(dtype):
                    with target.use_device(where):  # CuPy allocates on the current device
                        data = data.astype(dtype)
                moved.append((p, data))
        for p, data in moved:
            p.data, p.grad = data, None
        return self

    # -- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The parameters by name (the arrays themselves, not copies).

        Returns
        -------
        dict
            ``{"0.weight": array, ...}``, PyTorch's keys, so weights move to and from
            PyTorch with ``{k: v.numpy() for k, v in torch_model.state_dict().items()}``.

        Examples
        --------
        >>> import gpukit as gk
        >>> sorted(gk.nn.Linear(2, 3, seed=0).state_dict())
        ['bias', 'weight']
        """
        return {name: p.data for name, p in self.named_parameters()}

    @operation("gk.nn.Module.load_state_dict")
    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> None:
        """Copy values from ``state_dict`` into the parameters (their dtype and device).

        Parameters
        ----------
        state_dict : mapping
            Name to array (NumPy, CuPy, anything ``numpy.asarray`` takes: a CPU
            ``torch.Tensor`` too).
        strict : bool
            Whether missing and unexpected keys are errors (shape mismatches always are).

        Raises
        ------
        ValueError
            Listing the missing keys, unexpected keys and shape mismatches.
        TypeError
            A value of a dtype that does not cast to its parameter's (complex into
            float), or not an array.

        Every value is converted and moved before the first parameter is written, so a
        failure leaves the model as it was.

        Examples
        --------
        >>> import gpukit as gk
        >>> a, b = gk.nn.Linear(2, 3, seed=0), gk.nn.Linear(2, 3, seed=1)
        >>> b.load_state_dict(a.state_dict())
        >>> bool((a.weight.data == b.weight.data).all())
        True
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                f"load_state_dict into {type(self).__name__}: state_dict must be a mapping of "
                f"names to arrays, got {type(state_dict).__name__}"
            )
        own = dict(self.named_parameters())
        problems = []
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and missing:
            problems.append(f"missing keys {missing}")
        if strict and unexpected:
            problems.append(f"unexpected keys {unexpected}")
        mismatched = [
            f"{k}: expected {own[k].shape}, got {tuple(np.shape(v))}"
            for k, v in state_dict.items()
            if k in own and tuple(np.shape(v)) != own[k].shape
        ]
        if mismatched:
            problems.append(f"shape mismatches [{'; '.join(mismatched)}]")
        if problems:
            raise ValueError(f"load_state_dict into {type(self).__name__}: " + ", ".join(problems))
        # every value converted and moved first: a failure leaves every parameter as it was
        staged = [
            (p, staged_value(p.data, state_dict[k], k)) for k, p in own.items() if k in state_dict
        ]
        for p, value in staged:
            with on_device_of(p.data):  # the copy runs where the parameter lives
                p.data[...] = value

    # -- display -----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The arguments shown inside the parentheses of the repr."""
        return ""

    def __repr__(self) -> str:
        children = list(self.named_children())
        if not children:
            return f"{type(self).__name__}({self.extra_repr()})"
        lines = [f"{type(self).__name__}("]
        for name, child in children:
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {text}")
        lines.append(")")
        return "\n".join(lines)


def on_device_of(x: Any) -> contextlib.AbstractContextManager[Any]:
    """Make ``x``'s device current: CuPy allocates ``empty_like``/``copy`` there."""
    owner = _dispatch.owner_of(x)
    return contextlib.nullcontext() if owner is None else owner.use_device(owner.device_of(x))


def namespace_of(x: Any) -> Any:
    """``x``'s array namespace: ``numpy`` for a host array, its backend's for a device
    array, without ``gk.namespace``'s dispatch (a few microseconds of a small layer's
    call); else ``gk.namespace(x)``."""
    if type(x) is np.ndarray:
        return np
    owner = _dispatch.owner_of(x)
    return _dispatch.namespace(x) if owner is None else owner.xp


def as_dtype(a: Any, dtype: Any) -> Any:
    """``a.astype(dtype, copy=False)``: ``a`` itself where it has ``dtype`` (the common
    case), without the method call (CuPy's parses its keywords in Python on every call)."""
    return a if a.dtype == dtype else a.astype(dtype)


def on_grad_device(backward: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a module's ``backward``: it computes on the device holding ``grad_output``
    (CuPy computes and allocates on the current device, whichever the caller has), which
    the wrapper every ``backward`` wears (:func:`_backward_op`) makes current."""
    backward.on_grad_device = True  # type: ignore[attr-defined]
    return backward


def assign(dst: Any, value: Any, name: str) -> None:
    """``dst[...] = value`` for a parameter or optimizer state ``dst``, wherever it lives."""
    value = staged_value(dst, value, name)
    with on_device_of(dst):  # the copy runs where dst lives
        dst[...] = value


def staged_value(dst: Any, value: Any, name: str) -> Any:
    """``value`` ready to be written into ``dst``: on its device, of a dtype that casts.

    Host values reaching a device ``dst`` are an implicit transfer (counted, guarded);
    device values for a host ``dst`` are copied out explicitly.
    """
    if _dispatch.owner_of(dst) is None:
        value = _dispatch.to_numpy(value)
    else:
        if _dispatch.owner_of(value) is None:
            value = np.asarray(value)
        _, (value, _) = _dispatch.prepare(value, dst, names=(name, "parameter"))
    if not np.can_cast(value.dtype, dst.dtype, "same_kind"):
        raise TypeError(
            f"{name}: a value of dtype {value.dtype} cannot be stored in a parameter of dtype "
            f"{dst.dtype} without losing its kind (e.g. complex into float)"
        )
    return value


def mismatch(where: str, name: str, got: np.dtype, want: np.dtype) -> str:
    """The message for an array whose dtype is not the model's, with both fixes."""
    return (
        f"{where}: {name} has dtype {got} but the model's parameters are {want}; gpukit does "
        f"not cast silently: convert the data ({name}.astype({str(want)!r})) or the model "
        f"(model.to(dtype={str(got)!r}))"
    )


def _forward_op(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` as ``name``'s forward, recording that a forward pass has run and the shape of
    its output (what :func:`_backward_op` takes).

    Allocation failures are explained by the entry points that run it (``model(x)``,
    ``fit``, ``predict``), which are operations; this adds no second wrapper per layer.
    """

    @functools.wraps(fn)
    def forward(self: Module, x: Any) -> Any:
        y = fn(self, x)
        try:
            self._output_shape = y.shape
        except AttributeError:  # a subclass's forward may return anything
            self._output_shape = None
        return y

    forward.raw = fn  # type: ignore[attr-defined]
    return forward


def _honoured(cls: type, flag: str, methods: tuple[str, ...]) -> bool:
    """The promise ``flag`` about ``methods`` (``_atomic_backward``: the ``backward`` and
    the Linear layer's body ``_backward``) of the class declaring it, where the methods
    that run are that class's own: False where a subclass or a mixin supplies one, which
    makes no such promise."""
    declaring = next((c for c in cls.__mro__ if flag in vars(c)), None)
    if declaring is None or not vars(declaring)[flag]:
        return False

    def raw(c: type, method: str) -> Any:
        fn = getattr(c, method, None)
        return getattr(fn, "raw", fn)

    return all(raw(cls, m) is raw(declaring, m) for m in methods)


def _backward_op(fn: Callable[..., Any], name: str, atomic: bool) -> Callable[..., Any]:
    """``fn`` as ``name``'s backward: refused before a forward pass and for a gradient of
    another shape than the last forward output's; gradients added to the parameters only
    once the whole (outermost) pass has succeeded, which an ``atomic`` backward
    (:attr:`Module._atomic_backward`) ensures itself; never re-run."""

    # the subclass's own default (True for layers, False for Sequential), read once
    default = inspect.signature(fn).parameters["need_input_grad"].default
    policy = Policy(f"gk.nn.{name}.backward", fn, inplace=True)
    switch = getattr(fn, "on_grad_device", False)

    # the memory policy's steps inline, as Module.__call__'s: one call level less than
    # @operation on every layer's backward. An in-place operation is never re-run: claim
    # raises OutOfMemoryError for an allocation failure; anything else propagates as it is
    @functools.wraps(fn)
    def backward(self: Module, grad_output: Any, *, need_input_grad: Any = _UNSET) -> Any:
        if need_input_grad is _UNSET:
            need_input_grad = default
        want = self._output_shape
        if want is not None:
            got = getattr(grad_output, "shape", None)
            if got != want:
                if want is _NO_FORWARD:
                    raise RuntimeError(
                        f"{name}.backward called before forward: run the forward pass "
                        "(model(x)) first; backward uses what it kept"
                    )
                _check_shape(name, grad_output, got, want)
        # an outer pass adds the gradients; else this one does at its end, unless atomic
        outer = not atomic and _pass.pending is None
        pending = None
        try:
            if outer:
                pending = _pass.pending = []
            try:
                if switch and type(grad_output) is not _ndarray:
                    with on_device_of(grad_output):
                        out = fn(self, grad_output, need_input_grad=need_input_grad)
                else:
                    out = fn(self, grad_output, need_input_grad=need_input_grad)
            finally:
                if outer:
                    _pass.pending = None
            if outer:
                for p, g in pending:
                    p.accumulate(g)
            return out
        except Exception as exc:
            pending = None  # the failed pass's gradients: freed before claim releases memory
            policy.claim(exc)
            raise

    backward.raw = fn  # type: ignore[attr-defined]
    return backward


def _check_shape(name: str, grad_output: Any, got: Any, want: tuple[int, ...]) -> None:
    """Refuse a ``grad_output`` whose shape is not the forward output's ``want`` (``got``:
    its ``shape`` attribute; a list or a scalar has none, and is seen as NumPy sees it)."""
    if got is None:
        try:
            got = np.shape(grad_output)
        except ValueError:  # a ragged list
            got = "no shape (a ragged sequence)"
        if got == want:
            return
    raise ValueError(
        f"{name}.backward: grad_output has shape {got} but the last forward pass's output "
        f"has shape {want}; they must match (the gradient of the loss with respect to that "
        "output; a module used at several places of a model keeps its last forward pass's)"
    )


def _call(module: Module, x: Any) -> Any:
    """:meth:`Module.__call__` without its memory policy."""
    given = x
    if type(x) is _ndarray:
        if not x.dtype.isnative:  # >f4
            x = _dtypes.check(f"gk.nn.{type(module).__name__}", "x", x)
    elif _dispatch.checked_device(x) is None:
        since = _plans.generation()  # before the checks that remember_checked keeps passed
        if kind_of(x) is not None:
            return module._call_kind(x)
        x = _dtypes.check(f"gk.nn.{type(module).__name__}", "x", x)  # lists, None, masked
        if x is given:
            _dispatch.remember_checked(x, since)
    anchor = module._anchor()
    if anchor is not None:
        ref = anchor.data
        owner = device = None  # the model's device backend and device: none on the host
        if type(ref) is _ndarray:
            if type(x) is not _ndarray:
                x = _place(x, ref, None)
        else:
            owner = _dispatch.owner_of(ref)
            if owner is not None:
                device = owner.device_of(ref)
            # the model's own kind of array on its device: nothing to move or refuse
            if type(x) is not type(ref) or owner is None or owner.device_of(x) != device:
                x = _place(x, ref, owner)
        if x.dtype != ref.dtype:
            if hasattr(given, "dtype"):  # an array of another dtype: never cast silently
                raise TypeError(mismatch(f"gk.nn.{type(module).__name__}", "x", x.dtype, ref.dtype))
            x = x.astype(ref.dtype)  # a list or a scalar takes the parameters' dtype
        if owner is not None:
            with owner.use_device(device):  # CuPy computes on the current device: the model's
                return module.forward(x)
    elif type(x) is not _ndarray and not module._call_on_any_device:
        with on_device_of(x):  # no parameters: computed where the input lives
            return module.forward(x)
    return module.forward(x)


_CALL = Policy("gk.nn.Module.__call__", _call)


def _place(x: Any, ref: Any, model_owner: Any) -> Any:
    """``x`` where the parameter ``ref`` lives (``model_owner``: its device backend, None
    for a host model); host data moves to a device model."""
    x_owner = _dispatch.owner_of(x)
    if model_owner is None:
        if x_owner is not None:
            raise DeviceMismatchError(
                f"input x is on {x_owner.name}:{x_owner.device_of(x)} but the model's "
                "parameters are on the host (numpy); move the model with model.to(...) "
                "or the input with gk.to_numpy(x)"
            )
        return np.asarray(x)
    # a device model: host input is an implicit, counted, guarded transfer; a device
    # input of another backend or device raises DeviceMismatchError
    _, (x, _) = _dispatch.prepare(x, ref, names=("x", "parameters"))
    return x


def _host_backend():
    return _registry.load("numpy")
