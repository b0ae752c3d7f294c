"""A machine that cannot run the cupy backend says why, on the CuPy simulator's failures.

``CUPYSIM_FAIL=libs``: a driver and GPUs, but cuBLAS, cuFFT, cuSOLVER and NVRTC cannot be
loaded (no CUDA toolkit, no CuPy ``[ctk]`` wheels); ``CUPYSIM_FAIL=driver``: no NVIDIA driver.
Under ``GPUKIT_BACKEND=auto`` gpukit falls back to NumPy with the reason in the log and in
``gpukit info``; under ``GPUKIT_BACKEND=cupy`` the first use fails at once with the reason
and the fix. These failures exist only on the simulator; a real GPU machine skips here.
"""

from __future__ import annotations

import pytest
from subproc import ROOT, run_python

from helpers import simulated

pytestmark = pytest.mark.gpu

LIBRARIES = ("cuBLAS", "cuSOLVER", "cuFFT", "NVRTC")


@pytest.fixture(autouse=True)
def _simulator():
    if not simulated():
        pytest.skip("CUPYSIM_FAIL breaks simulated CUDA only (python -m pytest --cupy=sim)")


def _python(code: str, **env: str):
    r = run_python(code, env=env, extra_path=[str(ROOT / "backends")])
    assert r.returncode == 0, r.stderr[-3000:]
    return r


_AUTO = (
    "import logging; logging.basicConfig(level=logging.INFO)\n"
    "import numpy as np, gpukit as gk\n"
    "print(gk.get_backend().name, type(gk.matmul(np.eye(2), np.ones(2))).__module__)\n"
)
_EXPLICIT = (
    "import numpy as np, gpukit as gk\n"
    "try:\n    gk.matmul(np.eye(2), np.ones(2))\n"
    "except gk.BackendUnavailableError as e:\n    print('RAISED', e)\n"
)
_INFO = "import gpukit.cli as cli; cli.main(['info'])"


def test_missing_cuda_libraries_fall_back_to_numpy_under_auto():
    r = _python(_AUTO, CUPYSIM_FAIL="libs")
    assert r.stdout.split() == ["numpy", "numpy"]
    reason = "auto chose numpy because cupy is unavailable: CUDA libraries CuPy needs"
    assert reason in r.stderr
    for lib in LIBRARIES:
        assert f"{lib} (" in r.stderr, lib  # each library named, with its loader's error
    assert "libcublasLt.so" in r.stderr and "libnvrtc.so" in r.stderr
    info = _python(_INFO, CUPYSIM_FAIL="libs").stdout
    assert "Selected: numpy" in info
    cupy_line = next(line for line in info.splitlines() if line.strip().startswith("cupy "))
    assert "unavailable" in cupy_line and all(f"{lib} (" in cupy_line for lib in LIBRARIES)


def test_missing_cuda_libraries_fail_at_once_when_cupy_is_named():
    out = _python(_EXPLICIT, CUPYSIM_FAIL="libs", GPUKIT_BACKEND="cupy").stdout
    assert out.startswith("RAISED backend 'cupy' cannot run here")
    assert "CUDA libraries CuPy needs cannot be loaded" in out
    assert all(f"{lib} (" in out for lib in LIBRARIES)
    assert 'pip install "gpukit[cuda13]"' in out and "GPUKIT_BACKEND=numpy" in out


def test_no_driver_falls_back_under_auto_and_fails_when_named():
    r = _python(_AUTO, CUPYSIM_FAIL="driver")
    assert r.stdout.split() == ["numpy", "numpy"]
    assert "auto chose numpy because cupy is unavailable: no NVIDIA driver found" in r.stderr
    info = _python(_INFO, CUPYSIM_FAIL="driver").stdout
    assert "no NVIDIA driver found" in info and "Selected: numpy" in info
    assert "cuda_driver   none" in info
    out = _python(_EXPLICIT, CUPYSIM_FAIL="driver", GPUKIT_BACKEND="cupy").stdout
    assert out.startswith("RAISED backend 'cupy' cannot run here: no NVIDIA driver found")
    assert "install its driver" in out and "GPUKIT_BACKEND=numpy" in out
