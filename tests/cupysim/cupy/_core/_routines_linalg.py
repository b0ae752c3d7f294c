"""The cuBLAS compute-type switch (cupy/_core/_routines_linalg.pyx).

``get_compute_type(dtype)`` is ``COMPUTE_TYPE_DEFAULT`` until set, except that the first
query for float32/complex64 reads ``CUPY_TF32`` (> 0: TF32), and stores the answer.
``set_compute_type`` accepts TF32/BF16 on compute capability >= 8.0 (the H100's is 9.0).
"""

from __future__ import annotations

import os
import threading

import numpy

COMPUTE_TYPE_TBD = 0
COMPUTE_TYPE_DEFAULT = 1
COMPUTE_TYPE_PEDANTIC = 2
COMPUTE_TYPE_FP16 = 3
COMPUTE_TYPE_FP32 = 4
COMPUTE_TYPE_FP64 = 5
COMPUTE_TYPE_BF16 = 6
COMPUTE_TYPE_TF32 = 7

_compute_types = [COMPUTE_TYPE_TBD] * 4  # bfloat16, float16, float32, float64
_lock = threading.Lock()


def to_compute_type_index(dtype) -> int:
    char = numpy.dtype(dtype).char
    if char == "e":
        return 1
    if char in "fF":
        return 2
    if char in "dD":
        return 3
    if numpy.dtype(dtype).name == "bfloat16":
        return 0
    raise TypeError(f"dtype is not supported: {dtype}")


def set_compute_type(dtype, compute_type) -> None:
    if compute_type in (
        COMPUTE_TYPE_TBD,
        COMPUTE_TYPE_DEFAULT,
        COMPUTE_TYPE_PEDANTIC,
        COMPUTE_TYPE_FP16,
        COMPUTE_TYPE_FP32,
        COMPUTE_TYPE_FP64,
        COMPUTE_TYPE_BF16,
        COMPUTE_TYPE_TF32,
    ):
        # TF32/BF16 need compute capability >= 8.0: the simulated H100 has 9.0
        _compute_types[to_compute_type_index(dtype)] = compute_type
    else:
        raise ValueError(f"Unknown compute type: {compute_type}")


def get_compute_type(dtype) -> int:
    index = to_compute_type_index(dtype)
    if _compute_types[index] == COMPUTE_TYPE_TBD:
        compute_type = COMPUTE_TYPE_DEFAULT
        if numpy.dtype(dtype).char in "fF" and int(os.getenv("CUPY_TF32", "0")) > 0:
            compute_type = COMPUTE_TYPE_TF32
        set_compute_type(dtype, compute_type)
    return _compute_types[index]


def compute_type_to_str(compute_type):
    names = {
        0: "COMPUTE_TYPE_TBD",
        1: "COMPUTE_TYPE_DEFAULT",
        2: "COMPUTE_TYPE_PEDANTIC",
        3: "COMPUTE_TYPE_FP16",
        4: "COMPUTE_TYPE_FP32",
        5: "COMPUTE_TYPE_FP64",
        6: "COMPUTE_TYPE_BF16",
        7: "COMPUTE_TYPE_TF32",
    }
    return names.get(compute_type, compute_type)
