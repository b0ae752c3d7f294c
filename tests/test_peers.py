"""Comparisons with peers: the interleaved pair timing, and ``python -m tools.peers``.

The timing is checked on scripted block times (no clock); the command on the suite's own
``track_ratio`` benchmarks (found as asv finds them) and on a scripted comparison.
Nothing here asserts a speed.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
from typing import ClassVar

import pytest

from asv_bench import bench_core, bench_matmul, peers
from gpukit._bench import timing
from gpukit._bench.timing import Pair, compare
from tools import peers as cli


# -- compare: interleaved pairs, on scripted block times ----------------------------------------
def _scripted(monkeypatch, a_blocks, b_blocks):
    """compare() with each side's blocks taking the scripted seconds; returns the order run."""
    order, script = [], {}

    def time_block(fn, sync, number, idle):
        order.append((script[fn][0], number, idle))
        return next(script[fn][1])

    def a():
        pass

    def b():
        pass

    script[a] = ("a", iter(a_blocks))
    script[b] = ("b", iter(b_blocks))
    monkeypatch.setattr(timing, "calibrate", lambda fn, sync, budget: 3 if fn is a else 5)
    monkeypatch.setattr(timing, "time_block", time_block)
    return a, b, order


def test_compare_alternates_the_sides_and_takes_the_median_per_pair_ratio(monkeypatch):
    a_blocks, b_blocks = [1.0, 2.0, 1.1, 0.9, 1.0], [2.0, 2.0, 2.0, 2.0, 1.0]
    a, b, order = _scripted(monkeypatch, a_blocks, b_blocks)
    p = compare(a, b, pairs=5, idle=0.25)
    assert [side for side, _, _ in order] == ["a", "b", "b", "a", "a", "b", "b", "a", "a", "b"]
    # the same calls per block on both sides (the slower one's calibration), each after the pause
    assert {(number, idle) for _, number, idle in order} == {(5, 0.25)}
    ratios = [x / y for x, y in zip(a_blocks, b_blocks, strict=True)]
    assert p.ratios == pytest.approx(ratios)
    assert p.ratio == pytest.approx(statistics.median(ratios))
    assert p.a_seconds == statistics.median(a_blocks)
    assert p.b_seconds == statistics.median(b_blocks)
    q1, q3 = p.quartiles
    assert min(ratios) <= q1 <= p.ratio <= q3 <= max(ratios)


def test_a_pair_whose_ratios_scatter_is_unstable():
    assert not Pair(1.0, 2.0, (0.5, 0.52, 0.49, 0.5, 0.51)).unstable
    assert Pair(1.0, 2.0, (0.5, 0.1, 0.5, 2.0, 0.5)).unstable
    assert Pair(1.0, 1.0, (1.0,)).quartiles == (1.0, 1.0)


# -- the suite's comparisons, as asv and the command see them -----------------------------------
def test_the_command_runs_exactly_the_ratio_benchmarks_asv_finds():
    discovery = pytest.importorskip("asv_runner.discovery", reason='pip install -e ".[bench]"')
    import os

    suite = os.path.dirname(peers.__file__)
    asv = {
        b.name
        for b in discovery.disc_benchmarks(suite)
        if b.name.split(".")[-1].startswith("track_ratio")
    }
    units = {b.name: b.unit for b in discovery.disc_benchmarks(suite) if b.name in asv}
    ours = {r.name.split("(")[0] for r in cli.discover()}
    assert ours == asv and len(asv) >= 8
    assert set(units.values()) == {"ratio"}


def test_every_comparison_derives_from_the_shared_base():
    classes = {r.cls for r in cli.discover()}
    assert bench_matmul.MatmulRatio in classes
    assert all(issubclass(c, peers.Comparison) for c in classes)


def test_rows_are_named_and_selected_as_asv_names_them():
    rows = cli.select(cli.discover(), [r"MatmulRatio\.track_ratio\('numpy', 8\)"])
    assert [r.name for r in rows] == ["bench_matmul.MatmulRatio.track_ratio('numpy', 8)"]
    assert rows[0].params == ("numpy", 8)
    everything = cli.discover()
    assert cli.select(everything, None) == everything
    assert cli.select(everything, ["no such benchmark"]) == []


# -- running rows, on a scripted comparison -----------------------------------------------------
class Scripted(peers.Comparison):
    """A comparison of two trivial calls; ``kind`` picks what ``setup`` does."""

    params: ClassVar[list] = [["run", "skip", "fail"]]
    param_names: ClassVar[list] = ["kind"]
    block = 1e-4
    idle = 0.0
    torn_down = 0

    def setup(self, kind):
        self.cleanup.callback(self._count)
        if kind == "skip":
            raise NotImplementedError("not here")
        if kind == "fail":
            raise ValueError("broken")
        self.ours, self.peer = (lambda: sum(range(10))), (lambda: sum(range(20)))

    def _count(self):
        type(self).torn_down += 1

    def track_ratio(self, kind):
        return self.ratio(self.ours, self.peer)

    track_ratio.unit = "ratio"

    def target(self, kind):
        return 1e9


@pytest.mark.parametrize("kind", ["run", "skip", "fail"])
def test_a_row_runs_skips_or_fails_and_is_always_torn_down(kind, monkeypatch):
    monkeypatch.setattr(Scripted, "torn_down", 0)
    result = cli.run_row(cli.Row(Scripted, "track_ratio", (kind,)), pairs=3)
    assert Scripted.torn_down == 1
    if kind == "run":
        assert len(result.pair.ratios) == 3 and result.pair.a_seconds > 0
        assert result.target == 1e9 and result.skipped is None and result.failed is None
        assert cli.line(result, 40).endswith("<= 1000000000.00 ok")
    elif kind == "skip":
        assert result.skipped == "not here" and result.pair is None
        assert "n/a: not here" in cli.line(result, 40)
    else:
        assert result.failed == "ValueError: broken"
        assert "failed: ValueError: broken" in cli.line(result, 40)


def test_gpukit_s_cost_over_the_peer_is_taken_from_the_pairs_not_the_two_medians():
    """A millisecond call whose pairs agree (every pair 1.002: 2 us over a 1 ms peer) while
    the two sides' medians, each taken over the machine's drift, differ by 30 us: the
    table and the record give the paired 2 us."""
    row = cli.Row(Scripted, "track_ratio", ("run",))
    result = cli.Result(row, Pair(1.030e-3, 1.000e-3, (1.002, 1.002, 1.002)), target=None)
    assert cli.overhead(result.pair) == pytest.approx(2e-6)
    assert cli.line(result, 50).split()[3] == "2us"
    kept = cli.record([result], [], (0.0, 0.0, 0.0))["rows"][0]
    assert kept["overhead_seconds"] == pytest.approx(2e-6)
    faster = cli.Result(row, Pair(0.9e-6, 1e-6, (0.9, 0.9, 0.9)), target=None)
    assert cli.overhead(faster.pair) == pytest.approx(-0.1e-6)


def test_a_missed_target_and_an_unstable_ratio_are_marked():
    row = cli.Row(Scripted, "track_ratio", ("run",))
    missed = cli.Result(row, Pair(2e-6, 1e-6, (2.0, 2.0, 2.0)), target=1.5)
    text = cli.line(missed, 50)
    assert "2us" in text and "1us" in text and "<= 1.50 MISSED" in text
    shaky = cli.Result(row, Pair(1e-3, 1e-3, (0.5, 1.0, 3.0)), target=None)
    assert "1.000!" in cli.line(shaky, 50)
    skipped = cli.Result(row, skipped="no GPU")
    summary = cli.footer([missed, shaky, skipped])
    assert "targets: 0 of 1 met; 1 of 2 ratios unstable; 1 skipped, 0 failed" in summary


def test_a_cost_target_is_judged_on_the_per_pair_costs_quartiles():
    """CallRatio's goal is gpukit's cost per call, not a ratio. On a 10 us peer: pairs at
    1.10-1.15 (1.0-1.5 us) meet 2 us, pairs at 1.25-1.35 (2.5-3.5 us) miss it, pairs at
    1.10-1.30 (1-3 us) cannot tell; with a ratio target too, both must hold."""
    row = cli.Row(Scripted, "track_ratio", ("run",))

    def result(ratios, **targets):
        return cli.Result(row, Pair(10e-6 * ratios[2], 10e-6, ratios), **targets)

    under = result((1.08, 1.10, 1.12, 1.15, 1.16), overhead_target=2e-6)
    over = result((1.2, 1.25, 1.3, 1.35, 1.4), overhead_target=2e-6)
    either = result((1.0, 1.1, 1.2, 1.3, 1.4), overhead_target=2e-6)
    assert cli.cost_range(under.pair) == pytest.approx((1.0e-6, 1.5e-6))
    assert under.met and cli.line(under, 50).endswith("over <= 2us ok")
    assert over.met is False and cli.line(over, 50).endswith("over <= 2us MISSED")
    assert either.met is None and not either.resolved
    assert cli.line(either, 50).endswith("over <= 2us unresolved (1us to 3us)")
    both = result((1.2, 1.25, 1.3, 1.35, 1.4), target=1.2, overhead_target=5e-6)
    assert both.met is False and cli.line(both, 50).endswith("<= 1.20, over <= 5us MISSED")
    assert "targets: 1 of 3 met, 1 unresolved;" in cli.footer([under, over, either, both])
    kept = cli.record([either], [], (0.0, 0.0, 0.0))["rows"][0]
    assert kept["overhead_target"] == 2e-6 and kept["resolved"] is False
    assert bench_core.CallRatio().overhead_target("numpy", "asarray") == 2e-6


def test_the_command_lists_and_refuses_what_matches_nothing(capsys):
    assert cli.main(["--list", "-b", r"MatmulRatio.*'numpy'"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "bench_matmul.MatmulRatio.track_ratio('numpy', 8)",
        "bench_matmul.MatmulRatio.track_ratio('numpy', 512)",
    ]
    assert cli.main(["-b", "no such benchmark"]) == 2
    assert "nothing matches" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_callgrind_counts_instructions_per_call(capsys):
    # matmul 8x8 against numpy.matmul: gpukit's side runs the peer's call and more
    pattern = r"CallRatio.*\('numpy', 'matmul 8x8 float32'\)"
    assert cli.main(["--callgrind", "--calls", "50", "-b", pattern]) == 0
    out = capsys.readouterr().out
    row = next(x for x in out.splitlines() if "matmul 8x8" in x)
    ours, peer, diff = (float(v) for v in row.split()[-4:-1])
    # each figure is rounded on its own: the difference may be one off theirs
    assert ours > peer > 0 and abs(diff - (ours - peer)) <= 1


def test_callgrind_runs_the_rows_with_string_hashing_fixed(monkeypatch, capsys):
    """The run under valgrind gets PYTHONHASHSEED=0 (a count then compares from run to
    run) unless the caller set one, and one thread for every library."""
    seen = []

    def run(cmd, env, **kwargs):
        seen.append(env)
        return subprocess.CompletedProcess(cmd, 0, stdout="{}\n", stderr="")

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/valgrind")
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    pattern = r"CallRatio.*\('numpy', 'matmul 8x8 float32'\)"
    assert cli.main(["--callgrind", "-b", pattern]) == 0
    monkeypatch.setenv("PYTHONHASHSEED", "123")
    assert cli.main(["--callgrind", "-b", pattern]) == 0
    assert [env["PYTHONHASHSEED"] for env in seen] == ["0", "123"]
    assert all(env["OPENBLAS_NUM_THREADS"] == "1" for env in seen)


# -- the record of a run and its plot -----------------------------------------------------------
def _doc(rows):
    conditions = {
        "date": "2026-01-01 00:00 UTC",
        "commit": "abc1234",
        "processor": "a CPU, 2 cores",
        "machine": "BLAS: x1; load 0.1, 0.1, 0.1; 2 cores",
        "load_before": [0.1, 0.2, 0.3],
        "load_after": [0.4, 0.5, 0.6],
        "command": "python -m tools.peers",
    }
    return {"conditions": conditions, "rows": rows}


def _row(bench, names, params, ratio, target=1.5):
    return {
        "benchmark": bench,
        "param_names": names,
        "params": params,
        "gpukit_seconds": ratio * 1e-3,
        "peer_seconds": 1e-3,
        "ratio": ratio,
        "quartiles": [ratio * 0.9, ratio * 1.1],
        "unstable": False,
        "target": target,
    }


def test_the_record_keeps_the_timed_rows_and_the_conditions(monkeypatch):
    row = cli.Row(Scripted, "track_ratio", ("run",))
    timed = cli.Result(row, Pair(2e-6, 1e-6, (1.0, 2.0, 3.0)), target=1.5)
    doc = cli.record([timed, cli.Result(row, skipped="no GPU")], ["-b", "x"], (1.5, 1.0, 0.5))
    assert len(doc["rows"]) == 1  # the skipped row has nothing to plot
    r = doc["rows"][0]
    assert r["benchmark"] == "Scripted.track_ratio" and r["params"] == ["run"]
    assert r["param_names"] == ["kind"] and r["target"] == 1.5
    assert r["ratio"] == 2.0 and r["quartiles"][0] <= 2.0 <= r["quartiles"][1]
    c = doc["conditions"]
    assert c["load_before"] == [1.5, 1.0, 0.5] and len(c["load_after"]) == 3
    assert c["command"] == "python -m tools.peers -b x" and c["commit"]


def test_panels_put_the_first_varying_parameter_on_x_and_the_last_in_series():
    names = ["kernel", "dtype", "size"]
    rows = [
        _row("K.track_ratio", names, [k, d, s], 1.0)
        for d in ("float32", "float64")
        for k in ("a", "b", "c")
        for s in (64, 256)
    ]
    panels = cli._panels(rows)
    assert [(t, x, s, len(r)) for t, x, s, r in panels] == [
        ("K.track_ratio  (dtype='float32')", 0, 2, 6),
        ("K.track_ratio  (dtype='float64')", 0, 2, 6),
    ]
    one = cli._panels([_row("T.track_ratio", ["backend", "act"], ["numpy", a], 1.0) for a in "xy"])
    assert [(t, x, s) for t, x, s, _ in one] == [("T.track_ratio  (backend='numpy')", 1, None)]


def test_a_saved_record_is_plotted_with_its_conditions(tmp_path):
    text = pytest.importorskip("matplotlib.text", reason='pip install -e ".[bench]"')
    names = ["kernel", "dtype", "size"]
    rows = [_row("K.track_ratio", names, [k, "float32", s], 2.0) for k in "ab" for s in (64, 256)]
    rows.append(_row("T.track_ratio", ["act", "batch"], ["GELU", 32], 0.5, target=None))
    rows.append(_row("T.track_ratio", ["act", "batch"], ["GELU", 256], 0.7, target=None))
    fig = cli.figure(_doc(rows))
    axes = fig.get_axes()
    assert [ax.get_title() for ax in axes] == [
        "K.track_ratio  (dtype='float32')",
        "T.track_ratio  (act='GELU')",
    ]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["a", "b"]
    assert [t.get_text() for t in axes[1].get_xticklabels()] == ["32", "256"]
    assert axes[0].get_yscale() == "log"
    texts = [t.get_text() for t in fig.findobj(text.Text)]
    assert any("abc1234" in t and "load 0.1 before, 0.4 after" in t for t in texts)
    source, png = tmp_path / "r.json", tmp_path / "r.png"
    source.write_text(json.dumps(_doc(rows)))
    assert cli.main(["--from", str(source), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_options_are_checked_before_anything_runs(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["--from", str(tmp_path / "r.json")])
    assert "--from needs --plot" in capsys.readouterr().err
