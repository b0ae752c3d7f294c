"""Compile gpukit's host kernels (``csrc/kernels.c``) into a shared library.

Run by the wheel build (``hatch_build.py`` at the repository's root: ``pip install .``
and ``pip install -e .``) and by hand after editing the C sources::

    python gpukit/_host/build_native.py

It uses only the standard library: the build runs before NumPy or gpukit can be
imported. The library has no Python C API in it (gpukit loads it with ctypes), so one
build serves every Python version on the machine. Where no C compiler works the build
goes on without it and gpukit computes the same kernels with NumPy ufuncs
(:mod:`gpukit._host.native` says which is in use).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = tuple(HERE / "csrc" / f for f in ("kernels.c", "kernels_body.h", "pool.h"))
LIBRARY = "_kernels.dll" if sys.platform == "win32" else "_kernels.so"

# No -ffast-math: NaN, infinities and signed zeros keep their meaning. -pthread: the
# kernels' own thread pool (csrc/pool.h). -fopenmp-simd
# reads the sources' "omp simd" (vectorise; no OpenMP run time, no threads).
FLAGS = [
    "-O3", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden", "-fno-math-errno",
    "-fno-trapping-math",
]  # fmt: skip


def source_hash() -> str:
    """What the library records of the sources it was built from (gpukit checks it)."""
    h = hashlib.sha256()
    for path in SOURCES:
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _compiler() -> list[str] | None:
    for cc in (os.environ.get("CC"), sysconfig.get_config_var("CC"), "cc", "gcc", "clang"):
        if cc:
            cmd = shlex.split(cc)
            if shutil.which(cmd[0]):
                return cmd
    return None


def _attempts() -> list[list[str]]:
    """Flag sets to try, best first: on x86-64, one clone per instruction-set level
    (x86-64-v4: AVX-512, v3: AVX2 and FMA, the baseline), chosen at load time for the
    CPU at hand (GCC's target_clones; needs an ifunc-capable C library)."""
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    attempts = []
    if x86:
        attempts.append([*FLAGS, "-fopenmp-simd", "-DGK_CLONES"])
    attempts.append([*FLAGS, "-fopenmp-simd"])
    attempts.append(FLAGS)
    return attempts


def build(dest: Path, log=print) -> Path | None:
    """Compile into ``dest / LIBRARY``; the library's path, or None (with the reason
    logged) where no compiler works."""
    cc = _compiler()
    if cc is None or sys.platform == "win32":
        log("gpukit: no C compiler found; the host kernels will use NumPy ufuncs")
        return None
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / LIBRARY
    define = f'-DGK_SOURCE_HASH="{source_hash()}"'
    errors = ""
    for flags in _attempts():
        with tempfile.TemporaryDirectory() as tmp:
            tmp_out = Path(tmp) / LIBRARY
            cmd = [*cc, *flags, define, "-o", str(tmp_out), str(SOURCES[0]), "-lm"]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode == 0:
                # replace, never overwrite in place: a running process may have it mapped
                shutil.copyfile(tmp_out, Path(tmp) / "copy")
                os.replace(Path(tmp) / "copy", out)
                log(f"gpukit: host kernels built with {' '.join([*cc, *flags])}")
                return out
            errors = done.stderr
    log(f"gpukit: the host kernels did not compile; NumPy ufuncs stand in:\n{errors}")
    return None


if __name__ == "__main__":
    sys.exit(0 if build(HERE) else 1)
