"""What a checker infers for gpukit's array functions: gk.matmul, the FFTs, gk.shard."""

from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

import gpukit as gk
from gpukit._typing import Array

a = np.ones((4, 4))
v = np.ones(4)

# NumPy in: the active backend's array out (NumPy or CuPy), whatever the dtype
assert_type(gk.matmul(a, a), Array)
assert_type(gk.matmul(a, v, precision="tf32"), Array)
assert_type(gk.asarray([1.0, 2.0]), Array)
assert_type(gk.to_numpy(a), npt.NDArray[Any])

assert_type(gk.fft.fft(v), Array)
assert_type(gk.fft.ifft(v, n=8, norm="ortho"), Array)
assert_type(gk.fft.rfft(v), Array)
assert_type(gk.fft.irfft(v, 6), Array)
assert_type(gk.fft.fft2(a), Array)
assert_type(gk.fft.rfftn(a, axes=(0, 1)), Array)
assert_type(gk.fft.fftfreq(8), Array)

# A ShardedArray in: a ShardedArray out
s = gk.shard(a, axis=0)
assert_type(s, gk.ShardedArray)
assert_type(gk.matmul(s, a), gk.ShardedArray)
assert_type(gk.matmul(a, s), gk.ShardedArray)
assert_type(gk.reshard(s, 1), gk.ShardedArray)
assert_type(gk.fft.fft(s), gk.ShardedArray)
assert_type(gk.fft.fft2(s), gk.ShardedArray)
assert_type(gk.fft.fftshift(s), gk.ShardedArray)
assert_type(s.to_numpy(), np.ndarray)
