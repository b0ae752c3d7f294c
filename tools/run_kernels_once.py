"""Launch every registered gk.kernels kernel on the GPU, for compute-sanitizer.

    compute-sanitizer --tool memcheck --error-exitcode 1 python tools/run_kernels_once.py
    python tools/run_kernels_once.py --list            # the kernel names, one per line
    python tools/run_kernels_once.py --kernel NAME     # only NAME's cases (one verdict each)
    python tools/run_kernels_once.py --kind RawModule  # only kernels of that registry kind

Runs each case of tests/kernel_cases.py (every activation, optimizer configuration,
label type and tile shape, in every dtype the registry lists) except the
million-element ones, on sizes that are not multiples of a block. Exits 1 if a
kernel is missing from the cases or an output is not finite; the sanitizer
reports any out-of-bounds or misaligned access itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from kernel_cases import CASES  # noqa: E402

import gpukit as gk  # noqa: E402


def main(argv: list[str]) -> int:
    if argv == ["--list"]:
        print("\n".join(sorted(gk.kernels.KERNELS)))
        return 0
    if len(argv) == 2 and argv[0] == "--kernel":
        chosen = {argv[1]} & set(gk.kernels.KERNELS)
    elif len(argv) == 2 and argv[0] == "--kind":  # "ElementwiseKernel + ReductionKernel" has both
        chosen = {n for n, k in gk.kernels.KERNELS.items() if argv[1] in k.kind.split(" + ")}
    elif not argv:
        chosen = set(gk.kernels.KERNELS)
    else:
        chosen = set()
    if not chosen:
        print(__doc__, file=sys.stderr)
        return 2
    import cupy as cp

    gk.set_backend("cupy")
    launched: dict[str, int] = {}
    failures = []
    for kernel, cid, run in CASES:
        if "1000003" in cid or kernel not in chosen:
            continue
        for dtype in gk.kernels.KERNELS[kernel].dtypes:
            out = run(cp.asarray, np.random.default_rng(0), dtype)
            cp.cuda.Device().synchronize()
            if not all(bool(cp.isfinite(o).all()) for o in out):
                failures.append(f"{kernel} {cid} {dtype}: non-finite output")
            launched[kernel] = launched.get(kernel, 0) + 1
    missing = sorted(chosen - set(launched))
    for name, count in sorted(launched.items()):
        print(f"{name:34s} {count:4d} launches")
    for line in failures + [f"{name}: never launched" for name in missing]:
        print("FAIL", line)
    return 1 if failures or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
