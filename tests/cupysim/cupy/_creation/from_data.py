"""cupy/_creation/from_data.py: the creation functions ``cupy`` re-exports, by their home."""

from __future__ import annotations

from cupy import array, asanyarray, asarray, ascontiguousarray, copy  # noqa: F401
