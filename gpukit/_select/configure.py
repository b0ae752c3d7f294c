"""Settings applied to a backend when the registry creates it: ``GPUKIT_MEMORY_LIMIT``.

``GPUKIT_MEMORY_LIMIT`` is read when a device backend is first created, before gpukit
allocates anything with it, and applied to every device's pool. On CuPy the cap is
``MemoryPool.set_limit``: an allocation that would take the pool above it fails (and,
inside a gpukit operation, becomes :class:`gpukit.OutOfMemoryError`). When set, it
overrides ``CUPY_GPU_MEMORY_LIMIT`` (CuPy's own variable, applied when each device's
pool is created); when unset, CuPy's applies and is reported. ``gk.set_memory_limit``
(:mod:`gpukit._runtime.memlimit`) parses its argument with :func:`parse_limit` too.
"""

from __future__ import annotations

import numbers
import os
import re

from ..backend import Backend

__all__ = ["ENV_VAR", "Limit", "configure", "parse_limit", "resolve_limit"]

ENV_VAR = "GPUKIT_MEMORY_LIMIT"

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(%|[a-z]*)\s*$", re.IGNORECASE)
_FORMS = "bytes (4000000000), a size with a unit (4GiB, 512MB) or a percentage (80%)"

# A parsed limit: ("bytes", n) or ("percent", p); None means no limit.
Limit = tuple[str, float] | None


def parse_limit(value: object, source: str) -> Limit:
    """Parse a limit given as ``source`` (the variable or argument, for messages).

    Raises
    ------
    ValueError
        ``value`` is not a positive size or a percentage in (0, 100].
    """
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral | str):
        raise ValueError(
            f"{source} must be {_FORMS}, or None for no limit; got {value!r} "
            f"({type(value).__name__})"
        )
    if isinstance(value, numbers.Integral):
        number, unit = int(value), ""
    else:
        match = _PATTERN.match(value)
        if match is None or match[2].lower() not in {*_UNITS, "%"}:
            raise ValueError(f"{source} must be {_FORMS}; got {value!r}")
        text, unit = match[1], match[2].lower()
        number = float(text) if "." in text else int(text)
    if unit == "%":
        if not 0 < number <= 100:
            raise ValueError(f"{source} as a percentage must be in (0%, 100%]; got {value!r}")
        return ("percent", number)
    nbytes = int(number) * _UNITS[unit] if isinstance(number, int) else int(number * _UNITS[unit])
    if nbytes <= 0:
        raise ValueError(
            f"{source} must be a positive number of bytes (None removes the limit); got {value!r}"
        )
    return ("bytes", nbytes)


def resolve_limit(limit: Limit, backend: Backend, device: int, source: str) -> int | None:
    """Bytes for ``limit`` on ``device``: percentages are of the device's total memory."""
    if limit is None:
        return None
    kind, amount = limit
    if kind == "bytes":
        return int(amount)
    total = backend.devices()[device].memory_total
    if total is None:
        raise ValueError(
            f"{source} is a percentage ({amount:g}%), but backend {backend.name!r} cannot "
            f"report the total memory of device {device}; give bytes instead"
        )
    return int(total * amount / 100)


def configure(backend: Backend) -> None:
    """Apply ``GPUKIT_MEMORY_LIMIT`` to every device of a newly created backend.

    Called by the registry before the backend is handed out, so before gpukit's first
    allocation with it. The value is checked for every backend, so a typo is an error
    even on the numpy backend, where it has no pool to cap.
    """
    limit = parse_limit(os.environ.get(ENV_VAR), ENV_VAR)
    if limit is None or not backend.is_device:
        return
    for device in range(backend.device_count()):
        backend.set_memory_limit(device, resolve_limit(limit, backend, device, ENV_VAR))
