"""cupy.ElementwiseKernel and cupy.ReductionKernel: CuPy 14's semantics, with the
generated CUDA code executed by the simulator."""

from __future__ import annotations

import pytest

pytest.importorskip("cupysim.kernels", reason="the CuPy simulator's own tests run with --cupy=sim")

import contextlib

import cupy
import numpy as np
from cupysim import runtime

AXPY = cupy.ElementwiseKernel("T x, T y, T a", "T z", "z = a * x + y", "axpy")


def test_type_placeholders_dispatch_on_dtype(rng):
    for dtype in (np.float32, np.float64, np.int64):
        x = (rng.standard_normal(37) * 10).astype(dtype)
        y = (rng.standard_normal(37) * 10).astype(dtype)
        z = AXPY(cupy.asarray(x), cupy.asarray(y), dtype(3))
        assert z.dtype == dtype
        np.testing.assert_allclose(cupy.asnumpy(z), 3 * x + y, rtol=1e-6)


def test_python_scalars_take_the_placeholder_type(rng):
    x = rng.standard_normal(5).astype(np.float32)
    z = AXPY(cupy.asarray(x), cupy.asarray(x), 0.5)  # a Python float applied as float32
    assert z.dtype == np.float32
    np.testing.assert_allclose(cupy.asnumpy(z), 1.5 * x, rtol=1e-6)


def test_broadcasting_and_non_contiguous_operands(rng):
    a = rng.standard_normal((6, 8))
    b = rng.standard_normal(8)
    da = cupy.asarray(a)
    z = AXPY(da.T[::2], cupy.asarray(b[::2])[:, None], 2.0)  # (4, 6) view, (4, 1) column
    want = 2.0 * a.T[::2] + b[::2][:, None]
    assert z.shape == want.shape
    np.testing.assert_allclose(cupy.asnumpy(z), want)


def test_outputs_given_and_checked():
    k = cupy.ElementwiseKernel("float32 x", "float32 y", "y = x + 1", "inc")
    x = cupy.asarray(np.arange(4, dtype=np.float32))
    y = cupy.zeros(4, dtype=np.float32)
    assert k(x, y) is y
    assert cupy.asnumpy(y).tolist() == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="Out shape is mismatched"):  # (4,) broadcasts to (2, 4)
        k(cupy.zeros((2, 4), dtype=np.float32), y)
    with pytest.raises(ValueError, match="could not be broadcast together"):
        k(x, cupy.zeros(3, dtype=np.float32))
    with pytest.raises(TypeError, match="Type is mismatched"):
        k(cupy.zeros(4, dtype=np.float64))
    with pytest.raises(TypeError, match="Wrong number of arguments for 'inc'"):
        k(x, y, y)


def test_outputs_allocated_on_the_current_device():
    x = np.arange(3, dtype=np.float64)
    with cupy.cuda.Device(1):
        dx = cupy.asarray(x)
        z = AXPY(dx, dx, 1.0)
    assert z.device.id == 1
    np.testing.assert_array_equal(cupy.asnumpy(z), 2 * x)


def test_raw_parameters_index_and_size():
    k = cupy.ElementwiseKernel("raw T x, int32 n", "T y", "y = x[n - 1 - i] + _ind.size()", "rev")
    x = cupy.asarray(np.arange(6, dtype=np.float64))
    y = cupy.zeros(6)
    k(x, np.int32(6), y)
    assert cupy.asnumpy(y).tolist() == [5 + 6, 4 + 6, 3 + 6, 2 + 6, 1 + 6, 0 + 6]


def test_size_argument_when_every_array_is_raw():
    k = cupy.ElementwiseKernel("raw T x", "raw T y", "y[i] = 2 * x[i]", "twice")
    x = cupy.asarray(np.arange(8, dtype=np.int32))
    y = cupy.zeros(8, dtype=np.int32)
    k(x, y, size=5)
    assert cupy.asnumpy(y).tolist() == [0, 2, 4, 6, 8, 0, 0, 0]
    with pytest.raises(ValueError, match="Loop size is undecided"):
        k(x, y)


def test_preamble_loop_prep_after_loop_and_options():
    k = cupy.ElementwiseKernel(
        "T x",
        "raw T y",
        "atomicAdd(&y[0], sq(x) * SCALE);",
        "sumsq",
        preamble="__device__ float sq(float v) { return v * v; }",
        loop_prep="float unused = 0; (void)unused",
        options=("-DSCALE=2",),
    )
    x = cupy.asarray(np.arange(10, dtype=np.float32))
    y = cupy.zeros(1, dtype=np.float32)
    k(x, y)
    assert cupy.asnumpy(y)[0] == 2 * (np.arange(10) ** 2).sum()


def test_return_modes_and_zero_size():
    k = cupy.ElementwiseKernel("T x", "T y, T z", "y = x; z = -x", "two")
    y, z = k(cupy.asarray(np.ones(3)))
    assert cupy.asnumpy(y).tolist() == [1, 1, 1]
    assert cupy.asnumpy(z).tolist() == [-1, -1, -1]
    one = cupy.ElementwiseKernel("T x", "T y", "y = x", "one", return_tuple=True)
    assert isinstance(one(cupy.asarray(np.ones(2))), tuple)
    none = cupy.ElementwiseKernel("T x", "T y", "y = x", "none", no_return=True)
    assert none(cupy.asarray(np.ones(2))) is None
    empty = k(cupy.asarray(np.ones((0, 3))))
    assert empty[0].shape == (0, 3)


def test_kernel_definition_errors():
    with pytest.raises(ValueError, match="Invalid kernel name"):
        cupy.ElementwiseKernel("T x", "T y", "y = x", "bad name")
    with pytest.raises(ValueError, match="Can not use 'i'"):
        cupy.ElementwiseKernel("T i", "T y", "y = i", "k")
    k = cupy.ElementwiseKernel("T x", "T y", "y = x +", "broken")
    with pytest.raises(cupy.cuda.compiler.CompileException):
        k(cupy.asarray(np.ones(2)))


def test_elementwise_launch_reads_inputs_and_writes_outputs(monkeypatch):
    seen = []
    real = runtime.launch

    @contextlib.contextmanager
    def spy(name, reads, writes, **kw):
        seen.append((name, [id(a) for a in reads], [id(a) for a in writes], kw["kind"]))
        with real(name, reads, writes, **kw) as stream:
            yield stream

    monkeypatch.setattr(runtime, "launch", spy)
    x = cupy.asarray(np.ones(4))
    y = cupy.zeros(4)
    AXPY(x, x, 2.0, y)
    assert seen == [("axpy", [id(x), id(x)], [id(y)], "elementwise")]


SUM = cupy.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "rsum")


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_axes_on_a_strided_view(rng, axis, keepdims):
    a = rng.standard_normal((5, 7, 9))
    view = cupy.asarray(a).transpose(2, 0, 1)[::2]  # non-contiguous (5, 5, 7)
    got = SUM(view, axis=axis, keepdims=keepdims)
    want = a.transpose(2, 0, 1)[::2].sum(axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    # another summation order than NumPy's: the error is judged against |terms| (a sum of
    # standard normals cancels to near 0 now and then, where rtol alone fails)
    terms = np.abs(a).transpose(2, 0, 1)[::2].sum(axis=axis, keepdims=keepdims)
    assert np.all(np.abs(cupy.asnumpy(got) - want) <= 1e-12 * terms)


def test_reduction_map_post_map_and_two_inputs(rng):
    norm = cupy.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2")
    dot = cupy.ReductionKernel("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "vdot")
    a, b = rng.standard_normal((40, 3)), rng.standard_normal(3)
    np.testing.assert_allclose(
        cupy.asnumpy(norm(cupy.asarray(a), axis=0)), np.sqrt((a * a).sum(0)), rtol=1e-12
    )
    np.testing.assert_allclose(
        cupy.asnumpy(dot(cupy.asarray(a), cupy.asarray(b), axis=1)), a @ b, rtol=1e-12
    )


def test_reduction_identity_reduce_type_and_out(rng):
    amax = cupy.ReductionKernel(
        "T x", "T y", "x", "max(a, b)", "y = a", "-1e300", "amax", reduce_type="double"
    )
    a = rng.standard_normal((4, 1000)).astype(np.float32)
    out = cupy.zeros(4, dtype=np.float32)
    assert amax(cupy.asarray(a), axis=1, out=out) is out
    np.testing.assert_array_equal(cupy.asnumpy(out), a.max(1))


def test_reduction_errors_follow_cupy():
    nid = cupy.ReductionKernel("T x", "T y", "x", "a + b", "y = a", None, "noid")
    with pytest.raises(ValueError, match="zero-size array to reduction operation noid"):
        nid(cupy.asarray(np.ones((0, 3))), axis=0)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        SUM(cupy.asarray(np.ones((2, 2))), axis=(0, 0))
    with pytest.raises(np.exceptions.AxisError):
        SUM(cupy.asarray(np.ones(2)), axis=1)
    with pytest.raises(TypeError, match="Wrong arguments"):
        SUM(cupy.asarray(np.ones(2)), bogus=1)


def test_reduction_output_on_the_current_device():
    with cupy.cuda.Device(1):
        y = SUM(cupy.asarray(np.arange(10.0)))
    assert y.device.id == 1
    assert float(cupy.asnumpy(y)) == 45.0
