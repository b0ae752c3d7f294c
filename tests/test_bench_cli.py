"""``gpukit bench``: its JSON report, its table, its plot, and its refusals.

Only the numpy side runs here (``--impls`` narrows it, to keep the suite fast); what is
checked is structure and bookkeeping, never a timing.
"""

from __future__ import annotations

import json

import pytest

from gpukit._bench.cases import CASES, poisson
from gpukit.cli import main

FIELDS = {
    "case",
    "size",
    "shape",
    "impl",
    "device",
    "seconds",
    "throughput",
    "unit",
    "fraction_of_ceiling",
    "time_vs_gpukit",
}


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory) -> tuple[dict, str]:
    """One ``--quick --json --plot`` run of two cases on NumPy and gpukit-numpy."""
    pytest.importorskip("matplotlib", reason='the plot needs matplotlib: pip install -e ".[bench]"')
    png = str(tmp_path_factory.mktemp("bench") / "bench.png")
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(
            ["bench", "--quick", "--json", "--no-progress", "--plot", png,
             "--cases", "matmul,cg", "--impls", "gpukit-numpy,numpy,gpukit-cupy"]
        )  # fmt: skip
    assert status == 0
    return json.loads(out.getvalue()), png


def test_quick_json_has_the_fields(quick_report):
    report, _ = quick_report
    assert set(report) >= {"quick", "machine", "ceilings", "results", "skipped"}
    assert report["quick"] is True
    assert set(report["ceilings"]["cpu"]) >= {"GB/s", "GFLOP/s", "measured_by"}
    assert report["ceilings"]["cpu"]["GB/s"] > 0 and report["ceilings"]["cpu"]["GFLOP/s"] > 0
    rows = report["results"]
    assert {(r["case"], r["impl"]) for r in rows} >= {("matmul", "numpy"), ("cg", "numpy")}
    for r in rows:
        assert set(r) == FIELDS
        assert r["seconds"] > 0 and r["throughput"] > 0
        assert r["unit"] in ("GFLOP/s", "GB/s")
        assert 0 < r["fraction_of_ceiling"]
    sizes = {r["size"] for r in rows if r["case"] == "matmul" and r["impl"] == "numpy"}
    assert sizes == set(CASES[0].quick)


def test_throughput_is_work_over_time(quick_report):
    report, _ = quick_report
    work = {c.name: c.work for c in CASES}
    for r in report["results"]:
        expected = work[r["case"]](r["size"]) / r["seconds"] / 1e9
        assert r["throughput"] == pytest.approx(expected, rel=1e-12)


def test_unavailable_implementations_are_listed_with_a_reason(quick_report):
    report, _ = quick_report
    skipped = {(s["case"], s["impl"]): s["reason"] for s in report["skipped"]}
    import gpukit as gk

    if not gk.available_backends()["cupy"].available:
        assert "gpukit-cupy" not in {r["impl"] for r in report["results"]}
        assert skipped[(None, "gpukit-cupy")]
    for r in report["results"]:
        assert (r["case"], r["impl"]) not in skipped


def test_ratio_is_relative_to_gpukit_on_the_same_device(quick_report):
    report, _ = quick_report
    rows = report["results"]
    for r in rows:
        ours = [g for g in rows if g["impl"] == "gpukit-numpy" and g["case"] == r["case"]
                and g["size"] == r["size"]]  # fmt: skip
        if ours:
            assert r["time_vs_gpukit"] == pytest.approx(r["seconds"] / ours[0]["seconds"])
        else:
            assert r["time_vs_gpukit"] is None


def test_plot_writes_a_png(quick_report):
    _, png = quick_report
    with open(png, "rb") as f:
        head = f.read(8)
    assert head == b"\x89PNG\r\n\x1a\n"
    from matplotlib.image import imread

    h, w, _ = imread(png).shape
    assert w > 800 and h > 400


def test_plot_has_labelled_axes_and_a_legend(quick_report):
    import matplotlib.pyplot as plt

    from gpukit._bench.plot import figure

    report, _ = quick_report
    fig = figure(report)
    try:
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert sorted(ax.get_title() for ax in panels) == ["cg", "matmul"]
        for ax in panels:
            assert ax.get_xlabel() and ax.get_ylabel() in ("GFLOP/s", "GB/s")
        (legend,) = fig.legends
        labels = {t.get_text() for t in legend.get_texts()}
        assert {"numpy", "gpukit-numpy"} <= labels
        assert any("ceiling" in label for label in labels)
    finally:
        plt.close(fig)


def test_table_shows_ceilings_and_rows(capsys):
    assert main(["bench", "--quick", "--no-progress", "--cases", "solve", "--impls", "numpy"]) == 0
    text = capsys.readouterr().out
    assert "Ceilings measured now" in text
    assert "GFLOP/s" in text and "solve" in text and "numpy" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cases", "nosuch"], "unknown case(s) nosuch"),
        (["--impls", "jax"], "unknown implementation"),
    ],
)
def test_unknown_names_are_refused(argv, message, capsys):
    assert main(["bench", "--quick", "--no-progress", *argv]) == 2
    assert message in capsys.readouterr().err


def test_poisson_matrix_is_the_5_point_laplacian(rng):
    import numpy as np

    m = int(rng.integers(3, 9))
    a = poisson(m).toarray().astype(np.float64)
    # reference: the Laplacian as a stencil applied to a random grid function
    u = rng.standard_normal((m, m))
    padded = np.pad(u, 1)
    stencil = 4 * u - padded[:-2, 1:-1] - padded[2:, 1:-1] - padded[1:-1, :-2] - padded[1:-1, 2:]
    assert np.allclose(a @ u.ravel(), stencil.ravel(), rtol=1e-12, atol=1e-12)
