"""DataParallel: one replica of a model per device, each batch split across them.

Scheme (``torch.nn.DataParallel``'s, with gpukit's worker threads):

1. ``forward``: copy the primary's parameters to the other replicas (a broadcast,
   NCCL or peer copies on GPUs), split the batch by rows (uneven allowed; with fewer
   samples than devices only the first ones work), run each replica's forward on
   its device's worker thread, gather the outputs on the first device.
2. The loss is computed there, on the whole batch, as on one device.
3. ``backward``: split the loss gradient like the batch, run each replica's backward
   on its worker, add the parameter gradients into the primary's in device order.

Because every device receives its rows of the *whole-batch* loss gradient, the sum
of the per-device parameter gradients is the whole-batch gradient for either
reduction: with ``reduction="mean"`` each row's gradient already carries ``1/B``,
so device *i*'s contribution is its local mean weighted by its share ``b_i / B``;
with ``"sum"`` it is a plain sum. The optimizer steps only the primary parameters
(one optimizer state, as on one device); the next forward's broadcast makes every
replica identical to it, so a gradient reduce plus a parameter broadcast moves the
same bytes as an all-reduce while Adam's moments exist once, not once per device.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

from .. import _dispatch
from .._runtime.memory import operation
from .._runtime.workers import map_devices
from .._select.selection import get_backend
from ..sharding._array import ShardedArray, split
from ..sharding._layout import check_devices, split_sizes
from ..sharding._reshard import exchange
from ._flat import FlatBuffer, flatten
from .layers import Dropout
from .module import Module, Parameter

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Train ``module`` on several devices: each batch split, gradients summed, one optimizer.

    Parameters
    ----------
    module : Module
        The model. It is moved to ``devices[0]`` in place (its Parameter objects are
        kept, so an optimizer made before wrapping still holds them) and becomes the
        *primary* replica; the other replicas are copies made with ``Module.to``.
    devices : sequence of int, optional
        Devices of the model's backend (its parameters' backend, else the active
        one); all of them when omitted.

    Attributes
    ----------
    module : Module
        The primary replica (on ``devices[0]``).
    devices : tuple of int
        One replica per device, in this order.

    Raises
    ------
    TypeError
        ``module`` is not a Module.
    ValueError
        ``module`` has no parameters; ``devices`` is empty, repeats a device or names
        one out of range.

    Notes
    -----
    Parameter names, ``state_dict`` and ``load_state_dict`` are the wrapped module's,
    without a ``"module."`` prefix (unlike PyTorch), so weights saved from a
    DataParallel model load into the plain model and back. Optimizers take
    ``model.parameters()`` (the primary's). Each forward first copies the primary's
    parameters to the other replicas, so every device computes with the values the
    optimizer last wrote. Dropout draws an independent mask stream on each replica.
    An exception in one device's forward or backward reaches the caller after the
    other devices finished; the accumulated gradients are left as they were.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     net = gk.nn.Sequential(gk.nn.Linear(3, 2, seed=0))
    ...     model = gk.nn.DataParallel(net)
    ...     opt = gk.optim.SGD(model.parameters(), lr=0.1)
    ...     loss_fn = gk.nn.MSELoss()
    ...     x, y = np.ones((5, 3), "float32"), np.zeros((5, 2), "float32")
    ...     loss = loss_fn(model(x), y)
    ...     _ = model.backward(loss_fn.backward(), need_input_grad=False)
    ...     opt.step()
    >>> sorted(model.state_dict()), model.devices
    (['0.bias', '0.weight'], (0,))
    """

    @operation("gk.nn.DataParallel")
    def __init__(self, module: Module, devices: Sequence[int] | None = None) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel needs a Module, got {type(module).__name__}")
        anchor = module._anchor()
        if anchor is None:
            raise ValueError(f"DataParallel needs a module with parameters; {module!r} has none")
        backend = _dispatch.owner_of(anchor.data) or get_backend()
        devs = check_devices(backend, devices)
        self.backend = backend
        self.devices = devs
        self.module = module.to(backend, device=devs[0])
        self.training = module.training
        others = (_replica(module, backend, d, i) for i, d in enumerate(devs[1:], 1))
        self._replicas: tuple[Module, ...] = (module, *others)
        self._params = [r.parameters() for r in self._replicas]
        self._collectives: dict[int, Any] = {}
        # (id of a primary FlatBuffer, replica) -> (that buffer, the replica's gradient
        # bucket of its layout, the bucket's views)
        self._grad_buckets: dict[tuple[int, int], tuple[FlatBuffer, Any, list[Any]]] = {}
        self._sizes: list[int] = []  # rows per device in the last forward

    # -- structure: the wrapped module's, without a prefix --------------------------------------
    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        return self.module.named_parameters(prefix)

    @property
    def replicas(self) -> tuple[Module, ...]:
        """One module per device (``replicas[0]`` is :attr:`module`)."""
        return self._replicas

    def train(self, mode: bool = True) -> DataParallel:
        for r in self._replicas:
            r.train(mode)
        self.training = mode
        return self

    def to(self, backend: Any = None, device: int | None = None, dtype: Any = None) -> Module:
        """Cast every replica to ``dtype``; a DataParallel model does not move.

        Raises
        ------
        ValueError
            ``backend`` or ``device`` given: wrap the moved module again instead.
        """
        if backend is not None or device is not None:
            raise ValueError(
                f"a DataParallel model keeps one replica on each of {self.backend.name}:"
                f"{self.devices}; move the wrapped module and wrap it again"
            )
        for r, d in zip(self._replicas, self.devices, strict=True):
            r.to(self.backend, device=d, dtype=dtype)
        return self

    # -- computation ----------------------------------------------------------------------------
    def _group(self, k: int) -> Any:
        """Collectives over the first ``k`` devices, made once (NCCL setup is costly)."""
        coll = self._collectives.get(k)
        if coll is None:
            coll = self._collectives[k] = self.backend.collectives(self.devices[:k])
        return coll

    @operation("gk.nn.DataParallel.broadcast_parameters")
    def broadcast_parameters(self, k: int | None = None) -> None:
        """Copy the primary's parameters to the other replicas (the first ``k``; all by default).

        ``forward`` calls it; call it to inspect :attr:`replicas` after an optimizer step.
        """
        k = len(self.devices) if k is None else k
        if k < 2:
            return
        coll = self._group(k)
        buckets, loose = self._buckets()
        for fb, members in buckets:
            copies = coll.broadcast(fb.data)  # one call for every parameter of the bucket
            for i in range(1, k):
                views, grads = fb._views(copies[i]), self._mirror(fb, i)
                for j, pos in members:
                    q = self._params[i][j]
                    q.data = views[pos]
                    q._slot = (views[pos], grads[pos], None)  # its layers write the gradient there
        for j in loose:
            copies = coll.broadcast(self._params[0][j].data)
            for i in range(1, k):
                q = self._params[i][j]
                q.data, q._slot = copies[i], None

    def _buckets(self) -> tuple[list[tuple[FlatBuffer, list[tuple[int, int]]]], list[int]]:
        """The primary's parameters by flat buffer (an optimizer's, else made here), each
        with its ``(index in the model, index in the buffer)`` pairs; and the indices of
        those in none (not flattenable), which travel on their own."""
        params = self._params[0]
        if any(p._slot is None or p._slot[0] is not p.data for p in params):
            flatten(p for p in params if p._slot is None or p._slot[0] is not p.data)
        found: dict[int, tuple[FlatBuffer, list[tuple[int, int]]]] = {}
        loose = []
        for j, p in enumerate(params):
            if p._slot is None or p._slot[0] is not p.data:
                loose.append(j)
                continue
            fb = p._slot[2]
            found.setdefault(id(fb), (fb, []))[1].append((j, fb.params.index(p)))
        return list(found.values()), loose

    def _mirror(self, fb: FlatBuffer, i: int) -> list[Any]:
        """Replica ``i``'s gradient bucket of ``fb``'s layout (made once, zeros) as views,
        one per parameter of ``fb``."""
        key = (id(fb), i)
        found = self._grad_buckets.get(key)
        if found is None or found[0] is not fb:
            device = self.devices[i]
            with self.backend.use_device(device):
                flat = self.backend.xp.zeros_like(fb.grad, shape=fb.grad.shape)
                flat = self.backend.to_device(flat, device, copy=False)
            found = self._grad_buckets[key] = (fb, flat, fb._views(flat))
        return found[2]

    def _call_kind(self, x: Any) -> Any:
        """A batch sharded over the model's backend: its rows go to the replicas in one
        exchange (none when it is already split like the replicas)."""
        if not isinstance(x, ShardedArray) or x.backend is not self.backend:
            return super()._call_kind(x)
        dtype = self.module._anchor().data.dtype
        return self.forward(x.astype(dtype, copy=False))

    def forward(self, x: Any) -> Any:
        n = int(x.shape[0]) if hasattr(x, "shape") and len(x.shape) else 0
        if n == 0:
            raise ValueError(f"DataParallel needs a batch with at least one sample; got {x!r}")
        k = min(n, len(self.devices))
        self._sizes = split_sizes(n, k)
        devs = self.devices[:k]
        if k == 1:
            return self.module.forward(x.gather(devs[0]) if isinstance(x, ShardedArray) else x)
        self.broadcast_parameters(k)
        if isinstance(x, ShardedArray):
            pieces = exchange(x, 0, devs, self._sizes)
        else:
            pieces = split(self.backend, x, 0, devs, self._sizes)
        outs = map_devices(
            self.backend, devs, lambda m, xb: m.forward(xb), self._replicas[:k], pieces.shards
        )
        return ShardedArray(self.backend, outs, 0, devs).gather(devs[0])

    def backward(self, grad_output: Any, *, need_input_grad: bool = False) -> Any:
        """Backward on every replica; the input gradient only when asked, as
        :meth:`gpukit.nn.Sequential.backward` (the model's own default is not consulted)."""
        k = len(self._sizes)
        if k == 0:
            raise RuntimeError("DataParallel.backward called before any forward pass")
        if k == 1:
            return self.module.backward(grad_output, need_input_grad=need_input_grad)
        devs = self.devices[:k]
        params = self._params[:k]
        held = [p.grad for p in params[0]]
        # no gradient held (zero_grad was called): the primary's layers write into its
        # slots and the replicas' sums are added there, a bucket at a time; otherwise the
        # gradients are summed apart and added to the held ones
        bucketed = all(g is None for g in held)
        slots = [p._slot for p in params[0]]
        for replica in params:
            for p in replica:
                p.grad = None
                if not bucketed:
                    p._slot = None
        pieces = split(self.backend, grad_output, 0, devs, self._sizes)
        try:
            grads_in = map_devices(
                self.backend,
                devs,
                lambda m, g: m.backward(g, need_input_grad=need_input_grad),
                self._replicas[:k],
                pieces.shards,
            )
            if bucketed:
                self._reduce_buckets(k)
            else:
                totals = [self._reduce(j, [r[j].grad for r in params]) for j in range(len(held))]
        except BaseException:
            for p, g in zip(params[0], held, strict=True):
                p.grad = g
            raise
        finally:
            if not bucketed:
                for p, s in zip(params[0], slots, strict=True):
                    p._slot = s
        if not bucketed:
            for p, g, total in zip(params[0], held, totals, strict=True):
                p.grad = g
                if total is not None:
                    p.accumulate(total)
        if not need_input_grad:
            return None
        return ShardedArray(self.backend, grads_in, 0, devs).gather(devs[0])

    def _reduce_buckets(self, k: int) -> None:
        """Every replica's gradients summed into the primary's, one reduce per bucket; the
        parameters outside buckets one at a time. A gradient a layer made elsewhere than
        its slot is copied there first."""
        params = self._params[:k]
        buckets, loose = self._buckets()
        for fb, members in buckets:
            parts = [fb.grad]
            for j, _ in members:
                self._check_used(j, [r[j].grad for r in params[1:]], start=1)
            for i in range(1, k):
                grads = self._mirror(fb, i)
                for j, pos in members:
                    g, slot = params[i][j].grad, grads[pos]
                    if g is None:  # unused by every replica: nothing to add
                        slot[...] = 0
                    elif g is not slot:
                        slot[...] = g
                parts.append(self._grad_buckets[(id(fb), i)][1])
            for j, _ in members:
                p = params[0][j]
                slot = p._slot[1]
                if p.grad is None:
                    if params[1][j].grad is not None:  # used on the replicas only
                        slot[...] = 0
                        p.grad = slot
                elif p.grad is not slot:
                    slot[...] = p.grad
                    p.grad = slot
            self._group(k).reduce(parts, out=fb.grad)
        for j in loose:
            total = self._reduce(j, [r[j].grad for r in params])
            if total is not None:
                params[0][j].grad = total

    def _check_used(self, j: int, parts: list[Any], start: int = 0) -> None:
        """Parameter ``j`` got a gradient on every replica of ``parts`` or on none."""
        missing = [i + start for i, g in enumerate(parts) if g is None]
        if missing and len(missing) != len(parts):
            name = [n for n, _ in self.named_parameters()][j]
            raise RuntimeError(
                f"parameter {name!r} got a gradient on some replicas but not on devices "
                f"{[self.devices[i] for i in missing]}: DataParallel needs every replica to "
                "use the same parameters"
            )

    def _reduce(self, j: int, parts: list[Any]) -> Any:
        """Parameter ``j``'s gradients summed on the first device, in device order."""
        self._check_used(j, parts)
        if parts[0] is None:
            return None
        return self._group(len(parts)).reduce(parts)

    def extra_repr(self) -> str:
        return f"devices={self.backend.name}:{self.devices}"


def _replica(module: Module, backend: Any, device: int, index: int) -> Module:
    """A copy of ``module`` on ``device``; Dropout layers get a mask stream of their own."""
    memo: dict[int, Any] = {}  # Dropout generators are not copied: each replica makes its own
    for m in module.modules():
        if isinstance(m, Dropout):
            memo[id(m._rngs)] = {}
    replica = copy.deepcopy(module, memo).to(backend, device=device)
    for m in replica.modules():
        if isinstance(m, Dropout):
            m._seed = (m._seed + 0x9E3779B97F4A7C15 * index) % 2**63
    return replica
