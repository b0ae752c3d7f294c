"""The CuPy backend: device arrays, cuBLAS/cuFFT/cuSOLVER through CuPy."""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from typing import Any

import numpy as np

from gpukit.backend import Backend, Device
from gpukit.backend.collectives import PeerCopyCollectives
from gpukit.errors import GPU_FIX, BackendUnavailableError

from . import graphs
from .collectives import NcclCollectives, communicators
from .fft import CupyFFT
from .linalg import CupyLinalg
from .matmul import CupyMatmul
from .memory import CupyMemoryMixin
from .user_kernels import CupyUserKernels

try:
    import cupy
except ImportError as exc:  # raised as BackendUnavailableError by probe()
    cupy = None
    _import_error: ImportError | None = exc
else:
    _import_error = None


#: use_device's context where the device asked for is the only one
_CURRENT = contextlib.nullcontext()
_CUDA_ERROR_NO_DEVICE = 100  # cudaErrorNoDevice (CuPy exports no constant for it)


def probe() -> int:
    """Check that CuPy imports and a CUDA device is usable; return the device count.

    Every CUDA failure becomes a ``BackendUnavailableError`` whose reason says what is
    wrong in words (no NVIDIA driver at all, a driver too old for this CuPy, no visible
    device) and whose fix says what to do; the CUDA error stays attached as the cause.
    """
    if cupy is None:
        raise BackendUnavailableError("cupy", f"CuPy is not installed ({_import_error})", GPU_FIX)
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        # cudaErrorNoDevice: a working driver sees no GPU (CUDA_VISIBLE_DEVICES hides them)
        if exc.status != _CUDA_ERROR_NO_DEVICE:
            raise BackendUnavailableError("cupy", *_driver_problem(exc)) from exc
        count = 0
    except Exception as exc:  # e.g. libcuda cannot be loaded at all
        raise BackendUnavailableError(
            "cupy", f"CUDA is not usable: {type(exc).__name__}: {exc}", GPU_FIX
        ) from exc
    if count == 0:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        hint = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        raise BackendUnavailableError("cupy", f"no CUDA device is visible{hint}", GPU_FIX)
    _check_libraries()
    return count


# The CUDA libraries gpukit calls through CuPy, each with a call that loads it (CuPy loads
# them lazily, so a driver without a CUDA toolkit or CuPy's [ctk] wheels fails only at the
# first matmul, FFT, solve or kernel otherwise).
_LIBRARIES: tuple[tuple[str, str, str], ...] = (
    ("cuBLAS", "cupy.cuda.device", "get_cublas_handle"),
    ("cuSOLVER", "cupy.cuda.device", "get_cusolver_handle"),
    ("cuFFT", "cupy.cuda.cufft", "getVersion"),
    ("NVRTC", "cupy.cuda", "nvrtc.getVersion"),  # cupy.cuda.nvrtc: an attribute, not a module
)


def _check_libraries() -> None:
    """Load every CUDA library gpukit uses now, so a missing one is a clear error at once."""
    failed = []
    cause = None
    for name, module, function in _LIBRARIES:
        try:
            functools.reduce(getattr, function.split("."), importlib.import_module(module))()
        except Exception as exc:  # ImportError, OSError, pathfinder's not-found error...
            first_line = (str(exc).strip().splitlines() or [""])[0]
            failed.append(f"{name} ({type(exc).__name__}: {first_line})")
            cause = cause or exc
    if failed:
        major = cupy.cuda.runtime.runtimeGetVersion() // 1000
        raise BackendUnavailableError(
            "cupy",
            "CUDA libraries CuPy needs cannot be loaded: " + "; ".join(failed),
            f'pip install "gpukit[cuda{major}]" (it brings them as wheels through CuPy\'s [ctk] '
            f"extra), or install the CUDA {major}.x toolkit, or run on the CPU with "
            "GPUKIT_BACKEND=numpy",
        ) from cause


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def _driver_problem(exc: Exception) -> tuple[str, str]:
    """(reason, fix) for a CUDA runtime failure at the first device query.

    ``cudaErrorInsufficientDriver`` means two different things: no driver at all
    (``cudaDriverGetVersion`` reports 0, as on a machine without an NVIDIA GPU) or a
    driver older than the CUDA runtime CuPy was built for.
    """
    rt = cupy.cuda.runtime
    try:
        driver, runtime = rt.driverGetVersion(), rt.runtimeGetVersion()
    except Exception:  # libcudart itself cannot be queried: report CUDA's words
        driver = runtime = None
    if driver == 0:
        return (
            f"no NVIDIA driver found (CuPy {cupy.__version__} is built for CUDA "
            f"{_cuda_version(runtime)})",
            "on a machine with an NVIDIA GPU, install its driver; otherwise run on the CPU "
            "with GPUKIT_BACKEND=numpy",
        )
    if driver is not None and runtime is not None and driver < runtime:
        return (
            f"the NVIDIA driver is too old for this CuPy: it supports CUDA "
            f"{_cuda_version(driver)}, CuPy {cupy.__version__} is built for CUDA "
            f"{_cuda_version(runtime)}",
            "update the NVIDIA driver, or install the CuPy build for your driver's CUDA "
            f'version (pip install "gpukit[cuda{driver // 1000}]"), or run on the CPU with '
            "GPUKIT_BACKEND=numpy",
        )
    return f"CUDA is not usable: {exc} (CuPy {cupy.__version__})", GPU_FIX


class CupyBackend(CupyMatmul, CupyFFT, CupyLinalg, CupyMemoryMixin, CupyUserKernels, Backend):
    """Arrays are ``cupy.ndarray``; one device per visible GPU."""

    name = "cupy"
    is_device = True
    # CuPy compiles every kernel, its own and gpukit's, with -ftz=true
    # (cupy/cuda/compiler.py, _compile_with_cache_cuda)
    flushes_single_subnormals = True
    # cuSOLVER's getrf given a NaN returned finite values on an H200
    # (docs/benchmarks/2026-11-26-h200.md)
    lu_spreads_nan = False

    def __init__(self) -> None:
        self.xp = cupy
        self._count = cupy.cuda.runtime.getDeviceCount()
        self._streams: dict[int, Any] = {}  # device -> its worker stream, made on first use

    def owns(self, x: Any) -> bool:
        return isinstance(x, cupy.ndarray)

    def asarray(self, obj: Any, dtype: Any = None, device: int | None = None) -> Any:
        if device is None:
            return cupy.asarray(obj, dtype=dtype)
        if isinstance(obj, cupy.ndarray) and obj.device.id != device:
            # cupy.asarray leaves an array on its own device; gk.asarray(x, device=i) moves it
            obj = self.to_device(obj, device)
        with cupy.cuda.Device(device):
            return cupy.asarray(obj, dtype=dtype)

    def to_numpy(self, x: Any) -> np.ndarray:
        return cupy.asnumpy(x)

    def device_of(self, x: Any) -> int:
        # the memory's device id, as ndarray.device reads it, without making a Device
        return x.data.device_id

    def device_count(self) -> int:
        return self._count

    def devices(self) -> list[Device]:
        out = []
        for i in range(self._count):
            props = cupy.cuda.runtime.getDeviceProperties(i)
            name = props["name"]
            out.append(
                Device(
                    self.name,
                    i,
                    name.decode() if isinstance(name, bytes) else str(name),
                    int(props["totalGlobalMem"]),
                    f"{props['major']}.{props['minor']}",
                )
            )
        return out

    def current_device(self) -> int:
        return cupy.cuda.runtime.getDevice()  # what Device().id reads, without the object

    def use_device(self, index: int) -> contextlib.AbstractContextManager[Any]:
        if index == 0 and self._count == 1:
            # the only device is always the current one: nothing to switch (entering a
            # cupy.cuda.Device costs every layer call on it a few hundred ns)
            return _CURRENT
        return cupy.cuda.Device(index)

    def capture_graph(self, work: Any) -> tuple[Any, Any]:
        return graphs.capture(self.xp, work)

    def kernel(self, name: str) -> Any:
        from . import kernels  # CUDA sources compile on first launch, per device

        return getattr(kernels, name)

    def synchronize(self, device: int | None = None) -> None:
        for i in range(self._count) if device is None else (device,):
            cupy.cuda.Device(i).synchronize()

    def record_event(self, device: int) -> Any:
        with cupy.cuda.Device(device):
            event = cupy.cuda.Event(disable_timing=True)
            event.record(cupy.cuda.get_current_stream())
        return event

    def wait_event(self, event: Any, device: int) -> None:
        if event is not None:
            with cupy.cuda.Device(device):
                cupy.cuda.get_current_stream().wait_event(event)

    def _stream(self, index: int) -> Any:
        stream = self._streams.get(index)
        if stream is None:
            with cupy.cuda.Device(index):
                # Non-blocking: the legacy default stream's implicit synchronisation does
                # not exist under the per-thread default stream; gpukit's workers order
                # with the caller through events (gpukit._runtime.workers) in both modes.
                stream = self._streams.setdefault(index, cupy.cuda.Stream(non_blocking=True))
        return stream

    @contextlib.contextmanager
    def worker_context(self, index: int):
        with cupy.cuda.Device(index), self._stream(index):
            yield

    def to_device(self, x: Any, device: int, copy: bool = True) -> Any:
        source = x.device.id
        if source == device:
            if not copy:
                return x
            with x.device:
                return cupy.copy(x)
        if x.size == 0:  # nothing to read on the source
            with cupy.cuda.Device(device):
                return cupy.empty(x.shape, x.dtype)
        with x.device:
            if not (x.flags.c_contiguous or x.flags.f_contiguous):
                # CuPy copies only contiguous arrays between devices (core.pyx
                # ndarray.copy); packing here, on the current stream, keeps it ordered
                x = cupy.ascontiguousarray(x)
        # The copy runs on the destination's current stream, which does not wait for the
        # source's on its own (with or without peer access); the source's later work,
        # which may reuse x's memory, must not overtake the copy either.
        self.wait_event(self.record_event(source), device)
        with cupy.cuda.Device(device):
            out = cupy.copy(x)  # order 'K': C or F layout kept, one memcpy
        self.wait_event(self.record_event(device), source)
        return out

    def collectives(self, devices: tuple[int, ...]) -> Any:
        comms = communicators(tuple(devices))
        if comms is not None:
            return NcclCollectives(self, devices, comms)
        return PeerCopyCollectives(self, devices)

    def versions(self) -> dict[str, str]:
        return versions()


def versions() -> dict[str, str]:
    """CuPy's version and the CUDA runtime and driver versions it sees.

    Needs no usable device, so ``gpukit info`` can show them when the backend is
    unavailable: a driver older than the runtime is what ``cudaErrorInsufficientDriver``
    means. A missing driver reads ``"none"``.
    """
    if cupy is None:
        return {}
    rt = cupy.cuda.runtime

    def fmt(query) -> str:
        try:
            v = query()
        except Exception as exc:  # e.g. libcudart cannot be loaded
            return f"unknown ({type(exc).__name__})"
        return f"{v // 1000}.{v % 1000 // 10}" if v else "none"

    return {
        "cupy": cupy.__version__,
        "cuda_runtime": fmt(rt.runtimeGetVersion),
        "cuda_driver": fmt(rt.driverGetVersion),
    }
