"""The README's editable install (``pip install -e``) imports gpukit from any working directory.

A clone keeps the repository's name, ``gpukit``, and holds no ``__init__.py``: run from the
folder holding it, Python sees that folder's ``gpukit/`` first on ``sys.path`` (the working
directory). An import hook placed after ``sys.path`` (setuptools' editable install) then loses to
an empty namespace package, and ``gk.linalg`` raises ``AttributeError``; a path entry, as
hatchling's editable install writes (pyproject.toml), finds the real package in the same scan.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What the build reads: the project table, the files it names, the packages.
BUILD_INPUTS = [
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "hatch_build.py",  # compiles the host kernels (gpukit/_host/csrc)
    "gpukit",
    "backends",
]

# The venv sees this environment's build backend: nothing to fetch.
PIP_OFFLINE = ["--no-deps", "--no-build-isolation", "--no-index", "--disable-pip-version-check"]

PROBE = """
import numpy as np
import gpukit as gk
import gpukit_numpy

a = np.array([[4.0, 1.0], [1.0, 3.0]])
assert np.allclose(a @ gk.linalg.solve(a, np.ones(2)), 1.0)
print(gk.__file__)
print(gpukit_numpy.__file__)
"""


@pytest.fixture(scope="module")
def editable_clone(tmp_path_factory):
    """A copy of this checkout in a folder named ``gpukit``, installed editable into a venv.

    The venv reads this environment's packages (numpy, pip, the build backend) through a path
    entry after its own, whether this environment is a venv or not, so the install needs
    neither the network nor build isolation. The entry runs none of this environment's
    ``.pth`` files: its own gpukit install stays out, and pip never uninstalls a distribution
    outside the venv.
    """
    pytest.importorskip("hatchling", reason='pip install -e ".[test]"')  # the build backend
    parent = tmp_path_factory.mktemp("parent")
    clone = parent / "gpukit"
    clone.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.ptx", "_kernels*.so")
    for name in BUILD_INPUTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, clone / name, ignore=skip)
        else:
            shutil.copy2(source, clone / name)
    venv = parent / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    python = venv / "bin" / "python"
    site_packages = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()
    here = [*site.getsitepackages(), site.getusersitepackages()]
    # Named to come after the editable install's own .pth (site reads them sorted).
    Path(site_packages, "zz_this_environment.pth").write_text("\n".join(here) + "\n")
    install = subprocess.run(
        [python, "-m", "pip", "install", *PIP_OFFLINE, "-e", clone],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-3000:]
    return parent, clone, python


def _has_c_compiler() -> bool:
    from gpukit._host import build_native

    return build_native._compiler() is not None and sys.platform != "win32"


def _module_name() -> str:
    """The host kernels' extension module's file name for this Python (the venv's)."""
    from gpukit._host import build_native

    return build_native.MODULE


@pytest.mark.slow
def test_the_editable_install_builds_the_host_kernels(editable_clone):
    """pip install -e compiles gpukit/_host/csrc beside its sources, and gpukit uses it."""
    if not _has_c_compiler():
        pytest.skip("no C compiler: the host kernels run as NumPy ufuncs")
    _, clone, python = editable_clone
    probe = "from gpukit._host import native; print(native.available())"
    proc = subprocess.run(
        [python, "-c", probe], env=_clean_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True"]
    assert (clone / "gpukit" / "_host" / _module_name()).is_file()


@pytest.mark.slow
def test_the_wheel_carries_the_host_kernels(editable_clone, tmp_path):
    """A wheel built here holds the compiled extension module and is tagged for this
    platform (a pure-Python wheel would install without it)."""
    if not _has_c_compiler():
        pytest.skip("no C compiler: the host kernels run as NumPy ufuncs")
    _, clone, python = editable_clone
    built = subprocess.run(
        [python, "-m", "pip", "wheel", *PIP_OFFLINE, "-w", tmp_path, clone],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    (wheel,) = tmp_path.glob("gpukit-*.whl")
    assert not wheel.name.endswith("-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as z:
        assert f"gpukit/_host/{_module_name()}" in z.namelist()
        assert "gpukit/_host/csrc/kernels.c" in z.namelist()


def _clean_env() -> dict[str, str]:
    # No PYTHONPATH (it would find gpukit without the install) and no gpukit settings.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("GPUKIT_")}
    env["GPUKIT_BACKEND"] = "numpy"
    return env


@pytest.mark.slow
@pytest.mark.parametrize("where", ["parent of the clone", "clone", "elsewhere"])
def test_the_editable_install_imports_from_any_folder(editable_clone, where, tmp_path):
    parent, clone, python = editable_clone
    cwd = {"parent of the clone": parent, "clone": clone, "elsewhere": tmp_path}[where]
    proc = subprocess.run(
        [python, "-c", PROBE],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    gpukit_file, backend_file = proc.stdout.split()
    assert Path(gpukit_file) == clone / "gpukit" / "__init__.py"
    assert Path(backend_file) == clone / "backends" / "gpukit_numpy" / "__init__.py"
