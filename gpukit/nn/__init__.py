"""Small neural networks with explicit backward passes, on any gpukit backend.

Layers follow PyTorch's names, shapes and initialisation; ``model(x)`` runs the
forward pass and keeps what ``model.backward(grad_output)`` needs, which returns the
input gradient and accumulates each ``Parameter.grad`` (Torch7's forward/backward).
Train with :func:`fit` and an optimizer of :mod:`gpukit.optim`; keep weights with
:func:`save`/:func:`load` (``.npz``, PyTorch's keys, no pickle).

Examples
--------
>>> import numpy as np
>>> import gpukit as gk
>>> model = gk.nn.Sequential(gk.nn.Linear(2, 4, seed=0), gk.nn.Tanh(), gk.nn.Linear(4, 1, seed=1))
>>> loss_fn = gk.nn.MSELoss()
>>> loss = loss_fn(model(np.ones((3, 2), dtype="float32")), np.zeros((3, 1), dtype="float32"))
>>> _ = model.backward(loss_fn.backward())
>>> model[0].weight.grad.shape
(4, 2)
"""

from ._random import manual_seed
from .container import Sequential
from .graphed import GraphedStep
from .io import load, save
from .layers import (
    GELU,
    Activation,
    Dropout,
    LayerNorm,
    LeakyReLU,
    Linear,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from .losses import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from .module import Module, Parameter
from .parallel import DataParallel
from .train import fit, predict, predict_proba

__all__ = [
    "GELU",
    "Activation",
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "DataParallel",
    "Dropout",
    "GraphedStep",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "MSELoss",
    "Module",
    "Parameter",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "fit",
    "load",
    "manual_seed",
    "predict",
    "predict_proba",
    "save",
]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)
