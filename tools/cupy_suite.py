"""Run CuPy's own test files against the CuPy simulator and sort every failure.

The simulator's fidelity measure (docs/contributing_gpu.rst, "CuPy's own tests"): CuPy's test
files for every module ``tests/cupysim`` provides, from a CuPy checkout at the pinned tag
(v14.2.0), run with the simulator first on the path, one pytest process per file with a
timeout. Each failing test is either outside the simulator's stated scope (``OUT_OF_SCOPE``
below, mirrored with its reasons in the contributing page) or a fidelity bug. A file whose
process dies (a signal) or runs past the timeout is *crashed*; the tests it finished still
count. CuPy's tests are read from the checkout and run, never copied here.

.. code-block:: console

   $ git clone --branch v14.2.0 --depth 1 https://github.com/cupy/cupy /tmp/cupy-src
   $ python tools/cupy_suite.py /tmp/cupy-src --table cupy_suite.rst
   $ python tools/cupy_suite.py /tmp/cupy-src --files cuda_tests/test_stream.py -v

This module is also the pytest plugin (``-p cupy_suite``) that logs each test's outcome, one
JSON line at a time, so a crashed run keeps what it had.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# CuPy's test files (under tests/) for the modules the simulator provides.
FILES = [
    *(f"cupy_tests/core_tests/test_{n}.py" for n in (
        "core", "elementwise", "reduction", "raw", "userkernel", "flags", "ndarray",
        "ndarray_adv_indexing", "ndarray_indexing", "ndarray_copy_and_view",
        "ndarray_contiguity", "ndarray_conversion", "ndarray_owndata", "ndarray_get",
        "ndarray_reduction", "ndarray_elementwise_op", "ndarray_unary_op", "ndarray_math",
        "ndarray_complex_ops", "ndarray_ufunc",
    )),
    *(f"cupy_tests/creation_tests/test_{n}.py" for n in ("basic", "from_data", "ranges", "matrix")),
    *(f"cupy_tests/cuda_tests/test_{n}.py" for n in (
        "device", "stream", "memory", "pinned_memory", "nccl", "cublas", "compiler", "runtime",
        "driver", "cufft", "nvrtc",
    )),
    "cupy_tests/test_cublas.py",
    "cupy_tests/math_tests/test_matmul.py",
    "cupy_tests/math_tests/test_sumprod.py",
    *(f"cupy_tests/linalg_tests/test_{n}.py" for n in (
        "solve", "decomposition", "product", "norms", "eigenvalue",
    )),
    "cupy_tests/fft_tests/test_fft.py",
    "cupy_tests/fft_tests/test_cache.py",
    "cupyx_tests/test_lapack.py",
    "cupyx_tests/test_pinned_array.py",
]  # fmt: skip

# Failures outside the simulator's stated scope: (test-id pattern, message pattern, reason).
# A failure is out of scope when both patterns match (``re.search``; an empty pattern matches
# everything). docs/contributing_gpu.rst lists the same reasons; everything else is a bug.
OUT_OF_SCOPE: list[tuple[str, str, str]] = []

_LOG = "CUPY_SUITE_LOG"


# -- the plugin half: runs inside each pytest process -------------------------------------
def pytest_runtest_logstart(nodeid, location):
    with open(os.environ[_LOG], "a") as f:
        f.write(json.dumps({"start": nodeid}) + "\n")


def pytest_runtest_logreport(report):
    if report.when != "call" and not (report.failed or report.skipped):
        return
    message = ""
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr)[-500:]
    with open(os.environ[_LOG], "a") as f:
        f.write(json.dumps({"id": report.nodeid, "outcome": report.outcome,
                            "when": report.when, "message": message}) + "\n")  # fmt: skip


def pytest_collectreport(report):
    if report.failed:
        text = str(report.longrepr)
        errors = [s[1:].strip() for s in text.splitlines() if s.startswith("E ")]
        message = errors[-1] if errors else text[-500:]
        with open(os.environ[_LOG], "a") as f:
            f.write(json.dumps({"id": report.nodeid, "outcome": "failed", "when": "collect",
                                "message": message}) + "\n")  # fmt: skip


# -- the driver half ----------------------------------------------------------------------
def out_of_scope(test_id: str, message: str) -> str | None:
    """The reason a failure is outside the simulator's scope, or None (a fidelity bug)."""
    for id_pat, msg_pat, reason in OUT_OF_SCOPE:
        if re.search(id_pat, test_id) and re.search(msg_pat, message):
            return reason
    return None


def run_file(checkout: Path, rel: str, timeout: float, marks: str) -> dict:
    """Runs one CuPy test file under the simulator; returns its tally and failures."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        log.touch()
        env = dict(os.environ)
        env[_LOG] = str(log)
        sim = [ROOT / "tests" / "cupysim", ROOT, ROOT / "backends", ROOT / "tools"]
        env["PYTHONPATH"] = os.pathsep.join(map(str, sim))
        cmd = [sys.executable, "-m", "pytest", str(checkout / "tests" / rel), "-q",
               "-p", "no:cacheprovider", "-p", "cupy_suite", "-m", marks,
               "--rootdir", str(checkout)]  # fmt: skip
        start = time.monotonic()
        try:
            # cwd outside the checkout: its top-level cupy package must not shadow the simulator
            proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True,
                                  timeout=timeout)  # fmt: skip
            status = "ok" if proc.returncode >= 0 else f"signal {-proc.returncode}"
            tail = (proc.stdout + proc.stderr)[-2000:]
        except subprocess.TimeoutExpired as e:
            status = f"timeout {timeout:.0f}s"
            tail = ((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes)
                    else (e.stdout or ""))[-2000:]  # fmt: skip
        lines = [json.loads(s) for s in log.read_text().splitlines() if s.strip()]
    results: dict[str, dict] = {}
    last_start = None
    for entry in lines:
        if "start" in entry:
            last_start = entry["start"]
            continue
        prev = results.get(entry["id"])
        # a teardown failure after a pass counts as a failure
        if prev is None or entry["outcome"] == "failed":
            results[entry["id"]] = entry
    tally = {"passed": 0, "skipped": 0, "fidelity": 0, "out_of_scope": 0}
    failures = []
    for entry in results.values():
        if entry["outcome"] == "passed":
            tally["passed"] += 1
        elif entry["outcome"] == "skipped":
            tally["skipped"] += 1
        else:
            reason = out_of_scope(entry["id"], entry["message"])
            tally["out_of_scope" if reason else "fidelity"] += 1
            failures.append({**entry, "scope": reason})
    crashed = status != "ok"
    return {"file": rel, "status": status, "seconds": round(time.monotonic() - start, 1),
            "crashed_in": last_start if crashed else None, "tail": tail if crashed else "",
            **tally, "failures": failures}  # fmt: skip


def table(rows: list[dict]) -> str:
    """The per-file tally as an RST simple table."""
    head = ("file", "passed", "fidelity", "out of scope", "skipped", "crashed")
    body = [(r["file"], str(r["passed"]), str(r["fidelity"]), str(r["out_of_scope"]),
             str(r["skipped"]), "" if r["status"] == "ok" else r["status"])
            for r in rows]  # fmt: skip
    total = ("total", *(str(sum(int(b[i]) for b in body)) for i in range(1, 5)),
             str(sum(r["status"] != "ok" for r in rows)))  # fmt: skip
    body.append(total)
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    rule = "  ".join("=" * w for w in widths)

    def fmt(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([rule, fmt(head), rule, *map(fmt, body[:-1]), rule, fmt(body[-1]), rule])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkout", type=Path, help="CuPy repository checkout (tag v14.2.0)")
    p.add_argument("--files", nargs="*", default=FILES, help="test files under tests/")
    p.add_argument("--timeout", type=float, default=900, help="seconds per file")
    p.add_argument("--marks", default="not slow", help="pytest -m expression")
    p.add_argument("--table", type=Path, help="write the tally here (RST table)")
    p.add_argument("--json", type=Path, help="write every failure here")
    p.add_argument("-v", "--verbose", action="store_true", help="print each fidelity failure")
    args = p.parse_args(argv)
    if not (args.checkout / "tests" / "cupy_tests").is_dir():
        p.error(f"{args.checkout} is not a CuPy checkout (no tests/cupy_tests)")
    rows = []
    for rel in args.files:
        row = run_file(args.checkout, rel, args.timeout, args.marks)
        rows.append(row)
        crashed = row["status"] != "ok"
        crash = f"  CRASHED ({row['status']}) in {row['crashed_in']}" if crashed else ""
        print(f"{rel}: {row['passed']} passed, {row['fidelity']} fidelity, "
              f"{row['out_of_scope']} out of scope, {row['skipped']} skipped "
              f"[{row['seconds']}s]{crash}", flush=True)  # fmt: skip
        if args.verbose:
            for f in row["failures"]:
                if not f["scope"]:
                    print(f"    {f['id']}: {f['message'][:300]}")
            if row["tail"]:
                print(row["tail"])
    text = table(rows)
    print(text)
    if args.table:
        args.table.write_text(text + "\n")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    bad = sum(r["fidelity"] for r in rows) + sum(r["status"] != "ok" for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
