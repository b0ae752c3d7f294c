"""Host-to-device transfers: pinned against pageable memory, in time and GB/s.

Ways to move a 256 MiB float32 batch to the device, in the same suite:

* ``gk_pageable``: ``gk.asarray(x)`` from ordinary (pageable) memory;
* ``gk_pinned_staged``: ``gk.asarray(x, pinned=True)``, staging through a pinned buffer;
* ``gk_pinned_source``: ``gk.asarray(p, pinned=True)`` from a ``gk.empty_pinned`` array;
* ``cupy_pageable``: raw ``cupy.asarray(x)``, the peer;
* ``torch_pinned``: ``p.to("cuda", non_blocking=True)`` from pinned torch memory, the peer.

Transfers need a device: the numpy backend (and every method on a machine without a
GPU, or torch without CUDA) skips.
"""

from __future__ import annotations

import time

import numpy as np

import gpukit as gk

from .common import BACKENDS, have, sync, use

NBYTES = 256 * 2**20
METHODS = ["gk_pageable", "gk_pinned_staged", "gk_pinned_source", "cupy_pageable", "torch_pinned"]


class HostToDevice:
    params = (BACKENDS, METHODS)
    param_names = ("backend", "method")
    timeout = 120

    def setup(self, backend, method):
        self.backend = use(backend)
        if not self.backend.is_device:
            raise NotImplementedError("host-to-device transfers need a device backend")
        host = np.random.default_rng(0).standard_normal(NBYTES // 4).astype(np.float32)
        if method == "gk_pageable":
            self.move = lambda: gk.asarray(host)
        elif method == "gk_pinned_staged":
            self.move = lambda: gk.asarray(host, pinned=True)
        elif method == "gk_pinned_source":
            pinned = gk.empty_pinned(host.shape, host.dtype)
            pinned[...] = host
            self.move = lambda: gk.asarray(pinned, pinned=True)
        elif method == "cupy_pageable":
            import cupy

            self.move = lambda: cupy.asarray(host)
        else:
            self.move = self._torch(host)
        self.move()  # warm the pools
        sync(self.backend)

    def _torch(self, host):
        if not have("torch"):
            raise NotImplementedError("torch is not installed")
        import torch

        if not torch.cuda.is_available():
            raise NotImplementedError("torch has no CUDA here")
        pinned = torch.from_numpy(host).pin_memory()

        def move():
            out = pinned.to("cuda", non_blocking=True)
            torch.cuda.synchronize()
            return out

        return move

    def time_h2d(self, backend, method):
        self.move()
        sync(self.backend)

    def track_h2d_gbps(self, backend, method):
        rates = []
        for _ in range(7):
            start = time.perf_counter()
            self.move()
            sync(self.backend)
            rates.append(NBYTES / (time.perf_counter() - start) / 1e9)
        return float(np.median(rates))

    track_h2d_gbps.unit = "GB/s"
