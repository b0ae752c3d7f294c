"""Dask arrays with CuPy chunks: each chunk runs on its GPU, results keep CuPy chunks.

Marked ``gpu``: run on a GPU, or on the CuPy simulator with ``--cupy=sim``. Compared in
float64 with the unchunked NumPy computation.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import gpukit as gk

from helpers import TOL, rel_err

pytest.importorskip("dask", reason='pip install -e ".[dask]"')
pytest.importorskip("distributed", reason='pip install -e ".[dask]"')
import dask
import dask.array as da
from distributed import Client, LocalCluster

pytestmark = pytest.mark.gpu
F64 = TOL[np.dtype(np.float64)]


@pytest.fixture(scope="module")
def cp():
    status = gk.available_backends()["cupy"]
    if not status.available:
        pytest.skip(f"backend 'cupy' unavailable: {status.reason}")
    import cupy

    return cupy


PTDS = os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM") == "1"


@pytest.fixture(scope="module")
def local(cp):
    """An in-process cluster: its worker threads compute the CuPy chunks.

    Under the per-thread default stream, one thread per worker (dask-cuda's
    ``LocalCUDACluster`` layout): Dask's own tasks (the sums of a blocked product, the
    final concatenation) hand chunks between a worker's threads, whose streams nothing
    orders (docs/distributed.rst, When things go wrong); on one thread they queue in order.
    """
    with (
        LocalCluster(
            processes=False,
            n_workers=1,
            threads_per_worker=1 if PTDS else 2,
            dashboard_address=":0",
        ) as c,
        Client(c, set_as_default=False) as client,
    ):
        yield client


def _on_gpu(cp, x, chunks):
    return da.from_array(cp.asarray(x), chunks=chunks, asarray=False)


@pytest.mark.parametrize("b_rows", [4, 2], ids=["aligned", "rechunked"])
def test_matmul_cupy_chunks_on_a_cluster(cp, local, rng, b_rows):
    if PTDS and b_rows != 4:
        pytest.skip(
            "Dask's rechunk task (not gpukit's) reads a chunk Dask's communication thread "
            "uploaded on its own per-thread stream, with nothing in between to order them"
        )
    a, b = rng.standard_normal((7, 9)), rng.standard_normal((9, 5))
    c = gk.matmul(_on_gpu(cp, a, (3, 4)), _on_gpu(cp, b, (b_rows, 3)))
    assert type(c._meta) is cp.ndarray
    out = local.compute(c).result(timeout=60)
    cp.cuda.Device().synchronize()  # Dask's last task wrote ``out`` on its thread's stream
    assert type(out) is cp.ndarray
    assert rel_err(out, a @ b) < F64


@pytest.mark.parametrize(
    ("kind", "dtype", "want"),
    [
        ("rfft2", "float64", "complex128"),
        ("rfft2", "float32", "complex64"),
        ("fft2", "complex128", "complex128"),
        ("fft2", "complex64", "complex64"),
    ],
)
def test_fft_cupy_chunks(cp, rng, kind, dtype, want):
    x = rng.standard_normal((4, 6, 8))
    if kind == "fft2":
        x = x + 1j * rng.standard_normal(x.shape)
    y = getattr(gk.fft, kind)(_on_gpu(cp, x.astype(dtype), (1, 6, 8)))
    assert type(y._meta) is cp.ndarray and y.dtype == want
    out = y.compute(scheduler="sync")
    assert type(out) is cp.ndarray and out.dtype == want
    tol = F64 if want == "complex128" else TOL[np.dtype(want)] * 10  # grows like log n
    assert rel_err(out, getattr(np.fft, kind)(x.astype(dtype).astype(x.dtype))) < tol


def test_solve_and_lstsq_cupy_chunks(cp, rng):
    a = rng.standard_normal((6, 6)) + 6 * np.eye(6)
    b = rng.standard_normal(6)
    x = gk.linalg.solve(_on_gpu(cp, a, 2), cp.asarray(b))
    assert type(x._meta) is cp.ndarray
    assert rel_err(x.compute(scheduler="sync"), np.linalg.solve(a, b)) < F64
    tall, rhs = rng.standard_normal((12, 3)), rng.standard_normal(12)
    out = dask.compute(
        *gk.linalg.lstsq(_on_gpu(cp, tall, (4, 3)), _on_gpu(cp, rhs, 4)), scheduler="sync"
    )
    assert all(type(part) is cp.ndarray for part in out)
    ref = np.linalg.lstsq(tall, rhs)
    assert rel_err(out[0], ref[0]) < 1e3 * F64 and int(out[2]) == ref[2]


def test_cg_cupy_chunks_on_a_cluster(cp, local, rng):
    n = 12
    a = 3 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    b = rng.standard_normal(n)
    with local.as_current():
        x, info = gk.linalg.cg(_on_gpu(cp, a, (4, 6)), _on_gpu(cp, b, 4), rtol=1e-10)
        got = local.compute(x).result(timeout=60)
    cp.cuda.Device().synchronize()  # Dask's last task wrote ``got`` on its thread's stream
    assert info.converged and type(got) is cp.ndarray
    assert rel_err(got, np.linalg.solve(a, b)) < 1e-8


def test_predict_cupy_chunks_and_model(cp, rng):
    with gk.use_backend("cupy"):
        model = gk.nn.Sequential(gk.nn.Linear(3, 2, dtype="float64", seed=0))
    x = rng.standard_normal((10, 3))
    y = gk.nn.predict(model, _on_gpu(cp, x, (4, 3)), batch_size=3)
    assert type(y._meta) is cp.ndarray
    w, bias = (gk.to_numpy(p.data) for p in model.parameters())
    assert rel_err(y.compute(scheduler="sync"), x @ w.T + bias) < F64


def test_bias_activation_cupy_chunks(cp, rng):
    if not hasattr(cp, "RawModule"):
        pytest.skip("custom CUDA kernels do not run on the CuPy simulator yet")
    x = rng.standard_normal((6, 4)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    y = gk.kernels.bias_activation(_on_gpu(cp, x, (3, 2)), cp.asarray(bias), "relu")
    ref = np.maximum(x.astype(np.float64) + bias, 0)
    assert rel_err(y.compute(scheduler="sync"), ref) < TOL[np.dtype(np.float32)]


def test_mixed_backends_are_refused(cp, rng):
    a = rng.standard_normal((4, 4))
    with pytest.raises(TypeError, match=r"'b' has numpy\.ndarray chunks but 'a' has cupy\.ndarray"):
        gk.matmul(_on_gpu(cp, a, 2), da.from_array(a, chunks=2))

    def half(block, block_info=None):
        return cp.asarray(block) if block_info[0]["chunk-location"][0] == 1 else block

    lying = da.from_array(a, chunks=(2, 4)).map_blocks(half, meta=np.empty((0, 0)))
    with pytest.raises(TypeError, match=r"a chunk of 'x' is a cupy\.ndarray.*numpy\.ndarray"):
        gk.fft.fft(lying).compute(scheduler="sync")


@pytest.mark.multi_gpu(2)
def test_shards_and_chunks_stay_on_their_devices(cp, rng):
    x = rng.standard_normal((8, 3))
    with gk.use_backend("cupy"):
        s = gk.shard(x, axis=0, devices=[0, 1])
    d = gk.distributed.to_dask(s)
    assert d.chunks == ((4, 4), (3,)) and type(d._meta) is cp.ndarray
    back = gk.distributed.from_dask(d)
    assert back.devices == (0, 1)
    for got, shard in zip(back.shards, s.shards, strict=True):
        assert got.device.id == shard.device.id and got.data.ptr == shard.data.ptr  # no copy
    y = gk.fft.fft(d)
    blocks = dask.compute(*y.to_delayed().ravel(), scheduler="sync")
    assert [b.device.id for b in blocks] == [0, 1]  # each chunk transformed on its own GPU
    got = np.concatenate([cp.asnumpy(b) for b in blocks])
    assert rel_err(got, np.fft.fft(x)) < F64


def test_gpukit_tasks_wait_for_chunks_dask_uploaded(cp, rng):
    """A CuPy chunk given to the cluster as a whole reaches gpukit's task straight from
    Dask's communication thread, which uploaded it on its own stream: under the per-thread
    default stream only the task's wait for the device orders that upload first (the
    simulator's stream checker raises otherwise)."""
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((4, 3))
    with (
        LocalCluster(
            processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0"
        ) as c,
        Client(c, set_as_default=False) as client,
    ):
        chunks = [
            da.from_delayed(dask.delayed(cp.asarray(v)), v.shape, v.dtype, meta=cp.empty((0, 0)))
            for v in (a, b)
        ]
        out = client.compute(gk.matmul(*chunks)).result(timeout=60)
    # Dask's own finalize task wrote ``out`` on a worker thread's stream (not gpukit's to order)
    cp.cuda.Device().synchronize()
    assert type(out) is cp.ndarray and rel_err(out, a @ b) < F64


def test_gpukit_computes_device_chunks_on_the_calling_thread(cp):
    """Under CuPy's per-thread default stream Dask's threaded scheduler would hand chunks
    between threads whose streams nothing orders: what gpukit computes itself on device
    chunks runs on the calling thread, unless a scheduler is configured."""
    import threading

    seen: list[str] = []

    def note(block):
        seen.append(threading.current_thread().name)
        return block

    x = da.from_array(cp.arange(8.0), chunks=2, asarray=False).map_blocks(note, meta=cp.empty(0))
    assert gk.to_numpy(x).tolist() == list(range(8))
    assert set(seen) == {threading.current_thread().name}
    y = gk.distributed.from_dask(da.from_array(cp.arange(4.0), chunks=4, asarray=False))
    assert gk.to_numpy(y).tolist() == [0.0, 1.0, 2.0, 3.0]
