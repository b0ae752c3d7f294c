"""The elementwise and row-wise kernels of ``gk.kernels`` on Dask arrays.

Each chunk runs the fused kernel through gpukit. ``bias_activation`` and its backward are
elementwise along every axis (the bias is cut to match the chunks of ``x``'s last axis);
the bias gradient is summed over chunks by a tree reduction. The softmax cross-entropy
pair is row-wise: the class axis must be one chunk. The optimizer updates
(``sgd_update``, ``adam_update``) write in place and Dask arrays are immutable, so they
have no Dask implementation.

A kernel returning two arrays runs once per chunk: its task returns the pair, and one
cheap ``getitem`` task per output and chunk picks each part.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from .. import kernels as gk_kernels
from .._dispatch import dtypes as _dtypes
from .._dispatch import implements
from ..kernels._activation import _check, _check_activation
from ..kernels._checks import FLOATS, INTEGERS, check_labels, check_like, check_range
from ..kernels._loss import _check_logits, check_grad_loss
from ._chunks import OnChunks, carries_chunks, chunk_type, dask_arrays, meta

__all__: list[str] = []


def _prepare(op: str, arrays: dict[str, Any], accepted: dict[str, Any]) -> tuple[type, list, dict]:
    """Dtype-check, find the chunk type, and make every argument a Dask array."""
    arrays = {n: _dtypes.check(op, n, x, accepted[n]) for n, x in arrays.items()}
    expected = chunk_type(op, arrays)
    checked = [carries_chunks(x) for x in arrays.values()]
    return expected, checked, dask_arrays(op, arrays)


def _pair(op: str, fn: Any, expected: type, names, checked, out_ind, *args: Any) -> Any:
    """The per-chunk tuples of a two-output kernel (an internal Dask array of tuples)."""
    import dask.array as da

    task = OnChunks(op, fn, expected, names, checked)
    return da.blockwise(
        task, out_ind, *args, dtype=object, concatenate=True, meta=np.empty((0,) * len(out_ind))
    )


def _pick(pair: Any, i: int, like: Any, dtype: np.dtype, **chunking: Any) -> Any:
    """Output ``i`` of ``pair``; ``chunking`` (``chunks``, ``drop_axis``) when its shape
    is not the pair's."""
    ndim = pair.ndim - len(chunking.get("drop_axis", ()))
    return pair.map_blocks(
        operator.getitem, i, dtype=dtype, meta=meta(like, ndim, dtype), **chunking
    )


def _row_classes_one_chunk(op: str, name: str, x: Any) -> None:
    if len(x.chunks[1]) > 1:
        raise ValueError(
            f"{op}: {name} is split into {len(x.chunks[1])} chunks along the class axis 1 "
            f"(chunks {x.chunks[1]}); the kernel is row-wise, so each row must be one chunk: "
            f"{name}.rechunk({{1: -1}})"
        )


@implements("gk.kernels.bias_activation", "dask")
def bias_activation(
    x: Any, bias: Any, activation: str = "relu", *, negative_slope: float = 0.01
) -> Any:
    op = "gk.kernels.bias_activation"
    _check_activation(op, activation)
    expected, checked, arrays = _prepare(op, {"x": x, "bias": bias}, {"x": FLOATS, "bias": FLOATS})
    x, bias = arrays["x"], arrays["bias"]
    _check(op, x, bias)
    ind = tuple(range(x.ndim))
    fn = functools.partial(
        gk_kernels.bias_activation, activation=activation, negative_slope=negative_slope
    )
    task = OnChunks(op, fn, expected, ("x", "bias"), checked)
    import dask.array as da

    like = x if checked[0] else bias
    return da.blockwise(
        task, ind, x, ind, bias, ind[-1:], dtype=x.dtype, meta=meta(like, x.ndim, x.dtype)
    )


def _backward_chunk(
    grad_y: Any, x: Any, bias: Any, output: Any = None, **kwargs: Any
) -> tuple[Any, Any]:
    grad_x, grad_bias = gk_kernels.bias_activation_backward(
        grad_y, x, bias, output=output, **kwargs
    )
    return grad_x, grad_bias.reshape((1,) * (x.ndim - 1) + grad_bias.shape)


@implements("gk.kernels.bias_activation_backward", "dask")
def bias_activation_backward(
    grad_y: Any,
    x: Any,
    bias: Any,
    activation: str,
    *,
    negative_slope: float = 0.01,
    output: Any = None,
) -> tuple[Any, Any]:
    op = "gk.kernels.bias_activation_backward"
    _check_activation(op, activation)
    given = {"grad_y": grad_y, "x": x, "bias": bias}
    if output is not None:
        given["output"] = output
    names = tuple(given)
    expected, checked, arrays = _prepare(op, given, dict.fromkeys(names, FLOATS))
    grad_y, x, bias = (arrays[n] for n in names[:3])
    _check(op, x, bias)
    check_like(op, grad_y, "grad_y", x, "x")
    fn = functools.partial(_backward_chunk, activation=activation, negative_slope=negative_slope)
    ind = tuple(range(x.ndim))
    args = [grad_y, ind, x, ind, bias, ind[-1:]]
    if output is not None:
        check_like(op, arrays["output"], "output", x, "x")
        args += [arrays["output"], ind]
    pair = _pair(op, fn, expected, names, checked, ind, *args)
    like = next(a for a, c in zip(arrays.values(), checked, strict=True) if c)
    # the identity's grad_x is grad_y itself, as on every backend
    grad_x = grad_y if activation == "identity" else _pick(pair, 0, like, x.dtype)
    partial_chunks = (*((1,) * n for n in pair.numblocks[:-1]), pair.chunks[-1])
    partials = _pick(pair, 1, like, x.dtype, chunks=partial_chunks)
    return grad_x, partials.sum(axis=tuple(range(x.ndim - 1)), dtype=x.dtype)


@implements("gk.kernels.softmax_cross_entropy", "dask")
def softmax_cross_entropy(
    logits: Any, labels: Any, *, label_smoothing: float = 0.0
) -> tuple[Any, Any]:
    op = "gk.kernels.softmax_cross_entropy"
    smoothing = check_range(op, label_smoothing, "label_smoothing", 0.0, 1.0, hi_open=False)
    names = ("logits", "labels")
    expected, checked, arrays = _prepare(
        op, {"logits": logits, "labels": labels}, {"logits": FLOATS, "labels": INTEGERS}
    )
    logits, labels = arrays["logits"], arrays["labels"]
    _check_logits(op, logits, "logits")
    check_labels(op, labels, logits.shape[0])
    _row_classes_one_chunk(op, "logits", logits)
    fn = functools.partial(gk_kernels.softmax_cross_entropy, label_smoothing=smoothing)
    pair = _pair(op, fn, expected, names, checked, "i", logits, "ij", labels, "i")
    like = logits if checked[0] else labels
    loss = _pick(pair, 0, like, logits.dtype)
    classes = (logits.shape[1],)
    probs = _pick(pair, 1, like, logits.dtype, chunks=(pair.chunks[0], classes), new_axis=[1])
    return loss, probs


@implements("gk.kernels.softmax_cross_entropy_backward", "dask")
def softmax_cross_entropy_backward(
    probs: Any, labels: Any, grad_loss: Any, *, label_smoothing: float = 0.0
) -> Any:
    import dask.array as da

    op = "gk.kernels.softmax_cross_entropy_backward"
    smoothing = check_range(op, label_smoothing, "label_smoothing", 0.0, 1.0, hi_open=False)
    names = ("probs", "labels", "grad_loss")
    expected, checked, arrays = _prepare(
        op,
        {"probs": probs, "labels": labels, "grad_loss": grad_loss},
        {"probs": FLOATS, "labels": INTEGERS, "grad_loss": FLOATS},
    )
    probs, labels, grad_loss = (arrays[n] for n in names)
    _check_logits(op, probs, "probs")
    check_labels(op, labels, probs.shape[0])
    check_grad_loss(op, grad_loss, probs)
    _row_classes_one_chunk(op, "probs", probs)
    fn = functools.partial(gk_kernels.softmax_cross_entropy_backward, label_smoothing=smoothing)
    task = OnChunks(op, fn, expected, names, checked)
    like = next(a for a, c in zip((probs, labels, grad_loss), checked, strict=True) if c)
    return da.blockwise(
        task, "ij", probs, "ij", labels, "i", grad_loss, "i",
        dtype=probs.dtype, meta=meta(like, 2, probs.dtype),
    )  # fmt: skip
