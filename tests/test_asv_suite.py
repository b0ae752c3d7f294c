"""The asv suite on a machine without the optional libraries: skips are skips, never failures.

asv calls ``teardown`` after a ``setup`` that raised ``NotImplementedError`` (its skip), so
a teardown that assumes setup finished turns every skip into a failure -- as
``bench_fft.FFTEngines`` did on a ``.[bench]``-only install, without pyFFTW. These tests
call setup and teardown the way asv does, with the optional library hidden; no benchmark
is timed.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys

import pytest

import asv_bench
from asv_bench import bench_distributed, bench_fft
from gpukit._select import registry

SUITE = [
    importlib.import_module(f"asv_bench.{m.name}")
    for m in pkgutil.iter_modules(asv_bench.__path__)
    if m.name.startswith("bench_")
]


def _asv_cycle(bench, *params) -> None:
    """setup, then teardown whatever setup did, as asv runs one parameter combination."""
    try:
        bench.setup(*params)
    finally:
        bench.teardown(*params)


@pytest.mark.parametrize("engine", ["pyfftw", "pyfftw-measure"])
def test_fft_engines_skip_without_pyfftw(engine, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyfftw", None)  # not importable, as on a .[bench] install
    before = dict(os.environ)
    with pytest.raises(NotImplementedError, match="pyFFTW is not installed"):
        _asv_cycle(bench_fft.FFTEngines(), engine, "512x512")
    assert dict(os.environ) == before


def test_fft_engines_teardown_restores_the_environment(monkeypatch):
    # the engine's variables set by setup, and every one put back as it was by teardown
    monkeypatch.setenv("GPUKIT_FFT_ENGINE", "kept-by-teardown")
    monkeypatch.delenv("GPUKIT_FFTW_WISDOM", raising=False)
    monkeypatch.setattr(bench_fft, "use", registry.load)  # the process-wide default stays
    before = dict(os.environ)
    bench = bench_fft.FFTEngines()
    bench.setup("scipy", "512x512")
    assert os.environ["GPUKIT_FFT_ENGINE"] == "scipy"
    assert os.environ["GPUKIT_FFTW_WISDOM"] == "off"
    bench.teardown("scipy", "512x512")
    assert dict(os.environ) == before
    bench.teardown("scipy", "512x512")  # asv may tear down twice; nothing left to undo
    assert dict(os.environ) == before


def test_dask_benchmark_skips_without_dask(monkeypatch):
    for name in ("distributed", "dask", "dask.array"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(bench_distributed, "use", registry.load)
    with pytest.raises(NotImplementedError, match="Dask is not installed"):
        _asv_cycle(bench_distributed.DaskOps(), "numpy", "fft", 1)


def test_dask_benchmark_teardown_after_an_unavailable_backend(monkeypatch):
    def unavailable(name):
        raise NotImplementedError(f"backend {name!r} unavailable here")

    monkeypatch.setattr(bench_distributed, "use", unavailable)
    with pytest.raises(NotImplementedError, match="unavailable here"):
        _asv_cycle(bench_distributed.DaskOps(), "cupy", "matmul", 2)


def _first_params(cls) -> tuple:
    """The first parameter combination of an asv benchmark class."""
    params = getattr(cls, "params", ())
    if not getattr(cls, "param_names", None):
        return ()
    if len(cls.param_names) == 1:
        params = (params,)
    return tuple(p[0] for p in params)


@pytest.mark.parametrize("module", SUITE, ids=lambda m: m.__name__)
def test_every_teardown_survives_a_setup_that_did_nothing(module):
    # asv's teardown after a setup that stopped at its first line (a skip)
    with_teardown = [
        cls
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__ and hasattr(cls, "teardown")
    ]
    for cls in with_teardown:
        cls().teardown(*_first_params(cls))
    if module in (bench_fft, bench_distributed):
        assert with_teardown, "the classes above have teardowns"
