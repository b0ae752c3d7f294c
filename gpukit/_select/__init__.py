"""Selection and the backend registry: which backends exist and which one is active.

Owns the registry of backends (built-ins found without installed metadata, entry-point
plug-ins, ``gk.register_backend``), their creation and the settings applied when one is
created (``GPUKIT_MEMORY_LIMIT``), and the late, context-local selection
(``GPUKIT_BACKEND``, ``gk.set_backend``, ``gk.use_backend``).

May use: the backend contract :mod:`gpukit.backend` and :mod:`gpukit.errors` only. Backend
packages are imported by name through :mod:`importlib`, never statically.
"""
