"""gpukit's own cost per call: every public operation against the library call it makes.

    python -m tools.compare.dispatch [--cupy-sim] [--only NAME ...]
    python -m tools.compare.dispatch --callgrind [--cupy-sim] [--only NAME ...]

Each row times a warm gpukit call on a small input and the peer call gpukit makes for it
(NumPy/SciPy on the numpy backend; the same ``cupy`` function with ``--cupy-sim``, on the
CuPy simulator of tests/cupysim, where both sides run the simulator's host path), and
prints both and gpukit's overhead (the difference) in microseconds. Wall times come from
tools/compare/timing.py (interleaved pairs, median). ``--callgrind`` runs the same calls
under ``valgrind --tool=callgrind`` instead and prints instructions per call, which do not
move with the machine's load: the script runs itself under valgrind, which dumps a
profile at each ``os.getppid()`` marker between the timed loops.
"""

from __future__ import annotations

import argparse
import gc
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from asv_bench.calls import rows

SIM_PATH = str(Path(__file__).resolve().parents[2] / "tests" / "cupysim")
CALLS = 2000  # per loop under callgrind by default (instructions per call do not depend on it)


def _setup(cupy_sim: bool) -> Any:
    import gpukit as gk

    if cupy_sim:
        import cupy

        gk.set_backend("cupy")
        return cupy
    gk.set_backend("numpy")
    return np


def _selected(all_rows: list, only: list[str] | None) -> list:
    if not only:
        return all_rows
    return [r for r in all_rows if any(name in r[0] for name in only)]


def _child(cupy_sim: bool, only: list[str] | None, calls: int) -> None:
    """Under valgrind: warm up, then one loop per side between getppid markers."""
    xp = _setup(cupy_sim)
    selected = _selected(rows(xp), only)
    for _, ours, peer in selected:
        for _ in range(200):
            ours(), peer()
    gc.collect()
    gc.disable()  # a collection of the whole heap would land on one row
    os.getppid()
    for _, ours, peer in selected:
        for fn in (ours, peer):
            for _ in range(calls):
                fn()
            os.getppid()


def _callgrind(args: argparse.Namespace) -> None:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("valgrind is not installed")
    xp = _setup(args.cupy_sim)
    labels = [r[0] for r in _selected(rows(xp), args.only)]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [valgrind, "--tool=callgrind", "--dump-before=getppid"]
        cmd += [f"--callgrind-out-file={tmp}/cg.out", sys.executable, "-m", __spec__.name]
        cmd += ["--child", "--calls", str(args.calls)] + (["--cupy-sim"] if args.cupy_sim else [])
        cmd += ["--only", *args.only] if args.only else []
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        if args.cupy_sim:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (SIM_PATH, env.get("PYTHONPATH")) if p)
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        totals = {}
        for path in glob.glob(f"{tmp}/cg.out.*"):
            with open(path) as f:
                for line in f:
                    if line.startswith("totals:"):
                        totals[int(path.rsplit(".", 1)[1])] = int(line.split()[1])
    per_call = [totals[i] / args.calls for i in sorted(totals)][1:]  # dump 1: start-up, warm-up
    print(
        f"instructions per call (callgrind, {args.calls} calls a side, "
        f"Python {sys.version.split()[0]})"
    )
    print(f"{'operation':<28} {'gpukit':>9} {'peer':>9} {'overhead':>9}")
    for i, label in enumerate(labels):
        ours, peer = per_call[2 * i], per_call[2 * i + 1]
        print(f"{label:<28} {ours:>9.0f} {peer:>9.0f} {ours - peer:>9.0f}")


def _wall(args: argparse.Namespace) -> None:
    from .timing import compare

    xp = _setup(args.cupy_sim)
    where = "CuPy simulator" if args.cupy_sim else "numpy backend"
    print(f"warm calls, {where}: median of interleaved pairs (tools/compare/timing.py)")
    print(f"{'operation':<28} {'gpukit':>9} {'peer':>9} {'overhead':>9}")
    for label, ours, peer in _selected(rows(xp), args.only):
        pair = compare(ours, peer, repeats=args.repeats, block=0.02, idle=0.02)
        us = pair.a_seconds * 1e6, pair.b_seconds * 1e6
        print(f"{label:<28} {us[0]:>7.2f}us {us[1]:>7.2f}us {us[0] - us[1]:>7.2f}us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cupy-sim", action="store_true", help="CuPy arrays, on the simulator")
    parser.add_argument("--callgrind", action="store_true", help="instructions per call")
    parser.add_argument("--only", nargs="+", help="rows whose label contains one of these")
    parser.add_argument("--repeats", type=int, default=7, help="timed pairs per row")
    parser.add_argument("--calls", type=int, default=CALLS, help="calls per side (--callgrind)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cupy_sim and not args.child and SIM_PATH not in sys.path:
        sys.path.insert(0, SIM_PATH)
    if args.child:
        _child(args.cupy_sim, args.only, args.calls)
    elif args.callgrind:
        _callgrind(args)
    else:
        _wall(args)


if __name__ == "__main__":
    main()
