"""The numpy backend's FFT engines: which one runs, how pyFFTW plans, its wisdom file."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import gpukit as gk

from helpers import oracle, rel_err

pyfftw = oracle("pyfftw")
_fftw = pytest.importorskip("gpukit_numpy._fftw")


def _forget_plans():
    with _fftw._planner, _fftw._state:
        _fftw._plans.clear()


@pytest.fixture
def measured(monkeypatch, tmp_path):
    """pyFFTW measuring, wisdom kept in a fresh file; no plans or wisdom from earlier tests."""
    _forget_plans()
    monkeypatch.setenv("GPUKIT_FFT_ENGINE", "pyfftw")
    monkeypatch.setenv("GPUKIT_FFTW_PLANNER", "measure")
    path = tmp_path / "cache" / "wisdom.json"
    monkeypatch.setenv("GPUKIT_FFTW_WISDOM", str(path))
    monkeypatch.setattr(_fftw, "_wisdom_read", False)
    monkeypatch.setattr(_fftw, "_wisdom_warned", False)
    pyfftw.forget_wisdom()
    with gk.use_backend("numpy"):
        yield path
    pyfftw.forget_wisdom()


def test_auto_is_scipy_even_with_pyfftw_installed(monkeypatch):
    # An installed optional engine never changes (and never slows) the default.
    monkeypatch.delenv("GPUKIT_FFT_ENGINE", raising=False)
    with gk.use_backend("numpy"):
        assert gk.fft.engine() == "scipy"
    monkeypatch.setenv("GPUKIT_FFT_ENGINE", "pyfftw")
    with gk.use_backend("numpy"):
        assert gk.fft.engine() == "pyfftw"


@pytest.mark.parametrize(
    ("value", "effort"),
    [("", "estimate"), ("measure", "measure"), ("FFTW_PATIENT", "patient"),
     (" Exhaustive ", "exhaustive")],
)  # fmt: skip
def test_planner_setting(monkeypatch, value, effort):
    monkeypatch.setenv("GPUKIT_FFTW_PLANNER", value)
    assert _fftw.planner() == effort


def test_the_default_planner_estimates(monkeypatch):
    monkeypatch.delenv("GPUKIT_FFTW_PLANNER", raising=False)
    assert _fftw.planner() == "estimate"


def test_unknown_planner_raises_naming_the_variable(monkeypatch):
    monkeypatch.setenv("GPUKIT_FFT_ENGINE", "pyfftw")
    monkeypatch.setenv("GPUKIT_FFTW_PLANNER", "quick")
    with gk.use_backend("numpy"), pytest.raises(ValueError, match="GPUKIT_FFTW_PLANNER='quick'"):
        gk.fft.fft(np.ones(8))


def test_fftw_never_sees_the_callers_arrays(monkeypatch, rng):
    """Plans are made and run on the engine's own buffers: FFTW's measuring planner
    overwrites its arrays, and another thread may be reading the caller's."""
    given = []
    real_fftw = pyfftw.FFTW

    def recording(a, b, *args, **kwargs):
        given.append((a, b))
        return real_fftw(a, b, *args, **kwargs)

    monkeypatch.setattr(pyfftw, "FFTW", recording)
    monkeypatch.setenv("GPUKIT_FFT_ENGINE", "pyfftw")
    x = rng.standard_normal((7, 211)) + 0j  # a fresh shape: planned now
    with gk.use_backend("numpy"):
        y = gk.fft.fft(x)
        z = gk.fft.irfft(x, axis=0)
    assert len(given) == 2
    for a, b in given:
        for caller in (x, y, z):
            assert not np.shares_memory(a, caller) and not np.shares_memory(b, caller)
    assert rel_err(y, np.fft.fft(x)) < 1e-12
    assert rel_err(z, np.fft.irfft(x, axis=0)) < 1e-12


def test_the_plan_cache_is_bounded(monkeypatch, rng):
    monkeypatch.setenv("GPUKIT_FFT_ENGINE", "pyfftw")
    with gk.use_backend("numpy"):
        for n in range(3000, 3000 + _fftw.MAX_PLANS + 5):
            x = rng.standard_normal(n)
            assert rel_err(gk.fft.rfft(x), np.fft.rfft(x)) < 1e-12
    assert len(_fftw._plans) == _fftw.MAX_PLANS


def test_empty_batches_give_empty_results(monkeypatch):
    monkeypatch.setenv("GPUKIT_FFT_ENGINE", "pyfftw")
    with gk.use_backend("numpy"):
        y = gk.fft.rfft(np.ones((0, 6)))
        z = gk.fft.fft(np.ones((3, 0, 4)), n=5, axis=1)
    assert y.shape == (0, 4) and y.dtype == np.complex128
    assert z.shape == (3, 5, 4) and not z.any()


# -- wisdom -----------------------------------------------------------------------------------


def test_measured_plans_save_wisdom_atomically(measured, rng):
    x = rng.standard_normal((3, 96)) + 0j
    assert rel_err(gk.fft.fft(x), np.fft.fft(x)) < 1e-12
    data = json.loads(measured.read_text())
    assert data["format"] == "gpukit-fftw-wisdom-1"
    assert "fftw_wisdom" in data["double"]
    assert [p.name for p in measured.parent.iterdir()] == [measured.name]  # no temporaries


def test_wisdom_is_loaded_before_the_first_measured_plan(measured, rng):
    x = rng.standard_normal(120) + 0j
    gk.fft.fft(x)
    saved = measured.read_text()
    pyfftw.forget_wisdom()  # as a new process starts
    _fftw._wisdom_read = False
    gk.fft.fft(rng.standard_normal(77) + 0j)  # another new shape: reads the file first
    entries = set(json.loads(saved)["double"].splitlines()[1:-1])  # between the header and ")"
    assert entries and entries <= set(pyfftw.export_wisdom()[0].decode().splitlines())


def test_estimating_plans_write_no_wisdom(monkeypatch, tmp_path, rng):
    path = tmp_path / "wisdom.json"
    monkeypatch.setenv("GPUKIT_FFT_ENGINE", "pyfftw")
    monkeypatch.setenv("GPUKIT_FFTW_WISDOM", str(path))
    with gk.use_backend("numpy"):
        gk.fft.fft(rng.standard_normal(123))
    assert not path.exists()


@pytest.mark.parametrize("value", ["off", ""])
def test_wisdom_can_be_switched_off(measured, monkeypatch, value, rng):
    monkeypatch.setenv("GPUKIT_FFTW_WISDOM", value)
    assert _fftw.wisdom_path() is None
    x = rng.standard_normal(97) + 0j
    assert rel_err(gk.fft.fft(x), np.fft.fft(x)) < 1e-12
    assert not measured.parent.exists()


def test_default_wisdom_path_is_in_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("GPUKIT_FFTW_WISDOM", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _fftw.wisdom_path() == tmp_path / "gpukit" / "fftw-wisdom.json"


@pytest.mark.parametrize(
    "content", [b"", b"garbage", b'{"format": "other"}', b"[1, 2]", b'{"format": 1}', b"\xff\xfe"]
)
def test_a_damaged_wisdom_file_warns_and_is_replaced(measured, rng, content):
    measured.parent.mkdir(parents=True)
    measured.write_bytes(content)
    x = rng.standard_normal(89) + 0j
    with pytest.warns(gk.errors.GpukitWarning, match="is not an FFTW wisdom file written by"):
        y = gk.fft.fft(x)
    assert rel_err(y, np.fft.fft(x)) < 1e-12
    assert json.loads(measured.read_text())["format"] == "gpukit-fftw-wisdom-1"


def test_a_failed_save_keeps_the_old_file(measured, monkeypatch, rng):
    gk.fft.fft(rng.standard_normal(64) + 0j)
    old = measured.read_bytes()

    def no_room(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_room)
    x = rng.standard_normal(65) + 0j
    with pytest.warns(gk.errors.GpukitWarning, match="cannot save FFTW wisdom .*No space left"):
        y = gk.fft.fft(x)
    assert rel_err(y, np.fft.fft(x)) < 1e-12
    assert measured.read_bytes() == old
    assert [p.name for p in measured.parent.iterdir()] == [measured.name]


def test_an_unwritable_wisdom_place_only_warns(measured, monkeypatch, tmp_path, rng):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GPUKIT_FFTW_WISDOM", str(blocker / "wisdom.json"))  # under a file
    x = rng.standard_normal(66) + 0j
    with pytest.warns(gk.errors.GpukitWarning, match="cannot save FFTW wisdom"):
        y = gk.fft.fft(x)
    assert rel_err(y, np.fft.fft(x)) < 1e-12
