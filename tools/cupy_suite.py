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
    "cupy_tests/math_tests/test_arithmetic.py",
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
# A failure is out of scope when both patterns match (``re.search`` on the test id and on the
# whole failure message; an empty pattern matches everything). docs/contributing_gpu.rst lists
# the same reasons; every other failure is a fidelity bug.
_PRIVATE = r"'cupy(\.\w+)*\._\w*'|has no attribute '_\w+'|cannot import name '_\w+'"
_MISSING_PUBLIC = (
    r"module 'cupy[\w.]*' has no attribute|No module named 'cupy[\w.]*'|"
    r"cannot import name '\w+' from 'cupy[\w.]*'|type object '(Device|Stream|Event|"
    r"ExternalStream|MemoryPointer|MemoryPool|PinnedMemoryPool|RawModule|RawKernel)' has no|"
    r"'(Device|Stream|Event|ExternalStream|MemoryPointer|PinnedMemoryPointer|BaseMemory|"
    r"PooledPinnedMemory|PinnedMemory|MemoryPool|PinnedMemoryPool|SingleDeviceMemoryPool|"
    r"NcclCommunicator|RawModule|RawKernel|Module|Function|_FFTConfig)' object has no "
    r"attribute|"
    r"unsupported operand type\(s\) for \+: 'PinnedMemoryPointer'"
)
_MISSING_PUBLIC_REASON = (
    "public CuPy API the simulator does not provide: calling it fails loudly "
    "(AttributeError, ImportError), so it cannot hide a bug; it is added when gpukit needs it"
)
_NCCL_UNIQUE_ID_REASON = (
    "NCCL communicators made from a unique id (NcclCommunicator(ndev, commId, rank): one "
    "per process, or per thread meeting at the id) are not simulated: making one fails "
    "loudly (NcclError); gpukit makes its communicators with NcclCommunicator.initAll, "
    "which is"
)
OUT_OF_SCOPE: list[tuple[str, str, str]] = [
    ("", _PRIVATE,
     "CuPy's private internals (names starting with an underscore: its kernel and plan "
     "caches, CUB/cuTENSOR dispatch, compiler back ends): they test CuPy's implementation, "
     "not the API gpukit calls"),
    ("", r"cupy\.cuda\.(cutensor|texture)|ACCELERATOR_CUTENSOR",
     "cuTENSOR and texture memory are not simulated (gpukit uses neither)"),
    (r"(?i)cuda_?array_?interface|dlpack|CuPyGetNDArray|cupy_like", "",
     "exchanging device memory with other libraries (__cuda_array_interface__, DLPack, "
     "__cupy_get_ndarray__): gpukit exchanges none"),
    ("", _MISSING_PUBLIC, _MISSING_PUBLIC_REASON),
    (r"cupy_indices", r"IndexError: index -?\d+ is out of bounds for axis",
     "deliberately stricter: an out-of-bounds integer-array index raises IndexError (CuPy "
     "wraps it modulo the axis length without a word, hiding an indexing bug)"),
    ("", r"a bytes-like object is required, not 'PinnedMemoryPointer'|"
         r"isinstance\(.*PinnedMemoryPointer",
     "a pinned MemoryPointer as a Python buffer (numpy.frombuffer(ptr), the .base of "
     "cupyx.empty_pinned arrays): a pure-Python class exports a buffer only from Python "
     "3.12 (PEP 688); the pinned memory itself is modelled"),
    ("", r"StreamHazard",
     "deliberately stricter: an access not ordered after a conflicting access on another "
     "stream or device (cupysim.StreamHazard), which CuPy's test gets away with on a GPU"),
    ("", r"KernelArgumentError: kernel \w+ takes \d+ arguments .*, got \d+",
     "deliberately stricter: a kernel launched with more or fewer arguments than its "
     "parameters (cupysim KernelArgumentError); CuPy passes any number, and the kernel "
     "reads past a short list or ignores the rest of a long one"),
    ("", r"cupysim: (managed memory|stream-ordered allocation) \(cudaMalloc\w+\) is not "
         r"simulated",
     "managed memory (malloc_managed) and stream-ordered allocation (malloc_async) are not "
     "simulated: allocating with them fails loudly (NotImplementedError); gpukit uses the "
     "default memory pool"),
    ("", r"TypeError: Unsupported type <class 'numpy\.ndarray'>",
     "deliberately stricter: a NumPy array given where CuPy uploads it silently "
     "(cupy.asarray inside the function) is refused, a hidden synchronous host-to-device "
     "copy"),
    ("", r"multi-process communicators are not simulated",
     _NCCL_UNIQUE_ID_REASON),
    (r"test_nccl\.py::TestCommSplit::test_4_processes_2_subcomm$", r"exitcode",
     _NCCL_UNIQUE_ID_REASON),
    ("", r"cupysim: multi-GPU cuFFT transforms are not simulated",
     "multi-GPU cuFFT transforms (cupy.fft.config.use_multi_gpus) are not simulated: they "
     "fail loudly (NotImplementedError; set_cufft_gpus is not provided); gpukit's sharded "
     "FFTs use one device's plans. CuPy's tests that fail there leave use_multi_gpus set "
     "for the tests after them"),
    # the driver's context API is not provided; this test calls it in a thread, whose
    # AttributeError ends the thread and leaves the result it asserts on unset
    (r"test_driver\.py::TestDriver::test_ctxGetCurrent_thread$", r"assert 0 == None",
     _MISSING_PUBLIC_REASON),
]  # fmt: skip

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


def resort(row: dict) -> dict:
    """A row of an earlier run, its failures sorted with the current ``OUT_OF_SCOPE``."""
    failures = [{**f, "scope": out_of_scope(f["id"], f["message"])} for f in row["failures"]]
    n_out = sum(f["scope"] is not None for f in failures)
    return {**row, "failures": failures, "out_of_scope": n_out,
            "fidelity": len(failures) - n_out}  # fmt: skip


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

    return "\n".join([rule, fmt(head), rule, *map(fmt, body), rule])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkout", type=Path, nargs="?", help="CuPy checkout (tag v14.2.0)")
    p.add_argument("--resort", type=Path, help="sort a previous --json run's failures again")
    p.add_argument("--files", nargs="*", default=FILES, help="test files under tests/")
    p.add_argument("--timeout", type=float, default=900, help="seconds per file")
    p.add_argument("--marks", default="not slow", help="pytest -m expression")
    p.add_argument("--table", type=Path, help="write the tally here (RST table)")
    p.add_argument("--json", type=Path, help="write every failure here")
    p.add_argument("-v", "--verbose", action="store_true", help="print each fidelity failure")
    args = p.parse_args(argv)
    if args.resort:
        rows = [resort(row) for row in json.loads(args.resort.read_text())]
        args.files = []
    elif args.checkout is None or not (args.checkout / "tests" / "cupy_tests").is_dir():
        p.error(f"{args.checkout} is not a CuPy checkout (no tests/cupy_tests)")
    else:
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
    if args.table:
        args.table.write_text(text + "\n")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    reasons: dict[str, int] = {}
    for row in rows:
        for f in row["failures"]:
            key = f["scope"] or "fidelity bug"
            reasons[key] = reasons.get(key, 0) + 1
    for key, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"{n:6d}  {key[:110]}")
    print(text)
    bad = sum(r["fidelity"] for r in rows) + sum(r["status"] != "ok" for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
