"""gk.elementwise / gk.reduction as decorators, bare and with dtypes."""

from typing import Any, assert_type

import numpy as np

import gpukit as gk
from gpukit._user_kernels import ElementwiseKernel, ReductionKernel


@gk.elementwise
def double(x: Any) -> Any:
    return x * 2.0


@gk.elementwise(in_dtypes=("float32", "T"), out_dtype=np.float64)
def axpy(x: Any, y: Any) -> Any:
    return 2.0 * x + y


@gk.reduction(out_dtype="float64")
def total(x: Any) -> Any:
    return sum(x)


assert_type(double, ElementwiseKernel)
assert_type(axpy, ElementwiseKernel)
assert_type(total, ReductionKernel)
assert_type(gk.nn.Activation(double, axpy), gk.nn.Activation)
total(np.ones(3), axis=(0,), keepdims=True)
