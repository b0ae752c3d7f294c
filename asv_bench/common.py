"""What every gpukit benchmark shares: the backend axis, device sync, peers, throughput.

Following SciPy's benchmarks: one asv parameter axis over backends; a backend or
peer that cannot run here raises ``NotImplementedError`` in ``setup`` so asv
records a skip, not a failure; device work is synchronised before the clock stops.

Peers sit in the same suite so every gpukit figure has a same-run ratio. A benchmark
class takes the ``IMPLS`` axis (gpukit on each backend, then raw NumPy/SciPy, raw CuPy,
PyTorch CPU/CUDA) and calls :func:`impl` in ``setup``; the returned ``Runner`` (shared
with ``gpukit bench``) places host data on its device (``put``) and waits for it
(``sync``). Same-run ratios (``track_ratio``) derive from ``peers.Comparison``.
``track_`` benchmarks report GFLOP/s or GB/s through :func:`gflops` / :func:`gbps`,
timed here with the device synchronised (:func:`seconds_per_call`).

Examples
--------
A benchmark of ``op`` with peers, the shape every ``bench_<area>.py`` follows::

    class Op:
        params = [common.IMPLS, [256, 1024]]
        param_names = ["impl", "n"]

        def setup(self, name, n):
            self.impl = common.impl(name)
            self.a = self.impl.put(common.host_random((n, n)))
            self.op = {"gpukit": gk.op, "numpy": np.op, "torch": torch.op}[self.impl.family]

        def time_op(self, name, n):
            self.op(self.a)
            self.impl.sync()

        def track_gflops(self, name, n):
            t = common.seconds_per_call(lambda: self.op(self.a), self.impl.sync)
            return common.gflops(2 * n**3, t)

        track_gflops.unit = "GFLOP/s"
"""

from __future__ import annotations

import contextlib
import importlib.util
import time
from collections.abc import Callable

import numpy as np

import gpukit as gk
from gpukit._bench.runners import NAMES, Runner, make

#: The backend axis every gpukit-only benchmark is parametrised over.
BACKENDS = ["numpy", "cupy"]

#: gpukit on each backend, then its peers: the axis of same-run comparisons (the names
#: ``gpukit bench --impls`` takes).
IMPLS = list(NAMES)


def use(backend: str):
    """Select ``backend`` process-wide for a benchmark; NotImplementedError if it cannot run."""
    status = gk.available_backends().get(backend)
    if status is None or not status.available:
        raise NotImplementedError(f"backend {backend!r} unavailable here")
    return gk.set_backend(backend)


def sync(backend) -> None:
    """Wait for queued device work, so the timer measures it (no-op on the host)."""
    backend.synchronize()


def random(backend, shape, dtype="float32", seed=0):
    """Random data of ``dtype`` placed on ``backend`` (never zeros: zeros flatter hardware)."""
    with gk.use_backend(backend.name):
        return gk.asarray(host_random(shape, dtype, seed))


def host_random(shape, dtype="float32", seed=0) -> np.ndarray:
    """Random NumPy data of ``dtype`` (complex dtypes get a random imaginary part)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    x = rng.standard_normal(shape)
    if dt.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def have(module: str) -> bool:
    """Whether an optional peer (``torch``) is importable, without importing it."""
    return importlib.util.find_spec(module) is not None


class Undoable:
    """Base of a benchmark whose ``setup`` changes something its ``teardown`` must undo.

    asv calls ``teardown`` after every ``setup``, also one that raised
    ``NotImplementedError`` (a skip) half-way, so a teardown must not assume that setup
    got far. ``setup`` registers each undo on :attr:`cleanup` (a ``contextlib.ExitStack``:
    ``enter_context``, ``callback``) right after the change it undoes, and ``teardown``
    (spelled out with the benchmark's parameters, which ``asv check`` requires) calls
    :meth:`clean_up`, which runs exactly those, newest first.
    """

    @property
    def cleanup(self) -> contextlib.ExitStack:
        """The undos registered since the last :meth:`clean_up`."""
        return self.__dict__.setdefault("_cleanup", contextlib.ExitStack())

    def clean_up(self) -> None:
        """Undo what ``setup`` registered, newest first (nothing if it registered nothing)."""
        self.__dict__.pop("_cleanup", contextlib.ExitStack()).close()


# -- peers ---------------------------------------------------------------------------------
def cupy_module():
    """The ``cupy`` module when a GPU is usable; NotImplementedError otherwise."""
    status = gk.available_backends().get("cupy")
    if status is None or not status.available:
        raise NotImplementedError("CuPy with a usable GPU is unavailable here")
    import cupy

    return cupy


def impl(name: str) -> Runner:
    """Set up the ``IMPLS`` entry ``name`` for a benchmark; NotImplementedError if it cannot run.

    The implementations are ``gpukit bench``'s (``gpukit._bench.runners``): one definition
    of where each computes and how data gets there. A gpukit entry also selects its
    backend process-wide, as :func:`use` does.
    """
    if name.startswith("gpukit-"):
        use(name.removeprefix("gpukit-"))
    try:
        return make(name)
    except RuntimeError as exc:  # its reason: no GPU, no PyTorch
        raise NotImplementedError(f"{name}: {exc}") from None


# -- throughput ------------------------------------------------------------------------------
def seconds_per_call(
    fn: Callable[[], object], sync: Callable[[], None] = lambda: None, min_time: float = 0.05
) -> float:
    """Best of three blocks of calls, each block ~``min_time`` s, synchronised before the clock.

    For ``track_`` benchmarks, which asv does not time: the figure is throughput, so
    the best block (least disturbed by other work) is the meaningful one, as in asv's
    own ``min`` of repeats.
    """
    fn()  # warm up: plans, caches, kernel compilation
    sync()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time or number >= 1 << 16:
            break
        number *= 4
    best = elapsed / number
    for _ in range(2):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def gflops(flops: float, seconds: float) -> float:
    """GFLOP/s of ``flops`` floating-point operations done in ``seconds``."""
    return flops / seconds / 1e9


def gbps(nbytes: float, seconds: float) -> float:
    """GB/s (10^9 bytes) of ``nbytes`` read plus written in ``seconds``."""
    return nbytes / seconds / 1e9


def require_gpu(impl: Runner) -> None:
    """Skip (NotImplementedError, for ``setup``) a benchmark meaningless on the host."""
    if impl.device != "gpu":
        raise NotImplementedError(f"{impl.name} computes on the host: nothing to measure here")


def pool_bytes() -> int:
    """Bytes the CuPy memory pool holds on the current device, for a ``track_`` of device memory.

    Host memory is asv's own ``peakmem_``; guard the benchmark with :func:`require_gpu`.
    """
    return int(cupy_module().get_default_memory_pool().total_bytes())
