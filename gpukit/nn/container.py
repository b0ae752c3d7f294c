"""Sequential: a chain of modules, with Linear + activation pairs fused."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from . import _act, _gemm
from .layers import Linear, _Activation
from .module import Module, Parameter, on_grad_device

__all__ = ["Sequential"]

#: Counts the appends to any Sequential: a plan made before one may miss a module that a
#: nested Sequential now holds at a second position (Sequential._plan, _reused)
_layout = 0


class _LinearAct:
    """One step for a Linear followed by an activation: ``act(x @ W.T + b)``.

    On the host the bias add and the activation run in place on the product; on a
    device they are one fused kernel each way (``gk.kernels.bias_activation``).
    """

    __slots__ = ("act", "linear", "saved")

    def __init__(self, linear: Linear, act: _Activation) -> None:
        self.linear, self.act, self.saved = linear, act, None

    def forward(self, x: Any) -> Any:
        lin = self.linear
        lin._x = x
        bias = None if lin.bias is None else lin.bias.data
        y, self.saved = _act.forward(
            self.act._name,
            _gemm.matmul(x, lin.weight.data.T),
            bias,
            self.act.negative_slope,
            overwrite=True,
        )
        return y

    def backward(
        self, grad_output: Any, *, need_input_grad: bool = True, overwrite: bool = False
    ) -> Any:
        """``overwrite``: ``grad_output`` is a temporary of ours that may be reused."""
        lin, act = self.linear, self.act
        bias = None if lin.bias is None else lin.bias.data
        gz, gb = _act.backward(
            act._name,
            grad_output,
            self.saved,
            bias,
            act.negative_slope,
            want_bias=bias is not None,
            overwrite=overwrite,
            bias_out=None if lin.bias is None else lin.bias._grad_target(),
        )
        return lin._backward(gz, need_input_grad, gb)


class Sequential(Module):
    """Modules applied one after the other; backward runs them in reverse.

    A :class:`~gpukit.nn.Linear` directly followed by ReLU, LeakyReLU, GELU, SiLU,
    Tanh or Sigmoid runs as one fused step (bias, activation and their gradients in
    one pass). Parameter names are the positions: ``"0.weight"``, ``"2.bias"``.

    Parameters
    ----------
    *modules : Module
        The layers, in order.

    Raises
    ------
    TypeError
        An argument is not a Module.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> model = gk.nn.Sequential(gk.nn.Linear(4, 8, seed=0), gk.nn.ReLU(),
    ...                          gk.nn.Linear(8, 2, seed=1))
    >>> x = np.ones((5, 4), dtype="float32")
    >>> y = model(x)
    >>> grad_x = model.backward(np.ones_like(y), need_input_grad=True)
    >>> grad_x.shape, model[0].weight.grad.shape
    ((5, 4), (8, 4))
    """

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential argument {i} must be a Module, got {type(m)!r}")
        self._layers = list(modules)
        self._steps: list[Any] | None = None
        self._reused: str | None = None  # what _plan found used at two positions
        self._layout = _layout  # the appends counted when _plan last ran

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end; returns ``self``."""
        if not isinstance(module, Module):
            raise TypeError(f"Sequential.append needs a Module, got {type(module)!r}")
        self._layers.append(module)
        self._steps = None
        global _layout
        _layout += 1  # a Sequential holding this one may now hold a module twice: re-plan
        return self

    def __getitem__(self, index: int) -> Module:
        return self._layers[index]

    def __len__(self) -> int:
        return len(self._layers)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._layers)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for i, m in enumerate(self._layers):
            yield str(i), m

    def _anchor(self) -> Parameter | None:
        # asked of the layers on every call, never kept: a layer's parameter may be
        # replaced (m[0].weight = ...) without the container seeing it
        for layer in self._layers:
            found = layer._anchor()
            if found is not None:
                return found
        return None

    def _plan(self) -> list[Any]:
        steps: list[Any] = []
        # (position, the modules whose attributes the step's forward pass sets)
        keepers: list[tuple[int, Iterable[Module]]] = []
        layers = self._layers
        i = 0
        while i < len(layers):
            m = layers[i]
            nxt = layers[i + 1] if i + 1 < len(layers) else None
            if type(m) is Linear and isinstance(nxt, _Activation):
                steps.append(_LinearAct(m, nxt))
                keepers.append((i, (m,)))  # the activation's state is the step's own
                i += 2
            else:
                steps.append(m)
                keepers.append((i, m.modules()))
                i += 1
        self._layout, self._reused = _layout, _reused(keepers)
        return steps

    def forward(self, x: Any) -> Any:
        steps = self._steps
        if steps is None or self._layout != _layout:
            steps = self._steps = self._plan()
        for step in steps:
            x = step.forward(x)
        return x

    @on_grad_device
    def backward(self, grad_output: Any, *, need_input_grad: bool = False) -> Any:
        """Run the layers' backward in reverse; the model's input gradient only when asked.

        ``need_input_grad=True`` returns the gradient with respect to the input of the
        last forward pass; by default (False) it is not computed and None is returned,
        which saves the first layer's ``grad @ weight`` product (PyTorch, too, computes
        an input's gradient only when that input requires one).
        """
        steps = self._steps
        if steps is None:
            raise RuntimeError("Sequential.backward called before any forward pass")
        if self._reused is not None:
            raise RuntimeError(self._reused)
        g, fresh = grad_output, False
        for i in range(len(steps) - 1, -1, -1):
            step = steps[i]
            need = need_input_grad or i > 0
            if type(step) is _LinearAct:
                g = step.backward(g, need_input_grad=need, overwrite=fresh)
            else:
                g = step.backward(g, need_input_grad=need)
            # a Linear's input gradient is a new product (g @ W) the next step may reuse
            fresh = type(step) in (Linear, _LinearAct)
        return g


def _reused(keepers: list[tuple[int, Iterable[Module]]]) -> str | None:
    """Why a backward pass through the steps would be wrong, or None: a module whose
    forward pass keeps its inputs (a layer, one inside it, a fused step's Linear), at two
    positions, keeps only the last, so the gradients of the earlier position would be
    computed from the later one's. A fused step keeps its activation's state itself: an
    activation in several fused steps is no reuse."""
    seen: dict[int, int] = {}
    for position, modules in keepers:
        for m in modules:
            first = seen.setdefault(id(m), position)
            if first != position:
                return (
                    f"Sequential.backward: one {type(m).__name__} instance is used at "
                    f"positions {first} and {position}; a module keeps only its last "
                    "forward pass's inputs, so the gradients of position "
                    f"{first} would be computed from position {position}'s. Use one "
                    "instance per position (copy.deepcopy(module) gives one with its own "
                    "parameters); the forward pass alone (model(x), predict) is right"
                )
    return None
