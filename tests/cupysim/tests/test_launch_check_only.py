"""``cupysim.launch_check_only()``: every check of a launch, no execution of its body."""

from __future__ import annotations

import pytest

pytest.importorskip("cupysim.kernels", reason="the CuPy simulator's own tests run with --cupy=sim")

import cupy
import cupysim
import numpy as np
from cupysim.kernels import KernelArgumentError

CODE = r"""
extern "C" __global__ void fill(float* y, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) y[i] = 1;
}
"""

DriverError = cupy.cuda.driver.CUDADriverError


@pytest.fixture(scope="module")
def fill():
    return cupy.RawModule(code=CODE).get_function("fill")


def test_body_skipped_and_launch_recorded(fill):
    y = cupy.zeros(5, np.float32)
    with cupysim.launch_check_only() as launches:
        fill((2,), (64,), (y, np.int64(5)))
    assert launches == [cupysim.launchcheck.Launch("fill", (2, 1, 1), (64, 1, 1), 0)]
    assert y.get().tolist() == [0.0] * 5  # not written
    fill((2,), (64,), (y, np.int64(5)))  # outside the mode it runs
    assert y.get().tolist() == [1.0] * 5


@pytest.mark.parametrize(
    "grid, block",
    [((1, 65_536), (64,)), ((1, 1, 65_536), (64,)), ((2**31,), (64,)), ((1,), (1025,))],
)
def test_limits_still_checked(fill, grid, block):
    # CUDA C++ Programming Guide, technical specifications per compute capability
    y = cupy.zeros(1, np.float32)
    with cupysim.launch_check_only() as launches, pytest.raises(DriverError, match="INVALID_VALUE"):
        fill(grid, block, (y, np.int64(1)))
    assert launches == []


def test_arguments_still_checked(fill):
    y = cupy.zeros(1, np.float32)
    with cupysim.launch_check_only(), pytest.raises(KernelArgumentError):
        fill((1,), (1,), (y, np.int32(1)))  # an int where the kernel takes a long long


def test_elementwise_launch_on_2_31_elements():
    # host memory is reserved lazily: the array costs address space only
    x = cupy.empty(2**31 + 1, np.float32)
    with cupysim.launch_check_only() as launches:
        y = cupy.ElementwiseKernel("T x", "T y", "y = x + 1", "plus_one")(x)
    assert y.shape == x.shape and len(launches) == 1
    assert launches[0].grid[0] * launches[0].block[0] >= 2**31 + 1
