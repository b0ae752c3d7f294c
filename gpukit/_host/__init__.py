"""Host machinery below the backends, shared by the numpy backend and the layers above.

Owns the virtual CPU devices (:mod:`~gpukit._host.virtual`: ``GPUKIT_CPU_DEVICES``, the
array type placed on one) and the activations' host formulas
(:mod:`~gpukit._host.activations`, the numpy backend's kernels and ``gpukit.nn``'s host
layers both compute them), with the compiled host kernels they run where built
(:mod:`~gpukit._host.native`) and the threads that run them
(:mod:`~gpukit._host.parallel`). None of it is part of the backend contract; the numpy
backend and gpukit's own layers (placement, ``gk.nn``) import it, so it sits between the
two.

May use: the backend contract :mod:`gpukit.backend` and :mod:`gpukit.errors`.
"""
