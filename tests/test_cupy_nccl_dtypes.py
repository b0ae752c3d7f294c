"""NCCL collectives on the cupy backend in every dtype they take, single precision and
complex included: complex travels as twice the count of reals, so a count or type code
that forgets it reduces half of the buffer, or reads past it."""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk

from helpers import TOL, rel_err

pytestmark = [pytest.mark.gpu, pytest.mark.multi_gpu(2)]

DTYPES = ["float32", "float64", "complex64", "complex128"]


@pytest.fixture
def nccl(cupy_backend):
    from gpukit_cupy.collectives import NcclCollectives

    coll = cupy_backend.collectives((0, 1))
    if not isinstance(coll, NcclCollectives):
        pytest.skip("NCCL is not available for devices (0, 1)")
    return cupy_backend, coll


def _draw(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_reduce(nccl, rng, dtype):
    backend, coll = nccl
    host = [_draw(rng, (7, 5), dtype) for _ in range(2)]
    out = coll.all_reduce([backend.asarray(h, device=d) for d, h in enumerate(host)])
    want = host[0].astype(np.complex128) + host[1]
    for d, o in enumerate(out):
        assert o.dtype == dtype and backend.device_of(o) == d
        assert rel_err(gk.to_numpy(o), want) < TOL[np.dtype(dtype)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast(nccl, rng, dtype):
    backend, coll = nccl
    host = _draw(rng, 11, dtype)
    out = coll.broadcast(backend.asarray(host, device=1), root=1)
    for d, o in enumerate(out):
        assert o.dtype == dtype and backend.device_of(o) == d
        assert np.array_equal(gk.to_numpy(o), host)


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_to_all(nccl, rng, dtype):
    backend, coll = nccl
    host = [[_draw(rng, 3 + i + j, dtype) for j in range(2)] for i in range(2)]
    blocks = [[backend.asarray(b, device=i) for b in row] for i, row in enumerate(host)]
    got = coll.all_to_all(blocks)
    for j in range(2):
        for i in range(2):
            assert got[j][i].dtype == dtype and backend.device_of(got[j][i]) == j
            assert np.array_equal(gk.to_numpy(got[j][i]), host[i][j])


def test_collectives_run_on_each_devices_current_stream(nccl, rng):
    # A user stream current on each device: every rank's call goes on its own device's
    # stream (a stream of another device is an invalid handle to NCCL)
    import cupy

    backend, coll = nccl
    host = [_draw(rng, 9, "complex64") for _ in range(2)]
    parts = [backend.asarray(h, device=d) for d, h in enumerate(host)]
    user = []
    for d in range(2):  # each stream after the copies made on the device's default stream
        with cupy.cuda.Device(d):
            user.append(cupy.cuda.Stream(non_blocking=True))
            user[d].wait_event(backend.record_event(d))
    # a stream is entered on its own device; it stays current there when the device changes
    with cupy.cuda.Device(1), user[1], cupy.cuda.Device(0), user[0]:
        out = coll.all_reduce(parts)
        want = host[0].astype(np.complex128) + host[1]
        for d, o in enumerate(out):
            with cupy.cuda.Device(d):
                assert rel_err(gk.to_numpy(o), want) < TOL[np.dtype("complex64")]
