"""Runnable cases for every registered kernel, shared by the GPU tests and
tools/run_kernels_once.py, and (:data:`INTERNAL_CASES`) for the internal kernels, which
the sanitizer runs too.

A case is ``(kernel, id, run)``; ``run(to, rng, dtype)`` draws its inputs from
``rng``, places them with ``to`` (identity on the host, a device copy on the GPU),
calls the kernel and returns every array the kernel wrote. Running a case twice
with equally seeded generators gives the same inputs, so a GPU result can be
compared with the NumPy reference's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import gpukit as gk
from gpukit._runtime import device_status
from gpukit.kernels._direct import kernel as _owned

#: Element counts and class counts: none a multiple of a block size.
SIZES = (1, 7, 1000003)
CLASSES = (1, 10007)

OPTIM_CONFIGS = {
    "sgd_update": [
        {"lr": 0.1},
        {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01, "first_step": True},
        {"lr": 0.1, "momentum": 0.9, "dampening": 0.1},
        {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1},
    ],
    "adam_update": [
        {"lr": 1e-2, "step": 1},
        {"lr": 1e-2, "step": 7, "weight_decay": 0.1},
        {"lr": 1e-2, "step": 3, "weight_decay": 0.1, "decoupled": True, "beta1": 0.5},
    ],
}

Run = Callable[[Callable[[Any], Any], np.random.Generator, Any], list[Any]]


def _normal(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _act_shape(size: int) -> tuple[int, int]:
    return (1, size) if size < 1000 else (991, 1009)  # 1000003 = 991 * 1009


def _bias_act(act: str, size: int, backward: bool) -> Run:
    def run(to, rng, dtype):
        shape = _act_shape(size)
        x, b = _normal(rng, shape, dtype, 3.0), _normal(rng, shape[1], dtype)
        if not backward:
            return [gk.kernels.bias_activation(to(x), to(b), act)]
        gy = _normal(rng, shape, dtype)
        return list(gk.kernels.bias_activation_backward(to(gy), to(x), to(b), act))

    return run


def _optim(name: str, cfg: dict, size: int) -> Run:
    def run(to, rng, dtype):
        arrays = [to(_normal(rng, size, dtype)) for _ in range(4)]
        if name == "sgd_update":
            gk.kernels.sgd_update(arrays[0], arrays[1], arrays[2], **cfg)
            return [arrays[0], arrays[2]]
        arrays[3] = arrays[3] * arrays[3]  # exp_avg_sq >= 0
        gk.kernels.adam_update(*arrays, **cfg)
        return [arrays[0], arrays[2], arrays[3]]

    return run


def _xent(rows: int, classes: int, eps: float, backward: bool) -> Run:
    def run(to, rng, dtype):
        logits = _normal(rng, (rows, classes), dtype, 5.0)
        labels = rng.integers(0, classes, rows)
        if not backward:
            return list(
                gk.kernels.softmax_cross_entropy(to(logits), to(labels), label_smoothing=eps)
            )
        probs = np.exp(logits - logits.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        grad_loss = rng.random(rows).astype(dtype)
        return [
            gk.kernels.softmax_cross_entropy_backward(
                to(probs), to(labels.astype(np.int32)), to(grad_loss), label_smoothing=eps
            )
        ]

    return run


def _matmul(m: int, k: int, n: int) -> Run:
    def run(to, rng, dtype):
        a, b = _normal(rng, (m, k), np.float32), _normal(rng, (k, n), np.float32)
        return [gk.kernels.matmul_tiled(to(a), to(b))]

    return run


def _activation_cases(names: tuple[str, str], case: Any) -> list[tuple[str, str, Run]]:
    """``case(act, size, backward)`` for every activation and size, forward (kernel
    ``names[0]``) then backward (``names[1]``)."""
    return [
        (names[backward], f"{act}-{size}", case(act, size, backward))
        for act in gk.kernels.ACTIVATIONS
        for size in SIZES
        for backward in (False, True)
    ]


def _build() -> list[tuple[str, str, Run]]:
    out = _activation_cases(("bias_activation", "bias_activation_backward"), _bias_act)
    for name, configs in OPTIM_CONFIGS.items():
        for i, cfg in enumerate(configs):
            for size in SIZES:
                out.append((name, f"cfg{i}-{size}", _optim(name, cfg, size)))
    for rows in (1, 7, 101):
        for classes in CLASSES:
            for eps in (0.0, 0.1):
                cid = f"{rows}x{classes}-eps{eps}"
                out.append(("softmax_cross_entropy", cid, _xent(rows, classes, eps, False)))
                out.append(("softmax_cross_entropy_backward", cid, _xent(rows, classes, eps, True)))
    # More rows than a GPU's grid has blocks (16 per multiprocessor), so each block takes
    # several rows in turn and reuses its shared memory: the million-row path, cheaply.
    out.append(("softmax_cross_entropy", "4301x3-eps0.0", _xent(4301, 3, 0.0, False)))
    # One long column of rows: 1000003 one-class rows, grid-strided over the blocks.
    out.append(("softmax_cross_entropy", "1000003x1-eps0.0", _xent(1000003, 1, 0.0, False)))
    out.append(("softmax_cross_entropy_backward", "1000003x1-eps0.1", _xent(1000003, 1, 0.1, True)))
    # each tile of matmul_tiled on 132 multiprocessors: 32x32, 64x64, 32x32 down a long k,
    # 128x128
    for m, k, n in ((1, 1, 1), (7, 5, 3), (1001, 999, 1003), (3, 1000003, 1), (1537, 64, 1601)):
        out.append(("matmul_tiled", f"{m}x{k}x{n}", _matmul(m, k, n)))
    return out


#: Every case: (kernel name, case id, run).
CASES: list[tuple[str, str, Run]] = _build()


# -- the internal kernels, called as gk.nn and gk.optim call them ---------------------------
def _act(act: str, size: int, backward: bool) -> Run:
    def run(to, rng, dtype):
        x = to(_normal(rng, _act_shape(size), dtype, 3.0))
        if not backward:
            return [_owned(x, "activation")(x, act, 0.01)]
        gy = to(_normal(rng, x.shape, dtype))
        return [_owned(x, "activation_backward")(gy, x, act, 0.01, False)]

    return run


def _status(to):
    """A fresh device status buffer (gpukit._runtime.device_status's)."""
    return to(device_status.INITIAL.copy())


def _xent_train(rows: int, classes: int, eps: float, reduction: str, flagged: bool) -> Run:
    def run(to, rng, dtype):
        logits = to(_normal(rng, (rows, classes), dtype, 5.0))
        labels = to(rng.integers(0, classes, rows))
        status = _status(to) if flagged else None
        launch = _owned(logits, "softmax_cross_entropy_train")
        return [*launch(logits, labels, eps, reduction, status, 3), *([status] if flagged else [])]

    return run


def _flag(value: float) -> Run:
    def run(to, rng, dtype):
        status = _status(to)
        scalar = to(np.array(value, dtype=dtype))
        _owned(scalar, "flag_nonfinite")(scalar, status, 2)
        return [status]

    return run


def _build_internal() -> list[tuple[str, str, Run]]:
    out = _activation_cases(("activation", "activation_backward"), _act)
    # more rows than the grid has blocks (the last block's counter), and 10007 classes
    for rows, classes in ((1, 1), (7, 10007), (4301, 3)):
        for eps, reduction in ((0.0, "mean"), (0.1, "sum")):
            for flagged in (False, True):
                cid = f"{rows}x{classes}-eps{eps}-{reduction}{'-status' if flagged else ''}"
                run = _xent_train(rows, classes, eps, reduction, flagged)
                out.append(("softmax_cross_entropy_train", cid, run))
    for value in (1.5, np.inf, np.nan):
        out.append(("flag_nonfinite", f"{value}", _flag(value)))
    return out


#: A case per internal kernel configuration (gpukit.backend.kernels.INTERNAL_KERNELS),
#: launched through the backend owning the arrays, as gk.nn does; the values are checked
#: by tests/test_kernels_gpu.py's own tests of each.
INTERNAL_CASES: list[tuple[str, str, Run]] = _build_internal()
