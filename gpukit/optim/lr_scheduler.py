"""Learning-rate schedules with ``torch.optim.lr_scheduler`` semantics."""

from __future__ import annotations

import math
import numbers
from typing import Any

from ..kernels._checks import check_range
from .optimizer import Optimizer

__all__ = ["CosineAnnealingLR", "LRScheduler", "StepLR"]


class LRScheduler:
    """Base class: sets each group's ``lr`` from its ``initial_lr`` and the epoch count.

    Parameters
    ----------
    optimizer : Optimizer
        Whose ``param_groups[i]["lr"]`` is scheduled.

    Attributes
    ----------
    last_epoch : int
        Number of :meth:`step` calls so far.
    base_lrs : list of float
        Each group's learning rate when the scheduler was made.
    """

    def __init__(self, optimizer: Optimizer) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"gk.optim.{type(self).__name__}: optimizer must be a gk.optim.Optimizer, got "
                f"{type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [float(g["initial_lr"]) for g in optimizer.param_groups]
        self.last_epoch = 0
        self._apply()

    def get_lr(self) -> list[float]:
        """The learning rates for the current :attr:`last_epoch`."""
        raise NotImplementedError

    def _apply(self) -> None:
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def step(self) -> None:
        """Advance one epoch and set the new learning rates."""
        self.last_epoch += 1
        self._apply()

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the last :meth:`step` (or construction)."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer, as plain values."""
        return {k: v for k, v in vars(self).items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned, and the learning rates of its epoch
        (construction set the initial ones; PyTorch resumes at the saved rates)."""
        vars(self).update(state_dict)
        self._apply()


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer.
    step_size : int
        Epochs between decays (>= 1).
    gamma : float
        Decay factor.

    Raises
    ------
    TypeError
        ``step_size`` is not an integer, ``gamma`` not a real number, ``optimizer`` not an
        Optimizer.
    ValueError
        ``step_size < 1``, ``gamma`` negative or not finite.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> opt = gk.optim.SGD([gk.nn.Parameter(np.zeros(1))], lr=1.0)
    >>> sched = gk.optim.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(4):
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1) -> None:
        self.step_size = _epochs("gk.optim.StepLR", step_size, "step_size")
        self.gamma = check_range("gk.optim.StepLR", gamma, "gamma", 0.0)
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine decay from the initial rate to ``eta_min`` over ``T_max`` epochs.

    ``lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer.
    T_max : int
        Epochs of one half period (>= 1).
    eta_min : float
        The lowest learning rate.

    Raises
    ------
    TypeError
        ``T_max`` is not an integer, ``eta_min`` not a real number, ``optimizer`` not an
        Optimizer.
    ValueError
        ``T_max < 1``, ``eta_min`` negative or not finite.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> opt = gk.optim.SGD([gk.nn.Parameter(np.zeros(1))], lr=1.0)
    >>> sched = gk.optim.CosineAnnealingLR(opt, T_max=2)
    >>> sched.step()
    >>> round(sched.get_last_lr()[0], 6)
    0.5
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0) -> None:
        self.T_max = _epochs("gk.optim.CosineAnnealingLR", T_max, "T_max")
        self.eta_min = check_range("gk.optim.CosineAnnealingLR", eta_min, "eta_min", 0.0)
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        t = math.cos(math.pi * self.last_epoch / self.T_max)
        return [self.eta_min + (b - self.eta_min) * (1 + t) / 2 for b in self.base_lrs]


def _epochs(op: str, value: Any, name: str) -> int:
    """A whole number of epochs >= 1 (``2.5`` and ``True`` are TypeErrors, not 2 and 1)."""
    if isinstance(value, bool | float) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{op}: {name} must be >= 1, got {value!r}")
    return int(value)
