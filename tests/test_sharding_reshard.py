"""gk.reshard and the all-to-all under it: values, layouts, bytes counted, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpukit as gk
from gpukit._select import registry as _registry
from gpukit.sharding._reshard import exchange

NumpyBackend = type(_registry.load("numpy"))


@pytest.fixture(params=[1, 2, 3, 4], ids=lambda n: f"cpu{n}")
def cpu_devices(request: pytest.FixtureRequest):
    with gk.use_backend(NumpyBackend(request.param)) as backend:
        yield backend


def _sizes(length, n):
    return tuple(len(p) for p in np.array_split(np.empty(length), n))


@pytest.mark.parametrize("shape", [(7, 5), (2, 9), (4, 3, 6)])
def test_every_axis_to_every_axis(cpu_devices, rng, shape):
    n = cpu_devices.device_count()
    x = rng.standard_normal(shape)
    for src in range(len(shape)):
        s = gk.shard(x, axis=src)
        for dst in range(-len(shape), len(shape)):
            r = gk.reshard(s, axis=dst)
            assert r.axis == dst % len(shape) and r.sizes == _sizes(shape[dst], n)
            assert r.devices == s.devices and np.array_equal(gk.to_numpy(r), x)
            if n > 1:
                assert [sh.device_id for sh in r.shards] == list(r.devices)
            if r is not s:  # a new layout never shares memory with the old one
                assert not any(np.shares_memory(a, b) for a in r.shards for b in s.shards)


def test_same_layout_is_returned_as_is(cpu_devices, rng):
    s = gk.shard(rng.standard_normal((5, 2)), axis=1)
    gk.reset_transfer_stats()
    assert gk.reshard(s) is s and gk.reshard(s, axis=-1, devices=s.devices) is s
    assert gk.transfer_stats().device_to_device.calls == 0


def test_one_all_to_all_with_its_bytes_counted(rng):
    """An even (4a, 4b) matrix from rows to columns on 4 devices: each device keeps its
    own quarter of its shard and sends the other three, one block each."""
    x = rng.standard_normal((8, 12))
    with gk.use_backend(NumpyBackend(4)):
        s = gk.shard(x)
        gk.reset_transfer_stats()
        gk.reshard(s, axis=1)
        moved = gk.transfer_stats()
    assert moved.device_to_device.calls == 4 * 3
    assert moved.device_to_device.bytes == x.nbytes * 3 // 4
    assert moved.host_to_device.calls == moved.device_to_host.calls == 0  # one memory


def test_moving_to_other_devices(rng):
    x = rng.standard_normal((9, 4))
    with gk.use_backend(NumpyBackend(4)):
        s = gk.shard(x, devices=[0, 1])
        gk.reset_transfer_stats()
        r = gk.reshard(s, devices=[3, 2, 1])
        moved = gk.transfer_stats().device_to_device
        assert r.devices == (3, 2, 1) and [sh.device_id for sh in r.shards] == [3, 2, 1]
        assert np.array_equal(gk.to_numpy(r), x) and r.sizes == (3, 3, 3)
        # rows 0-4 from device 0 and 5-8 from device 1; device 1 keeps rows 6-8 only
        assert moved.bytes == x[:6].nbytes
        again = gk.shard(s, axis=1, devices=[2])  # gk.shard of a sharded array reshards it
        assert again.devices == (2,) and again.axis == 1
        assert np.array_equal(gk.to_numpy(again), x)


def test_bad_arguments(rng):
    with gk.use_backend(NumpyBackend(2)):
        s = gk.shard(rng.standard_normal((4, 3)))
        with pytest.raises(TypeError, match=r"must be a ShardedArray.*gk\.shard\(x"):
            gk.reshard(np.ones((4, 3)), axis=1)
        with pytest.raises(ValueError, match=r"axis 2 is out of range for x of shape \(4, 3\)"):
            gk.reshard(s, axis=2)
        with pytest.raises(ValueError, match="device 5 is out of range"):
            gk.reshard(s, devices=[5])
        with pytest.raises(ValueError, match="must not repeat"):
            gk.reshard(s, devices=[1, 1])


@pytest.mark.parametrize("length", [1, 5, 8])
def test_exchange_crops_pads_and_rolls(cpu_devices, rng, length):
    n = cpu_devices.device_count()
    x = rng.standard_normal((length, 2))
    s = gk.shard(x)
    for new in (1, length, length + 3):
        got = exchange(s, 0, s.devices, _sizes(new, n), length=new)
        want = np.zeros((new, 2))
        want[: min(new, length)] = x[:new]
        assert np.array_equal(gk.to_numpy(got), want)
    for shift in (1, -2, length // 2, 7):
        got = exchange(s, 0, s.devices, s.sizes, shift=shift)
        assert np.array_equal(gk.to_numpy(got), np.roll(x, shift, axis=0))


def test_exchange_can_store_an_axis_contiguous(cpu_devices, rng):
    """The distributed FFT's local transpose: the next transform axis fastest in memory."""
    x = rng.standard_normal((6, 5, 4))
    s = gk.shard(x, axis=0)
    n = cpu_devices.device_count()
    got = exchange(s, 2, s.devices, _sizes(4, n), fast_axis=0)
    assert got.axis == 2 and np.array_equal(gk.to_numpy(got), x)
    assert all(sh.strides[0] == x.itemsize for sh in got.shards if sh.size)


def test_collectives_all_to_all(cpu_devices, rng):
    devs = tuple(range(cpu_devices.device_count()))
    coll = cpu_devices.collectives(devs)
    blocks = [
        [None if (i + j) % 3 == 0 else cpu_devices.to_device(rng.standard_normal((2, i + j)), d)
         for j in devs]
        for i, d in enumerate(devs)
    ]  # fmt: skip
    received = coll.all_to_all(blocks)
    for j, d in enumerate(devs):
        for i in range(len(devs)):
            if blocks[i][j] is None:
                assert received[j][i] is None
            else:
                host = received[j][i].view(np.ndarray)  # compared off-device: they differ
                assert np.array_equal(host, blocks[i][j].view(np.ndarray))
                assert cpu_devices.device_of(received[j][i]) == d


def test_peer_copy_all_to_all_on_a_device_backend(fake_device, rng):
    """The peer-copy implementation (the fake device backend's): strided blocks packed,
    each copied to its destination's device."""
    x = rng.standard_normal((6, 8))
    s = gk.shard(x)
    gk.reset_transfer_stats()
    r = gk.reshard(s, axis=1)  # strided column blocks
    assert [fake_device.device_of(sh) for sh in r.shards] == [0, 1]
    assert np.array_equal(gk.to_numpy(r), x)
    moved = gk.transfer_stats()
    assert moved.device_to_device.calls == 2 and moved.device_to_device.bytes == x.nbytes // 2
    assert moved.host_to_device.calls == 0


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 6), min_size=1, max_size=3),
    devices=st.integers(1, 4),
    data=st.data(),
)
def test_property_round_trips(shape, devices, data):
    src = data.draw(st.integers(0, len(shape) - 1))
    dst = data.draw(st.integers(0, len(shape) - 1))
    count = data.draw(st.integers(1, devices))
    targets = data.draw(st.permutations(range(devices)))[:count]
    dtype = data.draw(st.sampled_from(["float32", "complex128", "int16", "bool"]))
    x = (np.arange(int(np.prod(shape))) % 7).astype(dtype).reshape(shape)
    with gk.use_backend(NumpyBackend(devices)):
        r = gk.reshard(gk.shard(x, axis=src), axis=dst, devices=targets)
        assert r.devices == tuple(targets) and r.axis == dst and r.dtype == x.dtype
        assert r.sizes == _sizes(shape[dst], count) and np.array_equal(gk.to_numpy(r), x)
