"""Without a GPU the test run lists each skip reason once, with its count."""

from __future__ import annotations

import re
import subprocess
import sys

from subproc import ROOT


def test_skips_are_summarised_one_line_per_reason():
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_sparse.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    reasons = [re.sub(r"^SKIPPED \[\d+\] ", "", line) for line in lines]
    assert len(reasons) == len(set(reasons)), "a reason is listed twice:\n" + "\n".join(lines)
    assert not any(re.match(r"tests/\S+:\d+:", r) for r in reasons), "a per-location line"
    counted = sum(int(re.match(r"SKIPPED \[(\d+)\]", line)[1]) for line in lines)
    summary = re.search(r"(\d+) skipped", proc.stdout)
    assert counted == (int(summary[1]) if summary else 0)
