"""tools/gpu_lane.py's arithmetic, on a fake clock (nothing timed, no GPU needed)."""

from __future__ import annotations

import json

from tools import gpu_lane


class _Machine:
    """A clock that ``run(k)`` advances by ``k`` units of 3 s, times a speed that changes
    between pairs of runs, as a VM's does."""

    def __init__(self, speeds: list[float]) -> None:
        self.now, self.calls, self.speeds = 0.0, 0, speeds

    def clock(self) -> float:
        return self.now

    def run(self, k: int) -> None:
        speed = self.speeds[(self.calls // 2) % len(self.speeds)]  # one speed per pair
        self.calls += 1
        self.now += 3.0 * k * speed


def test_per_unit_is_the_median_of_interleaved_pairs():
    """The median pair's slope, whatever the speed does between pairs: the difference of
    two medians of series of different speeds would be off."""
    machine = _Machine([1.0, 1.0, 2.0, 1.0, 0.5])
    median, q1, q3 = gpu_lane._per_unit(machine.run, 1, 5, lambda: None, clock=machine.clock)
    assert median == 3.0
    assert q1 <= median <= q3
    assert machine.calls == 1 + 2 * 9  # the warm-up, then nine pairs


def test_a_row_names_its_spread_and_flags_an_unstable_one():
    stable = {"us_per_unit": 80.0, "us_per_unit_quartiles": [78.0, 83.0]}
    assert gpu_lane._timing(stable, "us_per_unit") == "80.0 us (78.0-83.0)"
    wide = {"us_per_unit": 10.0, "us_per_unit_quartiles": [-9.7, 30.0]}
    assert gpu_lane._timing(wide, "us_per_unit").endswith(" unstable")
    assert gpu_lane._timing({"us_per_unit": 42.1}, "us_per_unit") == "42.1 us"  # older lane


def test_cost_section_of_the_summary(tmp_path):
    report = {
        "cg": {
            "unit": "iteration",
            **gpu_lane._row("us_per_unit", (80e-6, 79e-6, 81e-6)),
            "peer": "cupyx cg",
            **gpu_lane._row("peer_us_per_unit", (200e-6, 150e-6, 300e-6)),
        },
        "sharded": {"skipped": "needs 2 devices"},
    }
    (tmp_path / "cost.json").write_text(json.dumps(report))
    rows = gpu_lane._cost(tmp_path)
    assert rows[2] == (
        "| cg | 80.0 us (79.0-81.0) per iteration | cupyx cg | 200.0 us (150.0-300.0) unstable |"
    )
    assert rows[3] == "| sharded | needs 2 devices | | |"
