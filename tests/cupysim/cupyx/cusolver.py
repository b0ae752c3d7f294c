"""``cupyx.cusolver``: which cuSOLVER routines the (simulated) library provides."""

from __future__ import annotations

from cupy.cuda import device as _device

# cupyx/_cusolver.pyx _available_cuda_version: (version added, version removed) per routine,
# compared with cusolverGetVersion (cuSOLVER 11.7+ with the CUDA 12.x/13.x the simulator
# stands for); _available_compute_capability: gesv and gels need compute capability 7.0
_AVAILABLE_CUDA_VERSION = {
    "gesvdj": (0, None), "gesvdjBatched": (0, None), "gesvda": (0, None),
    "potrfBatched": (0, None), "potrsBatched": (0, None), "syevj": (0, None),
    "gesv": (0, None), "gels": (0, None), "csrlsvqr": (0, None), "geev": (11700, None),
}  # fmt: skip
_AVAILABLE_COMPUTE_CAPABILITY = {"gesv": 70, "gels": 70}
_VERSION = 11702


def check_availability(name: str) -> bool:
    """Whether cuSOLVER routine ``name`` is available here (cupyx/_cusolver.pyx)."""
    if name not in _AVAILABLE_CUDA_VERSION:
        raise ValueError(f"No available version information specified for {name}")
    added, removed = _AVAILABLE_CUDA_VERSION[name]
    if added is not None and _VERSION < added:
        return False
    if removed is not None and _VERSION >= removed:
        return False
    needed = _AVAILABLE_COMPUTE_CAPABILITY.get(name)
    return needed is None or int(_device.get_compute_capability()) >= needed
