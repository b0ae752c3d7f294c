"""Every public function of gk, gk.fft, gk.linalg, gk.nn and gk.kernels with a sharded input.

The cases are keyed by the public modules' ``__all__``: a name added there without a
case here fails :func:`test_every_public_name_has_a_sharded_case`, so no function can
be forgotten. Each case either computes (compared with a float64 NumPy reference) or
raises the ``TypeError`` that names the operation, the sharding seen and the way on.
"""

from __future__ import annotations

import importlib
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.fft

import gpukit as gk
from gpukit._select import registry as _registry

from helpers import rel_err

NumpyBackend = type(_registry.load("numpy"))


MODULES = ("gpukit", "gpukit.fft", "gpukit.linalg", "gpukit.nn", "gpukit.kernels")

# Public names that take no array: types, errors, constants, settings and queries.
NO_ARRAY = {
    "gpukit": {
        "Backend", "BackendStatus", "BackendUnavailableError", "Capability", "capabilities",
        "ConvergenceWarning", "Device",
        "DeviceMismatchError", "GpukitError", "GpukitWarning", "LinAlgError", "MemoryStats",
        "NonFiniteError", "OutOfMemoryError", "ShardedArray", "TransferGuardError",
        "UnknownBackendError",
        "__version__", "available_backends", "device", "device_count", "devices",
        "empty_cache", "empty_pinned", "errors", "get_backend", "memory_stats",
        "register_backend", "reset_transfer_stats", "selection_reason", "set_backend",
        "set_memory_limit", "synchronize", "transfer_guard", "transfer_stats",
        "unregister_backend", "use_backend", "xp",
    },
    "gpukit.fft": {"engine", "fftfreq", "rfftfreq"},
    "gpukit.linalg": {"IterativeInfo"},
    "gpukit.nn": {"load", "manual_seed"},
    "gpukit.kernels": {"ACTIVATIONS", "KERNELS"},
}  # fmt: skip


@dataclass
class Env:
    """The data of one case: host arrays and the same arrays sharded along their rows."""

    rng: np.random.Generator
    n: int  # devices

    def __post_init__(self) -> None:
        self.m = self.rng.standard_normal((7, 5))  # uneven over 2..4 devices
        self.v = self.rng.standard_normal(7)
        q = self.rng.standard_normal((7, 7))
        self.spd = q @ q.T / 7 + 2 * np.eye(7)

    def shard(self, a: np.ndarray, axis: int = 0) -> gk.ShardedArray:
        return gk.shard(a, axis=axis)


CASES: dict[str, Callable[[Env], None]] = {}


def case(*names: str):
    def register(fn: Callable[[Env], None]) -> Callable[[Env], None]:
        for name in names:
            CASES[name] = fn
        return fn

    return register


def refused(key: str, call: Callable[[Env], object], *more: str) -> None:
    """The case of ``key`` (``"gpukit.linalg.solve"``) is the TypeError naming the
    operation (``gk.linalg.solve``), the layout seen and the way on."""
    name = key.replace("gpukit.", "gk.", 1)

    def check(env: Env) -> None:
        with pytest.raises(TypeError) as info:
            call(env)
        text = str(info.value)
        assert text.startswith(name + " does not accept a ShardedArray"), text
        assert re.search(r"split along axis \d over numpy:\(", text), text
        for phrase in ("x.gather()", *more):
            assert phrase in text, text

    CASES[key] = check


# -- gk -------------------------------------------------------------------------------------
@case("gpukit.asarray")
def _(env: Env) -> None:
    got = gk.asarray(env.shard(env.m), dtype="float32")
    assert type(got) in (np.ndarray, gk._host.virtual.VirtualDeviceArray)
    assert got.dtype == np.float32 and rel_err(got, env.m) < 1e-6


@case("gpukit.to_numpy")
def _(env: Env) -> None:
    got = gk.to_numpy(env.shard(env.m))
    assert type(got) is np.ndarray and np.array_equal(got, env.m)


@case("gpukit.shard", "gpukit.reshard")
def _(env: Env) -> None:
    for fn in (gk.shard, gk.reshard):
        got = fn(env.shard(env.m), axis=1)
        assert got.axis == 1 and np.array_equal(gk.to_numpy(got), env.m)


@gk.elementwise
def _cube(x):
    return x * x * x


@gk.elementwise
def _cube_grad(x, g):
    return 3.0 * x * x * g


@gk.reduction
def _sum_of_cubes(x):
    return sum(x * x * x)


@case("gpukit.elementwise")
def _(env: Env) -> None:
    got = _cube(env.shard(env.m))
    assert isinstance(got, gk.ShardedArray) and rel_err(got, env.m**3) < 1e-15


@case("gpukit.reduction")
def _(env: Env) -> None:
    full = _sum_of_cubes(env.shard(env.m))  # over the split axis: combined on devices[0]
    assert not isinstance(full, gk.ShardedArray) and rel_err(full, (env.m**3).sum()) < 1e-14
    rows = _sum_of_cubes(env.shard(env.m), axis=1)  # within each shard: still sharded
    assert isinstance(rows, gk.ShardedArray) and rel_err(rows, (env.m**3).sum(1)) < 1e-14


@case("gpukit.map_shards")
def _(env: Env) -> None:
    got = gk.map_shards(np.cos, env.shard(env.m))
    assert rel_err(got, np.cos(env.m)) < 1e-15


@case("gpukit.matmul")
def _(env: Env) -> None:
    b = env.rng.standard_normal((5, 3))
    assert rel_err(gk.matmul(env.shard(env.m), b), env.m @ b) < 1e-12
    assert rel_err(gk.matmul(b.T, env.shard(env.m.T, axis=1)), b.T @ env.m.T) < 1e-12


@case("gpukit.namespace")
def _(env: Env) -> None:
    xp = gk.namespace(env.shard(env.m))
    assert xp is np and rel_err(xp.sin(env.shard(env.m)), np.sin(env.m)) < 1e-15


# -- gk.fft: every transform against numpy.fft, split along a transformed axis ---------------
def _fft_case(fn: str) -> None:
    def check(env: Env) -> None:
        ref_fn = getattr(scipy.fft, fn)  # NumPy's functions, and SciPy's hfft2/hfftn family
        real_in = ("rfft", "ihfft", "rfft2", "rfftn", "ihfft2", "ihfftn")
        x = env.m if fn in real_in else env.m + 1j * env.m[::-1]
        for axis in (0, 1):
            got = getattr(gk.fft, fn)(env.shard(x, axis=axis))
            assert got.axis == axis
            assert rel_err(got, ref_fn(x)) < 1e-12

    CASES[f"gpukit.fft.{fn}"] = check


for _fn in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
            "fftn", "ifftn", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn",
            "fftshift", "ifftshift"):  # fmt: skip
    _fft_case(_fn)


# -- gk.linalg ------------------------------------------------------------------------------
@case("gpukit.linalg.norm")
def _(env: Env) -> None:
    assert rel_err(gk.linalg.norm(env.shard(env.m)), np.linalg.norm(env.m)) < 1e-12
    got = gk.linalg.norm(env.shard(env.m), ord=1, axis=1)
    assert isinstance(got, gk.ShardedArray) and rel_err(got, np.abs(env.m).sum(1)) < 1e-12


@case("gpukit.linalg.cg", "gpukit.linalg.bicgstab", "gpukit.linalg.minres")
def _(env: Env) -> None:
    for solver in (gk.linalg.cg, gk.linalg.bicgstab, gk.linalg.minres):
        x, info = solver(env.shard(env.spd), env.shard(env.v), rtol=1e-12)
        assert info.converged and isinstance(x, gk.ShardedArray)
        assert rel_err(x, np.linalg.solve(env.spd, env.v)) < 1e-9


@case("gpukit.linalg.gmres")
def _(env: Env) -> None:
    with pytest.raises(TypeError, match=r"gk\.linalg\.gmres: .*sharded.*cg, bicgstab or minres"):
        gk.linalg.gmres(env.shard(env.spd), env.v)


_DENSE = {
    "solve": lambda e: gk.linalg.solve(e.shard(e.spd), e.v),
    "lstsq": lambda e: gk.linalg.lstsq(e.m, e.shard(e.v)),
    "inv": lambda e: gk.linalg.inv(e.shard(e.spd)),
    "det": lambda e: gk.linalg.det(e.shard(e.spd)),
    "slogdet": lambda e: gk.linalg.slogdet(e.shard(e.spd)),
    "cholesky": lambda e: gk.linalg.cholesky(e.shard(e.spd)),
    "cho_solve": lambda e: gk.linalg.cho_solve(np.linalg.cholesky(e.spd), e.shard(e.v)),
    "qr": lambda e: gk.linalg.qr(e.shard(e.m)),
    "eigh": lambda e: gk.linalg.eigh(e.shard(e.spd)),
    "svd": lambda e: gk.linalg.svd(e.shard(e.m)),
}
for _name, _call in _DENSE.items():
    refused(f"gpukit.linalg.{_name}", _call, "gpukit's Dask support (gk.distributed)")


# -- gk.nn: layers and losses refuse (naming the layer); DataParallel takes sharded batches ---
def _layer(name: str, make: Callable[[], gk.nn.Module]) -> None:
    refused(f"gpukit.nn.{name}", lambda e: make()(e.shard(e.m)), "gk.nn.DataParallel")


for _name, _make in {
    "Linear": lambda: gk.nn.Linear(5, 2, seed=0),
    "Sequential": lambda: gk.nn.Sequential(gk.nn.Linear(5, 2, seed=0), gk.nn.ReLU()),
    "ReLU": gk.nn.ReLU, "LeakyReLU": gk.nn.LeakyReLU, "GELU": gk.nn.GELU, "SiLU": gk.nn.SiLU,
    "Sigmoid": gk.nn.Sigmoid, "Tanh": gk.nn.Tanh, "Softmax": gk.nn.Softmax,
    "Dropout": lambda: gk.nn.Dropout(0.5, seed=0), "LayerNorm": lambda: gk.nn.LayerNorm(5),
    "Module": gk.nn.Module, "Activation": lambda: gk.nn.Activation(_cube, _cube_grad),
}.items():  # fmt: skip
    _layer(_name, _make)

for _name, _call in {
    "MSELoss": lambda e: gk.nn.MSELoss()(e.shard(e.m), e.m),
    "CrossEntropyLoss": lambda e: gk.nn.CrossEntropyLoss()(e.shard(e.m), np.zeros(7, int)),
    "BCEWithLogitsLoss": lambda e: gk.nn.BCEWithLogitsLoss()(e.m, e.shard(e.m)),
    "Parameter": lambda e: gk.nn.Parameter(e.shard(e.m)),
    "fit": lambda e: gk.nn.fit(
        gk.nn.Linear(5, 1, seed=0),
        gk.nn.MSELoss(),
        gk.optim.SGD(gk.nn.Linear(5, 1, seed=0).parameters(), lr=0.1),
        e.shard(e.m),
        e.v[:, None],
        epochs=1,
        batch_size=4,
        progress=False,
    ),
    "GraphedStep": lambda e: gk.nn.GraphedStep(
        (net := gk.nn.Linear(5, 1, seed=0)),
        gk.nn.MSELoss(),
        gk.optim.SGD(net.parameters(), lr=0.1),
        e.shard(e.m),
        e.v[:, None],
    ),
    "predict": lambda e: gk.nn.predict(gk.nn.Linear(5, 1, seed=0), e.shard(e.m)),
    "predict_proba": lambda e: gk.nn.predict_proba(gk.nn.Linear(5, 2, seed=0), e.shard(e.m)),
}.items():
    refused(f"gpukit.nn.{_name}", _call, "gk.nn.DataParallel")


@case("gpukit.nn.DataParallel")
def _(env: Env) -> None:
    net = gk.nn.Linear(5, 2, seed=0)
    want = env.m @ gk.to_numpy(net.weight.data).T + gk.to_numpy(net.bias.data)
    got = gk.nn.DataParallel(net)(env.shard(env.m, axis=1))  # any split: one exchange
    assert got.dtype == np.float32 and rel_err(got, want) < 1e-5  # the model's float32


@case("gpukit.nn.save")
def _(env: Env) -> None:
    path = os.path.join(tempfile.mkdtemp(), "sharded.npz")
    gk.nn.save({"w": env.shard(env.m)}, path)
    assert np.array_equal(gk.nn.load(path)["w"], env.m)


# -- gk.kernels: refused (gather first) ---------------------------------------------------------
for _name, _call in {
    "bias_activation": lambda e: gk.kernels.bias_activation(e.shard(e.m), np.zeros(5)),
    "bias_activation_backward": lambda e: gk.kernels.bias_activation_backward(
        e.shard(e.m), e.m, np.zeros(5), "relu"
    ),
    "matmul_tiled": lambda e: gk.kernels.matmul_tiled(e.shard(e.m), e.m.T),
    "softmax_cross_entropy": lambda e: gk.kernels.softmax_cross_entropy(
        e.shard(e.m), np.zeros(7, np.int64)
    ),
    "softmax_cross_entropy_backward": lambda e: gk.kernels.softmax_cross_entropy_backward(
        e.shard(e.m), np.zeros(7, np.int64), np.ones(7)
    ),
    "sgd_update": lambda e: gk.kernels.sgd_update(e.shard(e.m), e.shard(e.m), lr=0.1),
    "adam_update": lambda e: gk.kernels.adam_update(e.shard(e.m), e.m, e.m, e.m, step=1, lr=0.1),
}.items():
    refused(f"gpukit.kernels.{_name}", _call)


# -- the tests ---------------------------------------------------------------------------------
@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_has_a_sharded_case(module):
    names = set(importlib.import_module(module).__all__)
    covered = {n.rpartition(".")[2] for n in CASES if n.rpartition(".")[0] == module}
    missing = names - covered - NO_ARRAY[module]
    assert not missing, f"{module}: no sharded-input case for {sorted(missing)}"
    stale = (covered | NO_ARRAY[module]) - names
    assert not stale, f"{module}: cases for names not in __all__: {sorted(stale)}"


@pytest.mark.parametrize("devices", [1, 3])
@pytest.mark.parametrize("name", sorted(CASES))
def test_sharded_input(name, devices, rng):
    with gk.use_backend(NumpyBackend(devices)):
        CASES[name](Env(rng, devices))


def test_the_issue_line_works(rng):
    """``gk.fft.fft(gk.shard(x, axis=0), axis=-1)``, for a matrix and for a vector."""
    with gk.use_backend(NumpyBackend(3)):
        for x in (rng.standard_normal((6, 10)), rng.standard_normal(10)):
            y = gk.fft.fft(gk.shard(x, axis=0), axis=-1)
            assert rel_err(y, np.fft.fft(x, axis=-1)) < 1e-12


def test_gk_sharding_functions_are_the_generic_ones(rng):
    """The explicit spelling and the generic API run one implementation: equal bits."""
    x = rng.standard_normal((6, 8))
    with gk.use_backend(NumpyBackend(3)):
        s = gk.shard(x)
        for name in gk.sharding.__all__:
            generic = getattr(gk.fft, name, None)
            if generic is not None:
                hermitian = ("irfft", "hfft", "irfft2", "irfftn", "hfft2", "hfftn")
                arg = s + 1j if name in hermitian else s
                assert np.array_equal(
                    gk.to_numpy(generic(arg)), gk.to_numpy(getattr(gk.sharding, name)(arg))
                ), name
        b = rng.standard_normal((8, 3))
        pairs = [
            (gk.sharding.norm(s), gk.linalg.norm(s)),
            (gk.sharding.norm(s, ord=np.inf, axis=1), np.linalg.norm(s, ord=np.inf, axis=1)),
            (gk.sharding.sum(s, axis=0), np.sum(s, axis=0)),
            (gk.sharding.sum(s), s.sum()),
            (gk.sharding.matmul(s, b), gk.matmul(s, b)),
            (gk.sharding.matmul(s, b), s @ b),
            (gk.sharding.vdot(s, s), np.vdot(s, s)),
        ]
        v = gk.shard(x[0])
        pairs.append((gk.sharding.dot(v, v), np.dot(v, v)))
        for explicit, generic in pairs:
            assert np.array_equal(gk.to_numpy(explicit), gk.to_numpy(generic))
