"""`import gpukit` is cheap: no CuPy, no SciPy, nothing beyond NumPy (the one import-cost
check of the suite)."""

from __future__ import annotations

import pytest
from subproc import run_python


def test_selecting_numpy_does_not_import_cupy():
    code = (
        "import sys, gpukit as gk; gk.set_backend('numpy'); gk.asarray([1]);"
        "print('cupy' in sys.modules)"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


@pytest.mark.parametrize("module", ["gpukit", "gpukit.testing"])
def test_import_loads_only_gpukit_and_the_standard_library_beyond_numpy(module):
    """Deterministic stand-in for an import-time budget (timing lives in asv:
    ``bench_core.timeraw_import_gpukit``): after NumPy, ``import gpukit`` (and its testing
    helpers) may load its own modules and standard-library ones, nothing from site-packages:
    no CuPy, no SciPy."""
    code = (
        "import sys, sysconfig, numpy\n"
        "before = set(sys.modules)\n"
        f"import {module}\n"
        "stdlib = sysconfig.get_paths()['stdlib']\n"
        "for name in sorted(set(sys.modules) - before):\n"
        "    origin = getattr(sys.modules[name], '__file__', None) or ''\n"
        "    if not name.startswith('gpukit') and 'site-packages' in origin:\n"
        "        print(name)\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"import {module} loaded third-party modules: {proc.stdout}"


def test_import_leaves_the_host_kernel_module_for_the_first_kernel_call():
    """gpukit imports its compiled host kernels (gpukit._host._kernels) when a kernel
    first runs, not with gpukit or an array."""
    code = (
        "import sys, gpukit as gk; gk.set_backend('numpy'); gk.asarray([1.0]);"
        "print('gpukit._host._kernels' in sys.modules)"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
