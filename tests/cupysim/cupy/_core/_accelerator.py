"""cupy._core._accelerator: which accelerated backends CuPy's routines may use.

cupy/_core/_accelerator.pyx: three lists (elementwise, reduction, routine) read from
``CUPY_ACCELERATORS`` at import, ``cub`` by default on CUDA. The simulator keeps the lists
as CuPy does; it computes values the same way whichever backend they name (CUB and
cuTENSOR are not simulated, so their call paths and summation orders are not shown).
"""

from __future__ import annotations

import os

ACCELERATOR_CUB = 1
ACCELERATOR_CUTENSOR = 2
ACCELERATOR_CUTENSORNET = 3

_NAMES = {"cub": ACCELERATOR_CUB, "cutensor": ACCELERATOR_CUTENSOR,
          "cutensornet": ACCELERATOR_CUTENSORNET}  # fmt: skip


def _get_accelerator(accelerator) -> int:
    if isinstance(accelerator, int):
        return accelerator
    if accelerator in _NAMES:
        return _NAMES[accelerator]
    raise ValueError(f"Unknown accelerator: {accelerator}")


_elementwise_accelerators: list[int] = []
_reduction_accelerators: list[int] = []
_routine_accelerators: list[int] = []


def set_elementwise_accelerators(accelerators) -> None:
    global _elementwise_accelerators
    _elementwise_accelerators = [_get_accelerator(b) for b in accelerators]


def set_reduction_accelerators(accelerators) -> None:
    global _reduction_accelerators
    _reduction_accelerators = [_get_accelerator(b) for b in accelerators]


def set_routine_accelerators(accelerators) -> None:
    global _routine_accelerators
    _routine_accelerators = [_get_accelerator(b) for b in accelerators]


def get_elementwise_accelerators() -> list[int]:
    return _elementwise_accelerators


def get_reduction_accelerators() -> list[int]:
    return _reduction_accelerators


def get_routine_accelerators() -> list[int]:
    return _routine_accelerators


def _set_default_accelerators() -> None:
    names = [b for b in os.getenv("CUPY_ACCELERATORS", "cub").split(",") if b]
    set_elementwise_accelerators(names)
    set_reduction_accelerators(names)
    set_routine_accelerators(names)


_set_default_accelerators()
