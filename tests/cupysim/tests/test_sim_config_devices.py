"""Configuration, devices and the runtime API (cupysim/config.py, devices.py, profile.py)."""

from __future__ import annotations

import threading

import pytest
from simhelpers import run_sim


def test_config_defaults_and_bad_values():
    from cupysim.config import H100_MEMORY, Config

    c = Config.from_env({})
    assert (c.devices, c.peer_access, c.nccl, c.memory) == (2, True, True, H100_MEMORY)
    assert c.sanitize is None and c.fail is None and not c.per_thread_default_stream
    c = Config.from_env({"CUPYSIM_DEVICES": "4", "CUPYSIM_PEER_ACCESS": "0",
                         "CUPYSIM_SANITIZE": "address", "CUPYSIM_FAIL": "libs",
                         "CUPY_CUDA_PER_THREAD_DEFAULT_STREAM": "1"})  # fmt: skip
    assert (c.devices, c.peer_access, c.sanitize, c.fail) == (4, False, "address", "libs")
    assert c.per_thread_default_stream
    for env, match in [({"CUPYSIM_DEVICES": "two"}, "integer"),
                       ({"CUPYSIM_PEER_ACCESS": "yes"}, "0 or 1"),
                       ({"CUPYSIM_SANITIZE": "memory"}, "address, thread"),
                       ({"CUPYSIM_MEMORY": "0"}, ">= 1")]:  # fmt: skip
        with pytest.raises(ValueError, match=match):
            Config.from_env(env)


def test_device_count_and_invalid_device(cp):
    rt = cp.cuda.runtime
    assert rt.getDeviceCount() == 2
    with pytest.raises(rt.CUDARuntimeError, match="cudaErrorInvalidDevice") as info:
        rt.setDevice(2)
    assert info.value.status == 101


def test_current_device_is_per_thread_and_device_context_restores(cp):
    seen = []
    with cp.cuda.Device(1) as d:
        assert d.id == 1 and cp.cuda.runtime.getDevice() == 1
        t = threading.Thread(target=lambda: seen.append(cp.cuda.Device().id))
        t.start()
        t.join()
        assert cp.empty(3).device.id == 1
    assert seen == [0] and cp.cuda.Device().id == 0
    cp.cuda.Device(1).use()
    assert cp.cuda.runtime.getDevice() == 1


def test_h100_profile(cp):
    d = cp.cuda.Device(0)
    a = d.attributes
    assert (a["MultiProcessorCount"], a["MaxThreadsPerBlock"], a["WarpSize"]) == (132, 1024, 32)
    assert (a["MaxBlockDimX"], a["MaxBlockDimZ"], a["MaxGridDimX"]) == (1024, 64, 2**31 - 1)
    assert a["MaxSharedMemoryPerBlockOptin"] == 232448
    assert d.compute_capability == "90"
    props = cp.cuda.runtime.getDeviceProperties(1)
    assert props["name"] == b"NVIDIA H100 80GB HBM3" and (props["major"], props["minor"]) == (9, 0)
    assert props["totalGlobalMem"] == d.mem_info[1]
    assert cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrWarpSize, 0) == 32


def test_peer_access_query(cp):
    rt = cp.cuda.runtime
    assert rt.deviceCanAccessPeer(0, 1) == 1 and rt.deviceCanAccessPeer(0, 0) == 0
    r = run_sim("import cupy; print(cupy.cuda.runtime.deviceCanAccessPeer(0, 1))",
                CUPYSIM_PEER_ACCESS="0")  # fmt: skip
    assert r.stdout.strip() == "0", r.stderr


def test_no_driver_behaves_like_cupy_without_one():
    code = """
import cupy
rt = cupy.cuda.runtime
print(rt.driverGetVersion(), rt.runtimeGetVersion(), cupy.cuda.is_available())
print(cupy.cuda.Device(0).id)
for f in (rt.getDeviceCount, rt.getDevice, lambda: cupy.zeros(3), cupy.cuda.Device):
    try:
        f()
    except rt.CUDARuntimeError as e:
        print(e.status, e)
"""
    r = run_sim(code, CUPYSIM_FAIL="driver")
    lines = r.stdout.splitlines()
    assert lines[0] == "0 13020 False" and lines[1] == "0", r.stderr
    msg = (
        "35 cudaErrorInsufficientDriver: "
        "CUDA driver version is insufficient for CUDA runtime version"
    )
    assert lines[2:] == [msg] * 4


def test_zero_devices_is_cuda_error_no_device():
    r = run_sim("import cupy\ntry:\n cupy.cuda.runtime.getDeviceCount()\n"
                "except cupy.cuda.runtime.CUDARuntimeError as e: print(e.status, e)",
                CUPYSIM_DEVICES="0")  # fmt: skip
    assert r.stdout.strip() == "100 cudaErrorNoDevice: no CUDA-capable device is detected"


def test_runtime_error_pickles_by_status(cp):
    import pickle

    e = pickle.loads(pickle.dumps(cp.cuda.runtime.CUDARuntimeError(2)))
    assert e.status == 2 and str(e) == "cudaErrorMemoryAllocation: out of memory"
