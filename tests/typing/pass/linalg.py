"""What a checker infers for gk.linalg: solve, the Krylov solvers and their info."""

from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

import gpukit as gk
from gpukit._typing import Array

a = np.eye(4) * 2
b = np.ones(4)

assert_type(gk.linalg.solve(a, b), Array)
assert_type(gk.linalg.solve(a, b, assume_a="pos", check_finite=False), Array)
assert_type(gk.linalg.inv(a), Array)
# NumPy's named tuples (their fields typed as NumPy's stubs type them)
assert_type(gk.linalg.qr(a).R, npt.NDArray[Any])
assert_type(gk.linalg.qr(a, "complete").Q, npt.NDArray[Any])
assert_type(gk.linalg.svd(a, full_matrices=False).S, npt.NDArray[Any])
assert_type(gk.linalg.svd(a, compute_uv=False), Any)  # S alone
assert_type(gk.linalg.eigh(a).eigenvalues, npt.NDArray[Any])

x, info = gk.linalg.cg(a, b, rtol=1e-8, maxiter=100)
assert_type(x, Array)
assert_type(info, gk.linalg.IterativeInfo)
assert_type(info.converged, bool)
assert_type(info.iterations, int)
assert_type(info.residual_norm, float)
assert_type(info.reason, str)

# SciPy's integer code: `if info == 0`, `info > 0`, int(info) are all int operations
if info == 0 and not info:
    assert_type(int(info), int)
code: int = info

assert_type(gk.linalg.gmres(a, b, restart=2), tuple[Array, gk.linalg.IterativeInfo])
assert_type(gk.linalg.bicgstab(a, b, M=np.eye(4)), tuple[Array, gk.linalg.IterativeInfo])
assert_type(gk.linalg.minres(a, b, x0=b, atol=1e-12), tuple[Array, gk.linalg.IterativeInfo])

# A sharded b gives a sharded x; an operator checkers cannot see into gives Any
assert_type(gk.linalg.cg(a, gk.shard(b)), tuple[gk.ShardedArray, gk.linalg.IterativeInfo])
assert_type(gk.linalg.cg(lambda v: 2 * v, b), tuple[Any, gk.linalg.IterativeInfo])
