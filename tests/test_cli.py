"""`gpukit info` and `python -m gpukit info` report backends, selection, devices, versions."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from subproc import ROOT, run_python

import gpukit as gk


def test_info_json_has_every_field():
    proc = run_python("from gpukit.cli import main; main(['info', '--json'])")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["gpukit"] == gk.__version__
    assert {"numpy", "cupy"} <= set(info["backends"])
    assert info["backends"]["numpy"]["available"] is True
    cupy = info["backends"]["cupy"]
    if not cupy["available"]:
        assert cupy["reason"]  # the underlying cause, e.g. cudaErrorInsufficientDriver
    assert info["selected"]["name"] in info["backends"]
    assert "auto" in info["selected"]["reason"]
    assert info["devices"] and {"device", "name", "memory_total", "compute_capability"} <= set(
        info["devices"][0]
    )
    assert {"numpy", "scipy"} <= set(info["versions"])
    if "cupy" in info["versions"]:  # CuPy imports: the CUDA versions it sees, even without a GPU
        assert {"cuda_runtime", "cuda_driver"} <= set(info["versions"])
        if not cupy["available"] and "InsufficientDriver" in cupy["reason"]:
            assert info["versions"]["cuda_driver"] == "none"
    assert "threads" in info["blas"] and "name" in info["blas"]


def test_info_text_via_python_m():
    proc = subprocess.run(
        [sys.executable, "-m", "gpukit", "info"],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "GPUKIT_BACKEND": "numpy"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for heading in ("Backends:", "Selected: numpy", "Devices:", "Versions:", "blas"):
        assert heading in out
    assert "numpy:0" in out


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "allow"),
        ("disallow", "disallow (GPUKIT_TRANSFER_GUARD=disallow)"),
        ("sometimes", "misconfigured: GPUKIT_TRANSFER_GUARD must be one of allow, log, disallow; "
         "got 'sometimes'"),
    ],
)  # fmt: skip
def test_info_shows_the_transfer_guard(value, shown):
    env = {"GPUKIT_BACKEND": "numpy"} | ({"GPUKIT_TRANSFER_GUARD": value} if value else {})
    proc = run_python("from gpukit.cli import main; main(['info'])", env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"  implicit host/device transfers (the transfer guard): {shown}\n" in proc.stdout
    proc = run_python("from gpukit.cli import main; main(['info', '--json'])", env=env)
    assert json.loads(proc.stdout)["settings"]["transfer_guard"] == shown


@pytest.mark.parametrize("args", [["info"], ["info", "--json"], ["bench", "--list"]])
def test_a_reader_that_stops_early_ends_the_command_quietly(args):
    """``gpukit info | head``: the pipe is closed before gpukit writes. Python's advice for
    SIGPIPE: no traceback, exit status 1."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpukit", *args],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "GPUKIT_BACKEND": "numpy"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader is gone before the command has printed anything
    _, err = proc.communicate(timeout=120)
    assert err.decode() == ""
    assert proc.returncode == 1


def test_info_reports_an_unknown_selection_instead_of_crashing():
    proc = run_python(
        "from gpukit.cli import main; main(['info', '--json'])", env={"GPUKIT_BACKEND": "tpu"}
    )
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["selected"]["name"] is None
    assert "unknown gpukit backend 'tpu'" in info["selected"]["reason"]


def test_unknown_subcommand_exits_with_usage():
    proc = run_python("from gpukit.cli import main; main(['frobnicate'])")
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


def test_info_reports_a_malformed_memory_limit_instead_of_crashing():
    proc = run_python(
        "from gpukit.cli import main; main(['info', '--json'])",
        env={"GPUKIT_MEMORY_LIMIT": "lots", "GPUKIT_BACKEND": "numpy"},
    )
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    numpy = info["backends"]["numpy"]
    assert not numpy["available"] and "GPUKIT_MEMORY_LIMIT" in numpy["reason"]
    assert info["selected"]["name"] is None
    assert "'lots'" in info["selected"]["reason"]


def test_version_flag_prints_the_package_version(capsys):
    import pytest

    from gpukit.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"gpukit {gk.__version__}"


def test_bench_list_names_every_case_and_implementation(capsys):
    from gpukit._bench.cases import CASES
    from gpukit._bench.runners import NAMES
    from gpukit.cli import main

    assert main(["bench", "--list"]) == 0
    out = capsys.readouterr().out
    cases = out.split("implementations (--impls):")[0]
    impls = out.split("implementations (--impls):")[1].split()
    assert [line.split()[0] for line in cases.splitlines()[1:]] == [c.name for c in CASES]
    assert impls == NAMES


@pytest.mark.parametrize("bad", ["0", "1_0"])
def test_info_reports_a_malformed_cpu_device_count_and_the_fix(bad):
    proc = run_python(
        "from gpukit.cli import main; main(['info'])",
        env={"GPUKIT_CPU_DEVICES": bad, "GPUKIT_BACKEND": "numpy"},  # auto would take a GPU
    )
    assert proc.returncode == 0, proc.stderr
    numpy_line = next(line for line in proc.stdout.splitlines() if line.startswith("  numpy "))
    assert "unavailable" in numpy_line and f"GPUKIT_CPU_DEVICES={bad!r}" in numpy_line
    assert "Fix: set GPUKIT_CPU_DEVICES to a whole number from 1 to 1024" in numpy_line
    assert "Selected: None" in proc.stdout


def test_info_capabilities_prints_every_module_table():
    proc = run_python("from gpukit.cli import main; main(['info', '--capabilities'])")
    assert proc.returncode == 0, proc.stderr
    for module in ("gk", "gk.fft", "gk.linalg", "gk.nn"):
        assert f"\n{module}\n" in proc.stdout
    assert "gk.linalg.solve " in proc.stdout and "computed in float32" in proc.stdout


def test_info_capabilities_of_one_operation_prints_its_every_cell():
    proc = run_python(
        "from gpukit.cli import main; main(['info', '--capabilities', 'gpukit.kernels.sgd_update'])"
    )
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("  ")[0]: line.split() for line in proc.stdout.splitlines()}
    assert rows["cupy host"][-4:-2] == ["ValueError", "ValueError"]  # float32, float64
    assert rows["numpy array"][2:] == [*["-"] * 10, "f32", "f64", "-", "-"]
    assert "gk.fft.fft " not in proc.stdout


def test_info_capabilities_json_and_unknown_operations():
    code = (
        "import sys; from gpukit.cli import main; "
        "sys.exit(main(['info', '--json', '--capabilities', {!r}]))"
    )
    proc = run_python(code.format("gk.fft.rfft"))
    cells = json.loads(proc.stdout)
    assert {c["operation"] for c in cells} == {"gk.fft.rfft"}
    cell = next(c for c in cells if c["dtype"] == "complex64" and c["kind"] == "array")
    assert cell["status"] == "refused: TypeError" and cell["error"] == "TypeError"
    proc = run_python(code.format("gk.linalg.slove"))
    assert proc.returncode == 2 and "did you mean 'gk.linalg.solve'" in proc.stderr
