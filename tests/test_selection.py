"""Backend selection: late, from GPUKIT_BACKEND, scoped per context, never silently wrong."""

from __future__ import annotations

import asyncio
import re
import sys
import threading

import pytest
from subproc import run_python

import gpukit as gk

from helpers import oracle

CUPY = gk.available_backends()["cupy"]
PRINT_NAME = "import gpukit as gk; print(gk.get_backend().name)"


@pytest.mark.parametrize("value", ["", "auto", "AUTO", " auto "])
def test_env_auto_falls_back_to_numpy_and_logs_why(value):
    if CUPY.available:
        pytest.skip("a GPU is usable here: auto picks cupy (tested separately)")
    code = (
        "import logging; logging.basicConfig(level=logging.INFO)\n"
        "import gpukit as gk; print(gk.get_backend().name)"
    )
    proc = run_python(code, env={"GPUKIT_BACKEND": value})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "numpy"
    assert "auto chose numpy because cupy is unavailable" in proc.stderr


def test_env_unset_means_auto():
    proc = run_python(PRINT_NAME + "; print(gk.selection_reason())")
    assert proc.returncode == 0, proc.stderr
    assert "GPUKIT_BACKEND=auto" in proc.stdout


@pytest.mark.parametrize("value", ["numpy", "NumPy"])
def test_env_numpy(value):
    proc = run_python(PRINT_NAME, env={"GPUKIT_BACKEND": value})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "numpy"


def test_env_cupy_without_driver_raises_with_cause_and_fix():
    if CUPY.available:
        pytest.skip("a GPU is usable here")
    code = (
        "import gpukit as gk\n"
        "try:\n    gk.get_backend()\n"
        "except gk.BackendUnavailableError as e:\n"
        "    assert isinstance(e, RuntimeError); print('RAISED', e)\n"
    )
    proc = run_python(code, env={"GPUKIT_BACKEND": "cupy"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("RAISED backend 'cupy' cannot run here")
    # CuPy is installed in the test environment: the real path of a machine without a GPU
    # (no driver) or with an old one.
    assert any(r in out for r in ("no NVIDIA driver found", "too old", "CuPy is not installed"))
    assert "GPUKIT_BACKEND=numpy" in out
    assert "Traceback" not in proc.stderr


_FAIL_TWICE = (
    "import numpy as np, gpukit as gk\n"
    "try:\n    gk.fft.fft(np.ones(4))\nexcept gk.BackendUnavailableError:\n    pass\n"
    "gk.matmul(np.ones((2, 2)), np.ones((2, 2)))\n"
)


def test_backend_failure_is_a_short_paragraph_every_time():
    """The reason and the fix from the user's own call: no inner frames, no CUDA chain,
    and a second failure is no longer than the first (a re-raised stored exception grew)."""
    if CUPY.available:
        pytest.skip("a GPU is usable here")
    proc = run_python(_FAIL_TWICE, env={"GPUKIT_BACKEND": "cupy"})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and lines[-1].startswith("gpukit.errors.BackendUnavailableError")
    assert "Fix:" in lines[-1] and "GPUKIT_BACKEND=numpy" in lines[-1]
    assert len(lines) <= 10, proc.stderr
    assert "During handling" not in proc.stderr and "direct cause" not in proc.stderr


def test_gpukit_debug_shows_the_whole_chain():
    if CUPY.available:
        pytest.skip("a GPU is usable here")
    proc = run_python(_FAIL_TWICE, env={"GPUKIT_BACKEND": "cupy", "GPUKIT_DEBUG": "1"})
    assert "The above exception was the direct cause" in proc.stderr
    assert "gpukit/_select/registry.py" in proc.stderr  # inner frames are kept
    if "CuPy is not installed" not in proc.stderr:
        assert "CUDARuntimeError" in proc.stderr  # CUDA's own error, the root of the chain


_CANNOT_RUN = """
import numpy as np
import gpukit as gk
from gpukit.errors import BackendUnavailableError

def cannot_run():
    raise BackendUnavailableError("nohw", "it needs hardware this machine lacks", "use numpy")

gk.register_backend("nohw", cannot_run)
{call}
"""


@pytest.mark.parametrize(
    "call",
    [
        "gk.linalg.solve(np.eye(2), np.ones(2))",  # an operation: its decorator re-raises
        "gk.get_backend()",
        "gk.set_backend('nohw')",
        "gk.asarray([1.0])",
    ],
)
def test_a_backend_failure_traceback_ends_at_the_users_call(call):
    """No gpukit frame (an internal re-raise line confused users); the reason, the fix.
    Python 3.10 re-raises a traceback as it was caught: the public function's frame stays."""
    env = {"GPUKIT_BACKEND": "nohw"}
    proc = run_python(_CANNOT_RUN.format(call=call), env=env)
    frames = re.findall(r'^  File "(.+)", line \d+, in ', proc.stderr, re.M)
    inner = [f for f in frames if f != "<string>"]
    assert len(inner) <= (0 if sys.version_info >= (3, 11) else 1), proc.stderr
    assert frames, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        "gpukit.errors.BackendUnavailableError: backend 'nohw' cannot run here: it needs "
        "hardware this machine lacks. Fix: use numpy"
    )
    debug = run_python(_CANNOT_RUN.format(call=call), env={**env, "GPUKIT_DEBUG": "1"})
    assert "gpukit/_select/registry.py" in debug.stderr  # GPUKIT_DEBUG=1 keeps every frame
    assert debug.stderr.strip().splitlines()[-1] == last


@pytest.mark.parametrize(
    ("driver", "expected"),
    [
        (0, "no NVIDIA driver found (CuPy {v} is built for CUDA 13.2)"),
        (12020, "the NVIDIA driver is too old for this CuPy: it supports CUDA 12.2, CuPy {v}"),
    ],
)
def test_cupy_probe_tells_no_driver_from_an_old_driver(monkeypatch, driver, expected):
    """cudaErrorInsufficientDriver means either; the driver version tells which."""
    cupy = oracle("cupy")
    from gpukit_cupy import backend as cupy_backend

    def insufficient():
        raise cupy.cuda.runtime.CUDARuntimeError(35)  # cudaErrorInsufficientDriver

    monkeypatch.setattr(cupy.cuda.runtime, "getDeviceCount", insufficient)
    monkeypatch.setattr(cupy.cuda.runtime, "driverGetVersion", lambda: driver)
    monkeypatch.setattr(cupy.cuda.runtime, "runtimeGetVersion", lambda: 13020)
    with pytest.raises(gk.BackendUnavailableError) as info:
        cupy_backend.probe()
    msg = str(info.value)
    assert expected.format(v=cupy.__version__) in msg
    assert "GPUKIT_BACKEND=numpy" in msg
    if driver:
        assert 'pip install "gpukit[cuda12]"' in msg
    assert isinstance(info.value.__cause__, cupy.cuda.runtime.CUDARuntimeError)


def test_env_unknown_name_lists_registered_backends():
    code = (
        "import gpukit as gk\n"
        "try:\n    gk.get_backend()\n"
        "except gk.UnknownBackendError as e:\n"
        "    assert isinstance(e, ValueError); print(e)\n"
    )
    proc = run_python(code, env={"GPUKIT_BACKEND": "tpu"})
    assert proc.returncode == 0, proc.stderr
    assert "unknown gpukit backend 'tpu'" in proc.stdout
    assert "cupy" in proc.stdout and "numpy" in proc.stdout


def test_env_is_read_at_first_use_not_import():
    code = (
        "import os, gpukit as gk\n"
        "os.environ['GPUKIT_BACKEND'] = 'tpu'\n"
        "try:\n    gk.get_backend()\nexcept gk.UnknownBackendError:\n    print('late')\n"
    )
    proc = run_python(code, env={"GPUKIT_BACKEND": "numpy"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "late"


def test_auto_prefers_a_usable_gpu_backend():
    # A usable stand-in registered under the name 'cupy' must win over numpy.
    code = (
        "import sys; sys.path.insert(0, 'tests')\n"
        "from fakedevice import FakeDeviceBackend\n"
        "import gpukit as gk\n"
        "class Gpu(FakeDeviceBackend):\n    name = 'cupy'\n"
        "gk.register_backend('cupy', Gpu, replace=True)\n"
        "print(gk.get_backend().name, '|', gk.selection_reason())\n"
    )
    proc = run_python(code, env={"GPUKIT_BACKEND": "auto"})
    assert proc.returncode == 0, proc.stderr
    name, reason = proc.stdout.strip().split(" | ")
    assert name == "cupy"
    assert "auto chose cupy" in reason


def test_explicit_unavailable_backend_never_falls_back():
    if CUPY.available:
        pytest.skip("a GPU is usable here")
    before = gk.get_backend()
    with pytest.raises(gk.BackendUnavailableError, match="cupy"):
        gk.set_backend("cupy")
    with pytest.raises(gk.BackendUnavailableError):
        with gk.use_backend("cupy"):
            pass  # pragma: no cover
    assert gk.get_backend() is before


def test_set_backend_unknown_keeps_default():
    before = gk.get_backend()
    with pytest.raises(gk.UnknownBackendError):
        gk.set_backend("no_such_backend")
    assert gk.get_backend() is before


def test_use_backend_restores_on_error():
    outer = gk.get_backend()
    with pytest.raises(ZeroDivisionError):
        with gk.use_backend("fakedevice") as b:
            assert gk.get_backend() is b
            1 / 0  # noqa: B018
    assert gk.get_backend() is outer


def test_use_backend_nests():
    with gk.use_backend("fakedevice"):
        with gk.use_backend("numpy"):
            assert gk.get_backend().name == "numpy"
        assert gk.get_backend().name == "fakedevice"


def test_threads_do_not_see_each_others_selection():
    seen: dict[str, str] = {}
    inside = threading.Event()
    checked = threading.Event()

    def selector():
        with gk.use_backend("fakedevice"):
            inside.set()
            checked.wait(5)
            seen["selector"] = gk.get_backend().name

    def observer():
        inside.wait(5)
        seen["observer"] = gk.get_backend().name
        checked.set()

    threads = [threading.Thread(target=selector), threading.Thread(target=observer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"selector": "fakedevice", "observer": gk.get_backend().name}
    assert seen["observer"] != "fakedevice"


def test_asyncio_tasks_do_not_see_each_others_selection():
    async def task(name: str, gate: asyncio.Event, other: asyncio.Event) -> list[str]:
        names = []
        with gk.use_backend(name):
            gate.set()
            await other.wait()  # the other task is inside its own block now
            await asyncio.sleep(0)
            names.append(gk.get_backend().name)
        names.append(gk.get_backend().name)
        return names

    async def main():
        a, b = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(task("fakedevice", a, b), task("numpy", b, a))

    default = gk.get_backend().name
    first, second = asyncio.run(main())
    assert first == ["fakedevice", default]
    assert second == ["numpy", default]


def test_xp_follows_the_active_backend():
    import numpy as np

    with gk.use_backend("numpy"):
        assert gk.xp is np
    with gk.use_backend("fakedevice") as b:
        assert gk.xp is b.xp


def test_selection_reason_names_the_scope():
    with gk.use_backend("fakedevice"):
        assert gk.selection_reason() == "use_backend('fakedevice')"


def test_cupy_probe_reports_hidden_devices_with_the_variable(monkeypatch):
    """cudaErrorNoDevice (CUDA_VISIBLE_DEVICES hides every GPU) names the variable, not raw CUDA."""
    cupy = oracle("cupy")
    from gpukit_cupy import backend as cupy_backend

    def no_device():
        raise cupy.cuda.runtime.CUDARuntimeError(100)  # cudaErrorNoDevice

    monkeypatch.setattr(cupy.cuda.runtime, "getDeviceCount", no_device)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(gk.BackendUnavailableError) as info:
        cupy_backend.probe()
    msg = str(info.value)
    assert "no CUDA device is visible (CUDA_VISIBLE_DEVICES='')" in msg
    assert "GPUKIT_BACKEND=numpy" in msg


def test_names_must_be_strings():
    with pytest.raises(TypeError, match=r"backend name must be a str .* got int"):
        gk.set_backend(3)
    with pytest.raises(TypeError, match="backend name"):
        with gk.use_backend(None):
            pass  # pragma: no cover


def test_cupy_probe_loads_the_cuda_libraries_and_names_the_missing_ones(monkeypatch):
    """A driver and a GPU but no CUDA libraries (no toolkit, no [ctk] wheels): the backend
    is unavailable at once, naming each library and the install that brings them."""
    cupy = oracle("cupy")
    import functools
    import sys
    import types

    from gpukit_cupy import backend as cupy_backend

    monkeypatch.setattr(cupy.cuda.runtime, "getDeviceCount", lambda: 1)
    monkeypatch.setattr(cupy.cuda.runtime, "runtimeGetVersion", lambda: 12080)
    loaded = []
    # cuFFT loads (a stand-in module: the real one cannot even import without libcufft)
    monkeypatch.setitem(sys.modules, "cupy.cuda.cufft", types.SimpleNamespace(getVersion=int))
    for name, module, function in cupy_backend._LIBRARIES:
        if name == "cuFFT":
            continue

        def missing(name=name):
            loaded.append(name)
            raise OSError(f"lib{name.lower()}.so.12: cannot open shared object file")

        owner, _, attr = f"{module}.{function}".rpartition(".")
        monkeypatch.setattr(functools.reduce(getattr, owner.split(".")[1:], cupy), attr, missing)
    with pytest.raises(gk.BackendUnavailableError) as info:
        cupy_backend.probe()
    msg = str(info.value)
    assert loaded == ["cuBLAS", "cuSOLVER", "NVRTC"]  # every library is tried
    assert "cuBLAS (OSError: libcublas.so.12" in msg and "NVRTC (OSError" in msg
    assert "cuFFT" not in msg
    assert 'pip install "gpukit[cuda12]"' in msg and "GPUKIT_BACKEND=numpy" in msg


_ACTIVE = """
import contextvars, threading, numpy as np, gpukit as gk
from gpukit._select import selection
from fakedevice import FakeDeviceBackend
gk.register_backend("fakedevice", FakeDeviceBackend)
a = np.ones((2, 2))
assert selection.active() is None  # GPUKIT_BACKEND not read yet, and active() never reads it
assert selection.active() is None
gk.matmul(a, a)  # resolves GPUKIT_BACKEND=numpy
host = gk.get_backend()
assert host.name == "numpy" and selection.active() is host
assert type(gk.matmul(a, a)) is np.ndarray
with gk.use_backend("fakedevice") as fake:
    assert selection.active() is fake
    assert fake.owns(gk.matmul(a, a))
    seen = []
    thread = threading.Thread(target=lambda: seen.append(selection.active()))
    thread.start()
    thread.join()
    assert seen == [host], "a new thread saw another thread's use_backend"
    later = contextvars.copy_context()  # an asyncio task, a thread's copied context
assert selection.active() is host
assert later.run(selection.active) is fake, "the copied context lost its scoped backend"
assert fake.owns(later.run(gk.matmul, a, a))
assert type(gk.matmul(a, a)) is np.ndarray
print("ok")
"""


def test_active_is_the_scoped_backend_else_the_default_never_the_environment():
    """``active()`` (the query hot paths ask) is None until a backend was resolved, the
    default after, the ``use_backend`` block's backend inside one, per thread and per
    context; ``gk.matmul``'s host fast path follows it (a copied context too)."""
    from pathlib import Path

    proc = run_python(
        _ACTIVE, env={"GPUKIT_BACKEND": "numpy"}, extra_path=[str(Path(__file__).parent)]
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
