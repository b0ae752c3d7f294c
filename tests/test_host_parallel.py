"""The host threads of gpukit/_host/parallel.py: spans handed to the workers and back,
from several caller threads at once, failing, and in the caller's context."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gpukit._host import activations, parallel


def _fill(out: np.ndarray, threads: int):
    """A run over ``out`` whose spans each write their own index into their range."""

    def work(k: int, lo: int, hi: int) -> int:
        out[lo:hi] = k
        return hi - lo

    return parallel.run(work, out.size, threads=threads)


def _in_threads(target, count: int) -> list:
    """``target(i)`` in ``count`` threads at once; each one's result or error."""
    results: list = [None] * count
    start = threading.Barrier(count)

    def body(i: int) -> None:
        start.wait()
        try:
            results[i] = target(i)
        except BaseException as error:  # reported by the test, not lost in the thread
            results[i] = error

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a caller never returned"
    return results


def test_spans_cover_their_ranges_from_many_callers_at_once():
    """Callers in several threads share the workers or run their spans themselves; each
    gets every span of its own run, in order, whichever way."""

    def caller(i: int) -> bool:
        for rep in range(200):
            threads = 2 + (i + rep) % 3
            out = np.full(1000 + i, -1)
            sizes = _fill(out, threads)
            bounds = [out.size * k // threads for k in range(threads + 1)]
            want = np.repeat(np.arange(threads), np.diff(bounds))
            if sizes != list(np.diff(bounds)) or not np.array_equal(out, want):
                return False
        return True

    assert _in_threads(caller, 4) == [True] * 4


def test_spans_no_worker_has_started_are_run_by_the_caller():
    """With every pool thread held elsewhere (as when the scheduler runs other processes
    on those cores), a run does not wait for them: the caller runs the spans no worker
    has started, and returns every span's result in order."""
    release = threading.Event()
    held = [parallel._executor().submit(release.wait) for _ in range(parallel._CORES)]
    try:
        out = np.full(1000, -1)
        done = _in_threads(lambda _i: _fill(out, 4), 1)
        bounds = [out.size * k // 4 for k in range(5)]
        assert done == [list(np.diff(bounds))]
        assert np.array_equal(out, np.repeat(np.arange(4), np.diff(bounds)))
    finally:
        release.set()
        for f in held:
            f.result()


def test_an_error_in_a_worker_s_span_reaches_the_caller_and_the_workers_go_on():
    def work(k: int, lo: int, hi: int) -> int:
        if k == 1:
            raise KeyError(f"span {k}")
        return k

    for _ in range(3):
        with pytest.raises(KeyError, match="span 1"):
            parallel.run(work, 4, threads=2)
    out = np.full(10, -1)
    assert _fill(out, 2) == [5, 5] and np.array_equal(out, [0] * 5 + [1] * 5)


def test_spans_run_in_the_caller_s_context():
    """A worker's span sees the caller's NumPy error state (a context variable)."""
    seen = [None, None]

    def work(k: int, lo: int, hi: int) -> None:
        seen[k] = np.geterr()["over"]

    with np.errstate(over="raise"):
        parallel.run(work, 2, threads=2)
    with np.errstate(over="ignore"):
        parallel.run(work, 2, threads=2)
    assert seen == ["ignore", "ignore"]
    with np.errstate(over="raise"):
        parallel.run(work, 2, threads=2)
    assert seen == ["raise", "raise"]


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_kernels_called_from_many_threads_give_each_caller_its_own_result(rng, activation):
    """The host kernels, split over the host threads, called from four threads at once
    (sharing the workers or running their spans themselves): each result, the bias
    gradient's sums included, is the one a lone call on as many threads gives."""
    xs = [rng.standard_normal((512, 257)).astype(np.float32) for _ in range(4)]
    b = rng.standard_normal(257).astype(np.float32)
    alone = [
        (
            activations.bias_activate(x, b, np.empty_like(x), activation, 0.0),
            *activations.gradient(x, x, activation, 0.0, bias=b, want_bias=True),
        )
        for x in xs
    ]

    def caller(i: int) -> bool:
        x = xs[i]
        for _ in range(30):
            y = activations.bias_activate(x, b, np.empty_like(x), activation, 0.0)
            g, gb = activations.gradient(x, x, activation, 0.0, bias=b, want_bias=True)
            if not all(map(np.array_equal, (y, g, gb), alone[i])):
                return False
        return True

    assert _in_threads(caller, 4) == [True] * 4
