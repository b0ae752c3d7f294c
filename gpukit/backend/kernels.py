"""The one registry of gpukit's custom kernels.

Each entry names everything a kernel is made of, so the tests, the sanitizer
script and the docs are generated from one list and cannot forget a kernel:

* the public function ``gk.kernels.<name>``;
* its NumPy reference, a function of the same name in ``gpukit_numpy.kernels``
  (what the numpy backend runs, and what the GPU is tested against);
* its CUDA implementation: a function of the same name in ``gpukit_cupy.kernels``
  launching either CuPy's own kernel types (``cupy.ElementwiseKernel``,
  ``cupy.ReductionKernel``, defined in ``gpukit_cupy.kernels._elementwise``) or
  templated kernels from one ``.cu`` file under ``backends/gpukit_cupy/kernels/``
  (compiled lazily by ``cupy.RawModule`` with the listed name expressions, once
  per device) where a block's threads must cooperate;
* the dtypes it accepts and its launch shape, in words.

:data:`INTERNAL_KERNELS` lists, with the same entries, the backend kernels that only
gk.nn and gk.optim call (no ``gk.kernels`` function).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ACTIVATIONS",
    "FROM_OUTPUT",
    "INTERNAL_KERNELS",
    "KERNELS",
    "KernelSpec",
    "cuda_sources",
    "spec",
]

#: Activation names, in the order of the ``ACT`` template argument of the CUDA code.
ACTIVATIONS: tuple[str, ...] = (
    "identity",
    "relu",
    "leaky_relu",
    "gelu",
    "gelu_tanh",
    "silu",
    "sigmoid",
    "tanh",
)

#: Activations whose derivative is a function of their output: the output is what a layer
#: keeps for its backward pass, and the input can be overwritten.
FROM_OUTPUT = frozenset({"identity", "relu", "sigmoid", "tanh"})
#: Their ``ACT`` numbers: ``bias_act_backward``'s ``OF_OUTPUT`` variants.
_OF_OUTPUT = tuple(i for i, a in enumerate(ACTIVATIONS) if a in FROM_OUTPUT)
_CTYPES = {"float32": "float", "float64": "double"}
_LABELS = ("int", "long long")


@dataclass(frozen=True)
class KernelSpec:
    """What one registered kernel is made of.

    Attributes
    ----------
    name : str
        Public name: ``gk.kernels.<name>``; also the name of its NumPy reference in
        ``gpukit_numpy.kernels`` and of its launcher in ``gpukit_cupy.kernels``.
    kind : str
        The CuPy kernel type(s) it launches: ``"ElementwiseKernel"``,
        ``"ElementwiseKernel + ReductionKernel"`` or ``"RawModule"``.
    why : str
        Why that kind (for the docs).
    source : str or None
        For ``RawModule`` kernels, the ``.cu`` file under ``backends/gpukit_cupy/kernels/``
        holding its CUDA code; None for CuPy's kernel types.
    name_expressions : tuple of str
        Every template instantiation the launcher may ask ``cupy.RawModule`` for
        (empty for CuPy's kernel types).
    dtypes : tuple of str
        Floating dtypes accepted.
    launch : str
        The launch shape, in words.
    fuses : str
        What it fuses, and the bytes it moves (for the docs).
    """

    name: str
    kind: str
    why: str
    source: str | None
    name_expressions: tuple[str, ...]
    dtypes: tuple[str, ...]
    launch: str
    fuses: str


def _each(template: str, dtypes=("float32", "float64"), **axes: tuple[str, ...]) -> tuple:
    """Expand a name-expression template over dtypes and extra axes."""
    out = [template.replace("{T}", _CTYPES[d]) for d in dtypes]
    for key, values in axes.items():
        out = [e.replace("{" + key + "}", str(v)) for e in out for v in values]
    return tuple(out)


_ELEMENTWISE = "ElementwiseKernel"
_ELEMENTWISE_WHY = (
    "one independent result per element: CuPy generates the indexing, broadcasting, dtype "
    "dispatch and strided access, and sizes the launch"
)
_RAW = "RawModule"
_CUPY_LAUNCH = "CuPy's elementwise launch (one thread per element, CuPy's block size)"

KERNELS: dict[str, KernelSpec] = {
    s.name: s
    for s in (
        KernelSpec(
            "bias_activation",
            _ELEMENTWISE,
            _ELEMENTWISE_WHY + "; the bias broadcasts over the rows",
            None,
            (),
            ("float32", "float64"),
            _CUPY_LAUNCH,
            "x + bias and the activation in one pass: reads x, writes y (2 arrays) where "
            "CuPy's expression writes and rereads a temporary per operation (4-10 arrays)",
        ),
        KernelSpec(
            "bias_activation_backward",
            _RAW,
            "grad_x is elementwise, but the bias gradient is its column sum: one launch "
            "computes both only if the threads of a column add their values together, "
            "through shared memory, which CuPy's kernel types cannot express",
            "bias_act.cu",
            _each("bias_act_backward<{T}, {A}, 0>", A=tuple(range(len(ACTIVATIONS))))
            + _each("bias_act_backward<{T}, {A}, 1>", A=_OF_OUTPUT),
            ("float32", "float64"),
            "256-thread blocks, each owning strips of 32 columns (strips grid-strided): "
            "its 8 warps walk down the rows, each thread sums its column in double, the "
            "warps' sums meet in shared memory in a fixed order",
            "recomputes x + bias (or reads the forward output instead, for identity, relu, "
            "sigmoid and tanh), the derivative, grad_x and the bias gradient in one "
            "pass: reads grad_y and x, writes grad_x (3 arrays), where the unfused "
            "expression moves 8 or more and a separate column sum rereads grad_x",
        ),
        KernelSpec(
            "sgd_update",
            _ELEMENTWISE,
            _ELEMENTWISE_WHY + "; the updated arrays are the kernel's outputs, so nothing "
            "is allocated",
            None,
            (),
            ("float32", "float64"),
            _CUPY_LAUNCH,
            "weight decay, momentum (Nesterov or not) and the step in one in-place pass: "
            "reads param, grad, buffer and writes param, buffer (5 arrays)",
        ),
        KernelSpec(
            "adam_update",
            _ELEMENTWISE,
            _ELEMENTWISE_WHY + "; the updated arrays are the kernel's outputs, so nothing "
            "is allocated",
            None,
            (),
            ("float32", "float64"),
            _CUPY_LAUNCH,
            "weight decay (L2 or decoupled), both moments, bias correction and the step in "
            "one in-place pass: reads param, grad, exp_avg, exp_avg_sq and writes three of "
            "them (7 arrays) where torch-style CuPy code moves about 30",
        ),
        KernelSpec(
            "softmax_cross_entropy",
            _RAW,
            "each row's max and sum of exponentials is a reduction whose result every "
            "thread of the row then needs: warp shuffles and shared memory within a block, "
            "which CuPy's kernel types cannot express",
            "softmax_xent.cu",
            _each("softmax_xent_forward<{T}, {L}>", L=_LABELS),
            ("float32", "float64"),
            "one 256-thread block per row (rows grid-strided): an online max/sum-exp "
            "reduction in registers, warp shuffles and shared memory, then probs written",
            "max, exp, sum, log, the label pick and label smoothing: reads the logits twice "
            "(the second time mostly from L2), writes probs and the per-row loss",
        ),
        KernelSpec(
            "softmax_cross_entropy_backward",
            _ELEMENTWISE,
            _ELEMENTWISE_WHY + "; the label and grad_loss broadcast per row",
            None,
            (),
            ("float32", "float64"),
            _CUPY_LAUNCH,
            "probs minus the (smoothed) one-hot target, scaled by grad_loss per row, in one "
            "pass: reads probs, writes grad_logits (2 arrays) where CuPy's expression "
            "builds a one-hot matrix and moves 5 or more",
        ),
        KernelSpec(
            "matmul_tiled",
            _RAW,
            "threads of a block share tiles of A and B through shared memory and barriers",
            "matmul_tiled.cu",
            (
                "matmul_tiled<128, 128, 8, 8, 8>",
                "matmul_tiled<64, 64, 32, 4, 4>",
                "matmul_tiled<32, 32, 32, 2, 2>",
            ),
            ("float32",),
            "a flat grid of BMxBN output tiles, columns fastest (gridDim.x: any row count; "
            "128x128 tiles, or 64x64 and 32x32 with deeper k steps for small outputs), "
            "256 threads each computing a TMxTN register block from BK-deep shared-memory "
            "tiles of A (stored transposed) and B",
            "nothing: a teaching reference for tiling and register blocking, benchmarked "
            "against cuBLAS",
        ),
    )
}


#: Backend kernels with no public function, called by gk.nn and gk.optim through
#: ``gpukit.kernels._direct`` on arrays they validated. The same contract as
#: :data:`KERNELS` (a NumPy reference of the same name in ``gpukit_numpy.kernels``, whose
#: docstring states the signature; a launcher in ``gpukit_cupy.kernels``; a GPU test in
#: ``tests/test_kernels_gpu.py``; cases in ``tests/kernel_cases.py``, which the GPU lane runs
#: under compute-sanitizer), without the front-end and its checks.
INTERNAL_KERNELS: dict[str, KernelSpec] = {
    s.name: s
    for s in (
        KernelSpec(
            "activation",
            _ELEMENTWISE,
            _ELEMENTWISE_WHY,
            None,
            (),
            ("float32", "float64"),
            _CUPY_LAUNCH,
            "an activation layer's forward pass, bias_activation without a bias: reads x, "
            "writes y (2 arrays), where passing a bias of zeros adds an allocation and a "
            "fill launch",
        ),
        KernelSpec(
            "activation_backward",
            _ELEMENTWISE,
            _ELEMENTWISE_WHY + "; without a bias there is no column sum to share",
            None,
            (),
            ("float32", "float64"),
            _CUPY_LAUNCH,
            "an activation layer's backward pass, bias_activation_backward without a "
            "bias or its gradient: reads grad_y and x (or the forward output, for "
            "identity, relu, sigmoid and tanh), writes grad_x (3 arrays)",
        ),
        KernelSpec(
            "softmax_cross_entropy_train",
            _RAW,
            "the rows as softmax_cross_entropy's; the reduced loss adds every row's, which "
            "the last block to finish does (a counter in device memory tells it)",
            "softmax_xent.cu",
            _each("softmax_xent_train<{T}, {L}>", L=_LABELS),
            ("float32", "float64"),
            "as softmax_cross_entropy, then the last block sums the row losses",
            "a training step's whole loss: softmax_cross_entropy, the mean (or sum) and "
            "softmax_cross_entropy_backward for that reduction in one launch; writes the "
            "gradient of the logits where the forward kernel writes probs",
        ),
        KernelSpec(
            "flag_nonfinite",
            _ELEMENTWISE,
            "one thread reads one value and writes the device's status buffer",
            None,
            (),
            ("float32", "float64"),
            "one thread",
            "fit's check of a loss: a NaN or infinite value recorded on the device "
            "(gpukit._runtime.device_status), so the host reads it every few steps "
            "instead of every step",
        ),
    )
}


def spec(name: str) -> KernelSpec:
    """The registry entry of kernel ``name`` (public or internal)."""
    return KERNELS[name] if name in KERNELS else INTERNAL_KERNELS[name]


def cuda_sources() -> dict[str, tuple[str, ...]]:
    """Each ``.cu`` file (RawModule kernels) with every name expression instantiated from it."""
    out: dict[str, tuple[str, ...]] = {}
    for s in (*KERNELS.values(), *INTERNAL_KERNELS.values()):
        if s.source is not None:
            out[s.source] = out.get(s.source, ()) + s.name_expressions
    return out
