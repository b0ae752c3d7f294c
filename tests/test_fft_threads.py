"""gk.fft on the numpy backend from many threads at once and after fork().

The stress tests share each input between threads and use sizes no earlier test
planned, so plans are made while other threads run theirs; and a forked child must not
hang on worker threads its parent started (SciPy's gh-10422 test). Every result is
compared with SciPy in float64.
"""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest
import scipy.fft

import gpukit as gk

from helpers import rel_err

TRANSFORMS = [
    ("fft", "c"), ("ifft", "c"), ("rfft", "r"), ("irfft", "c"), ("hfft", "c"), ("ihfft", "r"),
    ("fft2", "c"), ("ifft2", "c"), ("rfft2", "r"), ("irfft2", "c"), ("hfft2", "c"),
    ("ihfft2", "r"), ("fftn", "c"), ("ifftn", "c"), ("rfftn", "r"), ("irfftn", "c"),
    ("hfftn", "c"), ("ihfftn", "r"),
]  # fmt: skip
THREADS = 16
#: A batch scipy.fft splits between its worker threads.
THREADED_SHAPE = (64, 2048)


@pytest.fixture(autouse=True)
def _numpy_backend():
    with gk.use_backend("numpy"):
        yield


def _signal(rng, shape, kind):
    x = rng.standard_normal(shape)
    return x if kind == "r" else x + 1j * rng.standard_normal(shape)


def _reference(name, x, n):
    one_d = not name.endswith(("2", "n"))
    # axis 0 gets length n; for 2-D/N-D, axis 1 is cropped and axis 0 transformed last
    kwargs = {"n": n, "axis": 0} if one_d else {"s": (3, n), "axes": (1, 0)}
    return kwargs, getattr(scipy.fft, name)(x, **kwargs)


def _aligned(x):
    """``x`` copied to 64-byte aligned memory, as SIMD engines like to use it in place."""
    raw = np.empty(x.nbytes + 64, np.uint8)
    start = -raw.ctypes.data % 64
    out = raw[start : start + x.nbytes].view(x.dtype).reshape(x.shape)
    out[...] = x
    return out


def _fresh_cases(rng, count, longest):
    """``count`` (name, shared input, kwargs, reference) on sizes unlikely to be planned yet.

    Half the inputs are aligned and transformed at their own length, which lets an
    engine use the caller's array directly (and planning on it would corrupt it), half
    zero-padded.
    """
    lengths = rng.choice(np.arange(40, longest), size=count, replace=False)
    cases = []
    for i, n in enumerate(lengths):
        name, kind = TRANSFORMS[i % len(TRANSFORMS)]
        padded = (i // len(TRANSFORMS)) % 2
        x = _signal(rng, (int(n) - 3 * padded, 5), kind)
        x = x if padded else _aligned(x)
        kwargs, ref = _reference(name, x, int(n))
        cases.append((name, x, kwargs, ref))
    return cases


def test_concurrent_calls_on_fresh_sizes_are_correct(rng):
    cases = _fresh_cases(rng, 36, 2000)  # every transform twice, padded and not
    inputs = [x.copy() for _, x, _, _ in cases]
    barrier = threading.Barrier(THREADS)
    errors: list[str] = []

    def work(offset):
        barrier.wait()
        for i in range(len(cases)):  # all threads on the same cases, in staggered order
            name, x, kwargs, ref = cases[(i + offset) % len(cases)]
            try:
                got = getattr(gk.fft, name)(x, **kwargs)
                err = rel_err(got, ref)
                if not err < 1e-12:
                    errors.append(f"{name} {x.shape} {kwargs}: relative error {err:.1e}")
            except Exception as exc:  # a failure in a thread must fail the test
                errors.append(f"{name} {x.shape} {kwargs}: {exc!r}")

    threads = [threading.Thread(target=work, args=(t % 3,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "an FFT thread hung"
    assert errors == []
    for (_, x, _, _), before in zip(cases, inputs, strict=True):
        assert np.array_equal(x, before), "an input was modified"


def test_threads_get_identical_results():
    # NumPy's and SciPy's TestFFTThreadSafe: the same call from 16 threads, compared exactly.
    a = np.ones((800, 200)) + 0j
    expected = gk.fft.ifft(a)
    results = [None] * THREADS

    def work(i):  # a new thread starts from the default backend, not the caller's
        with gk.use_backend("numpy"):
            results[i] = gk.fft.ifft(a)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert all(np.array_equal(r, expected) for r in results)
    assert rel_err(expected, np.fft.ifft(a)) < 1e-12


def _run_in_child(case):
    """Pool worker: one transform after fork (module level, so the pool can pickle it)."""
    name, x, kwargs = case
    with gk.use_backend("numpy"):
        return getattr(gk.fft, name)(x, workers=2, **kwargs)


def _fork_pool_results(cases, timeout=60):
    with multiprocessing.get_context("fork").Pool(2) as pool:
        # .get(timeout) turns a hung child into a failure instead of a hung test run
        return pool.map_async(_run_in_child, cases).get(timeout=timeout)


def test_every_transform_works_in_forked_children(rng):
    # SciPy's gh-10422: FFT with threads before and after fork, and in the children.
    x = _signal(rng, THREADED_SHAPE, "c")
    expected = gk.fft.fft(x, workers=2)  # starts scipy.fft's threads in the parent
    cases = []
    for name, kind in TRANSFORMS:
        y = _signal(rng, THREADED_SHAPE, kind)
        kwargs = {"axis": 0} if not name.endswith(("2", "n")) else {"axes": (1, 0)}
        cases.append((name, y, kwargs))
    results = _fork_pool_results(cases)
    for (name, y, kwargs), got in zip(cases, results, strict=True):
        assert rel_err(got, getattr(scipy.fft, name)(y, **kwargs)) < 1e-12, name
    assert rel_err(gk.fft.fft(x, workers=2), expected) == 0  # the parent still works
