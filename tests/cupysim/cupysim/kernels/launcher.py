"""Launching a compiled kernel as ``cuLaunchKernel`` would, on the host.

Arguments are converted by CuPy's rules (``cupy/cuda/function.pyx: _pointer``)
and then checked against the parameter list the compiler saw, which the CUDA
driver never does: a wrong count, a scalar where a pointer is declared or a
value of the wrong size makes a GPU read garbage; here it is a
:class:`KernelArgumentError`. The launch configuration is checked against the
device profile and the function's attributes first, failing with the
``CUDADriverError`` the driver returns. The kernel then runs inside
``cupysim.runtime.launch`` (placement and stream-hazard checks) on the current
device's current stream.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Callable
from contextlib import nullcontext as _nothing
from functools import cache
from typing import Any

import numpy as np

from .. import capture, ftz, launchcheck, runtime
from .. import tracing as _trace
from . import sanitize
from .compiler import Binary, KernelSpec, LaunchConfig, ParamSpec
from .errors import KernelArgumentError, KernelFault

__all__ = ["Function", "to_args"]

_ERRLEN = 8192


@cache
def _workers() -> int:
    """Host threads running a launch's blocks: ``CUPYSIM_KERNEL_THREADS``, else one
    per core this process may use."""
    return runtime.config.kernel_threads or max(1, len(os.sched_getaffinity(0)))


def _is_device_array(x: Any) -> bool:
    import cupy

    return isinstance(x, cupy.ndarray)


def _is_memory_pointer(x: Any) -> bool:
    import cupy

    mp = getattr(cupy.cuda, "MemoryPointer", None)
    return mp is not None and isinstance(x, mp)


class _Arg:
    """One converted argument: the bytes ``_pointer`` would hand the driver.

    ``role``: "read"/"write" for arrays whose use the caller knows (elementwise and
    reduction operands); None lets the parameter's constness decide. ``what`` describes the
    argument for an error message: a string, or a function making it (formatting a dtype
    costs ~29k instructions, which would be counted in every launch's host time).
    """

    __slots__ = ("array", "data", "dtype", "pointer_like", "role", "what")

    def __init__(
        self,
        data: bytes,
        what: str | Callable[[], str],
        array: Any = None,
        pointer_like: bool = False,
        dtype: np.dtype | None = None,
        role: str | None = None,
    ):
        self.data, self.what, self.array, self.pointer_like = data, what, array, pointer_like
        self.dtype, self.role = dtype, role


def _carray_bytes(x: Any) -> bytes:
    """The CArray struct CuPy passes for an ndarray (``cupy/_core/_carray.pyx``):
    data pointer, size, shape[ndim], strides[ndim]."""
    op = runtime.operand(x)
    size = int(np.prod(op.shape, dtype=np.int64))
    return struct.pack(f"<Qq{2 * len(op.shape)}q", op.ptr, size, *op.shape, *op.strides)


def _scalar_dtype(x: Any) -> np.dtype:
    """``cupy/_core/_scalar.pyx: numpy_dtype_from_pyscalar`` and ``CScalar.__init__``."""
    typ = type(x)
    if typ is bool:
        return np.dtype(np.bool_)
    if typ is float:
        return np.dtype(np.float64)
    if typ is complex:
        return np.dtype(np.complex128)
    if typ is int:
        return np.dtype(np.uint64) if x >= 0x8000000000000000 else np.dtype(np.int64)
    if isinstance(x, np.generic):
        return x.dtype
    raise TypeError(f"Unsupported type {type(x)}")


def _convert(x: Any) -> _Arg:
    """``cupy/cuda/function.pyx: _pointer``: what reaches the driver for ``x``."""
    prepared = getattr(x, "_cupysim_kernel_arg", None)
    if prepared is not None:  # an elementwise/reduction operand, scalar or indexer
        data, what, array, writes = prepared()
        role = None if array is None else ("write" if writes else "read")
        return _Arg(data, what, array, dtype=getattr(x, "dtype", None), role=role)
    if x is None:  # CIntptr(0)
        return _Arg(bytes(8), "None", pointer_like=True)
    if _is_device_array(x):  # ndarray.get_pointer(): its CArray
        return _Arg(_carray_bytes(x), "cupy.ndarray", array=x, pointer_like=True)
    if _is_memory_pointer(x):  # CIntptr(x.ptr)
        return _Arg(struct.pack("<q", x.ptr), "MemoryPointer", pointer_like=True)
    if isinstance(x, np.ndarray):
        # function.pyx: only size-one numpy arrays pass by value (CNumpyArray).
        if x.size != 1:
            raise TypeError(
                f"You are trying to pass a numpy.ndarray of shape {x.shape} as a kernel "
                "parameter. Only numpy.ndarrays of size one can be passed by value. If you "
                "meant to pass a pointer to __global__ memory, you need to pass a "
                "cupy.ndarray instead."
            )
        return _Arg(
            np.ascontiguousarray(x).tobytes(),
            lambda: f"a numpy.ndarray of {x.dtype}",
            dtype=x.dtype,
        )
    # _scalar.CScalar: the value stored in its dtype (PyArray_Pack: out-of-range
    # Python ints raise OverflowError).
    dtype = _scalar_dtype(x)
    data = np.array(x, dtype=dtype).tobytes()
    return _Arg(data, lambda: f"a {_scalar_name(x, dtype)}", dtype=dtype)


def _scalar_name(x: Any, dtype: np.dtype) -> str:
    return type(x).__qualname__ if type(x).__module__ == "builtins" else f"numpy.{dtype}"


_KIND_DTYPES = {
    ParamSpec.INT: "iu",
    ParamSpec.UINT: "iu",
    ParamSpec.FLOAT: "f",
    ParamSpec.BOOL: "b",
}


def _check(spec: KernelSpec, i: int, p: ParamSpec, x: Any, arg: _Arg) -> None:
    def fail(why: str) -> None:
        what = arg.what if isinstance(arg.what, str) else arg.what()
        raise KernelArgumentError(
            f"argument {i} of kernel {spec.expression} (parameter '{p.type}', {p.size} bytes) "
            f"is {what}: {why}. cuLaunchKernel would copy {p.size} bytes from it "
            "unchecked and the kernel would read garbage"
        )

    if p.is_pointer:
        if arg.pointer_like:
            return
        integer = isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_)
        if integer and len(arg.data) == 8:  # a device address passed as an integer
            return
        fail("a pointer parameter needs a cupy.ndarray (or None, or an address)")
    if arg.array is not None:
        if p.type.startswith("CArray<") and len(arg.data) == p.size:
            return
        fail("an array is passed as a pointer (its CArray), not as a value")
    if arg.pointer_like:
        fail("a pointer cannot be a by-value parameter")
    if len(arg.data) != p.size:
        fail(f"its value has {len(arg.data)} bytes")
    kinds = _KIND_DTYPES.get(p.kind)
    if kinds is not None and arg.dtype is not None:
        dtype = arg.dtype
        if dtype.kind not in kinds:
            fail(f"a {dtype} value in a '{p.type}' parameter reinterprets its bits")


def to_args(spec: KernelSpec, args: Any) -> tuple[ctypes.Array, list, list]:
    """The parameter buffer for ``args``, and the arrays the kernel reads and writes."""
    converted = [(x, _convert(x)) for x in args]
    if len(converted) != len(spec.params):
        # stricter than CuPy, which passes any number: cuLaunchKernel reads as many
        # parameters as the kernel has, past the list when it is shorter, and a longer one
        # is almost always a slip the kernel would silently ignore
        consequence = (
            "cuLaunchKernel would read past the argument list"
            if len(converted) < len(spec.params)
            else "the kernel would ignore the extra arguments"
        )
        raise KernelArgumentError(
            f"kernel {spec.expression} takes {len(spec.params)} arguments "
            f"({', '.join(p.type for p in spec.params)}), got {len(converted)}; {consequence}"
        )
    buf = (ctypes.c_char * max(1, spec.param_bytes))()
    reads, writes = [], []
    for i, (p, (x, arg)) in enumerate(zip(spec.params, converted, strict=True)):
        _check(spec, i, p, x, arg)
        ctypes.memmove(ctypes.addressof(buf) + p.offset, arg.data, p.size)
        if arg.array is not None:
            if arg.role != "write":
                reads.append(arg.array)
            if arg.role == "write" or (arg.role is None and p.kind != ParamSpec.CONST_POINTER):
                writes.append(arg.array)
    return buf, reads, writes


def _dims(name: str, value: Any) -> tuple[int, int, int]:
    """``Function.__call__`` (function.pyx): pad to 3 and clamp each to >= 1."""
    if not isinstance(value, tuple):
        raise TypeError(
            f"Argument '{name}' has incorrect type (expected tuple, got {type(value).__name__})"
        )
    v = (*value, 1, 1)[:3]
    return tuple(max(1, int(d)) for d in v)  # type: ignore[return-value]


class Function:
    """One kernel of a loaded module on one device (``cupy.cuda.function.Function``)."""

    def __init__(self, binary: Binary, spec: KernelSpec, device: int, static_smem: int) -> None:
        self.binary = binary
        self.spec = spec
        self.device = device
        self.static_smem = static_smem
        profile = runtime.device_profile(device)
        self._profile = profile
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: 48 KiB minus the static
        # shared memory until the opt-in attribute raises it.
        self.max_dynamic_shared_size_bytes = profile["MaxSharedMemoryPerBlock"] - static_smem
        self.preferred_shared_memory_carveout = -1

    @property
    def max_threads_per_block(self) -> int:
        return min(self.spec.max_threads, self._profile["MaxThreadsPerBlock"])

    def set_max_dynamic_shared_size_bytes(self, value: int) -> None:
        # cuFuncSetAttribute rejects more than the opt-in limit minus static shared memory.
        limit = self._profile["MaxSharedMemoryPerBlockOptin"] - self.static_smem
        if not 0 <= value <= limit:
            runtime.raise_cuda_driver_error("CUDA_ERROR_INVALID_VALUE", "invalid argument")
        self.max_dynamic_shared_size_bytes = int(value)

    def _check_config(self, grid: tuple, block: tuple, shared_mem: int) -> None:
        p = self._profile
        limits = (p["MaxBlockDimX"], p["MaxBlockDimY"], p["MaxBlockDimZ"])
        glimits = (p["MaxGridDimX"], p["MaxGridDimY"], p["MaxGridDimZ"])
        threads = block[0] * block[1] * block[2]
        if (
            any(b > lim for b, lim in zip(block, limits, strict=True))
            or threads > p["MaxThreadsPerBlock"]
            or any(g > lim for g, lim in zip(grid, glimits, strict=True))
            or shared_mem > self.max_dynamic_shared_size_bytes
        ):
            runtime.raise_cuda_driver_error("CUDA_ERROR_INVALID_VALUE", "invalid argument")
        if threads > self.max_threads_per_block:  # above the kernel's __launch_bounds__
            runtime.raise_cuda_driver_error(
                "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"
            )

    def __call__(
        self,
        grid: Any,
        block: Any,
        args: Any,
        shared_mem: int = 0,
        stream: Any = None,
        enable_cooperative_groups: bool = False,
        *,
        kind: str = "raw",
    ) -> None:
        """Launch (``Function.__call__``). ``kind``: who launches, for the placement
        rule of ``cupysim.runtime.launch`` ("raw", "elementwise" or "reduction")."""
        grid3, block3 = _dims("grid", grid), _dims("block", block)
        if shared_mem < 0:
            raise OverflowError("can't convert negative value to size_t")
        if enable_cooperative_groups:
            raise NotImplementedError("cupysim does not simulate cooperative launches")
        buf, reads, writes = self._marshal(args)
        self._check_config(grid3, block3, shared_mem)
        self._run(grid3, block3, shared_mem, buf, reads, writes, stream, kind)

    def linear_launch(
        self,
        size: int,
        args: Any,
        shared_mem: int = 0,
        block_max_size: int = 128,
        stream=None,
        *,
        kind: str = "raw",
    ) -> None:
        """``Function.linear_launch`` (function.pyx), as elementwise kernels launch."""
        gridx = min(0x7FFFFFFF, (size + block_max_size - 1) // block_max_size)
        blockx = min(block_max_size, size)
        self.__call__((gridx,), (blockx,), args, shared_mem=shared_mem, stream=stream, kind=kind)

    def _marshal(self, args: Any):
        return to_args(self.spec, args)

    def _run(self, grid, block, shared_mem, buf, reads, writes, stream, kind) -> None:
        # CuPy compiles every kernel with -ftz=true: cupysim/ftz.py
        flush = ftz.single_precision(a for a in (*reads, *writes) if hasattr(a, "dtype"))
        cfg = LaunchConfig(grid, block, shared_mem, _workers(), flush)
        name = self.spec.expression
        if _trace.active:
            ops = tuple(a for a in (*reads, *writes) if hasattr(a, "dtype"))
            _trace.note(op=name, kind=kind, grid=grid, block=block, arrays=ops)
        if launchcheck.active():  # every check has passed; the body is what is skipped
            with (
                stream if stream is not None else _nothing(),
                runtime.launch(name, reads, writes, kind=kind),
            ):
                launchcheck.record(launchcheck.Launch(name, grid, block, shared_mem))
            return
        call = _Call(self.spec, cfg, buf)
        if capture.captures:  # a CUDA graph replays the launch: same arguments, same memory
            capture.offer(name, call, capture.owners_of((*reads, *writes)), name)
        if stream is not None:
            with stream, runtime.launch(name, reads, writes, kind=kind):
                call()
        else:
            with runtime.launch(name, reads, writes, kind=kind):
                call()


class _Call:
    """One launch of a compiled kernel, by its arguments' bytes: run as often as a graph
    replays it (the bytes hold the operands' addresses, not the arrays)."""

    __slots__ = ("buf", "cfg", "spec")

    def __init__(self, spec: KernelSpec, cfg: LaunchConfig, buf) -> None:
        self.spec, self.cfg, self.buf = spec, cfg, buf

    def __call__(self) -> None:
        name = self.spec.expression
        err = ctypes.create_string_buffer(_ERRLEN)
        code = self.spec.launch(ctypes.byref(self.cfg), ctypes.addressof(self.buf), err, _ERRLEN)
        sanitize.raise_new_reports(name)
        if code == 0:
            return
        message = err.value.decode(errors="replace")
        if code == 2:  # the device runtime printed the assertion; CUDA reports this
            runtime.raise_cuda_driver_error("CUDA_ERROR_ASSERT", "device-side assert triggered")
        if code == 3:
            runtime.raise_cuda_driver_error(
                "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"
            )
        raise KernelFault(f"kernel {name}: {message}")
