"""Compile gpukit's host kernels (``csrc/kernels.c``) into a CPython extension module.

Run by the wheel build (``hatch_build.py`` at the repository's root: ``pip install .``
and ``pip install -e .``) and by hand after editing the C sources::

    python gpukit/_host/build_native.py

``csrc/module.c``, compiled with ``csrc/kernels.c``, makes each kernel a function of
the module ``gpukit._host._kernels`` (a file named for the Python that builds it,
``_kernels`` and ``EXT_SUFFIX``), called by :mod:`gpukit._host.native`. It uses only the standard
library: the build runs before NumPy or gpukit can be imported. Where no C compiler
works, or Python's headers are missing (``Python.h``: the ``python3-dev`` package on
Debian and Ubuntu, ``python3-devel`` on Fedora), the build goes on without the module
and gpukit computes the same kernels with NumPy ufuncs (:mod:`gpukit._host.native` says
which is in use).
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
#: The module's two compilation units: its Python functions, and the kernels alone
#: (without Python's headers, so that the compiler makes the same code of them), and
#: every source the module's hash covers.
MAIN = HERE / "csrc" / "module.c"
KERNELS = HERE / "csrc" / "kernels.c"
SOURCES = tuple(sorted((HERE / "csrc").glob("*.[ch]")))
#: The module's file name for the Python at hand.
MODULE = "_kernels" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")

# No -ffast-math: NaN, infinities and signed zeros keep their meaning. -pthread: the
# kernels' own thread pool (csrc/pool.h). -fopenmp-simd
# reads the sources' "omp simd" (vectorise; no OpenMP run time, no threads).
FLAGS = [
    "-O3", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden", "-fno-math-errno",
    "-fno-trapping-math",
]  # fmt: skip


def source_hash() -> str:
    """What the module records of the sources it was built from (gpukit checks it)."""
    h = hashlib.sha256()
    for path in SOURCES:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
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
    if sys.platform == "darwin":  # Python's symbols are resolved when the module loads
        attempts = [[*a, "-undefined", "dynamic_lookup"] for a in attempts]
    return attempts


def build(dest: Path, log=print, include: str | None = None) -> Path | None:
    """Compile into ``dest / MODULE``; the module's path, or None (with the reason
    logged) where no compiler works or ``include`` (default: this Python's include
    directory) has no ``Python.h``."""
    cc = _compiler()
    if cc is None or sys.platform == "win32":
        log("gpukit: no C compiler found; the host kernels will use NumPy ufuncs")
        return None
    include = include or sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        log(
            f"gpukit: no Python.h in {include} (Python's headers: the python3-dev package, "
            "or python3-devel); the host kernels will use NumPy ufuncs"
        )
        return None
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / MODULE
    define = f'-DGK_SOURCE_HASH="{source_hash()}"'
    errors = ""
    for flags in _attempts():
        with tempfile.TemporaryDirectory() as tmp:
            tmp_out = Path(tmp) / MODULE
            units = [str(MAIN), str(KERNELS)]
            cmd = [*cc, *flags, define, f"-I{include}", "-o", str(tmp_out), *units, "-lm"]
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
