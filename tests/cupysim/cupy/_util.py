"""cupy/_util.pyx: the warning CuPy gives for slow-but-working paths, and memoize."""

from __future__ import annotations

import functools
import os
import threading


class PerformanceWarning(RuntimeWarning):
    """Warning that indicates possible performance issues."""


PerformanceWarning.__module__ = "cupy._util"


def memoize(for_each_device=False):
    """Memoize a function (per device when ``for_each_device``)."""

    def decorator(f):
        cache: dict = {}
        lock = threading.Lock()

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            key = (args, tuple(sorted(kwargs.items())))
            if for_each_device:
                from cupysim import devices

                key = (devices.current(), key)
            with lock:
                if key in cache:
                    return cache[key]
            value = f(*args, **kwargs)
            with lock:
                cache.setdefault(key, value)
            return value

        return wrapper

    return decorator


# _util.pyx: CuPy's experimental slice-copy path, off unless CUPY_EXPERIMENTAL_SLICE_COPY=1
# (the simulator's copies give the same values either way)
ENABLE_SLICE_COPY = bool(int(os.environ.get("CUPY_EXPERIMENTAL_SLICE_COPY", 0)))
