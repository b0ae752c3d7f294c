"""Host machinery below the backends, shared by the numpy backend and the layers above.

Owns the virtual CPU devices (:mod:`~gpukit._host.virtual`: ``GPUKIT_CPU_DEVICES``, the
array type placed on one) and the activations' host formulas
(:mod:`~gpukit._host.activations`, the numpy backend's kernels and ``gpukit.nn``'s host
layers both compute them). Neither is part of the backend contract; both are NumPy code
that the numpy backend and gpukit's own layers (placement, ``gk.nn``) import, so they sit
between the two.

May use: the backend contract :mod:`gpukit.backend` and :mod:`gpukit.errors`.
"""
