"""A device's status buffer shared by threads.

Checked calls (``CrossEntropyLoss`` on a device) number themselves and their kernels
flag problems in one buffer per device; reads (``gk.synchronize()``, ``gk.to_numpy``)
take and clear it. With threads switching every microsecond, the numbering must stay
exact and a flag must be raised exactly once: never lost to a read that ran between
another thread's numbering and its launch, or to a clear after its kernel flagged.

The threads share the device's stream (the legacy default stream: skipped under
``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1``): the simulator's hazard model sees a kernel's
arguments as plain reads and writes, and would report the buffer's atomic updates from
several streams as unordered accesses, which CUDA allows.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

import gpukit as gk
from gpukit._runtime import device_status

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM") == "1",
        reason="each thread on its own stream: the simulator reports the status buffer's "
        "atomic updates as a stream hazard (module docstring)",
    ),
]

THREADS = 8
CALLS = 40


@pytest.fixture
def fast_switching():
    """Threads switch after every few bytecodes, so races show in a short test."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _reference(logits: np.ndarray, labels: np.ndarray) -> float:
    z = logits.astype(np.float64)
    lse = np.log(np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1)) + z.max(axis=1)
    return float(np.mean(lse - z[np.arange(len(labels)), labels]))


def _run(workers) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(fn):
        def run():
            try:
                fn()
            except BaseException as exc:  # reported by the test, not lost in the thread
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guarded(w)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_checked_calls_from_many_threads_are_numbered_once_each(cupy_backend, rng, fast_switching):

    st = device_status.status(cupy_backend, 0)
    start = st.serial
    cases = [
        (rng.standard_normal((16, 5)).astype(np.float32), rng.integers(0, 5, 16))
        for _ in range(THREADS)
    ]
    results: list[list] = [[] for _ in range(THREADS)]

    def worker(i):
        def run():
            logits, labels = cases[i]
            loss_fn = gk.nn.CrossEntropyLoss()
            x, y = gk.asarray(logits), gk.asarray(labels)
            for _ in range(CALLS):
                results[i].append(loss_fn(x, y))

        return run

    assert _run([worker(i) for i in range(THREADS)]) == []
    assert st.serial - start == THREADS * CALLS
    gk.synchronize()  # nothing flagged: no error
    for (logits, labels), losses in zip(cases, results, strict=True):
        want = _reference(logits, labels)
        got = [float(v.get()) for v in losses]
        assert max(abs(g - want) for g in got) <= 1e-5 * abs(want)


@pytest.mark.parametrize("round_", range(4))
def test_a_flag_raised_while_other_threads_read_is_reported_exactly_once(
    cupy_backend, rng, fast_switching, round_
):
    """The bad batch is the flagging thread's last call: no later call arms the buffer
    again, so a read that disarmed it between that call's numbering and its launch
    would lose the error for good."""
    logits = rng.standard_normal((8, 4)).astype(np.float32)
    good = rng.integers(0, 4, 8)
    bad = good.copy()
    bad[3] = 7  # out of [0, 4)
    raised: list[BaseException] = []
    lock = threading.Lock()
    done = threading.Event()

    def flagger():
        try:
            loss_fn = gk.nn.CrossEntropyLoss()
            x = gk.asarray(logits)
            for k in range(CALLS):
                loss_fn(x, gk.asarray(bad if k == CALLS - 1 else good))
        finally:  # the readers stop whatever happened here
            done.set()

    def reader():
        while not done.is_set():
            try:
                gk.synchronize()
            except ValueError as exc:
                with lock:
                    raised.append(exc)

    assert _run([flagger, reader, reader]) == []
    try:
        gk.synchronize()
    except ValueError as exc:
        raised.append(exc)
    assert len(raised) == 1, raised
    assert "labels must be in [0, 4)" in str(raised[0]) and "[7, 7]" in str(raised[0])
