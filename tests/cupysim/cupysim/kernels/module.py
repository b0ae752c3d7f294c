"""Compiled modules, as ``cupy.cuda.function.Module`` holds them per device.

``compile_with_cache`` mirrors ``cupy/_core/core.pyx: compile_with_cache`` (and
``cupy/cuda/compiler.py: _compile_module_with_cache``): the source (with CuPy's
headers prepended for elementwise and reduction kernels), the options with
``--std=c++17`` added when no standard is given, and the name expressions, whose
lowered (mangled) names the module maps them to.
"""

from __future__ import annotations

import threading
from typing import Any

from .. import runtime
from . import sanitize
from .compiler import Binary, build
from .errors import CompileError
from .launcher import Function

__all__ = ["Module", "compile_with_cache"]


def _use_default_std(options: tuple[str, ...]) -> bool:
    # cupy/_core/core.pyx: use_default_std
    return not any(o.startswith(("-std=", "--std=")) for o in options)


class Module:
    """The kernels of one compiled source, on one device."""

    def __init__(self, binary: Binary, device: int) -> None:
        self.binary = binary
        self.device = device
        # name expression -> lowered name (cupy/cuda/compiler.py: mod._set_mapping)
        self.mapping: dict[str, str] = {}
        self._by_name: dict[str, Any] = {}
        for spec in binary.kernels:
            if spec.symbol is not None:
                self._by_name.setdefault(spec.symbol, spec)
                if spec.symbol != spec.expression:
                    self.mapping[spec.expression] = spec.symbol
            else:  # a kernel with internal linkage: only its expression finds it
                self._by_name.setdefault(spec.expression, spec)
        self._functions: dict[str, Function] = {}
        self._lock = threading.Lock()

    def get_function(self, name: str) -> Function:
        """``cuModuleGetFunction``: by lowered name (extern "C" names are their own)."""
        with self._lock:
            fn = self._functions.get(name)
            if fn is None:
                spec = self._by_name.get(name)
                if spec is None:
                    runtime.raise_cuda_driver_error(
                        "CUDA_ERROR_NOT_FOUND", "named symbol not found"
                    )
                static = self.binary.static_smem.get(spec.symbol or "", 0)
                fn = self._functions[name] = Function(self.binary, spec, self.device, static)
            return fn

    def get_global_var(self, name: str) -> int:
        """``cuModuleGetGlobal``: the address of a ``__device__``/``__constant__`` variable
        (cupy/cuda/function.pyx keeps the address only)."""
        return self.global_extent(name)[0]

    def global_extent(self, name: str) -> tuple[int, int]:
        """Address and size of a global variable (the size cuModuleGetGlobal also gives)."""
        found = self.binary.global_symbol(name)
        if found is None:
            runtime.raise_cuda_driver_error("CUDA_ERROR_NOT_FOUND", "named symbol not found")
        return found


_modules: dict[tuple, Module] = {}
_modules_lock = threading.Lock()


def compile_with_cache(
    source: str,
    options: tuple[str, ...] = (),
    *,
    prepend_cupy_headers: bool = True,
    name_expressions: tuple[str, ...] | None = None,
    log_stream: Any = None,
) -> Module:
    """The module for ``source`` on the current device, compiled on first use.

    Compile errors raise ``cupy.cuda.compiler.CompileException`` with the host
    compiler's messages, as NVRTC's do. ``log_stream`` is accepted and left
    empty (kernels compile with ``-w``).
    """
    if _use_default_std(options):
        options = (*options, "--std=c++17")
    mode = runtime.config.sanitize
    if mode is not None:
        sanitize.check_loaded(mode)
    device = runtime.current_device()
    key = (source, options, name_expressions, prepend_cupy_headers, mode, device)
    with _modules_lock:
        module = _modules.get(key)
    if module is not None:
        return module
    try:
        binary = build(
            source, options, name_expressions, sanitize=mode, cupy_headers=prepend_cupy_headers
        )
    except CompileError as exc:
        from cupy.cuda.compiler import CompileException

        raise CompileException(str(exc), source, "kernel.cu", options, "nvrtc") from None
    with _modules_lock:
        return _modules.setdefault(key, Module(binary, device))
