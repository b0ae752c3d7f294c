"""``gk.capabilities()``: what runs on which backend, dtype and array kind, and its tables.

Importing this module imports every area whose operations declare their capabilities
(:mod:`gpukit._dispatch.capabilities`), so the answer is complete whatever the caller
imported before. The tables of ``gpukit info --capabilities`` and of the docs'
capabilities page are rendered here, from the same cells.
"""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

# imported for their declarations
from . import _matmul, _user_kernels, fft, kernels, linalg, nn, optim, sparse  # noqa: F401
from ._dispatch import capabilities as _declared
from ._dispatch.capabilities import BACKENDS, DTYPES, KINDS, Capability

__all__ = [
    "LEGEND",
    "capabilities",
    "grid",
    "module_of",
    "modules",
    "render_rst",
    "render_text",
    "report",
    "summary",
]

#: How to read the tables (``gpukit info --capabilities`` prints it first).
LEGEND = (
    "Each cell is the dtype of the result for an input of that dtype ('-': refused with "
    "TypeError). A module's table shows the numpy backend's arrays; 'runs on' lists the "
    "other places an operation runs: cupy (CuPy arrays), host (NumPy data while the cupy "
    "backend is active, moved to the device), sharded (gk.ShardedArray), dask (Dask "
    "arrays), with a footnote where they differ."
)

#: Column groups of the module tables: integers of one signedness behave alike.
_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("bool", ("bool",)),
    ("int8-64", ("int8", "int16", "int32", "int64")),
    ("uint8-64", ("uint8", "uint16", "uint32", "uint64")),
    ("float16", ("float16",)),
    ("float32", ("float32",)),
    ("float64", ("float64",)),
    ("complex64", ("complex64",)),
    ("complex128", ("complex128",)),
)
_SHORT = {
    "bool": "bool",
    **{f"int{b}": f"i{b}" for b in (8, 16, 32, 64)},
    **{f"uint{b}": f"u{b}" for b in (8, 16, 32, 64)},
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
    "complex128": "c128",
}
_REFUSED = "-"  # a TypeError, the refusal of every dtype or kind an operation does not take


def module_of(operation: str) -> str:
    """``"gk.fft"`` for ``"gk.fft.rfft"``, ``"gk"`` for ``"gk.matmul"``."""
    return operation.rpartition(".")[0]


def _public(name: str) -> str:
    return "gk" + name[len("gpukit") :] if name == "gpukit" or name.startswith("gpukit.") else name


def _choose(what: str, value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"gk.capabilities: unknown {what} {value!r}; expected one of {allowed}")
    return str(value)


def capabilities(
    operation: str | None = None,
    *,
    backend: str | None = None,
    dtype: Any = None,
    kind: str | None = None,
) -> tuple[Capability, ...]:
    """Which operations run on which backend, dtype and array kind, and what they give.

    Each public operation declares how it treats each dtype beside its definition, and
    which array kinds it takes follows from the implementations it has; a test calls
    every cell, the cupy backend's included, so this answer is the code's.
    ``gpukit info --capabilities`` prints it as tables, as does the Capabilities page.

    Parameters
    ----------
    operation : str, optional
        One operation (``"gk.linalg.solve"``) or a module (``"gk.fft"``; ``"gk"`` for
        the functions of ``gpukit`` itself); ``gpukit.`` works as well as ``gk.``.
        Every operation when omitted.
    backend : {"numpy", "cupy"}, optional
        Only this backend's cells.
    dtype : dtype, optional
        Only this input dtype's cells (one of bool, the integers, float16/32/64,
        complex64/128).
    kind : {"array", "host", "sharded", "dask"}, optional
        Only this array kind's cells: the backend's own array, NumPy data while the
        cupy backend is active (moved to the device), a :class:`gpukit.ShardedArray`,
        a Dask array.

    Returns
    -------
    tuple of Capability
        One named tuple per cell: ``operation``, ``backend``, ``kind``, ``dtype``,
        ``runs``, ``result`` (the result's dtype), ``error`` (the exception type of a
        refused call) and ``note``; ``status`` reads ``"runs"``, ``"runs: <note>"`` or
        ``"refused: <exception>"``.

    Raises
    ------
    ValueError
        An unknown operation, module, backend, dtype or kind (the message lists what
        exists).

    See Also
    --------
    gpukit.available_backends : Which backends this machine can run.

    Examples
    --------
    >>> import gpukit as gk
    >>> cell = gk.capabilities("gk.linalg.solve", backend="cupy", dtype="float16", kind="array")[0]
    >>> cell.status, cell.result
    ('runs: computed in float32', 'float32')
    >>> gk.capabilities("gk.fft.rfft", dtype="complex64", kind="array")[0].status
    'refused: TypeError'
    >>> sorted({c.operation for c in gk.capabilities("gk.kernels", kind="dask") if c.runs})[:2]
    ['gk.kernels.bias_activation', 'gk.kernels.bias_activation_backward']
    """
    declared = _declared.declarations()
    names: list[str] | None = None
    if operation is not None:
        wanted = _public(str(operation))
        if wanted in declared:
            names = [wanted]
        else:
            names = [op for op in declared if module_of(op) == wanted]
            if not names:
                close = difflib.get_close_matches(wanted, [*declared, *modules()], n=3)
                hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
                raise ValueError(
                    f"gk.capabilities: no operation or module {operation!r}{hint} (modules: "
                    f"{', '.join(modules())})"
                )
    if backend is not None:
        _choose("backend", backend, BACKENDS)
    if dtype is not None:
        try:
            dtype = np.dtype(dtype).name
        except TypeError:
            pass
        dtype = _choose("dtype", dtype, DTYPES)
    if kind is not None:
        _choose("kind", kind, KINDS)
    cells = _declared.matrix() if names is None else [c for n in names for c in _declared.matrix(n)]
    return tuple(
        c
        for c in cells
        if (backend is None or c.backend == backend)
        and (dtype is None or c.dtype == dtype)
        and (kind is None or c.kind == kind)
    )


def modules() -> list[str]:
    """The modules of the declared operations: ``"gk"``, then the others by name."""
    return sorted({module_of(op) for op in _declared.declarations()}, key=lambda m: (m != "gk", m))


def _cell(c: Capability, notes: list[str]) -> str:
    """A cell of a table: the result's short dtype, ``-`` for a TypeError, or the
    exception's name; a note as a footnote number."""
    if not c.runs:
        return _REFUSED if c.error is TypeError else getattr(c.error, "__name__", "?")
    text = _SHORT[c.result or ""]
    if c.note:
        if c.note not in notes:
            notes.append(c.note)
        text += f" [{notes.index(c.note) + 1}]"
    return text


def grid(operation: str) -> tuple[list[str], list[list[str]], list[str]]:
    """One operation's every cell: (header, one row per backend and kind, footnotes)."""
    cells = capabilities(operation)
    notes: list[str] = []
    header = ["backend, kind", *(_SHORT[d] for d in DTYPES)]
    rows = []
    for backend in BACKENDS:
        for kind in _declared.kinds_of(backend):
            row = [c for c in cells if c.backend == backend and c.kind == kind]
            rows.append([f"{backend} {kind}", *(_cell(c, notes) for c in row)])
    return header, rows, [f"[{i}] {n}" for i, n in enumerate(notes, 1)]


def summary(module: str) -> tuple[list[str], list[list[str]], list[str]]:
    """One module's table: (header, one row per operation, footnotes).

    The dtype columns are the numpy backend's arrays; "runs on" lists the other places
    the operation runs with the same results (a footnote says where it differs).
    """
    notes: list[str] = []
    header = ["operation", *(g for g, _ in _GROUPS), "runs on"]
    rows = []
    for op in (op for op in _declared.declarations() if module_of(op) == _public(module)):
        cells = capabilities(op)
        by_place: dict[tuple[str, str], list[Capability]] = {}
        for c in cells:
            by_place.setdefault((c.backend, c.kind), []).append(c)
        reference = by_place.pop(("numpy", "array"))
        row = [op]
        for _, members in _GROUPS:
            texts = [_cell(c, notes) for c in reference if c.dtype in members]
            row.append("/".join(dict.fromkeys(texts)))
        row.append(", ".join(_elsewhere(reference, by_place, notes)))
        rows.append(row)
    return header, rows, [f"[{i}] {n}" for i, n in enumerate(notes, 1)]


def _elsewhere(
    reference: list[Capability],
    places: dict[tuple[str, str], list[Capability]],
    notes: list[str],
) -> list[str]:
    """Where else than on the numpy backend's arrays an operation runs: ``cupy`` (its
    arrays), ``host`` (NumPy data on cupy), ``sharded``, ``dask`` (a backend named when
    only one runs it), each with a footnote where its cells differ from the reference's
    or carry notes of their own."""
    verdicts: dict[tuple[str, str], str | None] = {}
    for (backend, kind), cells in places.items():
        if not any(c.runs for c in cells):
            errors = dict.fromkeys(getattr(c.error, "__name__", "?") for c in cells)
            errors.pop("TypeError", None)  # the kind's or the dtype's refusal
            verdicts[backend, kind] = f"({', '.join(errors)})" if errors else None
            continue
        diff = [
            f"{c.dtype}: {c.status}"
            for c, r in zip(cells, reference, strict=True)
            if (c.runs, c.result, c.error) != (r.runs, r.result, r.error)
        ]
        own = dict.fromkeys(a for c in cells if c.runs for a in c.note.split("; ") if a)
        extra = [a for a in own if a not in {a for r in reference for a in r.note.split("; ")}]
        note = "; ".join([*extra, *diff])
        if note and note not in notes:
            notes.append(note)
        verdicts[backend, kind] = f"[{notes.index(note) + 1}]" if note else ""
    out = []
    for kind in KINDS:
        found = {b: v for (b, k), v in verdicts.items() if k == kind and v is not None}
        label = "cupy" if kind == "array" else kind
        if len(set(found.values())) == 1 and len(found) == sum(k == kind for _, k in verdicts):
            out.append(f"{label} {next(iter(found.values()))}".strip())
        else:
            out += [f"{label} ({b}) {v}".strip() for b, v in found.items()]
    return out


def render_text(header: list[str], rows: list[list[str]], footnotes: list[str]) -> str:
    """A table as aligned plain text, footnotes below."""
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(t.ljust(w) for t, w in zip(row, widths, strict=True)).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths), *map(line, rows)]
    return "\n".join([*out, *footnotes])


def render_rst(header: list[str], rows: list[list[str]], footnotes: list[str]) -> str:
    """A table as an RST ``list-table``, footnotes as a paragraph list below."""
    out = [".. list-table::", "   :header-rows: 1", ""]
    for r in (header, *rows):
        out += [f"   * - {_literal(r[0])}", *(f"     - {_literal(t)}" for t in r[1:])]
    if footnotes:
        out += ["", *(f"| {n}" for n in footnotes)]
    return "\n".join(out) + "\n"


def _literal(text: str) -> str:
    """Table text that RST reads as written (no markup, no empty cells)."""
    return f"``{text}``" if text else "\\ "


def report(operation: str | None = None) -> str:
    """The text of ``gpukit info --capabilities [OPERATION]``: every cell of one
    operation, or the tables of one module or of all of them.

    Raises
    ------
    ValueError
        An unknown operation or module (:func:`capabilities`'s message).
    """
    cells = capabilities(operation)
    found = list(dict.fromkeys(c.operation for c in cells))
    if operation is not None and found == [_public(operation)]:
        return f"{found[0]}\n\n{render_text(*grid(found[0]))}"
    chosen = [m for m in modules() if any(module_of(op) == m for op in found)]
    parts = [textwrap.fill(LEGEND, 88), *(f"{m}\n\n{render_text(*summary(m))}" for m in chosen)]
    return "\n\n".join(parts)
