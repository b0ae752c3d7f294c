"""Flat buffers: the parameters of one dtype and device laid end to end in one array.

An optimizer that updates every parameter in one kernel launch needs the parameters,
their gradients and its state each in one array: :class:`FlatBuffer` allocates those
arrays once and makes each ``Parameter.data`` a view of its segment, and gives each
parameter a gradient *slot*, the matching view of the gradient buffer, where layers
write the gradient directly (``Parameter._grad_target``), so that the update reads
the gradients with no copy. Segments start on 256-byte boundaries (what cuBLAS and
vectorised loads prefer); the padding between them holds zeros in every buffer, which
an update leaves at zero.

This is the layout of PyTorch's DDP gradient buckets (``gradient_as_bucket_view``) and
of apex's flat-buffer optimizers; PyTorch's fused Adam reaches the same one launch with
lists of pointers instead (``multi_tensor_apply``), which needs a host-to-device copy
of the pointer table each step where the tensors move, as gradients do.

What a user sees: ``p.data`` is a view (in-place changes, ``load_state_dict`` and
``state_dict`` are unaffected); ``p.grad`` after a backward pass is the slot, which the
next backward pass overwrites after ``zero_grad`` (copy it to keep it); an array
assigned to ``p.data`` is taken into the buffer at the next optimizer step (its values
copied, ``p.data`` pointed back at the segment): see :meth:`FlatBuffer.intact`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter, is_
from typing import Any

from .. import _dispatch
from .module import Parameter, assign, on_device_of

__all__ = ["FlatBuffer", "flatten"]

_ALIGN_BYTES = 256
_data = attrgetter("data")


def _key(data: Any) -> tuple[Any, ...]:
    """What parameters must share to live in one buffer: array type, device, dtype."""
    owner = _dispatch.owner_of(data)
    return type(data), None if owner is None else owner.device_of(data), data.dtype


def _flattenable(data: Any) -> bool:
    """A native, writeable, C-contiguous floating array (others are updated on their own,
    and refused there with the reason)."""
    flags = getattr(data, "flags", None)
    return (
        hasattr(data, "dtype")
        and data.dtype.kind == "f"
        and flags is not None
        and flags.c_contiguous
        and getattr(flags, "writeable", True)
    )


class FlatBuffer:
    """Parameters of one array type, device and dtype in one data and one gradient buffer.

    Parameters
    ----------
    params : sequence of Parameter
        Their current values are copied in and each ``data`` becomes a view.

    Attributes
    ----------
    params : list of Parameter
    data, grad : array
        The flat buffers (1-D).
    state : dict of str to (array, list of array)
        Flat optimizer state buffers (``exp_avg``...) and their views, made by
        :meth:`state_buffer`.
    kept : dict
        What an optimizer derives from the buffer's array type and device (its update
        kernel), kept for the buffer's lifetime: a buffer never moves (a moved parameter
        gets a new buffer, :meth:`rebuilt`).
    """

    __slots__ = ("data", "grad", "kept", "params", "segments", "state", "views")

    def __init__(self, params: Sequence[Parameter]) -> None:
        self.params = list(params)
        first = self.params[0].data
        align = max(_ALIGN_BYTES // first.dtype.itemsize, 1)
        self.segments: list[tuple[int, int, tuple[int, ...]]] = []
        total = 0
        for p in self.params:
            self.segments.append((total, p.data.size, tuple(p.data.shape)))
            total += -(-p.data.size // align) * align
        xp = _dispatch.namespace(first)
        with on_device_of(first):  # CuPy allocates on the current device
            # *_like: a virtual CPU device's array type (and device) carries over
            self.data = xp.zeros_like(first, shape=(total,))
            self.grad = xp.zeros_like(first, shape=(total,))
            self.views = self._views(self.data)
            for p, view in zip(self.params, self.views, strict=True):
                view[...] = p.data
        self.state: dict[str, tuple[Any, list[Any]]] = {}
        self.kept: dict[str, Any] = {}

    def attach(self) -> FlatBuffer:
        """Make each parameter's ``data`` its view and its gradient slot this buffer's.

        Separate from allocating, so that a caller can allocate every buffer it needs
        before changing any parameter (a failed allocation leaves them as they were)."""
        grads = self._views(self.grad)
        for p, view, slot in zip(self.params, self.views, grads, strict=True):
            p.data = view
            p._slot = (view, slot, self)
        return self

    def _views(self, flat: Any) -> list[Any]:
        return [flat[o : o + n].reshape(shape) for o, n, shape in self.segments]

    def intact(self) -> bool:
        """Whether every parameter's ``data`` is still its view (not replaced)."""
        return all(map(is_, map(_data, self.params), self.views))

    def state_buffer(self, name: str) -> tuple[Any, list[Any]]:
        """Flat state buffer ``name`` (zeros when made) and its views, one per parameter."""
        found = self.state.get(name)
        if found is None:
            with on_device_of(self.data):
                flat = _dispatch.namespace(self.data).zeros_like(self.data)
            found = self.state[name] = (flat, self._views(flat))
        return found

    def rebuilt(self) -> FlatBuffer:
        """A new buffer of the same parameters with their current values (some ``data``
        was replaced, perhaps moved: the new buffer is where the first parameter is now),
        its state copied over."""
        fresh = FlatBuffer(self.params)
        for name, (_, views) in self.state.items():
            for dst, src in zip(fresh.state_buffer(name)[1], views, strict=True):
                assign(dst, src, name)
        return fresh.attach()


def flatten(params: Iterable[Parameter]) -> tuple[list[FlatBuffer], list[Parameter]]:
    """Flat buffers of ``params``, one per (array type, device, dtype), in first-seen
    order; and the parameters left on their own (not writeable C-contiguous arrays)."""
    groups: dict[tuple[Any, ...], list[Parameter]] = {}
    loose = []
    for p in params:
        if _flattenable(p.data):
            groups.setdefault(_key(p.data), []).append(p)
        else:
            loose.append(p)
    buffers = [FlatBuffer(ps) for ps in groups.values()]  # all allocated before any attach
    return [b.attach() for b in buffers], loose
