"""STAND-IN for sim-core's ``cupy.cuda`` (devices, memory pointers, driver errors)."""

from __future__ import annotations

import sys
import types

from cupysim import runtime as _rt

from . import compiler  # noqa: F401


class Device:
    def __init__(self, device=None):
        self.id = _rt.current_device() if device is None else int(device)
        self._prev = []

    def __enter__(self):
        self._prev.append(_rt.current_device())
        _rt.set_current_device(self.id)
        return self

    def __exit__(self, *exc):
        _rt.set_current_device(self._prev.pop())

    def use(self):
        _rt.set_current_device(self.id)

    def synchronize(self):
        pass

    @property
    def attributes(self):
        return _rt.device_profile(self.id)

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)


class CUDADriverError(RuntimeError):
    pass


class CUDARuntimeError(RuntimeError):
    def __init__(self, status=0):
        self.status = status
        super().__init__(status)


driver = types.SimpleNamespace(CUDADriverError=CUDADriverError)


def _count():
    return _rt.config.devices


def _get_device():
    return _rt.current_device()


def _set_device(i):
    _rt.set_current_device(i)


def _props(i):
    return {
        "name": b"NVIDIA H100 80GB HBM3 (cupysim)",
        "totalGlobalMem": _rt.config.memory,
        "major": 9,
        "minor": 0,
        "warpSize": 32,
    }


runtime = types.SimpleNamespace(
    getDeviceCount=_count,
    getDevice=_get_device,
    setDevice=_set_device,
    CUDARuntimeError=CUDARuntimeError,
    getDeviceProperties=_props,
    deviceCanAccessPeer=lambda a, b: 1,
)


class UnownedMemory:
    def __init__(self, ptr, size, owner, device_id=None):
        self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id


class MemoryPointer:
    def __init__(self, mem, offset):
        self.mem, self.ptr, self.device_id = mem, mem.ptr + offset, mem.device_id


memory = types.ModuleType("cupy.cuda.memory")
memory.UnownedMemory = UnownedMemory
memory.MemoryPointer = MemoryPointer
sys.modules["cupy.cuda.memory"] = memory


class Stream:
    def __init__(self, non_blocking=False):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass
