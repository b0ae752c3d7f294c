"""``cupy.fft.config``: the per-thread, per-device cuFFT plan cache (cupy/fft/_cache.pyx)."""

from __future__ import annotations

from cupysim import cufft as _cufft

enable_nd_planning = True
use_multi_gpus = False


def get_plan_cache():
    """The plan cache of the current device (and thread)."""
    return _cufft.plan_cache()


def clear_plan_cache() -> None:
    _cufft.plan_cache().clear()


def get_plan_cache_size() -> int:
    return _cufft.plan_cache().get_size()


def set_plan_cache_size(size: int) -> None:
    _cufft.plan_cache().set_size(size)


def get_plan_cache_max_memsize() -> int:
    return _cufft.plan_cache().get_memsize()


def set_plan_cache_max_memsize(size: int) -> None:
    _cufft.plan_cache().set_memsize(size)


def show_plan_cache_info() -> None:
    _cufft.plan_cache().show_info()
