"""What each public operation does with each backend, dtype and array kind.

An operation declares its *dtype rule* once, beside its definition (:func:`declare`): a
function from an input dtype to the dtype of the result that raises what the operation
raises for a dtype it refuses. Wherever the operation has a check of its own, the rule
*is* that check (:func:`checked` wraps :func:`gpukit._dispatch.dtypes.check` with the
operation's accepted dtypes; linear algebra's ``solve_dtype``, the FFTs' working dtypes),
so the matrix and the code cannot disagree on the dtypes. Which array kinds an operation
takes is not declared: it follows from the kind registry (an operation runs on sharded
or Dask arrays exactly when :func:`gpukit._dispatch.kinds.implementation_of` finds an
implementation), except where a declaration states otherwise (an implementation that
only explains a refusal). ``tests/test_capabilities.py`` calls every cell, the cupy
backend's included, and checks it against :func:`matrix`.

The public query, ``gk.capabilities()``, lives in :mod:`gpukit._capabilities`, above the
areas whose declarations it loads.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from . import dtypes as _dtypes
from .kinds import implementation_of

__all__ = [
    "BACKENDS",
    "DTYPES",
    "KINDS",
    "Capability",
    "Declaration",
    "Rule",
    "checked",
    "declarations",
    "declare",
    "kinds_of",
    "matrix",
    "same",
]

#: The dtypes every backend holds (:data:`gpukit._dispatch.dtypes.NUMERIC_CHARS`), in order.
DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
#: The built-in backends.
BACKENDS: tuple[str, ...] = ("numpy", "cupy")
#: The array kinds: the backend's own array (``numpy.ndarray``, ``cupy.ndarray``), host
#: data given while a device backend is active (moved, counted and guarded), a
#: :class:`gpukit.ShardedArray` over the backend's devices, a Dask array of its arrays.
KINDS: tuple[str, ...] = ("array", "host", "sharded", "dask")

#: Input dtype -> result dtype; raises the operation's exception for a refused dtype.
Rule = Callable[[np.dtype], Any]


class Capability(NamedTuple):
    """One cell of the capability matrix: an operation on one backend, kind and dtype.

    Attributes
    ----------
    operation : str
        The public name, ``"gk.linalg.solve"``.
    backend : str
        ``"numpy"`` or ``"cupy"``.
    kind : str
        ``"array"`` (the backend's own array), ``"host"`` (NumPy data while the cupy
        backend is active), ``"sharded"`` or ``"dask"``.
    dtype : str
        The input's dtype, ``"float16"``.
    runs : bool
        Whether the call runs.
    result : str or None
        The result's dtype when it runs (of its first array when it returns several).
    error : type or None
        The exception a refused call raises.
    note : str
        What to know about a call that runs (empty when nothing).

    Examples
    --------
    >>> import gpukit as gk
    >>> cell = gk.capabilities("gk.matmul", backend="numpy", dtype="int8", kind="array")[0]
    >>> cell.runs, cell.result, cell.status
    (True, 'int8', 'runs')
    """

    operation: str
    backend: str
    kind: str
    dtype: str
    runs: bool
    result: str | None
    error: type[Exception] | None
    note: str

    @property
    def status(self) -> str:
        """``"runs"``, ``"runs: <note>"`` or ``"refused: <exception type>"``."""
        if not self.runs:
            return f"refused: {getattr(self.error, '__name__', 'Exception')}"
        return f"runs: {self.note}" if self.note else "runs"


@dataclass(frozen=True)
class Declaration:
    """What :func:`declare` recorded for one operation."""

    operation: str
    rule: Rule
    where: Mapping[str, type[Exception]] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)


_declared: dict[str, Declaration] = {}


def declare(
    operation: str,
    rule: Rule,
    *,
    where: Mapping[str, type[Exception]] | None = None,
    notes: Mapping[str, str] | None = None,
) -> None:
    """Declare ``operation``'s capabilities (see the module docstring).

    Parameters
    ----------
    operation : str
        The public name (``"gk.fft.rfft"``), as in its error messages.
    rule : callable
        ``rule(dtype) -> result dtype``, raising the operation's exception for a dtype
        it refuses; for every backend and kind unless ``where`` says otherwise.
    where : mapping of str to exception type, optional
        Where the dtypes ``rule`` accepts are refused all the same, with that exception
        (an in-place update of host data on a device backend, a kind's implementation
        that only explains a refusal); keyed by ``"<kind>"``, ``"<backend>"`` or
        ``"<backend>/<kind>"``, the most specific winning.
    notes : mapping of str to str, optional
        What to know about the calls that run, keyed like ``where`` or by a dtype name.
    """
    _declared[operation] = Declaration(operation, rule, dict(where or {}), dict(notes or {}))


def checked(
    op: str,
    name: str = "x",
    accepted: Collection[np.dtype] | None = None,
    then: Callable[[np.dtype], Any] | None = None,
) -> Rule:
    """The rule of an operation whose dtype check is ``dtypes.check(op, name, x, accepted)``.

    The check itself runs on an empty array of each dtype, so the rule refuses what the
    operation refuses, with its exception; ``then`` maps an accepted dtype to the
    result's (the input's own when omitted).

    Examples
    --------
    >>> rule = checked("gk.kernels.matmul_tiled", "a", [np.dtype("float32")])
    >>> rule(np.dtype("float32"))
    dtype('float32')
    >>> rule(np.dtype("int8"))
    Traceback (most recent call last):
    ...
    TypeError: gk.kernels.matmul_tiled: argument 'a' has dtype int8; expected float32
    """

    def rule(dtype: np.dtype) -> Any:
        _dtypes.check(op, name, np.empty(0, dtype), accepted)
        return dtype if then is None else then(dtype)

    return rule


def same(dtype: np.dtype) -> np.dtype:
    """The rule of an operation that takes every dtype and keeps it."""
    return dtype


def declarations() -> dict[str, Declaration]:
    """Every declaration made so far, by operation (a copy)."""
    return dict(_declared)


def kinds_of(backend: str) -> tuple[str, ...]:
    """The kinds that mean something on ``backend`` ("host" is the numpy backend's array)."""
    return KINDS if backend != "numpy" else tuple(k for k in KINDS if k != "host")


def _pick(table: Mapping[str, Any], backend: str, kind: str) -> Any:
    for key in (f"{backend}/{kind}", kind, backend):
        if key in table:
            return table[key]
    return None


def _cells(d: Declaration) -> Iterator[Capability]:
    for backend in BACKENDS:
        for kind in kinds_of(backend):
            refused = _pick(d.where, backend, kind)
            if refused is None and kind in ("sharded", "dask"):
                if implementation_of(d.operation, kind) is None:
                    # the kind's refusal (gpukit._dispatch.kinds.refusal), before any check
                    yield from _refused(d.operation, backend, kind, TypeError)
                    continue
            place_note = _pick(d.notes, backend, kind) or ""
            for name in DTYPES:
                dtype = np.dtype(name)
                try:
                    result = np.dtype(d.rule(dtype))
                except Exception as exc:
                    yield Capability(d.operation, backend, kind, name, False, None, type(exc), "")
                    continue
                if refused is not None:
                    yield Capability(d.operation, backend, kind, name, False, None, refused, "")
                    continue
                note = d.notes.get(name) or _promotion(dtype, result)
                note = "; ".join(n for n in (note, place_note) if n)
                yield Capability(d.operation, backend, kind, name, True, str(result), None, note)


def _refused(op: str, backend: str, kind: str, error: type[Exception]) -> Iterator[Capability]:
    for name in DTYPES:
        yield Capability(op, backend, kind, name, False, None, error, "")


def _promotion(dtype: np.dtype, result: np.dtype) -> str:
    """The note every float16 input computed in single precision gets."""
    if dtype == np.float16 and result.itemsize > 2 and result.kind in "fc":
        return f"computed in {result}"
    return ""


def matrix(operation: str | None = None) -> list[Capability]:
    """Every cell of the declared operations (or of one), in declaration order."""
    chosen = _declared.values() if operation is None else [_declared[operation]]
    return [cell for d in chosen for cell in _cells(d)]
