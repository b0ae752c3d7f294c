"""``cupy.cuda.runtime``: the CUDA runtime API on simulated devices.

Mirrors cupy_backends/cuda/api/runtime.pyx (CuPy 14.2): the same function names, the
same ``CUDARuntimeError`` statuses and messages, the same constants. Under
``CUPYSIM_FAIL=driver`` every call that needs the driver raises
``cudaErrorInsufficientDriver`` and ``driverGetVersion()`` returns 0, as the installed CuPy
does on a machine without an NVIDIA driver.
"""

from __future__ import annotations

import itertools as _itertools

from cupysim import capture as _capture
from cupysim import devices as _devices
from cupysim import memory as _memory
from cupysim import profile as _profile
from cupysim import streams as _streams
from cupysim.config import config as _config
from cupysim.errors import CUDARuntimeError

is_hip = False

streamDefault = 0
streamNonBlocking = 1
streamLegacy = _streams.STREAM_LEGACY
streamPerThread = _streams.STREAM_PER_THREAD
eventDefault = 0
eventBlockingSync = 1
eventDisableTiming = 2
eventInterprocess = 4
memoryTypeUnregistered = 0
memoryTypeHost = 1
memoryTypeDevice = 2
memoryTypeManaged = 3
hostAllocDefault = 0
hostAllocPortable = 1
hostAllocMapped = 2
hostAllocWriteCombined = 4
memcpyHostToHost = 0
memcpyHostToDevice = 1
memcpyDeviceToHost = 2
memcpyDeviceToDevice = 3
memcpyDefault = 4
cudaCpuDeviceId = -1
cudaInvalidDeviceId = -2
# cudaStreamCaptureMode / cudaStreamCaptureStatus (runtime.pxd), cudaGraphDebugDotFlags
streamCaptureModeGlobal = _capture.MODE_GLOBAL
streamCaptureModeThreadLocal = _capture.MODE_THREAD_LOCAL
streamCaptureModeRelaxed = _capture.MODE_RELAXED
streamCaptureStatusNone = _capture.STATUS_NONE
streamCaptureStatusActive = _capture.STATUS_ACTIVE
streamCaptureStatusInvalidated = _capture.STATUS_INVALIDATED
cudaGraphDebugDotFlagsVerbose = 1 << 0
cudaGraphDebugDotFlagsKernelNodeParams = 1 << 2
cudaGraphDebugDotFlagsMemcpyNodeParams = 1 << 3
cudaGraphDebugDotFlagsMemsetNodeParams = 1 << 4

# cudaDeviceAttr codes (runtime_api enum values, as the installed CuPy exports them)
cudaDevAttrAsyncEngineCount = 40
cudaDevAttrCanFlushRemoteWrites = 98
cudaDevAttrCanMapHostMemory = 19
cudaDevAttrCanUseHostPointerForRegisteredMem = 91
cudaDevAttrClockRate = 13
cudaDevAttrComputeMode = 20
cudaDevAttrComputePreemptionSupported = 90
cudaDevAttrConcurrentKernels = 31
cudaDevAttrConcurrentManagedAccess = 89
cudaDevAttrCooperativeLaunch = 95
cudaDevAttrCooperativeMultiDeviceLaunch = 96
cudaDevAttrDirectManagedMemAccessFromHost = 101
cudaDevAttrEccEnabled = 32
cudaDevAttrGPUDirectRDMAFlushWritesOptions = 117
cudaDevAttrGPUDirectRDMASupported = 116
cudaDevAttrGPUDirectRDMAWritesOrdering = 118
cudaDevAttrGlobalL1CacheSupported = 79
cudaDevAttrGlobalMemoryBusWidth = 37
cudaDevAttrGpuOverlap = 15
cudaDevAttrHostNativeAtomicSupported = 86
cudaDevAttrHostRegisterReadOnlySupported = 113
cudaDevAttrHostRegisterSupported = 99
cudaDevAttrIntegrated = 18
cudaDevAttrIsMultiGpuBoard = 84
cudaDevAttrKernelExecTimeout = 17
cudaDevAttrL2CacheSize = 38
cudaDevAttrLocalL1CacheSupported = 80
cudaDevAttrManagedMemory = 83
cudaDevAttrMaxBlockDimX = 2
cudaDevAttrMaxBlockDimY = 3
cudaDevAttrMaxBlockDimZ = 4
cudaDevAttrMaxBlocksPerMultiprocessor = 106
cudaDevAttrMaxGridDimX = 5
cudaDevAttrMaxGridDimY = 6
cudaDevAttrMaxGridDimZ = 7
cudaDevAttrMaxPitch = 11
cudaDevAttrMaxRegistersPerBlock = 12
cudaDevAttrMaxRegistersPerMultiprocessor = 82
cudaDevAttrMaxSharedMemoryPerBlock = 8
cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81
cudaDevAttrMaxSurface1DLayeredLayers = 62
cudaDevAttrMaxSurface1DLayeredWidth = 61
cudaDevAttrMaxSurface1DWidth = 55
cudaDevAttrMaxSurface2DHeight = 57
cudaDevAttrMaxSurface2DLayeredHeight = 64
cudaDevAttrMaxSurface2DLayeredLayers = 65
cudaDevAttrMaxSurface2DLayeredWidth = 63
cudaDevAttrMaxSurface2DWidth = 56
cudaDevAttrMaxSurface3DDepth = 60
cudaDevAttrMaxSurface3DHeight = 59
cudaDevAttrMaxSurface3DWidth = 58
cudaDevAttrMaxSurfaceCubemapLayeredLayers = 68
cudaDevAttrMaxSurfaceCubemapLayeredWidth = 67
cudaDevAttrMaxSurfaceCubemapWidth = 66
cudaDevAttrMaxTexture1DLayeredLayers = 43
cudaDevAttrMaxTexture1DLayeredWidth = 42
cudaDevAttrMaxTexture1DLinearWidth = 69
cudaDevAttrMaxTexture1DMipmappedWidth = 77
cudaDevAttrMaxTexture1DWidth = 21
cudaDevAttrMaxTexture2DGatherHeight = 46
cudaDevAttrMaxTexture2DGatherWidth = 45
cudaDevAttrMaxTexture2DHeight = 23
cudaDevAttrMaxTexture2DLayeredHeight = 28
cudaDevAttrMaxTexture2DLayeredLayers = 29
cudaDevAttrMaxTexture2DLayeredWidth = 27
cudaDevAttrMaxTexture2DLinearHeight = 71
cudaDevAttrMaxTexture2DLinearPitch = 72
cudaDevAttrMaxTexture2DLinearWidth = 70
cudaDevAttrMaxTexture2DMipmappedHeight = 74
cudaDevAttrMaxTexture2DMipmappedWidth = 73
cudaDevAttrMaxTexture2DWidth = 22
cudaDevAttrMaxTexture3DDepth = 26
cudaDevAttrMaxTexture3DDepthAlt = 49
cudaDevAttrMaxTexture3DHeight = 25
cudaDevAttrMaxTexture3DHeightAlt = 48
cudaDevAttrMaxTexture3DWidth = 24
cudaDevAttrMaxTexture3DWidthAlt = 47
cudaDevAttrMaxTextureCubemapLayeredLayers = 54
cudaDevAttrMaxTextureCubemapLayeredWidth = 53
cudaDevAttrMaxTextureCubemapWidth = 52
cudaDevAttrMaxThreadsPerBlock = 1
cudaDevAttrMaxThreadsPerMultiProcessor = 39
cudaDevAttrMaxTimelineSemaphoreInteropSupported = 114
cudaDevAttrMemoryClockRate = 36
cudaDevAttrMemoryPoolSupportedHandleTypes = 119
cudaDevAttrMemoryPoolsSupported = 115
cudaDevAttrMultiGpuBoardGroupID = 85
cudaDevAttrMultiProcessorCount = 16
cudaDevAttrPageableMemoryAccess = 88
cudaDevAttrPageableMemoryAccessUsesHostPageTables = 100
cudaDevAttrPciBusId = 33
cudaDevAttrPciDeviceId = 34
cudaDevAttrPciDomainId = 50
cudaDevAttrReservedSharedMemoryPerBlock = 111
cudaDevAttrSingleToDoublePrecisionPerfRatio = 87
cudaDevAttrSparseCudaArraySupported = 112
cudaDevAttrStreamPrioritiesSupported = 78
cudaDevAttrSurfaceAlignment = 30
cudaDevAttrTccDriver = 35
cudaDevAttrTextureAlignment = 14
cudaDevAttrTexturePitchAlignment = 51
cudaDevAttrTotalConstantMemory = 9
cudaDevAttrUnifiedAddressing = 41
cudaDevAttrWarpSize = 10
_ATTR_NAMES = {
    v: k[len("cudaDevAttr") :] for k, v in globals().items() if k.startswith("cudaDevAttr")
}
_errorMemoryAllocation = 2
_errorInvalidValue = 1
_errorInvalidResourceHandle = 400


def check_status(status: int) -> None:
    if status != 0:
        raise CUDARuntimeError(status)


def driverGetVersion() -> int:
    # Without a driver cudaDriverGetVersion succeeds and reports 0 (measured on the installed
    # CuPy 14.2 here).
    return 0 if _config.fail == "driver" else _profile.DRIVER_VERSION


def runtimeGetVersion() -> int:
    return _profile.RUNTIME_VERSION


def getDeviceCount() -> int:
    return _devices.count()


def getDevice() -> int:
    return _devices.current()


def setDevice(device: int) -> None:
    _devices.set_current(device)


def deviceSynchronize() -> None:
    _streams.synchronize_device(_devices.current())


def deviceCanAccessPeer(device: int, peerDevice: int) -> int:
    return _devices.can_access_peer(device, peerDevice)


def deviceEnablePeerAccess(peerDevice: int) -> None:
    _devices.deviceEnablePeerAccess(_devices.current(), peerDevice)


def deviceDisablePeerAccess(peerDevice: int) -> None:
    _devices.deviceDisablePeerAccess(_devices.current(), peerDevice)


def _deviceEnsurePeerAccess(peerDevice: int) -> None:
    _devices.enable_peer_access(_devices.current(), peerDevice)


def getDeviceProperties(device: int) -> dict:
    return _profile.properties(_devices.check(device))


def deviceGetAttribute(attrib: int, device: int) -> int:
    _devices.check(device)
    if attrib == 75:  # cudaDevAttrComputeCapabilityMajor
        return _profile.MAJOR
    if attrib == 76:  # cudaDevAttrComputeCapabilityMinor
        return _profile.MINOR
    name = _ATTR_NAMES.get(attrib)
    if name is None:
        raise CUDARuntimeError(_errorInvalidValue)
    return _profile.attributes(device)[name]


def memGetInfo() -> tuple[int, int]:
    """(free, total) bytes of the current device: total minus what cudaMalloc handed out."""
    dev = _devices.current()
    return _config.memory - _memory.used(dev), _config.memory


def pointerGetMemoryType(ptr: int) -> int:
    _devices.check_driver()
    found = _memory.find(ptr)
    if found is None:
        return memoryTypeUnregistered
    return memoryTypeHost if found[0].kind == "pinned" else memoryTypeDevice


def streamSynchronize(stream: int) -> None:
    _streams.synchronize(_streams.resolve(stream, _devices.current()))


def streamQuery(stream: int) -> int:
    """cudaStreamQuery: a status, never raised (cupy_backends runtime.pyx returns it as is).

    Everything has run by the time the host asks: report completion (cudaSuccess) and let
    the host know it, as a successful query does.
    """
    try:
        s = _streams.resolve(stream, _devices.current())
        if _capture.captures:  # a capturing stream: 900, and the capture is invalid
            _capture.on_sync(s)
    except CUDARuntimeError as e:
        return e.status
    _streams.synchronize(s)
    return 0


def eventQuery(event: int) -> int:
    """cudaEventQuery: cudaSuccess once the recorded work is complete (at once for an event
    never recorded); a status, never raised."""
    from .stream import _events

    ev = _events.get(event)
    if ev is None:
        return _errorInvalidResourceHandle
    try:
        _streams.synchronize_event(ev)
    except CUDARuntimeError as e:  # a captured event: 900, and the capture is invalid
        return e.status
    return 0


# -- stream capture and graphs (cupysim/capture.py) ----------------------------------------
_graph_handles = _itertools.count(0x7E10_0000_0010, 0x10)
_graphs: dict = {}


def _stream(stream: int):
    return _streams.resolve(stream, _devices.current())


def streamBeginCapture(stream: int, mode: int = streamCaptureModeRelaxed) -> None:
    _capture.begin(_stream(stream), mode)


def streamEndCapture(stream: int) -> int:
    graph = _capture.end(_stream(stream))
    handle = next(_graph_handles)
    _graphs[handle] = graph
    return handle


def streamIsCapturing(stream: int) -> bool:
    status = _capture.status(_stream(stream))  # cudaErrorStreamCaptureImplicit raised here
    if status == streamCaptureStatusInvalidated:
        raise RuntimeError(
            "the stream was capturing, but an error has invalidated the capture sequence"
        )
    return bool(status)


def _graph(handle: int):
    graph = _graphs.get(handle)
    if graph is None:
        raise CUDARuntimeError(_errorInvalidValue)
    return graph


def graphInstantiate(graph: int) -> int:
    handle = next(_graph_handles)
    _graphs[handle] = _graph(graph)
    return handle


def graphLaunch(graphExec: int, stream: int) -> None:
    _graph(graphExec).launch(_stream(stream))


def graphUpload(graphExec: int, stream: int) -> None:
    # cudaGraphUpload prepares the launch; nothing runs and nothing is read or written
    _graph(graphExec)
    _stream(stream)


def graphDestroy(graph: int) -> None:
    _graphs.pop(graph, None)


def graphExecDestroy(graphExec: int) -> None:
    _graphs.pop(graphExec, None)


def graphDebugDotPrint(graph: int, path: str, flags: int) -> None:
    with open(path, "w") as f:
        f.write(_graph(graph).dot(bool(flags & cudaGraphDebugDotFlagsVerbose)))


def launchHostFunc(stream: int, callback, arg) -> None:
    _capture.launch_host_func(_stream(stream), lambda: callback(arg))


def _launchHostFuncUnmanaged(stream: int, func_arg: tuple) -> None:
    callback, arg = func_arg
    _capture.launch_host_func(_stream(stream), lambda: callback(arg))
