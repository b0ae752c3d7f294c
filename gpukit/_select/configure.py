"""Settings applied to a backend when the registry creates it: ``GPUKIT_MEMORY_LIMIT``,
``GPUKIT_TF32``; ``GPUKIT_TRANSFER_GUARD`` is checked there too.

``GPUKIT_MEMORY_LIMIT`` is read when a device backend is first created, before gpukit
allocates anything with it, and applied to every device's pool. On CuPy the cap is
``MemoryPool.set_limit``: an allocation that would take the pool above it fails (and,
inside a gpukit operation, becomes :class:`gpukit.OutOfMemoryError`). When set, it
overrides ``CUPY_GPU_MEMORY_LIMIT`` (CuPy's own variable, applied when each device's
pool is created); when unset, CuPy's applies and is reported. ``gk.set_memory_limit``
(:mod:`gpukit._runtime.memlimit`) parses its argument with :func:`parse_limit` too.

``GPUKIT_TF32`` (``1``/``0``, default ``0``) is gpukit's one global for reduced precision:
whether float32 and complex64 matrix products whose call names no ``precision`` use
TF32. It is read when a backend is created; ``gpukit info`` shows it. CuPy's own
``CUPY_TF32`` does not turn TF32 on for gpukit's calls.

``GPUKIT_TRANSFER_GUARD`` (``allow``, ``log``, ``disallow``; default ``allow``) is the
transfer guard of contexts that set none (:mod:`gpukit._runtime.transfer` applies it). It is
read when a backend is created, as the other settings are (so a typo fails at the first
call rather than at the first transfer, and a transfer reads no environment), and kept
until the next backend is created.
"""

from __future__ import annotations

import numbers
import os
import re

from ..backend import Backend

__all__ = [
    "ENV_VAR",
    "GUARD_MODES",
    "GUARD_VAR",
    "TF32_VAR",
    "Limit",
    "configure",
    "guard_mode",
    "parse_limit",
    "resolve_limit",
    "tf32",
    "transfer_guard",
]

ENV_VAR = "GPUKIT_MEMORY_LIMIT"
TF32_VAR = "GPUKIT_TF32"
GUARD_VAR = "GPUKIT_TRANSFER_GUARD"
GUARD_MODES = ("allow", "log", "disallow")
_SWITCH = {"1": True, "true": True, "yes": True, "on": True,
           "0": False, "false": False, "no": False, "off": False, "": False}  # fmt: skip

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


def tf32() -> bool:
    """Whether ``GPUKIT_TF32`` turns TF32 on for products that name no precision.

    Raises
    ------
    ValueError
        The variable is set to something other than 1/0, true/false, yes/no or on/off.
    """
    value = os.environ.get(TF32_VAR, "").strip().lower()
    if value not in _SWITCH:
        raise ValueError(
            f"{TF32_VAR} must be 1 or 0 (true/false, yes/no, on/off); got {os.environ[TF32_VAR]!r}"
        )
    return _SWITCH[value]


def transfer_guard() -> str:
    """The guard mode ``GPUKIT_TRANSFER_GUARD`` sets (``allow`` when unset or empty).

    Raises
    ------
    ValueError
        The variable names none of the modes.
    """
    value = os.environ.get(GUARD_VAR, "").strip().lower() or "allow"
    if value not in GUARD_MODES:
        raise ValueError(
            f"{GUARD_VAR} must be one of {', '.join(GUARD_MODES)}; got {os.environ[GUARD_VAR]!r}"
        )
    return value


_guard_mode: str | None = None  # GPUKIT_TRANSFER_GUARD when the latest backend was created


def guard_mode() -> str:
    """The guard mode ``GPUKIT_TRANSFER_GUARD`` set when the latest backend was created
    (read now when none was: a backend object handed to ``use_backend`` directly).

    Raises
    ------
    ValueError
        The variable names none of the modes.
    """
    global _guard_mode
    if _guard_mode is None:
        _guard_mode = transfer_guard()
    return _guard_mode


def configure(backend: Backend) -> None:
    """Apply ``GPUKIT_TF32`` and ``GPUKIT_MEMORY_LIMIT`` to a newly created backend.

    Called by the registry before the backend is handed out, so before gpukit's first
    allocation with it. The values, and ``GPUKIT_TRANSFER_GUARD``'s, are checked for every
    backend, so a typo is an error even on the numpy backend, where there is no pool to
    cap, no TF32 and no transfer; the guard's mode is kept for :func:`guard_mode`.
    """
    global _guard_mode
    _guard_mode = transfer_guard()
    backend.set_tf32(tf32())
    limit = parse_limit(os.environ.get(ENV_VAR), ENV_VAR)
    if limit is None or not backend.is_device:
        return
    for device in range(backend.device_count()):
        backend.set_memory_limit(device, resolve_limit(limit, backend, device, ENV_VAR))
