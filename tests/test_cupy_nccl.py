"""NCCL on the cupy backend: one communicator set per device tuple, shared safely across
threads, and peer copies (with the reason logged) when NCCL cannot initialise."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

import gpukit as gk
from gpukit.backend.collectives import PeerCopyCollectives

pytestmark = [pytest.mark.gpu, pytest.mark.multi_gpu(2)]


@pytest.fixture
def fresh_comms(monkeypatch):
    """An empty communicator cache, and the list of ``initAll`` calls made from now on."""
    from cupy.cuda import nccl

    import gpukit_cupy.collectives as module

    if not getattr(nccl, "available", False):
        pytest.skip("this CuPy has no NCCL")
    real = nccl.NcclCommunicator
    calls = []

    class Counting:
        @staticmethod
        def initAll(devices):
            calls.append(tuple(devices))
            return real.initAll(devices)

    monkeypatch.setattr(module, "_comms", {})
    monkeypatch.setattr(nccl, "NcclCommunicator", Counting)
    return calls


def test_communicators_are_made_once_per_device_tuple(cupy_backend, fresh_comms, rng):
    from gpukit_cupy.collectives import NcclCollectives

    for _ in range(3):
        for devs in [(0, 1), (1, 0)]:
            coll = cupy_backend.collectives(devs)
            assert isinstance(coll, NcclCollectives)
            parts = [cupy_backend.asarray(np.full(4, d + 1.0), device=d) for d in devs]
            assert [gk.to_numpy(o).tolist() for o in coll.all_reduce(parts)] == [[3.0] * 4] * 2
    assert sorted(fresh_comms) == [(0, 1), (1, 0)]  # rank order is part of the key


def test_collectives_from_many_threads_share_the_communicators(cupy_backend, fresh_comms):
    """Threads start together (one initAll between them) and run whole groups that must
    not interleave: NCCL pairs the k-th call of each rank."""
    threads, errors = 6, []
    start = threading.Barrier(threads)

    def worker(k: int) -> None:
        try:
            start.wait()
            coll = cupy_backend.collectives((0, 1))
            for i in range(10):
                parts = [cupy_backend.asarray(np.full(5, 100.0 * k + i + d), device=d)
                         for d in (0, 1)]  # fmt: skip
                total = coll.all_reduce(parts)
                want = 2 * (100.0 * k + i) + 1
                assert [gk.to_numpy(t).tolist() for t in total] == [[want] * 5] * 2
                copies = coll.broadcast(parts[1], root=1)
                assert [gk.to_numpy(c)[0] for c in copies] == [100.0 * k + i + 1] * 2
                got = coll.all_to_all([[None, parts[0]], [parts[1], None]])
                assert gk.to_numpy(got[1][0])[0] == 100.0 * k + i
                assert gk.to_numpy(got[0][1])[0] == 100.0 * k + i + 1
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert errors == []
    assert fresh_comms == [(0, 1)]


def test_a_failed_nccl_initialisation_falls_back_to_peer_copies(
    cupy_backend, monkeypatch, caplog, rng
):
    from cupy.cuda import nccl

    import gpukit_cupy.collectives as module

    class Broken:
        @staticmethod
        def initAll(devices):
            raise RuntimeError("NCCL_ERROR_SYSTEM_ERROR: unhandled system error")

    monkeypatch.setattr(module, "_comms", {})
    monkeypatch.setattr(nccl, "available", True)
    monkeypatch.setattr(nccl, "NcclCommunicator", Broken, raising=False)
    x = [rng.standard_normal(6) for _ in range(2)]
    with caplog.at_level(logging.WARNING, logger="gpukit"):
        for _ in range(2):
            coll = cupy_backend.collectives((0, 1))
            assert type(coll) is PeerCopyCollectives
            parts = [cupy_backend.asarray(h, device=d) for h, d in zip(x, (0, 1), strict=True)]
            out = coll.all_reduce(parts)
            assert all(np.allclose(gk.to_numpy(o), x[0] + x[1], rtol=1e-15) for o in out)
    logged = [r.getMessage() for r in caplog.records if "NCCL" in r.getMessage()]
    assert len(logged) == 1  # once per device tuple, not per call
    assert "devices (0, 1)" in logged[0] and "NCCL_ERROR_SYSTEM_ERROR" in logged[0]
    assert "peer copies" in logged[0]


def test_gk_operations_use_the_fallback_too(cupy_backend, monkeypatch, rng):
    from cupy.cuda import nccl

    import gpukit_cupy.collectives as module

    class Broken:
        @staticmethod
        def initAll(devices):
            raise RuntimeError("NCCL_ERROR_UNHANDLED_CUDA_ERROR")

    monkeypatch.setattr(module, "_comms", {})
    monkeypatch.setattr(nccl, "available", True)
    monkeypatch.setattr(nccl, "NcclCommunicator", Broken, raising=False)
    x = rng.standard_normal((8, 6))
    s = gk.shard(x, devices=[0, 1])
    assert np.array_equal(gk.to_numpy(gk.reshard(s, axis=1)), x)
    assert abs(float(gk.to_numpy(gk.sharding.sum(s))) - x.sum()) < 1e-12 * np.abs(x).sum()
