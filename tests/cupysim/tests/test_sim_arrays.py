"""Arrays: not NumPy arrays, placement, views, copies across devices (cupy/_core/core.py)."""

from __future__ import annotations

import ctypes
import warnings

import numpy as np
import pytest
from simhelpers import run_sim


def test_numpy_conversion_is_refused(cp):
    x = cp.arange(3.0)
    assert not isinstance(x, np.ndarray)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy\.ndarray'>"):
        x + np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        cp.add(x, np.ones(3))


def test_numpy_functions_dispatch_to_cupy(cp):
    x = cp.arange(4.0)
    y = np.concatenate([x, x])  # __array_function__
    z = np.sqrt(x)  # __array_ufunc__
    assert isinstance(y, cp.ndarray) and isinstance(z, cp.ndarray)
    np.testing.assert_allclose(z.get(), np.sqrt(np.arange(4.0)))


def test_results_on_current_device_and_reductions_are_0d(cp):
    x = cp.arange(6.0)
    with cp.cuda.Device(1):
        y = cp.ones(6)
        s = y.sum()
    assert y.device.id == 1 and s.device.id == 1 and s.shape == () and float(s) == 6.0
    assert isinstance(x.max(), cp.ndarray)


def test_views_share_memory_and_stay_on_their_device(cp):
    with cp.cuda.Device(1):
        x = cp.arange(12.0)
    v = x.reshape(3, 4).T
    assert v.device.id == 1 and v.base is x and v.strides == (8, 32)
    assert not v.flags.c_contiguous and v.flags.f_contiguous
    with cp.cuda.Device(1):
        v[0, 0] = 99
    assert x[0].item() == 99


def test_data_ptr_is_the_host_address_kernels_write_through(cp):
    x = cp.zeros(4, dtype=np.float32)
    ctypes.c_float.from_address(x.data.ptr + 8).value = 2.5
    np.testing.assert_array_equal(x.get(), [0, 0, 2.5, 0])
    assert x[1:].data.ptr == x.data.ptr + 4


def test_get_set_asnumpy_asarray(cp, rng):
    h = rng.standard_normal((3, 4))
    x = cp.asarray(h)
    np.testing.assert_array_equal(cp.asnumpy(x), h)
    x.set(h * 2)
    np.testing.assert_array_equal(x.get(), h * 2)
    assert cp.asarray(x) is x


def test_elementwise_on_another_device_follows_the_peer_rule(cp):
    with cp.cuda.Device(1):
        x = cp.ones(3)
    cp.cuda.Device(1).synchronize()  # devices are not ordered with each other otherwise
    with pytest.warns(cp._util.PerformanceWarning, match="Peer access has been activated"):
        y = x + 1  # current device 0
    assert y.device.id == 0
    code = """
import cupy
with cupy.cuda.Device(1):
    x = cupy.ones(3)
cupy.cuda.Device(1).synchronize()
try:
    x + 1
except ValueError as e:
    print(e)
"""
    r = run_sim(code, CUPYSIM_PEER_ACCESS="0")
    assert r.stdout.strip() == (
        "The device where the array resides (1) is different from the current device (0). "
        "Peer access is unavailable between these devices."
    ), r.stderr


def test_cross_device_copy_needs_a_contiguous_layout(cp):
    with cp.cuda.Device(1):
        x = cp.arange(12.0).reshape(3, 4)
    cp.cuda.Device(1).synchronize()
    y = cp.asarray(x)  # copied to device 0
    assert y.device.id == 0 and (y.get() == x.get()).all()
    with pytest.raises(NotImplementedError, match="copy non-contiguous array between devices"):
        cp.copy(x[:, ::2])
    # order='C' makes it contiguous on device 1 first (core.pyx ndarray.copy), then copies it
    # on device 0's stream with nothing ordering the two: a race in CuPy itself, reported.
    from cupysim import StreamHazard

    with pytest.raises(StreamHazard, match=r"device 1.*'astype'"):
        x[:, ::2].copy()
    # a plain copy needs no peer access (cudaMemcpyAsync with memcpyDefault)
    r = run_sim("import cupy\nwith cupy.cuda.Device(1):\n x = cupy.ones(3)\n"
                "cupy.cuda.Device(1).synchronize()\nprint(cupy.asarray(x).device)",
                CUPYSIM_PEER_ACCESS="0")  # fmt: skip
    assert r.stdout.strip() == "<CUDA Device 0>", r.stderr


def test_library_calls_need_operands_on_the_current_device(cp):
    from cupysim import DevicePlacementError

    with cp.cuda.Device(1):
        a = cp.ones((4, 4))
    with pytest.raises(DevicePlacementError, match="cuBLAS matmul runs on the current device 0"):
        cp.matmul(a, a)
    with cp.cuda.Device(1):
        c = cp.ones(4, dtype=complex)
    with pytest.raises(DevicePlacementError, match="cuFFT fft runs on the current device 0"):
        cp.fft.fft(c)  # complex and contiguous: CuPy hands it to cuFFT as it is
    with cp.cuda.Device(1):
        assert cp.matmul(a, a).device.id == 1


def test_like_functions_allocate_on_the_current_device(cp):
    with cp.cuda.Device(1):
        x = cp.ones((2, 3), order="F")
    y = cp.empty_like(x)
    assert y.device.id == 0 and y.flags.f_contiguous


def test_item_bool_float_synchronise(cp):
    x = cp.arange(3.0)
    assert float(x[2]) == 2.0 and bool(x[1]) and x[2].item() == 2.0
    with pytest.raises(ValueError, match="size 1"):
        x.item()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repr(x) == "array([0., 1., 2.])"


def test_big_endian_host_data_is_byte_swapped_and_never_allocated(cp):
    # _dtype.pxd normalize_dtype (host data uploaded little-endian), _dtype.pyx
    # check_supported_dtype (a new array of a big-endian dtype is refused)
    host = np.arange(6.0).astype(">f8").reshape(2, 3)
    x = cp.asarray(host)
    assert x.dtype == np.dtype("<f8") and x.get().tolist() == host.tolist()
    with pytest.raises(ValueError, match="Unsupported dtype >f8 with big-endian byte-order"):
        cp.empty(3, dtype=">f8")
    with pytest.raises(TypeError, match="cannot be set"):
        x.set(host)  # ndarray.set does not convert: the dtypes must match


def test_dtype_is_read_only_and_shape_reshapes_in_place_as_cupy(cp):
    """dtype and shape are kept as members (core.pxd's ``readonly object dtype`` and
    ``_shape``): dtype cannot be assigned or deleted, ``a.shape = ...`` reshapes a
    contiguous array in place (a view of the same memory) and refuses one that needs a
    copy, and the members follow every view and reshape."""
    a = cp.arange(6.0)
    with pytest.raises(AttributeError, match=r"'dtype' .* not writable"):
        a.dtype = np.float32
    with pytest.raises(AttributeError, match="not writable"):
        del a.dtype
    with pytest.raises(AttributeError, match="not writable"):
        del a.shape
    ptr = a.data.ptr
    a.shape = (2, 3)
    assert a.shape == (2, 3) and a.ndim == 2 and a.strides == (24, 8) and a.data.ptr == ptr
    assert a.dtype == np.float64 and a.get().tolist() == [[0, 1, 2], [3, 4, 5]]
    t = a.T
    assert t.shape == (3, 2) and t.dtype == np.float64
    with pytest.raises(AttributeError, match="Incompatible shape"):
        t.shape = (6,)
    assert t.shape == (3, 2)  # refused: unchanged
    v = a.view(np.int64)
    assert v.dtype == np.int64 and v.shape == (2, 3)
    assert cp.ndarray((2, 2), np.float32).dtype == np.float32

    for name in ("data", "base"):  # core.pxd's other readonly members
        with pytest.raises(AttributeError, match="not writable"):
            setattr(a, name, None)
        with pytest.raises(AttributeError, match="not writable"):
            delattr(a, name)
    assert a.data.ptr == ptr and a.base is None  # unchanged

    class Tagged(cp.ndarray):  # a subclass's own attributes are its instance's
        pass

    s = a.view(Tagged)
    s.tag = "kept"
    assert s.tag == "kept" and s.shape == (2, 3)

    class Reported(cp.ndarray):  # a subclass's read-only property of a member's name
        @property
        def shape(self):
            return ("reported",)

    r = a.view(Reported)  # the simulator writes its members as CuPy its C fields
    assert r.shape == ("reported",) and r.size == 6 and r.strides == (24, 8)
    assert Reported((2, 2)).size == 4
