"""gpukit on Dask arrays: lazy results, right for every chunking, on two kinds of cluster.

Each computation runs on a module-scoped cluster, once in-process (``processes=False``)
and once with two worker processes, compared in float64 with the unchunked NumPy result.
"""

from __future__ import annotations

import numpy as np
import pytest
from subproc import run_python

import gpukit as gk
from gpukit._select import registry as _registry

from helpers import TOL, rel_err

dask = pytest.importorskip("dask", reason='pip install -e ".[dask]"')
pytest.importorskip("distributed", reason='pip install -e ".[dask]"')
import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

TIMEOUT = 60  # seconds any one computation may take before the test fails (never hangs)


@pytest.fixture(scope="module", params=["threads", "processes"])
def client(request: pytest.FixtureRequest):
    """An in-process cluster, or two worker processes; current for the tests using it."""
    if request.param == "threads":
        kwargs = {"processes": False, "n_workers": 1, "threads_per_worker": 2}
    else:
        kwargs = {"processes": True, "n_workers": 2, "threads_per_worker": 1}
    with (
        LocalCluster(dashboard_address=None, **kwargs) as cluster,
        Client(cluster, set_as_default=False) as c,
    ):
        yield c


def compute(client: Client, x):
    """``x`` computed on ``client`` with a deadline."""
    return client.compute(x).result(timeout=TIMEOUT)


def _chunked(rng, shape, chunks, dtype="float64"):
    x = rng.standard_normal(shape).astype(dtype)
    return x, da.from_array(x, chunks=chunks)


# -- the kind ------------------------------------------------------------------------------


def test_import_gpukit_registers_the_kind_without_importing_dask():
    code = (
        "import sys, gpukit\n"
        "from gpukit._dispatch import kinds\n"
        "print('dask' in kinds._by_name, 'dask' in sys.modules)\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False"]


def test_operation_without_dask_implementation_says_the_way_on(rng):
    _, x = _chunked(rng, (4, 4), 2)
    with pytest.raises(TypeError, match=r"gk\.linalg\.inv does not accept a Dask array.*compute"):
        gk.linalg.inv(x)


def test_results_are_lazy_with_meta_and_built_without_computing():
    calls = []

    def boom(block):
        calls.append(1)
        raise RuntimeError("computed")

    x = da.ones((6, 4), chunks=(3, 4)).map_blocks(boom, meta=np.empty((0, 0)))
    for y in (
        gk.matmul(x, np.ones((4, 2))),
        gk.fft.fft(x),
        gk.kernels.bias_activation(x, np.zeros(4), "relu"),
    ):
        assert isinstance(y, da.Array)
        assert type(y._meta) is np.ndarray
    assert not calls


# -- matmul --------------------------------------------------------------------------------

MATMUL_CASES = [
    ((7, 9), (3, 4), (9, 5), (2, 3)),  # irregular chunks, contracted chunks differ
    ((6, 8), (6, 8), (8, 4), (8, 4)),  # one chunk each
    ((9,), (4,), (9, 5), (3, 5)),  # 1-D @ 2-D
    ((7, 9), (7, 2), (9,), (5,)),  # 2-D @ 1-D
    ((4, 1, 3, 5), (2, 1, 2, 3), (6, 5, 2), (3, 2, 1)),  # batches broadcast
]


@pytest.mark.parametrize("case", MATMUL_CASES, ids=lambda c: f"{c[0]}@{c[2]}")
def test_matmul_matches_numpy_for_every_chunking(client, rng, case):
    a_shape, a_chunks, b_shape, b_chunks = case
    a, da_a = _chunked(rng, a_shape, a_chunks)
    b, da_b = _chunked(rng, b_shape, b_chunks)
    c = gk.matmul(da_a, da_b)
    assert isinstance(c, da.Array) and c.shape == (a @ b).shape
    assert rel_err(compute(client, c), a @ b) < TOL[np.dtype(np.float64)]


def test_matmul_with_host_operand_and_float32(client, rng):
    a, da_a = _chunked(rng, (10, 6), (4, 3), "float32")
    w = rng.standard_normal((6, 3)).astype(np.float32)
    c = gk.matmul(da_a, w)
    assert c.dtype == np.float32 and c._meta.dtype == np.float32
    out = compute(client, c)
    assert out.dtype == np.float32
    ref = a.astype(np.float64) @ w.astype(np.float64)
    assert rel_err(out, ref) < TOL[np.dtype(np.float32)]


def test_matmul_shape_and_dtype_errors_name_both(rng):
    _, x = _chunked(rng, (4, 3), 2)
    with pytest.raises(ValueError, match=r"a has shape \(4, 3\) and b has shape \(4, 2\)"):
        gk.matmul(x, np.ones((4, 2)))
    with pytest.raises(TypeError, match="argument 'b' has dtype <U1"):
        gk.matmul(x, np.array([["a"]] * 3))
    with pytest.raises(ValueError, match="precision"):
        gk.matmul(x, np.ones((3, 2)), precision="low")


def test_matmul_tiled_on_dask(client, rng):
    a, da_a = _chunked(rng, (9, 7), (4, 3), "float32")
    b, da_b = _chunked(rng, (7, 5), (3, 5), "float32")
    out = compute(client, gk.kernels.matmul_tiled(da_a, da_b))
    assert rel_err(out, a.astype(np.float64) @ b) < TOL[np.dtype(np.float32)]


# -- FFT -----------------------------------------------------------------------------------

FFT_CASES = [
    ("fft", {}, (6, 16), (2, 16), np.fft.fft),
    ("ifft", {"n": 10}, (5, 8), (2, 8), lambda x, n: np.fft.ifft(x, n=n)),
    ("rfft", {"axis": 0}, (16, 6), (16, 4), lambda x, axis: np.fft.rfft(x, axis=axis)),
    ("irfft", {}, (4, 9), (3, 9), np.fft.irfft),
    ("fft2", {}, (3, 8, 6), (1, 8, 6), np.fft.fft2),
    ("rfftn", {"axes": (1, 2)}, (3, 8, 6), (2, 8, 6), lambda x, axes: np.fft.rfftn(x, axes=axes)),
    ("ifftn", {"norm": "ortho"}, (4, 6), (4, 6), lambda x, norm: np.fft.ifftn(x, norm=norm)),
]


@pytest.mark.parametrize("case", FFT_CASES, ids=lambda c: c[0])
def test_batched_fft_matches_numpy(client, rng, case):
    name, kwargs, shape, chunks, ref = case
    x, dx = _chunked(rng, shape, chunks)
    y = getattr(gk.fft, name)(dx, **kwargs)
    expected = ref(x, **kwargs)
    assert isinstance(y, da.Array) and y.shape == expected.shape and y.dtype == expected.dtype
    assert rel_err(compute(client, y), expected) < TOL[np.dtype(np.float64)]


def test_fft_single_precision_stays_single(rng):
    x, dx = _chunked(rng, (4, 8), (2, 8), "float32")
    y = gk.fft.rfft(dx)
    assert y.dtype == np.complex64 and y._meta.dtype == np.complex64
    out = y.compute(scheduler="sync")
    assert out.dtype == np.complex64
    assert rel_err(out, np.fft.rfft(x.astype(np.float64))) < TOL[np.dtype(np.float32)]


def test_fft_along_a_chunked_axis_names_rechunk(rng):
    _, dx = _chunked(rng, (4, 8), (2, 4))
    with pytest.raises(ValueError, match=r"transformed axis 1.*x\.rechunk\(\{1: -1\}\)"):
        gk.fft.fft(dx)
    with pytest.raises(ValueError, match=r"transformed axis 0"):
        gk.fft.fftn(dx)


def test_fft_argument_errors_on_dask(rng):
    _, dx = _chunked(rng, (4, 8), (2, 8))
    with pytest.raises(TypeError, match="out is not supported with a Dask array"):
        gk.fft.fft(dx, out=np.empty((4, 8), complex))
    with pytest.raises(ValueError, match="norm must be"):
        gk.fft.fft(dx, norm="twice")
    with pytest.raises(ValueError, match="out of range"):
        gk.fft.fft(dx, axis=2)
    with pytest.raises(TypeError, match="must be real"):
        gk.fft.rfft(dx.astype(complex))


# -- chunks on mixed backends --------------------------------------------------------------


class _OtherChunk(np.ndarray):
    """A chunk type other than the one the meta announces (CPU stand-in for CuPy)."""


def test_chunk_of_another_type_than_meta_is_refused_not_recomputed(client, rng):
    _, dx = _chunked(rng, (6, 4), (3, 4))
    lying = dx.map_blocks(lambda b: b.view(_OtherChunk), meta=np.empty((0, 0)))
    with pytest.raises(TypeError, match=r"a chunk of 'x' is a .*_OtherChunk.*numpy\.ndarray"):
        compute(client, gk.fft.fft(lying))


# -- shards and chunks ---------------------------------------------------------------------


@pytest.fixture
def cpu3():
    with gk.use_backend(type(_registry.load("numpy"))(3)) as backend:
        yield backend


def test_to_dask_one_chunk_per_shard_without_copy(cpu3, rng):
    x = rng.standard_normal((7, 3))
    s = gk.shard(x, axis=0)
    d = gk.distributed.to_dask(s)
    assert d.chunks == ((3, 2, 2), (3,)) and type(d._meta) is np.ndarray
    blocks = dask.compute(*d.to_delayed().ravel(), scheduler="sync")
    for block, shard in zip(blocks, s.shards, strict=True):
        assert np.shares_memory(block, shard)
    assert rel_err(d.compute(scheduler="sync"), x) == 0


def test_from_dask_one_shard_per_chunk(cpu3, rng):
    x, dx = _chunked(rng, (4, 9), (4, 3))
    s = gk.distributed.from_dask(dx)
    assert (s.axis, s.sizes, s.devices) == (1, (3, 3, 3), (0, 1, 2))
    assert rel_err(gk.to_numpy(s), x) == 0
    back = gk.distributed.to_dask(s)
    assert back.chunks == dx.chunks and rel_err(back.compute(scheduler="sync"), x) == 0


def test_gk_shard_of_dask_array_splits_like_array_split(cpu3, rng):
    x, dx = _chunked(rng, (8, 2), (5, 1))
    s = gk.shard(dx, axis=0)
    assert s.sizes == (3, 3, 2) and s.devices == (0, 1, 2)
    assert rel_err(gk.to_numpy(s), x) == 0


def test_from_dask_errors(cpu3, rng):
    _, dx = _chunked(rng, (4, 4), (2, 2))
    with pytest.raises(ValueError, match=r"chunked along axes \[0, 1\].*rechunk"):
        gk.distributed.from_dask(dx)
    with pytest.raises(ValueError, match=r"4 chunks along axis 0.*out of range"):
        gk.distributed.from_dask(da.ones(8, chunks=2))
    with pytest.raises(ValueError, match="share devices"):
        gk.distributed.from_dask(da.ones(4, chunks=2), devices=[1, 1])
    with pytest.raises(TypeError, match="must be a Dask array"):
        gk.distributed.from_dask(np.ones(3))
    with pytest.raises(TypeError, match="must be a ShardedArray"):
        gk.distributed.to_dask(np.ones(3))


def test_to_numpy_of_dask_array(client, rng):
    x, dx = _chunked(rng, (5, 3), (2, 3))
    with client.as_current():
        out = gk.to_numpy(gk.matmul(dx, np.eye(3)))
    assert type(out) is np.ndarray and rel_err(out, x) < TOL[np.dtype(np.float64)]
