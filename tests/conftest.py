"""Shared fixtures: the backend parametrisation, RNGs seeded per test, the fake device."""

from __future__ import annotations

import os
import secrets
import zlib

import numpy as np
import pytest

import gpukit as gk

from fakedevice import FakeDeviceBackend

# Every test taking `backend` runs once per built-in backend; GPU ones carry the `gpu`
# mark so a run without a GPU lists them as skipped (`-ra`), never hides them.
BACKENDS = [
    pytest.param("numpy", id="numpy"),
    pytest.param("cupy", id="cupy", marks=pytest.mark.gpu),
]


def extra_backends(names: str) -> list:
    """Params for plug-in backends named in ``GPUKIT_TEST_BACKENDS`` (comma-separated).

    A plug-in's authors run gpukit's whole suite on their backend with
    ``GPUKIT_TEST_BACKENDS=mylib python -m pytest`` (docs/plugins.rst).
    """
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    return [pytest.param(n, id=n) for n in wanted if n not in ("numpy", "cupy")]


BACKENDS += extra_backends(os.environ.get("GPUKIT_TEST_BACKENDS", ""))


def pytest_configure(config: pytest.Config) -> None:
    if "fakedevice" not in gk.available_backends():
        gk.register_backend("fakedevice", FakeDeviceBackend)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest):
    """The backend under test, active for the test's duration (skips if unavailable)."""
    status = gk.available_backends().get(request.param)
    if status is None:
        pytest.fail(f"GPUKIT_TEST_BACKENDS names {request.param!r}, which is not registered")
    if not status.available:
        pytest.skip(f"backend {request.param!r} unavailable: {status.reason}")
    with gk.use_backend(request.param) as b:
        yield b


@pytest.fixture
def xp(backend):
    """The array namespace of the backend under test."""
    return backend.xp


@pytest.fixture
def cupy_backend():
    """The cupy backend made active, for tests that are about CuPy itself (a real GPU or
    the simulator); skipped with the reason when it cannot run."""
    status = gk.available_backends()["cupy"]
    if not status.available:
        pytest.skip(f"backend 'cupy' unavailable: {status.reason}")
    with gk.use_backend("cupy") as backend:
        yield backend


@pytest.fixture
def fake_device():
    """The fake two-device backend, active for the test's duration."""
    with gk.use_backend("fakedevice") as b:
        yield b


def seed_for(request: pytest.FixtureRequest) -> int:
    """The ``rng`` fixture's seed: the CRC-32 of the test's id, the same on every run and
    machine; a fresh one with ``--random-seed`` or ``GPUKIT_TEST_SEED=random``;
    ``GPUKIT_TEST_SEED=N`` replays N."""
    wanted = os.environ.get("GPUKIT_TEST_SEED", "").strip()
    if wanted == "random" or request.config.getoption("--random-seed", False):
        return secrets.randbits(63)
    if wanted:
        return int(wanted)
    return zlib.crc32(request.node.nodeid.encode())


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test's id (:func:`seed_for`).

    The seed is printed with any failure of the test.
    """
    seed = seed_for(request)
    request.node.gpukit_seed = seed
    return np.random.default_rng(seed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    seed = getattr(item, "gpukit_seed", None)
    if seed is not None and report.failed:
        report.sections.append(("rng seed", f"replay with GPUKIT_TEST_SEED={seed}"))
    return report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `multi_gpu(n)` tests visibly when fewer than n GPUs are usable."""
    count = None
    for item in items:
        mark = item.get_closest_marker("multi_gpu")
        if mark is None:
            continue
        if count is None:
            count = _cupy_count()
        if count < mark.args[0]:
            item.add_marker(pytest.mark.skip(reason=f"needs {mark.args[0]} GPUs, {count} usable"))


def _cupy_count() -> int:
    if not gk.available_backends()["cupy"].available:
        return 0
    with gk.use_backend("cupy"):
        return gk.device_count()
