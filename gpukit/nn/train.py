"""fit, predict and predict_proba: mini-batch training and inference over host or device data.

Host data stays on the host; each batch is gathered into a staging buffer and moved
to the model's device on its own (pinned staging memory on CUDA, two buffers so the
next batch is gathered while the last copy runs), so a data set larger than device
memory trains. These moves are explicit: counted, not subject to the transfer guard.
Inputs must already have the model's dtype: nothing is cast silently.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import sys
from typing import Any

import numpy as np

from .. import _dispatch
from .._dispatch import dtypes as _dtypes
from .._dispatch.capabilities import declare
from .._runtime import device_status as _status
from .._runtime import transfer as _transfer
from .._select import registry as _registry
from ..errors import DeviceMismatchError, NonFiniteError
from ..kernels._checks import check_flag
from ..kernels._direct import kernel
from .graphed import GraphedStep, forward_backward
from .layers import _float_dtype
from .losses import BCEWithLogitsLoss, CrossEntropyLoss, _Loss
from .module import Module, mismatch

__all__ = ["fit", "predict", "predict_proba"]


def _count(op: str, value: Any, name: str, lo: int) -> int:
    """An integer ``>= lo`` (``2.5`` and ``True`` are TypeErrors, not 2 and 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}")
    if value < lo:
        raise ValueError(f"{op}: {name} must be >= {lo}, got {value!r}")
    return int(value)


def _check_model(op: str, model: Any) -> None:
    if not isinstance(model, Module):
        raise TypeError(f"{op}: model must be a gk.nn.Module, got {type(model).__name__}")


def _samples(op: str, data: Any, name: str, dtype: np.dtype | None) -> Any:
    """``data`` as an array with a first (sample) axis; with the model's ``dtype`` (inputs),
    of that dtype (lists are converted to it, arrays must have it)."""
    if not hasattr(data, "dtype") and data is not None and not isinstance(data, str):
        data = np.asarray(data, dtype=dtype if dtype is not None else None)
    data = _dtypes.check(op, name, data)
    if data.ndim < 1:
        raise ValueError(f"{op}: {name} must have a first axis of samples, got a 0-d array")
    if dtype is not None and data.dtype != dtype:  # inputs: the model's dtype, never cast
        raise TypeError(mismatch(op, name, data.dtype, dtype))
    return data


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
    """Rows ``index`` of ``data`` as arrays on ``backend``'s device (``batch_size`` at most)."""

    def __init__(self, data: Any, backend: Any, device: int, batch_size: int) -> None:
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
        self.dtype = data.dtype
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
            return data[index]
        if self.pinned:
            return self._to_cupy(index)
        out = data[index]  # a view for a slice, a gather otherwise
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
    backend, _, device = _placement(model)
    xs = _Batches(x, backend, device, batch_size)
    ys = _Batches(y, backend, device, batch_size)
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


#: Steps between two reads of the device's status in :func:`fit` (on a GPU): the most
#: batches a bad one can be followed by (their updates skipped) before fit raises.
CHECK_EVERY = 16


def _nonfinite(op: str, value: float, where: tuple[int, ...], history: Any) -> NonFiniteError:
    epoch, batch, start, stop = where
    return NonFiniteError(
        f"{op}: the loss is {value} at epoch {epoch}, batch {batch} (samples {start} to "
        f"{stop - 1} of this epoch's order); training stopped before this batch's update. "
        "Lower the learning rate, or look for NaN/inf or extreme values in x and y",
        epoch=epoch,
        batch=batch,
        value=value,
        history=history,
    )


class _DeviceChecks:
    """fit's checks on a device: each step's loss flagged on the device when not finite
    (one small kernel; the update kernels then skip), the status read every
    :data:`CHECK_EVERY` steps and at each epoch's end, and the first problem raised with
    the batch it came from."""

    def __init__(self, op: str, flagger: Any, status: Any, history: Any) -> None:
        self.op, self.flagger, self.status, self.history = op, flagger, status, history
        self.batches: list[tuple[int, tuple[int, ...]]] = []  # (last serial, where)

    @classmethod
    def of(
        cls, op: str, model: Module, backend: Any, device: int, history: Any
    ) -> _DeviceChecks | None:
        """The checks for a model on a device; None on the host, where reading the loss
        costs no wait, and on a device backend without gpukit's kernels (a plug-in), where
        the host reads each loss."""
        anchor = model._anchor()
        if not backend.is_device or anchor is None:
            return None
        try:
            flagger = kernel(anchor.data, "flag_nonfinite")
        except NotImplementedError:
            return None
        return cls(op, flagger, _status.status(backend, device), history)

    def flag(self, loss: Any, where: tuple[int, ...]) -> None:
        st = self.status
        with st.lock:
            serial = st.next_serial()
            self.flagger(loss, st.buffer, serial)
        self.batches.append((serial, where))

    def read(self) -> None:
        batches, self.batches = self.batches, []
        slots = self.status.read()
        if slots is None:
            return
        flags = int(slots[_status.FLAGS])
        serial = int(
            slots[_status.LABEL_SERIAL if flags & _status.LABEL else _status.NONFINITE_SERIAL]
        )
        where = next((w for last, w in batches if last >= serial), None)
        if flags & _status.LABEL or where is None:
            exc = _status.error(slots)
            if where is not None:
                epoch, batch, start, stop = where
                exc.args = (
                    f"{exc.args[0]}; {self.op}: at epoch {epoch}, batch {batch} (samples "
                    f"{start} to {stop - 1} of this epoch's order)",
                )
            raise exc
        kind = int(slots[_status.NONFINITE_KIND])
        raise _nonfinite(self.op, _status.NONFINITE_VALUES[kind - 1], where, self.history)


def _nonfinite_read(slots: np.ndarray) -> NonFiniteError:
    """A non-finite loss fit flagged, read by someone else (fit was interrupted)."""
    value = _status.NONFINITE_VALUES[int(slots[_status.NONFINITE_KIND]) - 1]
    return NonFiniteError(
        f"gk.nn.fit: a loss was {value} (found on the device; the optimizer skipped every "
        "update on that device from that batch on)",
        value=value,
    )


_status.register(_status.NONFINITE, _nonfinite_read)


@_dispatch.operation("gk.nn.fit", inplace=True)
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
    graph: bool = False,
) -> dict[str, list[float]]:
    """Train ``model`` on ``(x, y)`` with mini-batch gradient steps.

    Each step: ``optimizer.zero_grad()``, ``out = model(xb)``, ``loss_fn(out, yb)``,
    ``model.backward(loss_fn.backward(), need_input_grad=False)``, a check that the loss
    is finite, ``optimizer.step()``. A NaN or infinite loss stops training with
    :class:`gpukit.NonFiniteError` naming the epoch and batch, before that batch's
    update: the model keeps the weights of the last finite step. On a GPU the check is a
    flag on the device (the update kernels skip while it is set), read every
    :data:`CHECK_EVERY` steps and at the end of each epoch, so up to that many later
    batches run, none of their updates applied, before the error names the bad batch.

    Parameters
    ----------
    model : Module
        The network; trained in place, left in training mode.
    loss_fn : loss
        ``MSELoss``, ``CrossEntropyLoss`` or ``BCEWithLogitsLoss``.
    optimizer : gpukit.optim.Optimizer
        Holding the model's parameters (anything with ``zero_grad()`` and ``step()``).
    x, y : array
        Inputs and targets, first axis the samples; NumPy arrays (moved to the model's
        device one batch at a time) or arrays on the model's device. ``x`` must have the
        model's dtype (``x.astype("float32")`` for a float32 model: nothing is cast
        silently); ``y`` what the loss takes (integer labels for ``CrossEntropyLoss``,
        the output's dtype otherwise).
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
    graph : bool
        Capture the step as a CUDA graph and replay it, one launch per batch
        (:class:`GraphedStep`; docs/nn.rst, "CUDA graphs"): for small models, whose steps
        are bound by kernel launches. Where capture cannot work (the numpy backend, a
        model that is not float32, a random draw or a host synchronisation inside the
        step) every step runs eagerly, as does a smaller last batch; a
        ``GpukitWarning`` says why, once per reason.

    Returns
    -------
    dict of list of float
        Per epoch: ``"loss"`` (mean training loss) and, with ``validation``,
        ``"val_loss"`` and, for classification losses, ``"val_accuracy"``.

    Raises
    ------
    ValueError
        ``x`` and ``y`` differ in length, ``epochs < 0`` or ``batch_size < 1``.
    TypeError
        An argument of the wrong type (``model`` not a Module, ``loss_fn`` not a gk.nn
        loss, ``epochs`` not an integer, ...), or ``x`` not of the model's dtype.
    NonFiniteError
        A batch's loss is NaN or infinite (a ``FloatingPointError``); its ``epoch``,
        ``batch`` and ``history`` attributes say where and what was learnt before.
        A label out of range (``CrossEntropyLoss``) is its ``ValueError``, with the
        epoch and batch added on a GPU.
    DeviceMismatchError
        Data on another backend than the model (a ``ValueError`` too).
    OutOfMemoryError
        Memory ran out (training is not re-run: the model keeps its last completed step).

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
    op = "gk.nn.fit"
    pair = isinstance(validation, tuple | list) and len(validation) == 2
    x_val, y_val = validation if pair else (None, None)
    _dispatch.reject(op, x=x, y=y, x_val=x_val, y_val=y_val)
    _check_model(op, model)
    if not isinstance(loss_fn, _Loss):
        raise TypeError(
            f"{op}: loss_fn must be a gk.nn loss (MSELoss, CrossEntropyLoss, "
            f"BCEWithLogitsLoss), got {type(loss_fn).__name__}"
        )
    if not (
        callable(getattr(optimizer, "step", None))
        and callable(getattr(optimizer, "zero_grad", None))
    ):
        raise TypeError(
            f"{op}: optimizer must have step() and zero_grad() (a gk.optim optimizer), got "
            f"{type(optimizer).__name__}"
        )
    epochs = _count(op, epochs, "epochs", 0)
    batch_size = _count(op, batch_size, "batch_size", 1)
    if seed is not None:
        seed = _count(op, seed, "seed", 0)
    backend, dtype, device = _placement(model)
    x, y = _samples(op, x, "x", dtype), _samples(op, y, "y", None)
    n = len(x)
    if len(y) != n:
        raise ValueError(f"{op}: x has {n} samples but y has {len(y)}")
    if validation is not None:
        if not isinstance(validation, tuple | list) or len(validation) != 2:
            raise TypeError(f"{op}: validation must be a pair (x_val, y_val), got {validation!r}")
        x_val, y_val = (
            _samples(op, validation[0], "x_val", dtype),
            _samples(op, validation[1], "y_val", None),
        )
        if len(x_val) != len(y_val) or len(x_val) == 0:
            raise ValueError(
                f"{op}: validation needs x_val and y_val of the same non-zero length; got "
                f"{len(x_val)} and {len(y_val)} samples"
            )
    xs = _Batches(x, backend, device, batch_size)
    ys = _Batches(y, backend, device, batch_size)
    rng = np.random.default_rng(seed)
    history: dict[str, list[float]] = {"loss": []}
    bar = _progress(progress, epochs)
    was_training = model.training
    checks = _DeviceChecks.of(op, model, backend, device, history)
    graphed = None
    if check_flag(op, graph, "graph"):
        graphed = GraphedStep(model, loss_fn, optimizer, x[:batch_size], y[:batch_size])
        graphed.op = f"{op}(graph=True)"
        if checks is None:  # no device checks: no graphs either
            graphed.fall_back(graphed.reason or f"the {backend.name} backend has no graphs")
            graphed = None
    try:
        with _device_scope(backend, device):
            for epoch in range(epochs):
                model.train()
                order = rng.permutation(n) if shuffle else None
                total = _LossSum(backend.xp, loss_fn.reduction == "mean")
                for batch, start in enumerate(range(0, n, batch_size)):
                    stop = min(start + batch_size, n)
                    rows = slice(start, stop) if order is None else np.sort(order[start:stop])
                    xb, yb = xs.take(rows), ys.take(rows)
                    where = (epoch, batch, start, stop)
                    if graphed is not None:  # checked on the device, updated
                        loss = graphed(xb, yb)
                        checks.batches.append((checks.status.serial, where))
                    else:
                        loss = forward_backward(model, loss_fn, optimizer, xb, yb)
                        if checks is not None:
                            checks.flag(loss, where)
                        else:
                            value = float(loss)  # on the host: no wait, checked at once
                            if not math.isfinite(value):
                                raise _nonfinite(op, value, where, history)
                        optimizer.step()
                    total.add(loss, stop - start)
                    if checks is not None and len(checks.batches) >= CHECK_EVERY:
                        checks.read()
                if checks is not None:
                    checks.read()
                history["loss"].append(total.value() / max(n, 1))
                if validation is not None:
                    model.eval()
                    val_loss, val_metric = _evaluate(model, loss_fn, x_val, y_val, batch_size)
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


class _LossSum:
    """An epoch's loss, summed where the losses are: one in-place add a step, no
    allocation (the losses of batches of one length are summed, then weighted once)."""

    def __init__(self, xp: Any, mean: bool) -> None:
        self.xp, self.mean = xp, mean
        self.sums: dict[int, Any] = {}

    def add(self, loss: Any, rows: int) -> None:
        weight = rows if self.mean else 1
        acc = self.sums.get(weight)
        if acc is None:  # a copy: a graph replay overwrites its loss
            self.sums[weight] = self.xp.array(loss, copy=True)
        else:
            self.xp.add(acc, loss, out=acc)

    def value(self) -> float:
        return sum(float(acc) * weight for weight, acc in self.sums.items())


@_dispatch.operation("gk.nn.predict")
def predict(model: Module, x: Any, batch_size: int = 1024) -> Any:
    """The model's outputs on ``x`` in evaluation mode, batch by batch.

    These are what the last layer computes: for a classifier trained with
    ``CrossEntropyLoss`` or ``BCEWithLogitsLoss``, *logits*, not probabilities (as
    ``model(x)`` in PyTorch, ``model.predict`` in Keras). For probabilities use
    :func:`predict_proba`; for class labels, ``predict(model, x).argmax(axis=1)``.

    Parameters
    ----------
    model : Module
        The network (its mode is restored afterwards).
    x : array
        Inputs, first axis the samples, of the model's dtype; host or on the model's
        device.
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
        ``batch_size < 1``, ``x`` has no samples, or the model's output for a batch does
        not have one row per sample (``x``'s first axis is not the samples).
    TypeError
        ``model`` not a Module, ``batch_size`` not an integer, or ``x`` not of the
        model's dtype (convert it: nothing is cast silently).
    DeviceMismatchError
        Data on another backend than the model (a ``ValueError`` too).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> model = gk.nn.Sequential(gk.nn.Linear(3, 2, seed=0))
    >>> logits = gk.nn.predict(model, np.ones((5, 3), "float32"), batch_size=2)
    >>> logits.shape, logits.argmax(axis=1).shape
    ((5, 2), (5,))
    """
    return _predict("gk.nn.predict", model, x, batch_size, None)


@_dispatch.operation("gk.nn.predict_proba")
def predict_proba(
    model: Module, x: Any, batch_size: int = 1024, *, activation: str = "softmax"
) -> Any:
    """Class probabilities of a classifier that outputs logits, batch by batch.

    ``"softmax"`` (over the last axis) for a model trained with ``CrossEntropyLoss``: each
    row sums to one. ``"sigmoid"`` (each output on its own) for ``BCEWithLogitsLoss``: the
    probability of each label being 1. Computed stably (no overflow for large logits).

    Parameters
    ----------
    model : Module
        The network, ending with the logits (no Softmax layer).
    x : array
        Inputs, as for :func:`predict`.
    batch_size : int
        Samples per forward pass.
    activation : {"softmax", "sigmoid"}
        How logits become probabilities.

    Returns
    -------
    array
        Probabilities, shaped like the outputs: a NumPy array when ``x`` is on the host.

    Raises
    ------
    ValueError
        Unknown ``activation``; as :func:`predict`.
    TypeError
        As :func:`predict`.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> model = gk.nn.Sequential(gk.nn.Linear(3, 4, seed=0))
    >>> p = gk.nn.predict_proba(model, np.ones((5, 3), "float32"))
    >>> p.shape, bool(np.allclose(p.sum(axis=1), 1))
    ((5, 4), True)
    """
    if activation not in ("softmax", "sigmoid"):
        raise ValueError(
            f"gk.nn.predict_proba: activation must be 'softmax' or 'sigmoid', got {activation!r}"
        )
    return _predict("gk.nn.predict_proba", model, x, batch_size, activation)


def _probabilities(out: Any, activation: str) -> Any:
    xp = _dispatch.namespace(out)
    if activation == "sigmoid":
        half = out.dtype.type(0.5)
        return half + half * xp.tanh(half * out)  # no overflow for any logit
    p = xp.exp(out - out.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return p


def _predict(op: str, model: Module, x: Any, batch_size: int, activation: str | None) -> Any:
    _dispatch.reject(op, x=x)
    _check_model(op, model)
    batch_size = _count(op, batch_size, "batch_size", 1)
    backend, dtype, device = _placement(model)
    x = _samples(op, x, "x", dtype)
    xs = _Batches(x, backend, device, batch_size)
    n = len(xs.data)
    if n == 0:
        raise ValueError(f"{op}: x has no samples")
    was_training = model.training
    model.eval()
    outs = []
    try:
        with _device_scope(backend, device):
            for start in range(0, n, batch_size):
                stop = min(start + batch_size, n)
                out = model.forward(xs.take(slice(start, stop)))
                if out.ndim < 1 or out.shape[0] != stop - start:
                    # the batches are joined along the first axis: it must be the samples
                    raise ValueError(
                        f"{op}: the model's output for a batch of {stop - start} samples has "
                        f"shape {tuple(out.shape)}, not one row per sample; x (shape "
                        f"{tuple(x.shape)}) must hold the samples along its first axis (one "
                        "sample: x[None])"
                    )
                if activation is not None:
                    out = _probabilities(out, activation)
                outs.append(_dispatch.to_numpy(out) if xs.host else out)
    finally:
        model.train(was_training)
    return (np if xs.host else backend.xp).concatenate(outs)


# x has the model's dtype, a floating one (gk.nn.Linear's rule)
for _op in ("gk.nn.predict", "gk.nn.predict_proba"):
    declare(_op, lambda d, op=_op: _float_dtype(op, d))
