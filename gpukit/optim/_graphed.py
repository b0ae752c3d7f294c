"""An optimizer's step with its per-step values in device memory, to be captured in a graph.

A training step captured as a CUDA graph (:class:`gpukit.nn.graphed.GraphedStep`) replays
its kernels with the arguments they had when captured. What changes from one step to the
next therefore lives on the device: each flat buffer's *clock* (``float64[2]``: the
learning rate and the step count), which the update's launcher advances on the device
(``adam_update_graphed`` / ``sgd_update_graphed`` of the cupy backend). The host keeps
``optimizer.state`` as an eager step would (step counts, the log that takes back the
counts of updates a device skipped), and before a replay writes into the clock what the
host changed since (a scheduler's learning rate, a step count after an eager step or a
``load_state_dict``): one small fill each, none in the steady state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dispatch
from .._runtime import device_status as _status
from ..kernels._checks import check_range
from ..kernels._direct import kernel as _kernel
from ..nn.module import on_device_of

__all__ = ["DeviceUpdate"]

#: The launchers of the device-clock updates, by the eager update's kernel.
_GRAPHED = {"adam_update": "adam_update_graphed", "sgd_update": "sgd_update_graphed"}


class _Entry:
    """One flat buffer's update: its group, clock and the host's mirror of the clock."""

    __slots__ = ("arrays", "clock", "count", "fb", "group", "lr")

    def __init__(self, group: dict[str, Any], fb: Any, arrays: list[Any], count: int, lr: float):
        self.group, self.fb, self.arrays = group, fb, arrays
        self.count, self.lr = count, lr  # the next update's number, the clock's rate
        with on_device_of(fb.data):
            xp = _dispatch.namespace(fb.data)
            self.clock = xp.asarray(np.array([lr, count - 1], dtype=np.float64))


class DeviceUpdate:
    """``opt``'s update of every parameter with its learning rate and step count read
    from the device; made after at least one eager step (the state exists).

    Raises NotImplementedError with the reason where ``opt`` has none: an optimizer of
    its own, a parameter outside the flat buffers or of another dtype than float32 or
    float64, parameters at different step counts, a momentum buffer not yet filled.
    """

    def __init__(self, opt: Any, status: _status.Status) -> None:
        name = _GRAPHED.get(getattr(opt, "_kernel", ""))
        if name is None or not hasattr(opt, "_layout"):
            raise NotImplementedError(
                f"{type(opt).__name__} has no update with its values on the device "
                "(gk.optim's SGD, Adam and AdamW have)"
            )
        self.opt, self.status, self.name = opt, status, name
        self.hyper = [self._constants(g) for g in opt.param_groups]
        self.entries: list[_Entry] = []
        for k, group in enumerate(opt.param_groups):
            names = opt._arrays(opt._hyper(group))
            for fb, members in opt._layout(k):
                if fb is None or fb.data.dtype not in (np.float32, np.float64):
                    raise NotImplementedError(
                        "a parameter is not in the optimizer's float32/float64 flat buffers "
                        "(not a writeable C-contiguous array, or float16)"
                    )
                counts = {opt._count(opt.state.get(p)) for p in members}
                if len(counts) != 1:
                    raise NotImplementedError("the parameters are at different step counts")
                count = counts.pop()
                if names == ("momentum_buffer",) and count == 1:
                    raise NotImplementedError("the momentum buffers are not filled yet")
                arrays = [fb.state_buffer(n)[0] for n in names]
                self.entries.append(_Entry(group, fb, arrays, count, self._lr(group)))

    def _lr(self, group: dict[str, Any]) -> float:
        return check_range(self.opt._op, group["lr"], "lr", 0.0)

    def _constants(self, group: dict[str, Any]) -> tuple[Any, ...]:
        """What the captured kernels take as arguments: everything but the rate."""
        return self.opt._hyper(group)[1:]

    def launch(self) -> None:
        """The update of every flat buffer (device work only: to be captured)."""
        guard = self.status.buffer
        for e in self.entries:
            for p in e.fb.params:
                if p.grad is not p._slot[1]:
                    raise NotImplementedError(
                        "a gradient was not written into the optimizer's flat gradient buffer"
                    )
            hyper = self._constants(e.group)
            fb = e.fb
            if self.name == "adam_update_graphed":
                beta1, beta2, eps, wd = hyper
                args = (*e.arrays, e.clock, beta1, beta2, eps, wd, self.opt._decoupled)
            else:
                momentum, dampening, nesterov, wd = hyper
                buf = e.arrays[0] if e.arrays else None
                args = (buf, e.clock, momentum, dampening, nesterov, wd)
            _kernel(fb.data, self.name)(fb.data, fb.grad, *args, guard)

    def current(self) -> bool:
        """Whether the captured update is still this optimizer's: the same buffers and
        hyper-parameters but the rate (False: capture again)."""
        opt = self.opt
        if [self._constants(g) for g in opt.param_groups] != self.hyper:
            return False
        laid = [fb for k in range(len(opt.param_groups)) for fb, _ in opt._layout(k)]
        return laid == [e.fb for e in self.entries]

    def before(self) -> None:
        """Before a replay: the clocks told what the host changed (rate, step count)."""
        self.opt._reconcile()
        state = self.opt.state
        for e in self.entries:
            lr = self._lr(e.group)
            count = self.opt._count(state.get(e.fb.params[0]))
            if lr != e.lr or count != e.count:
                with on_device_of(e.clock):
                    e.clock[0] = lr  # a fill each, no copy
                    e.clock[1] = count - 1
                e.lr, e.count = lr, count

    def after(self) -> None:
        """After a replay: the host's state as an eager step leaves it."""
        opt, st = self.opt, self.status
        for e in self.entries:
            count = e.count
            for p in e.fb.params:
                state = opt.state.get(p)
                if state is not None and "step" in state:
                    state["step"] = count
            opt._record(st, [(p, count) for p in e.fb.params])
            e.count = opt._count(opt.state.get(e.fb.params[0]))
