"""cupysim.trace: launches, library calls, copies, syncs, allocations; summary; estimate."""

from __future__ import annotations

import threading

import cupysim
import numpy as np
import pytest


@pytest.fixture
def pool(cp):
    p = cp.get_default_memory_pool()
    p.free_all_blocks()
    yield p
    p.free_all_blocks()


def test_a_ufunc_is_one_kernel_with_its_operand_bytes_and_launch(cp):
    x = cp.ones(1000, dtype=np.float32)
    with cupysim.trace() as t:
        x * 2
    (k,) = t.select("kernel")
    assert (k.name, k.device, k.nbytes, k.dtype) == ("multiply", 0, 8000, "float32")
    # cupy/_core/_kernel.pyx: linear_launch of 128-thread blocks
    assert (k.grid, k.block) == ((8,), (128,))
    assert k.stream == "the legacy default stream of device 0"


def test_nothing_is_recorded_outside_the_block(cp):
    x = cp.ones(10)
    with cupysim.trace() as t:
        pass
    x + 1
    float(x.sum())
    assert t.events == []


def test_a_raw_kernel_records_the_grid_and_block_passed(cp):
    k = cp.RawKernel(
        r'extern "C" __global__ void twice(float* x, int n) {'
        r" int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }",
        "twice",
    )
    x = cp.ones(300, dtype=np.float32)
    with cupysim.trace() as t:
        k((3,), (128,), (x, np.int32(300)))
    (e,) = t.select("kernel")
    assert (e.grid, e.block) == ((3, 1, 1), (128, 1, 1))
    assert e.nbytes == 2 * 1200  # read and written


def test_a_gemm_is_a_library_call_with_its_flops(cp):
    a = cp.ones((64, 32), dtype=np.float32)
    b = cp.ones((32, 16), dtype=np.float32)
    with cupysim.trace() as t:
        a @ b
    (e,) = t.select("library")
    assert (e.name, e.library) == ("matmul", "cuBLAS")
    assert e.flops == 2 * 64 * 16 * 32
    assert e.shapes == ((64, 32), (32, 16), (64, 16))
    assert e.nbytes == 4 * (64 * 32 + 32 * 16 + 64 * 16)


def test_fft_flops_and_plan_created_once(cp):
    x = cp.ones((4, 256), dtype=np.complex64)
    cp.fft.config.get_plan_cache().clear()
    with cupysim.trace() as t:
        cp.fft.fft(x)
        cp.fft.fft(x)
    assert [e.name for e in t.select("plan")] == ["fft"]
    assert {e.library for e in t.select("library")} == {"cuFFT"}
    assert [e.flops for e in t.select("library")] == [5 * 256 * 8 * 4] * 2


def test_fft_flops_follow_the_axes_transformed(cp):
    x = cp.ones((16, 64, 64), dtype=np.complex64)
    r = cp.ones((16, 64), dtype=np.float32)
    with cupysim.trace() as t:
        cp.fft.fftn(x, axes=(-2, -1))  # 16 transforms of 64 x 64 points
        cp.fft.fftn(x)  # one of 16 x 64 x 64
        cp.fft.fft(x, axis=1)  # 16 x 64 of 64
        cp.fft.rfft(r)  # real: half the count, N the real length
    assert [e.flops for e in t.select("library")] == [
        5 * 4096 * 12 * 16,
        5 * 65536 * 16,
        5 * 64 * 6 * 16 * 64,
        int(2.5 * 64 * 6 * 16),
    ]


@pytest.mark.parametrize(
    ("call", "cause"),
    [
        (lambda x: float(x.sum()), "_ndarray_base.__float__"),
        (lambda x: int(x.sum()), "_ndarray_base.__int__"),
        (lambda x: bool(x.sum()), "_ndarray_base.__bool__"),
        (lambda x: x.sum().item(), "_ndarray_base.item"),
        (lambda x: x.tolist(), "_ndarray_base.tolist"),
        (lambda x: x.get(), "_ndarray_base.get"),
        (lambda x: __import__("cupy").asnumpy(x), "asnumpy"),
    ],
)
def test_implicit_syncs_are_a_copy_to_the_host_and_a_wait(cp, call, cause):
    # cupy/_core/core.pyx ndarray.get: copy_to_host_async, then stream.synchronize()
    x = cp.ones(4)
    with cupysim.trace() as t:
        call(x)
    (s,) = t.select("sync")
    assert (s.name, s.explicit) == (cause, False)
    assert __file__.endswith(s.where.split(":")[0])  # the line that caused it
    assert len(t.select("copy")) == 1 and t.select("copy")[0].name == "device to host"


def test_explicit_syncs_name_what_waited(cp):
    s = cp.cuda.Stream()
    ev = cp.cuda.Event()
    with cupysim.trace() as t:
        s.synchronize()
        ev.record()
        ev.synchronize()
        cp.cuda.Device().synchronize()
        cp.cuda.runtime.deviceSynchronize()
    names = [e.name for e in t.select("sync")]
    assert names == [
        "_BaseStream.synchronize",
        "Event.synchronize",
        "Device.synchronize",
        "deviceSynchronize",
    ]
    assert all(e.explicit for e in t.select("sync"))
    assert t.summary().explicit_syncs == 4 and t.summary().implicit_syncs == 0


def test_a_query_is_not_a_sync(cp):
    s = cp.cuda.Stream()
    with cupysim.trace() as t:
        assert s.done
    assert [e.kind for e in t.events] == ["query"]
    assert t.summary().syncs == 0


def test_a_data_dependent_size_and_a_blocking_upload_sync(cp):
    x = cp.arange(10)
    with cupysim.trace() as t:
        cp.nonzero(x > 4)
        cp.array(np.ones(3), blocking=True)
    assert t.summary().syncs == 2
    assert t.summary().h2d_copies == 1 and t.summary().h2d_bytes == 24


def test_copies_by_direction_with_bytes(cp):
    host = np.ones(1000)
    with cupysim.trace() as t:
        x = cp.asarray(host)  # upload: asynchronous, no sync
        y = x.copy()
        cp.cuda.Device(0).synchronize()  # device 1 reads what device 0 wrote
        with cp.cuda.Device(1):
            z = x.copy()  # a peer copy
        x.get()
    del y, z
    s = t.summary()
    assert (s.h2d_copies, s.h2d_bytes) == (1, 8000)
    assert (s.d2h_copies, s.d2h_bytes) == (1, 8000)
    assert (s.peer_copies, s.peer_bytes) == (1, 8000)
    assert (s.d2d_copies, s.d2d_bytes) == (0, 0)  # x.copy() on one device is a kernel
    assert (s.syncs, s.explicit_syncs) == (2, 1)
    assert {e.device for e in t.select("copy")} == {0, 1}


def test_pool_hits_and_misses(cp, pool):
    n = 7_654_321  # larger than any block a split may have left in the pool
    rounded = 7_654_400  # CuPy rounds to 512 bytes
    with cupysim.trace() as t:
        x = cp.empty(n, dtype=np.uint8)
        del x
        y = cp.empty(n, dtype=np.uint8)  # the cached block again
    del y
    assert [(e.hit, e.nbytes) for e in t.select("alloc")] == [(False, rounded), (True, rounded)]
    s = t.summary()
    assert (s.pool_misses, s.pool_hits, s.pool_miss_bytes) == (1, 1, rounded)


def test_summary_per_unit_and_difference(cp):
    x = cp.ones(8)

    def step():
        y = x + 1
        float(y.sum())

    with cupysim.trace() as t1:
        step()
    with cupysim.trace() as t4:
        for _ in range(4):
            step()
    assert t4.summary(per=4).kernels == 2
    assert t4.summary(per=4).syncs == 1
    d = (t4.summary() - t1.summary()) / 3
    assert (d.kernels, d.syncs, d.per) == (2, 1, 3)
    with pytest.raises(ValueError, match="positive"):
        t4.summary(per=0)
    assert "kernels" in t4.summary(per=4).table()


def test_streams_and_devices_are_kept_apart(cp):
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.ones(4)
    cp.cuda.Device(0).synchronize()
    with cupysim.trace() as t:
        with s:
            x + 1
        with cp.cuda.Device(1):
            cp.ones(4) * 3
        s.synchronize()
    keys = set(t.streams())
    assert (0, s._sim().label) in keys
    assert any(dev == 1 for dev, _ in keys)
    assert t.summary(device=1).kernels == 2  # ones (a fill) and the product


def test_other_threads_are_recorded(cp):
    x = cp.ones(4)
    with cupysim.trace() as t:
        th = threading.Thread(target=lambda: float(x.sum()))
        th.start()
        th.join()
    assert t.summary().syncs == 1


def test_traces_nest(cp):
    x = cp.ones(4)
    with cupysim.trace() as outer:
        x + 1
        with cupysim.trace() as inner:
            x + 2
    assert (outer.summary().kernels, inner.summary().kernels) == (2, 1)


def test_the_trace_changes_no_value(cp):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((20, 20))
    x = cp.asarray(a)
    ref = (x @ x + 1).get()
    with cupysim.trace():
        got = (x @ x + 1).get()
    np.testing.assert_array_equal(got, ref)


# -- the estimate ----------------------------------------------------------------------------
def test_estimate_is_counts_times_the_sourced_constants(cp):
    a = cp.ones((1024, 1024), dtype=np.float32)
    with cupysim.trace() as t:
        b = a @ a
        float(b[0, 0])
    e100, e200 = cupysim.estimate(t, "H100"), cupysim.estimate(t, "H200")
    s = t.summary()
    assert e100.launch == pytest.approx((s.device_ops + s.d2h_copies) * 5e-6)
    assert e100.syncs == pytest.approx(1 * 6e-6)
    # the GEMM: 2 n^3 flops at 67 TFLOP/s (FP32) beats 12 MiB at 3.35 TB/s
    gemm = 2 * 1024**3 / 67e12
    assert e100.kernels == pytest.approx(gemm + 4 * 2 / 3.35e12, rel=1e-6)
    assert e200.kernels == pytest.approx(gemm + 4 * 2 / 4.8e12, rel=1e-6)
    assert e100.copies == pytest.approx(4 / 64e9)
    assert e100.total == pytest.approx(e100.launch + e100.kernels + e100.syncs + e100.copies)
    assert "estimated (not measured)" in str(e100)
    with pytest.raises(ValueError, match="H100"):
        cupysim.estimate(t, "A100")


def test_a_memory_bound_kernel_is_faster_on_h200(cp):
    x = cp.ones(1 << 20, dtype=np.float32)
    with cupysim.trace() as t:
        x + x
    e100, e200 = cupysim.estimate(t, "H100"), cupysim.estimate(t, "H200")
    assert e100.kernels == pytest.approx(3 * 4 * (1 << 20) / 3.35e12)
    assert e200.kernels / e100.kernels == pytest.approx(3.35 / 4.8)


def test_solver_and_sparse_calls_name_their_library(cp):
    import cupyx.scipy.sparse as sparse
    import scipy.sparse as sp

    a = cp.asarray(np.eye(8) * 2)
    m = sparse.csr_matrix(sp.eye(8, format="csr"))
    v = cp.ones(8)
    with cupysim.trace() as t:
        cp.linalg.solve(a, v)
        m @ v
    got = [(e.name, e.library) for e in t.select("library")]
    assert got == [("solve", "cuSOLVER"), ("spmv", "cuSPARSE")]
    assert t.select("library")[0].flops == int(2 / 3 * 8**3 + 2 * 8 * 8)
