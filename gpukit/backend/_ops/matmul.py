"""Matrix-product default of :class:`gpukit.backend.Backend`, written against ``self.xp``.

The front-end (:func:`gpukit.matmul`) has validated shapes and ``precision``; a backend
overrides :meth:`MatmulOps.matmul` only to honour ``precision="tf32"`` on hardware that has it.
"""

from __future__ import annotations

from typing import Any


class MatmulOps:
    """``xp.matmul`` with NumPy's broadcasting; ``precision`` is a hint the host ignores."""

    xp: Any

    def matmul(self, a: Any, b: Any, precision: str | None) -> Any:
        """``a @ b``; ``precision`` is ``None``, ``"highest"`` or ``"tf32"`` (no-op here)."""
        return self.xp.matmul(a, b)
