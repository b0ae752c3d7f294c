"""gk.matmul against float64 NumPy references on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpukit as gk
from gpukit.testing import random_array

from fakedevice import FakeDeviceArray
from helpers import TOL, rel_err, same_errors_warm_as_cold, terms_err

DTYPES = ["float32", "float64", "complex64", "complex128"]
SHAPES = [
    ((8, 8), (8, 8)),
    ((7, 9), (9, 11)),  # odd
    ((5,), (5, 3)),  # vector @ matrix
    ((4, 5), (5,)),  # matrix @ vector
    ((5,), (5,)),  # inner product: 0-d result
    ((3, 1, 4, 5), (2, 5, 6)),  # broadcast batch
    ((6, 3, 4), (4, 2)),  # batch @ matrix
]


def _check(a, b, got, dtype):
    ref = np.matmul(a.astype(np.complex128), b.astype(np.complex128))
    assert got.dtype == np.matmul(a, b).dtype
    assert got.shape == ref.shape
    # judged against |a| @ |b|: a float32 dot of 5 terms summing to 0.003 was 1.3e-5 off
    terms = np.matmul(np.abs(a.astype(np.complex128)), np.abs(b.astype(np.complex128)))
    assert terms_err(got, ref, terms) < TOL[np.dtype(dtype)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("a_shape", "b_shape"), SHAPES)
def test_matmul_matches_numpy(backend, rng, a_shape, b_shape, dtype):
    a, b = random_array(a_shape, dtype, rng=rng), random_array(b_shape, dtype, rng=rng)
    got = gk.matmul(gk.asarray(a), gk.asarray(b))
    assert backend.owns(got)
    _check(a, b, got, dtype)


@pytest.mark.parametrize("precision", [None, "highest", "tf32"])
def test_precision_full_on_host_and_close_on_gpu(backend, rng, precision):
    a, b = random_array((64, 48), "float32", rng=rng), random_array((48, 32), "float32", rng=rng)
    got = gk.matmul(gk.asarray(a), gk.asarray(b), precision=precision)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # TF32 keeps ~10 mantissa bits on tensor-core GPUs; everywhere else it is exact float32.
    tol = 1e-2 if precision == "tf32" and backend.is_device else TOL[np.dtype(np.float32)]
    assert rel_err(got, ref) < tol


def test_mixed_dtypes_and_lists_follow_numpy_promotion(backend, rng):
    a, b = random_array((3, 4), "float32", rng=rng), random_array((4, 2), "float64", rng=rng)
    got = gk.matmul(gk.asarray(a), gk.asarray(b))
    assert got.dtype == np.float64
    assert rel_err(got, a.astype(np.float64) @ b) < 1e-12
    assert rel_err(gk.matmul(a.tolist(), b.tolist()), a.astype(np.float64) @ b) < 1e-12


BAD = [
    ((2, 3), (4, 5), "contracted dimensions differ"),
    ((3,), (4,), "contracted dimensions differ"),
    ((2, 3, 4), (3, 4, 5), "batch dimensions (2,) and (3,) do not broadcast"),
    ((), (3,), "at least one dimension"),
]


@pytest.mark.parametrize(("a_shape", "b_shape", "why"), BAD)
def test_shape_errors_name_both_shapes(backend, a_shape, b_shape, why):
    a, b = gk.asarray(np.ones(a_shape)), gk.asarray(np.ones(b_shape))
    with pytest.raises(ValueError) as fast:
        gk.matmul(a, b)
    msg = str(fast.value)
    assert f"a has shape {a_shape}" in msg and f"b has shape {b_shape}" in msg and why in msg
    with pytest.raises(ValueError) as slow:  # "highest" takes the dispatched path
        gk.matmul(a, b, precision="highest")
    assert str(slow.value) == msg


@pytest.mark.parametrize(
    ("precision", "error", "named"),
    [("fast", ValueError, "'fast'"), ("TF32", ValueError, "'TF32'"), (3, TypeError, "int")],
)
def test_a_bad_precision_is_named(backend, precision, error, named):
    a = gk.asarray(np.ones((2, 2)))
    with pytest.raises(error, match=f"precision must be None, 'highest' or 'tf32', got {named}"):
        gk.matmul(a, a, precision=precision)


def test_a_warm_matmul_raises_what_a_cold_one_raises(backend, xp):
    """Calls on the backend's own arrays keep a plan per types, dtypes, shapes and
    precision: after valid calls kept theirs, each refusal is still made, with the same
    exception and message (the transfer guard's included)."""
    a, b = xp.ones((2, 3)), xp.ones((3, 4))
    warm = [lambda: gk.matmul(a, b), lambda: gk.matmul(a, b, precision="highest")]
    with gk.transfer_guard("disallow"):
        same_errors_warm_as_cold(
            warm,
            [
                lambda: gk.matmul(a, xp.ones((4, 5))),
                lambda: gk.matmul(xp.ones((2, 3, 4)), xp.ones((3, 4, 5))),
                lambda: gk.matmul(a, b, precision="fast"),
                lambda: gk.matmul(a, b, precision=3),
                lambda: gk.matmul(a, xp.ones((3, 4), "U1")),
                lambda: gk.matmul(a, None),
                *([lambda: gk.matmul(a, np.ones((3, 4)))] if backend.is_device else []),
            ],
        )


def test_precision_is_keyword_only(backend, rng):
    """NumPy's third positional argument is ``out``; gk.matmul takes no third positional
    argument, so an array or a precision name there is Python's own TypeError."""
    a = gk.asarray(random_array((3, 3), "float64", rng=rng))
    out = gk.asarray(np.empty((3, 3)))
    with pytest.raises(TypeError, match="positional argument"):
        gk.matmul(a, a, out)
    with pytest.raises(TypeError, match="positional argument"):
        gk.matmul(a, a, "highest")
    host = gk.to_numpy(a).astype(np.float64)
    assert rel_err(gk.matmul(a, a, precision="highest"), host @ host) < 1e-14


def test_fast_path_result_is_a_plain_ndarray(rng):
    a = random_array((8, 8), "float32", rng=rng)
    with gk.use_backend("numpy"):
        got = gk.matmul(a, a)
    assert type(got) is np.ndarray
    assert rel_err(got, a.astype(np.float64) @ a) < 1e-5


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: np.ones((2, 2), dtype=object), TypeError),
        (lambda: np.ones((2, 2), dtype=np.longdouble), TypeError),
        (lambda: np.array([["a", "b"], ["c", "d"]]), TypeError),
        (lambda: np.ones((2, 3), dtype=object), TypeError),  # the dtype before the shape
        # two 1-d object arrays: NumPy returns a Python scalar, no array (the fuzz test)
        (lambda: np.array([0.0], dtype=object), TypeError),
    ],
)
def test_fast_path_refuses_what_the_checked_path_refuses(make, expected):
    a = make()
    with gk.use_backend("numpy"):
        gk.matmul(np.ones((2, 2)), np.ones((2, 2)))  # warm: the fast path is armed
        with pytest.raises(expected, match=r"gk\.matmul: argument 'a' has dtype"):
            gk.matmul(a, a)


def test_fast_path_follows_the_active_backend(fake_device, rng):
    a = random_array((4, 4), "float64", rng=rng)
    with gk.use_backend("numpy"):
        assert type(gk.matmul(a, a)) is np.ndarray  # arms the fast path
    assert isinstance(gk.matmul(a, a), FakeDeviceArray)  # fake_device is active here


def test_host_inputs_move_to_the_device_backend(fake_device, rng):
    a, b = random_array((3, 4), "float64", rng=rng), random_array((4, 5), "float64", rng=rng)
    gk.reset_transfer_stats()
    got = gk.matmul(a, b)
    assert isinstance(got, FakeDeviceArray)
    assert gk.transfer_stats().host_to_device.calls == 2
    assert rel_err(np.asarray(got), a @ b) < 1e-12


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    shapes=hnp.mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=3, max_side=6),
    dtype=st.sampled_from(DTYPES),
)
def test_matmul_property_any_broadcastable_shapes(backend, rng, shapes, dtype):
    a_shape, b_shape = shapes.input_shapes
    a, b = random_array(a_shape, dtype, rng=rng), random_array(b_shape, dtype, rng=rng)
    got = gk.matmul(gk.asarray(a), gk.asarray(b))
    assert got.shape == shapes.result_shape
    if np.prod(shapes.result_shape) and a.size and b.size:
        _check(a, b, got, dtype)
