"""Host memory touched by asynchronous copies (cupysim/hostcopy.py), and stream/event queries."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def hazard():
    from cupysim import StreamHazard

    return StreamHazard


def _pinned(cp, values):
    import cupyx

    buf = cupyx.empty_pinned(np.shape(values), np.float64)
    buf[...] = values
    return buf


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "pageable"])
def test_host_write_while_a_copy_reads_it_is_found_at_synchronisation(cp, hazard, pinned):
    s = cp.cuda.Stream(non_blocking=True)
    host = _pinned(cp, np.arange(8.0)) if pinned else np.arange(8.0)
    x = cp.empty(8)
    x.set(host, stream=s)
    host[3] = -1.0  # before the host knows the copy is done
    with pytest.raises(hazard, match=r"host wrote 64 bytes .* still reading it: .*torn data"):
        s.synchronize()
    s.synchronize()  # reported once
    host[...] = 0.0  # the copy is complete now: the buffer is the host's again
    x.set(host, stream=s)
    s.synchronize()
    assert np.array_equal(x.get(), np.zeros(8))


def test_host_write_is_found_when_the_buffer_is_copied_again(cp, hazard):
    """A staging buffer refilled before its previous copy finished: caught at the next copy."""
    s = cp.cuda.Stream(non_blocking=True)
    buf = _pinned(cp, np.ones(4))
    a, b = cp.empty(4), cp.empty(4)
    a.set(buf, stream=s)
    buf[...] = 2.0
    with pytest.raises(hazard, match="still reading it"):
        b.set(buf, stream=s)


def test_unchanged_buffer_copied_twice_and_waited_for_is_fine(cp):
    s = cp.cuda.Stream(non_blocking=True)
    buf = _pinned(cp, np.arange(4.0))
    a, b = cp.empty(4), cp.empty(4)
    a.set(buf, stream=s)
    b.set(buf)  # another stream reads the same bytes: reads do not conflict
    e = s.record()
    e.synchronize()
    cp.cuda.Device().synchronize()
    buf[...] = 9.0
    assert np.array_equal(a.get(), np.arange(4.0)) and np.array_equal(b.get(), np.arange(4.0))


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "pageable"])
def test_nonblocking_get_lands_when_the_host_waits(cp, pinned):
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.arange(6.0) + 1
    out = _pinned(cp, np.zeros(6)) if pinned else np.zeros(6)
    x.get(out=out, stream=s, blocking=False)
    assert np.isnan(out).all()  # read too early: not the values (on a GPU, stale ones)
    s.synchronize()
    assert np.array_equal(out, np.arange(6.0) + 1)
    with s:
        got = x.get(stream=s, blocking=False)  # a new host array, in flight too
    assert np.isnan(got).all()
    s.record().synchronize()  # an event recorded after the copy is as good
    assert np.array_equal(got, np.arange(6.0) + 1)


def test_host_write_into_a_buffer_an_inflight_get_writes(cp, hazard):
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.arange(4.0)
    out = _pinned(cp, np.zeros(4))
    x.get(out=out, stream=s, blocking=False)
    out[0] = 5.0
    with pytest.raises(hazard, match="still writing it"):
        s.synchronize()
    assert np.array_equal(out, np.arange(4.0))  # the copy landed over the host's write


def test_copy_from_a_buffer_an_unordered_get_writes(cp, hazard):
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.arange(4.0)
    out = _pinned(cp, np.zeros(4))
    x.get(out=out, stream=s, blocking=False)
    y = cp.empty(4)
    with pytest.raises(hazard, match=r"'memcpyAsync \(host to device\)' on the legacy .* reads"):
        y.set(out)  # the legacy stream may read the buffer before s's copy lands
    with s:
        y.set(out, stream=s)  # in stream order: reads what the get wrote
        assert np.array_equal(y.get(stream=s), np.arange(4.0))


def test_get_into_a_buffer_an_unordered_copy_reads(cp, hazard):
    s = cp.cuda.Stream(non_blocking=True)
    buf = _pinned(cp, np.ones(4))
    x = cp.empty(4)
    x.set(buf, stream=s)
    y = cp.zeros(4)
    with pytest.raises(hazard, match=r"writes 32 bytes of host memory.* still reads"):
        y.get(out=buf, blocking=False)
    s.synchronize()
    with s:
        z = cp.full(4, 7.0)
    x.set(buf, stream=s)
    z.get(out=buf, stream=s)  # after the read on the same stream: fine
    assert np.array_equal(buf, np.full(4, 7.0)) and np.array_equal(x.get(stream=s), np.ones(4))


def test_asarray_copies_straight_from_pinned_memory_only(cp, hazard):
    """core.pyx _array_default: a pinned, contiguous source is copied from directly; any
    other goes through a staging buffer and is the caller's again at once."""
    pageable = np.arange(5.0)
    a = cp.asarray(pageable)
    pageable[...] = 0
    cp.cuda.Device().synchronize()
    assert np.array_equal(a.get(), np.arange(5.0))
    buf = _pinned(cp, np.arange(5.0))
    b = cp.asarray(buf)
    buf[...] = 0
    with pytest.raises(hazard, match="torn data"):
        cp.cuda.Device().synchronize()
    cp.asarray(buf[::2])  # strided: staged
    buf[...] = 1
    cp.cuda.Device().synchronize()
    assert np.array_equal(b.get(), np.arange(5.0))


def test_memory_pointer_copies_with_pinned_memory(cp, hazard):
    s = cp.cuda.Stream(non_blocking=True)
    buf = _pinned(cp, np.arange(4.0))
    x = cp.empty(4)
    x.data.copy_from_host_async(buf.ctypes.data, 32, s)
    buf[0] = 3.0
    with pytest.raises(hazard, match="torn data"):
        s.synchronize()
    out = _pinned(cp, np.zeros(4))
    x.data.copy_to_host_async(out.ctypes.data, 32, s)
    assert np.isnan(out).all()
    s.synchronize()
    assert np.array_equal(out, np.arange(4.0))


def test_queries_report_completion_and_let_the_host_know(cp):
    """stream.pyx: Event.done is ``eventQuery == 0``, Stream.done ``streamQuery == 0``."""
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.arange(3.0)
    out = np.zeros(3)
    x.get(out=out, stream=s, blocking=False)
    e = s.record()
    assert e.done and np.array_equal(out, np.arange(3.0))
    assert cp.cuda.Event().done  # never recorded: cudaEventQuery returns cudaSuccess
    assert s.done and cp.cuda.Stream.null.done
    assert cp.cuda.runtime.eventQuery(12345) == 400  # a status, not an exception
    assert cp.cuda.runtime.streamQuery(12345) == 400
