"""``cupyx.errstate``/``seterr``/``geterr`` as CuPy 14.2's cupyx/_ufunc_config.py behaves.

The state is per thread. Only ``linalg`` can be set ("ignore", CuPy's default: cuSOLVER's
``devInfo`` is not read back, or "raise"); giving any of the floating-point categories
(``divide``, ``over``, ``under``, ``invalid``) raises NotImplementedError, as CuPy does,
and they read as None. ``seterr`` returns the previous state; ``errstate`` restores it.
"""

from __future__ import annotations

import contextlib
import threading

_FLOAT_CATEGORIES = ("divide", "over", "under", "invalid")
_state = threading.local()


def get_config_linalg() -> str:
    return getattr(_state, "linalg", "ignore")


def geterr() -> dict[str, str | None]:
    return {**dict.fromkeys(_FLOAT_CATEGORIES), "linalg": get_config_linalg()}


def seterr(*, divide=None, over=None, under=None, invalid=None, linalg=None):
    previous = geterr()
    if any(v is not None for v in (divide, over, under, invalid)):
        raise NotImplementedError()
    if linalg is not None:
        if linalg not in ("ignore", "raise"):
            raise NotImplementedError()
        _state.linalg = linalg
    return previous


@contextlib.contextmanager
def errstate(*, divide=None, over=None, under=None, invalid=None, linalg=None):
    previous = seterr(divide=divide, over=over, under=under, invalid=invalid, linalg=linalg)
    try:
        yield
    finally:
        seterr(linalg=previous["linalg"])
