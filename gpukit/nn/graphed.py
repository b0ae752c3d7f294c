"""A training step captured once as a CUDA graph and replayed in one launch per batch.

:class:`GraphedStep` records zero_grad, forward, loss, backward, the non-finite check and
the optimizer's update through ``Backend.capture_graph`` and replays them on static
input buffers (PyTorch's ``torch.cuda.make_graphed_callables`` and "whole network
capture" are the model). What a replay cannot take from the host lives on the device:
the optimizer's learning rate and step count (``gpukit/optim/_graphed.py``), the serial
numbering checked steps in the device's status (``gpukit/_runtime/device_status.py``).
Products run on gpukit's GEMM kernel while capturing, since CuPy refuses cuBLAS then
(``gpukit/nn/_gemm.py``). Where capture cannot work the step runs eagerly and a
:class:`~gpukit.errors.GpukitWarning` says why, once per reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dispatch
from .._runtime import device_status as _status
from ..backend.graphs import CaptureFailed
from ..errors import GpukitWarning, warn
from ..kernels._direct import kernel
from . import _gemm
from .losses import _Loss
from .module import Module

__all__ = ["GraphedStep", "forward_backward"]


def forward_backward(model: Module, loss_fn: _Loss, optimizer: Any, x: Any, y: Any) -> Any:
    """A step up to the update: zero_grad, the loss of ``(x, y)``, its backward pass
    (the input's gradient not computed); returns the loss."""
    optimizer.zero_grad()
    loss = loss_fn(model.forward(x), y)
    model.backward(loss_fn.backward(), need_input_grad=False)
    return loss


class GraphedStep:
    """One training step -- ``zero_grad``, forward, loss, backward, ``step`` -- captured
    as a CUDA graph and replayed in one launch.

    ``step(xb, yb)`` copies the batch into the step's static buffers and launches the
    graph: one launch and two copies per step, no host synchronisation. The first call
    runs eagerly (kernels compile, the optimizer's state is made); the second captures.
    A batch of another shape or dtype (a smaller last batch) runs eagerly, as does every
    step where capture cannot work: a backend without graphs (numpy), a model that is not
    float32 (inside a graph the products run on gpukit's float32 GEMM kernel, since CuPy
    refuses cuBLAS during a capture), a host synchronisation or a random draw inside the
    step (Dropout), an optimizer without a device-side update. Each reason is said once,
    as a :class:`~gpukit.errors.GpukitWarning`.

    As in :func:`fit`, a NaN or infinite loss is flagged on the device and the update
    skipped (with every later one until the status is read); the next read
    (``gk.synchronize()``, ``gk.to_numpy()``...) raises
    :class:`~gpukit.NonFiniteError`.

    Parameters
    ----------
    model : Module
        The network, on the device where the step runs.
    loss_fn : loss
        A gk.nn loss.
    optimizer : gpukit.optim.Optimizer
        Holding the model's parameters. A learning rate changed by a scheduler, and an
        eager ``optimizer.step()`` between replays, are taken into account; changing
        another hyper-parameter captures the step again.
    x, y : array
        An example batch: the static buffers have its shapes and dtypes.

    Returns
    -------
    callable
        ``step(xb, yb)`` returns the loss, a 0-d device array that the next replay
        overwrites (copy it, or accumulate it, to keep it).

    See Also
    --------
    gpukit.nn.fit : ``graph=True`` trains with this step.
    gpukit.linalg.cg : ``graph=True`` replays blocks of iterations.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> import gpukit as gk
    >>> model = gk.nn.Sequential(gk.nn.Linear(4, 2, seed=0))
    >>> opt = gk.optim.SGD(model.parameters(), lr=0.1)
    >>> x, y = np.ones((8, 4), "float32"), np.zeros(8, "int64")
    >>> step = gk.nn.GraphedStep(model, gk.nn.CrossEntropyLoss(), opt, x, y)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the numpy backend: steps run eagerly
    ...     losses = [float(step(x, y)) for _ in range(3)]
    >>> losses[2] < losses[0]
    True
    """

    @_dispatch.operation("gk.nn.GraphedStep")
    def __init__(self, model: Module, loss_fn: _Loss, optimizer: Any, x: Any, y: Any) -> None:
        op = "gk.nn.GraphedStep"
        if not isinstance(model, Module):
            raise TypeError(f"{op}: model must be a gk.nn.Module, got {type(model).__name__}")
        if not isinstance(loss_fn, _Loss):
            raise TypeError(f"{op}: loss_fn must be a gk.nn loss, got {type(loss_fn).__name__}")
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self._warned: set[str] = set()
        self._graph: Any = None
        self._kept: list[dict[str, Any]] = []
        self._update: Any = None
        self._ran = False
        anchor = model._anchor()
        owner = None if anchor is None else _dispatch.owner_of(anchor.data)
        self.op = op
        self._reason = self._why_not(owner, anchor)
        self.backend = owner
        self._flag: Any = None
        self.status: _status.Status | None = None
        self._device: int | None = None
        if owner is not None and owner.is_device:
            device = self._device = owner.device_of(anchor.data)
            self.status = _status.status(owner, device)
            self._flag = kernel(anchor.data, "flag_nonfinite")
        if self._reason is not None:
            return
        with owner.use_device(device):
            self.x = owner.xp.empty(tuple(x.shape), dtype=x.dtype)
            self.y = owner.xp.empty(tuple(y.shape), dtype=y.dtype)
            self._serial = owner.asarray(np.int64(0), device=device)
        self._serial_host: int | None = None

    @staticmethod
    def _why_not(owner: Any, anchor: Any) -> str | None:
        if owner is None or not owner.is_device:
            name = "numpy" if owner is None else owner.name
            return f"the {name} backend has no CUDA graphs"
        if anchor.data.dtype != np.float32:
            return (
                f"the model is {anchor.data.dtype}: inside a graph its products run on "
                "gpukit's float32 GEMM kernel (CuPy refuses cuBLAS during a capture)"
            )
        return None

    def fall_back(self, reason: str) -> None:
        """Say once, for this step, why it runs eagerly."""
        if reason not in self._warned:
            self._warned.add(reason)
            warn(
                f"{self.op}: the training step runs eagerly, not replayed as a CUDA graph: "
                f"{reason}",
                GpukitWarning,
            )

    @property
    def reason(self) -> str | None:
        """Why no step is replayed (None while capture may work)."""
        return self._reason

    @property
    def graphed(self) -> bool:
        """Whether the step is captured (its next call of the static shapes replays it)."""
        return self._graph is not None

    def __call__(self, x: Any, y: Any) -> Any:
        # the model's device current, as in fit: CuPy runs cuBLAS and kernels on the
        # current device, whichever device the operands are on
        if self._device is None:
            return self._step(x, y)
        with self.backend.use_device(self._device):
            return self._step(x, y)

    def _step(self, x: Any, y: Any) -> Any:
        if self._reason is not None:
            self.fall_back(self._reason)
            return self.eager(x, y)
        if (x.shape, x.dtype, y.shape, y.dtype) != (
            self.x.shape,
            self.x.dtype,
            self.y.shape,
            self.y.dtype,
        ):
            self.fall_back(
                f"a batch of shapes {tuple(x.shape)}, {tuple(y.shape)} where the graph has "
                f"{tuple(self.x.shape)}, {tuple(self.y.shape)} (a smaller last batch?)"
            )
            return self.eager(x, y)
        if not self._ran:  # compile the kernels, make the optimizer's state
            self._ran = True
            return self.eager(x, y)
        if self._graph is not None and not (
            self.model.training == self._training and self._update.current()
        ):
            self._graph = None  # the mode or a hyper-parameter changed: capture again
        if self._graph is None and not self._capture():
            return self.eager(x, y)
        return self._replay(x, y)

    def eager(self, x: Any, y: Any) -> Any:
        """The step without a graph (checked on the device as a replay is)."""
        loss = forward_backward(self.model, self.loss_fn, self.optimizer, x, y)
        if self._flag is not None:
            st = self.status
            with st.lock:
                self._flag(loss, st.buffer, st.next_serial())
        self.optimizer.step()
        return loss

    def _capture(self) -> bool:
        st = self.status
        make = getattr(self.optimizer, "_device_update", None)
        if make is None:
            self._reason = f"{type(self.optimizer).__name__} has no device-side update"
            self.fall_back(self._reason)
            return False
        try:
            update = make(st)
        except NotImplementedError as exc:
            self._reason = str(exc)
            self.fall_back(self._reason)
            return False
        xp = self.backend.xp
        buffer = st.buffer
        label = buffer[_status.LABEL_SERIAL]

        def work() -> Any:
            with st.lock, _gemm.capturing():  # the loss's serial is baked into the graph
                self._serial += 1
                saved = label.copy()
                before = st.serial
                loss = forward_backward(self.model, self.loss_fn, self.optimizer, self.x, self.y)
                if st.serial != before:  # the loss checks labels with a serial of the capture
                    baked = st.serial
                    label[...] = xp.where(label == baked, xp.minimum(saved, self._serial), label)
                kernel(loss, "flag_nonfinite_graphed")(loss, buffer, self._serial)
                update.launch()
            return loss

        try:
            self._graph, self._loss = self.backend.capture_graph(work)
        except (CaptureFailed, NotImplementedError) as exc:
            self._reason = f"capture failed: {exc}"
            self.fall_back(self._reason)
            return False
        self._update, self._training = update, self.model.training
        # arrays the layers and the loss made before the capture and read in it (a cached
        # constant gradient...): an eager step (a smaller batch) may replace them, and the
        # graph must not read freed memory
        self._kept = [dict(vars(m)) for m in (self.loss_fn, *self.model.modules())]
        self._serial_host = None
        return True

    def _replay(self, x: Any, y: Any) -> Any:
        st = self.status
        self._copy_in(self.x, x)
        self._copy_in(self.y, y)
        self._update.before()
        with st.lock:  # the replay's flag kernel numbers itself on the device
            if self._serial_host != st.serial:  # other checked work numbered calls meanwhile
                self._serial[...] = st.serial
            self._graph.launch()
            self._serial_host = st.next_serial()
        self._update.after()
        return self._loss

    def _copy_in(self, static: Any, batch: Any) -> None:
        if _dispatch.owner_of(batch) is self.backend:
            static[...] = batch
        else:  # a host batch: one upload
            static.set(np.ascontiguousarray(batch))
