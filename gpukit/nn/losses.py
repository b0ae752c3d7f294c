"""Losses: ``loss_fn(output, target)`` gives the loss, ``loss_fn.backward()`` its gradient."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import numpy as np

from .. import _dispatch
from .._dispatch import dtypes as _dtypes
from .._dispatch.capabilities import declare
from .._runtime import device_status as _status
from .._runtime import plans as _plans
from .._runtime.memory import Policy
from ..kernels._checks import check_range
from ..kernels._direct import bound
from .module import as_dtype, mismatch, namespace_of, on_device_of

_NO_STATUS = nullcontext()  # a host loss: nothing numbered, nothing to hold
_FLOAT16 = np.dtype(np.float16)  # compared with a dtype: no conversion of np.float16 per call
_MAXIMUM, _ADD = np.maximum.reduce, np.add.reduce

__all__ = ["BCEWithLogitsLoss", "CrossEntropyLoss", "MSELoss"]


class _Loss:
    """Shared reduction handling; subclasses implement ``_forward`` and ``_backward``."""

    def __init__(self, reduction: str = "mean") -> None:
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        self.reduction = reduction
        self._cache: Any = None

    def _prepare(self, output: Any, target: Any) -> tuple[Any, Any]:
        if (
            type(output) is np.ndarray
            and type(target) is np.ndarray
            and output.dtype.isnative
            and target.dtype.isnative
        ):
            return output, target
        name = type(self).__name__
        # a list becomes an array; None, strings, masked arrays are TypeErrors naming the argument
        output = _dtypes.check(name, "output", output)
        target = _dtypes.check(name, "target", target)
        _, (output, target) = _dispatch.prepare(output, target, names=("output", "target"))
        return output, target

    def _check_dtypes(self, output: Any, target: Any) -> None:
        """Float output; a float target of the output's dtype (never cast silently)."""
        name = type(self).__name__
        if output.dtype.kind != "f":
            raise TypeError(f"{name}: output must be floating, got dtype {output.dtype}")
        if target.dtype != output.dtype:
            raise TypeError(
                mismatch(name, "target", target.dtype, output.dtype).replace(
                    "the model's parameters are", "the output is"
                )
            )

    def __call__(self, output: Any, target: Any) -> Any:
        """The reduced loss, a 0-d array on the output's device."""
        # the memory policy's steps inline (gk.nn.loss): one call level less than
        # @operation on the path of every training step
        try:
            return _call(self, output, target)
        except Exception as exc:
            claimed = _CALL.claim(exc)
            if claimed is None:
                raise
        return _CALL.retry(claimed, (self, output, target), {})

    def backward(self) -> Any:
        """d(loss)/d(output) for the last call, shaped like the output."""
        # the memory policy's steps inline (gk.nn.loss.backward), as __call__'s
        try:
            return _backward(self)
        except Exception as exc:
            claimed = _BACKWARD.claim(exc)
            if claimed is None:
                raise
        return _BACKWARD.retry(claimed, (self,), {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reduction={self.reduction!r})"


def _call(loss: _Loss, output: Any, target: Any) -> Any:
    """:meth:`_Loss.__call__` without its memory policy."""
    host = type(output) is np.ndarray and type(target) is np.ndarray
    if host and output.dtype.isnative and target.dtype.isnative:
        return loss._forward(output, target)
    if not host:
        # two device arrays of a type checked before, on one device: nothing to refuse
        # or move (what _prepare finds for them), so only that device is made current
        owner = _dispatch.checked_device(output)
        if owner is not None and _dispatch.checked_device(target) is owner:
            device = owner.device_of(output)
            if owner.device_of(target) == device:
                with owner.use_device(device):
                    return loss._forward(output, target)
    since = _plans.generation()  # before the checks that remember_checked keeps passed
    if not host:
        _dispatch.reject(f"gk.nn.{type(loss).__name__}", output=output, target=target)
    given = output, target
    output, target = loss._prepare(output, target)
    if type(output) is np.ndarray:
        return loss._forward(output, target)
    for x, was in zip((output, target), given, strict=True):
        if x is was:
            _dispatch.remember_checked(x, since)
    with on_device_of(output):  # CuPy computes on the current device: make it output's
        return loss._forward(output, target)


_CALL = Policy("gk.nn.loss", _call)


def _backward(loss: _Loss) -> Any:
    """:meth:`_Loss.backward` without its memory policy."""
    cache = loss._cache
    if cache is None:
        raise RuntimeError(
            f"{type(loss).__name__}.backward called before the loss: call "
            "loss_fn(output, target) first"
        )
    first = cache[0] if type(cache) is tuple else cache
    if type(first) is np.ndarray:
        return loss._backward()
    with on_device_of(first):
        return loss._backward()


_BACKWARD = Policy("gk.nn.loss.backward", _backward)


def _same_shape(name: str, output: Any, target: Any) -> None:
    if tuple(output.shape) != tuple(target.shape):
        raise ValueError(
            f"{name}: target shape {tuple(target.shape)} must equal output shape "
            f"{tuple(output.shape)}"
        )


class MSELoss(_Loss):
    """Mean squared error ``mean((output - target) ** 2)`` (or the sum).

    Parameters
    ----------
    reduction : {"mean", "sum"}
        How the per-element losses are combined.

    Raises
    ------
    ValueError
        Unknown ``reduction``; output and target shapes differ.
    TypeError
        Output not floating, or a target of another dtype than the output (convert it:
        nothing is cast silently).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> loss_fn = gk.nn.MSELoss()
    >>> float(loss_fn(np.array([1.0, 3.0]), np.array([0.0, 0.0])))
    5.0
    >>> loss_fn.backward().tolist()
    [1.0, 3.0]
    """

    def _forward(self, output: Any, target: Any) -> Any:
        _same_shape("MSELoss", output, target)
        self._check_dtypes(output, target)
        diff = output - target
        self._cache = diff
        total = (diff * diff).sum()
        return total / diff.size if self.reduction == "mean" else total

    def _backward(self) -> Any:
        diff = self._cache
        scale = 2.0 / max(diff.size, 1) if self.reduction == "mean" else 2.0  # size 0: empty
        return diff * diff.dtype.type(scale)


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy of logits ``(N, C)`` against integer class labels ``(N,)``.

    Parameters
    ----------
    reduction : {"mean", "sum"}
        How the per-sample losses are combined.
    label_smoothing : float
        In [0, 1]: the target is ``(1 - s)`` on the label plus ``s / C`` everywhere,
        as in PyTorch.

    Raises
    ------
    ValueError
        Unknown ``reduction``; ``label_smoothing`` outside [0, 1]; logits not 2-D;
        labels not of shape ``(N,)``; a label outside ``[0, C)``, on every backend: at
        the call on the host; on a GPU the loss kernel flags it on the device (the call
        would otherwise wait for the device), every later optimizer update on that device
        is skipped, and the error is raised by the next host read of the device
        (``gk.to_numpy``, ``gk.synchronize``, ``fit``'s checks, ``Optimizer.state_dict``,
        ``gk.nn.save``; docs/nn.rst, "Errors found on the device"). ``float(loss)`` of
        such a batch is NaN.
    TypeError
        Logits not floating, labels not integers, ``label_smoothing`` not a number.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> loss_fn = gk.nn.CrossEntropyLoss()
    >>> round(float(loss_fn(np.zeros((2, 4)), np.array([0, 3]))), 4)
    1.3863
    >>> loss_fn.backward()[0].tolist()
    [-0.375, 0.125, 0.125, 0.125]
    """

    def __init__(self, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        self.label_smoothing = check_range(
            "CrossEntropyLoss", label_smoothing, "label_smoothing", 0.0, 1.0, hi_open=False
        )
        # None: the cache holds probs (host); else whether backward returned the cached
        # gradient the kernel computed already
        self._handed: bool | None = None
        self._dtype = np.dtype(np.float32)  # the last output's dtype, the gradient's

    def _check(self, logits: Any, labels: Any) -> None:
        if logits.dtype.kind != "f":
            raise TypeError(f"CrossEntropyLoss: output must be floating, got dtype {logits.dtype}")
        if labels.dtype.kind not in "iu":
            raise TypeError(
                f"CrossEntropyLoss: target must be integer class labels, got dtype {labels.dtype}"
            )
        if logits.ndim != 2 or logits.shape[1] == 0:
            raise ValueError(
                f"CrossEntropyLoss: output must be (N, C) with C >= 1 classes, got shape "
                f"{tuple(logits.shape)}"
            )
        if tuple(labels.shape) != (logits.shape[0],):
            raise ValueError(
                f"CrossEntropyLoss: target must be integer class labels of shape "
                f"({logits.shape[0]},), got shape {tuple(labels.shape)}"
            )

    def _forward(self, logits: Any, labels: Any) -> Any:
        self._check(logits, labels)
        self._dtype = dtype = logits.dtype
        if dtype == _FLOAT16:  # in float32 and rounded once, as the activations: the
            logits = logits.astype(np.float32)  # kernels take float32/float64
        n, c = logits.shape
        s = self.label_smoothing
        owner = None if type(logits) is np.ndarray else _dispatch.owner_of(logits)
        device = owner is not None and owner.is_device
        # host data: one reduction (negative labels, seen as unsigned, are huge) and the error
        # at once; a device records it instead (a check here would wait for the device)
        if not device and n and int(np.maximum.reduce(_unsigned(labels))) >= c:
            raise ValueError(
                f"CrossEntropyLoss: labels must be in [0, {c}), got values in "
                f"[{int(labels.min())}, {int(labels.max())}]"
            )
        if type(logits) is np.ndarray:
            # the ufunc reductions ndarray.max and .sum call, without NumPy's Python layer
            # around them (~1.1k instructions each: gk.nn.Softmax calls them so too)
            z = logits - _MAXIMUM(logits, 1, None, None, True)
            probs = np.exp(z)
            sums = _ADD(probs, 1, None, None, True)
            probs /= sums
            # log p[i, j] = z[i, j] - log s[i]: only n logarithms, no (n, c) log-probabilities
            # (floating sums keep the logits' dtype)
            log_sums = _ADD(np.log(sums), None)
            total = log_sums - _ADD(z[np.arange(n), labels], None)
            if s:
                total = (1 - s) * total - s / c * (_ADD(z, None) - c * log_sums)
        else:
            # on a device the kernel flags a label out of range in the device's status:
            # optimizer steps there are skipped until the host reads it (_label_error)
            st = _status.status(owner, owner.device_of(logits)) if device else None
            # the reduced loss and its gradient in one launch: backward hands the gradient over
            with _NO_STATUS if st is None else st.lock:
                flag = () if st is None else (st.buffer, st.next_serial())
                args = (logits, labels, s, self.reduction, *flag)
                key = (
                    type(logits), logits.dtype, n, c, type(labels), labels.dtype,
                    self.reduction, None if st is None else st.device,
                )  # fmt: skip
                run = _TRAIN.get(key) or _train_kernel(key, args)
                loss, grad = run(*args)
            self._cache, self._handed = (grad, labels), False
            return as_dtype(loss, dtype)
        self._cache, self._handed = (probs, labels), None
        out = total / n if self.reduction == "mean" else total
        # a NumPy scalar: astype would make a copy of one already of the dtype (most of a
        # small loss's own cost); only float16 logits' loss, computed in float32, is cast
        return out if type(out) is dtype.type else out.astype(dtype)

    def _backward(self) -> Any:
        probs, labels = self._cache
        if self._handed is not None:
            # the forward kernel computed the gradient (cached in place of probs): the
            # first call hands it over, a later one a copy to change freely
            g = probs.copy() if self._handed else probs
            self._handed = True
            return as_dtype(g, self._dtype)
        n, c = probs.shape
        scale = 1.0 / n if self.reduction == "mean" and n else 1.0
        s = self.label_smoothing
        real = probs.dtype.type
        g = probs - real(s / c) if s else probs.copy()
        g[np.arange(n), labels] -= real(1 - s)
        if scale != 1.0:
            g *= real(scale)
        return g if g.dtype == self._dtype else g.astype(self._dtype)

    def __repr__(self) -> str:
        return (
            f"CrossEntropyLoss(reduction={self.reduction!r}, "
            f"label_smoothing={self.label_smoothing})"
        )


#: (the logits' type, dtype and shape, the labels' type and dtype, the reduction, the
#: device) -> a device's training kernel of CrossEntropyLoss bound to such arrays (the
#: backend's ``bind``: its kernel and launch settled once)
_TRAIN = _plans.table()


def _train_kernel(key: Any, args: tuple[Any, ...]) -> Any:
    """The kernel of :data:`_TRAIN` for ``key``, bound to arrays like ``args``' and kept."""
    since = _plans.generation()
    return _plans.remember(_TRAIN, key, bound(args[0], "softmax_cross_entropy_train", args), since)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of ``sigmoid(output)`` against targets in [0, 1], stably.

    Parameters
    ----------
    reduction : {"mean", "sum"}
        How the per-element losses are combined.

    Raises
    ------
    ValueError
        Unknown ``reduction``; output and target shapes differ.
    TypeError
        Output not floating, or a target of another dtype than the output (convert it:
        nothing is cast silently).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> round(float(gk.nn.BCEWithLogitsLoss()(np.zeros(2), np.array([0.0, 1.0]))), 4)
    0.6931
    """

    def _forward(self, logits: Any, target: Any) -> Any:
        _same_shape("BCEWithLogitsLoss", logits, target)
        self._check_dtypes(logits, target)
        xp = namespace_of(logits)
        # max(x, 0) - x*y + log(1 + exp(-|x|)): no overflow for any x
        per = xp.maximum(logits, 0) - logits * target + xp.log1p(xp.exp(-xp.abs(logits)))
        self._cache = (logits, target)
        total = per.sum()
        return total / per.size if self.reduction == "mean" else total

    def _backward(self) -> Any:
        logits, target = self._cache
        xp = namespace_of(logits)
        half = logits.dtype.type(0.5)
        g = half + half * xp.tanh(half * logits) - target  # sigmoid without overflow
        if self.reduction == "mean":
            g *= logits.dtype.type(1.0 / max(logits.size, 1))
        return g


#: The unsigned integer type of each size (CrossEntropyLoss's one-reduction label check)
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _unsigned(labels: Any) -> Any:
    """``labels`` seen as unsigned integers: negative labels become huge."""
    return labels if labels.dtype.kind == "u" else labels.view(_UNSIGNED[labels.dtype.itemsize])


def _label_error(slots: np.ndarray) -> ValueError:
    """The error of a label out of range found on a device, when the host reads it."""
    lo, hi, c = (int(slots[k]) for k in (_status.LABEL_LO, _status.LABEL_HI, _status.LABEL_CLASSES))
    return ValueError(
        f"CrossEntropyLoss: labels must be in [0, {c}), got values out of range in [{lo}, "
        f"{hi}] (found on the device; the optimizer skipped every update on that device "
        "from that batch on)"
    )


_status.register(_status.LABEL, _label_error)


def _output_dtype(loss: _Loss) -> Any:
    """The rule of ``loss``: its check of a floating output (targets of the output's
    dtype, integer labels for CrossEntropyLoss)."""

    def rule(dtype: np.dtype) -> np.dtype:
        output = np.empty((0, 1), dtype)
        if isinstance(loss, CrossEntropyLoss):
            loss._check(output, np.empty(0, np.int64))
        else:
            loss._check_dtypes(output, output)
        return dtype

    return rule


for _loss in (MSELoss(), BCEWithLogitsLoss(), CrossEntropyLoss()):
    _notes = {"host": "computed on the host, where the data is"}
    if isinstance(_loss, CrossEntropyLoss):
        _notes["float16"] = "computed in float32"
    declare(f"gk.nn.{type(_loss).__name__}", _output_dtype(_loss), notes=_notes)
