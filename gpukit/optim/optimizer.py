"""SGD, Adam and AdamW with ``torch.optim`` semantics, on fused in-place kernels.

Hyper-parameters are validated when set (construction, ``load_state_dict``) and the
learning rate when a step reads it, so ``step()`` calls each parameter's backend kernel
directly, without re-validating four arrays per parameter per step.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import _dispatch
from ..kernels._direct import kernel as _kernel
from ..nn.module import Parameter, assign, on_device_of

__all__ = ["SGD", "Adam", "AdamW", "Optimizer"]


def _check(value: float, name: str, lo: float = 0.0, hi: float | None = None) -> float:
    value = float(value)
    if not value >= lo or (hi is not None and not value < hi):
        where = f"in [{lo}, {hi})" if hi is not None else f">= {lo}"
        raise ValueError(f"{name} must be {where}, got {value}")
    return value


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

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups: list[dict[str, Any]] = []
        for g in groups:
            group = {**defaults, **g, "params": list(g["params"])}
            for i, p in enumerate(group["params"]):
                if not isinstance(p, Parameter):
                    raise TypeError(f"optimizer params[{i}] must be a Parameter, got {type(p)!r}")
                if p.data.dtype.kind != "f":
                    raise ValueError(
                        f"optimizer params[{i}] must be floating, got dtype {p.data.dtype}"
                    )
            self._validate(group)
            self.param_groups.append(group)
        self.state: dict[Parameter, dict[str, Any]] = {}

    def _validate(self, group: dict[str, Any]) -> None:
        _check(group["lr"], "lr")

    def zero_grad(self) -> None:
        """Forget every parameter's gradient (``grad = None``, PyTorch's default)."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def step(self) -> None:
        """Update every parameter that has a gradient."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """Hyper-parameters and state, with parameters numbered as in PyTorch.

        Returns
        -------
        dict
            ``{"state": {index: {name: array or number}}, "param_groups": [{..., "params":
            [index, ...]}]}``; arrays are host NumPy copies.
        """
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

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyper-parameters and state saved by :meth:`state_dict`.

        Raises
        ------
        ValueError
            The number of groups or of parameters per group differs, or a state
            array's shape differs from its parameter's.
        """
        groups = state_dict["param_groups"]
        sizes = [len(g["params"]) for g in groups]
        if sizes != [len(g["params"]) for g in self.param_groups]:
            raise ValueError(
                f"optimizer state_dict has {sizes} parameters per group, this optimizer "
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
                            f"optimizer state {k!r} of parameter {i} has shape "
                            f"{tuple(np.shape(v))}, the parameter {p.shape}"
                        )
                    with on_device_of(p.data):
                        buf = _dispatch.namespace(p.data).empty_like(p.data)
                    assign(buf, v, k)
                    v = buf
                entry[k] = v
            new_state[p] = entry
        for saved, group in zip(groups, self.param_groups, strict=True):
            hyper = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            self._validate({**group, **hyper})
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
            "nesterov": bool(nesterov),
        }
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        momentum = _check(group["momentum"], "momentum")
        dampening = _check(group["dampening"], "dampening")
        _check(group["weight_decay"], "weight_decay")
        if group["nesterov"] and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires momentum > 0 and dampening == 0")

    def step(self) -> None:
        for group in self.param_groups:
            lr = _check(group["lr"], "lr")
            momentum = float(group["momentum"])
            args = (
                lr,
                momentum,
                float(group["dampening"]),
                group["nesterov"],
                float(group["weight_decay"]),
            )
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf, first = None, False
                if momentum:
                    state = self.state.setdefault(p, {})
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        with on_device_of(p.data):
                            buf = _dispatch.namespace(p.data).empty_like(p.data)
                        state["momentum_buffer"] = buf
                        first = True
                _kernel(p.data, "sgd_update")(p.data, p.grad, buf, *args, first)


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
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        beta1, beta2 = group["betas"]
        _check(beta1, "betas[0]", 0.0, 1.0)
        _check(beta2, "betas[1]", 0.0, 1.0)
        _check(group["eps"], "eps")
        _check(group["weight_decay"], "weight_decay")

    def step(self) -> None:
        for group in self.param_groups:
            lr = _check(group["lr"], "lr")
            beta1, beta2 = (float(b) for b in group["betas"])
            eps, wd = float(group["eps"]), float(group["weight_decay"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state.get(p)
                if state is None:
                    xp = _dispatch.namespace(p.data)
                    with on_device_of(p.data):  # CuPy allocates on the current device
                        state = self.state[p] = {
                            "step": 0,
                            "exp_avg": xp.zeros_like(p.data),
                            "exp_avg_sq": xp.zeros_like(p.data),
                        }
                state["step"] += 1
                _kernel(p.data, "adam_update")(
                    p.data,
                    p.grad,
                    state["exp_avg"],
                    state["exp_avg_sq"],
                    state["step"],
                    lr,
                    beta1,
                    beta2,
                    eps,
                    wd,
                    self._decoupled,
                )


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
