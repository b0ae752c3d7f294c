"""fit and predict: mini-batch training and inference over host or device data.

Host data stays on the host; each batch is gathered into a staging buffer and moved
to the model's device on its own (pinned staging memory on CUDA, two buffers so the
next batch is gathered while the last copy runs), so a data set larger than device
memory trains. These moves are explicit: counted, not subject to the transfer guard.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import numpy as np

from .. import _dispatch
from .._runtime import transfer as _transfer
from .._select import registry as _registry
from ..errors import DeviceMismatchError
from .losses import BCEWithLogitsLoss, CrossEntropyLoss, _Loss
from .module import Module

__all__ = ["fit", "predict"]


def _placement(model: Module) -> tuple[Any, np.dtype | None, int]:
    """The backend, dtype and device of the model's parameters."""
    anchor = model._anchor()
    if anchor is None:
        return _registry.load("numpy"), None, 0
    owner = _dispatch.owner_of(anchor.data)
    if owner is None:
        return _registry.load("numpy"), anchor.data.dtype, 0
    return owner, anchor.data.dtype, owner.device_of(anchor.data)


def _device_scope(backend: Any, device: int) -> contextlib.AbstractContextManager[Any]:
    """The model's device made current: CuPy computes and allocates on the current device."""
    return backend.use_device(device) if backend.is_device else contextlib.nullcontext()


class _Batches:
    """Rows ``index`` of ``data`` as arrays on ``backend``'s device (float cast to ``dtype``)."""

    def __init__(
        self, data: Any, backend: Any, dtype: np.dtype | None, device: int, batch_size: int
    ) -> None:
        self.backend = backend
        self.host = _dispatch.owner_of(data) is None
        if self.host:
            data = np.asarray(data)
        elif _dispatch.owner_of(data) is not backend:
            raise DeviceMismatchError(
                f"data is on backend {_dispatch.owner_of(data).name!r} but the model's "
                f"parameters are on {backend.name!r}; move one of them (model.to(...))"
            )
        elif backend.device_of(data) != device:
            raise DeviceMismatchError(
                f"data is on {backend.name}:{backend.device_of(data)} but the model's "
                f"parameters are on {backend.name}:{device}; move one of them"
            )
        self.data = data
        self.device = device  # the model's, not the current device
        self.dtype = dtype if dtype is not None and data.dtype.kind in "fc" else data.dtype
        shape = (batch_size, *data.shape[1:])
        self.events: list[Any] = [None, None]
        self.turn = 0
        self.pinned = self.host and backend.name == "cupy"
        if self.pinned:
            import cupyx

            self.staging = [cupyx.empty_pinned(shape, self.dtype) for _ in range(2)]

    def take(self, index: Any) -> Any:
        """The rows ``index`` (a slice or an integer array) where the model runs."""
        data = self.data
        if not self.host:
            if not isinstance(index, slice):  # the shuffled rows, as indices on the device
                index = self.backend.asarray(index, device=self.device)
            out = data[index]
            return out if out.dtype == self.dtype else out.astype(self.dtype)
        if self.pinned:
            return self._to_cupy(index)
        out = data[index]  # a view for a slice, a gather otherwise
        out = out if out.dtype == self.dtype else out.astype(self.dtype)
        if self.backend.is_device:  # another device backend: its own host-to-device copy
            out = self.backend.asarray(out, device=self.device)
            _transfer.record("host_to_device", out.nbytes)
        return out

    def _to_cupy(self, index: Any) -> Any:
        import cupy

        k = self.turn = 1 - self.turn
        if self.events[k] is not None:
            self.events[k].synchronize()  # the copy that last read this buffer is done
        rows = self.data[index]
        buf = self.staging[k][: len(rows)]
        buf[...] = rows
        with cupy.cuda.Device(self.device):  # the model's device and its current stream
            out = cupy.empty(buf.shape, self.dtype)
            stream = cupy.cuda.get_current_stream()
            out.set(buf, stream=stream)  # async: pinned source
            self.events[k] = stream.record()
        _transfer.record("host_to_device", buf.nbytes)
        return out


def _progress(progress: bool | None, total: int) -> Any:
    if progress is False or (progress is None and not sys.stderr.isatty()):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if progress:
            raise ImportError('progress=True needs tqdm: pip install "gpukit[progress]"') from None
        return None
    return tqdm(total=total, unit="epoch", leave=True)


def _metric_name(loss_fn: _Loss) -> str | None:
    if isinstance(loss_fn, CrossEntropyLoss | BCEWithLogitsLoss):
        return "accuracy"
    return None


def _evaluate(
    model: Module, loss_fn: _Loss, x: Any, y: Any, batch_size: int
) -> tuple[float, float | None]:
    """Mean loss (and accuracy for classification losses) over ``(x, y)``."""
    backend, dtype, device = _placement(model)
    xs = _Batches(x, backend, dtype, device, batch_size)
    ys = _Batches(y, backend, dtype, device, batch_size)
    n = len(xs.data)
    metric = _metric_name(loss_fn)
    # sums stay on the model's device: one host read per evaluation, not one per batch
    total: Any = 0
    correct: Any = 0
    width = 1  # outputs per sample (BCE's accuracy counts every output)
    summed = loss_fn.reduction == "sum"
    for start in range(0, n, batch_size):
        rows = slice(start, min(start + batch_size, n))
        out = model.forward(xs.take(rows))
        yb = ys.take(rows)
        loss = loss_fn(out, yb)
        total = total + (loss if summed else loss * len(out))
        if metric and isinstance(loss_fn, CrossEntropyLoss):
            correct = correct + (out.argmax(axis=1) == yb).sum()
        elif metric:
            width = out.size // len(out)
            correct = correct + ((out > 0) == (yb > 0.5)).sum()
    return float(total) / n, (float(correct) / (n * width) if metric else None)


def fit(
    model: Module,
    loss_fn: _Loss,
    optimizer: Any,
    x: Any,
    y: Any,
    *,
    epochs: int,
    batch_size: int,
    shuffle: bool = True,
    seed: int | None = None,
    validation: tuple[Any, Any] | None = None,
    progress: bool | None = None,
) -> dict[str, list[float]]:
    """Train ``model`` on ``(x, y)`` with mini-batch gradient steps.

    Each step: ``optimizer.zero_grad()``, ``out = model(xb)``, ``loss_fn(out, yb)``,
    ``model.backward(loss_fn.backward(), need_input_grad=False)``, ``optimizer.step()``.

    Parameters
    ----------
    model : Module
        The network; trained in place, left in training mode.
    loss_fn : loss
        ``MSELoss``, ``CrossEntropyLoss`` or ``BCEWithLogitsLoss``.
    optimizer : gpukit.optim.Optimizer
        Holding the model's parameters.
    x, y : array
        Inputs and targets, first axis the samples; NumPy arrays (moved to the model's
        device one batch at a time) or arrays on the model's device.
    epochs : int
        Passes over the data.
    batch_size : int
        Samples per step (the last batch of an epoch may be smaller).
    shuffle : bool
        Visit the samples in a new random order every epoch.
    seed : int, optional
        Seed of the shuffling.
    validation : (x_val, y_val), optional
        Evaluated after every epoch in evaluation mode.
    progress : bool, optional
        Show a tqdm bar; by default only when stderr is a terminal.

    Returns
    -------
    dict of list of float
        Per epoch: ``"loss"`` (mean training loss) and, with ``validation``,
        ``"val_loss"`` and, for classification losses, ``"val_accuracy"``.

    Raises
    ------
    ValueError
        ``x`` and ``y`` differ in length, ``epochs < 0`` or ``batch_size < 1``.
    DeviceMismatchError
        Data on another backend than the model (a ``ValueError`` too).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((256, 2)).astype("float32")
    >>> y = (x[:, 0] > x[:, 1]).astype("int64")
    >>> model = gk.nn.Sequential(gk.nn.Linear(2, 2, seed=0))
    >>> opt = gk.optim.SGD(model.parameters(), lr=0.5)
    >>> hist = gk.nn.fit(model, gk.nn.CrossEntropyLoss(), opt, x, y, epochs=5,
    ...                  batch_size=32, seed=0, validation=(x, y), progress=False)
    >>> hist["val_accuracy"][-1] > 0.9
    True
    """
    x_val, y_val = validation if validation is not None else (None, None)
    _dispatch.reject("gk.nn.fit", x=x, y=y, x_val=x_val, y_val=y_val)
    n = len(x)
    if len(y) != n:
        raise ValueError(f"x has {n} samples but y has {len(y)}")
    if epochs < 0 or batch_size < 1:
        raise ValueError(f"need epochs >= 0 and batch_size >= 1, got {epochs}, {batch_size}")
    if validation is not None:
        x_val, y_val = validation
        if len(x_val) != len(y_val) or len(x_val) == 0:
            raise ValueError(
                f"validation needs x_val and y_val of the same non-zero length; got "
                f"{len(x_val)} and {len(y_val)} samples"
            )
    backend, dtype, device = _placement(model)
    xs = _Batches(x, backend, dtype, device, batch_size)
    ys = _Batches(y, backend, dtype, device, batch_size)
    rng = np.random.default_rng(seed)
    history: dict[str, list[float]] = {"loss": []}
    bar = _progress(progress, epochs)
    was_training = model.training
    try:
        with _device_scope(backend, device):
            for _ in range(epochs):
                model.train()
                order = rng.permutation(n) if shuffle else None
                total: Any = 0.0
                for start in range(0, n, batch_size):
                    stop = min(start + batch_size, n)
                    rows = slice(start, stop) if order is None else np.sort(order[start:stop])
                    xb, yb = xs.take(rows), ys.take(rows)
                    optimizer.zero_grad()
                    loss = loss_fn(model.forward(xb), yb)
                    model.backward(loss_fn.backward(), need_input_grad=False)
                    optimizer.step()
                    total = total + (loss * (stop - start) if loss_fn.reduction == "mean" else loss)
                history["loss"].append(float(total) / max(n, 1))
                if validation is not None:
                    model.eval()
                    val_loss, val_metric = _evaluate(model, loss_fn, *validation, batch_size)
                    history.setdefault("val_loss", []).append(val_loss)
                    if val_metric is not None:
                        history.setdefault("val_accuracy", []).append(val_metric)
                if bar is not None:
                    bar.set_postfix({k: f"{v[-1]:.4g}" for k, v in history.items()})
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        model.train(was_training)
    return history


@_dispatch.operation("gk.nn.predict")
def predict(model: Module, x: Any, batch_size: int = 1024) -> Any:
    """Outputs of ``model`` on ``x`` in evaluation mode, batch by batch.

    Parameters
    ----------
    model : Module
        The network (its mode is restored afterwards).
    x : array
        Inputs, first axis the samples; host or on the model's device.
    batch_size : int
        Samples per forward pass.

    Returns
    -------
    array
        The stacked outputs: a NumPy array when ``x`` is on the host, else an array on
        the model's device.

    Raises
    ------
    ValueError
        ``batch_size < 1``.
    DeviceMismatchError
        Data on another backend than the model (a ``ValueError`` too).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> model = gk.nn.Sequential(gk.nn.Linear(3, 2, seed=0), gk.nn.Softmax())
    >>> gk.nn.predict(model, np.ones((5, 3)), batch_size=2).shape
    (5, 2)
    """
    _dispatch.reject("gk.nn.predict", x=x)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    backend, dtype, device = _placement(model)
    xs = _Batches(x, backend, dtype, device, batch_size)
    n = len(xs.data)
    was_training = model.training
    model.eval()
    outs = []
    try:
        with _device_scope(backend, device):
            for start in range(0, n, batch_size):
                out = model.forward(xs.take(slice(start, min(start + batch_size, n))))
                outs.append(_dispatch.to_numpy(out) if xs.host else out)
    finally:
        model.train(was_training)
    if not outs:
        raise ValueError("predict got no samples")
    return (np if xs.host else backend.xp).concatenate(outs)
