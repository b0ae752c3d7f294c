"""One chunk through gpukit: on the chunk's own backend and device, its type checked.

Every Dask implementation builds its graph with :class:`OnChunks` as the task function and
passes ``meta=`` (a 0-size array of the chunk type, :func:`meta`), so the chunk type of the
result is known without computing. At compute time, on a worker, :class:`OnChunks`:

* checks that each chunk of a Dask argument is of the type its ``meta`` announced (a Dask
  array whose chunks are partly NumPy, partly CuPy is refused with a ``TypeError``, never
  recomputed on another backend);
* runs the gpukit function where the chunk lives: CuPy chunks on the cupy backend and the
  GPU that holds them (on a ``dask_cuda`` worker, that worker's GPU), NumPy chunks on the
  worker's host backend (numpy unless a host plug-in is active);
* for a device chunk, waits for the device before and after: a chunk received from
  another worker was uploaded by Dask's communication thread on its own stream, and the
  result goes on to other threads, devices or processes; none of them orders with this
  thread's stream (under ``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1`` nothing would);
* checks that the result is of the announced type too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._runtime.placement import owner_of
from .._select import registry as _registry
from .._select.selection import get_backend, use_backend
from ..backend import Backend
from ..errors import GpukitError
from ._kind import is_dask_array_type

__all__ = [
    "OnChunks",
    "carries_chunks",
    "chunk_type",
    "dask_arrays",
    "is_dask",
    "meta",
    "type_name",
]


def is_dask(x: Any) -> bool:
    """Whether ``x`` is a Dask array."""
    return is_dask_array_type(type(x))


def carries_chunks(x: Any) -> bool:
    """Whether ``x`` fixes the chunk type: a Dask array or a device array (not host data)."""
    return is_dask(x) or owner_of(x) is not None


def type_name(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def chunk_type(op: str, arrays: Mapping[str, Any]) -> type:
    """The one chunk type of the Dask arrays in ``arrays`` (by name); TypeError on a mixture.

    Plain host data (NumPy arrays, lists) is not asked: like any host input it is moved to
    the chunks' device. A device array (CuPy) must be of the chunks' type.
    """
    found: tuple[str, type] | None = None
    for name, x in arrays.items():
        if is_dask(x):
            t = type(x._meta)
        elif owner_of(x) is not None:
            t = type(x)
        else:
            continue
        if found is None:
            found = (name, t)
        elif t is not found[1]:
            raise TypeError(
                f"{op}: {name!r} has {type_name(t)} chunks but {found[0]!r} has "
                f"{type_name(found[1])} chunks; chunks on mixed backends are not computed "
                "together: convert one, e.g. x.map_blocks(cupy.asarray) or "
                "x.map_blocks(cupy.asnumpy), with meta= of the new type"
            )
    if found is None:
        raise TypeError(f"{op}: none of {', '.join(map(repr, arrays))} is a Dask array")
    return found[1]


def dask_arrays(op: str, arrays: Mapping[str, Any]) -> dict[str, Any]:
    """``arrays`` with every non-Dask array made a one-chunk Dask array (None kept)."""
    import dask.array as da

    out = {}
    for name, x in arrays.items():
        if x is None or is_dask(x):
            out[name] = x
            continue
        if not hasattr(x, "shape"):
            x = np.asarray(x)
        out[name] = da.from_array(x, chunks=x.shape or (), asarray=False, name=False)
    return out


def meta(like: Any, ndim: int, dtype: Any) -> Any:
    """A 0-size array of ``like``'s chunk type, with ``ndim`` dimensions and ``dtype``."""
    from dask.array.utils import meta_from_array

    return meta_from_array(like._meta if is_dask(like) else like, ndim=ndim, dtype=dtype)


def _host_backend() -> Backend:
    """The worker's active backend when it computes on the host, else numpy."""
    with contextlib.suppress(GpukitError, ValueError):
        backend = get_backend()
        if not backend.is_device:
            return backend
    return _registry.load("numpy")


class OnChunks:
    """The task function of a gpukit operation on chunks (picklable: ships to workers).

    Parameters
    ----------
    op : str
        The public operation, for messages.
    fn : callable
        ``fn(*blocks, **kwargs)``: the gpukit call on one set of chunks (a module-level
        function or a :func:`functools.partial` of one, so it pickles by reference).
    expected : type
        The chunk type announced by the inputs' ``meta`` (and the result's).
    names : sequence of str
        The name of each positional block, for messages.
    checked : sequence of bool
        Which blocks come from Dask arguments (their type is checked); the others are
        host data the chunk's backend moves where it runs.
    """

    def __init__(
        self,
        op: str,
        fn: Callable[..., Any],
        expected: type,
        names: Sequence[str],
        checked: Sequence[bool],
    ) -> None:
        self.op, self.fn, self.expected = op, fn, expected
        self.names, self.checked = tuple(names), tuple(checked)

    def __call__(self, *blocks: Any, **kwargs: Any) -> Any:
        for block, name, checked in zip(blocks, self.names, self.checked, strict=True):
            if checked and type(block) is not self.expected:
                raise TypeError(
                    f"{self.op}: a chunk of {name!r} is a {type_name(type(block))} but the "
                    f"Dask array's meta announced {type_name(self.expected)} chunks; chunks on "
                    "mixed backends are not recomputed elsewhere: make every chunk one type "
                    "(x.map_blocks(cupy.asarray, meta=...)) before calling gpukit"
                )
        first = next(b for b, c in zip(blocks, self.checked, strict=True) if c)
        owner = owner_of(first)
        if owner is None:
            with use_backend(_host_backend()):
                out = self.fn(*blocks, **kwargs)
        else:
            device = owner.device_of(first)
            # A chunk Dask received from another worker was copied to the device by its
            # communication thread, on that thread's stream: with the per-thread default
            # stream nothing orders that copy before this thread's reads.
            owner.synchronize(device)
            with use_backend(owner), owner.use_device(device):
                out = self.fn(*blocks, **kwargs)
            # Dask hands the result to other threads, devices or processes, none of which
            # waits on this device's stream: the task ends when its GPU work has.
            owner.synchronize(device)
        for part in out if isinstance(out, tuple) else (out,):
            if type(part) is not self.expected:
                raise TypeError(
                    f"{self.op}: a chunk's result is a {type_name(type(part))} but its meta "
                    f"announced {type_name(self.expected)}; the backend changed the chunk type"
                )
        return out

    def __repr__(self) -> str:  # the task's name in the Dask dashboard
        return f"gpukit[{self.op}]"
