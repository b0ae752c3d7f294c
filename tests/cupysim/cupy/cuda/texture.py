"""``cupy.cuda.texture``: texture and surface memory, not simulated.

cupy/cuda/texture.pyx's classes exist so that code importing them loads; making any of
them fails loudly (NotImplementedError). gpukit uses no texture memory.
"""

from __future__ import annotations


class _NotSimulated:
    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError(
            f"cupysim: texture memory (cupy.cuda.texture.{type(self).__name__}) is not simulated"
        )


class ChannelFormatDescriptor(_NotSimulated):
    """cudaChannelFormatDesc (not simulated)."""


class CUDAarray(_NotSimulated):
    """A CUDA array (not simulated)."""


class ResourceDescriptor(_NotSimulated):
    """cudaResourceDesc (not simulated)."""


class TextureDescriptor(_NotSimulated):
    """cudaTextureDesc (not simulated)."""


class TextureObject(_NotSimulated):
    """cudaTextureObject_t (not simulated)."""


class SurfaceObject(_NotSimulated):
    """cudaSurfaceObject_t (not simulated)."""
