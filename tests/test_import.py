"""`import gpukit` is cheap: no CuPy, no heavy SciPy submodules, nothing beyond NumPy."""

from __future__ import annotations

from subproc import run_python

HEAVY = ["cupy", "cupyx", "torch", "scipy.linalg", "scipy.sparse", "scipy.fft", "matplotlib"]


def test_import_does_not_import_cupy_or_heavy_scipy():
    code = f"import sys, gpukit; print([m for m in {HEAVY!r} if m in sys.modules])"
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_selecting_numpy_does_not_import_cupy():
    code = (
        "import sys, gpukit as gk; gk.set_backend('numpy'); gk.asarray([1]);"
        "print('cupy' in sys.modules)"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_import_loads_only_gpukit_and_the_standard_library_beyond_numpy():
    """Deterministic stand-in for an import-time budget (timing lives in asv:
    ``bench_core.timeraw_import_gpukit``): after NumPy, ``import gpukit`` may load its own
    modules and standard-library ones, nothing from site-packages."""
    code = (
        "import sys, sysconfig, numpy\n"
        "before = set(sys.modules)\n"
        "import gpukit\n"
        "stdlib = sysconfig.get_paths()['stdlib']\n"
        "for name in sorted(set(sys.modules) - before):\n"
        "    origin = getattr(sys.modules[name], '__file__', None) or ''\n"
        "    if not name.startswith('gpukit') and 'site-packages' in origin:\n"
        "        print(name)\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"import gpukit loaded third-party modules: {proc.stdout}"
