"""The CuPy simulator's machinery (not a CuPy name): configuration, devices, streams,
memory, and what tests may ask of the simulation.

``tests/cupysim`` on ``sys.path`` makes ``import cupy`` / ``import cupyx`` load the
simulated CuPy 14 next to this package (docs/contributing_gpu.rst).
"""

from __future__ import annotations

from .config import config
from .cost import GPUS, Estimate, estimate
from .errors import StreamHazard, UndefinedResult
from .launchcheck import launch_check_only
from .placement import DevicePlacementError
from .records import clear_tf32_requests, tf32_requests
from .tracing import Summary, Trace, trace

__all__ = [
    "GPUS",
    "DevicePlacementError",
    "Estimate",
    "StreamHazard",
    "Summary",
    "Trace",
    "UndefinedResult",
    "clear_tf32_requests",
    "config",
    "estimate",
    "launch_check_only",
    "tf32_requests",
    "trace",
]
