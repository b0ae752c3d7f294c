"""Several devices on real GPUs (cupy backend): the CPU tests' contract on CUDA devices.

With one GPU: the N = 1 path and the worker's own stream. With ``multi_gpu(n)``:
sharding, peer copies / NCCL collectives and device mismatches on n GPUs.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk
from gpukit.testing import random_spd

from helpers import TOL, rel_err, terms_err

pytestmark = pytest.mark.gpu


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
    assert terms_err(gk.sharding.sum(s), x.sum(), np.abs(x).sum()) < 1e-12  # terms cancel


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_two_gpus_norms_whose_squares_underflow(cupy_backend, rng, axis):
    """The norm rescue reaches CuPy shards through NumPy's ufunc protocol (frexp, ldexp):
    float32 entries of 1e-30 have squares that flush to zero, their norm is 1e-30-ish."""
    x = (rng.standard_normal((9, 4)) * 1e-30).astype(np.float32)
    got = gk.linalg.norm(gk.shard(x, devices=[0, 1]), axis=axis)
    want = np.linalg.norm(x.astype(np.float64) * 2.0**100, axis=axis) / 2.0**100
    assert rel_err(np.asarray(gk.to_numpy(got), np.float64), want) < TOL[np.dtype("float32")]


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


def test_single_gpu_sharded_cg(cupy_backend, rng):
    import scipy.sparse as sp

    a, b = random_spd(200, rng=rng), rng.standard_normal(200)
    for A in (gk.shard(a, devices=[0]), sp.csr_matrix(a)):
        x, info = gk.linalg.cg(A, gk.shard(b, devices=[0]), rtol=1e-12)
        assert info.converged and x.shards[0].device.id == 0
        assert rel_err(x, np.linalg.solve(a, b)) < 1e-9


def _train(model, rng_seed, steps=4):
    rng = np.random.default_rng(rng_seed)
    opt = gk.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = gk.nn.CrossEntropyLoss()
    for n in [17, 3, 8, 1][:steps]:
        x = rng.standard_normal((n, 6))
        y = rng.integers(0, 3, n)
        opt.zero_grad()
        loss_fn(model(x), y)
        model.backward(loss_fn.backward(), need_input_grad=False)
        opt.step()
    return {k: gk.to_numpy(v) for k, v in model.state_dict().items()}


def _mlp():
    return gk.nn.Sequential(
        gk.nn.Linear(6, 32, seed=0), gk.nn.ReLU(), gk.nn.Linear(32, 3, seed=1)
    ).to("cupy", device=0, dtype="float64")


def test_single_gpu_data_parallel_matches_plain_model(cupy_backend):
    dp = gk.nn.DataParallel(_mlp(), devices=[0])
    got, want = _train(dp, 0), _train(_mlp(), 0)
    assert all(rel_err(got[k], want[k]) < 1e-12 for k in want)


@pytest.mark.multi_gpu(2)
def test_two_gpus_sharded_cg_and_data_parallel(cupy_backend, rng):
    a, b = random_spd(301, rng=rng), rng.standard_normal(301)
    x, info = gk.linalg.cg(gk.shard(a, devices=[0, 1]), b, rtol=1e-12)
    assert info.converged and [s.device.id for s in x.shards] == [0, 1]
    assert rel_err(x, np.linalg.solve(a, b)) < 1e-9
    dp = gk.nn.DataParallel(_mlp(), devices=[0, 1])
    assert dp.replicas[1][0].weight.data.device.id == 1
    got, want = _train(dp, 1), _train(_mlp(), 1)
    assert all(rel_err(got[k], want[k]) < 1e-10 for k in want)


@pytest.mark.multi_gpu(2)
def test_model_on_the_second_gpu_trains_there(cupy_backend, rng):
    """Losses, Dropout and fit work on the model's device, not on the current one (0)."""
    x = rng.standard_normal((64, 6)).astype(np.float32)
    y = rng.integers(0, 3, 64)
    net = gk.nn.Sequential(
        gk.nn.Linear(6, 16, seed=0), gk.nn.ReLU(), gk.nn.Dropout(0.2, seed=1),
        gk.nn.Linear(16, 3, seed=2),
    ).to("cupy", device=1)  # fmt: skip
    opt = gk.optim.SGD(net.parameters(), lr=0.1)
    loss_fn = gk.nn.CrossEntropyLoss()
    assert cupy_backend.current_device() == 0
    out = net(x)
    loss_fn(out, y)
    g = loss_fn.backward()
    assert out.device.id == 1 and g.device.id == 1
    net.backward(g, need_input_grad=False)
    assert all(p.grad.device.id == 1 for p in net.parameters())
    hist = gk.nn.fit(net, loss_fn, opt, x, y, epochs=2, batch_size=16, validation=(x, y),
                     progress=False)  # fmt: skip
    assert np.isfinite(hist["val_loss"]).all()
    mse = gk.nn.MSELoss()
    mse(net(x), np.zeros((64, 3), np.float32))
    assert mse.backward().device.id == 1


@pytest.mark.multi_gpu(2)
def test_two_gpus_broadcast_from_second_root(cupy_backend, rng):
    x = rng.standard_normal((6, 4))
    src = cupy_backend.asarray(x, device=1)[:, ::2]  # non-contiguous, on the root
    out = cupy_backend.collectives((0, 1)).broadcast(src, root=1)
    assert [o.device.id for o in out] == [0, 1]
    assert all(np.array_equal(gk.to_numpy(o), x[:, ::2]) for o in out)


# -- sharded arrays as arrays, the all-to-all and the distributed FFT on GPUs ---------------------
def test_single_gpu_sharded_array_ops(cupy_backend, rng):
    x = rng.standard_normal((33, 16))
    s = gk.shard(x, devices=[0])
    assert rel_err(np.sin(s) * 2 + s, np.sin(x) * 2 + x) < 1e-12
    assert rel_err(s.sum(axis=0), x.sum(axis=0)) < 1e-12 and rel_err(s.max(), x.max()) == 0
    assert rel_err(gk.fft.fft2(s), np.fft.fft2(x)) < 1e-12  # one device: all local
    gk.reset_transfer_stats()
    assert np.array_equal(np.asarray(s), x)  # gathered on the host: counted
    assert gk.transfer_stats().device_to_host.calls == 1
    with gk.transfer_guard("disallow"), pytest.raises(gk.TransferGuardError):
        np.asarray(s)


@pytest.mark.multi_gpu(2)
def test_two_gpus_elementwise_reductions_and_guard(cupy_backend, rng):
    x, y = rng.standard_normal((9, 5)), rng.standard_normal((9, 5))
    sx, sy = gk.shard(x, devices=[0, 1]), gk.shard(y, devices=[0, 1])
    z = sx * sy + np.exp(sx)
    assert [sh.device.id for sh in z.shards] == [0, 1]
    assert rel_err(z, x * y + np.exp(x)) < 1e-12
    with gk.transfer_guard("disallow"):  # computed on the GPUs: nothing crosses to the host
        total, big = np.sum(z), z.max(axis=0)
        norm = gk.linalg.norm(sx, ord=1, axis=1)
    assert rel_err(total, (x * y + np.exp(x)).sum()) < 1e-12
    assert rel_err(big, (x * y + np.exp(x)).max(axis=0)) == 0
    assert rel_err(norm, np.abs(x).sum(axis=1)) < 1e-12


def _all_to_all_check(backend, coll, devs, rng, dtype):
    def block(shape):
        x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        return x.astype(dtype) if np.dtype(dtype).kind == "c" else x.real.astype(dtype)

    blocks = [
        [backend.asarray(block((3, 4 + j)), device=d)[:, ::2] for j in devs] for d in devs
    ]  # strided blocks, as an exchange cuts them
    received = coll.all_to_all(blocks)
    for j, d in enumerate(devs):
        for i in range(len(devs)):
            assert received[j][i].device.id == d and received[j][i].dtype == dtype
            assert np.array_equal(gk.to_numpy(received[j][i]), gk.to_numpy(blocks[i][j]))


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_two_gpus_all_to_all_peer_copies_and_nccl(cupy_backend, rng, dtype):
    from gpukit.backend.collectives import PeerCopyCollectives

    peer = PeerCopyCollectives(cupy_backend, (0, 1))
    _all_to_all_check(cupy_backend, peer, (0, 1), rng, np.dtype(dtype))
    from gpukit_cupy.collectives import NcclCollectives

    coll = cupy_backend.collectives((0, 1))
    if not isinstance(coll, NcclCollectives):
        pytest.skip("this CuPy has no NCCL")
    _all_to_all_check(cupy_backend, coll, (0, 1), rng, np.dtype(dtype))  # complex: 2 floats


@pytest.mark.multi_gpu(2)
@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_two_gpus_vector_fft_keeps_single_precision(cupy_backend, rng, dtype):
    """The four-step transform's exchanges and twiddles stay in single precision."""
    x = rng.standard_normal(1000) + 1j * rng.standard_normal(1000)
    x = x.astype(dtype) if dtype == "complex64" else x.real.astype(dtype)
    got = gk.fft.fft(gk.shard(x, devices=[0, 1]))
    assert got.dtype == np.complex64
    assert rel_err(got, np.fft.fft(x.astype(np.complex128))) < TOL[np.dtype(np.complex64)] * 10


@pytest.mark.multi_gpu(4)
def test_four_gpus_reshard_counts_its_bytes(cupy_backend, rng):
    x = rng.standard_normal((8, 12))
    s = gk.shard(x, devices=[0, 1, 2, 3])
    gk.reset_transfer_stats()
    r = gk.reshard(s, axis=1)
    moved = gk.transfer_stats()
    assert [sh.device.id for sh in r.shards] == [0, 1, 2, 3] and r.axis == 1
    assert np.array_equal(gk.to_numpy(r), x)
    assert moved.device_to_device.calls == 12 and moved.device_to_device.bytes == x.nbytes * 3 // 4
    back = gk.reshard(r, axis=0, devices=[3, 1])
    assert [sh.device.id for sh in back.shards] == [3, 1]
    assert np.array_equal(gk.to_numpy(back), x)


@pytest.mark.multi_gpu(4)
@pytest.mark.parametrize("kind", ["fft2", "ifft2", "rfft2", "irfft2"])
def test_four_gpus_distributed_fft2(cupy_backend, rng, kind):
    x = rng.standard_normal((37, 50))
    if kind in ("fft2", "ifft2", "irfft2"):
        x = x + 1j * rng.standard_normal(x.shape)
    want = getattr(np.fft, kind)(x, norm="ortho")
    for split in (0, 1):
        got = getattr(gk.fft, kind)(gk.shard(x, axis=split, devices=[0, 1, 2, 3]), norm="ortho")
        assert got.axis == split and [sh.device.id for sh in got.shards] == [0, 1, 2, 3]
        assert rel_err(got, want) < 1e-12


@pytest.mark.multi_gpu(4)
def test_four_gpus_vector_fft(cupy_backend, rng):
    x = rng.standard_normal(1000) + 1j * rng.standard_normal(1000)
    got = gk.fft.fft(gk.shard(x, devices=[0, 1, 2, 3]))
    assert rel_err(got, np.fft.fft(x)) < 1e-12
