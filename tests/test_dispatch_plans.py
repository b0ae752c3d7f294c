"""Dispatch plans (gpukit._runtime.plans): a warm call skips the searches, never a check.

After a first call with given argument types, ``@operation`` and ``prepare`` reuse the
decision made for those types (which backend owns them, where the call runs). Each test
warms a call, then shows that what depends on values, the context or the registry still
decides: dtype, shape and finite errors, the transfer guard and its log, the transfer
counters, the out-of-memory retry, device mismatches, context-local selection, a backend
registered later, and threads racing with the registry. No environment variable is read
on a warm call.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
from subproc import run_python

import gpukit as gk
from gpukit._dispatch import operation, prepare
from gpukit._runtime import plans

from fakedevice import FakeDeviceBackend
from helpers import rel_err


@operation("gk.test_where")
def _where(a, b=None, *, c=None):
    """Where it ran (the backend and its current device) and the prepared inputs."""
    backend, (a, b, c) = prepare(a, b, c, names=("a", "b", "c"))
    return backend.name, backend.current_device(), (a, b, c)


def _spd(rng, n=4):
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def _warm(call, times=3):
    for _ in range(times):
        call()


# -- errors and checks on the warm path ------------------------------------------------------


def test_a_warm_call_still_refuses_a_bad_dtype_shape_or_value(rng):
    a = _spd(rng)
    with gk.use_backend("numpy"):
        _warm(lambda: gk.linalg.inv(a))
        with pytest.raises(TypeError, match=r"gk\.linalg\.inv: argument 'a' has dtype <U1"):
            gk.linalg.inv(np.full((2, 2), "x"))
        with pytest.raises(ValueError, match="stack of square matrices, got shape"):
            gk.linalg.inv(np.ones((2, 3)))
        bad = a.copy()
        bad[1, 2] = np.nan
        with pytest.raises(ValueError, match="argument 'a' holds NaN or inf"):
            gk.linalg.inv(bad)
        with pytest.raises(gk.LinAlgError, match="singular"):
            gk.linalg.inv(np.zeros((4, 4)))
        got = gk.linalg.inv(a)
    assert rel_err(got @ a, np.eye(4)) < 1e-12


def test_a_warm_call_on_device_arrays_still_refuses_a_bad_dtype_and_mixed_devices(fake_device):
    a0 = fake_device.asarray(np.eye(3), device=0)
    _warm(lambda: gk.linalg.inv(a0))
    with pytest.raises(TypeError, match=r"argument 'a' has dtype <U1"):
        gk.linalg.inv(fake_device.asarray(np.full((3, 3), "x")))
    b1 = fake_device.asarray(np.ones(3), device=1)
    b0 = fake_device.asarray(np.ones(3), device=0)
    _warm(lambda: gk.linalg.solve(a0, b0))
    with pytest.raises(gk.DeviceMismatchError, match="'b' is on fakedevice:1 but argument 'a'"):
        gk.linalg.solve(a0, b1)
    a1 = fake_device.asarray(np.eye(3), device=1)
    name, device, _ = _where(a1)  # a warm route for this type, another device
    assert (name, device) == ("fakedevice", 1)


def test_one_device_array_is_planned_on_a_backend_with_several_devices(fake_device, monkeypatch):
    from gpukit._dispatch import inputs

    a0 = fake_device.asarray(np.diag([2.0, 4.0, 8.0]), device=0)
    a1 = fake_device.asarray(np.diag([1.0, 2.0, 4.0]), device=1)
    _warm(lambda: gk.linalg.inv(a0))
    _warm(lambda: gk.fft.fft(a0))
    searched, current = [], []
    placement, inv, transform = inputs.placement, fake_device.linalg_inv, fake_device.fft_transform
    monkeypatch.setattr(inputs, "placement", lambda *a: searched.append(a) or placement(*a))
    monkeypatch.setattr(
        fake_device, "linalg_inv", lambda a: current.append(fake_device.current_device()) or inv(a)
    )
    monkeypatch.setattr(
        fake_device,
        "fft_transform",
        lambda *a: current.append(fake_device.current_device()) or transform(*a),
    )
    inverse, spectrum = gk.linalg.inv(a1), gk.fft.fft(a1)  # the plans of device 0's arrays
    assert searched == []  # planned: no per-call placement
    assert current == [1, 1]  # each ran on its array's device
    assert rel_err(np.asarray(inverse), np.diag([1.0, 0.5, 0.25])) < 1e-15
    assert rel_err(np.asarray(spectrum), np.fft.fft(np.diag([1.0, 2.0, 4.0]))) < 1e-15
    b0 = fake_device.asarray(np.ones(3), device=0)
    with pytest.raises(gk.DeviceMismatchError, match="'b' is on fakedevice:0 but argument 'a'"):
        gk.linalg.solve(a1, b0)  # two arrays: their devices compared on every call
    assert searched


class _CountingTable(dict):
    """A plan table counting its look-ups."""

    looked = 0

    def __getitem__(self, key):
        self.looked += 1
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.looked += 1
        return super().get(key, default)


def test_a_warm_pair_on_one_of_several_devices_takes_one_look_up(fake_device):
    from gpukit._dispatch import inputs

    table = _CountingTable()
    x0, y0 = (fake_device.asarray(np.ones((2, 2)), device=0) for _ in range(2))
    y1 = fake_device.asarray(np.ones((2, 2)), device=1)
    plan, key = inputs.plan_for_pair(table, "op", x0, y0, None)
    assert plan is None
    inputs.keep(table, key, plans.generation(), "planned", fake_device, (x0, y0), (x0, y0))
    table.looked = 0
    assert inputs.plan_for_pair(table, "op", x0, y0, None) == ("planned", key)
    assert table.looked == 1  # the key naming their device, at once
    assert inputs.plan_for_pair(table, "op", x0, y1, None)[0] is None  # two devices: none
    x1 = fake_device.asarray(np.ones((2, 2)), device=1)
    assert inputs.plan_for_pair(table, "op", x1, y1, None)[0] is None  # another device


# -- the transfer guard, its log and the counters ------------------------------------------------


def test_a_warm_implicit_transfer_is_counted_guarded_and_logged(fake_device, rng, caplog):
    x = rng.standard_normal(8)
    _warm(lambda: gk.fft.fft(x))  # an implicit host-to-device transfer, allowed
    gk.reset_transfer_stats()
    gk.fft.fft(x)
    assert gk.transfer_stats().host_to_device.calls == 1
    with gk.transfer_guard("disallow"), pytest.raises(gk.TransferGuardError, match="refused"):
        gk.fft.fft(x)
    with caplog.at_level(logging.WARNING, logger="gpukit"), gk.transfer_guard("log"):
        got = gk.fft.fft(x)
    assert any("implicit host-to-device transfer of argument" in r.message for r in caplog.records)
    assert rel_err(np.asarray(got), np.fft.fft(x)) < 1e-12
    assert gk.transfer_stats().host_to_device.calls == 2  # the refused one moved nothing


def _refused(call):
    """``call`` with implicit transfers refused."""

    def refused():
        with gk.transfer_guard("disallow"):
            return call()

    return refused


def test_a_host_input_takes_the_plan_of_the_device_array_it_becomes(fake_device, rng, monkeypatch):
    """A NumPy input of a device backend's FFT is checked, guarded, counted and moved on
    every call, then transformed by the plan kept for device arrays like the moved one;
    every refusal is the cold call's."""
    from helpers import same_errors_warm_as_cold

    x = rng.standard_normal(16)
    swapped = x.astype(">f8")  # converted to native order, then moved
    same_errors_warm_as_cold(
        [lambda: gk.fft.fft(x), lambda: gk.fft.rfft(swapped), lambda: gk.fft.fft2(x.reshape(4, 4))],
        [
            _refused(lambda: gk.fft.fft(x)),
            _refused(lambda: gk.fft.fft(x, norm="none")),  # the argument first, as cold
            lambda: gk.fft.fft(x, norm="none"),
            lambda: gk.fft.fft(x, axis=1),  # checked after the move, as cold
            lambda: gk.fft.rfft(x + 1j),
            lambda: gk.fft.fft(np.full(16, "x")),
            lambda: gk.fft.fft2(x),  # one dimension: refused after the move
            _refused(lambda: gk.fft.fft2(x)),
        ],
    )
    planned, moved = [], []
    plan, asarray = fake_device.fft_plan, fake_device.asarray
    monkeypatch.setattr(fake_device, "fft_plan", lambda *a: planned.append(a) or plan(*a))

    def move(*args, **kwargs):
        y = asarray(*args, **kwargs)
        moved.append(fake_device.device_of(y))
        return y

    monkeypatch.setattr(fake_device, "asarray", move)
    gk.reset_transfer_stats()
    got = gk.fft.fft(x), gk.fft.rfft(swapped)
    with fake_device.use_device(1):  # the plan holds no device: the current one's
        got += (gk.fft.fft(x),)
    assert planned == []  # each took the moved array's plan
    assert moved == [0, 0, 1] and gk.transfer_stats().host_to_device.calls == 3
    assert rel_err(np.asarray(got[0]), np.fft.fft(x)) < 1e-12
    assert rel_err(np.asarray(got[1]), np.fft.rfft(x)) < 1e-12
    assert rel_err(np.asarray(got[2]), np.fft.fft(x)) < 1e-12


# -- the out-of-memory policy ---------------------------------------------------------------


@operation("gk.test_scale")
def _scale(x, factor):
    backend, (x,) = prepare(x, names=("x",))
    return backend.scale(x, factor)


def test_a_warm_call_still_frees_retries_and_explains_out_of_memory(rng):
    backend = FakeDeviceBackend()
    gk.register_backend("fakedevice", lambda: backend, replace=True)
    try:
        with gk.use_backend("fakedevice"):
            x = backend.asarray(rng.standard_normal(64).astype(np.float32))
            _warm(lambda: _scale(x, 2.0))
            backend.fail_allocations(1)
            y = _scale(x, 3.0)
            assert backend.releases == 1
            assert rel_err(y, np.asarray(x, dtype=np.float64) * 3.0) < 1e-6
            backend.fail_allocations(2)
            with pytest.raises(gk.OutOfMemoryError, match=r"gk\.test_scale ran out of memory"):
                _scale(x, 2.0)
    finally:
        gk.register_backend("fakedevice", FakeDeviceBackend, replace=True)


# -- selection, context-local ---------------------------------------------------------------


def test_a_warm_route_follows_the_selection_of_each_context(fake_device, rng):
    x = rng.standard_normal(4)
    with gk.use_backend("numpy"):
        _warm(lambda: _where(x))
        assert _where(x)[0] == "numpy"
    assert _where(x)[0] == "fakedevice"  # same types, fakedevice active here
    seen = []

    def other():
        with gk.use_backend("numpy"):
            seen.append(_where(x)[0])

    thread = threading.Thread(target=other)  # its own selection, the same warm route
    thread.start()
    thread.join()
    assert seen == ["numpy"] and _where(x)[0] == "fakedevice"


# -- the registry changing under warm routes --------------------------------------------------


class _LateArray(np.ndarray):
    """An array type no backend owns until the ``late`` backend is created."""

    device_id: int = 0


class _LateBackend(FakeDeviceBackend):
    name = "late"

    def __init__(self) -> None:
        super().__init__(1)

    def owns(self, x):
        return isinstance(x, _LateArray)

    def asarray(self, obj, dtype=None, device=None):
        return super().asarray(obj, dtype, device).view(_LateArray)


def test_a_backend_created_later_takes_over_its_types_and_gives_them_back():
    x = np.ones(3).view(_LateArray)
    with gk.use_backend("numpy"):
        _warm(lambda: _where(x))
        assert _where(x)[0] == "numpy"  # host data while no backend owns the type
        gk.register_backend("late", _LateBackend)
        try:
            with gk.use_backend("late"):
                pass  # creates it: now it owns _LateArray
            _warm(lambda: _where(x))
            assert _where(x)[:2] == ("late", 0)  # one device: nothing to make current
        finally:
            gk.unregister_backend("late")
        assert _where(x)[0] == "numpy"


def test_a_table_starts_over_at_its_limit():
    table = plans.table()
    since = plans.generation()
    for i in range(plans.LIMIT + 5):
        plans.remember(table, i, i, since)
    assert 0 < len(table) <= plans.LIMIT and table[plans.LIMIT + 4] == plans.LIMIT + 4
    plans.forget()
    assert not table
    plans.remember(table, "stale", 1, since)  # decided before the change: not kept
    assert "stale" not in table


# -- threads --------------------------------------------------------------------------------


def test_threads_racing_with_the_registry_always_run_where_their_types_say(rng):
    """Threads call operations on host and fake-device arrays, each under its own
    selection, while another re-registers the fake backend and empties the tables: every
    result is right and runs on the backend its inputs and context call for."""
    gk.register_backend("fakedevice", FakeDeviceBackend, replace=True)
    a = _spd(rng)
    want = np.linalg.inv(a)
    stop = threading.Event()
    errors: list[BaseException] = []

    def churn():
        while not stop.is_set():
            gk.register_backend("fakedevice", FakeDeviceBackend, replace=True)
            plans.forget()

    def work(selection):
        try:
            with gk.use_backend(selection) as backend:
                for i in range(150):
                    x = a if i % 2 else backend.asarray(a)
                    name, _, _ = _where(x, b=np.ones(1))
                    got = gk.linalg.inv(x)
                    assert name == selection, (name, selection)
                    assert rel_err(np.asarray(got), want) < 1e-12
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(s,)) for s in ["numpy", "fakedevice"] * 3]
    churner = threading.Thread(target=churn)
    churner.start()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    churner.join()
    gk.register_backend("fakedevice", FakeDeviceBackend, replace=True)
    assert not errors, errors[0]


# -- no environment variable read on a warm call -----------------------------------------------


class _EnvironSpy(dict):
    """``os.environ`` stand-in recording every read made by gpukit's code."""

    reads: list[str]

    def _note(self, key):
        caller = sys._getframe(2).f_globals.get("__name__", "")
        if caller.startswith(("gpukit", "gpukit_numpy", "gpukit_cupy")):
            self.reads.append(f"{caller}: {key}")

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __contains__(self, key):
        self._note(key)
        return super().__contains__(key)


def _calls(rng, xp_asarray):
    a, v = xp_asarray(_spd(rng)), xp_asarray(rng.standard_normal(16))
    c = xp_asarray(rng.standard_normal(16) + 1j)
    return {
        "matmul": lambda: gk.matmul(a, a),
        "fft.fft": lambda: gk.fft.fft(v),
        "fft.irfft": lambda: gk.fft.irfft(c),
        "fft.fft2": lambda: gk.fft.fft2(a),
        "fft.fftshift": lambda: gk.fft.fftshift(v),
        "fft.fftfreq": lambda: gk.fft.fftfreq(8),
        "linalg.solve": lambda: gk.linalg.solve(a, v[:4]),
        "linalg.inv": lambda: gk.linalg.inv(a),
        "linalg.eigh": lambda: gk.linalg.eigh(a),
        "linalg.norm": lambda: gk.linalg.norm(v),
        "linalg.cg": lambda: gk.linalg.cg(a, v[:4]),
        "asarray": lambda: gk.asarray(v),
        "to_numpy": lambda: gk.to_numpy(v),
    }


@pytest.mark.parametrize(
    ("where", "inputs"),
    [("numpy", "native"), ("fakedevice", "native"), ("fakedevice", "host: implicit transfers")],
)
def test_no_environment_variable_is_read_on_a_warm_call(rng, monkeypatch, where, inputs):
    with gk.use_backend(where) as backend:
        calls = _calls(rng, backend.asarray if inputs == "native" else np.asarray)
        for call in calls.values():
            _warm(call, 2)
        spy = _EnvironSpy(os.environ)
        spy.reads = []
        monkeypatch.setattr(os, "environ", spy)
        for name, call in calls.items():
            call()
            assert not spy.reads, f"{name} read {spy.reads}"


# -- front-end plans: what a warm call of the same key still checks ------------------------------


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_a_warm_fft_plan_still_refuses_what_its_key_does_not_hold(rng):
    x = rng.standard_normal(16)
    with gk.use_backend("numpy"):
        _warm(lambda: gk.fft.fft(x, axis=0, workers=1))
        with pytest.raises(TypeError, match="axis must be an integer, got False"):
            gk.fft.fft(x, axis=False, workers=1)  # equal to 0, not an axis
        with pytest.raises(TypeError, match="workers must be an integer, got True"):
            gk.fft.fft(x, axis=0, workers=True)
        with pytest.raises(ValueError, match="norm must be None"):
            gk.fft.fft(x, axis=0, norm="none", workers=1)
        with pytest.raises(ValueError, match="out of range"):
            gk.fft.fft(x, axis=1, workers=1)
        with pytest.raises(TypeError, match=r"numpy\.matrix"):
            gk.fft.fft(np.asmatrix(x), axis=0, workers=1)
        with pytest.raises(TypeError, match="has dtype <U1"):
            gk.fft.fft(np.full(16, "x"), axis=0, workers=1)
        swapped = x.astype(">f8")  # converted, never planned: right on every call
        for _ in range(3):
            got = gk.fft.fft(swapped, axis=0, workers=1)
            assert rel_err(got, np.fft.fft(x)) < 1e-12
        got = gk.fft.fft(x[:8], axis=0, workers=1)  # another shape, another plan
    assert got.shape == (8,) and rel_err(got, np.fft.fft(x[:8])) < 1e-12


def test_a_warm_n_dimensional_fft_plan_still_refuses_what_its_key_does_not_hold(rng):
    x = rng.standard_normal((4, 6))
    with gk.use_backend("numpy"):
        _warm(lambda: gk.fft.fftn(x))  # axes None: no token
        _warm(lambda: gk.fft.fft2(x, s=(4, 6), axes=(0, 1)))
        with pytest.raises(TypeError, match="axes must be an integer, got True"):
            gk.fft.fft2(x, s=(4, 6), axes=(0, True))  # equal to (0, 1), not axes
        with pytest.raises(TypeError, match=r"s must be an integer, got 6\.0"):
            gk.fft.fft2(x, s=(4, 6.0), axes=(0, 1))
        with pytest.raises(ValueError, match="repeats an axis"):
            gk.fft.fftn(x, axes=(1, 1))
        got = gk.fft.fftn(x, axes=(0,))  # one axis of a 2-d input: another plan
    assert rel_err(got, np.fft.fftn(x, axes=(0,))) < 1e-12


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_a_warm_linalg_plan_still_checks_values_and_warns(rng):
    a, b = _spd(rng), rng.standard_normal(4)
    with gk.use_backend("numpy"):
        _warm(lambda: gk.linalg.solve(a, b))
        bad = b.copy()
        bad[0] = np.inf
        with pytest.raises(ValueError, match="argument 'b' holds NaN or inf"):
            gk.linalg.solve(a, bad)
        near = np.diag([1.0, 1.0, 1.0, 1e-300])
        with pytest.warns(scipy.linalg.LinAlgWarning, match="ill-conditioned"):
            gk.linalg.solve(near, b)
        with pytest.raises(ValueError, match="expected b of shape"):
            gk.linalg.solve(a, b[:3])
        with pytest.raises(TypeError, match=r"numpy\.matrix"):
            gk.linalg.solve(np.asmatrix(a), b)
        got = gk.linalg.solve(a, b)
    assert rel_err(got, np.linalg.solve(a, b)) < 1e-12


def test_a_warm_solve_plan_still_raises_reads_any_layout_and_each_structure(rng):
    # the plan holds the backend's prepared solver (linalg_solve_plan): a warm call with
    # the same types, dtypes and shapes still meets a singular or non-finite a, another
    # layout, transposed, and the structure assume_a names
    a, b = _spd(rng), rng.standard_normal(4)
    with gk.use_backend("numpy"):
        _warm(lambda: gk.linalg.solve(a, b))
        singular = a.copy()
        singular[3] = singular[2]
        with pytest.raises(gk.LinAlgError, match="matrix 'a' is singular"):
            gk.linalg.solve(singular, b)
        bad = a.copy()
        bad[1, 2] = np.nan
        with pytest.raises(ValueError, match="argument 'a' holds NaN or inf"):
            gk.linalg.solve(bad, b)
        huge = np.diag([1e-300, 1.0, 1.0, 1.0])  # x overflows: not a finite answer
        with pytest.raises(gk.LinAlgError, match="matrix 'a' is singular"):
            gk.linalg.solve(huge, np.full(4, 1e10))
        for m in (np.asfortranarray(a), a[::-1, ::-1], a.T):  # another layout, one key
            assert rel_err(gk.linalg.solve(m, b), np.linalg.solve(m, b)) < 1e-12
        got = gk.linalg.solve(a, b, transposed=True)
        assert rel_err(got, np.linalg.solve(a.T, b)) < 1e-12
        upper = np.triu(a)
        for _ in range(3):  # the upper triangle only, planned like any other structure
            got = gk.linalg.solve(a, b, assume_a="upper triangular")
        assert rel_err(got, np.linalg.solve(upper, b)) < 1e-12
        for _ in range(3):
            got = gk.linalg.solve(a, b, assume_a="pos", lower=True)
        assert rel_err(got, np.linalg.solve(a, b)) < 1e-12
        not_pos = -a
        with pytest.raises(gk.LinAlgError, match="not positive definite"):
            gk.linalg.solve(not_pos, b, assume_a="pos")
        d = np.diag(a).copy()
        for _ in range(3):
            got = gk.linalg.solve(a, b, assume_a="diagonal")
        assert rel_err(got, b / d) < 1e-12
        with pytest.raises(gk.LinAlgError, match="matrix 'a' is singular"):
            gk.linalg.solve(np.diag([1.0, 0.0, 1.0, 1.0]), b, assume_a="diagonal")


def test_a_warm_solve_of_a_stack_still_refuses_nan_or_inf_in_a(rng):
    # check_finite of a is the screened solver's (linalg_solve_plan_screened): for a
    # stack, the default's check before numpy.linalg's solve; the check's error, uncaused
    a, b = np.stack([_spd(rng), _spd(rng)]), rng.standard_normal((2, 4, 1))
    with gk.use_backend("numpy"):
        _warm(lambda: gk.linalg.solve(a, b))
        for value in (np.nan, np.inf):
            bad = a.copy()
            bad[1, 3, 0] = value
            with pytest.raises(ValueError, match="argument 'a' holds NaN or inf") as info:
                gk.linalg.solve(bad, b)
            assert info.value.__cause__ is None and info.value.__context__ is None
        got = gk.linalg.solve(a, b)
    assert rel_err(got, np.linalg.solve(a, b)) < 1e-12


def test_a_warm_lstsq_plan_still_checks_shapes_values_and_dtypes(rng):
    a, b = rng.standard_normal((6, 4)), rng.standard_normal(6)
    with gk.use_backend("numpy"):
        _warm(lambda: gk.linalg.lstsq(a, b))
        bad = a.copy()
        bad[2, 1] = np.nan
        with pytest.raises(ValueError, match="argument 'a' holds NaN or inf"):
            gk.linalg.lstsq(bad, b)
        with pytest.raises(ValueError, match=r"'b' has shape \(5,\)"):
            gk.linalg.lstsq(a, b[:5])
        with pytest.raises(TypeError, match=r"gk\.linalg\.lstsq"):
            gk.linalg.lstsq(a, b.astype(object))
        got, _, rank, _ = gk.linalg.lstsq(a, b)
    want = np.linalg.lstsq(a, b, rcond=None)[0]
    assert rank == 4 and rel_err(got, want) < 1e-12


def test_a_warm_shift_plan_still_refuses_bad_axes_and_dtypes(rng):
    x = rng.standard_normal((4, 6))
    with gk.use_backend("numpy"):
        _warm(lambda: gk.fft.fftshift(x))
        with pytest.raises(ValueError, match=r"axes=2 is out of range"):
            gk.fft.fftshift(x, axes=2)
        with pytest.raises(TypeError, match=r"axes must be an integer, got True"):
            gk.fft.ifftshift(x, axes=True)
        with pytest.raises(TypeError, match=r"gk\.fft\.fftshift"):
            gk.fft.fftshift(x.astype(object))
        got = gk.fft.fftshift(x)
        back = gk.fft.ifftshift(x, axes=1)
    assert np.array_equal(got, np.fft.fftshift(x))
    assert np.array_equal(back, np.fft.ifftshift(x, axes=1))


def test_a_warm_plan_still_retries_out_of_memory(rng, monkeypatch):
    x = rng.standard_normal(16)
    with gk.use_backend("numpy") as backend:
        make = backend.fft_plan
        failures = [0]

        def failing_plan(*args):
            transform = make(*args)

            def run(y):
                if failures[0] > 0:
                    failures[0] -= 1
                    raise MemoryError("fake host allocation failure")
                return transform(y)

            return run

        monkeypatch.setattr(backend, "fft_plan", failing_plan)
        plans.forget()  # no plan an earlier test made for such arrays
        _warm(lambda: gk.fft.fft(x))  # the plan holds the failing transform
        failures[0] = 1
        got = gk.fft.fft(x)  # failed once, released, retried
        assert failures == [0] and rel_err(got, np.fft.fft(x)) < 1e-12
        failures[0] = 2
        with pytest.raises(gk.OutOfMemoryError, match=r"gk\.fft\.fft ran out of memory"):
            gk.fft.fft(x)


def test_a_warm_plan_on_one_device_still_guards_and_follows_the_selection(rng):
    gk.register_backend("fake1", lambda: FakeDeviceBackend(1), replace=True)
    try:
        x = rng.standard_normal(16)
        with gk.use_backend("fake1") as fake:
            assert fake.device_count() == 1
            d = fake.asarray(x)
            _warm(lambda: gk.fft.fft(d))  # planned: one device, no transfer
            _warm(lambda: gk.fft.fft(x))  # host input: moved on every call, never planned
            with gk.transfer_guard("disallow"):
                got = gk.fft.fft(d)
                with pytest.raises(gk.TransferGuardError, match="refused"):
                    gk.fft.fft(x)
            assert rel_err(np.asarray(got), np.fft.fft(x)) < 1e-12
        with gk.use_backend("numpy"):
            host = gk.fft.fft(x)  # the same key but for the selection: numpy's plan
        assert type(host) is np.ndarray and rel_err(host, np.fft.fft(x)) < 1e-12
    finally:
        gk.unregister_backend("fake1")


_UNRESOLVED = """
import numpy as np, gpukit as gk
from gpukit._runtime import plans
from gpukit._select import selection
from fakedevice import FakeDeviceBackend
gk.register_backend("fake1", lambda: FakeDeviceBackend(1))
gk.register_backend("fake2", lambda: FakeDeviceBackend(2))
rng = np.random.default_rng({seed})
x, a = rng.standard_normal(16), rng.standard_normal((4, 4))
with gk.use_backend("fake1") as one:  # scoped selections: the default stays unresolved
    d, m = one.asarray(x), one.asarray(a)
with gk.use_backend("fake2") as two:
    d1, m1 = two.asarray(x, device=1), two.asarray(a, device=1)
calls = {{  # one device; one array, then two on one of several devices
    "fft": lambda: gk.fft.fft(d),
    "matmul": lambda: gk.matmul(m, m),
    "fft on device 1 of 2": lambda: gk.fft.fft(d1),
    "matmul on device 1 of 2": lambda: gk.matmul(m1, m1),
}}
for call in calls.values():
    call(), call()
read = []
generation = plans.generation
plans.generation = lambda: read.append(1) or generation()  # every planning path reads it
for name, call in calls.items():
    read.clear()
    got = call()
    assert not read, f"{{name}} planned again on a warm call before a selection"
    want = np.fft.fft(x) if name.startswith("fft") else a @ a
    assert np.linalg.norm(np.asarray(got) - want) / np.linalg.norm(want) < 1e-12, name
plans.generation = generation
assert selection.active() is None, "a call on device arrays resolved GPUKIT_BACKEND"
assert one.owns(gk.matmul(m, m)) and two.owns(gk.matmul(m1, m1))
for _ in range(2):  # host data resolves GPUKIT_BACKEND=numpy (the backend made: tables
    gk.fft.fft(x)  # emptied, nothing kept) and is planned under it the next time
assert selection.active() is gk.get_backend() and gk.get_backend().name == "numpy"
read.clear()
plans.generation = lambda: read.append(1) or generation()
gk.fft.fft(x)
assert not read, "a host call planned again on a warm call"
print("ok")
"""


def test_device_arrays_are_planned_before_any_selection_is_resolved(rng):
    """A script that hands gpukit only device arrays never resolves ``GPUKIT_BACKEND``
    (the arrays say where a call runs): their plans are kept all the same, under no
    selection, so its warm calls skip the checks a resolved selection's would."""
    proc = run_python(
        _UNRESOLVED.format(seed=int(rng.integers(2**32))),
        env={"GPUKIT_BACKEND": "numpy"},
        extra_path=[str(Path(__file__).parent)],
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_a_warm_kernel_plan_still_refuses_read_only_overlapping_or_swapped_arrays(rng):
    p, g = rng.standard_normal(8), rng.standard_normal(8)
    want = p - 0.5 * g
    with gk.use_backend("numpy"):
        _warm(lambda: gk.kernels.sgd_update(p.copy(), g, lr=0.5))
        frozen = p.copy()
        frozen.flags.writeable = False
        with pytest.raises(ValueError, match="param is updated in place but is read-only"):
            gk.kernels.sgd_update(frozen, g, lr=0.5)
        with pytest.raises(ValueError, match="overlap in memory"):
            gk.kernels.sgd_update(p, p, lr=0.5)
        with pytest.raises(ValueError, match="non-native byte order"):
            gk.kernels.sgd_update(p.astype(">f8"), g, lr=0.5)
        with pytest.raises(ValueError, match="lr must be finite"):
            gk.kernels.sgd_update(p, g, lr=float("nan"))
        with pytest.raises(TypeError, match="lr must be a real number"):
            gk.kernels.sgd_update(p, g, lr=True)
        gk.kernels.sgd_update(p, g, lr=0.5)
    assert rel_err(p, want) < 1e-12


def test_a_warm_norm_plan_still_rescues_overflow_and_refuses_bad_arguments(rng):
    x = rng.standard_normal(16)
    with gk.use_backend("numpy"):
        _warm(lambda: gk.linalg.norm(x))
        huge = x * 1e300  # its squares overflow: the value decides, not the plan
        assert abs(gk.linalg.norm(huge) / (np.linalg.norm(x) * 1e300) - 1) < 1e-12
        with pytest.raises(ValueError, match="is not a vector norm"):
            gk.linalg.norm(x, ord="fro")
        with pytest.raises(ValueError, match="must name one axis"):
            gk.linalg.norm(x, axis=1)
        got = gk.linalg.norm(x.reshape(4, 4), axis=(0, 1))  # another shape, another plan
    assert abs(got / np.linalg.norm(x) - 1) < 1e-12


def test_a_warm_csr_matrix_still_checks_dtypes_and_reads_every_form(rng):
    # the dense array's plan (placed) is found by type and dtype: an integer array
    # without dtype= is still refused, and the tuple and sparse forms are still read
    import scipy.sparse as sp

    dense = rng.standard_normal((4, 5))
    with gk.use_backend("numpy"):
        _warm(lambda: gk.sparse.csr_matrix(dense))
        counts = np.arange(4)[:, None] * np.ones((4, 5), dtype=np.int64)
        with pytest.raises(TypeError, match=r"gk\.sparse\.csr_matrix: argument 'arg1'"):
            gk.sparse.csr_matrix(counts)
        assert gk.sparse.csr_matrix(counts, dtype=np.float64).dtype == np.float64
        coo, csr = sp.coo_matrix(dense), sp.csr_matrix(dense)
        for arg in (
            (coo.data, (coo.row, coo.col)),
            (csr.data, csr.indices, csr.indptr),
            coo,
            dense.tolist(),
            dense,
        ):
            got = gk.sparse.csr_matrix(arg, shape=(4, 5))
            assert sp.issparse(got) and got.format == "csr"
            assert np.array_equal(got.toarray(), dense)
        assert gk.sparse.csr_matrix((3, 5)).shape == (3, 5)
