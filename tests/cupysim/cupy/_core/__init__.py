"""``cupy._core``: the kernel classes (``raw``, ``_kernel``, ``_reduction``)."""
