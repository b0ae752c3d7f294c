"""Foundation operations: host/device transfers and the cost of dispatch.

Transfers run only where data crosses to a GPU (host implementations skip); the
dispatch benchmarks time what gpukit adds to a call on tiny arrays, where nothing
but overhead shows, against the raw library's equivalent.
"""

from __future__ import annotations

import gpukit as gk
from gpukit._dispatch import operation
from gpukit._dispatch.inputs import prepare

from . import calls, common, peers

MIB = [1, 64]
GPU_IMPLS = ["gpukit-cupy", "cupy", "torch-cuda"]
ARRAY_IMPLS = ["gpukit-numpy", "gpukit-cupy", "numpy", "cupy"]


def _float32s(mib: int) -> int:
    return mib * 2**20 // 4


class ToDevice:
    """Host to device copies: ``gk.asarray`` against ``cupy.asarray`` and ``tensor.to``."""

    params = [GPU_IMPLS, MIB]
    param_names = ["impl", "mib"]

    def setup(self, name, mib):
        self.impl = common.impl(name)
        common.require_gpu(self.impl)
        self.host = common.host_random(_float32s(mib))
        # gpukit's call as a user makes it (its backend is the active one)
        self.put = gk.asarray if self.impl.family == "gpukit" else self.impl.put

    def time_to_device(self, name, mib):
        self.put(self.host)
        self.impl.sync()

    def track_gbps(self, name, mib):
        seconds = common.seconds_per_call(lambda: self.put(self.host), self.impl.sync)
        return common.gbps(self.host.nbytes, seconds)

    track_gbps.unit = "GB/s"


class ToHost:
    """Device to host copies: ``gk.to_numpy`` against ``cupy.asnumpy`` and ``tensor.cpu``."""

    params = [GPU_IMPLS, MIB]
    param_names = ["impl", "mib"]

    def setup(self, name, mib):
        self.impl = common.impl(name)
        common.require_gpu(self.impl)
        self.x = self.impl.put(common.host_random(_float32s(mib)))
        self.impl.sync()
        self.get = {
            "gpukit": gk.to_numpy,
            "cupy": lambda x: self.impl.xp.asnumpy(x),
            "torch": lambda x: x.cpu().numpy(),
        }[self.impl.family]

    def time_to_host(self, name, mib):
        self.get(self.x)

    def track_gbps(self, name, mib):
        return common.gbps(self.x.nbytes, common.seconds_per_call(lambda: self.get(self.x)))

    track_gbps.unit = "GB/s"

    def peakmem_to_host(self, name, mib):
        self.get(self.x)


class DevicePool:
    """Device memory the CuPy pool holds after placing 64 MiB (one copy, no hidden extras)."""

    params = [["gpukit-cupy", "cupy"]]
    param_names = ["impl"]

    def setup(self, name):
        self.impl = common.impl(name)
        common.require_gpu(self.impl)
        self.impl.xp.get_default_memory_pool().free_all_blocks()
        self.host = common.host_random(_float32s(64))

    def track_pool_bytes(self, name):
        x = self.impl.put(self.host)
        self.impl.sync()
        held = common.pool_bytes()
        del x
        return held

    track_pool_bytes.unit = "bytes"


class Dispatch:
    """Per-call overhead on an 8x8 native array, where only the bookkeeping shows."""

    params = [ARRAY_IMPLS]
    param_names = ["impl"]

    def setup(self, name):
        self.impl = common.impl(name)
        self.x = self.impl.put(common.host_random((8, 8)))
        self.y = self.impl.put(common.host_random((8, 8), seed=1))
        if self.impl.family == "gpukit":
            self.asarray, self.namespace = gk.asarray, gk.namespace
        else:
            self.asarray = self.impl.xp.asarray
            self.namespace = lambda x: x.__array_namespace__()

    def time_asarray_native(self, name):
        # an array already native to the backend: no copy, only dispatch
        self.asarray(self.x)

    def time_namespace(self, name):
        self.namespace(self.x)


class Prepare:
    """gpukit's one dispatch step of every operation, on two native 8x8 arrays."""

    params = [common.BACKENDS]
    param_names = ["backend"]

    def setup(self, backend):
        b = common.use(backend)
        self.x = common.random(b, (8, 8))
        self.y = common.random(b, (8, 8), seed=1)

    def time_prepare_two(self, backend):
        prepare(self.x, self.y, names=("a", "b"))


class Calls:
    """Every public single-device operation, warm, on a small input, against the peer call
    it makes (``asv_bench/calls.py``): gpukit's own cost per call is the difference."""

    params = [ARRAY_IMPLS, calls.labels()]
    param_names = ["impl", "call"]

    def setup(self, name, label):
        self.impl = common.impl(name)
        ours, peer = _call(self.impl.xp, label)
        self.call = ours if self.impl.family == "gpukit" else peer
        self.call()  # warm: plans, caches, pools

    def time_call(self, name, label):
        self.call()
        self.impl.sync()


def _call(xp, label: str):
    """``(gpukit, peer)`` calls of the row ``label`` on arrays of ``xp``."""
    found = {row[0]: row[1:] for row in calls.rows(xp)}
    if label not in found:
        raise NotImplementedError(f"{label!r} has no {xp.__name__} row")
    return found[label]


class CallRatio(peers.Comparison):
    """Every row of ``Calls``: gpukit's warm call over the peer call it makes, same run
    (``python -m tools.peers -b CallRatio`` prints the difference too: gpukit's own cost
    per call, whose goal is absolute, under 2 us, rather than a ratio, and judges it)."""

    params = [common.BACKENDS, calls.labels()]
    param_names = ["backend", "call"]
    block = 0.02  # microsecond calls: short blocks, short pauses, many calls each
    idle = 0.02

    def setup(self, backend, label):
        self.backend = common.use(backend)
        self.ours, self.peer = _call(self.backend.xp, label)

    def track_ratio(self, backend, label):
        return self.ratio(self.ours, self.peer, self.backend.synchronize)

    track_ratio.unit = "ratio"

    def overhead_target(self, backend, label):
        return 2e-6


def _first(a, b):
    return a


_first_op = operation("gk.bench_first")(_first)


class Operation:
    """The ``@operation`` wrapper every public operation wears (array kinds, the input's
    device, the out-of-memory policy) on two host 8x8 arrays, against the bare function:
    what dispatch adds to every call on the numpy backend, nothing else."""

    params = [["operation", "bare-function"]]
    param_names = ["impl"]

    def setup(self, impl):
        common.use("numpy")
        self.x = common.host_random((8, 8))
        self.fn = _first_op if impl == "operation" else _first

    def time_call(self, impl):
        self.fn(self.x, self.x)


class HostAsarray:
    """``gk.asarray`` of a Python list on the host: conversion cost against ``np.asarray``."""

    params = [["gpukit-numpy", "numpy"], [1_000, 1_000_000]]
    param_names = ["impl", "n"]

    def setup(self, name, n):
        self.impl = common.impl(name)
        self.data = common.host_random(n).tolist()
        self.asarray = gk.asarray if self.impl.family == "gpukit" else self.impl.xp.asarray

    def time_asarray_list(self, name, n):
        self.asarray(self.data)

    def peakmem_asarray_list(self, name, n):
        self.asarray(self.data)


def timeraw_import_gpukit():
    """``import gpukit`` in a fresh interpreter (after NumPy, which every user has loaded)."""
    return "import gpukit", "import numpy"


timeraw_import_gpukit.number = 1
timeraw_import_gpukit.repeat = 10
