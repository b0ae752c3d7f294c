"""The interface kernel execution builds on (cupysim/runtime.py, SIM_CONTRACT.md)."""

from __future__ import annotations

import numpy as np
import pytest


def test_operand_describes_the_array(cp):
    from cupysim import runtime

    x = cp.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:]
    op = runtime.operand(x)
    assert op.ptr == x.data.ptr and op.device == 0 and op.shape == (3, 3)
    assert op.strides == (16, 4) and op.dtype == np.float32 and op.nbytes == 36
    assert op.buffer is runtime.operand(x.base).buffer
    with pytest.raises(TypeError):
        runtime.operand(np.ones(3))


def test_launch_checks_placement_and_hazards_and_records_writes(cp):
    import cupysim
    from cupysim import runtime

    x, y = cp.ones(4), cp.empty(4)
    with runtime.launch("copy_kernel", [x], [y]) as stream:
        y._np[...] = x._np  # the kernel body runs on the host
        assert stream is runtime.current_stream()
    s = cp.cuda.Stream(non_blocking=True)
    with s, pytest.raises(cupysim.StreamHazard, match="copy_kernel"):
        with runtime.launch("reader", [y], []):
            pass
    with cp.cuda.Device(1):
        z = cp.ones(2)
    cp.cuda.Device(1).synchronize()
    with pytest.warns(cp._util.PerformanceWarning):
        with runtime.launch("peer", [z], []):
            pass
    cp.cuda.Device(1).synchronize()
    with cp.cuda.Device(1):
        w = cp.ones(2)
    cp.cuda.Device(1).synchronize()
    with cp.cuda.Device(1), runtime.launch("raw", [w], [], kind="raw"):
        pass


def test_raw_launch_without_peer_access_is_an_illegal_address(cp):
    from cupysim import runtime
    from simhelpers import run_sim

    code = """
import cupy
from cupysim import runtime
with cupy.cuda.Device(1):
    z = cupy.ones(2)
cupy.cuda.Device(1).synchronize()
try:
    with runtime.launch("k", [z], [], kind="raw"):
        pass
except cupy.cuda.driver.CUDADriverError as e:
    print(e)
"""
    r = run_sim(code, CUPYSIM_PEER_ACCESS="0")
    assert (
        r.stdout.strip() == "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
    )
    assert runtime.device_profile(0)["MaxSharedMemoryPerBlock"] == 49152


def test_driver_errors_as_cupy_raises_them(cp):
    from cupysim import runtime

    with pytest.raises(cp.cuda.driver.CUDADriverError) as info:
        runtime.raise_cuda_driver_error("CUDA_ERROR_INVALID_VALUE", "block too large")
    assert str(info.value) == "CUDA_ERROR_INVALID_VALUE: invalid argument"
    assert info.value.status == 1 and "block too large" in info.value.__notes__[0]


def test_allocate_gives_host_memory(cp):
    from cupysim import runtime

    s = runtime.allocate(100, 0)
    assert s.host.nbytes == 100 and s.ptr == s.host.ctypes.data
