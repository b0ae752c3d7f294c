"""The implementations a case runs on: gpukit per backend, and its peers.

Names match the ``IMPLS`` axis of the asv suite: ``gpukit-numpy``, ``gpukit-cupy``,
``numpy`` (raw NumPy/SciPy), ``cupy`` (raw CuPy), ``torch-cpu``, ``torch-cuda``.
"""

from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _dispatch
from .._select import registry as _registry
from .._select import selection as _selection

NAMES = ["gpukit-numpy", "gpukit-cupy", "numpy", "cupy", "torch-cpu", "torch-cuda"]


@dataclass
class Runner:
    """One implementation: where it computes and how data gets there.

    Attributes
    ----------
    name : str
        One of :data:`NAMES`.
    family : str
        ``"gpukit"``, ``"numpy"``, ``"cupy"`` or ``"torch"``: which API a case calls.
    device : str
        ``"cpu"`` or ``"gpu"``: whose ceilings the throughput is compared with.
    xp : module
        ``numpy``, ``cupy`` or ``torch``.
    torch_device : object
        The ``torch.device`` for torch runners, else None.
    """

    name: str
    family: str
    device: str
    xp: Any
    torch_device: Any = None

    @property
    def backend(self) -> str | None:
        """The gpukit backend of a gpukit runner."""
        return self.name.removeprefix("gpukit-") if self.family == "gpukit" else None

    def scope(self) -> contextlib.AbstractContextManager[Any]:
        """Make a gpukit runner's backend active (host inputs then stay on its side)."""
        if self.backend is None:
            return contextlib.nullcontext()
        return _selection.use_backend(self.backend)

    def put(self, host: np.ndarray) -> Any:
        """Place NumPy data where this runner computes."""
        if self.family == "torch":
            return self.xp.from_numpy(np.ascontiguousarray(host)).to(self.torch_device)
        if self.family == "gpukit":
            with self.scope():
                return _dispatch.asarray(host)
        return self.xp.asarray(host)

    def sync(self) -> None:
        """Wait for queued device work."""
        if self.device == "cpu":
            return
        if self.family == "torch":
            self.xp.cuda.synchronize()
        else:
            import cupy

            cupy.cuda.Device().synchronize()


def _gpu_usable() -> str | None:
    status = _registry.available_backends().get("cupy")
    if status is None:
        return "the cupy backend is not registered"
    return None if status.available else status.reason


def make(name: str) -> Runner:
    """Set up runner ``name``; raise RuntimeError with the reason when it cannot run here."""
    if name == "numpy":
        return Runner(name, "numpy", "cpu", np)
    if name == "gpukit-numpy":
        return Runner(name, "gpukit", "cpu", np)
    if name in ("cupy", "gpukit-cupy"):
        reason = _gpu_usable()
        if reason:
            raise RuntimeError(reason)
        import cupy

        return Runner(name, "gpukit" if name.startswith("gpukit") else "cupy", "gpu", cupy)
    if name in ("torch-cpu", "torch-cuda"):
        if importlib.util.find_spec("torch") is None:
            raise RuntimeError("PyTorch is not installed")
        import torch

        kind = name.removeprefix("torch-")
        if kind == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("PyTorch has no usable CUDA device")
        return Runner(name, "torch", kind.replace("cuda", "gpu"), torch, torch.device(kind))
    raise ValueError(f"unknown implementation {name!r}; expected one of {', '.join(NAMES)}")
