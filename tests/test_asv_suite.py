"""The asv suite on a machine without the optional libraries: skips are skips, never failures.

asv calls ``teardown`` after a ``setup`` that raised ``NotImplementedError`` (its skip), so
a teardown that assumes setup finished turns every skip into a failure. These tests call
setup and teardown the way asv does, with the optional library hidden; no benchmark is
timed.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys

import pytest

import asv_bench
from asv_bench import bench_distributed
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
    if module is bench_distributed:
        assert with_teardown, "the classes above have teardowns"


def test_gpu_cost_benchmarks_skip_where_the_real_cupy_is_imported(monkeypatch):
    # The simulator cannot load beside the real CuPy: every GPU-cost benchmark is a skip.
    from asv_bench import bench_gpu_cost, gpu_cost

    real = type(sys)("cupy")
    real.__file__ = "/site-packages/cupy/__init__.py"
    monkeypatch.setitem(sys.modules, "cupy", real)
    with pytest.raises(NotImplementedError, match="real CuPy is imported"):
        gpu_cost.simulator()
    bench = bench_gpu_cost.GPUCost()
    cache = bench.setup_cache()
    with pytest.raises(NotImplementedError, match="real CuPy is imported"):
        bench.setup(cache, "cg")
