"""Operations follow their inputs; host inputs to a device backend are counted and guarded."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from subproc import run_python

import gpukit as gk
from gpukit._dispatch.inputs import prepare

from fakedevice import FakeDeviceArray, FakeDeviceBackend
from helpers import same_errors_warm_as_cold


class OtherArray(np.ndarray):
    """The arrays of a second device backend (not FakeDeviceArray: its own owner)."""

    device_id: int = 0

    def __array_finalize__(self, obj):
        self.device_id = getattr(obj, "device_id", 0)


class OtherDevice(FakeDeviceBackend):
    name = "otherdevice"

    def owns(self, x):
        return isinstance(x, OtherArray)

    def asarray(self, obj, dtype=None, device=None):
        return super().asarray(obj, dtype, device).view(OtherArray)


@pytest.fixture(autouse=True)
def _fresh_counters():
    gk.reset_transfer_stats()


def test_host_inputs_on_host_backend_are_not_transfers():
    with gk.use_backend("numpy"):
        backend, (_a, _b) = prepare(np.ones(3), [1.0, 2.0, 3.0], names=("a", "b"))
    assert backend.name == "numpy"
    assert gk.transfer_stats().host_to_device.calls == 0


def test_host_inputs_move_to_device_backend_and_are_counted(fake_device, rng):
    x = rng.standard_normal((4, 5))
    backend, (a, b) = prepare(x, [1.0, 2.0], names=("a", "b"))
    assert backend is fake_device
    assert isinstance(a, FakeDeviceArray) and isinstance(b, FakeDeviceArray)
    np.testing.assert_array_equal(a.view(np.ndarray), x)
    stats = gk.transfer_stats()
    assert stats.host_to_device.calls == 2
    assert stats.host_to_device.bytes == x.nbytes + 16
    assert stats.device_to_host.calls == 0


def test_device_arrays_pass_without_transfer(fake_device):
    x = gk.asarray(np.ones(3))
    gk.reset_transfer_stats()
    _, (y,) = prepare(x, names=("x",))
    assert y is x
    assert gk.transfer_stats().host_to_device.calls == 0


def test_operation_runs_where_device_inputs_live_whatever_is_active(fake_device):
    x = gk.asarray(np.ones(3))
    with gk.use_backend("numpy"):
        backend, (_a, b) = prepare(x, np.zeros(3), names=("a", "b"))
    assert backend is fake_device
    assert isinstance(b, FakeDeviceArray)


def test_host_inputs_go_to_the_device_of_the_device_input(fake_device):
    with gk.device(1):
        x = gk.asarray(np.ones(2))
    _, (_, y) = prepare(x, np.ones(2), names=("a", "b"))
    assert y.device_id == 1


def test_two_devices_never_mix(fake_device):
    a = gk.asarray(np.ones(2))
    with gk.device(1):
        b = gk.asarray(np.ones(2))
    with pytest.raises(gk.DeviceMismatchError) as err:
        prepare(a, b, names=("lhs", "rhs"))
    msg = str(err.value)
    assert "'rhs' is on fakedevice:1" in msg and "'lhs' is on fakedevice:0" in msg
    assert isinstance(err.value, ValueError)


def test_two_device_backends_never_mix(fake_device):
    gk.register_backend("otherdevice", OtherDevice)
    try:
        a = gk.asarray(np.ones(2))
        with gk.use_backend("otherdevice"):
            b = gk.asarray(np.ones(2))
        assert type(a) is FakeDeviceArray and type(b) is OtherArray
        with pytest.raises(gk.DeviceMismatchError) as err:
            prepare(a, b, names=("lhs", "rhs"))
        msg = str(err.value)
        assert "'rhs' is on otherdevice:0" in msg and "'lhs' is on fakedevice:0" in msg
        with pytest.raises(gk.DeviceMismatchError, match="otherdevice"):
            gk.namespace(a, b)
    finally:
        gk.unregister_backend("otherdevice")


def test_guard_disallow_refuses_implicit_transfers(fake_device):
    with gk.transfer_guard("disallow"):
        with pytest.raises(gk.TransferGuardError) as err:
            prepare(np.ones((2, 3), np.float32), names=("weights",))
    msg = str(err.value)
    assert "'weights'" in msg and "(2, 3)" in msg and "float32" in msg and "24 bytes" in msg
    assert gk.transfer_stats().host_to_device.calls == 0


def test_guard_disallow_allows_explicit_transfers(fake_device):
    with gk.transfer_guard("disallow"):
        x = gk.asarray(np.ones(4))
        back = gk.to_numpy(x)
    assert type(back) is np.ndarray
    stats = gk.transfer_stats()
    assert stats.host_to_device.calls == 1 and stats.device_to_host.calls == 1
    assert stats.device_to_host.bytes == 32


def test_guard_log_moves_and_logs(fake_device, caplog):
    with caplog.at_level(logging.WARNING, logger="gpukit"), gk.transfer_guard("log"):
        _, (a,) = prepare(np.ones(5), names=("rhs",))
    assert isinstance(a, FakeDeviceArray)
    expected = "implicit host-to-device transfer of argument 'rhs'"
    assert any(expected in r.message for r in caplog.records)
    assert gk.transfer_stats().host_to_device.calls == 1


def test_guard_allow_is_silent(fake_device, caplog):
    with caplog.at_level(logging.DEBUG, logger="gpukit"), gk.transfer_guard("allow"):
        prepare(np.ones(5), names=("rhs",))
    assert not caplog.records


def test_guard_restored_after_block(fake_device):
    with pytest.raises(RuntimeError):
        with gk.transfer_guard("disallow"):
            raise RuntimeError
    prepare(np.ones(2), names=("x",))  # allowed again
    assert gk.transfer_stats().host_to_device.calls == 1


def test_guard_from_environment(monkeypatch):
    """``GPUKIT_TRANSFER_GUARD`` is read when a backend is created, not at each transfer."""
    monkeypatch.setenv("GPUKIT_TRANSFER_GUARD", "disallow")
    gk.register_backend("fakedevice", FakeDeviceBackend, replace=True)
    try:
        with gk.use_backend("fakedevice"):
            with pytest.raises(gk.TransferGuardError):
                prepare(np.ones(2), names=("x",))
            monkeypatch.setenv("GPUKIT_TRANSFER_GUARD", "allow")
            with pytest.raises(gk.TransferGuardError):  # until a backend is created
                prepare(np.ones(2), names=("x",))
        monkeypatch.setenv("GPUKIT_TRANSFER_GUARD", "sometimes")
        gk.register_backend("fakedevice", FakeDeviceBackend, replace=True)
        with pytest.raises(ValueError, match="GPUKIT_TRANSFER_GUARD must be one of allow, log"):
            with gk.use_backend("fakedevice"):
                pass
    finally:
        monkeypatch.delenv("GPUKIT_TRANSFER_GUARD")
        gk.register_backend("fakedevice", FakeDeviceBackend, replace=True)
        with gk.use_backend("fakedevice"):  # created again: the guard is the default again
            prepare(np.ones(2), names=("x",))


def test_a_malformed_guard_fails_at_the_first_call_not_the_first_transfer():
    """As a malformed GPUKIT_TF32 or GPUKIT_MEMORY_LIMIT does: checked when a backend is
    created, even the numpy backend, where no transfer ever comes to read it."""
    message = "GPUKIT_TRANSFER_GUARD must be one of allow, log, disallow; got 'bogus'"
    call = "import numpy as np, gpukit as gk\ngk.fft.fft(np.ones(4))"
    env = {"GPUKIT_BACKEND": "numpy", "GPUKIT_TRANSFER_GUARD": "bogus"}
    proc = run_python(call, env=env)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == f"ValueError: {message}"
    status = run_python("import gpukit as gk\nprint(gk.available_backends()['numpy'])", env=env)
    assert "available=False" in status.stdout and f"misconfigured: {message}" in status.stdout
    proc = run_python(call, env={**env, "GPUKIT_TRANSFER_GUARD": " Disallow "})
    assert proc.returncode == 0, proc.stderr


def test_guard_bad_mode():
    with pytest.raises(ValueError, match="transfer_guard mode"):
        with gk.transfer_guard("never"):
            pass  # pragma: no cover


def test_device_array_of_another_backend_goes_through_host(fake_device):
    x = gk.asarray(np.arange(3.0))
    gk.reset_transfer_stats()
    with gk.use_backend("numpy"):
        y = gk.asarray(x)
    assert type(y) is np.ndarray
    assert gk.transfer_stats().device_to_host.calls == 1


def test_namespace():
    with gk.use_backend("fakedevice"):
        x = gk.asarray(np.ones(2))
    assert gk.namespace(np.ones(2), 3.0) is np
    assert gk.namespace(x) is np  # the fake device computes with NumPy
    with gk.use_backend("numpy"):
        assert gk.namespace() is np


def test_asarray_dtype_and_device_checks(fake_device):
    x = gk.asarray([1, 2], dtype=np.float32, device=1)
    assert x.dtype == np.float32 and x.device_id == 1
    with pytest.raises(ValueError, match="device 2 is out of range: backend 'fakedevice' has 2"):
        gk.asarray([1], device=2)


def test_asarray_of_a_device_array_still_refuses_its_dtype_warm(fake_device):
    # a device array of a native numeric dtype skips the host-data checks: every other
    # dtype still meets them, cold and after warm calls
    good = fake_device.asarray(np.ones(2), device=1)
    strings = np.array(["a", "b"]).view(FakeDeviceArray)
    objects = np.array([1, None], dtype=object).view(FakeDeviceArray)
    same_errors_warm_as_cold(
        [lambda: gk.asarray(good)], [lambda: gk.asarray(strings), lambda: gk.asarray(objects)]
    )
    with pytest.raises(TypeError, match="argument 'obj' has dtype <U1; expected a numeric"):
        gk.asarray(strings)
    got = gk.asarray(good)
    assert type(got) is FakeDeviceArray and got.dtype == np.float64 and (got == 1).all()


def test_devices_and_device_context(fake_device):
    assert gk.device_count() == 2
    assert [str(d) for d in gk.devices()] == ["fakedevice:0", "fakedevice:1"]
    with gk.device(1) as d:
        assert d.index == 1
        assert fake_device.current_device() == 1
    assert fake_device.current_device() == 0
    with pytest.raises(ValueError, match="out of range"):
        with gk.device(5):
            pass  # pragma: no cover
    gk.synchronize()
    gk.synchronize(1)


def test_numpy_backend_devices():
    with gk.use_backend("numpy"):
        (d,) = gk.devices()
        assert d.backend == "numpy" and d.index == 0 and d.memory_total > 0


@pytest.mark.gpu
@pytest.mark.multi_gpu(2)
def test_cupy_asarray_moves_an_array_to_the_device_asked_for(rng):
    # the fix DeviceMismatchError suggests: cupy.asarray alone would keep it on device 0
    host = rng.standard_normal(5)
    with gk.use_backend("cupy"):
        x = gk.asarray(host, device=0)
        y = gk.asarray(x, device=1)
        z = gk.asarray(x, dtype=np.float32, device=1)
    assert (x.device.id, y.device.id, z.device.id) == (0, 1, 1)
    np.testing.assert_array_equal(gk.to_numpy(y), host)
    assert z.dtype == np.float32


def _enter_device(d):
    with gk.device(d) as dev:
        return dev


DEVICE_TAKERS = {
    "gk.device": _enter_device,
    "gk.synchronize": lambda d: gk.synchronize(d),
    "gk.asarray": lambda d: gk.asarray(np.ones(2), device=d),
    "gk.memory_stats": lambda d: gk.memory_stats(d),
    "gk.set_memory_limit": lambda d: gk.set_memory_limit(None, device=d),
    "gk.shard": lambda d: gk.shard(np.ones(4), devices=[0, d]),
    "ShardedArray.gather": lambda d: gk.shard(np.ones(4)).gather(device=d),
    "gk.fft.fftfreq": lambda d: gk.fft.fftfreq(4, device=d),
}


@pytest.mark.parametrize("take", DEVICE_TAKERS.values(), ids=DEVICE_TAKERS)
@pytest.mark.parametrize("bad", ["cpu", 1.0, True], ids=repr)
def test_a_device_that_is_no_integer_is_a_typeerror_everywhere(fake_device, take, bad):
    """Not a ValueError claiming ``'cpu'`` is "out of range" (found probing gk.device)."""
    with pytest.raises(TypeError, match=rf"an int in 0\.\.1\), got {type(bad).__name__}"):
        take(bad)


@pytest.mark.parametrize("take", [_enter_device, DEVICE_TAKERS["gk.shard"]])
def test_none_names_no_device(fake_device, take):
    with pytest.raises(TypeError, match=r"an int in 0\.\.1\), got NoneType None"):
        take(None)


@pytest.mark.parametrize("take", DEVICE_TAKERS.values(), ids=DEVICE_TAKERS)
def test_numpy_integers_are_device_indices(fake_device, take):
    """``np.int64(1)`` is device 1 (it was refused as "out of range"), and 2 is out of range."""
    take(np.int64(1))
    assert fake_device.current_device() == 0  # nothing left device 1 current
    with pytest.raises(ValueError, match="device 2 is out of range: backend 'fakedevice' has 2"):
        take(np.int64(2))
