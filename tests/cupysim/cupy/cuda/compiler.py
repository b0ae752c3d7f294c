"""``cupy.cuda.compiler``: the compile error and kernel-name check kernels use.

Kernels compile with the host compiler (``cupysim.kernels``), not NVRTC; what
user code sees of the compiler is copied from ``cupy/cuda/compiler.py``.
"""

from __future__ import annotations

import math
import re

__all__ = ["CompileException", "is_valid_kernel_name"]


def is_valid_kernel_name(name):
    # cupy/cuda/compiler.py: is_valid_kernel_name
    return re.match("^[a-zA-Z_][a-zA-Z_0-9]*$", name) is not None


class CompileException(Exception):
    """A kernel failed to compile (``cupy/cuda/compiler.py: CompileException``)."""

    def __init__(self, msg, source, name, options, backend="nvrtc"):
        self._msg = msg
        self.source = source
        self.name = name
        self.options = options
        self.backend = backend
        super().__init__()

    def __reduce__(self):
        return (type(self), (self._msg, self.source, self.name, self.options, self.backend))

    def __repr__(self):
        return str(self)

    def __str__(self):
        return self.get_message()

    def get_message(self):
        return self._msg

    def dump(self, f):
        lines = self.source.split("\n")
        digits = math.floor(math.log10(len(lines))) + 1
        linum_fmt = f"{{:0{digits}d}} "
        f.write(f"{self.backend.upper()} ")
        f.write(f"compilation error: {self}\n")
        f.write("-----\n")
        f.write(f"Name: {self.name}\n")
        f.write("Options: {}\n".format(" ".join(self.options)))
        f.write("CUDA source:\n")
        for i, line in enumerate(lines):
            f.write(linum_fmt.format(i + 1) + line.rstrip() + "\n")
        f.write("-----\n")
        f.flush()


def _get_nvrtc_version():
    """compiler.py ``_get_nvrtc_version``: (major, minor) of NVRTC (cupy.cuda.nvrtc)."""
    from cupy.cuda import nvrtc

    return nvrtc.getVersion()
