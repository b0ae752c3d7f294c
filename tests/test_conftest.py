"""The suite's own machinery (conftest.py): skips listed once per reason with their count,
the ``rng`` fixture seeded from the test's id, at random on demand, printed on failure."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zlib

import numpy as np
from subproc import ROOT

PROBE = "tests/suite_probe.py"
FAILING = f"{PROBE}::test_fails_printing_its_first_draw"


def _run(*args: str, seed: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "GPUKIT_TEST_SEED"}
    if seed is not None:
        env["GPUKIT_TEST_SEED"] = seed
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-s", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]  # the probe fails
    return proc.stdout


def _seed_and_draw(out: str) -> tuple[int, str]:
    return int(re.search(r"replay with GPUKIT_TEST_SEED=(\d+)", out)[1]), re.search(
        r"first draw (\S+)", out
    )[1]


def test_skips_are_summarised_one_line_per_reason():
    out = _run(PROBE)
    lines = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert lines == ["SKIPPED [3] probe: one reason", "SKIPPED [1] probe: another reason"], out
    assert re.search(r"\b1 failed, 4 skipped\b", out), out


def test_rng_is_seeded_from_the_test_id_unless_asked_otherwise():
    seed, draw = _seed_and_draw(_run(FAILING))
    assert seed == zlib.crc32(FAILING.encode())
    assert float(draw) == np.random.default_rng(seed).random()
    assert _seed_and_draw(_run(FAILING)) == (seed, draw)  # the same on every run
    fresh, fresh_draw = _seed_and_draw(_run(FAILING, "--random-seed"))
    assert fresh != seed  # 63 random bits
    assert _seed_and_draw(_run(FAILING, seed=str(fresh))) == (fresh, fresh_draw)  # replays
    assert _seed_and_draw(_run(FAILING, seed="random"))[0] not in (seed, fresh)
