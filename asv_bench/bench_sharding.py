"""Sharded operations on 1..N devices, and their parallel efficiency.

Devices are the backend's: on numpy, N virtual CPU devices (the machine's cores
bound the speed-up, so these figures measure sharding's overhead); on cupy, the
GPUs present (a count above them is skipped). Parallel efficiency is
``T(1 device) / (N * T(N devices))``; the multi-GPU target is 0.9 for matmul and
batched FFT at sizes that fill each device (docs/multi_device.rst). Peers: the
unsharded raw NumPy / CuPy call in the same suite (SciPy / cupyx ``cg`` for the
sharded cg, the unwrapped model for a DataParallel training step).
"""

from __future__ import annotations

import statistics
import time
import warnings

import numpy as np

import gpukit as gk
from gpukit._select import registry as _registry

from . import peers
from .common import BACKENDS, host_random, sync, use

DEVICES = [1, 2, 4]
OPS = ["matmul", "fft", "sum", "cg", "dp_step"]
SHAPES = {
    "matmul": (2048, 2048),
    "fft": (4096, 1024),
    "sum": (4096, 4096),
    "cg": (2048, 2048),  # dense SPD operator, CG_ITERATIONS iterations per solve
    "dp_step": (2048, 512),  # a batch of 2048 samples, 512 features
}
CG_ITERATIONS = 20


def _spd(rng, n: int) -> np.ndarray:
    q = rng.standard_normal((n, n)).astype(np.float32)
    return q @ q.T / n + np.eye(n, dtype=np.float32)


def _cg(a, b, xp_cg=None):
    """A fixed number of CG iterations (rtol=0): the time per solve is comparable."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if xp_cg is not None:
            return xp_cg(a, b, rtol=0.0, atol=0.0, maxiter=CG_ITERATIONS)
        return gk.linalg.cg(a, b, rtol=0.0, maxiter=CG_ITERATIONS)


def _mlp_step(model, x, y):
    """One training step (SGD) of ``model``; returns the step function."""
    loss_fn = gk.nn.CrossEntropyLoss()
    opt = gk.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y)
        model.backward(loss_fn.backward(), need_input_grad=False)
        opt.step()

    return step


def _mlp(features: int):
    return gk.nn.Sequential(
        gk.nn.Linear(features, 1024, seed=0), gk.nn.ReLU(), gk.nn.Linear(1024, 10, seed=1)
    )


def _backend(name: str, devices: int):
    base = use(name)
    if name == "numpy":
        return type(_registry.load("numpy"))(devices)
    if base.device_count() < devices:
        raise NotImplementedError(f"{devices} devices asked, {base.device_count()} present")
    return base


def _setup_op(backend, op: str, devices: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPES[op]).astype(np.float32)
    if op == "cg":
        x = _spd(rng, x.shape[0])
    with gk.use_backend(backend):
        if op == "dp_step":
            y = rng.integers(0, 10, x.shape[0])
            model = gk.nn.DataParallel(_mlp(x.shape[1]), devices=range(devices))
            run = _mlp_step(model, x, y)
            run()  # replicas, worker threads
            return run, x, y
        sx = gk.shard(x, devices=range(devices))
        b = gk.asarray(rng.standard_normal((x.shape[1], x.shape[1])).astype(np.float32))
        rb = gk.sharding.replicate(b, devices=range(devices))  # copied once, as in a loop
        rhs = rng.standard_normal(x.shape[0]).astype(np.float32)
        run = {
            "matmul": lambda: gk.sharding.matmul(sx, rb),
            "fft": lambda: gk.sharding.fft(sx, axis=-1),
            "sum": lambda: gk.sharding.sum(sx),
            "cg": lambda: _cg(sx, rhs),
        }[op]
        run()  # replicas, plans, worker threads
    return run, x, (rhs if op == "cg" else b)


class ShardedOps:
    params = (BACKENDS, OPS, DEVICES)
    param_names = ("backend", "op", "devices")

    def setup(self, name, op, devices):
        self.backend = _backend(name, devices)
        self.run, _, _ = _setup_op(self.backend, op, devices)

    def time_sharded(self, name, op, devices):
        with gk.use_backend(self.backend):
            self.run()
            sync(self.backend)


class Unsharded:
    """The raw library call on one device: the peer every sharded figure is read against."""

    params = (BACKENDS, OPS)
    param_names = ("backend", "op")

    def setup(self, name, op):
        self.backend = use(name)
        self.run = _unsharded(self.backend, op)

    def time_raw(self, name, op):
        with gk.use_backend(self.backend):
            self.run()
            sync(self.backend)


def _unsharded(backend, op: str):
    """The raw library call of ``op`` on one device of ``backend`` (the unwrapped model
    for a DataParallel step), on ``_setup_op``'s data."""
    _, x, b = _setup_op(_backend(backend.name, 1), op, 1)
    if op == "dp_step":  # the unwrapped model on one device
        with gk.use_backend(backend):
            return _mlp_step(_mlp(x.shape[1]), gk.asarray(x), gk.asarray(b))
    xp = backend.xp
    x = xp.asarray(x)
    b = xp.asarray(b)
    if op == "cg":
        if backend.name == "numpy":
            from scipy.sparse.linalg import cg
        else:
            from cupyx.scipy.sparse.linalg import cg
    return {
        "matmul": lambda: x @ b,
        "fft": lambda: xp.fft.fft(x, axis=-1),
        "sum": lambda: xp.sum(x),
        "cg": lambda: _cg(x, b, cg),
    }[op]


class ShardedRatio(peers.Comparison):
    """A sharded operation's time over the unsharded raw call's (``Unsharded``), same run.

    On virtual CPU devices the cores bound both sides, so this is the cost sharding adds;
    the target there is within 10% for matmul.
    """

    params = [BACKENDS, OPS, [2]]
    param_names = ["backend", "op", "devices"]

    def setup(self, name, op, devices):
        self.backend = sharded = _backend(name, devices)
        run, _, _ = _setup_op(sharded, op, devices)
        base = use(name)
        unsharded = _unsharded(base, op)

        def ours():
            with gk.use_backend(sharded):
                run()

        def peer():
            with gk.use_backend(base):
                unsharded()

        self.ours, self.peer = ours, peer

    def track_ratio(self, name, op, devices):
        return self.ratio(self.ours, self.peer, lambda: sync(self.backend))

    track_ratio.unit = "ratio"

    def target(self, name, op, devices):
        return 1.10 if (name, op) == ("numpy", "matmul") else None


def _median_time(backend, run, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        with gk.use_backend(backend):
            run()
            sync(backend)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class ParallelEfficiency:
    params = (BACKENDS, ["matmul", "fft", "cg", "dp_step"], [2, 4])
    param_names = ("backend", "op", "devices")
    unit = "T1 / (N * TN)"

    def setup(self, name, op, devices):
        self.one = _backend(name, 1)
        self.many = _backend(name, devices)

    def track_efficiency(self, name, op, devices):
        run1, _, _ = _setup_op(self.one, op, 1)
        run_n, _, _ = _setup_op(self.many, op, devices)
        return _median_time(self.one, run1) / (devices * _median_time(self.many, run_n))


# -- the distributed FFT and the all-to-all, against the unsharded call ---------------------------
FFT2_SHAPE = (2048, 2048)  # complex64: 32 MiB, split along the rows (a transformed axis)
RESHARD_SHAPE = (2048, 4096)  # float32: 32 MiB, rows to columns


def _whole(backend, x):
    """``x`` on the backend's first device, for the unsharded side."""
    with gk.use_backend(backend):
        return gk.asarray(x, device=0)


class DistributedFFT2(peers.Comparison):
    """``gk.fft.fft2`` of an array split along its rows: transform the rows, one
    all-to-all, transform the columns, and (``natural``) a second all-to-all back to
    the input's layout; ``transposed`` leaves the result split along the columns."""

    params = (BACKENDS, ["natural", "transposed"], DEVICES)
    param_names = ("backend", "output", "devices")

    def setup(self, name, output, devices):
        self.backend = _backend(name, devices)
        x = host_random(FFT2_SHAPE, "complex64")
        with gk.use_backend(self.backend):
            sx = gk.shard(x, devices=range(devices))
            self.run = lambda: gk.sharding.fft2(sx, transposed_out=output == "transposed")
            self.run()  # plans, worker threads
        one = _backend(name, 1)
        whole = _whole(one, x)
        self.unsharded = lambda: gk.fft.fft2(whole)

    def time_sharded(self, name, output, devices):
        with gk.use_backend(self.backend):
            self.run()
            sync(self.backend)

    def track_ratio(self, name, output, devices):
        """Time over the unsharded ``gk.fft.fft2``'s on one device, same run."""
        with gk.use_backend(self.backend):
            return self.ratio(self.run, self.unsharded, lambda: sync(self.backend))

    track_ratio.unit = "ratio"


class Reshard(peers.Comparison):
    """``gk.reshard`` of a row-split array to a column split: one all-to-all."""

    params = (BACKENDS, [2, 4])
    param_names = ("backend", "devices")

    def setup(self, name, devices):
        self.backend = _backend(name, devices)
        x = host_random(RESHARD_SHAPE, "float32")
        with gk.use_backend(self.backend):
            sx = gk.shard(x, devices=range(devices))
            self.run = lambda: gk.reshard(sx, axis=1)
            gk.reset_transfer_stats()
            self.run()
            self.moved = gk.transfer_stats().device_to_device.bytes
        whole = _whole(_backend(name, 1), x)
        self.unsharded = whole.copy  # the same bytes written, on one device

    def time_reshard(self, name, devices):
        with gk.use_backend(self.backend):
            self.run()
            sync(self.backend)

    def track_gbps(self, name, devices):
        """Bytes crossing devices per second (each read once and written once)."""
        with gk.use_backend(self.backend):
            return 2 * self.moved / _median_time(self.backend, self.run) / 1e9

    track_gbps.unit = "GB/s"

    def track_ratio(self, name, devices):
        """Time over one copy of the whole array on one device, same run."""
        with gk.use_backend(self.backend):
            return self.ratio(self.run, self.unsharded, lambda: sync(self.backend))

    track_ratio.unit = "ratio"
