"""The CUDA sources as compiled: no CuPy needed, so CPU tests can use it too."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).parent / "kernels"
_INCLUDE = re.compile(r'^#include "([A-Za-z0-9_]+\.cuh)"$', re.M)


def source(filename: str) -> str:
    """The text of ``filename`` with each header of this folder it includes
    (``#include "gk_common.cuh"``...) pasted in place of its include, recursively.

    Pasting, rather than ``-I``, keeps CuPy's on-disk cache (keyed on the code
    text) correct when only a header changes. The headers' include guards keep a
    header pasted twice from being defined twice.
    """
    return _INCLUDE.sub(lambda m: source(m.group(1)), (HERE / filename).read_text())


def instantiations(filename: str, name_expressions: tuple[str, ...]) -> str:
    """A translation unit forcing every name expression's template instantiation.

    ``nvcc`` only emits templates that are used; taking each kernel's address does
    what NVRTC's name expressions do for CuPy, so compiling this checks them all.
    """
    refs = ",\n".join(f"    (const void*)&{e}" for e in name_expressions)
    table = f"extern const void* const gk_instances[] = {{\n{refs}\n}};\n"
    return source(filename) + "\n" + table
