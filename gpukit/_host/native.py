"""gpukit's compiled host kernels (``csrc/kernels.c``), an extension module.

The numpy backend's bias + activation kernels (forward and backward, with the bias
gradient), softmax cross-entropy (forward and backward), the SGD and Adam/AdamW
updates and its linear algebra's test for NaN and inf run here when the module was
built (``hatch_build.py``: every ``pip install`` of gpukit with a C compiler and
Python's headers at hand): one pass over the data, vectorised, a large one (but the
test's) split over the module's own threads (``csrc/pool.h``; the module releases the
GIL during a pass of more than 1,024 elements). Each kernel is a function of
``gpukit._host._kernels`` (``csrc/module.c``) taking arrays (checked: C-contiguous,
aligned, long enough, writable where written; the test also takes Fortran order) or
addresses (unchecked). The module is imported at the first kernel call, not with
gpukit. Without it, or for what it does not take (a dtype other than float32/float64,
a layout other than C order), the callers compute the same with NumPy ufuncs.

A module built from other sources than the ones beside it (edited since the last
build) is not used, with a warning: rebuild with ``pip install -e .`` or
``python gpukit/_host/build_native.py``.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import math
import threading
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np

from ..errors import GpukitWarning
from . import parallel

__all__ = [
    "ACTIVATIONS",
    "adam",
    "adam_scalars",
    "address",
    "all_finite",
    "available",
    "bias_act",
    "bias_act_grad",
    "disabled",
    "plan_bias_act",
    "plan_bias_act_grad",
    "plan_elementwise",
    "plan_rows",
    "plan_sgd",
    "sgd",
    "takes",
    "thresholds",
    "xent",
]

#: The activations as the C sources number them.
ACTIVATIONS = ("identity", "relu", "leaky_relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh")

_SUFFIX = {np.dtype(np.float32): "_f32", np.dtype(np.float64): "_f64"}

_lock = threading.Lock()
_lib: Any = None
_loaded = False
_off: contextvars.ContextVar[bool] = contextvars.ContextVar("gpukit_native_off", default=False)
#: Whether any context has entered :func:`disabled`: until one has, a kernel call reads no
#: ``_off`` (a ContextVar read costs about a tenth of a small pass's Python overhead).
#: Set once, before the context's own ``_off``, and never reset.
_ever_off = False
_local = threading.local()


def _load() -> Any:
    from . import build_native

    rebuild = "pip install -e . or python gpukit/_host/build_native.py"
    try:
        # not "from . import _kernels": where no module is there, that raises a plain
        # ImportError ("cannot import name"), not ModuleNotFoundError
        _kernels = importlib.import_module(f"{__package__}._kernels")
    except ImportError as e:
        if isinstance(e, ModuleNotFoundError) and e.name == f"{__package__}._kernels":
            return None  # not built (no C compiler or no Python.h), or only for another Python
        # not a module (the former ctypes library, _kernels.so), or one that fails to load
        warnings.warn(
            f"gpukit's host kernel module could not be loaded ({e}); the host kernels use "
            f"NumPy ufuncs until it is rebuilt ({rebuild})",
            GpukitWarning,
            stacklevel=3,
        )
        return None
    sources = build_native.SOURCES
    if sources and _kernels.gk_source_hash != build_native.source_hash():
        warnings.warn(
            f"gpukit's host kernel module {_kernels.__file__} was built from other sources "
            f"than the ones beside it; the host kernels use NumPy ufuncs until it is rebuilt "
            f"({rebuild})",
            GpukitWarning,
            stacklevel=3,
        )
        return None
    return _kernels


def _library() -> Any:
    global _lib, _loaded
    if not _loaded:
        with _lock:
            if not _loaded:
                _lib, _loaded = _load(), True
    return _lib


def available() -> bool:
    """Whether the compiled kernels are in use (built, current, not :func:`disabled`)."""
    return not (_ever_off and _off.get()) and _library() is not None


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run the NumPy-ufunc kernels instead, in this context (tests compare the two)."""
    global _ever_off
    _ever_off = True
    token = _off.set(True)
    try:
        yield
    finally:
        _off.reset(token)


def takes(*arrays: np.ndarray | None) -> bool:
    """Whether the compiled kernels take these arrays: in use, one dtype (float32 or
    float64, native byte order), C-contiguous and aligned (None: an absent argument)."""
    if (_ever_off and _off.get()) or _library() is None:
        return False
    dtype = None
    for a in arrays:
        if a is None:
            continue
        if dtype is None:
            dtype = a.dtype
            if dtype not in _SUFFIX:
                return False
        elif a.dtype != dtype:
            return False
        f = a.flags
        if not (f.c_contiguous and f.aligned):
            return False
    return True


def address(a: np.ndarray) -> int:
    """The address of ``a``'s first element, for a C routine (BLAS, LAPACK, a span of a
    compiled kernel's array).

    Taken through the buffer protocol by the compiled module (any strides, read-only
    too), or from ``a.ctypes.data`` where it is not built (a Python object of NumPy's
    per call, several times the cost). The caller keeps ``a`` alive while the routine
    runs.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.arange(4.0)
    >>> address(a) == a.ctypes.data and address(a[1:]) == a.ctypes.data + 8
    True
    """
    lib = _lib if _loaded else _library()
    return a.ctypes.data if lib is None else lib.address(a)


def all_finite(x: Any) -> bool | None:
    """Whether every element of ``x`` is finite, by the compiled kernel; None where it is
    not in use (not built, :func:`disabled`) or does not take ``x``.

    It takes a contiguous array (C or Fortran order) of float32, float64, complex64 or
    complex128 in native byte order, read in one vectorised pass that ends after the first
    block of 2,048 elements holding NaN or inf, with the GIL released for more than 1,024
    elements. On a 4x4 matrix a call costs about a quarter of the instructions of the
    cheapest NumPy check (``count_nonzero(isfinite(x))``), and writes no boolean array.

    Examples
    --------
    >>> import numpy as np
    >>> all_finite(np.array([1.0, np.inf])) in (False, None)
    True
    >>> all_finite(np.arange(4)) is None  # integers: not the kernel's
    True
    """
    if _ever_off and _off.get():
        return None
    lib = _lib if _loaded else _library()
    return None if lib is None else lib.all_finite(x)


def _planned(dtype: np.dtype, n: int) -> bool:
    """Whether a kernel on ``n`` elements of ``dtype`` can be planned: the module built, a
    dtype it takes, something to compute."""
    return _library() is not None and dtype in _SUFFIX and 0 < n


def _per_count(split: Callable[[int], Any]) -> Callable[[], Any]:
    """``split(parallel.n_threads())``, worked out once per thread count: a plan's sizes
    are fixed, and a threadpoolctl limit changes only the count."""
    kept: dict[int, Any] = {}
    n_threads = parallel.n_threads

    def now() -> Any:
        n = n_threads()
        got = kept.get(n)
        if got is None:
            got = kept[n] = split(n)
        return got

    return now


_fns: dict[tuple[str, np.dtype], Any] = {}


def _fn(name: str, dtype: np.dtype) -> Any:
    try:
        return _fns[name, dtype]
    except KeyError:
        fn = _fns[name, dtype] = getattr(_library(), name + _SUFFIX[dtype])
        return fn


def _kept(kind: str, dtype: np.dtype, n: int) -> int:
    """The address of this thread's array of at least ``n`` elements of ``dtype`` kept
    under ``kind``: ``"nz"``, -0.0 everywhere (the bias of a call without one: x + -0.0
    is x, signed zeros too), or ``"part"``, scratch (the backward kernel's partial sums)."""
    key = (kind, dtype)
    have = _local.__dict__.get(key)
    if have is None or have[0].size < n:
        a = np.full(max(n, 1024), -0.0, dtype) if kind == "nz" else np.empty(max(n, 1024), dtype)
        have = _local.__dict__[key] = (a, address(a))
    return have[1]


#: Each activation's single-thread time per element relative to the memory-bound pass
#: parallel.NATIVE_MIN is set for (float32 identity forward), as (float32 forward,
#: float32 backward, float64 forward, float64 backward): a pass splits over the threads
#: from NATIVE_MIN / weight elements, once its work outweighs the hand-off. Medians
#: of seven runs of ``python -m tools.host_split_costs`` (rows of 256 columns, the
#: backward with the bias gradient), rounded down; the record in docs/benchmarks
#: (2026-11-26-host-split-thresholds.md) has them. The identity's backward is its bias
#: gradient alone (``grad_x`` is ``grad_y``): a read-only column sum, which two threads
#: speed up only from about 4M float32 / 256K float64 elements on the 2-core machine
#: (medians of seven, one thread against two: 2026-11-26-idle-5.md).
_WEIGHTS: dict[str, tuple[float, float, float, float]] = {
    "identity": (1, 1 / 64, 1, 1 / 8),
    "relu": (1, 1, 1, 3),
    "leaky_relu": (1, 1, 1, 3),
    "gelu": (6, 8, 25, 32),
    "gelu_tanh": (4, 5, 10, 13),
    "silu": (3, 5, 9, 12),
    "sigmoid": (3, 3, 8, 8),
    "tanh": (4, 3, 13, 9),
}


def _weight(name: str, dtype: np.dtype, backward: bool, of_output: bool = False) -> float:
    """``name``'s cost per element for :func:`parallel.plan`; a gradient from the
    activation's output is a memory-bound pass, as ReLU's."""
    if of_output:
        name = "relu"
    return _WEIGHTS[name][2 * (dtype.itemsize == 8) + backward]


def thresholds() -> dict[tuple[str, str, str], int]:
    """The fewest elements each kernel splits over the host threads, by (activation,
    ``"forward"``/``"backward"``, dtype name): what :func:`bias_act` and
    :func:`bias_act_grad` decide from.

    Examples
    --------
    >>> t = thresholds()
    >>> t["gelu", "forward", "float32"] < t["relu", "forward", "float32"]
    True
    """
    least = parallel.NATIVE_MIN
    return {
        (name, way, dtype.name): math.ceil(least / _weight(name, dtype, way == "backward"))
        for name in ACTIVATIONS
        for way in ("forward", "backward")
        for dtype in _SUFFIX
    }


def _split(rows: int, cols: int, weight: float = 1, threads: int | None = None) -> tuple[int, int]:
    """``(threads, by_cols)`` for a rows x cols pass on the library's threads (``threads``
    available, :func:`parallel.n_threads` when None): spans of columns where there are
    too few rows for the threads (a 1-D input is one row)."""
    threads = parallel.plan(rows * cols, 1, weight, parallel.NATIVE_MIN, threads)
    by_cols = rows < 2 * threads
    return min(threads, cols if by_cols else rows), int(by_cols)


def _grad_split(
    rows: int, cols: int, weight: float, threads: int | None = None
) -> tuple[int, int, int]:
    """:func:`_split`'s ``(threads, by_cols)`` for the backward kernel, with the rows of
    partial sums it fills: one a span of rows (as many as the kernel makes, which may be
    more than its threads: csrc/pool.h), one for spans of columns."""
    threads, by_cols = _split(rows, cols, weight, threads)
    return threads, by_cols, 1 if by_cols else _library().spans(threads, rows)


def _small(n: int, weight: float = 1) -> bool:
    """Whether ``n`` elements of a pass of ``weight`` (:func:`parallel.plan`) are one
    thread's work, decided before asking how many threads there are (a threadpoolctl
    query costs more than the pass itself)."""
    return n * weight < parallel.NATIVE_MIN


def bias_act(x: np.ndarray, b: np.ndarray | None, y: np.ndarray, name: str, slope: float) -> None:
    """``y = act(x + b)`` for C-contiguous 2-D ``x`` and ``y`` (``y`` may be ``x``)."""
    rows, cols = x.shape
    fn = _fn("gk_bias_act", y.dtype)
    if b is None and rows > 1:  # nothing per column: one long row
        rows, cols = 1, rows * cols
    bp = _kept("nz", y.dtype, cols) if b is None else address(b)
    xp, yp = address(x), address(y)
    code = ACTIVATIONS.index(name)
    weight = _weight(name, y.dtype, False)
    if _small(rows * cols, weight):
        fn(xp, bp, yp, rows, cols, cols, code, slope)
        return
    par = _fn("gk_bias_act_par", y.dtype)
    par(xp, bp, yp, rows, cols, cols, code, slope, *_split(rows, cols, weight))


def plan_bias_act(rows: int, cols: int, dtype: np.dtype, name: str, bias: bool = True) -> Any:
    """:func:`bias_act` for C-contiguous ``rows`` x ``cols`` arrays of ``dtype`` with a bias
    (without one where not ``bias``: ``b`` is not read), as a function
    ``(x, b, y, slope) -> bool`` that returns False, having done nothing, where the
    kernels do not take the arrays (:func:`disabled`, a strided or unaligned one); None
    where the module cannot run such a pass (:func:`_planned`). One thread's work is one
    call on the caller's thread; more is split as :func:`bias_act` splits it, the split
    worked out once per thread count."""
    if not _planned(dtype, rows * cols):
        return None
    code, weight = ACTIVATIONS.index(name), _weight(name, dtype, False)
    if not bias:  # nothing per column: one long row, as bias_act
        rows, cols = 1, rows * cols
    # the plan's own -0.0 bias (only read), not the thread's kept one, which may be
    # replaced by a larger one while a plan still points at it; passed by its address
    # (the plan keeps the array): no buffer taken per call
    zeros = None if bias else np.full(cols, -0.0, dtype)
    nz = None if zeros is None else address(zeros)
    # one-thread work calls the kernel from run itself: no Python call in between
    # (a frame costs a tenth of a small pass's own overhead)
    if _small(rows * cols, weight):
        fn, split = _fn("gk_bias_act", dtype), None
    else:
        fn = _fn("gk_bias_act_par", dtype)
        split = _per_count(partial(_split, rows, cols, weight))

    def run(x: np.ndarray, b: Any, y: np.ndarray, slope: float) -> bool:
        if _ever_off and _off.get():
            return False
        try:
            if split is None:
                fn(x, b if bias else nz, y, rows, cols, cols, code, slope)
            else:
                fn(x, b if bias else nz, y, rows, cols, cols, code, slope, *split())
        except ValueError:  # an array the kernel does not take; it did not run
            return False
        return True

    run.zeros = zeros  # type: ignore[attr-defined]  # the array at nz, alive with the plan
    return run


def plan_bias_act_grad(
    rows: int, cols: int, dtype: np.dtype, name: str, of_output: bool, bias: bool, sums: bool = True
) -> Any:
    """:func:`bias_act_grad` for C-contiguous ``rows`` x ``cols`` arrays of ``dtype``
    (``bias``: whether one is given), as a function ``(g, v, b, gx, slope)`` returning
    the bias gradient (``gx`` itself where not ``sums``: an activation layer's pass, no
    column sums formed), or None, having done nothing, where the kernels do not take the
    arrays; None, and split, as :func:`plan_bias_act` (the sums as :func:`bias_act_grad`
    adds them)."""
    if not _planned(dtype, rows * cols):
        return None
    code, weight = ACTIVATIONS.index(name), _weight(name, dtype, True, of_output)
    flag, zeros, wide = int(of_output), np.zeros, dtype == np.float64
    nz = None if bias else np.full(cols, -0.0, dtype)  # as plan_bias_act's
    if _small(rows * cols, weight):
        fn = _fn("gk_bias_act_grad", dtype)

        def call(g: np.ndarray, v: np.ndarray, b: Any, gx: np.ndarray, slope: float) -> Any:
            acc = zeros(cols) if sums else None
            part = _kept("part", dtype, cols)  # the kernel's scratch, sums or not
            fn(g, v, b, gx, acc, part, rows, cols, cols, code, slope, flag)
            return acc

    else:
        par = _fn("gk_bias_act_grad_par", dtype)
        split = _per_count(partial(_grad_split, rows, cols, weight))

        def call(g: np.ndarray, v: np.ndarray, b: Any, gx: np.ndarray, slope: float) -> Any:
            threads, by_cols, spans = split()
            acc = zeros((spans, cols)) if sums else None
            part = _kept("part", dtype, spans * cols)
            par(g, v, b, gx, acc, part, rows, cols, cols, code, slope, flag, threads, by_cols)
            return None if acc is None else acc[0] if spans == 1 else acc.sum(axis=0)

    def run(g: np.ndarray, v: np.ndarray, b: Any, gx: np.ndarray, slope: float) -> Any:
        if _ever_off and _off.get():
            return None
        try:
            acc = call(g, v, b if bias else nz, gx, slope)
        except ValueError:  # an array the kernel does not take; it did not run
            return None
        if acc is None:
            return gx
        return acc if wide else acc.astype(dtype)  # acc is this call's own: no copy

    return run


def bias_act_grad(
    g: np.ndarray,
    v: np.ndarray,
    b: np.ndarray | None,
    gx: np.ndarray,
    name: str,
    slope: float,
    of_output: bool,
    want_bias: bool,
) -> np.ndarray | None:
    """``gx = g * act'(v + b)`` (``of_output``: from ``v = act(z)``) for C-contiguous 2-D
    arrays (``gx`` may be ``g``); returns its column sums if ``want_bias``."""
    rows, cols = g.shape
    fn = _fn("gk_bias_act_grad", gx.dtype)
    bp = _kept("nz", gx.dtype, cols) if b is None else address(b)
    gp, vp, op = address(g), address(v), address(gx)
    code, flag = ACTIVATIONS.index(name), int(of_output)
    weight = _weight(name, gx.dtype, True, of_output)
    args = (gp, vp, bp, op)
    # a column's sum is one span's (by columns) or one row of acc per span, added in
    # span order (by rows): the same for a given number of threads, however they run
    if _small(rows * cols, weight):
        acc = np.zeros((1, cols)) if want_bias else None
        a = None if acc is None else address(acc)
        part = _kept("part", gx.dtype, cols)  # the kernel's scratch, sums or not
        fn(*args, a, part, rows, cols, cols, code, slope, flag)
    else:
        threads, by_cols, spans = _grad_split(rows, cols, weight)
        acc = np.zeros((spans, cols)) if want_bias else None
        a = None if acc is None else address(acc)
        part = _kept("part", gx.dtype, spans * cols)
        par = _fn("gk_bias_act_grad_par", gx.dtype)
        par(*args, a, part, rows, cols, cols, code, slope, flag, threads, by_cols)
    if acc is None:
        return None
    # one row of sums needs no reduction (a reduction call costs more than this pass)
    return (acc[0] if acc.shape[0] == 1 else acc.sum(axis=0)).astype(gx.dtype)


def _by_rows(name: str, matrices: tuple[np.ndarray, ...], per_row: tuple[np.ndarray, ...],
             rows: int, cols: int, eps: float) -> None:  # fmt: skip
    """Run kernel ``name`` on blocks of rows: ``matrices`` are rows x cols, ``per_row``
    one element a row (the first matrix's dtype picks the kernel; int64 labels are 8 bytes),
    in the kernel's argument order ``matrix, per_row..., matrix`` as xent and xent_grad
    take them."""
    dtype = matrices[0].dtype
    args = (*(address(a) for a in (matrices[0], *per_row, matrices[1])), rows, cols, eps)
    if _small(rows * cols):
        _fn(name, dtype)(*args)
        return
    _fn(name + "_par", dtype)(*args, parallel.plan(rows, cols, 1, parallel.NATIVE_MIN))


def plan_rows(name: str, rows: int, cols: int, dtype: np.dtype) -> Any:
    """:func:`xent` (``name`` ``"gk_xent"``) or :func:`xent_grad` (``"gk_xent_grad"``) for
    C-contiguous arrays of ``rows`` x ``cols`` elements of ``dtype``, as a function
    ``(m0, labels, per_row, m1, eps) -> bool`` (``labels`` int64) that returns False,
    having done nothing, where the kernels do not take the arrays; None as
    :func:`plan_bias_act` (split as :func:`xent` splits)."""
    if not _planned(dtype, rows * cols):
        return None
    if _small(rows * cols):
        fn, threads = _fn(name, dtype), None  # one thread: as plan_bias_act's, no call
    else:  # the thread count is the _par kernel's last argument
        fn = _fn(name + "_par", dtype)
        threads = _per_count(lambda n: (parallel.plan(rows, cols, 1, parallel.NATIVE_MIN, n),))

    def run(m0: np.ndarray, labels: np.ndarray, per_row: np.ndarray, m1: np.ndarray,
            eps: float) -> bool:  # fmt: skip
        if _ever_off and _off.get():
            return False
        try:
            if threads is None:
                fn(m0, labels, per_row, m1, rows, cols, eps)
            else:
                fn(m0, labels, per_row, m1, rows, cols, eps, *threads())
        except ValueError:  # an array the kernel does not take; it did not run
            return False
        return True

    return run


def xent(
    logits: np.ndarray, labels: np.ndarray, loss: np.ndarray, probs: np.ndarray, eps: float
) -> None:
    """Softmax cross-entropy's loss per row and probabilities, row by row (``labels``:
    int64, one per row)."""
    _by_rows("gk_xent", (logits, probs), (labels, loss), *logits.shape, eps)


def xent_grad(
    probs: np.ndarray, labels: np.ndarray, grad_loss: np.ndarray, g: np.ndarray, eps: float
) -> None:
    """The gradient of :func:`xent`'s loss, ``grad_loss`` per row, into ``g``."""
    _by_rows("gk_xent_grad", (probs, g), (labels, grad_loss), *probs.shape, eps)


def _elementwise(name: str, arrays: tuple[np.ndarray | None, ...], *scalars: Any) -> None:
    """Kernel ``name`` over flat C-contiguous ``arrays`` of one length and dtype (None: an
    absent one, passed as NULL), in spans of elements on the host threads; ``scalars``
    follow the length. An element's result does not depend on the span it falls in."""
    first = arrays[0]
    n = first.size
    ptrs = [None if a is None else address(a) for a in arrays]
    if _small(n):
        _fn(name, first.dtype)(*ptrs, n, *scalars)
        return
    threads = parallel.plan(n, 1, 1, parallel.NATIVE_MIN)
    _fn(name + "_par", first.dtype)(*ptrs, n, *scalars, threads)


def plan_elementwise(name: str, n: int, dtype: np.dtype) -> Any:
    """Kernel ``name`` (``"gk_sgd"``, ``"gk_adam"``) over flat C-contiguous arrays of ``n``
    elements of ``dtype``, as a function ``(arrays, *scalars) -> bool`` (None: an absent
    array) that returns False, having done nothing, where the kernels do not take the
    arrays; None, and split, as :func:`plan_bias_act`."""
    if not _planned(dtype, n):
        return None
    if _small(n):
        fn, threads = _fn(name, dtype), None  # one thread: as plan_bias_act's, no call
    else:  # the thread count is the _par kernel's last argument
        fn = _fn(name + "_par", dtype)
        threads = _per_count(lambda t: (parallel.plan(n, 1, 1, parallel.NATIVE_MIN, t),))

    def run(arrays: tuple[np.ndarray | None, ...], *scalars: Any) -> bool:
        if _ever_off and _off.get():
            return False
        try:
            if threads is None:
                fn(*arrays, n, *scalars)
            else:
                fn(*arrays, n, *scalars, *threads())
        except ValueError:  # an array the kernel does not take; it did not run
            return False
        return True

    return run


def plan_sgd(n: int, dtype: np.dtype, otherwise: Callable[..., None]) -> Any:
    """:func:`sgd` over flat C-contiguous arrays of ``n`` elements of ``dtype``, as a
    function of ``gpukit.kernels.sgd_update``'s arguments in a backend's order,
    ``(param, grad, momentum_buffer, lr, momentum, dampening, nesterov, weight_decay,
    first_step, status=None)`` (the buffer read with momentum only), that leaves them to
    ``otherwise`` where the kernels do not take the arrays or a flag of ``status`` (the
    device status, gpukit._runtime.device_status) is set; None, and split, as
    :func:`plan_elementwise`. One call level, with the kernel's arguments as they are (no
    tuples made): a small parameter's update costs little more than those calls."""
    if not _planned(dtype, n):
        return None
    if _small(n):
        fn, threads = _fn("gk_sgd", dtype), None
    else:
        fn = _fn("gk_sgd_par", dtype)
        threads = _per_count(lambda t: (parallel.plan(n, 1, 1, parallel.NATIVE_MIN, t),))

    def run(
        param: np.ndarray,
        grad: np.ndarray,
        momentum_buffer: np.ndarray | None,
        lr: float,
        momentum: float,
        dampening: float,
        nesterov: bool,
        weight_decay: float,
        first_step: bool,
        status: np.ndarray | None = None,
    ) -> None:
        if (status is None or not status[0]) and not (_ever_off and _off.get()):
            buf = momentum_buffer if momentum else None
            # the flags are Python bools, which the module reads as the C ints it takes
            try:
                if threads is None:
                    fn(param, grad, buf, n, lr, momentum, dampening, weight_decay, nesterov,
                       first_step)  # fmt: skip
                else:
                    fn(param, grad, buf, n, lr, momentum, dampening, weight_decay, nesterov,
                       first_step, *threads())  # fmt: skip
                return
            except ValueError:  # an array the kernel does not take; it did not run
                pass
        otherwise(
            param, grad, momentum_buffer, lr, momentum, dampening, nesterov, weight_decay,
            first_step, status,
        )  # fmt: skip

    return run


def sgd(
    param: np.ndarray,
    grad: np.ndarray,
    buf: np.ndarray | None,
    lr: float,
    momentum: float,
    dampening: float,
    weight_decay: float,
    nesterov: bool,
    first_step: bool,
) -> None:
    """One ``torch.optim.SGD`` step in place on flat arrays (``buf``: the momentum
    buffer, None without momentum)."""
    flags = int(nesterov), int(first_step)
    _elementwise("gk_sgd", (param, grad, buf), lr, momentum, dampening, weight_decay, *flags)


def adam(
    param: np.ndarray,
    grad: np.ndarray,
    exp_avg: np.ndarray,
    exp_avg_sq: np.ndarray,
    step_size: float,
    inv_bc2: float,
    beta1: float,
    beta2: float,
    eps: float,
    l2: float,
    decay: float,
) -> None:
    """One Adam step in place on flat arrays: ``step_size = lr / (1 - beta1**t)``,
    ``inv_bc2 = 1 / sqrt(1 - beta2**t)``, ``l2`` added to the gradient times the
    parameter (Adam's weight decay), ``decay`` the parameter's factor (AdamW's
    ``1 - lr * weight_decay``; 1 for Adam)."""
    scalars = adam_scalars(step_size, inv_bc2, beta1, beta2, eps, l2, decay)
    _elementwise("gk_adam", (param, grad, exp_avg, exp_avg_sq), *scalars)


def adam_scalars(
    step_size: float, inv_bc2: float, beta1: float, beta2: float, eps: float, l2: float,
    decay: float,
) -> tuple[float, ...]:  # fmt: skip
    """The scalar arguments of the ``gk_adam`` kernel, in its order, from :func:`adam`'s."""
    return 1.0 - beta1, beta2, 1.0 - beta2, eps, l2, decay, step_size, inv_bc2
