"""``cupy.fft.config``: the per-thread, per-device cuFFT plan cache (cupy/fft/_cache.pyx).

cupy/fft/_config.py (CuPy 14): ``config`` is an object, not a module, registered in
``sys.modules`` as ``cupy.fft.config``; its switches are context variables, and
``enable_nd_planning`` warns (DeprecationWarning) on every read and write.
"""

from __future__ import annotations

import contextvars
import warnings

from cupysim import cufft as _cufft


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
    """The plan caches of every device on this thread (cupy/fft/_cache.pyx)."""
    _cufft.show_all()


_DEPRECATED = (
    "enable_nd_planning is deprecated as of CuPy 14 and will always be True in the future."
)


class _FFTConfig:
    get_plan_cache = staticmethod(get_plan_cache)
    clear_plan_cache = staticmethod(clear_plan_cache)
    get_plan_cache_size = staticmethod(get_plan_cache_size)
    set_plan_cache_size = staticmethod(set_plan_cache_size)
    get_plan_cache_max_memsize = staticmethod(get_plan_cache_max_memsize)
    set_plan_cache_max_memsize = staticmethod(set_plan_cache_max_memsize)
    show_plan_cache_info = staticmethod(show_plan_cache_info)

    _enable_nd_planning = contextvars.ContextVar("cupy.fft.config.enable_nd_planning", default=True)
    _use_multi_gpus = contextvars.ContextVar("cupy.fft.config.use_multi_gpus", default=False)
    _devices = contextvars.ContextVar("cupy.fft.config.devices", default=None)

    @property
    def enable_nd_planning(self) -> bool:
        warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=2)
        return self._enable_nd_planning.get()

    @enable_nd_planning.setter
    def enable_nd_planning(self, value) -> None:
        warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=2)
        self._enable_nd_planning.set(value)

    @property
    def use_multi_gpus(self) -> bool:
        return self._use_multi_gpus.get()

    @use_multi_gpus.setter
    def use_multi_gpus(self, value) -> None:
        self._use_multi_gpus.set(bool(value))

    @property
    def devices(self):
        """The GPUs of a multi-GPU transform (None unless ``use_multi_gpus``)."""
        return self._devices.get() if self._use_multi_gpus.get() else None


config = _FFTConfig()
