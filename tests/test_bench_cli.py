"""``gpukit bench``: its JSON report, its table, its plot, and its refusals.

Only the numpy side runs here (``--impls`` narrows it, to keep the suite fast); what is
checked is structure and bookkeeping, never a timing. The spread, the unstable flag and
shares above the ceiling are checked on scripted timings.
"""

from __future__ import annotations

import importlib
import json
import statistics
import sys
from types import SimpleNamespace

import pytest

import gpukit._bench
from gpukit._bench.cases import CASES, Case
from gpukit._bench.report import render
from gpukit._bench.runners import make
from gpukit._bench.timing import Budget, spread
from gpukit.cli import main

# the module (the package's attribute `run` is the function)
bench_run = importlib.import_module("gpukit._bench.run")

FIELDS = {
    "case",
    "size",
    "shape",
    "impl",
    "device",
    "seconds",
    "seconds_range",
    "spread",
    "blocks",
    "unstable",
    "throughput",
    "unit",
    "fraction_of_ceiling",
    "above_ceiling",
    "time_vs_gpukit",
    "time_vs_gpukit_range",
    "time_vs_gpukit_spread",
    "time_vs_gpukit_unstable",
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
        assert r["above_ceiling"] == (r["fraction_of_ceiling"] > 1)
        low, high = r["seconds_range"]
        assert low <= r["seconds"] <= high and r["blocks"] >= 3
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
    for r in rows:  # gpukit-numpy on the CPU, gpukit-cupy on a GPU (where one is usable)
        ours = [g for g in rows if g["impl"].startswith("gpukit-") and g["case"] == r["case"]
                and g["size"] == r["size"] and g["device"] == r["device"]]  # fmt: skip
        if ours:  # the median of per-round ratios (checked on scripted timings below)
            low, high = r["time_vs_gpukit_range"]
            assert 0 < low <= r["time_vs_gpukit"] <= high
            if r["impl"] == ours[0]["impl"]:
                assert r["time_vs_gpukit"] == 1.0 and r["time_vs_gpukit_spread"] == 0.0
        else:
            assert r["time_vs_gpukit"] is None and r["time_vs_gpukit_range"] is None


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


# -- --plot is checked before anything runs ----------------------------------------------------
def _must_not_run(**kwargs):
    raise AssertionError("the benchmarks ran before --plot was checked")


def test_plot_without_matplotlib_fails_first_and_names_the_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # not importable
    monkeypatch.setattr(gpukit._bench, "run", _must_not_run)
    status = main(["bench", "--quick", "--no-progress", "--plot", str(tmp_path / "b.png")])
    assert status == 1
    err = capsys.readouterr().err
    assert "needs matplotlib" in err and 'pip install "gpukit[bench]"' in err
    assert not (tmp_path / "b.png").exists()


@pytest.mark.parametrize(
    ("name", "message"), [("missing/b.png", "does not exist"), ("b.nosuchformat", "not .nosuch")]
)
def test_plot_path_that_cannot_be_written_fails_first(name, message, monkeypatch, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason='the plot needs matplotlib: pip install -e ".[bench]"')
    monkeypatch.setattr(gpukit._bench, "run", _must_not_run)
    assert main(["bench", "--quick", "--no-progress", "--plot", str(tmp_path / name)]) == 2
    assert message in capsys.readouterr().err


# -- spread, stability and the ceiling, on scripted timings --------------------------------------
def test_spread_follows_pyperf_rules():
    steady = [1.0, 1.05, 0.95, 1.0, 1.02]
    s = spread(steady)
    assert s.median == statistics.median(steady) and (s.low, s.high) == (0.95, 1.05)
    assert s.rel_stdev == pytest.approx(statistics.stdev(steady) / statistics.mean(steady))
    assert s.n == 5 and not s.unstable
    assert spread([1.0, 1.3, 0.8, 1.0, 1.0]).unstable  # standard deviation 17% of the mean
    # standard deviation under 10% of the mean, but one sample 98% above it
    one_off = [1.0] * 99 + [2.0]
    assert statistics.stdev(one_off) / statistics.mean(one_off) < 0.10
    assert spread(one_off).unstable
    with pytest.raises(ValueError, match="no samples"):
        spread([])


def _scripted_case(script: dict[str, list[float]]) -> Case:
    """A case whose "call" returns the next scripted block time of its runner (1e9 FLOPs)."""

    def build(runner, size):
        times = iter(script[runner.name])

        def call():
            t = next(times)
            if t is None:
                raise RuntimeError("device lost")
            return t

        return call

    return Case("fake", "n", (1,), (1,), "GFLOP/s", lambda n: 1e9, lambda n: "fake", build)


def _time_scripted(monkeypatch, script, ceiling=None):
    # no clock: each block "takes" what the runner's script says
    monkeypatch.setattr(bench_run, "calibrate", lambda fn, sync, budget: 1)
    monkeypatch.setattr(bench_run, "time_block", lambda fn, sync, number, idle: fn())
    runners = [make(name) for name in script]
    rounds = len(next(iter(script.values())))
    skipped: list[dict] = []
    ceilings = {"cpu": {"GFLOP/s": ceiling}} if ceiling else {}
    budget = Budget(block=0.0, rounds=rounds, idle=0.0)
    rows = bench_run._time_size(_scripted_case(script), 1, runners, budget, ceilings, skipped)
    return {r["impl"]: r for r in rows}, skipped


def test_rows_carry_the_spread_and_per_round_ratios(monkeypatch):
    ours, peer = [1.0, 1.02, 0.98, 1.0, 1.01], [2.0, 2.1, 1.9, 2.0, 2.04]
    rows, skipped = _time_scripted(monkeypatch, {"gpukit-numpy": ours, "numpy": peer})
    assert not skipped
    r = rows["numpy"]
    assert r["seconds"] == statistics.median(peer)
    assert r["seconds_range"] == [min(peer), max(peer)] and r["blocks"] == len(peer)
    assert r["spread"] == pytest.approx(statistics.stdev(peer) / statistics.mean(peer))
    assert r["throughput"] == pytest.approx(1.0 / statistics.median(peer))
    assert not r["unstable"] and not r["time_vs_gpukit_unstable"]
    ratios = [p / g for p, g in zip(peer, ours, strict=True)]
    assert r["time_vs_gpukit"] == pytest.approx(statistics.median(ratios))
    assert r["time_vs_gpukit_range"] == pytest.approx([min(ratios), max(ratios)])
    assert rows["gpukit-numpy"]["time_vs_gpukit"] == 1.0
    assert r["fraction_of_ceiling"] is None and not r["above_ceiling"]


def test_a_busy_machine_is_flagged_not_reported(monkeypatch):
    # the peer's blocks jump around (another process took the cores): 0.06x one round, 4.5x
    # another; the median ratio alone would look like a result
    ours, peer = [1.0, 1.0, 1.0, 1.0, 1.0], [2.0, 0.06, 2.0, 4.5, 2.0]
    rows, _ = _time_scripted(monkeypatch, {"gpukit-numpy": ours, "numpy": peer})
    r = rows["numpy"]
    assert r["unstable"] and r["time_vs_gpukit_unstable"]
    assert not rows["gpukit-numpy"]["unstable"]
    text = render(_report(list(rows.values())))
    line = next(x for x in text.splitlines() if x.startswith("fake") and " numpy " in x)
    assert line.count("!") == 2  # the time's spread and the ratio's
    assert "WARNING: 1 of 2 rows are unstable" in text


def test_a_share_above_the_ceiling_is_flagged_not_printed(monkeypatch):
    # 1 GFLOP/s measured against a 0.5 GFLOP/s ceiling: 200% is no share
    script = {"gpukit-numpy": [1.0, 1.0, 1.0], "numpy": [4.0, 4.0, 4.0]}
    rows, _ = _time_scripted(monkeypatch, script, ceiling=0.5)
    assert rows["gpukit-numpy"]["fraction_of_ceiling"] == pytest.approx(2.0)
    assert rows["gpukit-numpy"]["above_ceiling"] and not rows["numpy"]["above_ceiling"]
    text = render(_report(list(rows.values())))
    ours = next(x for x in text.splitlines() if x.startswith("fake") and "gpukit-numpy" in x)
    peer = next(x for x in text.splitlines() if x.startswith("fake") and " numpy " in x)
    assert ">100%?" in ours and "200%" not in text
    assert " 50% " in peer  # 0.25 GFLOP/s of 0.5: a real share, printed
    assert "WARNING: 1 of 2 rows run above the measured ceiling" in text


def test_a_runner_failing_between_rounds_is_listed_and_the_others_go_on(monkeypatch):
    script = {"gpukit-numpy": [1.0, 1.0, 1.0, 1.0], "numpy": [2.0, 2.0, None, 2.0]}
    rows, skipped = _time_scripted(monkeypatch, script)
    assert set(rows) == {"gpukit-numpy"} and rows["gpukit-numpy"]["blocks"] == 4
    assert skipped == [
        {"case": "fake", "impl": "numpy", "reason": "failed: RuntimeError: device lost"}
    ]


def _report(rows: list[dict]) -> dict:
    machine = {"processor": "cpu", "cpu_count": 2, "gpu": None, "versions": {}}
    ceilings = {"cpu": {"GB/s": 1.0, "GFLOP/s": 0.5, "measured_by": {"GB/s": "numpy",
                "GFLOP/s": "numpy"}}}  # fmt: skip
    return {"quick": True, "machine": machine, "ceilings": ceilings, "results": rows, "skipped": []}


def test_blocks_are_sized_from_a_warm_call(monkeypatch):
    """The first call (plans, compilation) is not what a block's size comes from: on a
    clock where it takes 100 s and every later one 1 s, a 10 s block holds 10 calls."""
    from gpukit._bench import timing

    clock = {"now": 0.0, "calls": 0}

    def fn():
        clock["now"] += 100.0 if clock["calls"] == 0 else 1.0
        clock["calls"] += 1

    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=lambda: clock["now"]))
    assert timing.calibrate(fn, lambda: None, timing.Budget(block=10.0, rounds=3, idle=0.0)) == 10
    assert clock["calls"] == 2
