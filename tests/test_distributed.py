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


def _cluster(**kwargs):
    with (
        LocalCluster(dashboard_address=":0", **kwargs) as cluster,
        Client(cluster, set_as_default=False) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def local():
    """An in-process cluster (worker threads in this process)."""
    yield from _cluster(processes=False, n_workers=1, threads_per_worker=2)


@pytest.fixture(scope="module")
def procs():
    """Two worker processes: every task's function and data are pickled to them."""
    yield from _cluster(processes=True, n_workers=2, threads_per_worker=1)


@pytest.fixture(params=["threads", "processes"])
def client(request: pytest.FixtureRequest):
    """Each kind of cluster in turn (the module's two clusters, started once)."""
    return request.getfixturevalue("local" if request.param == "threads" else "procs")


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
def test_matmul_matches_numpy_for_every_chunking(local, rng, case):
    a_shape, a_chunks, b_shape, b_chunks = case
    a, da_a = _chunked(rng, a_shape, a_chunks)
    b, da_b = _chunked(rng, b_shape, b_chunks)
    c = gk.matmul(da_a, da_b)
    assert isinstance(c, da.Array) and c.shape == (a @ b).shape
    assert rel_err(compute(local, c), a @ b) < TOL[np.dtype(np.float64)]


def test_matmul_with_host_operand_and_float32(client, rng):
    """Also the operand that is not a Dask array travels to the workers."""
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


def test_matmul_tiled_on_dask(local, rng):
    a, da_a = _chunked(rng, (9, 7), (4, 3), "float32")
    b, da_b = _chunked(rng, (7, 5), (3, 5), "float32")
    out = compute(local, gk.kernels.matmul_tiled(da_a, da_b))
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


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "complex64"])
@pytest.mark.parametrize("case", FFT_CASES, ids=lambda c: c[0])
def test_batched_fft_matches_numpy(local, rng, case, dtype):
    """Each precision kept (NumPy 2's rule), compared with the float64 transform."""
    name, kwargs, shape, chunks, ref = case
    if name.startswith("rfft") and dtype.startswith("complex"):
        pytest.skip("a real-input transform (complex input is refused, test below)")
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    single = x.astype(dtype)
    y = getattr(gk.fft, name)(da.from_array(single, chunks=chunks), **kwargs)
    want = ref(single.astype(x.dtype), **kwargs)  # the same values, in double precision
    assert isinstance(y, da.Array) and y.shape == want.shape
    assert y.dtype == ref(single, **kwargs).dtype  # complex64/float32 from single precision
    out = compute(local, y)
    assert out.dtype == y.dtype
    single_precision = dtype in ("float32", "complex64")  # error grows like log n
    tol = TOL[np.dtype(dtype)] * 10 if single_precision else TOL[np.dtype(np.float64)]
    assert rel_err(out, want) < tol


def test_batched_fft_on_each_cluster(client, rng):
    x, dx = _chunked(rng, (6, 3, 16), (2, 3, 16))
    y = gk.fft.rfft2(dx, axes=(1, 2))
    assert rel_err(compute(client, y), np.fft.rfft2(x, axes=(1, 2))) < TOL[np.dtype(np.float64)]


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


# -- kernels -------------------------------------------------------------------------------


def _act_relu(z):
    return np.maximum(z, 0)


def test_bias_activation_forward_and_backward(client, rng):
    x, dx = _chunked(rng, (7, 6), (3, 4))
    g, dg = _chunked(rng, (7, 6), (4, 2))
    bias = rng.standard_normal(6)
    y = gk.kernels.bias_activation(dx, bias, "relu")
    assert rel_err(compute(client, y), _act_relu(x + bias)) < TOL[np.dtype(np.float64)]
    grad_x, grad_b = gk.kernels.bias_activation_backward(dg, dx, bias, "relu")
    assert grad_b.shape == (6,) and isinstance(grad_b, da.Array)
    ref_x = g * (x + bias > 0)
    got_x, got_b = client.compute([grad_x, grad_b], sync=False)
    assert rel_err(got_x.result(timeout=TIMEOUT), ref_x) < TOL[np.dtype(np.float64)]
    assert rel_err(got_b.result(timeout=TIMEOUT), ref_x.sum(axis=0)) < TOL[np.dtype(np.float64)]


def test_identity_backward_passes_the_gradient_through(client, rng):
    """As on every backend, the identity's ``grad_x`` is ``grad_y`` itself."""
    _, dx = _chunked(rng, (7, 6), (3, 4))
    g, dg = _chunked(rng, (7, 6), (4, 2))
    grad_x, grad_b = gk.kernels.bias_activation_backward(dg, dx, rng.standard_normal(6), "identity")
    assert grad_x is dg
    got_b = client.compute(grad_b, sync=False).result(timeout=TIMEOUT)
    assert rel_err(got_b, g.sum(axis=0)) < TOL[np.dtype(np.float64)]


def test_bias_activation_backward_from_the_output(client, rng):
    """``output=``: the derivative from the chunks of the forward result (chunked unlike x)."""
    x, dx = _chunked(rng, (7, 6), (3, 4))
    g, dg = _chunked(rng, (7, 6), (4, 2))
    bias = rng.standard_normal(6)
    y = 1.0 / (1.0 + np.exp(-(x + bias)))
    dy = da.from_array(y, chunks=(2, 3))
    grad_x, grad_b = gk.kernels.bias_activation_backward(dg, dx, bias, "sigmoid", output=dy)
    ref_x = g * y * (1.0 - y)
    got_x, got_b = client.compute([grad_x, grad_b], sync=False)
    assert rel_err(got_x.result(timeout=TIMEOUT), ref_x) < TOL[np.dtype(np.float64)]
    assert rel_err(got_b.result(timeout=TIMEOUT), ref_x.sum(axis=0)) < TOL[np.dtype(np.float64)]
    with pytest.raises(ValueError, match="output has shape"):
        gk.kernels.bias_activation_backward(dg, dx, bias, "sigmoid", output=dy[:3])


def test_softmax_cross_entropy_row_chunks(client, rng):
    logits, dl = _chunked(rng, (9, 5), (4, 5))
    labels = rng.integers(0, 5, 9)
    loss, probs = gk.kernels.softmax_cross_entropy(dl, da.from_array(labels, chunks=4))
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    ref_p = z / z.sum(axis=1, keepdims=True)
    ref_loss = -np.log(ref_p[np.arange(9), labels])
    assert rel_err(compute(client, loss), ref_loss) < TOL[np.dtype(np.float64)]
    assert rel_err(compute(client, probs), ref_p) < TOL[np.dtype(np.float64)]
    grad = gk.kernels.softmax_cross_entropy_backward(probs, labels, da.full(9, 1 / 9, chunks=4))
    ref_grad = (ref_p - np.eye(5)[labels]) / 9
    assert rel_err(compute(client, grad), ref_grad) < TOL[np.dtype(np.float64)]


def test_row_wise_kernel_needs_whole_rows(rng):
    _, dl = _chunked(rng, (6, 4), (3, 2))
    with pytest.raises(ValueError, match=r"class axis 1.*logits\.rechunk\(\{1: -1\}\)"):
        gk.kernels.softmax_cross_entropy(dl, np.zeros(6, int))


def test_in_place_kernels_have_no_dask_implementation(rng):
    _, p = _chunked(rng, (4,), 2)
    with pytest.raises(TypeError, match=r"gk\.kernels\.sgd_update does not accept a Dask array"):
        gk.kernels.sgd_update(p, p, lr=0.1)


# -- dense linear algebra ------------------------------------------------------------------


@pytest.mark.parametrize("assume_a", ["gen", "sym", "pos"])
@pytest.mark.parametrize("rhs", [(9,), (9, 2)], ids=["vector", "matrix"])
def test_solve_delegates_to_dask_linalg(local, rng, assume_a, rhs):
    m = rng.standard_normal((9, 9))
    a = m @ m.T + 9 * np.eye(9) if assume_a != "gen" else m + 9 * np.eye(9)
    b = rng.standard_normal(rhs)
    x = gk.linalg.solve(
        da.from_array(a, chunks=(4, 3)), da.from_array(b, chunks=4), assume_a=assume_a
    )
    assert x.shape == rhs
    assert rel_err(compute(local, x), np.linalg.solve(a, b)) < 1e3 * TOL[np.dtype(np.float64)]


def test_solve_batched_runs_gpukit_per_chunk(client, rng):
    a = rng.standard_normal((5, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((5, 4, 2))
    x = gk.linalg.solve(da.from_array(a, chunks=(2, 4, 2)), da.from_array(b, chunks=(3, 4, 2)))
    assert rel_err(compute(client, x), np.linalg.solve(a, b)) < TOL[np.dtype(np.float64)]
    v = rng.standard_normal(4)
    xv = gk.linalg.solve(da.from_array(a, chunks=(2, 4, 4)), v)
    assert rel_err(compute(client, xv), np.linalg.solve(a, v)) < TOL[np.dtype(np.float64)]


def test_solve_singular_raises_linalgerror_when_computed():
    x = gk.linalg.solve(da.zeros((4, 4), chunks=2), np.ones(4))
    with pytest.raises(np.linalg.LinAlgError):
        x.compute(scheduler="sync")


@pytest.mark.parametrize("shape", [(24, 5), (5, 24)], ids=["tall", "wide"])
def test_lstsq_matches_numpy(local, rng, shape):
    a = rng.standard_normal(shape)
    b = rng.standard_normal((shape[0], 2))
    out = gk.linalg.lstsq(da.from_array(a, chunks=5), da.from_array(b, chunks=5))
    assert all(isinstance(part, da.Array) for part in out)
    x, res, rank, s = local.compute(list(out), sync=True)
    ref = np.linalg.lstsq(a, b)
    assert rel_err(x, ref[0]) < 1e3 * TOL[np.dtype(np.float64)]
    assert res.shape == ref[1].shape and (res.size == 0 or rel_err(res, ref[1]) < 1e-10)
    assert int(rank) == ref[2]
    assert rel_err(s, ref[3]) < 1e3 * TOL[np.dtype(np.float64)]


def test_lstsq_rank_deficient_gives_minimum_norm(rng):
    a = rng.standard_normal((20, 4))
    a[:, 3] = a[:, 2]
    b = rng.standard_normal(20)
    x, _, rank, _ = dask.compute(
        *gk.linalg.lstsq(da.from_array(a, chunks=(6, 4)), b), scheduler="sync"
    )
    ref = np.linalg.lstsq(a, b)
    assert int(rank) == ref[2] == 3
    assert rel_err(x, ref[0]) < 1e3 * TOL[np.dtype(np.float64)]


# -- inference -----------------------------------------------------------------------------


def test_predict_row_chunks_model_shipped_once(client, rng):
    with gk.use_backend("numpy"):  # a host model for host chunks
        model = gk.nn.Sequential(
            gk.nn.Linear(3, 8, dtype="float64", seed=0),
            gk.nn.ReLU(),
            gk.nn.Linear(8, 2, dtype="float64", seed=1),
        )
    x = rng.standard_normal((11, 3))
    y = gk.nn.predict(model, da.from_array(x, chunks=(4, 2)), batch_size=3)
    assert y.shape == (11, 2) and y.chunks[0] == (4, 4, 3) and type(y._meta) is np.ndarray
    model_keys = [k for k in y.dask if "Sequential" in str(k) or "delayed" in str(k).lower()]
    assert len(model_keys) <= 1
    w1, b1 = (gk.to_numpy(p.data) for p in model[0].parameters())
    w2, b2 = (gk.to_numpy(p.data) for p in model[2].parameters())
    ref = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    assert rel_err(compute(client, y), ref) < TOL[np.dtype(np.float64)]


# -- Krylov solvers ------------------------------------------------------------------------


def _laplacian(n):
    return 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)


def _stencil(v):
    """The 1-D Laplacian as a stencil on a chunked vector (zero boundary)."""
    return v.map_overlap(_stencil_chunk, depth=1, boundary=0, dtype=v.dtype, meta=v._meta)


def _stencil_chunk(c):
    out = 2 * c
    out[1:] -= c[:-1]
    out[:-1] -= c[1:]
    return out


@pytest.mark.parametrize("method", ["cg", "bicgstab", "minres"])
def test_krylov_on_a_dask_matrix(rng, method):
    """On Dask's local threaded scheduler (the clusters are test_cg_on_each_cluster's)."""
    n = 16
    a = _laplacian(n) + 0.5 * np.eye(n)
    b = rng.standard_normal(n)
    x, info = getattr(gk.linalg, method)(
        da.from_array(a, chunks=(6, 8)), da.from_array(b, chunks=6), rtol=1e-10
    )
    assert isinstance(x, da.Array) and x.chunks == ((6, 6, 4),)
    assert info.converged and info.method == method
    assert type(info) is gk.linalg.IterativeInfo and info == 0  # SciPy's code, as on one device
    assert info.residual_norm <= info.tolerance
    assert rel_err(x.compute(), np.linalg.solve(a, b)) < 1e-8


@pytest.mark.parametrize("method", ["cg", "bicgstab", "minres"])
def test_krylov_float16_is_solved_in_float32_as_on_one_device(rng, method):
    """float16 systems are solved in float32, the dtype gk.linalg's solvers use everywhere
    (the Dask ones iterated in float16; found by the capability test)."""
    n = 16
    a = (_laplacian(n) + 0.5 * np.eye(n)).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    x, info = getattr(gk.linalg, method)(da.from_array(a, chunks=(6, 8)), da.from_array(b, 6))
    assert x.dtype == np.float32 and x.compute().dtype == np.float32 and info.converged
    want = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    assert rel_err(x.compute(), want) < 1e-4


def test_cg_on_a_stencil_operator_with_callback_and_x0(rng):
    n = 16
    b = rng.standard_normal(n)
    seen = []
    x, info = gk.linalg.cg(
        _stencil, da.from_array(b, chunks=6), x0=np.zeros(n), rtol=1e-10,
        callback=lambda v: seen.append(isinstance(v, da.Array)),
    )  # fmt: skip
    assert info.converged and seen and all(seen) and len(seen) == info.iterations
    assert rel_err(x.compute(), np.linalg.solve(_laplacian(n), b)) < 1e-8


@pytest.mark.parametrize("method", ["cg", "bicgstab", "minres"])
def test_x0_is_positional_on_dask_arrays_as_in_scipy(rng, method):
    n = 16
    a, b = _laplacian(n) + 0.5 * np.eye(n), rng.standard_normal(n)
    x0 = np.linalg.solve(a, b)  # the answer: no iteration is needed from there
    x, info = getattr(gk.linalg, method)(
        da.from_array(a, chunks=(6, 8)), da.from_array(b, chunks=6), da.from_array(x0, chunks=6)
    )
    assert info == 0 and info.iterations == 0
    assert rel_err(x.compute(), x0) < 1e-12


def test_krylov_reports_non_convergence_honestly(rng):
    b = da.from_array(rng.standard_normal(16), chunks=6)
    with pytest.warns(gk.ConvergenceWarning, match="gk.linalg.cg did not converge"):
        _, info = gk.linalg.cg(_stencil, b, rtol=1e-12, maxiter=3)
    assert not info.converged and info.iterations == 3 and info == 3
    assert info.residual_norm > info.tolerance


def test_krylov_dask_argument_errors(rng):
    b = da.from_array(rng.standard_normal(6), chunks=3)
    with pytest.raises(TypeError, match="must be a Dask array or a callable"):
        gk.linalg.cg(_laplacian(6), b)
    with pytest.raises(ValueError, match=r"'A' has shape \(5, 5\)"):
        gk.linalg.cg(da.eye(5, chunks=5), b)
    with pytest.raises(TypeError, match=r"gk\.linalg\.gmres does not accept a Dask array"):
        gk.linalg.gmres(_stencil, b)
    with pytest.raises(ValueError, match="rtol and atol must be >= 0"):
        gk.linalg.cg(_stencil, b, rtol=-1)


def test_cg_on_each_cluster(client, rng):
    n = 12
    b = rng.standard_normal(n)
    a = _laplacian(n) + np.eye(n)
    with client.as_current():
        x, info = gk.linalg.cg(
            da.from_array(a, chunks=(4, 6)), da.from_array(b, chunks=4), rtol=1e-10
        )
        got = compute(client, x)
    assert info.converged and rel_err(got, np.linalg.solve(a, b)) < 1e-8


@pytest.mark.parametrize(
    ("assume_a", "options"),
    [
        ("upper triangular", {}),
        ("diagonal", {}),
        ("pos", {"lower": True}),
        (None, {"transposed": True}),
    ],
)
def test_solve_structures_read_what_scipy_reads(rng, assume_a, options):
    import scipy.linalg as scipy_linalg

    m = rng.standard_normal((8, 8))
    a = m @ m.T + 8 * np.eye(8)
    b = rng.standard_normal(8)
    x = gk.linalg.solve(da.from_array(a, chunks=4), b, assume_a=assume_a, **options)
    expected = scipy_linalg.solve(a, b, assume_a=assume_a or "gen", **options)
    assert rel_err(x.compute(scheduler="sync"), expected) < 1e3 * TOL[np.dtype(np.float64)]


def test_solve_check_finite_refuses_nan_when_computed(rng):
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = np.array([1.0, np.nan, 0.0, 0.0])
    x = gk.linalg.solve(da.from_array(a, chunks=2), da.from_array(b, chunks=2))
    with pytest.raises(ValueError, match=r"argument 'b' holds NaN or inf"):
        x.compute(scheduler="sync")


def test_krylov_norms_of_dask_vectors_do_not_underflow():
    """The Dask space's largest magnitude rescales a norm whose squares underflow: a
    float32 b of 1.2e-38 against A = 0 fails honestly with b's true norm."""
    b = np.full(6, 1.1754944e-38, dtype=np.float32)
    with gk.use_backend("numpy"), pytest.warns(gk.ConvergenceWarning):
        _, info = gk.linalg.cg(
            da.from_array(np.zeros((6, 6), np.float32), chunks=3), da.from_array(b, chunks=3)
        )
    assert not info.converged
    assert info.residual_norm == pytest.approx(float(np.linalg.norm(b.astype(np.float64))))


@pytest.mark.parametrize("magnitude", [1e-20, 1e20])
def test_krylov_solves_badly_scaled_dask_systems(rng, magnitude):
    """The power-of-two rescaling of b runs in the Dask space too: a float32 b of 1e-20 or
    1e20 converges (CG's dot products flushed to zero or overflowed before)."""
    a = gk.to_numpy(gk.sparse.poisson2d(3).toarray()).astype(np.float32)
    b = (rng.standard_normal(9) * magnitude).astype(np.float32)
    with gk.use_backend("numpy"):
        x, info = gk.linalg.cg(da.from_array(a, chunks=3), da.from_array(b, chunks=3))
    assert info.converged, info.reason
    x = np.asarray(x.compute() if hasattr(x, "compute") else x, dtype=np.float64)
    ref = np.linalg.solve(a.astype(np.float64), b.astype(np.float64) / magnitude)
    assert rel_err(x / magnitude, ref) < 1e-3
