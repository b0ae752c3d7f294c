"""Operand placement for library calls (cuBLAS, cuFFT, cuSOLVER, cuSPARSE).

CuPy runs a library routine with the current device's handle on the current stream and
passes each operand's pointer as is (cupy/_core/_routines_linalg.pyx ``tensordot_core``,
cupy/cuda/cufft.pyx ``Plan1d.fft``, cupyx/lapack.py): it checks no device. On a GPU an
operand on another device is then read through peer access (slowly) or is an illegal
address. The simulator is strict and refuses it, so code that forgets to enter the
operands' device shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import devices


class DevicePlacementError(ValueError):
    """A library routine got an operand on a device other than the current one."""


def require_current(library: str, routine: str, arrays: Iterable[Any]) -> int:
    """The current device, after checking every array in ``arrays`` lives on it."""
    dev = devices.current()
    for x in arrays:
        if x is not None and x._dev != dev:
            raise DevicePlacementError(
                f"{library} {routine} runs on the current device {dev}, but an operand "
                f"(shape {x.shape}, dtype {x.dtype}) is on device {x._dev}. CuPy passes "
                f"library routines raw pointers with no device check: on a GPU this reads "
                f"device {x._dev}'s memory through peer access or fails with "
                f"cudaErrorIllegalAddress. Enter the operands' device "
                f"(with cupy.cuda.Device({x._dev}) or `with x.device`) first."
            )
    return dev
