"""``cupy.RawKernel`` and ``cupy.RawModule``, executing on the host.

A port of ``cupy/_core/raw.pyx`` (CuPy 14): the same arguments, type checks,
per-device lazy compilation and caches, ``get_function`` through the name
expressions' lowered names, and the function attributes. The CUDA source is
compiled by ``cupysim.kernels`` (host compiler) instead of NVRTC.
"""

from __future__ import annotations

import pickle
import threading

from cupysim import runtime as _runtime
from cupysim.kernels.module import compile_with_cache as _compile_with_cache

__all__ = ["RawKernel", "RawModule"]


def _typed(name: str, value, kind: type):
    # Cython's check of typed arguments (`str code`, `tuple options` in raw.pyx),
    # which let None through.
    if value is None:
        return value
    if not isinstance(value, kind):
        raise TypeError(
            f"Argument '{name}' has incorrect type (expected {kind.__name__}, "
            f"got {type(value).__name__})"
        )
    return value


def _device_count() -> int:
    import cupy

    return cupy.cuda.runtime.getDeviceCount()


_raw_modules: dict[tuple, object] = {}
_raw_lock = threading.Lock()


def _get_raw_module(
    code,
    path,
    options,
    backend,
    translate_cucomplex,
    enable_cooperative_groups,
    jitify,
    name_expressions,
    log_stream,
):
    """``raw.pyx: _get_raw_module`` (memoized for each device)."""
    if path is not None:
        raise NotImplementedError(
            f"cupysim compiles CUDA C++ source; it cannot load the cubin/PTX file {path!r}"
        )
    if translate_cucomplex:
        raise NotImplementedError("cupysim does not translate cuComplex.h code")
    if jitify:
        raise NotImplementedError("cupysim does not run Jitify")
    return _compile_with_cache(
        code,
        options,
        prepend_cupy_headers=False,
        name_expressions=name_expressions,
        log_stream=log_stream,
    )


class RawKernel:
    """User-defined custom kernel (``cupy/_core/raw.pyx: RawKernel``).

    The kernel is compiled at the first call on each device.
    """

    _raw_ver = 2  # raw.pyx: the pickle format version

    def __init__(
        self,
        code,
        name,
        options=(),
        backend="nvrtc",
        *,
        translate_cucomplex=False,
        enable_cooperative_groups=False,
        jitify=None,
    ):
        self.code = _typed("code", code, str)
        self.name = _typed("name", name, str)
        self.options = _typed("options", options, tuple)
        self.backend = _typed("backend", backend, str)
        self.translate_cucomplex = bool(translate_cucomplex)
        self.enable_cooperative_groups = bool(enable_cooperative_groups)
        self.jitify = jitify
        self.file_path = None
        self.name_expressions = None
        self._kernel_cache = []
        self.__name__ = name

    def __call__(self, grid, block, args, **kwargs):
        """__call__(self, grid, block, args, *, shared_mem=0)

        Compiles and invokes the kernel.
        """
        self.kernel(
            grid, block, args, enable_cooperative_groups=self.enable_cooperative_groups, **kwargs
        )

    @property
    def kernel(self):
        return self._kernel()

    def _kernel(self, log_stream=None):
        dev = _runtime.current_device()
        if not self._kernel_cache:
            self._kernel_cache = [None] * _device_count()
        ker = self._kernel_cache[dev]
        if ker is None:
            mod = _get_raw_module(
                self.code,
                self.file_path,
                self.options,
                self.backend,
                self.translate_cucomplex,
                self.enable_cooperative_groups,
                self.jitify,
                self.name_expressions,
                log_stream,
            )
            ker = mod.get_function(self.name)
            self._kernel_cache[dev] = ker
        return ker

    def __getstate__(self):
        return {
            "code": self.code,
            "name": self.name,
            "options": self.options,
            "backend": self.backend,
            "translate_cucomplex": self.translate_cucomplex,
            "file_path": self.file_path,
            "name_expressions": self.name_expressions,
            "enable_cooperative_groups": self.enable_cooperative_groups,
            "jitify": self.jitify,
            "raw_ver": self._raw_ver,
        }

    def __setstate__(self, args):
        if args.get("raw_ver") != self._raw_ver:
            raise pickle.UnpicklingError(
                "The pickled RawKernel object is not supported by the current CuPy version. "
                "It should not be used. Please recompile."
            )
        self.code = args["code"]
        self.name = self.__name__ = args["name"]
        self.options = args["options"]
        self.backend = args["backend"]
        self.translate_cucomplex = args["translate_cucomplex"]
        self.enable_cooperative_groups = args["enable_cooperative_groups"]
        self.file_path = args["file_path"]
        self.name_expressions = args["name_expressions"]
        self.jitify = args["jitify"]
        self._kernel_cache = []

    @property
    def attributes(self):
        """The kernel's attributes (``raw.pyx: RawKernel.attributes``)."""
        keys = [
            "max_threads_per_block",
            "shared_size_bytes",
            "const_size_bytes",
            "local_size_bytes",
            "num_regs",
            "ptx_version",
            "binary_version",
            "cache_mode_ca",
            "max_dynamic_shared_size_bytes",
            "preferred_shared_memory_carveout",
        ]
        return {k: getattr(self, k) for k in keys}

    @property
    def max_threads_per_block(self):
        """``CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK``: ``__launch_bounds__`` or the
        device's 1024 (a GPU may also lower it for register use; the host cannot)."""
        return self.kernel.max_threads_per_block

    @property
    def shared_size_bytes(self):
        """Static shared memory of the kernel."""
        return self.kernel.static_smem

    @property
    def const_size_bytes(self):
        return 0

    @property
    def local_size_bytes(self):
        return 0

    @property
    def num_regs(self):
        """Registers are a GPU compiler's choice; the simulator reports 0."""
        return 0

    @property
    def ptx_version(self):
        return 90

    @property
    def binary_version(self):
        return 90

    @property
    def cache_mode_ca(self):
        return 0

    @property
    def max_dynamic_shared_size_bytes(self):
        """``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``; settable up to the
        opt-in limit (227 KiB on an H100) minus the static shared memory."""
        return self.kernel.max_dynamic_shared_size_bytes

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value):
        self.kernel.set_max_dynamic_shared_size_bytes(value)

    @property
    def preferred_shared_memory_carveout(self):
        return self.kernel.preferred_shared_memory_carveout

    @preferred_shared_memory_carveout.setter
    def preferred_shared_memory_carveout(self, fraction):
        if not -1 <= fraction <= 100:
            _runtime.raise_cuda_driver_error("CUDA_ERROR_INVALID_VALUE", "invalid argument")
        self.kernel.preferred_shared_memory_carveout = int(fraction)

    def compile(self, log_stream=None):
        """Compile the current kernel (it compiles implicitly on the first call)."""
        self._kernel_cache = [None] * _device_count()
        self._kernel(log_stream=log_stream)


class RawModule:
    """User-defined custom module (``cupy/_core/raw.pyx: RawModule``).

    The source compiles when a kernel (or global) is first retrieved, once per device.
    """

    def __init__(
        self,
        *,
        code=None,
        path=None,
        options=(),
        backend="nvrtc",
        translate_cucomplex=False,
        enable_cooperative_groups=False,
        name_expressions=None,
        jitify=None,
    ):
        _typed("code", code, str)
        _typed("path", path, str)
        _typed("options", options, tuple)
        _typed("backend", backend, str)
        if (code is None) == (path is None):
            raise TypeError("Exactly one of `code` and `path` keyword arguments must be given.")
        if name_expressions is not None:
            if code is None:
                raise ValueError("need CUDA C++ code for the requested kernels")
            if backend != "nvrtc":
                raise ValueError(
                    "only nvrtc supports retrieving the mangled names for the "
                    "given name expressions"
                )
            self.name_expressions = tuple(name_expressions)
        else:
            self.name_expressions = None
        if jitify:
            if code is None:
                raise ValueError("Jitify does not support precompiled objects")
            if backend != "nvrtc":
                raise ValueError("Jitify only supports NVRTC")
        self.code = code
        self.file_path = path
        self.enable_cooperative_groups = bool(enable_cooperative_groups)
        self.jitify = jitify
        if self.code is not None:
            self.options = options
            self.backend = backend
            self.translate_cucomplex = bool(translate_cucomplex)
        else:
            self.options = ()
            self.backend = "nvcc"
            self.translate_cucomplex = False

    @property
    def module(self):
        return self._module()

    def _module(self, log_stream=None):
        return _get_raw_module(
            self.code,
            self.file_path,
            self.options,
            self.backend,
            self.translate_cucomplex,
            self.enable_cooperative_groups,
            self.jitify,
            self.name_expressions,
            log_stream,
        )

    def compile(self, log_stream=None):
        """Compile the current module (it compiles implicitly when first used)."""
        self._module(log_stream)

    def get_function(self, name):
        """The kernel ``name``: an extern "C" name, a lowered name, or one of the
        ``name_expressions`` (``raw.pyx: RawModule.get_function``)."""
        _typed("name", name, str)
        if self.name_expressions:
            mangled = self.module.mapping.get(name)
            if mangled is not None:
                name = mangled
        ker = RawKernel(
            self.code,
            name,
            self.options,
            self.backend,
            translate_cucomplex=self.translate_cucomplex,
            enable_cooperative_groups=self.enable_cooperative_groups,
            jitify=self.jitify or None,
        )
        ker.file_path = self.file_path
        ker.name_expressions = self.name_expressions
        ker.kernel  # noqa: B018  (compile and look it up now, as CuPy does)
        return ker

    def get_global(self, name):
        """A ``MemoryPointer`` to the global symbol ``name`` (``__constant__``/``__device__``)."""
        from cupysim import memory as _sim_memory

        from cupy.cuda.memory import MemoryPointer, UnownedMemory

        mod = self.module
        ptr, nbytes = mod.global_extent(name)
        dev = _runtime.current_device()
        # raw.pyx get_global: UnownedMemory(ptr, 0, mod, dev), size 0 as CuPy reports it;
        # the host bytes standing in for it are the symbol's, so an array over it (the
        # usage get_global's docstring shows for __constant__ memory) reads and writes the
        # variable the kernels see
        mem = UnownedMemory(ptr, 0, mod, dev)
        mem._storage = _sim_memory.foreign(ptr, nbytes, dev)
        return MemoryPointer(mem, 0)
