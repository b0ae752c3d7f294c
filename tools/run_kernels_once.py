"""Launch every registered kernel (gk.kernels' and the internal ones) on the GPU, for
compute-sanitizer.

    compute-sanitizer --tool memcheck --error-exitcode 1 python tools/run_kernels_once.py
    python tools/run_kernels_once.py --list            # the kernel names, one per line
    python tools/run_kernels_once.py --kernel NAME     # only NAME's cases (one verdict each)
    python tools/run_kernels_once.py --kind RawModule  # only kernels of that registry kind
    python tools/run_kernels_once.py --user            # only the gk.elementwise/gk.reduction ones
    python tools/run_kernels_once.py --krylov          # only the Krylov solvers' fused steps

Runs each case of tests/kernel_cases.py (every activation, optimizer configuration,
label type and tile shape, in every dtype the registry lists; its INTERNAL_CASES for the
kernels only gk.nn and gk.optim launch) except the million-element ones, on sizes that
are not multiples of a block, then (in a full run, or with ``--user``) the kernels
tests/test_user_kernels.py generates with ``gk.elementwise``/``gk.reduction``: broadcast
and scalar arguments, every function of the kernel language, reductions over each axis,
and (in a full run, or with ``--krylov``) the fused steps of the CuPy Krylov solvers
(backends/gpukit_cupy/krylov.cu): cg, bicgstab, minres and gmres in four dtypes on an
operator whose size is not a block multiple.
Exits 1 if a kernel is missing from the
cases or an output is not finite; the sanitizer reports any out-of-bounds or misaligned
access itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from kernel_cases import CASES, INTERNAL_CASES  # noqa: E402
from test_user_kernels import blend, functions, largest_gap, weighted_norm  # noqa: E402

import gpukit as gk  # noqa: E402
from gpukit.backend.kernels import INTERNAL_KERNELS, spec  # noqa: E402

#: Every kernel a registry lists, public and internal.
ALL = {**gk.kernels.KERNELS, **INTERNAL_KERNELS}


def _user_kernels(cp) -> dict[str, list]:
    """Each user kernel's outputs (those of tests/test_user_kernels.py), on float32 and
    float64, on sizes that are not a block multiple."""
    rng = np.random.default_rng(0)
    out: dict[str, list] = {}
    for dtype in ("float32", "float64"):
        x = cp.asarray(rng.uniform(0.1, 0.9, (37, 1001)).astype(dtype))
        y = cp.asarray(rng.uniform(1.0, 2.0, (37, 1001)).astype(dtype))
        w = cp.asarray(rng.uniform(0.5, 2.5, 1001).astype(dtype))
        out.setdefault("elementwise: broadcast, scalar", []).append(blend(x, w, -0.25))
        out.setdefault("elementwise: every function", []).append(functions(x, y))
        for axis in (None, 0, 1):
            out.setdefault("reduction: sum", []).append(weighted_norm(x, w, axis=axis))
            out.setdefault("reduction: max", []).append(largest_gap(x, y, axis=axis))
    return out


def _krylov(cp) -> dict[str, list]:
    """Each Krylov method's solution after a few fused steps (1369 unknowns: a 37x37
    Poisson operator), in every dtype the solvers take on the GPU."""
    import warnings

    rng = np.random.default_rng(0)
    out: dict[str, list] = {}
    for dtype in ("float32", "float64", "complex64", "complex128"):
        a = gk.sparse.poisson2d(37).astype(dtype)
        b = cp.asarray(rng.standard_normal(37 * 37).astype(dtype))
        for method in ("cg", "bicgstab", "minres", "gmres"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", gk.errors.ConvergenceWarning)
                x, _ = getattr(gk.linalg, method)(a, b, rtol=1e-300, atol=0.0, maxiter=25)
            out.setdefault(f"krylov: {method}", []).append(x)
    return out


def _report_krylov(cp, failures: list[str]) -> int:
    for name, outputs in _krylov(cp).items():
        cp.cuda.Device().synchronize()
        print(f"{name:34s} {len(outputs):4d} solves")
        if not all(bool(cp.isfinite(o).all()) for o in outputs):
            failures.append(f"{name}: non-finite output")
    return _report(failures)


def main(argv: list[str]) -> int:
    if argv in (["--user"], ["--krylov"]):
        import cupy as cp

        gk.set_backend("cupy")
        return (_report_user if argv == ["--user"] else _report_krylov)(cp, [])
    if argv == ["--list"]:
        print("\n".join(sorted(ALL)))
        return 0
    if len(argv) == 2 and argv[0] == "--kernel":
        chosen = {argv[1]} & set(ALL)
    elif len(argv) == 2 and argv[0] == "--kind":  # "ElementwiseKernel + ReductionKernel" has both
        chosen = {n for n, k in ALL.items() if argv[1] in k.kind.split(" + ")}
    elif not argv:
        chosen = set(ALL)
    else:
        chosen = set()
    if not chosen:
        print(__doc__, file=sys.stderr)
        return 2
    import cupy as cp

    gk.set_backend("cupy")
    launched: dict[str, int] = {}
    failures = []
    for kernel, cid, run in CASES + INTERNAL_CASES:
        if "1000003" in cid or kernel not in chosen:
            continue
        for dtype in spec(kernel).dtypes:
            out = run(cp.asarray, np.random.default_rng(0), dtype)
            cp.cuda.Device().synchronize()
            if not all(bool(cp.isfinite(o).all()) for o in out):
                failures.append(f"{kernel} {cid} {dtype}: non-finite output")
            launched[kernel] = launched.get(kernel, 0) + 1
    missing = sorted(chosen - set(launched))
    for name, count in sorted(launched.items()):
        print(f"{name:34s} {count:4d} launches")
    failures += [f"{name}: never launched" for name in missing]
    if argv:
        return _report(failures)
    return max(_report_user(cp, failures), _report_krylov(cp, []))


def _report_user(cp, failures: list[str]) -> int:
    for name, outputs in _user_kernels(cp).items():
        cp.cuda.Device().synchronize()
        print(f"{name:34s} {len(outputs):4d} launches")
        if not all(bool(cp.isfinite(o).all()) for o in outputs):
            failures.append(f"{name}: non-finite output")
    return _report(failures)


def _report(failures: list[str]) -> int:
    for line in failures:
        print("FAIL", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
