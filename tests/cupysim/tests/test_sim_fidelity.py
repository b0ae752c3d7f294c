"""Rules found by running CuPy's own test files against the simulator (tools/cupy_suite.py):
each is a call CuPy refuses or a value CuPy gives, with the CuPy source file whose behaviour
it checks."""

from __future__ import annotations

import pickle
import threading
import warnings
import zlib

import numpy as np
import pytest


@pytest.mark.parametrize(
    "call",
    [
        lambda cp: cp.exp([1.0, 2.0]),
        lambda cp: cp.add([1], [2]),
        lambda cp: cp.add(cp.arange(2), (1, 2)),
        lambda cp: cp.arange(3.0).__add__([1.0, 2.0, 3.0]),
    ],
)
def test_ufuncs_refuse_lists_and_tuples(cp, call):
    # _kernel.pyx _preprocess_args: an input is an ndarray or a scalar
    with pytest.raises(TypeError, match=r"Unsupported type <class '(list|tuple)'>"):
        call(cp)


def test_functions_refuse_sequences_as_cupy_does(cp):
    with pytest.raises(TypeError, match="Argument 'a' has incorrect type"):
        cp.cumsum((1, 2, 3))  # scan_core takes an _ndarray_base
    with pytest.raises(AttributeError, match="'list' object has no attribute 'sum'"):
        cp.sum([1, 2, 3])  # sumprod.py: return a.sum(...)
    with pytest.raises(TypeError, match=r"'a' must be a cupy\.ndarray object"):
        cp.all([True])  # truth.py: _util.check_array
    x = cp.arange(3.0)
    assert float(cp.sum(x)) == 3.0 and float(cp.exp(x)[0]) == 1.0 and float((x + 1)[2]) == 3.0


def test_order_strings(cp):
    # internal.pyx _normalize_order: the first character, either case; anything else raises
    assert cp.empty((2, 3), order="f").flags.f_contiguous
    assert cp.ndarray((2, 3), order="f").flags.f_contiguous
    with pytest.raises(ValueError, match="order not understood"):
        cp.empty((2, 3), order="X")
    with pytest.raises(ValueError, match="order not understood"):
        cp.array([1, 2], order="X")
    # _creation/basic.py _new_like_order_and_strides: C, F, K or A only
    with pytest.raises(ValueError, match="order not understood: Q"):
        cp.empty_like(cp.empty((2, 3)), order="Q")


def test_flags_are_read_only(cp):
    # flags.pyx: c_contiguous, f_contiguous and owndata are properties without setters
    f = cp.empty((2, 3)).flags
    for name in ("c_contiguous", "f_contiguous", "owndata"):
        with pytest.raises(AttributeError):
            setattr(f, name, False)
    assert f.c_contiguous and f["C_CONTIGUOUS"] and f.owndata


def test_bytes_and_no_index(cp):
    # core.pyx: __bytes__ is bytes(self.get()); there is no __index__
    x = cp.array([1, 2, 3], dtype=np.uint8)
    assert bytes(x) == b"\x01\x02\x03"
    assert bytes(cp.array(3)) == bytes(np.array(3))
    with pytest.raises(TypeError):
        range(cp.array(3))


def test_library_handles_are_per_thread(cp):
    # device.pyx _get_handle: handles live in a threading.local, one per device and thread
    getters = (cp.cuda.device.get_cublas_handle, cp.cuda.device.get_cusolver_handle,
               cp.cuda.device.get_cusparse_handle)  # fmt: skip
    for get in getters:
        seen = [get(), None, None]

        def other(get=get, seen=seen):
            seen[1], seen[2] = get(), get()

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen[0] == get() and seen[0] != seen[1] and seen[1] == seen[2]
    on_0 = getters[0]()
    with cp.cuda.Device(1):
        assert getters[0]() != on_0


def test_library_errors_pickle(cp):
    from cupy.cuda import cublas, nccl

    for e in (cublas.CUBLASError(1), nccl.NcclError(1), nccl.NcclError(3, "rank 2 of 4")):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and back.args == e.args and str(back) == str(e)


def test_enable_nd_planning_is_deprecated(cp):
    # cupy/fft/_config.py: config is an object; enable_nd_planning warns on read and write
    import cupy.fft.config as config

    assert config is cp.fft.config
    with pytest.warns(DeprecationWarning, match="enable_nd_planning"):
        assert config.enable_nd_planning is True
    with pytest.warns(DeprecationWarning, match="enable_nd_planning"):
        config.enable_nd_planning = True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config.get_plan_cache()  # the cache functions do not warn


def test_testing_and_exceptions_import(cp):
    import cupy.exceptions
    import cupy.testing

    assert cupy.exceptions.AxisError is np.exceptions.AxisError
    assert cupy.testing.numpy_cupy_allclose is not None

    @cupy.testing.numpy_cupy_allclose()
    def compare(xp):
        return xp.arange(4.0) * 2

    compare()

    @cupy.testing.numpy_cupy_allclose()
    def differ(xp):
        return xp.arange(4.0) * (2 if xp is np else 3)

    with pytest.raises(AssertionError):
        differ()


_CONST = r"""
extern "C" {
__constant__ float scale[100];
__global__ void multiply_by_const(float* x, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) x[i] *= scale[i];
}
}
"""


def test_constant_memory_through_get_global_reaches_the_kernel(cp):
    # raw.pyx get_global: a size-0 UnownedMemory at the symbol; an ndarray over it (its
    # docstring's usage) initialises __constant__ memory the kernel then reads
    mod = cp.RawModule(code=_CONST)
    ker = mod.get_function("multiply_by_const")
    ptr = mod.get_global("scale")
    assert ptr.mem.size == 0
    const = cp.ndarray((100,), cp.float32, ptr)
    values = cp.arange(100, dtype=cp.float32) / 7
    const[...] = values
    out = cp.full(100, 2.0, dtype=cp.float32)
    ker((1,), (100,), (out, cp.int32(100)))
    np.testing.assert_array_equal(out.get(), 2 * values.get())
    # an array reaching past the symbol is refused instead of corrupting host memory
    with pytest.raises(ValueError, match="reaches outside its memory"):
        cp.ndarray((101,), cp.float32, ptr)


def test_numpy_index_arrays_are_copied_to_the_device(cp):
    # _routines_indexing.pyx _prepare_slice_list: core.array(s) for a NumPy index array
    x = cp.arange(10.0)
    np.testing.assert_array_equal(x[np.array([1, 3])].get(), [1.0, 3.0])
    np.testing.assert_array_equal(x[np.arange(10) > 6].get(), [7.0, 8.0, 9.0])
    y = cp.zeros((2, 3))
    y[..., np.array([0, 1]), np.array([2, 0])] = 5
    np.testing.assert_array_equal(y.get(), [[0, 0, 5], [5, 0, 0]])
    with pytest.raises(IndexError):
        x[np.array([0.5])]


def test_float16_sums_accumulate_in_float32(cp):
    # _routines_math.pyx _sum_auto_dtype 'e->e', (..., 'float'); NumPy's float16 loop adds
    # in float16 along a strided axis and stalls at 256 here
    h = np.full((4096, 2), 0.1, np.float16)
    want = h.astype(np.float32).sum(axis=0).astype(np.float16)
    assert h.sum(axis=0)[0] != want[0]
    x = cp.asarray(h)
    for got in (x.sum(axis=0), cp.sum(x, axis=0)):
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got.get(), want)
    np.testing.assert_allclose(float(x.mean(axis=0)[0]), 0.1, rtol=1e-3)
    assert x.sum(axis=0, dtype=np.float16).dtype == np.float16


def test_product_out_rules(cp):
    a = cp.ones((2, 3), np.float32)
    b = cp.ones((3, 4), np.float32)
    # _routines_linalg.pyx dot: exactly the result type, C-contiguous
    with pytest.raises(ValueError, match="Not supported dtype combination"):
        cp.dot(a, b, out=cp.empty((2, 4), np.float64))
    with pytest.raises(ValueError, match="must be C-contiguous"):
        cp.dot(a, b, out=cp.empty((2, 4), np.float32, order="F"))
    out = cp.empty((2, 4), np.float32)
    assert cp.dot(a, b, out=out) is out and float(out[0, 0]) == 3.0
    # _gufuncs.py: matmul casts into any layout under same_kind; complex to float raises
    f_out = cp.empty((2, 4), np.float64, order="F")
    assert cp.matmul(a, b, out=f_out) is f_out and float(f_out[1, 3]) == 3.0
    c = cp.ones((2, 3), np.complex64)
    with pytest.raises(TypeError, match="Cannot cast out dtype"):
        cp.matmul(c, b, out=cp.empty((2, 4), np.float32))
    with pytest.warns(np.exceptions.ComplexWarning):
        cp.matmul(c, b, out=cp.empty((2, 4), np.float32), casting="unsafe")


def test_cublas_scalars_vectors_and_types(cp):
    from cupy import cublas

    # cublas.py _get_scalar_ptr: alpha may be a host value or a device 0-d array
    for alpha in (2.0, np.array(2.0), cp.array(2.0)):
        x, y = cp.arange(3.0), cp.ones(3)
        cublas.axpy(alpha, x, y)
        np.testing.assert_array_equal(y.get(), [1.0, 3.0, 5.0])
    a, v = cp.eye(2), cp.array([1.0, 2.0])
    out = cp.zeros(2)
    cublas.gemv("N", cp.array(3.0), a, v, cp.array(0.0), out)
    np.testing.assert_array_equal(out.get(), [3.0, 6.0])
    c = cp.full((2, 2), np.nan)
    cublas.gemm("N", "N", a, a, out=c, alpha=cp.array(1.0), beta=cp.array(0.0))
    np.testing.assert_array_equal(c.get(), np.eye(2))  # beta 0: C is not read
    # dot is sdot/ddot only
    with pytest.raises(TypeError, match="dotu"):
        cublas.dot(cp.ones(2, np.complex64), cp.ones(2, np.complex64))
    # batched_gesv: b (..., M) is one right-hand side per system
    m = cp.asarray(np.array([[[2.0, 0.0], [0.0, 4.0]]] * 3))
    x = cublas.batched_gesv(m, cp.ones((3, 2)))
    np.testing.assert_allclose(x.get(), [[0.5, 0.25]] * 3)


def test_shapes_are_integers(cp):
    # internal.pyx get_size: None and floats are refused, NumPy integers taken
    with pytest.raises(TypeError, match="Use"):
        cp.empty(None)
    for bad in (1.0, (1.0,), True):
        with pytest.raises(TypeError):
            cp.ndarray(bad)
    assert cp.empty(np.int64(3)).shape == (3,)
    assert cp.cuda.alloc_pinned_memory(np.int64(24)).mem.size >= 24


def test_strides_zero_size_and_index_dtypes(cp):
    # core.pyx _init: strides without memptr inside a contiguous-sized allocation
    a = cp.ndarray((2, 3, 4), strides=(8, 0, 8), dtype=np.float64)
    assert a.strides == (8, 0, 8) and a.data.mem.size >= 192
    with pytest.raises(ValueError, match=r"ndarray\(\) with strides"):
        cp.ndarray((2, 3, 4), strides=(8, 128, 1024))
    with pytest.raises(ValueError, match=r"ndarray\(\) with strides"):
        cp.ndarray((2, 3, 4), strides=(-8, 8, 8))
    # internal.pyx get_contiguous_strides_inplace: zero-size arrays have zero strides
    assert cp.empty((1, 0, 2)).strides == np.empty((1, 0, 2)).strides == (0, 0, 0)
    # _prepare_slice_list: an index array of a non-numeric dtype is an IndexError
    for bad in (np.array(["a"]), np.array([object()]), np.zeros(1, "i,i")):
        with pytest.raises(IndexError, match="integer or boolean"):
            cp.arange(3)[bad]
    # basic.py copyto: a one-element NumPy array is a scalar; a longer one is refused
    x = cp.zeros(3)
    cp.copyto(x, np.array([2.0]))
    assert float(x[1]) == 2.0 and float(cp.full(2, np.array(4.0))[0]) == 4.0
    with pytest.raises(ValueError, match=r"non-scalar numpy\.ndarray"):
        cp.copyto(x, np.ones(3))


def test_like_layouts_and_dtypes(cp):
    import cupyx

    # _creation/basic.py _new_like_order_and_strides: 'K' keeps a non-contiguous array's
    # axis order in contiguous memory, for device and pinned arrays alike
    h = np.empty((4, 2, 3)).transpose(1, 0, 2)
    want = np.empty_like(h).strides
    assert cp.empty_like(cp.empty((4, 2, 3)).transpose(1, 0, 2)).strides == want
    assert cupyx.empty_like_pinned(h).strides == want
    with pytest.raises(ValueError, match="order not understood"):
        cupyx.empty_like_pinned(h, order="Q")
    # _dtype.pyx check_supported_dtype: void types of bytes yes, subarrays, V0, objects no
    assert not cp.zeros(3, dtype="V10").get().view(np.uint8).any()
    for bad in ("3i", "V", "O", "U3"):
        with pytest.raises(ValueError, match="Unsupported dtype"):
            cp.empty(3, dtype=bad)


def test_potrs_spreads_nan_as_cusolver_does(cp):
    # cuSOLVER's potrs does not look at the values: NaN in the factor gives NaN, no error
    from cupyx import lapack

    L = cp.asarray(np.array([[2.0, 0.0], [np.nan, 3.0]]))
    x = lapack.potrs(L, cp.ones(2), lower=True)
    assert np.isnan(x.get()).any()


def _rng(request):
    """Random inputs seeded from the test's id (stable across processes)."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def test_ufuncs_are_objects_with_cupys_rules(cp):
    # cupy/_core/_kernel.pyx ufunc: an object with CuPy's name; aliases are one object
    assert isinstance(cp.add, cp.ufunc) and cp.abs is cp.absolute
    assert (cp.add.name, cp.add.nin, cp.add.nout, cp.divmod.nout) == ("cupy_add", 2, 1, 2)
    assert "ff->f" in cp.add.types
    # NumPy's where= is not CuPy's; an output of the wrong kind is refused, inputs are not
    with pytest.raises(TypeError, match="Wrong arguments"):
        cp.add(cp.ones(2), 1, where=cp.ones(2, bool))
    with pytest.raises(TypeError, match="Cannot cast output operand"):
        cp.add(cp.ones(2), 1.5, out=cp.zeros(2, cp.int64))
    # _routines_math.pyx: an integer power with a negative exponent computes (NumPy raises)
    base = cp.array([-1, 1, 2, -2])
    assert (cp.power(base, cp.array([-3, -3, -1, -2])).get() == [-1, 1, 0, 0]).all()


def test_ufunc_methods_reached_through_numpy(cp, request):
    a_h = _rng(request).integers(-9, 9, (4, 5)).astype(np.int64)
    b_h = _rng(request).integers(-9, 9, 3).astype(np.int64)
    a, b = cp.asarray(a_h), cp.asarray(b_h)
    assert (np.add.outer(a, b).get() == np.add.outer(a_h, b_h)).all()
    assert (np.add.reduce(a, axis=0).get() == a_h.sum(0)).all()
    assert (np.multiply.accumulate(a, axis=1).get() == np.cumprod(a_h, 1)).all()
    idx = np.array([0, 3, 1, 4])
    assert (np.add.reduceat(a, cp.asarray(idx), axis=1).get() == np.add.reduceat(a_h, idx, 1)).all()
    x_h = np.zeros(5, np.int64)
    np.add.at(x_h, [0, 0, 3], 2)
    x = cp.zeros(5, cp.int64)
    np.add.at(x, cp.array([0, 0, 3]), 2)
    assert (x.get() == x_h).all()
    # _routines_indexing.pyx: the atomic scatter exists for some dtypes only
    with pytest.raises(TypeError, match="only supports"):
        cp.subtract.at(cp.zeros(3, cp.float64), cp.array([0]), 1.0)


def test_ndarray_subclass_flows_through_views_and_ufuncs(cp):
    class Tagged(cp.ndarray):
        def __array_finalize__(self, obj):
            self.tag = getattr(obj, "tag", "new")

    t = cp.arange(4.0).view(Tagged)
    assert type(t) is Tagged and t.tag == "new"
    t.tag = "mine"
    r = cp.add(t, 1)
    assert type(r) is Tagged and r.tag == "mine"
    assert type(cp.add(cp.ones(4), 1)) is cp.ndarray
    with pytest.raises(ValueError, match="sub-type of ndarray"):
        t.view(type=np.ndarray)


def test_truth_astype_and_get_rules(cp):
    # core.pyx __nonzero__: an empty array is False, with a DeprecationWarning
    with pytest.warns(DeprecationWarning):
        assert not bool(cp.empty(0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(cp.ones(2))
    # core.pyx astype: copy=False may return the array itself; casting= is not supported
    a = cp.ones(3)
    assert a.astype(cp.float64, copy=False) is a
    with pytest.raises(TypeError, match="casting is not supported"):
        a.astype(cp.float32, casting="safe")
    # core.pyx get: out must be contiguous
    with pytest.raises(RuntimeError, match="non-contiguous"):
        cp.ones((2, 2)).get(out=np.empty((2, 4))[:, ::2])


def test_grids_and_concatenators_make_device_arrays(cp, request):
    x_h, y_h = _rng(request).random(3), _rng(request).random(4)
    x, y = cp.asarray(x_h), cp.asarray(y_h)
    for kw in ({}, {"indexing": "ij"}, {"sparse": True}, {"copy": False}):
        got, want = cp.meshgrid(x, y, **kw), np.meshgrid(x_h, y_h, **kw)
        assert isinstance(got, tuple) and all(isinstance(g, cp.ndarray) for g in got)
        assert all((g.get() == w).all() for g, w in zip(got, want, strict=True))
    with pytest.raises(ValueError, match="1d"):
        cp.meshgrid(cp.ones((2, 2)), x)
    assert isinstance(cp.mgrid[0:3, 0:2], cp.ndarray)
    lo, hi = cp.zeros(3)[:, None], cp.ones(3)[:, None]
    assert np.allclose(cp.mgrid[lo:hi:5j].get(), np.mgrid[lo.get() : hi.get() : 5j])
    assert all(isinstance(g, cp.ndarray) for g in cp.ogrid[0:3, 0:2])
    assert (cp.r_[x, 0.0, y].get() == np.r_[x_h, 0.0, y_h]).all()
    assert (cp.c_[x, x].get() == np.c_[x_h, x_h]).all()


def test_fft_plan_choice_and_output_order(cp, request):
    from cupy.fft._fft import _default_fft_func, _fft, _fftn

    a_h = _rng(request).random((4, 6, 5)) + 1j * _rng(request).random((4, 6, 5))
    a = cp.asarray(a_h)
    # cupy/fft/_fft.py: one N-D plan for adjacent axes with an end axis, else 1-D plans
    assert _default_fft_func(a, axes=(0, 1)) is _fftn
    assert _default_fft_func(a, axes=(0, 2)) is _fft
    assert _default_fft_func(a, axes=(1,)) is _fft
    f = cp.asfortranarray(a)
    out = cp.fft.fftn(f, axes=(0, 1))
    assert out.flags.f_contiguous  # an N-D plan keeps the input's order
    ref = np.fft.fftn(a_h, axes=(0, 1))
    assert np.linalg.norm(out.get() - ref) <= 1e-12 * np.linalg.norm(ref)
    # a middle axis by 1-D plans comes back as a swapped view
    mid = cp.fft.fft(a, axis=1)
    assert not mid.flags.c_contiguous and not mid.flags.f_contiguous
    ref = np.fft.fft(a_h, axis=1)
    assert np.linalg.norm(mid.get() - ref) <= 1e-12 * np.linalg.norm(ref)
    # single precision stays single; norm is checked
    assert cp.fft.rfft(cp.ones(8, cp.float16)).dtype == cp.complex64
    with pytest.raises(ValueError, match="Invalid norm"):
        cp.fft.fft(a, norm="none")
    with pytest.raises(TypeError, match=r"must be a cupy\.ndarray"):
        cp.fft.fft(a_h)


def test_fft_plan_cache_as_cupys(cp):
    cache = cp.fft.config.get_plan_cache()
    size = cache.get_size()
    try:
        cache.clear()
        cache.set_size(2)
        for n in (8, 9, 10):
            cp.fft.fft(cp.ones(n, cp.complex64))
        # least recently used out first; iteration is most recent first
        assert cache.get_curr_size() == 2
        assert [node.plan.nx for _, node in cache] == [10, 9]
        assert cache.get_curr_memsize() > 0  # plans hold pool memory
    finally:
        cache.clear()
        cache.set_size(size)


def test_random_state_is_per_device_and_shared_by_threads(cp):
    seen = []
    t = threading.Thread(target=lambda: seen.append(cp.random.get_random_state()))
    t.start()
    t.join()
    assert seen[0] is cp.random.get_random_state()


def test_stubs_fail_loudly(cp):
    with pytest.raises(NotImplementedError, match="managed memory"):
        cp.cuda.memory.malloc_managed(8)
    with pytest.raises(NotImplementedError, match="texture memory"):
        cp.cuda.texture.ChannelFormatDescriptor(32, 0, 0, 0, 0)
    with cp.cuda.using_allocator(None), pytest.raises(ValueError, match="using_allocator"):
        cp.cuda.set_allocator(None)


def test_eigh_takes_float16_and_float16_kernels_compile(cp, request):
    m_h = _rng(request).random((3, 3))
    m_h = (m_h + m_h.T).astype(np.float16)
    w = cp.linalg.eigvalsh(cp.asarray(m_h))
    assert w.dtype == cp.float16
    ref = np.linalg.eigvalsh(m_h.astype(np.float64))
    assert np.linalg.norm(w.get() - ref) <= 1e-2 * np.linalg.norm(ref)
    k = cp.ElementwiseKernel("T x", "T y", "y = x * x + (T)1", "sq_plus_one")
    x_h = _rng(request).random(5).astype(np.float16)
    got = k(cp.asarray(x_h)).get()
    assert got.dtype == np.float16 and np.allclose(got, x_h * x_h + 1, rtol=2e-3)
