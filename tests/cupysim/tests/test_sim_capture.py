"""CUDA stream capture and graph replay on the simulator (cupysim/capture.py).

Each rule cites its source: CuPy's cupy/cuda/stream.pyx, graph.pyx, memory.pyx and
cupy_backends' library ``setStream`` guards, or the CUDA C++ programming guide, "CUDA
Graphs" > "Stream Capture" (*the guide*).
"""

from __future__ import annotations

import gc

import pytest

pytest.importorskip("cupysim.capture", reason="the CuPy simulator's own tests run with --cupy=sim")

import cupysim
import numpy as np
from cupysim.capture import GraphMemoryError, NotCapturable


@pytest.fixture
def s(cp):
    return cp.cuda.Stream(non_blocking=True)


def _status(exc) -> int:
    return exc.value.status


def _capture(s, fn):
    with s:
        s.begin_capture()
        out = fn()
        g = s.end_capture()
    return g, out


# -- recorded, not run; replayed on the same buffers -------------------------------------------
def test_captured_work_does_not_run_and_its_outputs_are_poisoned(cp, s):
    # the guide, "Stream Capture": work is recorded into the graph, not executed
    a = cp.arange(6, dtype=np.float32)
    g, b = _capture(s, lambda: cp.sin(a) * 2)
    assert np.isnan(b.get()).all()
    np.testing.assert_array_equal(a.get(), np.arange(6, dtype=np.float32))  # read, not written
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(b.get(), np.sin(np.arange(6, dtype=np.float32)) * 2)


def test_an_in_place_update_captured_is_not_applied_until_replayed(cp, s):
    x = cp.ones(4)
    cp.cuda.Device().synchronize()

    def step():
        x[...] += 1

    g, _ = _capture(s, step)
    np.testing.assert_array_equal(x.get(), [1, 1, 1, 1])  # the update has not run
    x[...] = 5
    cp.cuda.Device().synchronize()
    g.launch(s)
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(x.get(), [7, 7, 7, 7])


def test_replay_reads_the_inputs_current_values_on_every_path(cp, s):
    # graph.pyx Graph.launch: the captured kernels run again on the same memory
    rng = np.random.default_rng(0)
    host = rng.standard_normal(64)
    a = cp.asarray(host)
    out = cp.empty(64)
    scale = cp.ElementwiseKernel("T x", "T y", "y = 3 * x", "cupysim_scale")
    raw = cp.RawKernel(
        r'extern "C" __global__ void twice(const double* x, double* y, int n) {'
        r" int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }",
        "twice",
    )
    tmp = cp.empty(64)
    total = cp.empty(())
    spec = cp.empty(64, dtype=np.complex128)
    cp.cuda.Device().synchronize()

    def work():
        raw((1,), (64,), (a, tmp, np.int32(64)))  # RawKernel (kernels/launcher.py)
        scale(tmp, out)  # ElementwiseKernel
        cp.add(out, 1.0, out=out)  # ufunc with out= (core._apply)
        cp.sum(out, out=total)  # reduction
        spec[...] = cp.fft.fft(out)  # cuFFT, then setitem
        out.data.copy_from_device_async(tmp.data, 8)  # device to device copy
        return cp.sqrt(cp.abs(out))  # new arrays (core._wrap)

    g, r = _capture(s, work)
    for _ in range(2):
        host = rng.standard_normal(64)
        a.set(host, stream=s)
        g.launch(s)
        s.synchronize()
        want = 6 * host + 1
        np.testing.assert_allclose(spec.get(), np.fft.fft(want), rtol=1e-12)
        np.testing.assert_allclose(total.get(), want.sum(), rtol=1e-12)
        want[0] = 2 * host[0]
        np.testing.assert_allclose(out.get(), want, rtol=1e-15)
        np.testing.assert_allclose(r.get(), np.sqrt(np.abs(want)), rtol=1e-15)


def test_replay_is_bit_for_bit_the_eager_run(cp, s):
    x = cp.asarray(np.random.default_rng(1).standard_normal(1000).astype(np.float32))

    def f():
        y = cp.exp(x) * np.float32(1.7) - x
        return y / (1 + x * x) + y.sum()

    eager = f().get()
    g, r = _capture(s, f)
    g.launch(s)
    s.synchronize()
    assert r.get().tobytes() == eager.tobytes()


def test_memset_and_fill_are_replayed(cp, s):
    z = cp.ones(8)
    s.synchronize()
    g, _ = _capture(s, lambda: (z.fill(0), z[2:4].fill(7)))
    z[...] = 1
    cp.cuda.Device().synchronize()
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(z.get(), [0, 0, 7, 7, 0, 0, 0, 0])


def test_a_host_function_is_a_node_of_the_graph(cp, s):
    # stream.pyx launch_host_func: captured through _launchHostFuncUnmanaged
    calls = []
    with s:
        s.begin_capture()
        s.launch_host_func(calls.append, 1)
        g = s.end_capture()
    assert calls == []
    g.launch(s)
    g.launch(s)
    assert calls == [1, 1]


# -- prohibited operations and invalidation ----------------------------------------------------
def test_synchronizing_the_capturing_stream_fails_and_invalidates(cp, s):
    # the guide, "Prohibited and Unhandled Operations" and "Invalidation"
    with s:
        s.begin_capture()
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
            s.synchronize()
        assert _status(e) == 900
        with pytest.raises(RuntimeError, match="invalidated"):
            s.is_capturing()  # runtime.pyx streamIsCapturing raises for an invalid capture
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
            s.end_capture()
        assert _status(e) == 901
    assert not s.is_capturing()
    s.synchronize()


@pytest.mark.parametrize("how", ["device", "event", "event.done", "stream.done"])
def test_waiting_for_or_querying_captured_work_invalidates(cp, s, how):
    with s:
        s.begin_capture()
        cp.ones(3) + 1
        ev = s.record()
        if how == "device":
            with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
                cp.cuda.Device().synchronize()
            assert _status(e) == 900
        elif how == "event":
            with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
                ev.synchronize()
            assert _status(e) == 900
        else:
            assert not (ev.done if how == "event.done" else s.done)  # a status, not raised
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
            s.end_capture()
        assert _status(e) == 901


@pytest.mark.parametrize(
    "read",
    [
        lambda cp, x: x.get(),
        lambda cp, x: cp.asnumpy(x),
        lambda cp, x: float(x.sum()),
        lambda cp, x: x[0].item(),
        lambda cp, x: cp.nonzero(x),
        lambda cp, x: x[x > 0],
        lambda cp, x: cp.asarray(np.ones(3)),
    ],
    ids=["get", "asnumpy", "float", "item", "nonzero", "bool-index", "upload"],
)
def test_cupys_guards_refuse_host_copies_and_keep_the_capture(cp, s, read):
    # memory.pyx copy_to_host_async / copy_from_host_async: RuntimeError before CUDA is
    # called; the capture stays valid (CuPy's test_stream_capture_failure5)
    x = cp.arange(3.0)
    cp.cuda.Device().synchronize()
    with s:
        s.begin_capture()
        with pytest.raises(RuntimeError, match="the current stream is capturing"):
            read(cp, x)
        assert s.is_capturing()
        s.end_capture()


@pytest.mark.parametrize(
    ("lib", "call"),
    [
        ("cuBLAS", lambda cp, a: cp.matmul(a, a)),
        ("cuSOLVER", lambda cp, a: cp.linalg.cholesky(a)),
        ("cuRAND", lambda cp, a: cp.random.random(4)),
    ],
)
def test_libraries_cupy_refuses_during_capture(cp, s, lib, call):
    # cupy_backends/cuda/libs/<lib>.pyx setStream: NotImplementedError while capturing
    a = cp.eye(3) * 2
    cp.cuda.Device().synchronize()
    with s:
        s.begin_capture()
        with pytest.raises(NotImplementedError, match=lib):
            call(cp, a)
        s.end_capture()


def test_the_legacy_stream_cannot_capture(cp):
    # stream.pyx begin_capture: 'cannot capture on the default (legacy) stream'
    with pytest.raises(RuntimeError, match="legacy"):
        cp.cuda.Stream.null.begin_capture()


def test_the_legacy_stream_while_a_blocking_stream_captures(cp):
    # the guide: "any attempted use of the legacy stream is invalid" when a blocking stream
    # captures; cudaStreamIsCapturing(legacy) raises 906 and leaves the capture valid
    # (CuPy's test_null_stream_cannot_capture)
    b = cp.cuda.Stream()
    x = cp.ones(3)
    cp.cuda.Device().synchronize()
    with b:
        b.begin_capture()
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
            cp.cuda.Stream.null.is_capturing()
        assert _status(e) == 906
        assert b.is_capturing()
        with cp.cuda.Stream.null, pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
            x + 1
        assert _status(e) == 906
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
            b.end_capture()
        assert _status(e) == 901


def test_a_non_blocking_capture_leaves_the_legacy_stream_usable(cp, s):
    x = cp.ones(3)
    with s:
        s.begin_capture()
        with cp.cuda.Stream.null:
            y = x + 1
        assert not cp.cuda.Stream.null.is_capturing()
        s.end_capture()
    np.testing.assert_array_equal(y.get(), [2, 2, 2])


@pytest.mark.parametrize(
    ("mode", "allowed"), [("Relaxed", True), ("ThreadLocal", False), ("Global", False)]
)
def test_capture_modes_and_allocation(cp, s, mode, allowed):
    # cudaStreamBeginCapture: cudaMalloc is a potentially unsafe call, allowed only in
    # relaxed mode (CuPy's default, stream.pyx begin_capture)
    x = cp.ones(64)  # s is new: its arena of the pool is empty, x * 2 misses
    cp.cuda.Device().synchronize()
    with s:
        s.begin_capture(getattr(cp.cuda.runtime, f"streamCaptureMode{mode}"))
        if allowed:
            y = x * 2  # a pool miss: cudaMalloc during the capture
            g = s.end_capture()
            g.launch(s)
            s.synchronize()
            assert float(y[0]) == 2
            return
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
            x * 2
        assert _status(e) == 900
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
            s.end_capture()


# -- several streams ---------------------------------------------------------------------------
def test_fork_and_join_through_events(cp, s):
    # the guide, "Cross-stream Dependencies and Events"
    s2 = cp.cuda.Stream(non_blocking=True)
    a = cp.arange(4.0)
    cp.cuda.Device().synchronize()
    with s:
        s.begin_capture()
        b = a * 10
        e1 = s.record()
        s2.wait_event(e1)
        assert s2.is_capturing()
        with s2:
            c = b + 1
            e2 = s2.record()
        s.wait_event(e2)
        g = s.end_capture()
    assert not s2.is_capturing()
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(c.get(), np.arange(4.0) * 10 + 1)


@pytest.mark.parametrize("error", [903, 904, 905])
def test_cross_stream_errors(cp, s, error):
    s2 = cp.cuda.Stream(non_blocking=True)
    outside = s2.record()
    with s:
        s.begin_capture()
        if error == 905:  # a non-captured event: cudaErrorStreamCaptureIsolation
            with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
                s.wait_event(outside)
            assert _status(e) == 905
            final = 901
        else:
            s2.wait_event(s.record())
            if error == 903:  # end_capture on a joined stream: Unmatched
                with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
                    s2.end_capture()
                assert _status(e) == 903
                final = 901
            else:  # joined and never waited on again: Unjoined
                final = 904
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError) as e:
            s.end_capture()
        assert _status(e) == final
    assert not s.is_capturing() and not s2.is_capturing()


# -- replay order, hazards, memory -------------------------------------------------------------
def test_a_replay_is_one_operation_of_the_launch_stream(cp, s):
    # graph.pyx Graph.launch(stream): ordered on that stream like one operation
    other = cp.cuda.Stream(non_blocking=True)
    x = cp.ones(8)
    cp.cuda.Device().synchronize()
    g, y = _capture(s, lambda: x + 1)
    with other:
        x[...] = 3  # not ordered before the launch on s
    with pytest.raises(cupysim.StreamHazard, match="cudaGraphLaunch"):
        g.launch(s)
    s.wait_event(other.record())
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(y.get(), [4] * 8)


def test_the_trace_counts_a_graph_launch_as_one_operation(cp, s):
    x = cp.ones(100, dtype=np.float32)
    cp.cuda.Device().synchronize()
    with cupysim.trace() as t:
        g, _ = _capture(s, lambda: ((x * 2 + 1) * x).sum())
    assert t.summary().device_ops == 0  # captured, not run
    with cupysim.trace() as t:
        g.launch(s)
        g.launch(s)
    summary = t.summary()
    assert (summary.device_ops, summary.graph_launches, summary.graph_nodes) == (2, 2, 8)
    assert summary.kernels == 0
    assert t.kernel_names()["multiply"] == 4  # the nodes stay visible
    (launch, *nodes) = t.events[:5]
    assert launch.kind == "graph" and all(n.in_graph for n in nodes)
    assert {n.stream for n in nodes} == {launch.stream}


def test_temporaries_the_capture_reuses_replay_safely(cp, s):
    # a temporary freed during the capture and handed back to the same capture
    a = cp.arange(16.0)
    cp.cuda.Device().synchronize()

    def f():
        t = cp.sin(a)
        u = t * 3
        del t
        return cp.sqrt(cp.abs(u))

    g, r = _capture(s, f)
    gc.collect()
    g.launch(s)
    s.synchronize()
    np.testing.assert_allclose(r.get(), np.sqrt(np.abs(3 * np.sin(np.arange(16.0)))))


def test_a_replay_touching_memory_freed_since_capture_fails_loudly(cp, s):
    # stricter than a GPU, which would overwrite the memory's new owner silently
    a = cp.arange(16.0)
    held = [cp.empty(16)]
    cp.cuda.Device().synchronize()

    def f():
        cp.multiply(a, 2, out=held[0])  # nothing else keeps the output

    g, _ = _capture(s, f)
    held.clear()
    gc.collect()
    with pytest.raises(GraphMemoryError, match="freed since the capture"):
        g.launch(s)


def test_a_temporary_the_pool_hands_out_again_fails_the_replay(cp, s):
    a = cp.arange(16.0)
    cp.cuda.Device().synchronize()

    def f():
        t = a + 1  # freed at the end of the capture, not reused by it
        return t * 2

    g, r = _capture(s, f)
    g.launch(s)  # still free: the replay may use it
    s.synchronize()
    np.testing.assert_array_equal(r.get(), (np.arange(16.0) + 1) * 2)
    with s:
        taken = cp.empty(16)  # the pool hands the temporary's block out again
    with pytest.raises(GraphMemoryError, match="handed out"):
        g.launch(s)
    del taken


def test_an_operation_without_a_replay_is_refused_not_run(cp, s):
    x, y = cp.ones(2), cp.zeros(2)
    cp.cuda.Device().synchronize()
    with s:
        s.begin_capture()
        with pytest.raises(NotCapturable, match="cannot capture"):
            cp.array([x, y])  # stacked from NumPy's value computed at the call
        s.end_capture()


def test_a_graph_is_made_by_capture_only(cp):
    # graph.pyx Graph.__init__
    with pytest.raises(NotImplementedError):
        cp.cuda.Graph()
