"""The happens-before checker (cupysim/streams.py): streams, events, default streams."""

from __future__ import annotations

import numpy as np
import pytest
from simhelpers import run_sim


@pytest.fixture
def hazard():
    from cupysim import StreamHazard

    return StreamHazard


def test_missing_synchronisation_is_reported(cp, hazard):
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.ones(1000) * 2  # written on s
    with pytest.raises(hazard) as info:
        x.sum()  # read on the legacy default stream, nothing ordering it after s
    msg = str(info.value)
    assert "cupy.ndarray shape=(1000,) dtype=float64 on device 0" in msg
    assert "the legacy default stream of device 0" in msg and "non-blocking" in msg


def test_event_or_synchronize_orders_the_streams(cp):
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.ones(10) * 2
        e = s.record()
    cp.cuda.get_current_stream().wait_event(e)
    assert float(x.sum()) == 20.0
    with s:
        y = cp.ones(10) * 3
    s.synchronize()
    assert float(y.sum()) == 30.0


def test_write_after_read_is_a_hazard_too(cp, hazard):
    x = cp.ones(10)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x.sum()  # s reads x
    with pytest.raises(hazard, match="write on the legacy default stream"):
        x.fill(3)  # the legacy stream overwrites it


def test_legacy_default_stream_orders_blocking_streams(cp):
    s = cp.cuda.Stream()  # blocking
    with s:
        x = cp.ones(10) * 2
    assert float(x.sum()) == 20.0  # the legacy stream waits for s's work
    y = cp.ones(10) * 2
    with s:
        assert float((y + 1).sum().get(stream=s)) == 30.0  # and s waits for the legacy stream


def test_host_read_synchronises_its_stream(cp):
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.ones(4) * 2
        host = x.get()  # copy on s, then s.synchronize()
    np.testing.assert_array_equal(host, [2, 2, 2, 2])
    assert float(x.sum()) == 8.0  # the host saw s complete: later work is ordered after it


def test_devices_are_not_ordered_with_each_other(cp, hazard):
    with cp.cuda.Device(1):
        x = cp.ones(5) * 2
    with pytest.raises(hazard, match="device 1"):
        cp.asarray(x)  # a peer copy on device 0's stream reads device 1's unfinished write
    cp.cuda.Device(1).synchronize()
    assert cp.asarray(x).device.id == 0


def test_per_thread_default_stream_does_not_order_other_streams():
    code = """
import cupy, cupysim
assert cupy.cuda.get_current_stream() == cupy.cuda.Stream.ptds
s = cupy.cuda.Stream()  # blocking: orders with the legacy stream only
with s:
    x = cupy.ones(8) * 2
try:
    x.sum()
except cupysim.StreamHazard as e:
    print("hazard", "per-thread default stream" in str(e))
with cupy.cuda.Stream.null:  # still the per-thread stream: 0 means PTDS here
    y = cupy.ones(8)
leg = cupy.cuda.ExternalStream(cupy.cuda.runtime.streamLegacy)
with leg:
    print(float((y * 2).sum()))  # PTDS and the legacy stream do synchronise
"""
    r = run_sim(code, CUPY_CUDA_PER_THREAD_DEFAULT_STREAM="1")
    assert r.stdout.split() == ["hazard", "True", "16.0"], r.stderr


def test_event_done_and_device_synchronize(cp):
    e = cp.cuda.Event()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.ones(3) * 2
    e.record(s)
    assert e.done
    assert float(x.sum()) == 6.0
    cp.cuda.runtime.deviceSynchronize()
