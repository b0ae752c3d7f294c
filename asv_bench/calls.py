"""Small warm calls of every public single-device operation, with the peer call each makes.

Shared by the ``Calls`` and ``CallRatio`` benchmarks of ``bench_core.py`` (the second is
gpukit's overhead per call: ``python -m tools.peers -b CallRatio``, in microseconds, or
``--callgrind`` in instructions): one list of rows, so the benchmark history and the
comparison measure the same calls.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

import gpukit as gk

from . import calls_nn

#: The row only a device backend has: a host input, moved by the call.
TRANSFER = "fft.fft 16, NumPy input"


def labels() -> list[str]:
    """Every row's label, the host's and the device's."""
    with gk.use_backend("numpy"):  # the host rows build layers: never on a GPU for a label
        return [label for label, _, _ in rows(np)] + [TRANSFER]


def rows(xp: Any) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """``(label, gpukit call, peer call)`` for every row, on arrays of ``xp`` (NumPy or
    CuPy; the gpukit backend of the same kind must be the active one)."""
    host = xp is np
    if host:
        import scipy.fft as peer_fft
        import scipy.linalg as sla

        peer_la = np.linalg
    else:
        peer_fft, peer_la = xp.fft, xp.linalg
    rng = np.random.default_rng(0)
    a8 = xp.asarray(rng.standard_normal((8, 8)).astype(np.float32))
    m = rng.standard_normal((4, 4))
    spd = xp.asarray(m @ m.T + 4 * np.eye(4))
    b4 = xp.asarray(rng.standard_normal(4))
    tall = xp.asarray(rng.standard_normal((6, 4)))
    c16 = xp.asarray(rng.standard_normal(16) + 1j * rng.standard_normal(16))
    r16, r1024 = xp.asarray(rng.standard_normal(16)), xp.asarray(rng.standard_normal(1024))
    c4x4 = xp.asarray(rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4)))
    r4x4 = xp.asarray(rng.standard_normal((4, 4)))
    chol = (peer_la.cholesky(spd), True)
    host_r16 = rng.standard_normal(16)
    out = [
        ("matmul 8x8 float32", lambda: gk.matmul(a8, a8), lambda: xp.matmul(a8, a8)),
        ("fft.fft 16", lambda: gk.fft.fft(r16), lambda: peer_fft.fft(r16)),
        ("fft.fft 1024", lambda: gk.fft.fft(r1024), lambda: peer_fft.fft(r1024)),
        ("fft.ifft 16", lambda: gk.fft.ifft(c16), lambda: peer_fft.ifft(c16)),
        ("fft.rfft 16", lambda: gk.fft.rfft(r16), lambda: peer_fft.rfft(r16)),
        ("fft.irfft 16", lambda: gk.fft.irfft(c16), lambda: peer_fft.irfft(c16)),
        ("fft.hfft 16", lambda: gk.fft.hfft(c16), lambda: peer_fft.hfft(c16)),
        ("fft.ihfft 16", lambda: gk.fft.ihfft(r16), lambda: peer_fft.ihfft(r16)),
        ("fft.fft2 4x4", lambda: gk.fft.fft2(c4x4), lambda: peer_fft.fft2(c4x4)),
        ("fft.ifftn 4x4", lambda: gk.fft.ifftn(c4x4), lambda: peer_fft.ifftn(c4x4)),
        ("fft.rfftn 4x4", lambda: gk.fft.rfftn(r4x4), lambda: peer_fft.rfftn(r4x4)),
        ("fft.irfft2 4x4", lambda: gk.fft.irfft2(c4x4), lambda: peer_fft.irfft2(c4x4)),
        ("fft.fftn 4x4", lambda: gk.fft.fftn(c4x4), lambda: peer_fft.fftn(c4x4)),
        ("fft.ifft2 4x4", lambda: gk.fft.ifft2(c4x4), lambda: peer_fft.ifft2(c4x4)),
        ("fft.rfft2 4x4", lambda: gk.fft.rfft2(r4x4), lambda: peer_fft.rfft2(r4x4)),
        ("fft.irfftn 4x4", lambda: gk.fft.irfftn(c4x4), lambda: peer_fft.irfftn(c4x4)),
        ("fft.fftfreq 16", lambda: gk.fft.fftfreq(16), lambda: peer_fft.fftfreq(16)),
        ("fft.rfftfreq 16", lambda: gk.fft.rfftfreq(16), lambda: peer_fft.rfftfreq(16)),
        ("fft.fftshift 16", lambda: gk.fft.fftshift(r16), lambda: peer_fft.fftshift(r16)),
        ("fft.ifftshift 16", lambda: gk.fft.ifftshift(r16), lambda: peer_fft.ifftshift(r16)),
        ("linalg.solve 4x4", lambda: gk.linalg.solve(spd, b4), lambda: peer_la.solve(spd, b4)),
        ("linalg.inv 4x4", lambda: gk.linalg.inv(spd), lambda: peer_la.inv(spd)),
        ("linalg.det 4x4", lambda: gk.linalg.det(spd), lambda: peer_la.det(spd)),
        ("linalg.slogdet 4x4", lambda: gk.linalg.slogdet(spd), lambda: peer_la.slogdet(spd)),
        ("linalg.cholesky 4x4", lambda: gk.linalg.cholesky(spd), lambda: peer_la.cholesky(spd)),
        ("linalg.qr 4x4", lambda: gk.linalg.qr(spd), lambda: peer_la.qr(spd)),
        ("linalg.eigh 4x4", lambda: gk.linalg.eigh(spd), lambda: peer_la.eigh(spd)),
        ("linalg.svd 4x4", lambda: gk.linalg.svd(spd), lambda: peer_la.svd(spd)),
        (
            "linalg.lstsq 6x4",
            lambda: gk.linalg.lstsq(tall, tall[:, 0]),
            lambda: peer_la.lstsq(tall, tall[:, 0], rcond=None),
        ),
        ("linalg.norm 1024", lambda: gk.linalg.norm(r1024), lambda: peer_la.norm(r1024)),
        ("asarray", lambda: gk.asarray(r16), lambda: xp.asarray(r16)),
        (
            "to_numpy",
            lambda: gk.to_numpy(r16),
            lambda: xp.asnumpy(r16) if not host else np.asarray(r16),
        ),
        (
            "namespace",
            lambda: gk.namespace(r16),
            lambda: xp.get_array_module(r16) if not host else np,
        ),
    ]
    if host:  # cupyx.scipy.linalg has no cho_solve, cupy.fft no n-d Hermitian transforms;
        # the rows below have NumPy peers
        out += [
            (
                "linalg.cho_solve 4x4",
                lambda: gk.linalg.cho_solve(chol, b4),
                lambda: sla.cho_solve(chol, b4),
            ),
            ("fft.hfft2 4x4", lambda: gk.fft.hfft2(c4x4), lambda: peer_fft.hfft2(c4x4)),
            ("fft.ihfftn 4x4", lambda: gk.fft.ihfftn(r4x4), lambda: peer_fft.ihfftn(r4x4)),
            (
                "linalg.solve 4x4, its LAPACK calls",
                lambda: gk.linalg.solve(spd, b4),
                _lapack_solve(spd, b4),
            ),
        ]
        out += _host_rows(rng, spd, b4)
        out += [_adam_row(rng, decoupled) for decoupled in (False, True)]
    else:  # host inputs reaching a device backend: the implicit transfer
        out.append(
            (
                TRANSFER,
                lambda: gk.fft.fft(host_r16),
                lambda: peer_fft.fft(xp.asarray(host_r16)),
            )
        )
        out += _cupy_kernel_rows(xp, rng)
    out += _sparse_rows(xp, spd, b4)
    out += calls_nn.layer_rows(xp, rng) + calls_nn.backward_rows(xp, rng)
    out += _tiled_and_user_kernel_rows(xp, host, peer_fft, a8, r16, r4x4, c4x4)
    return out


def _tiled_and_user_kernel_rows(
    xp: Any, host: bool, peer_fft: Any, a8: Any, r16: Any, r4x4: Any, c4x4: Any
) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """The tiled matmul kernel and user kernels (made once, here) against the array
    library's own way of computing the same: on the host NumPy's expressions, on CuPy
    arrays the ``cupy.ElementwiseKernel`` / ``cupy.ReductionKernel`` a CuPy user writes
    for it (gpukit's CuPy backend launches one such kernel; the expressions launch two
    ufunc kernels and a temporary, which the simulator executes at another cost than
    one kernel: their difference was the simulator's, not gpukit's host code); and the
    Hermitian n-d transforms left above (NumPy peers)."""

    @gk.elementwise
    def axpy(x, y):
        return 2.0 * x + y

    @gk.reduction
    def sum_of_squares(x):
        return sum(x * x)

    if host:
        axpy_peer, squares_peer = (lambda: 2.0 * r16 + r16), (lambda: xp.sum(r16 * r16))
    else:
        axpy_kernel = xp.ElementwiseKernel(
            "float64 x, float64 y", "float64 z", "z = 2.0 * x + y", "peer_axpy"
        )
        squares_kernel = xp.ReductionKernel(
            "float64 x", "float64 y", "x * x", "a + b", "y = a", "0", "peer_sum_of_squares"
        )
        axpy_peer = functools.partial(axpy_kernel, r16, r16)
        squares_peer = functools.partial(squares_kernel, r16)
    out = [
        ("kernels.matmul_tiled 8x8", lambda: gk.kernels.matmul_tiled(a8, a8), _tiled_peer(xp, a8)),
        ("elementwise 16 axpy", lambda: axpy(r16, r16), axpy_peer),
        ("reduction 16 sum of squares", lambda: sum_of_squares(r16), squares_peer),
    ]
    if host:
        out += [
            ("fft.hfftn 4x4", lambda: gk.fft.hfftn(c4x4), lambda: peer_fft.hfftn(c4x4)),
            ("fft.ihfft2 4x4", lambda: gk.fft.ihfft2(r4x4), lambda: peer_fft.ihfft2(r4x4)),
        ]
    return out


def _sparse_rows(
    xp: Any, spd: Any, b4: Any
) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """A sparse matrix made from a dense one and a conjugate-gradient solve, against SciPy's
    or, on CuPy arrays, ``cupyx.scipy.sparse``'s (whose ``cg`` launches about three times
    the kernels gpukit's does a step: the row compares the two solves, not gpukit's host
    code alone)."""
    if xp is np:
        import scipy.sparse as sp
        import scipy.sparse.linalg as spla
    else:
        import cupyx.scipy.sparse as sp
        import cupyx.scipy.sparse.linalg as spla
    return [
        ("linalg.cg 4x4", lambda: gk.linalg.cg(spd, b4), lambda: spla.cg(spd, b4)),
        ("sparse.csr_matrix 4x4", lambda: gk.sparse.csr_matrix(spd), lambda: sp.csr_matrix(spd)),
    ]


def _tiled_peer(xp: Any, a: Any) -> Callable[[], object]:
    """What ``gk.kernels.matmul_tiled(a, a)`` computes with, for a small square float32
    ``a``: on the host ``a @ a`` (the numpy backend's), on CuPy gpukit's own kernel
    launched directly with the tile its launcher picks for a product too small to fill
    the device (32x32, 2x2 per thread: one block of 256 threads), as the other CuPy
    kernel rows' peers (``_cupy_kernel_rows``)."""
    if xp is np:
        return lambda: a @ a
    from gpukit_cupy.kernels._launch import function

    n = a.shape[0]
    kernel = function("matmul_tiled.cu", "matmul_tiled<32, 32, 32, 2, 2>")
    grid, dims = (-(-n // 32) * -(-n // 32),), (np.int64(n),) * 3  # dims: m, n, k

    def peer() -> object:
        c = xp.empty((n, n), dtype=np.float32)
        kernel(grid, (256,), (a, a, c, *dims))
        return c

    return peer


def _lapack_solve(a: np.ndarray, b: np.ndarray) -> Callable[[], object]:
    """The LAPACK calls ``gk.linalg.solve`` makes on the host for one small C-ordered
    matrix (``gesv``, then ``lange`` and ``gecon``, SciPy's wrappers): the
    ``numpy.linalg.solve`` row's difference includes the condition estimate behind the
    LinAlgWarning, which SciPy makes too and NumPy does not; this row's is gpukit's own."""
    from scipy.linalg import lapack

    gesv, lange, gecon = lapack.get_lapack_funcs(("gesv", "lange", "gecon"), (a,))

    def peer() -> object:
        lu, _, x, _ = gesv(a, b)
        gecon(lu, lange("I", a.T), "1")
        return x

    return peer


def _host_rows(
    rng: Any, spd: Any, b4: Any
) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """The areas whose peer is NumPy/SciPy code rather than one library call: a Krylov
    solve, the kernels' NumPy twins, sparse construction, a layer's forward pass and an
    optimizer step, each against the NumPy/SciPy code doing the same work."""
    import scipy.sparse.linalg as spla

    x = rng.standard_normal((4, 8)).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    labels = rng.integers(0, 8, 4)
    p, g = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    param = gk.nn.Parameter(p.copy())
    param.grad = g
    sgd = gk.optim.SGD([param], lr=1e-9)

    def numpy_sgd() -> None:
        p.__isub__(1e-9 * g)

    def numpy_softmax_ce() -> object:
        shifted = x - x.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        return -logp[np.arange(4), labels].mean()

    return [
        (
            "linalg.bicgstab 4x4",
            lambda: gk.linalg.bicgstab(spd, b4),
            lambda: spla.bicgstab(spd, b4),
        ),
        ("linalg.gmres 4x4", lambda: gk.linalg.gmres(spd, b4), lambda: spla.gmres(spd, b4)),
        ("linalg.minres 4x4", lambda: gk.linalg.minres(spd, b4), lambda: spla.minres(spd, b4)),
        (
            "kernels.bias_activation 4x8 relu",
            lambda: gk.kernels.bias_activation(x, bias, "relu"),
            lambda: np.maximum(x + bias, 0),
        ),
        (
            "kernels.softmax_cross_entropy 4x8",
            lambda: gk.kernels.softmax_cross_entropy(x, labels),
            numpy_softmax_ce,
        ),
        (
            "kernels.sgd_update 64",
            lambda: gk.kernels.sgd_update(p, g, lr=1e-9),
            numpy_sgd,
        ),
        ("optim.SGD step 64", sgd.step, numpy_sgd),
        *_kernel_rows(rng, x, bias, labels),
    ]


def _kernel_rows(
    rng: Any, x: np.ndarray, bias: np.ndarray, labels: np.ndarray
) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """The backward kernels and the Adam update, each against the NumPy code doing the
    same work (its own copies of the updated arrays)."""
    gy = rng.standard_normal(x.shape).astype(np.float32)
    probs = rng.random(x.shape).astype(np.float32)
    probs /= probs.sum(axis=1, keepdims=True)
    grad_loss = np.full(x.shape[0], 1.0 / x.shape[0], np.float32)
    rows = np.arange(x.shape[0])
    p, g = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    m, v = np.zeros(64, np.float32), np.zeros(64, np.float32)
    pp, pm, pv = p.copy(), m.copy(), v.copy()
    b1, b2, lr, eps = 0.9, 0.999, 1e-9, 1e-8

    def numpy_bias_relu_backward() -> object:
        gz = gy * (x + bias > 0)
        return gz, gz.sum(axis=0)

    def numpy_xent_backward() -> object:
        out = probs.copy()
        out[rows, labels] -= 1
        out *= grad_loss[:, None]
        return out

    def numpy_adam() -> None:  # step 1, as the gpukit call
        pm.__imul__(b1)
        pm.__iadd__((1 - b1) * g)
        pv.__imul__(b2)
        pv.__iadd__((1 - b2) * g * g)
        pp.__isub__(lr / (1 - b1) * pm / (np.sqrt(pv) / np.sqrt(1 - b2) + eps))

    return [
        (
            "kernels.bias_activation_backward 4x8 relu",
            lambda: gk.kernels.bias_activation_backward(gy, x, bias, "relu"),
            numpy_bias_relu_backward,
        ),
        (
            "kernels.softmax_cross_entropy_backward 4x8",
            lambda: gk.kernels.softmax_cross_entropy_backward(probs, labels, grad_loss),
            numpy_xent_backward,
        ),
        (
            "kernels.adam_update 64",
            lambda: gk.kernels.adam_update(p, g, m, v, step=1, lr=lr),
            numpy_adam,
        ),
    ]


def _adam_row(rng: Any, decoupled: bool) -> tuple[str, Callable[[], object], Callable[[], object]]:
    """An ``optim.Adam`` (or ``AdamW``) step on one 64-element parameter against the NumPy
    code of the same update (its own copies of the arrays)."""
    p, g = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    param = gk.nn.Parameter(p.copy())
    param.grad = g
    lr, b1, b2, eps, decay = 1e-9, 0.9, 0.999, 1e-8, 1e-2
    opt = (gk.optim.AdamW if decoupled else gk.optim.Adam)([param], lr=lr)
    m, v = np.zeros_like(p), np.zeros_like(p)

    def numpy_step() -> None:  # step 1's bias corrections, as every call of the row
        if decoupled:
            p.__imul__(1 - lr * decay)
        m.__imul__(b1)
        m.__iadd__((1 - b1) * g)
        v.__imul__(b2)
        v.__iadd__((1 - b2) * g * g)
        p.__isub__(lr / (1 - b1) * m / (np.sqrt(v) / np.sqrt(1 - b2) + eps))

    return (f"optim.{'AdamW' if decoupled else 'Adam'} step 64", opt.step, numpy_step)


def _cupy_kernel_rows(
    cupy: Any, rng: Any
) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """The ``gk.kernels`` front-ends and the optimizer steps on CuPy arrays (the labels of
    the host rows), each against the launch gpukit makes: its own compiled kernel, called
    directly through CuPy with the same arguments and the same output allocations. A chain
    of CuPy ufuncs doing the same work would measure the kernels' fusion, not gpukit's
    overhead.

    The peers take the kernel objects from the cupy backend's module, as gpukit's own
    launchers do: ``gpukit_cupy.kernels._elementwise`` builds each ``ElementwiseKernel``
    once (``functools.cache``: the peer calls the very object gpukit calls) and
    ``gpukit_cupy.kernels._launch.function`` returns a ``RawModule``'s compiled function
    (the module is compiled once per device; the arrays here are on the current one)."""
    from gpukit.backend.kernels import ACTIVATIONS
    from gpukit_cupy.kernels import _elementwise as ew
    from gpukit_cupy.kernels._launch import BLOCK, function

    f32, i64 = np.float32, np.int64
    x = cupy.asarray(rng.standard_normal((4, 8)).astype(f32))
    bias = cupy.asarray(rng.standard_normal(8).astype(f32))
    gy = cupy.asarray(rng.standard_normal((4, 8)).astype(f32))
    labels = cupy.asarray(rng.integers(0, 8, 4))  # int64: the kernels' "long long" labels
    probs = cupy.asarray(np.full((4, 8), 1 / 8, f32))
    grad_loss = cupy.asarray(np.full(4, 1 / 4, f32))
    p, g = (cupy.asarray(rng.standard_normal(64).astype(f32)) for _ in range(2))
    m, v = cupy.zeros(64, f32), cupy.zeros(64, f32)
    lr, b1, b2, eps = 1e-9, 0.9, 0.999, 1e-8

    forward = ew.bias_act_forward("relu")
    # one strip of 32 columns, one chunk of rows: the grid gpukit's launcher picks for 4x8
    backward = function("bias_act.cu", f"bias_act_backward<float, {ACTIVATIONS.index('relu')}, 0>")
    xent = function("softmax_xent.cu", "softmax_xent_forward<float, long long>")
    xent_backward, sgd, adam = ew.softmax_xent_backward(), ew.sgd_plain(False), ew.adam(False)

    def peer_backward() -> object:
        grad_x, grad_bias = cupy.empty((4, 8), f32), cupy.empty(8, f32)
        backward(
            (1, 1), (BLOCK,),
            (gy, x, bias, grad_x, grad_bias, i64(4), i64(8), f32(0.01), None, None),
        )  # fmt: skip
        return grad_x, grad_bias

    def peer_xent() -> object:
        loss, out = cupy.empty(4, f32), cupy.empty((4, 8), f32)
        xent((4,), (BLOCK,), (x, labels, loss, out, i64(4), i64(8), f32(0.0), None, i64(0)))
        return loss, out

    def peer_adam() -> None:  # step 1's arguments, as the gpukit call's
        adam(
            g, f32(1 - b1), f32(b2), f32(1 - b2), f32(eps), f32(0.0), f32(1.0),
            f32(lr / (1 - b1)), f32(math.sqrt(1 - b2)), p, m, v,
        )  # fmt: skip

    return [
        (
            "kernels.bias_activation 4x8 relu",
            lambda: gk.kernels.bias_activation(x, bias, "relu"),
            lambda: forward(x, bias, f32(0.01)),
        ),
        (
            "kernels.bias_activation_backward 4x8 relu",
            lambda: gk.kernels.bias_activation_backward(gy, x, bias, "relu"),
            peer_backward,
        ),
        (
            "kernels.softmax_cross_entropy 4x8",
            lambda: gk.kernels.softmax_cross_entropy(x, labels),
            peer_xent,
        ),
        (
            "kernels.softmax_cross_entropy_backward 4x8",
            lambda: gk.kernels.softmax_cross_entropy_backward(probs, labels, grad_loss),
            lambda: xent_backward(
                probs, labels[:, None], grad_loss[:, None], f32(1.0), f32(0.0), i64(8)
            ),
        ),
        (
            "kernels.sgd_update 64",
            lambda: gk.kernels.sgd_update(p, g, lr=lr),
            lambda: sgd(g, f32(lr), f32(0.0), p),
        ),
        (
            "kernels.adam_update 64",
            lambda: gk.kernels.adam_update(p, g, m, v, step=1, lr=lr),
            peer_adam,
        ),
        *_cupy_step_rows(cupy, rng, ew),
    ]


def _cupy_step_rows(
    cupy: Any, rng: Any, ew: Any
) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """``optim.SGD``, ``Adam`` and ``AdamW`` steps on one 64-element CuPy parameter whose
    gradient is set by hand (as the host rows'), against the two CuPy calls such a step
    makes: the gradient copied into its slot of the optimizer's flat gradient buffer, then
    the update kernel guarded by the device's status buffer (an int64 array of 8 slots
    that the kernel reads: a step is skipped while it holds an error). The peer makes
    them on arrays of its own."""
    f32 = np.float32
    lr, b1, b2, eps, decay = 1e-9, 0.9, 0.999, 1e-8, 1e-2
    out = []
    for name in ("SGD", "Adam", "AdamW"):
        p, g = (cupy.asarray(rng.standard_normal(64).astype(f32)) for _ in range(2))
        param = gk.nn.Parameter(p.copy())
        param.grad = g
        opt = getattr(gk.optim, name)([param], lr=lr)
        opt.step()  # the state arrays are allocated on the first step
        slot, m, v = cupy.empty_like(g), cupy.zeros_like(p), cupy.zeros_like(p)
        status = cupy.zeros(8, np.int64)
        if name == "SGD":
            sgd = ew.sgd_plain(True)

            def peer(p=p, g=g, slot=slot, status=status, sgd=sgd) -> None:
                slot[...] = g
                sgd(slot, f32(lr), f32(0.0), status, p)

        else:  # Adam's default weight decay is 0 (no L2 term), AdamW's 1e-2 (decoupled)
            adam, shrink = ew.adam(True), 1 - lr * decay if name == "AdamW" else 1.0

            def peer(  # the bias corrections of step 2 (the gpukit step's count grows)
                p=p, g=g, slot=slot, m=m, v=v, status=status, adam=adam, shrink=shrink
            ) -> None:
                slot[...] = g
                adam(
                    slot, f32(1 - b1), f32(b2), f32(1 - b2), f32(eps), f32(0.0), f32(shrink),
                    f32(lr / (1 - b1**2)), f32(math.sqrt(1 - b2**2)), status, p, m, v,
                )  # fmt: skip

        out.append((f"optim.{name} step 64", opt.step, peer))
    return out
