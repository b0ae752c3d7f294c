"""One dtype rule for every numerical front-end: a non-numeric dtype is a TypeError.

Strings, objects and long double are refused by gpukit itself, before any backend or
host-to-device copy sees them, with one message on every backend (docs/numerics.rst).
The kernels' own cases live in test_kernels.py.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import gpukit as gk

M = np.eye(3) * 2.0  # a valid numeric operand
V = np.ones(3)

# name -> call with its first array argument replaced by ``bad`` (a 3x3 array).
CALLS = {
    "gk.matmul": lambda bad: gk.matmul(bad, M),
    "gk.matmul[b]": lambda bad: gk.matmul(M, bad),
    "gk.matmul[highest]": lambda bad: gk.matmul(bad, M, precision="highest"),
    "gk.sparse.csr_matrix": lambda bad: gk.sparse.csr_matrix(bad),
    "gk.sparse.csr_matrix[coo]": lambda bad: gk.sparse.csr_matrix(
        (bad[0], (np.arange(3), np.arange(3)))
    ),
    "gk.linalg.solve": lambda bad: gk.linalg.solve(bad, V),
    "gk.linalg.solve[b]": lambda bad: gk.linalg.solve(M, bad[0]),
    "gk.linalg.lstsq": lambda bad: gk.linalg.lstsq(bad, V),
    "gk.linalg.inv": lambda bad: gk.linalg.inv(bad),
    "gk.linalg.det": lambda bad: gk.linalg.det(bad),
    "gk.linalg.slogdet": lambda bad: gk.linalg.slogdet(bad),
    "gk.linalg.cholesky": lambda bad: gk.linalg.cholesky(bad),
    "gk.linalg.cho_solve": lambda bad: gk.linalg.cho_solve(bad, V),
    "gk.linalg.qr": lambda bad: gk.linalg.qr(bad),
    "gk.linalg.eigh": lambda bad: gk.linalg.eigh(bad),
    "gk.linalg.svd": lambda bad: gk.linalg.svd(bad),
    "gk.linalg.norm": lambda bad: gk.linalg.norm(bad),
    **{
        f"gk.linalg.{m}": partial(lambda m, bad: getattr(gk.linalg, m)(bad, V), m)
        for m in ("cg", "gmres", "bicgstab", "minres")
    },
    "gk.linalg.cg[b]": lambda bad: gk.linalg.cg(M, bad[0]),
    "gk.linalg.cg[x0]": lambda bad: gk.linalg.cg(M, V, x0=bad[0]),
    "gk.linalg.cg[M]": lambda bad: gk.linalg.cg(M, V, M=bad),
    **{
        f"gk.fft.{f}": partial(lambda f, bad: getattr(gk.fft, f)(bad), f)
        for f in gk.fft.__all__
        if f not in ("engine", "fftfreq", "rfftfreq")
    },
}

BAD = {
    "str": np.full((3, 3), "a"),
    "object": np.ones((3, 3), dtype=object),
    "longdouble": np.eye(3, dtype=np.longdouble),
    "datetime": np.zeros((3, 3), dtype="datetime64[s]"),
}


def test_every_public_function_is_covered():
    covered = {name.split("[")[0] for name in CALLS}
    public = {"gk.matmul", "gk.sparse.csr_matrix"}
    public |= {f"gk.linalg.{f}" for f in gk.linalg.__all__ if f != "IterativeInfo"}
    public |= {f"gk.fft.{f}" for f in gk.fft.__all__ if f not in ("engine", "fftfreq", "rfftfreq")}
    assert covered == public


@pytest.mark.parametrize("kind", sorted(BAD))
@pytest.mark.parametrize("case", sorted(CALLS))
def test_non_numeric_dtype_is_a_typeerror_naming_argument_dtype_and_accepted(backend, case, kind):
    bad = BAD[kind]
    op = case.split("[")[0]
    with pytest.raises(TypeError) as info:
        CALLS[case](bad)
    msg = str(info.value)
    assert msg.startswith(f"{op}: argument '"), msg
    assert f"has dtype {bad.dtype}; expected " in msg
    if op != "gk.sparse.csr_matrix":
        assert "numeric dtype (bool, integer, float16/32/64 or complex64/128)" in msg


@pytest.mark.parametrize("case", ["gk.matmul", "gk.linalg.solve", "gk.fft.fft", "gk.linalg.cg"])
def test_refused_before_any_transfer_to_a_device(fake_device, case):
    # The device backend never sees the array: no transfer is counted, none is guarded.
    gk.reset_transfer_stats()
    with gk.transfer_guard("disallow"), pytest.raises(TypeError, match="has dtype <U1"):
        CALLS[case](BAD["str"])
    assert gk.transfer_stats().host_to_device.calls == 0


def test_lists_are_checked_too(backend):
    with pytest.raises(TypeError, match=r"gk.matmul: argument 'a' has dtype <U1"):
        gk.matmul([["a"]], [[1.0]])
    with pytest.raises(TypeError, match=r"gk.fft.fft: argument 'x' has dtype <U1"):
        gk.fft.fft(["a", "b"])


def test_fast_matmul_path_refuses_object_arrays_numpy_would_multiply():
    a = np.ones((2, 2), dtype=object)
    with gk.use_backend("numpy"), pytest.raises(TypeError, match="argument 'a' has dtype object"):
        gk.matmul(a, a)


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint16", "int64", "float16", ">f8", "complex64"]
)
def test_numeric_dtypes_and_byte_orders_are_accepted(backend, dtype):
    a = np.eye(3).astype(dtype)
    assert gk.to_numpy(gk.matmul(a, a)).shape == (3, 3)
    assert gk.to_numpy(gk.fft.fft(a)).shape == (3, 3)
    assert gk.to_numpy(gk.linalg.det(a)).shape == ()


def test_sparse_entries_are_those_every_backend_stores(backend):
    with pytest.raises(TypeError, match=r"argument 'arg1' has dtype int64; expected bool, "):
        gk.sparse.csr_matrix(np.eye(2, dtype=np.int64))
    assert gk.sparse.csr_matrix(np.eye(2, dtype=np.int64), dtype=np.float32).dtype == np.float32
    with pytest.raises(TypeError, match=r"dtype=.*int.* is not supported; expected bool"):
        gk.sparse.csr_matrix(np.eye(2), dtype=np.int32)


def test_big_endian_host_data_is_converted_before_dispatch():
    # CuPy would reinterpret big-endian bytes (cupy/cupy#3652); gpukit converts first.
    from gpukit._dispatch import dtypes as _dtypes

    a = np.arange(6.0).astype(">f8")
    got = _dtypes.check("gk.fft.fft", "x", a)
    assert got.dtype == np.float64 and got.dtype.isnative
    assert np.array_equal(got, np.arange(6.0))
    native = np.arange(6.0)
    assert _dtypes.check("gk.fft.fft", "x", native) is native  # no copy otherwise


# -- array types whose meaning no backend keeps: masked arrays, numpy.matrix ---------------
F64 = np.ones(3)
# every public callable taking arrays that CALLS does not cover, first array argument replaced
MORE_CALLS = {
    "gk.asarray": lambda bad: gk.asarray(bad),
    "gk.to_numpy": lambda bad: gk.to_numpy(bad),
    "gk.kernels.bias_activation": lambda bad: gk.kernels.bias_activation(bad, F64),
    "gk.kernels.bias_activation_backward": lambda bad: gk.kernels.bias_activation_backward(
        bad, bad, F64, "relu"
    ),
    "gk.kernels.sgd_update": lambda bad: gk.kernels.sgd_update(bad, bad, lr=0.1),
    "gk.kernels.adam_update": lambda bad: gk.kernels.adam_update(
        np.ones((3, 3)), bad, np.zeros((3, 3)), np.zeros((3, 3)), step=1, lr=0.1
    ),
    "gk.kernels.softmax_cross_entropy": lambda bad: gk.kernels.softmax_cross_entropy(
        bad, np.zeros(3, int)
    ),
    "gk.kernels.softmax_cross_entropy_backward": (
        lambda bad: gk.kernels.softmax_cross_entropy_backward(bad, np.zeros(3, int), F64)
    ),
    "gk.kernels.matmul_tiled": lambda bad: gk.kernels.matmul_tiled(
        bad.astype(np.float32), np.ones((3, 3), np.float32)
    ),
    "gk.nn.Module": lambda bad: gk.nn.Linear(3, 2, dtype="float64")(bad),
    "gk.nn.MSELoss": lambda bad: gk.nn.MSELoss()(bad, np.ones((3, 3))),
    "gk.nn.fit": lambda bad: gk.nn.fit(
        gk.nn.Linear(3, 3, dtype="float64"),
        gk.nn.MSELoss(),
        gk.optim.SGD(gk.nn.Linear(3, 3).parameters(), lr=0.1),
        bad,
        np.ones((3, 3)),
        epochs=1,
        batch_size=3,
    ),
    "gk.nn.predict": lambda bad: gk.nn.predict(gk.nn.Linear(3, 2, dtype="float64"), bad),
}
WRAPPERS = {
    "masked": lambda a: np.ma.masked_array(a, mask=np.eye(*a.shape[:2], dtype=bool)),
    "matrix": lambda a: np.matrix(a),
}


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("kind", sorted(WRAPPERS))
@pytest.mark.parametrize("case", sorted({**CALLS, **MORE_CALLS}))
def test_masked_arrays_and_matrices_are_refused_everywhere(case, kind):
    call = {**CALLS, **MORE_CALLS}[case]
    op = case.split("[")[0]
    bad = WRAPPERS[kind](np.eye(3) * 2.0)
    with pytest.raises(TypeError) as info:
        call(bad)
    msg = str(info.value)
    if op.startswith(("gk.matmul", "gk.fft", "gk.linalg", "gk.sparse", "gk.kernels", "gk.as")):
        assert msg.startswith(f"{op}: argument '"), msg
    want = (
        "is a numpy.ma masked array; gpukit would ignore its mask"
        if kind == "masked"
        else ("is a numpy.matrix")
    )
    assert want in msg, msg


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_types_seen_before_do_not_let_foreign_arrays_through():
    """The refusal remembers the types that passed it: after lists, arrays and their
    subclasses have passed, None, masked arrays and matrices are still refused, and so is
    a proxy whose ``__class__`` claims a masked array, though instances of the same proxy
    class claiming a list, or their own class (a proxy with no target yet), passed just
    before."""
    from gpukit._dispatch.dtypes import refuse_foreign

    class Claims:
        def __init__(self, cls):
            self._cls = cls

        @property
        def __class__(self):
            return type(self) if self._cls is None else self._cls

    class Sub(np.ndarray):
        pass

    for _ in range(2):
        for plain in ([1.0], np.ones(2), np.ones(2).view(Sub), 3.0, Claims(list), Claims(None)):
            refuse_foreign("op", "a", plain)
        for bad, words in [
            (None, "got None"),
            (np.ma.masked_array([1.0]), "masked array"),
            (np.matrix([[1.0]]), "numpy.matrix"),
            (Claims(np.ma.MaskedArray), "masked array"),
        ]:
            with pytest.raises(TypeError, match=words):
                refuse_foreign("op", "a", bad)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_the_remembered_types_under_threads():
    """Threads passing new types (past the bound of remembered ones) and foreign arrays at
    once: every foreign array is refused, every plain one passes."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from gpukit._dispatch.dtypes import refuse_foreign

    start = threading.Barrier(8)

    def let_through(seed: int) -> list:
        """The foreign arrays the refusal let through while this thread added types."""
        start.wait()
        passed = []
        for i in range(40):
            refuse_foreign("op", "a", type(f"Plain{seed}_{i}", (), {})())
            for bad in (None, np.ma.masked_array([1.0]), np.matrix([[1.0]])):
                try:
                    refuse_foreign("op", "a", bad)
                except TypeError:
                    continue
                passed.append(bad)
        return passed

    with ThreadPoolExecutor(8) as pool:
        assert [bad for passed in pool.map(let_through, range(8)) for bad in passed] == []


def test_the_refusal_does_not_import_numpy_ma(tmp_path):
    from subproc import run_python

    code = (
        "import sys, numpy as np, gpukit as gk\n"
        "had = 'numpy.ma' in sys.modules\n"
        "gk.matmul(np.ones((2, 2)), [[1.0], [2.0]])\n"
        "print(had, 'numpy.ma' in sys.modules)"
    )
    proc = run_python(code, env={"GPUKIT_BACKEND": "numpy"})
    assert proc.returncode == 0, proc.stderr
    had, after = proc.stdout.split()
    assert after == had  # the check looks in sys.modules, never imports numpy.ma


# -- big-endian input gives the native answer wherever a numeric dtype is accepted -----------
def _leaves(result):
    """The numbers and arrays of a result (tuples, named tuples, sparse matrices, infos)."""
    if hasattr(result, "toarray"):
        return [gk.to_numpy(result.toarray())]
    if isinstance(result, tuple):
        return [leaf for r in result for leaf in _leaves(r)]
    if hasattr(result, "dtype") or isinstance(result, int | float | complex):
        return [np.asarray(gk.to_numpy(result))]
    return []


SPD = np.eye(3) * 2.0 + 0.1  # a valid operand for every call (symmetric positive definite)


@pytest.mark.parametrize("case", sorted(CALLS))
def test_big_endian_input_gives_the_native_result(backend, case):
    native = _leaves(CALLS[case](SPD))
    swapped = _leaves(CALLS[case](SPD.astype(">f8")))
    assert len(native) == len(swapped) > 0
    for a, b in zip(native, swapped, strict=True):
        assert np.allclose(a, b, rtol=1e-12, atol=0, equal_nan=True)


def test_big_endian_input_in_kernels_and_nn(backend, rng):
    x = rng.standard_normal((4, 3))
    bias = rng.standard_normal(3)
    want = gk.to_numpy(gk.kernels.bias_activation(x, bias, "gelu"))
    got = gk.to_numpy(gk.kernels.bias_activation(x.astype(">f8"), bias.astype(">f8"), "gelu"))
    assert np.array_equal(want, got)
    p, g = rng.standard_normal(3).astype(">f8"), rng.standard_normal(3)
    with pytest.raises(ValueError, match=r"param is updated in place but has non-native byte"):
        gk.kernels.sgd_update(p, g, lr=0.1)  # a converted copy would be updated instead
    model = gk.nn.Linear(3, 2, seed=0, dtype=">f8")  # parameters in native order
    assert model.weight.dtype.isnative
    xb = x.astype(">f8")
    assert np.array_equal(gk.to_numpy(model(xb)), gk.to_numpy(model(x)))
    loss = gk.nn.MSELoss()
    assert float(loss(x, x.astype(">f8"))) == 0.0
