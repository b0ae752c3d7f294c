"""``cupyx.scipy`` (simulated)."""

from __future__ import annotations


def __getattr__(name):
    if name in ("fft", "linalg", "sparse", "special"):
        import importlib

        return importlib.import_module(f"cupyx.scipy.{name}")
    raise AttributeError(f"module 'cupyx.scipy' has no attribute {name!r}")
