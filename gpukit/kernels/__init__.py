"""Custom fused kernels, with one NumPy twin each (``gk.kernels``).

Each kernel moves fewer bytes than the chain of library calls it replaces: a
fused bias + activation (forward and backward), in-place SGD and Adam/AdamW
updates, a row-wise softmax cross-entropy, and a tiled matmul kept as a teaching
reference. On the cupy backend they are CUDA kernels compiled on first use; on
the numpy backend the same calls run their NumPy references, so code using them
is backend-agnostic. The registry (:mod:`gpukit.backend.kernels`, part of the contract
backends implement) lists them.

Examples
--------
>>> import numpy as np
>>> import gpukit as gk
>>> gk.kernels.bias_activation(np.array([-1.0, 1.0]), np.array([0.5, 0.5]), "relu")
array([0. , 1.5])
"""

from __future__ import annotations

from ..backend.kernels import ACTIVATIONS, KERNELS
from ._activation import bias_activation, bias_activation_backward
from ._loss import softmax_cross_entropy, softmax_cross_entropy_backward
from ._matmul import matmul_tiled
from ._optim import adam_update, sgd_update

__all__ = [
    "ACTIVATIONS",
    "KERNELS",
    "adam_update",
    "bias_activation",
    "bias_activation_backward",
    "matmul_tiled",
    "sgd_update",
    "softmax_cross_entropy",
    "softmax_cross_entropy_backward",
]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)
