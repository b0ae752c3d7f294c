"""What a checker infers for gk.capabilities(): a tuple of typed cells."""

from typing_extensions import assert_type

import gpukit as gk

cells = gk.capabilities("gk.linalg.solve", backend="cupy", dtype="float16", kind="array")
assert_type(cells, tuple[gk.Capability, ...])
cell = cells[0]
assert_type(cell.operation, str)
assert_type(cell.runs, bool)
assert_type(cell.result, str | None)
assert_type(cell.error, type[Exception] | None)
assert_type(cell.note, str)
assert_type(cell.status, str)
assert_type(gk.capabilities(), tuple[gk.Capability, ...])
