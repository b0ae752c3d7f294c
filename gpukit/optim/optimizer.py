"""SGD, Adam and AdamW with ``torch.optim`` semantics, on fused in-place kernels.

Hyper-parameters are validated when set (construction, ``load_state_dict``: a number
that is not real is a ``TypeError``, one out of range or not finite a ``ValueError``)
and the learning rate when a step reads it (schedulers change it), so ``step()`` calls
each parameter's backend kernel directly, without re-validating four arrays per
parameter per step.

Parameters, gradients and state live in flat buffers (``gpukit/nn/_flat.py``), one per
parameter group, array type, device and dtype, made when the optimizer is: a step
updates each buffer with one kernel launch when every parameter in it has a gradient
and the same step count (the usual case), and parameter by parameter (on views of the
same buffers) otherwise. On a device the update kernels read the device's status
(:mod:`gpukit._runtime.device_status`) and change nothing while it holds an error a
kernel found (a label out of range in ``CrossEntropyLoss``, a non-finite loss in
``fit``), so a step computed from a poisoned batch is never applied.

A step is all or nothing: every parameter's gradient is checked and every buffer it
needs (new state, a contiguous copy of a strided gradient) is allocated before the
first parameter is written, and the kernels allocate nothing once running (the numpy
ones take their scratch from a per-thread workspace allocated before their first
write). A step that fails, out of memory included, leaves every parameter and the
optimizer state as they were, and is never re-run automatically.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterable
from operator import is_, itemgetter
from typing import Any

import numpy as np

from .. import _dispatch
from .._dispatch.capabilities import declare
from .._runtime import device_status as _status
from .._runtime.memory import Policy, operation
from ..errors import DeviceMismatchError
from ..kernels._checks import check_flag, check_range
from ..kernels._direct import bound as _bind
from ..kernels._direct import kernel as _kernel
from ..nn._flat import FlatBuffer, flatten
from ..nn.module import Module, Parameter, _place, assign, on_device_of
from ._graphed import DeviceUpdate

_ndarray = np.ndarray
_HALF = np.dtype(np.float16)
#: a flat buffer (None for a parameter updated on its own) and its parameters
_Laid = tuple[FlatBuffer | None, list[Parameter]]
#: Steps an optimizer remembers per device until the device's status is read: an error
#: read later than this many steps after the bad batch undoes only the last ones' counts.
_LOG_STEPS = 1 << 16

__all__ = ["SGD", "Adam", "AdamW", "Optimizer"]


def _entries(*keys: str) -> tuple[Any, Any]:
    """``(read, unchanged)`` of a parameter group's entries ``keys``: ``read(group)`` their
    values as a tuple (``itemgetter``), ``unchanged(group, kept)`` whether each is still
    the object of ``kept`` (a tuple ``read`` made) at its place, a warm step's test: the
    entries looked up and compared in one generated function, not read into a tuple and
    then compared by ``map`` (~2.4k instructions less a step)."""
    kept = [f"k{i}" for i in range(len(keys))]
    test = " and ".join(f"group[{key!r}] is {k}" for key, k in zip(keys, kept, strict=True))
    source = f"def unchanged(group, kept):\n    ({''.join(f'{k}, ' for k in kept)}) = kept\n"
    source += f"    return {test}\n"
    scope: dict[str, Any] = {}
    exec(compile(source, f"<gk optimizer entries {keys}>", "exec"), scope)  # literal keys only
    return itemgetter(*keys), staticmethod(scope["unchanged"])


class Optimizer:
    """Base class: parameter groups, ``zero_grad``, ``state_dict``/``load_state_dict``.

    Parameters
    ----------
    params : iterable of Parameter, or of dicts
        The parameters (``model.parameters()``), or parameter groups
        ``{"params": [...], "lr": ...}`` overriding the defaults.
    defaults : dict
        Hyper-parameters of every group.

    Attributes
    ----------
    param_groups : list of dict
        ``{"params": [Parameter, ...], "lr": ..., ...}``; schedulers change ``"lr"``.
    state : dict
        Per-parameter state (momentum buffers, moments, step counts), keyed by Parameter.
    """

    @operation("gk.optim.Optimizer")  # the flat buffers: all allocated before any is used
    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        op = self._op = f"gk.optim.{type(self).__name__}"
        if isinstance(params, Parameter | Module) or not isinstance(params, Iterable):
            hint = "; pass model.parameters()" if hasattr(params, "parameters") else ""
            raise TypeError(
                f"{op}: params must be an iterable of Parameters (or of parameter-group "
                f"dicts), got {type(params).__name__}{hint}"
            )
        self.defaults = defaults
        groups = list(params)
        if not groups:
            raise ValueError(f"{op}: optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups: list[dict[str, Any]] = []
        seen: dict[int, tuple[int, int]] = {}  # id -> (group, index) of each parameter
        for k, g in enumerate(groups):
            if not isinstance(g, dict) or "params" not in g:
                raise TypeError(
                    f"{op}: parameter group {k} must be a dict with a 'params' entry, got "
                    f"{type(g).__name__}"
                )
            group = {**defaults, **g, "params": list(g["params"])}
            for i, p in enumerate(group["params"]):
                if not isinstance(p, Parameter):
                    raise TypeError(
                        f"{op}: params[{i}] must be a Parameter, got {type(p).__name__}"
                    )
                _floating(op, i, p.data.dtype)
                where = seen.setdefault(id(p), (k, i))
                if where != (k, i):
                    raise ValueError(
                        f"{op}: one parameter is listed twice, as params[{where[1]}] of group "
                        f"{where[0]} and params[{i}] of group {k}; a step updates each "
                        "parameter once: list it once (a module used at two places of a "
                        "model lists its parameters twice: use one instance per place)"
                    )
            self._validate(group)
            self.param_groups.append(group)
        self.state: dict[Parameter, dict[str, Any]] = {}
        # per group: the parameters as flattened, their flat buffers, the layout
        self._flat: list[tuple[list[Parameter], list[FlatBuffer], list[_Laid]]] = []
        # per device status: [failures seen, serial checked, (serial, [(parameter, its
        # count)]) per step not yet known to be applied]
        self._log: dict[_status.Status, list[Any]] = {}
        # what a warm step re-checks and runs, per group (_warm_launches): set by a step
        # that updated every parameter in one launch per flat buffer
        self._warm: list[_Warm] | None = None
        for group in self.param_groups:
            self._flat.append(_flattened(group["params"]))

    def _validate(self, group: dict[str, Any]) -> None:
        """Check the group's hyper-parameters (TypeError, ValueError); subclasses add theirs."""
        check_range(self._op, group["lr"], "lr", 0.0)

    def zero_grad(self) -> None:
        """Forget every parameter's gradient (``grad = None``, PyTorch's default)."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def step(self) -> None:
        """Update every parameter that has a gradient: all of them, or none.

        Raises
        ------
        ValueError
            A gradient of another shape than its parameter, a parameter that is not a
            writeable C-contiguous array, a gradient that is its parameter, or a
            learning rate (set by a scheduler) out of range.
        TypeError
            A gradient of another dtype than its parameter.
        DeviceMismatchError
            A gradient on another device than its parameter.
        OutOfMemoryError
            Memory ran out; no parameter and no state was changed.
        """
        # the out-of-memory policy's steps inline (gk.optim.Optimizer.step, in place), as
        # gpukit._dispatch.operation runs them: two call levels less per step
        try:
            return _STEP.attempt(self)
        except Exception as exc:
            claimed = _STEP.claim(exc)  # raises OutOfMemoryError: nothing was written
            if claimed is None:
                raise
        return _STEP.retry(claimed, (self,), {})

    def _device_update(self, status: _status.Status) -> DeviceUpdate:
        """This optimizer's update with its learning rate and step count read from the
        device, for a training step captured as a CUDA graph (``gk.nn.GraphedStep``);
        NotImplementedError with the reason where it has none."""
        return DeviceUpdate(self, status)

    #: ``gk.kernels.<name>`` of the update
    _kernel = ""
    #: The group's entries :meth:`_hyper` reads, as a tuple (``itemgetter``), and
    #: whether they are still the objects last read (:func:`_entries`)
    _read: Any = None
    _unchanged: Any = None

    def _hyper(self, group: dict[str, Any]) -> tuple[Any, ...]:
        """The group's hyper-parameters as the kernel takes them (the lr re-checked)."""
        raise NotImplementedError

    def _arrays(self, hyper: tuple[Any, ...]) -> tuple[str, ...]:
        """Names of the state arrays (shaped like the parameter) an update needs."""
        raise NotImplementedError

    def _count(self, state: dict[str, Any] | None) -> int:
        """Which update of a parameter with ``state`` this is (1: its first): parameters
        of one flat buffer are updated in one launch when their counts agree."""
        raise NotImplementedError

    def _args(
        self, data: Any, grad: Any, arrays: list[Any], count: int, hyper: tuple[Any, ...]
    ) -> tuple[Any, ...]:
        """The kernel's arguments for ``data`` (a parameter, or a flat buffer of them)."""
        raise NotImplementedError

    def _new_state(self, count: int, arrays: list[Any]) -> dict[str, Any]:
        """A parameter's state after its update number ``count``."""
        raise NotImplementedError

    @operation("gk.optim.Optimizer.add_param_group")
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (``{"params": [...], "lr": ...}``), as in PyTorch:
        layers unfrozen during fine-tuning, a head added to a trained body.

        Raises
        ------
        TypeError
            Not a dict with a ``"params"`` entry, or an entry that is not a floating
            Parameter.
        ValueError
            A parameter already in a group, or a hyper-parameter out of range.
        """
        op = self._op
        if not isinstance(param_group, dict) or "params" not in param_group:
            raise TypeError(
                f"{op}: add_param_group needs a dict with a 'params' entry, got "
                f"{type(param_group).__name__}"
            )
        params = param_group["params"]
        params = [params] if isinstance(params, Parameter) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for i, p in enumerate(params):
            if not isinstance(p, Parameter):
                raise TypeError(f"{op}: params[{i}] must be a Parameter, got {type(p).__name__}")
            _floating(op, i, p.data.dtype)
            if id(p) in seen:
                raise ValueError(f"{op}: params[{i}] appears in more than one group")
            seen.add(id(p))
        group = {**self.defaults, **param_group, "params": params}
        self._validate(group)
        flat = _flattened(params)  # may fail: nothing changed yet
        self.param_groups.append(group)
        self._flat.append(flat)

    def _record(self, st: _status.Status, stepped: list[tuple[Parameter, int]]) -> None:
        """Log a step on ``st``'s device until the device is known to have applied it."""
        entry = self._log.get(st)
        if entry is None:
            entry = self._log[st] = [len(st.failures), st.checked, deque(maxlen=_LOG_STEPS)]
        entry[2].append((st.serial, stepped))

    def _reconcile(self) -> None:
        """Take back the step counts of updates a device skipped (read since: its status
        reported an error; every update from that batch on was skipped), and forget the
        steps a device is known to have applied."""
        for st, entry in self._log.items():
            seen, checked, log = entry
            if seen == len(st.failures) and checked == st.checked:
                continue  # nothing read since the last look
            for first in st.failures[seen:]:
                for serial, stepped in reversed(log):  # newest first: counts step down
                    if serial >= first:
                        for p, count in stepped:
                            self._undo(p, count)
                log = deque((e for e in log if e[0] < first), maxlen=_LOG_STEPS)
            entry[:] = [
                len(st.failures),
                st.checked,
                deque((e for e in log if e[0] > st.checked), maxlen=_LOG_STEPS),
            ]

    def _undo(self, p: Parameter, count: int) -> None:
        """Forget update number ``count`` of ``p`` (its arrays were left as they were)."""
        state = self.state.get(p)
        if state is None:
            return
        if count == 1:
            del self.state[p]
        elif "step" in state:
            state["step"] = count - 1

    def _layout(self, k: int) -> list[_Laid]:
        """Group ``k``'s flat buffers with their parameters, then each other parameter
        alone; flattened again where the group's list changed or a ``data`` was replaced.
        The list is kept between steps: callers only read it."""
        params = self.param_groups[k]["params"]
        flat, buffers, laid = self._flat[k]
        if len(flat) != len(params) or not all(map(is_, flat, params)):
            self._flat[k] = _flattened(params)
            flat, buffers, laid = self._flat[k]
        for i, fb in enumerate(buffers):
            if not fb.intact():
                fb = buffers[i] = fb.rebuilt()
                laid[i] = (fb, fb.params)  # the buffers come first in the layout
        return laid

    def _views(self, p: Parameter, fb: FlatBuffer | None, index: int, names: tuple[str, ...]):
        """``p``'s state arrays: views of ``fb``'s flat state (what ``p`` had copied in), or
        its own arrays (made, zeros, where it has none)."""
        state = self.state.get(p) or {}
        out = []
        for name in names:
            have = state.get(name)
            if fb is None:
                if have is None:
                    with on_device_of(p.data):  # CuPy allocates on the current device
                        have = _dispatch.namespace(p.data).zeros_like(p.data)
                out.append(have)
                continue
            view = fb.state_buffer(name)[1][index]
            if have is not None and have is not view:  # loaded, or from an earlier layout
                assign(view, have, name)
            out.append(view)
        return out

    def state_dict(self) -> dict[str, Any]:
        """Hyper-parameters and state, with parameters numbered as in PyTorch.

        Returns
        -------
        dict
            ``{"state": {index: {name: array or number}}, "param_groups": [{..., "params":
            [index, ...]}]}``; arrays are host NumPy copies.
        """
        self._reconcile()  # step counts of updates a device reported skipped are taken back
        index: dict[Parameter, int] = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(p, len(index))
                ids.append(index[p])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        state = {
            index[p]: {
                k: (_dispatch.to_numpy(v) if hasattr(v, "shape") else v) for k, v in s.items()
            }
            for p, s in self.state.items()
            if p in index
        }
        return {"state": state, "param_groups": groups}

    @operation("gk.optim.Optimizer.load_state_dict")
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyper-parameters and state saved by :meth:`state_dict`.

        Raises
        ------
        ValueError
            The number of groups or of parameters per group differs, a state array's
            shape differs from its parameter's, or a hyper-parameter is out of range.
            Nothing is changed then.
        TypeError
            A hyper-parameter is not a number.
        """
        groups = state_dict["param_groups"]
        sizes = [len(g["params"]) for g in groups]
        if sizes != [len(g["params"]) for g in self.param_groups]:
            raise ValueError(
                f"{self._op}: state_dict has {sizes} parameters per group, this optimizer "
                f"has {[len(g['params']) for g in self.param_groups]}"
            )
        params: dict[int, Parameter] = {}
        for saved, group in zip(groups, self.param_groups, strict=True):
            for i, p in zip(saved["params"], group["params"], strict=True):
                params[i] = p
        new_state: dict[Parameter, dict[str, Any]] = {}
        for i, s in state_dict["state"].items():
            p = params[int(i)]
            entry = {}
            for k, v in s.items():
                if hasattr(v, "shape") and np.ndim(v) > 0:
                    if tuple(np.shape(v)) != p.shape:
                        raise ValueError(
                            f"{self._op}: state {k!r} of parameter {i} has shape "
                            f"{tuple(np.shape(v))}, the parameter {p.shape}"
                        )
                    with on_device_of(p.data):
                        buf = _dispatch.namespace(p.data).empty_like(p.data)
                    assign(buf, v, k)
                    v = buf
                entry[k] = v
            new_state[p] = entry
        hypers = [
            {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"} for saved in groups
        ]
        for group, hyper in zip(self.param_groups, hypers, strict=True):
            self._validate({**group, **hyper})  # every group checked before any changes
        for group, hyper in zip(self.param_groups, hypers, strict=True):
            group.update(hyper)
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join([*lines, ")"])


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay.

    ``torch.optim.SGD``: ``d = grad + weight_decay * param``; with momentum,
    ``buf = d`` on the first step, else ``momentum * buf + (1 - dampening) * d``; the
    step is ``d + momentum * buf`` (Nesterov) or ``buf``; ``param -= lr * step``.

    Parameters
    ----------
    params : iterable of Parameter or of parameter-group dicts
        What to optimize (``model.parameters()``).
    lr : float
        Learning rate.
    momentum, dampening, weight_decay : float
        As in PyTorch (0 by default).
    nesterov : bool
        Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).

    Raises
    ------
    ValueError
        A negative hyper-parameter, Nesterov without momentum or with dampening,
        an empty or non-floating parameter list.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> p = gk.nn.Parameter(np.array([1.0]))
    >>> opt = gk.optim.SGD([p], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     p.grad = np.array([1.0])
    ...     opt.step()
    >>> p.data.round(3).tolist()
    [0.71]
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        *,
        nesterov: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
        }
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        op = self._op
        momentum = check_range(op, group["momentum"], "momentum", 0.0)
        dampening = check_range(op, group["dampening"], "dampening", 0.0)
        check_range(op, group["weight_decay"], "weight_decay", 0.0)
        if check_flag(op, group["nesterov"], "nesterov") and (momentum <= 0 or dampening != 0):
            raise ValueError(
                f"{op}: Nesterov momentum requires momentum > 0 and dampening == 0, got "
                f"momentum={group['momentum']!r}, dampening={group['dampening']!r}"
            )

    _read, _unchanged = _entries("lr", "momentum", "dampening", "nesterov", "weight_decay")

    def _hyper(self, group: dict[str, Any]) -> tuple[Any, ...]:
        lr = check_range(self._op, group["lr"], "lr", 0.0)
        return (
            lr,
            float(group["momentum"]),
            float(group["dampening"]),
            bool(group["nesterov"]),
            float(group["weight_decay"]),
        )

    _kernel = "sgd_update"

    def _arrays(self, hyper: tuple[Any, ...]) -> tuple[str, ...]:
        return ("momentum_buffer",) if hyper[1] else ()

    def _count(self, state: dict[str, Any] | None) -> int:
        # a momentum buffer is filled with its first step's gradient
        return 1 if state is None or "momentum_buffer" not in state else 2

    def _args(
        self, data: Any, grad: Any, arrays: list[Any], count: int, hyper: tuple[Any, ...]
    ) -> tuple[Any, ...]:
        buf = arrays[0] if arrays else None
        return (data, grad, buf, *hyper, buf is not None and count == 1)

    def _new_state(self, count: int, arrays: list[Any]) -> dict[str, Any]:
        return {"momentum_buffer": arrays[0]} if arrays else {}


class Adam(Optimizer):
    """Adam (Kingma & Ba) with ``torch.optim.Adam`` semantics; L2 weight decay.

    Parameters
    ----------
    params : iterable of Parameter or of parameter-group dicts
        What to optimize.
    lr : float
        Learning rate.
    betas : (float, float)
        Decay rates of the first and second moment estimates, each in [0, 1).
    eps : float
        Added to the denominator.
    weight_decay : float
        L2 penalty added to the gradient.

    Raises
    ------
    ValueError
        A hyper-parameter out of range, an empty or non-floating parameter list.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> p = gk.nn.Parameter(np.array([1.0]))
    >>> opt = gk.optim.Adam([p], lr=0.1)
    >>> p.grad = np.array([3.0])
    >>> opt.step()
    >>> p.data.round(6).tolist()
    [0.9]
    """

    _decoupled = False

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        if isinstance(betas, list | tuple):
            defaults["betas"] = tuple(betas)
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        op = self._op
        betas = group["betas"]
        if not isinstance(betas, list | tuple) or len(betas) != 2:
            raise TypeError(f"{op}: betas must be a pair (beta1, beta2), got {betas!r}")
        check_range(op, betas[0], "betas[0]", 0.0, 1.0)
        check_range(op, betas[1], "betas[1]", 0.0, 1.0)
        check_range(op, group["eps"], "eps", 0.0)
        check_range(op, group["weight_decay"], "weight_decay", 0.0)

    _read, _unchanged = _entries("lr", "betas", "eps", "weight_decay")

    def _hyper(self, group: dict[str, Any]) -> tuple[Any, ...]:
        lr = check_range(self._op, group["lr"], "lr", 0.0)
        beta1, beta2 = group["betas"]
        return lr, float(beta1), float(beta2), float(group["eps"]), float(group["weight_decay"])

    _kernel = "adam_update"

    def _arrays(self, hyper: tuple[Any, ...]) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq")

    def _count(self, state: dict[str, Any] | None) -> int:
        return 1 if state is None else state["step"] + 1

    def _args(
        self, data: Any, grad: Any, arrays: list[Any], count: int, hyper: tuple[Any, ...]
    ) -> tuple[Any, ...]:
        return (data, grad, *arrays, count, *hyper, self._decoupled)

    def _new_state(self, count: int, arrays: list[Any]) -> dict[str, Any]:
        return {"step": count, "exp_avg": arrays[0], "exp_avg_sq": arrays[1]}


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), ``torch.optim.AdamW``.

    ``param *= 1 - lr * weight_decay`` before the Adam step; weight decay 0.01 by
    default. Parameters, raises: as :class:`Adam`.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> p = gk.nn.Parameter(np.array([1.0]))
    >>> opt = gk.optim.AdamW([p], lr=0.1, weight_decay=0.5)
    >>> p.grad = np.array([3.0])
    >>> opt.step()
    >>> p.data.round(6).tolist()
    [0.85]
    """

    _decoupled = True

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay)


def _flattened(params: list[Parameter]) -> tuple[list[Parameter], list[FlatBuffer], list[_Laid]]:
    """``params`` (as flattened), their flat buffers, and the layout a step walks: each
    buffer with its parameters, then each parameter left out of the buffers alone."""
    buffers, loose = flatten(params)
    laid: list[_Laid] = [(fb, fb.params) for fb in buffers]
    laid += [(None, [p]) for p in loose]
    return list(params), buffers, laid


def _floating(op: str, i: int, dtype: np.dtype) -> np.dtype:
    """``params[i]``'s dtype, floating (TypeError otherwise: an integer cannot learn)."""
    if dtype.kind != "f":
        raise TypeError(f"{op}: params[{i}] must be floating, got dtype {dtype}")
    return dtype


def _step(opt: Optimizer) -> None:
    """One step of ``opt``: everything checked and allocated, then every kernel run."""
    if opt._log:  # a device step logged (none on the host)
        opt._reconcile()
    warm = opt._warm
    launches = None if warm is None else _warm_launches(opt, warm)
    if launches is None:
        launches = _launches(opt)
    for kernel, args, back, news, st in launches:
        kernel(*args)
        for half, wide in back:
            with on_device_of(half):
                half[...] = wide
        for p, new, _ in news:
            if new:
                opt.state.setdefault(p, {}).update(new)
        if st is not None:
            opt._record(st, [(p, count) for p, _, count in news])


_STEP = Policy("gk.optim.Optimizer.step", _step, inplace=True)


def _launches(opt: Optimizer) -> list[tuple[Any, ...]]:
    """Every launch of a step, each parameter's gradient checked; keeps the warm plan
    (:func:`_warm_launches`) when each group is its flat buffers, each updated whole."""
    opt._warm = None  # a step that raises keeps none
    launches, warm = [], []
    op, state, count_of = opt._op, opt.state, opt._count
    for k, group in enumerate(opt.param_groups):
        raw = opt._read(group)  # as the hyper-parameters are now: read before them
        hyper = opt._hyper(group)
        names = opt._arrays(hyper)
        kept: list[tuple[Any, ...]] | None = []
        for fb, members in opt._layout(k):
            ready = [(p, _gradient(op, p)) for p in members if p.grad is not None]
            if not ready:
                kept = None
                continue
            if fb is not None and len(ready) == len(members):
                counts = set(map(count_of, map(state.get, members)))
                if len(counts) == 1:
                    launch = _whole(opt, fb, ready, counts.pop(), names, hyper)
                    launches.append(launch)
                    if kept is None or launch[2]:
                        kept = None  # widened (float16): the full step
                    else:
                        kept.append(_warm_buffer(fb, opt._kernel, names, launch[1], launch[4]))
                    continue
            kept = None
            for p, grad in ready:
                index = -1 if fb is None else fb.params.index(p)
                arrays = opt._views(p, fb, index, names)
                count = opt._count(opt.state.get(p))
                args = opt._args(p.data, grad, arrays, count, hyper)
                target = _target(p.data, opt._kernel)
                launches.append(_launch(target, args, [(p, opt._new_state(count, arrays), count)]))
        if kept is None or warm is None:
            warm = None
        else:
            warm.append(_Warm(opt._flat[k][0], names, kept, raw, hyper))
    opt._warm = warm
    return launches


#: Types of hyper-parameter values that cannot change in place (a tuple of them neither)
_IMMUTABLE = frozenset({float, int, bool, str, type(None)})


def _immutable(values: tuple[Any, ...]) -> bool:
    """Whether none of ``values`` can change in place."""
    return all(type(v) in _IMMUTABLE or (type(v) is tuple and _immutable(v)) for v in values)


class _Warm:
    """A group's warm plan: its parameters as flattened, the state arrays its update
    takes, and each flat buffer with its kernel bound to the buffer's arrays and
    each parameter's data view, gradient slot, shape and state views; the group's
    hyper-parameter values as last read (``raw``, :attr:`Optimizer._read`) and the
    kernel's hyper-parameters made of them (``hyper``). ``raw`` is None where a value
    could change in place (a list, an array): read and checked again each step."""

    __slots__ = ("buffers", "hyper", "names", "params", "raw")

    def __init__(
        self,
        params: list[Parameter],
        names: tuple[str, ...],
        buffers: list[list[Any]],
        raw: tuple[Any, ...],
        hyper: tuple[Any, ...],
    ) -> None:
        self.params, self.names, self.buffers = params, names, buffers
        self.raw = raw if _immutable(raw) else None
        self.hyper = hyper


def _warm_buffer(
    fb: FlatBuffer,
    kernel_name: str,
    names: tuple[str, ...],
    args: tuple[Any, ...],
    st: _status.Status | None,
) -> list[Any]:
    """``fb`` laid out for :func:`_warm_launches`, with the kernel ``kernel_name`` bound to its
    arrays (``args``: a launch's arguments, the status buffer of ``st``, its device's,
    last), kept with ``fb``, its dtype, room for a warm launch's ``(hyper-parameters, step
    count, kernel arguments)``, and ``st`` (None on the host)."""
    key = ("bound", kernel_name, names)
    kernel = fb.kept.get(key)
    if kernel is None:  # the buffer's array type and device are its own for its lifetime
        kernel = _bind(fb.data, kernel_name, args)
        if st is not None:
            kernel = _on_device(kernel, st)
        fb.kept[key] = kernel
    views = [fb.state[name][1] for name in names]
    members = [
        (p, view, p._slot[1], shape, [v[i] for v in views])
        for i, (p, view, (_, _, shape)) in enumerate(
            zip(fb.params, fb.views, fb.segments, strict=True)
        )
    ]
    flats = [fb.state[name][0] for name in names]
    return [fb, kernel, flats, members, fb.data.dtype, (None, 0, ()), st]


def _on_device(bound: Any, st: _status.Status) -> Any:
    """``bound`` (a device kernel bound by :func:`_bind`, which launches on the current
    device) launched on ``st``'s device, where the buffer lives, whichever is current."""
    backend, device = st.backend, st.device

    def launch(*args: Any) -> None:
        if backend.current_device() == device:  # asking costs less than switching
            bound(*args)
            return
        with backend.use_device(device):
            bound(*args)

    return launch


def _warm_launches(opt: Optimizer, warm: list[_Warm]) -> list[tuple[Any, ...]] | None:
    """The launches of a step laid out as the one that kept ``warm``: one per flat buffer,
    with its bound kernel. None, having changed nothing but gradient slots, where
    anything differs (a group or parameter added or replaced, a ``data`` replaced, a
    gradient missing, strided, of another array type, dtype or shape or the parameter's
    own array, a read-only parameter, state loaded, step counts that differ): the full step
    then checks again and raises what it raises. The hyper-parameters are read each step,
    and made into the kernel's again (the learning rate checked), as there, where a value
    is not the object last read (a scheduler's new learning rate). An update without state
    arrays (plain SGD) never touches the state; on the host it does not read the step
    count either (a device logs it, to take skipped updates back: Optimizer._reconcile)."""
    groups = opt.param_groups
    if len(groups) != len(warm):
        return None
    launches, k = [], 0
    state, unchanged = opt.state, opt._unchanged
    for plan in warm:  # the group by index, cheaper than a zip
        group = groups[k]
        k += 1
        names, kept = plan.names, plan.raw
        if kept is not None and unchanged(group, kept):
            hyper = plan.hyper
        else:
            raw = opt._read(group)
            hyper = opt._hyper(group)
            if opt._arrays(hyper) != names:
                return None
            plan.raw, plan.hyper = (raw if _immutable(raw) else None), hyper
        params, flat = group["params"], plan.params
        if len(params) != len(flat) or not all(map(is_, params, flat)):
            return None
        for laid in plan.buffers:
            fb, kernel, flats, members, dtype, made, st = laid
            news, count, stale = [], 1, None
            for p, view, slot, shape, arrays in members:
                grad = p.grad
                # device arrays (st: the device's status) are always writeable
                if p.data is not view or (st is None and not view.flags.writeable):
                    return None
                if grad is not slot:
                    if type(grad) is not type(view) or grad.dtype != dtype or grad.shape != shape:
                        return None
                    if grad is view or not grad.flags.c_contiguous:  # copied there first
                        return None
                    if st is None:  # host memory: copied now, no list of copies to make
                        slot[...] = grad
                    elif st.backend.device_of(grad) != st.device:
                        return None  # on another device than its parameter: the full step raises
                    else:
                        stale = [(slot, grad)] if stale is None else [*stale, (slot, grad)]
                if arrays:  # its state arrays must still be its views (loaded ones are not)
                    have = state.get(p)
                    c = opt._count(have)
                    if (c != count and news) or have is None:
                        return None
                    if not all(map(is_, map(have.get, names), arrays)):
                        return None
                    count = c
                    news.append((p, opt._new_state(c, arrays), c))
                elif st is not None:  # logged with its count, as the full step logs it
                    news.append((p, None, opt._count(state.get(p))))
            if stale is not None:  # a device's copies, run where fb lives
                if st.backend.current_device() == st.device:
                    for slot, grad in stale:
                        slot[...] = grad
                else:
                    with st.backend.use_device(st.device):  # the copies run where fb lives
                        _fill(stale)
            if made[0] is not hyper or made[1] != count:  # the arguments depend on these only
                guard = None if st is None else st.buffer
                args = (*opt._args(fb.data, fb.grad, flats, count, hyper), guard)
                made = laid[5] = (hyper, count, args)
            launches.append((kernel, made[2], (), news, st))
    return launches


def _whole(
    opt: Optimizer,
    fb: FlatBuffer,
    ready: list[tuple[Parameter, Any]],
    count: int,
    names: tuple[str, ...],
    hyper: tuple[Any, ...],
) -> tuple[Any, ...]:
    """The launch updating every parameter of ``fb``, given each with its checked
    gradient in ``fb``'s order: gradients not already in their slots (set by hand,
    accumulated over passes) are copied there first."""
    stale, news = [], []
    for i, (p, grad) in enumerate(ready):
        slot = p._slot[1]
        if grad is not slot:
            stale.append((slot, grad))
        # without state arrays (plain SGD) a parameter's state is not touched
        new = opt._new_state(count, opt._views(p, fb, i, names)) if names else None
        news.append((p, new, count))
    if stale:
        if type(fb.grad) is _ndarray:  # host memory has no device to make current
            _fill(stale)
        else:
            with on_device_of(fb.grad):
                _fill(stale)
    flats = [fb.state_buffer(name)[0] for name in names] if names else []
    target = fb.kept.get(opt._kernel)
    if target is None:  # the buffer's array type and device are its own for its lifetime
        target = fb.kept[opt._kernel] = _target(fb.data, opt._kernel)
    return _launch(target, opt._args(fb.data, fb.grad, flats, count, hyper), news)


def _fill(pairs: list[tuple[Any, Any]]) -> None:
    """Copy each gradient into its slot."""
    for slot, grad in pairs:
        slot[...] = grad


def _target(data: Any, name: str) -> tuple[Any, _status.Status | None]:
    """The kernel ``name`` updating ``data``, and its device's status (None on the host)."""
    owner = _dispatch.owner_of(data)
    st = None
    if owner is not None and owner.is_device:
        st = _status.status(owner, owner.device_of(data))
    return _kernel(data, name), st


def _launch(
    target: tuple[Any, _status.Status | None], args: tuple[Any, ...], news: list[Any]
) -> tuple[Any, ...]:
    """``(kernel, args, write-back, new states, status)``: float16 widened, the device's
    status appended (a device update is skipped while it holds an error)."""
    kernel, st = target
    args, back = _widened(args) if args[0].dtype == _HALF else (args, ())
    guard = None if st is None else st.buffer
    return kernel, (*args, guard), back, news, st


def _widened(args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[tuple[Any, Any]]]:
    """A float16 parameter's kernel arguments as float32 copies, and what to write back.

    float16 parameters are updated in float32 and rounded once, as PyTorch's optimizers
    compute half precision: Adam's ``eps`` (1e-8) and the square of a small gradient
    vanish in float16, and the kernels take float32 or float64. Every update kernel takes
    ``(param, grad, *state, ...)``: all but the gradient are written back.
    """
    wide, back = [], []
    for i, a in enumerate(args):
        if getattr(a, "dtype", None) != _HALF:
            wide.append(a)
            continue
        with on_device_of(a):
            w = a.astype(np.float32)
        wide.append(w)
        if i != 1:
            back.append((a, w))
    return tuple(wide), back


def _gradient(op: str, p: Parameter) -> Any:
    """``p.grad`` checked against ``p.data`` (which it updates), and contiguous."""
    data, grad = p.data, p.grad
    if type(grad) is not type(data):  # a host gradient moves to a device parameter
        grad = _place(grad, data, _dispatch.owner_of(data))
    elif type(data) is not _ndarray:  # host arrays have no device to compare
        owner = _dispatch.owner_of(data)  # its device ids: no device objects made
        if owner is not None and owner.device_of(grad) != owner.device_of(data):  # two GPUs
            raise DeviceMismatchError(
                f"{op}: a parameter on {data.device} has a gradient on {grad.device}"
            )
    if grad.shape != data.shape:
        raise ValueError(
            f"{op}: a parameter of shape {tuple(data.shape)} has a gradient of shape "
            f"{tuple(grad.shape)}; they must match"
        )
    if grad.dtype != data.dtype:
        raise TypeError(
            f"{op}: a parameter of dtype {data.dtype} has a gradient of dtype {grad.dtype}; "
            "they must match"
        )
    flags = data.flags  # one flags object for both reads
    if not flags.c_contiguous or not getattr(flags, "writeable", True):
        raise ValueError(
            f"{op}: a parameter of shape {tuple(data.shape)} is updated in place, so it must "
            "be a writeable C-contiguous array"
        )
    if grad is data:
        raise ValueError(f"{op}: a parameter's gradient is the parameter's own array")
    if not grad.flags.c_contiguous:  # copied now: the kernels must not allocate
        with on_device_of(data):
            grad = _dispatch.namespace(data).ascontiguousarray(grad)
    return grad


for _cls in (SGD, Adam, AdamW):
    _op = f"gk.optim.{_cls.__name__}"
    declare(
        _op,
        lambda d, op=_op: _floating(op, 0, d),
        notes={"float16": "computed in float32", "host": "computed on the host, where the data is"},
    )
