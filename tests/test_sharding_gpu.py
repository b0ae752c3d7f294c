"""Several devices on real GPUs (cupy backend): the CPU tests' contract on CUDA devices.

With one GPU: the N = 1 path and the worker's own stream. With ``multi_gpu(n)``:
sharding, peer copies / NCCL collectives and device mismatches on n GPUs.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk

from helpers import TOL, rel_err

pytestmark = pytest.mark.gpu


@pytest.fixture
def cupy_backend():
    status = gk.available_backends()["cupy"]
    if not status.available:
        pytest.skip(f"backend 'cupy' unavailable: {status.reason}")
    with gk.use_backend("cupy") as backend:
        yield backend


def test_single_gpu_sharded_ops(cupy_backend, rng):
    a = rng.standard_normal((301, 64)).astype(np.float32)
    b = rng.standard_normal((64, 32)).astype(np.float32)
    sa = gk.shard(a, devices=[0])
    assert rel_err(gk.sharding.matmul(sa, b), a.astype(np.float64) @ b) < TOL[a.dtype]
    assert rel_err(gk.sharding.fft(sa, axis=1), np.fft.fft(a.astype(np.float64), axis=1)) < 1e-4
    assert rel_err(gk.sharding.norm(sa), np.linalg.norm(a.astype(np.float64))) < TOL[a.dtype]
    assert np.array_equal(gk.to_numpy(sa), a)


def test_worker_runs_on_its_own_stream(cupy_backend):
    import cupy

    x = gk.shard(np.ones((8, 4)), devices=[0])
    streams = []

    def probe(s):
        streams.append(cupy.cuda.get_current_stream())
        return s + 1

    gk.map_shards(probe, x)
    assert streams[0] != cupy.cuda.Stream.null


@pytest.mark.multi_gpu(2)
def test_two_gpus_round_trip_and_ops(cupy_backend, rng):
    x = rng.standard_normal((9, 16))
    s = gk.shard(x, devices=[0, 1])
    assert [sh.device.id for sh in s.shards] == [0, 1]
    assert np.array_equal(gk.to_numpy(s), x) and np.array_equal(gk.to_numpy(s.gather(1)), x)
    b = rng.standard_normal((16, 5))
    assert rel_err(gk.sharding.matmul(s, b), x @ b) < TOL[np.dtype("float64")]
    assert rel_err(gk.sharding.fft(s, axis=1), np.fft.fft(x, axis=1)) < 1e-12
    assert rel_err(gk.sharding.sum(s), x.sum()) < 1e-12


@pytest.mark.multi_gpu(2)
def test_two_gpus_collectives(cupy_backend, rng):
    parts = [cupy_backend.asarray(rng.standard_normal(100), device=d) for d in (0, 1)]
    expected = gk.to_numpy(parts[0]) + gk.to_numpy(parts[1])
    out = cupy_backend.collectives((0, 1)).all_reduce(parts)
    assert [o.device.id for o in out] == [0, 1]
    assert all(rel_err(o, expected) < 1e-12 for o in out)


@pytest.mark.multi_gpu(2)
def test_two_gpus_mismatch(cupy_backend):
    a = cupy_backend.asarray(np.ones(3), device=0)
    b = cupy_backend.asarray(np.ones(3), device=1)
    with pytest.raises(gk.DeviceMismatchError, match=r"cupy:1.*cupy:0"):
        gk._dispatch.prepare(a, b, names=("a", "b"))
