"""Batched FFT and matmul through Dask on 1 and 2 workers, against the call without Dask.

``workers = 0`` is the plain gpukit call on the whole array (no Dask): the peer every Dask
figure is read against, so the history shows the scheduler's overhead (1 worker vs 0)
and the scaling (2 workers vs 1). The input is persisted on the cluster in ``setup``;
the timed region builds the graph and computes the result on the workers, without
gathering it to the client (as a pipeline would go on with it there).

Workers are processes with one thread each (Dask's nanny pins BLAS/FFT threads to one),
on the numpy backend a ``LocalCluster``; on cupy a ``dask_cuda.LocalCUDACluster`` (one
worker per GPU), skipped without dask-cuda or with fewer GPUs than workers.
"""

from __future__ import annotations

import uuid

import numpy as np

import gpukit as gk

from .common import BACKENDS, Undoable, host_random, sync, use

WORKERS = [0, 1, 2]
OPS = ["fft", "matmul"]
SHAPES = {"fft": (2048, 4096), "matmul": (2048, 2048)}
CHUNK_ROWS = {"fft": 256, "matmul": 512}


def _cluster(name: str, workers: int):
    try:
        from distributed import LocalCluster
    except ImportError:
        raise NotImplementedError('Dask is not installed (pip install "gpukit[dask]")') from None
    if name == "numpy":
        return LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0")
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        raise NotImplementedError("cupy through Dask needs dask-cuda") from None
    if gk.device_count() < workers:
        raise NotImplementedError(f"{workers} GPU workers asked, {gk.device_count()} GPUs")
    return LocalCUDACluster(n_workers=workers, dashboard_address=":0")


def _same(block):
    return block


def _op(op: str, x, w):
    return gk.fft.fft(x) if op == "fft" else gk.matmul(x, w)


class DaskOps(Undoable):
    params = (BACKENDS, OPS, WORKERS)
    param_names = ("backend", "op", "workers")
    timeout = 300

    def setup(self, name, op, workers):
        self.backend = use(name)
        shape, square = SHAPES[op], (SHAPES[op][1],) * 2
        self.op = op
        if workers == 0:
            self.x = gk.asarray(host_random(shape, "float32"))
            self.w = gk.asarray(host_random(square, "float32", seed=1))
            _op(op, self.x, self.w)  # plans, caches
            return
        cluster = self.cleanup.enter_context(_cluster(name, workers))  # skips without Dask
        import dask.array as da
        from distributed import Client

        self.client = self.cleanup.enter_context(Client(cluster, set_as_default=False))
        rng, chunks = da.random.default_rng(0), (CHUNK_ROWS[op], -1)
        xp = self.backend.xp
        # Made on the workers (no host array shipped in the graph), of the backend's type.
        x, w = (
            rng.standard_normal(s, chunks=chunks, dtype=np.float32).map_blocks(xp.asarray)
            for s in (shape, square)
        )
        self.x, self.w = self.client.persist([x, w])
        self.run()  # workers import gpukit, plans

    def run(self):
        from distributed import wait

        # Same inputs give the same task names (gpukit's are deterministic, as Dask's), and
        # the cluster would hand back a result it still holds: a uniquely named view of
        # the input (one trivial task per chunk) makes every run compute.
        x = self.x.map_blocks(_same, name=f"bench-input-{uuid.uuid4().hex}", meta=self.x._meta)
        result = self.client.persist(_op(self.op, x, self.w))
        with self.client.as_current():
            wait(result, timeout=120)

    def time_op(self, name, op, workers):
        if workers == 0:
            _op(op, self.x, self.w)
            sync(self.backend)
        else:
            self.run()

    def teardown(self, name, op, workers):
        self.clean_up()
