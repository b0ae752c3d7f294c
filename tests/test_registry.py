"""Backend plug-ins: entry points, register_backend, broken ones never break gpukit."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest
from subproc import run_python

import gpukit as gk
from gpukit_numpy import NumpyBackend

PLUGIN = """
from gpukit_numpy import NumpyBackend

class PluginBackend(NumpyBackend):
    name = "testplugin"

def create():
    return PluginBackend()
"""


def _distribution(tmp_path: Path, entry_points: str) -> Path:
    """A tiny installed distribution: a dist-info folder importlib.metadata finds on sys.path."""
    (tmp_path / "gpukit_testplugin.py").write_text(PLUGIN)
    (tmp_path / "gpukit_brokenplugin.py").write_text("raise RuntimeError('plugin bug')\n")
    info = tmp_path / "gpukit_testplugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gpukit-testplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    return tmp_path


def test_entry_point_backend_selected_by_env(tmp_path):
    path = _distribution(tmp_path, "[gpukit.backends]\ntestplugin = gpukit_testplugin:create\n")
    code = "import gpukit as gk; b = gk.get_backend(); print(b.name, type(b).__name__)"
    proc = run_python(code, env={"GPUKIT_BACKEND": "testplugin"}, extra_path=[str(path)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["testplugin", "PluginBackend"]


def test_entry_point_listed_with_its_distribution(tmp_path):
    path = _distribution(tmp_path, "[gpukit.backends]\ntestplugin = gpukit_testplugin:create\n")
    code = (
        "import gpukit as gk; s = gk.available_backends()['testplugin'];"
        "print(s.available, s.source)"
    )
    proc = run_python(code, extra_path=[str(path)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True entry point gpukit-testplugin"


def test_broken_entry_point_warns_and_is_unavailable(tmp_path):
    path = _distribution(
        tmp_path,
        """
        [gpukit.backends]
        testplugin = gpukit_testplugin:create
        broken = gpukit_brokenplugin:create
        """,
    )
    code = (
        "import warnings; warnings.simplefilter('always')\n"
        "import gpukit as gk\n"
        "s = gk.available_backends()\n"
        "print(s['broken'].available, '|', s['broken'].reason, '|', s['testplugin'].available)\n"
        "print(gk.get_backend().name)\n"
    )
    proc = run_python(code, env={"GPUKIT_BACKEND": "numpy"}, extra_path=[str(path)])
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.strip().splitlines()
    available, reason, other = first.split(" | ")
    assert available == "False" and other == "True"
    assert "RuntimeError: plugin bug" in reason
    assert second == "numpy"
    assert "backend 'broken'" in proc.stderr and "GpukitWarning" in proc.stderr


def test_broken_entry_point_named_explicitly_raises(tmp_path):
    path = _distribution(tmp_path, "[gpukit.backends]\nbroken = gpukit_brokenplugin:create\n")
    code = (
        "import warnings; warnings.simplefilter('ignore')\n"
        "import gpukit as gk\n"
        "try:\n    gk.get_backend()\n"
        "except gk.BackendUnavailableError as e:\n    print('RAISED', e)\n"
    )
    proc = run_python(code, env={"GPUKIT_BACKEND": "broken"}, extra_path=[str(path)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("RAISED backend 'broken' cannot run here")


class _Named(NumpyBackend):
    name = "inline"


def test_register_backend_in_code():
    gk.register_backend("inline", _Named)
    try:
        assert gk.available_backends()["inline"].source == "register_backend"
        with gk.use_backend("inline") as b:
            assert isinstance(b, _Named)
            assert gk.get_backend() is b
    finally:
        gk.unregister_backend("inline")
    with pytest.raises(gk.UnknownBackendError):
        gk.set_backend("inline")


def test_register_backend_refuses_duplicates_and_bad_names():
    with pytest.raises(ValueError, match="already registered"):
        gk.register_backend("numpy", NumpyBackend)
    with pytest.raises(ValueError, match="identifier"):
        gk.register_backend("not a name", NumpyBackend)
    with pytest.raises(TypeError, match="callable"):
        gk.register_backend("nope", 42)


def test_broken_factory_warns_and_is_unavailable():
    def factory():
        raise KeyError("missing config")

    gk.register_backend("brokenfactory", factory)
    try:
        with pytest.warns(gk.GpukitWarning, match="brokenfactory"):
            status = gk.available_backends()["brokenfactory"]
        assert not status.available
        assert "KeyError" in status.reason
        with pytest.raises(gk.BackendUnavailableError, match="brokenfactory"):
            gk.set_backend("brokenfactory")
    finally:
        gk.unregister_backend("brokenfactory")


def test_factory_returning_a_non_backend_is_unavailable():
    gk.register_backend("notabackend", lambda: object())
    try:
        with pytest.warns(gk.GpukitWarning, match="not a gpukit.backend.Backend"):
            status = gk.available_backends()["notabackend"]
        assert not status.available
    finally:
        gk.unregister_backend("notabackend")


def test_unavailable_factory_does_not_warn():
    def factory():
        raise gk.BackendUnavailableError("quiet", "no such hardware here")

    gk.register_backend("quiet", factory)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            status = gk.available_backends()["quiet"]
        assert not status.available and status.reason == "no such hardware here"
    finally:
        gk.unregister_backend("quiet")


def test_builtin_numpy_is_always_available():
    status = gk.available_backends()["numpy"]
    assert status.available and status.source == "builtin"


def test_builtins_load_without_installed_metadata():
    # The tests run from the source tree on PYTHONPATH: gpukit_numpy is found next to gpukit.
    code = "import gpukit as gk, gpukit_numpy; print(gk.get_backend().name)"
    proc = run_python(code, env={"GPUKIT_BACKEND": "numpy"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "numpy"
