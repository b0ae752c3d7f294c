"""``gpukit bench --plot``: throughput against size, a panel per case, a line per implementation."""

from __future__ import annotations

import math
import os
from typing import Any

from .cases import CASES

# one colour per implementation, the same in every panel; gpukit solid, peers dashed
_STYLE = {
    "gpukit-numpy": ("tab:blue", "-", "o"),
    "gpukit-cupy": ("tab:green", "-", "o"),
    "numpy": ("tab:orange", "--", "s"),
    "cupy": ("tab:olive", "--", "s"),
    "torch-cpu": ("tab:red", ":", "^"),
    "torch-cuda": ("tab:purple", ":", "^"),
}


#: what to install for --plot: the extras that bring matplotlib
INSTALL = 'pip install "gpukit[bench]" (from a checkout: pip install -e ".[bench]")'


def check(path: str) -> None:
    """Fail before any benchmark runs where ``--plot path`` could not be written after them.

    Raises
    ------
    ImportError
        matplotlib is missing; the message names the install that brings it.
    ValueError
        ``path``'s folder does not exist, or its suffix is no format matplotlib writes.
    """
    pyplot()
    from matplotlib.backend_bases import FigureCanvasBase

    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"--plot {path}: the folder {folder} does not exist")
    suffix = os.path.splitext(path)[1].removeprefix(".").lower()
    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix and suffix not in formats:
        raise ValueError(
            f"--plot {path}: matplotlib writes {', '.join(sorted(formats))}, not .{suffix}"
        )


def plot(report: dict[str, Any], path: str) -> None:
    """Write the report's throughput curves to ``path`` (PNG, or any format matplotlib knows).

    Raises
    ------
    ImportError
        matplotlib is missing; the message names the install that brings it.
    """
    plt = pyplot()
    fig = figure(report)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the file-only Agg backend, or ImportError naming the install."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never needs a display
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(f"the plot (--plot) needs matplotlib: {INSTALL}") from exc
    return plt


def figure(report: dict[str, Any]) -> Any:
    """The report's throughput curves as a matplotlib Figure (one panel per case).

    Raises
    ------
    ImportError
        matplotlib is missing; the message names the install that brings it.
    """
    plt = pyplot()
    from matplotlib import ticker

    axes_of = {c.name: c.axis for c in CASES}
    cases = [c for c in axes_of if any(r["case"] == c for r in report["results"])]
    ncols = min(3, max(1, len(cases)))
    nrows = max(1, math.ceil(len(cases) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 4.0 * nrows), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, case in zip(axes.flat, cases, strict=False):
        rows = [r for r in report["results"] if r["case"] == case]
        unit = rows[0]["unit"]
        for impl in dict.fromkeys(r["impl"] for r in rows):
            pts = sorted((r["size"], r["throughput"]) for r in rows if r["impl"] == impl)
            color, line, marker = _STYLE.get(impl, ("black", "-", "x"))
            (h,) = ax.plot(*zip(*pts, strict=True), line, marker=marker, color=color, label=impl)
            handles.setdefault(impl, h)
        for device, c in report["ceilings"].items():
            h = ax.axhline(c[unit], color="grey", lw=1, ls="-." if device == "gpu" else (0, (1, 3)))
            handles.setdefault(f"{device} ceiling (copy for GB/s, matmul for GFLOP/s)", h)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        sizes = sorted({r["size"] for r in rows})
        ax.set_xticks(sizes, labels=[str(s) for s in sizes])
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(case)
        ax.set_xlabel(axes_of[case])
        ax.set_ylabel(unit)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(cases) :]:
        ax.set_visible(False)
    m = report["machine"]
    where = f"GPU {m['gpu']}" if m["gpu"] else f"{m['processor']}, {m['cpu_count']} cores, no GPU"
    quick = " --quick" if report["quick"] else ""
    fig.suptitle(f"gpukit bench{quick}: throughput against problem size ({where})")
    fig.legend(
        handles.values(),
        handles.keys(),
        loc="lower center",
        ncol=min(len(handles), 4),
        frameon=False,
    )
    rows_of_legend = math.ceil(len(handles) / 4)
    fig.tight_layout(rect=(0, 0.04 + 0.035 * rows_of_legend, 1, 0.96))
    return fig
