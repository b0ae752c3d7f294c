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
