"""Optimizers and learning-rate schedules for :mod:`gpukit.nn` models.

``SGD``, ``Adam`` and ``AdamW`` follow ``torch.optim`` step for step and update
each parameter in place with one fused kernel (``gk.kernels.sgd_update`` /
``adam_update``); ``StepLR`` and ``CosineAnnealingLR`` follow
``torch.optim.lr_scheduler``.

Examples
--------
>>> import numpy as np
>>> import gpukit as gk
>>> p = gk.nn.Parameter(np.array([1.0, 2.0]))
>>> opt = gk.optim.SGD([p], lr=0.5)
>>> p.grad = np.array([1.0, 1.0])
>>> opt.step()
>>> p.data.tolist()
[0.5, 1.5]
"""

from .lr_scheduler import CosineAnnealingLR, LRScheduler, StepLR
from .optimizer import SGD, Adam, AdamW, Optimizer

__all__ = ["SGD", "Adam", "AdamW", "CosineAnnealingLR", "LRScheduler", "Optimizer", "StepLR"]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)
