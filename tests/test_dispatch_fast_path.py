"""The warm host path of dispatch (issue 20) skips searches, never their outcome.

``@operation`` and ``prepare`` return early when every argument is plain host data on a
host backend; each case here has one argument that must leave that path: an array kind
(sharded), a device array, by position or by keyword, and host data on a device backend.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk
from gpukit._dispatch import operation, prepare
from gpukit_numpy import NumpyBackend


@operation("gk.test_where")
def _where(a, b=None, *, c=None):
    """Where it ran: the active backend and its current device, and the inputs as given."""
    backend = gk.get_backend()
    return backend.name, backend.current_device(), (a, b, c)


PLAIN = [np.ones(3), 2, 2.5, 1j, True, None, "s", (1, 2), [1.0], {"k": 1}, np.float32(1)]


@pytest.mark.parametrize("value", PLAIN, ids=lambda v: type(v).__name__)
def test_plain_arguments_run_the_function_as_given(value):
    with gk.use_backend("numpy"):
        name, device, (a, b, c) = _where(value, b=value, c=value)
    assert (name, device) == ("numpy", 0)
    assert a is value and b is value and c is value


@pytest.mark.parametrize("where", ["positional", "keyword"])
def test_a_sharded_argument_anywhere_reaches_its_kind(rng, where):
    with gk.use_backend(NumpyBackend(2)):  # two virtual CPU devices
        x = gk.shard(rng.standard_normal(8))
        args = (np.ones(2), x) if where == "positional" else (np.ones(2),)
        kwargs = {} if where == "positional" else {"c": x}
        with pytest.raises(TypeError, match=r"gk\.test_where does not accept a ShardedArray"):
            _where(*args, **kwargs)


@pytest.mark.parametrize("where", ["positional", "keyword"])
def test_a_device_array_anywhere_makes_its_device_current(fake_device, where):
    x = fake_device.asarray(np.ones(2), device=1)
    assert fake_device.current_device() == 0
    args, kwargs = ((np.ones(2), x), {}) if where == "positional" else ((np.ones(2),), {"c": x})
    name, device, _ = _where(*args, **kwargs)
    assert (name, device) == ("fakedevice", 1)


def test_prepare_keeps_host_arrays_on_a_host_backend_and_moves_them_to_a_device(fake_device):
    x, y = np.arange(3.0), np.ones(3)
    with gk.use_backend("numpy"):
        backend, (a, b, none) = prepare(x, y, None)
    assert backend.name == "numpy" and a is x and b is y and none is None
    backend, (a, b, none) = prepare(x, y, None)  # fakedevice active: an implicit transfer
    assert backend is fake_device and none is None
    assert all(fake_device.owns(v) for v in (a, b))
    np.testing.assert_array_equal(fake_device.to_numpy(a), x)


@operation("gk.test_six")
def _six(a, b, c, d, e, f):
    """Where it ran: the active backend and its current device."""
    backend = gk.get_backend()
    return backend.name, backend.current_device()


@pytest.mark.parametrize("position", range(6))
def test_after_warm_plain_calls_an_array_anywhere_still_leaves_the_plain_path(
    rng, fake_device, position
):
    plain = [np.ones(2), None, (1,), "s", 2, 2.5]
    with gk.use_backend(NumpyBackend(2)):  # two virtual CPU devices
        for _ in range(3):
            assert _six(*plain) == ("numpy", 0)
        x = gk.shard(rng.standard_normal(8))
        with pytest.raises(TypeError, match=r"gk\.test_six does not accept a ShardedArray"):
            _six(*plain[:position], x, *plain[position + 1 :])
    device_array = fake_device.asarray(np.ones(2), device=1)
    assert _six(*plain[:position], device_array, *plain[position + 1 :]) == ("fakedevice", 1)


def test_a_device_array_on_the_current_device_or_another_runs_there_and_restores(fake_device):
    on0 = fake_device.asarray(np.ones(2), device=0)
    on1 = fake_device.asarray(np.ones(2), device=1)
    with fake_device.use_device(1):
        for _ in range(3):  # warm routes: the device is still read per call
            assert _six(on1, None, None, None, None, None) == ("fakedevice", 1)
            assert fake_device.current_device() == 1
            assert _six(on0, None, None, None, None, None) == ("fakedevice", 0)
            assert fake_device.current_device() == 1


def test_a_route_kept_for_a_first_array_is_not_taken_by_other_arguments(rng, fake_device):
    # a call whose first argument is of the only type that is not plain among them keeps
    # its route under that type alone (the route of such arrays: the first one's device);
    # calls with an argument of another such type, anywhere, or with the array elsewhere,
    # must not take it (warm, each call in turn)
    on0 = fake_device.asarray(np.ones(2), device=0)
    on1 = fake_device.asarray(np.ones(2), device=1)
    with gk.use_backend(NumpyBackend(2)):  # two virtual CPU devices
        sharded = gk.shard(rng.standard_normal(8))
    refused = r"gk\.test_where does not accept a ShardedArray"
    for _ in range(3):
        assert _where(on1)[:2] == ("fakedevice", 1)
        assert _where(on1, None, c="s")[:2] == ("fakedevice", 1)
        assert _where(on1, on1)[:2] == ("fakedevice", 1)  # repeated
        assert _where(on0, on1)[:2] == ("fakedevice", 0)  # the first one's device
        assert _where(on1, on0)[:2] == ("fakedevice", 1)
        assert _where(on1, c=on0)[:2] == ("fakedevice", 1)
        assert _where(np.ones(2), on1)[:2] == ("fakedevice", 1)
        assert _where(np.ones(2), c=on1)[:2] == ("fakedevice", 1)
        with pytest.raises(TypeError, match=refused):
            _where(on1, sharded)
        with pytest.raises(TypeError, match=refused):
            _where(on1, c=sharded)
        with pytest.raises(TypeError, match=refused):
            _where(sharded)
        assert fake_device.current_device() == 0


# -- the generated front (gpukit._dispatch.front): the operation's own signature --------
@operation("gk.test_shapes")
def _shapes(a, /, b, *rest, c=None, **more):
    """Its arguments as received, and where it ran."""
    backend = gk.get_backend()
    return backend.name, backend.current_device(), (a, b, rest, c, more)


def test_the_front_binds_as_the_operation_does():
    with gk.use_backend("numpy"):
        _, _, got = _shapes(1, 2, 3, 4, c=5, d=6)
        assert got == (1, 2, (3, 4), 5, {"d": 6})
        _, _, got = _shapes(1, b=2)
        assert got == (1, 2, (), None, {})
        # the operation's own TypeErrors, word for word, before anything runs
        bad = [
            (_shapes, (1,), {}),
            (_shapes, (), {"a": 1, "b": 2}),
            (_where, (1,), {"d": 2}),
            (_where, (1, 2, 3), {}),
            (_six, tuple(range(7)), {}),
            (_six, (1,), {"b": 2}),
        ]
        for op, args, kwargs in bad:
            with pytest.raises(TypeError) as own:
                op.__wrapped__(*args, **kwargs)
            with pytest.raises(TypeError) as got:
                op(*args, **kwargs)
            assert str(got.value) == str(own.value)
            assert op.__name__ in str(got.value)


@pytest.mark.parametrize("where", ["rest", "more"])
def test_a_sharded_argument_among_variadic_ones_reaches_its_kind(rng, where):
    with gk.use_backend(NumpyBackend(2)):  # two virtual CPU devices
        x = gk.shard(rng.standard_normal(8))
        for _ in range(2):  # warm, then the array
            assert _shapes(1, 2, 3, d=4)[:2] == ("numpy", 0)
        args, kwargs = ((1, 2, x), {}) if where == "rest" else ((1, 2), {"d": x})
        with pytest.raises(TypeError, match=r"gk\.test_shapes does not accept a ShardedArray"):
            _shapes(*args, **kwargs)


@pytest.mark.parametrize("where", ["rest", "more"])
def test_a_device_array_among_variadic_ones_makes_its_device_current(fake_device, where):
    x = fake_device.asarray(np.ones(2), device=1)
    args, kwargs = ((1, 2, x), {}) if where == "rest" else ((1, 2), {"d": x})
    for _ in range(2):
        assert _shapes(*args, **kwargs)[:2] == ("fakedevice", 1)
        assert fake_device.current_device() == 0


@operation("gk.test_narrow")
def _narrow(a, b=None, *, c=False, d=None):
    raise AssertionError("a sharded argument runs the kind's implementation")


def test_a_kind_gets_the_call_as_given(rng):
    # the front binds the positional arguments (a default included) and passes keywords
    # as given: the kind's implementation, with a signature of its own, gets neither a
    # trailing positional default nor a keyword it was not given
    from gpukit._dispatch import implements

    received = []

    @implements("gk.test_narrow", "sharded")
    def narrow(a, *, c=True):  # fewer parameters, and a default of its own
        received.append((a, c))
        return "sharded"

    with gk.use_backend(NumpyBackend(2)):  # two virtual CPU devices
        x = gk.shard(rng.standard_normal(8))
    for _ in range(2):  # cold and warm route
        assert _narrow(x) == "sharded" and received.pop() == (x, True)
        assert _narrow(x, None) == "sharded" and received.pop() == (x, True)
        assert _narrow(x, c=False) == "sharded" and received.pop() == (x, False)
        assert _narrow(a=x) == "sharded" and received.pop() == (x, True)
        with pytest.raises(TypeError, match="'d'"):  # given: passed on, refused there
            _narrow(x, d=None)


def test_parameters_named_as_the_fronts_own_names_are_theirs(fake_device):
    @operation("gk.test_names")
    def names(value, plan=None, *, type=None, plain=None, exc=None):
        return gk.get_backend().current_device(), (value, plan, type, plain, exc)

    with gk.use_backend("numpy"):
        assert names(1, 2, type=3, plain=4, exc=5) == (0, (1, 2, 3, 4, 5))
        assert names(value=1) == (0, (1, None, None, None, None))
    x = fake_device.asarray(np.ones(2), device=1)
    for _ in range(2):
        device, (value, *rest) = names(x, None, type="t")
        assert device == 1 and value is x and rest == [None, "t", None, None]

    def taken(_gk_plain):
        pass

    with pytest.raises(TypeError, match=r"gk\.test_taken: parameter names starting with _gk_"):
        operation("gk.test_taken")(taken)


def test_a_lambda_is_an_operation_too():
    square = operation("gk.test_lambda")(lambda x, *, k=2: x**k)
    with gk.use_backend("numpy"):
        assert square(3) == 9 and square(2, k=3) == 8
        with pytest.raises(TypeError, match="<lambda>"):
            square()
