"""The distributed FFT against numpy.fft in float64: 1-4 virtual devices, uneven splits,
odd and prime sizes, every norm, the split axis among the transformed ones."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.fft
from hypothesis import given, settings
from hypothesis import strategies as st

import gpukit as gk
from gpukit._select import registry as _registry

from helpers import TOL, rel_err

NumpyBackend = type(_registry.load("numpy"))


NORMS = [None, "backward", "ortho", "forward"]
REAL_IN = ("rfft", "ihfft", "rfft2", "rfftn", "ihfft2", "ihfftn")
TIGHT = 1e-12  # float64 against numpy.fft, the bar


@pytest.fixture(params=[1, 2, 3, 4], ids=lambda n: f"cpu{n}")
def cpu_devices(request: pytest.FixtureRequest):
    with gk.use_backend(NumpyBackend(request.param)) as backend:
        yield backend


def _data(rng, shape, kind):
    x = rng.standard_normal(shape)
    return x if kind in REAL_IN else x + 1j * rng.standard_normal(shape)


def _sizes(length, n):
    return tuple(len(p) for p in np.array_split(np.empty(length), n))


@pytest.mark.parametrize("shape", [(7, 9), (12, 5), (3, 11), (16, 16)])
@pytest.mark.parametrize("kind", ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"])
def test_fft2_split_along_either_axis(cpu_devices, rng, kind, shape):
    """Odd sizes, uneven splits, fewer rows than devices, every norm: 1e-12 against
    numpy.fft (scipy.fft for the Hermitian 2-d transforms NumPy lacks)."""
    n = cpu_devices.device_count()
    x = _data(rng, shape, kind)
    for norm in NORMS:
        want = getattr(scipy.fft if kind in ("hfft2", "ihfft2") else np.fft, kind)(x, norm=norm)
        for split in (0, 1):
            got = getattr(gk.fft, kind)(gk.shard(x, axis=split), norm=norm)
            assert isinstance(got, gk.ShardedArray) and got.shape == want.shape
            assert got.axis == split and got.sizes == _sizes(want.shape[split], n)  # x's
            assert got.dtype == want.dtype and rel_err(got, want) < TIGHT


@pytest.mark.parametrize("kind", ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"])
@pytest.mark.parametrize(
    ("axes", "s"),
    [(None, None), ((0, 2), None), ((2, 0), (4, 9)), ((1,), (3,)), ((0, 1, 2), (5, 2, 6))],
)
def test_fftn_three_dims_any_split(cpu_devices, rng, kind, axes, s):
    x = _data(rng, (5, 6, 7), kind)
    want = getattr(scipy.fft, kind)(x, s=s, axes=axes, norm="ortho")
    for split in range(3):
        got = getattr(gk.fft, kind)(gk.shard(x, axis=split), s=s, axes=axes, norm="ortho")
        assert got.axis == split and rel_err(got, want) < TIGHT


@pytest.mark.parametrize("kind", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_one_d_along_the_split_axis_of_a_matrix(cpu_devices, rng, kind):
    x = _data(rng, (9, 10), kind)
    for norm in NORMS:
        for axis, n in ((0, None), (0, 13), (1, 7), (1, None)):
            want = getattr(np.fft, kind)(x, n=n, axis=axis, norm=norm)
            got = getattr(gk.fft, kind)(gk.shard(x, axis=axis), n=n, axis=axis, norm=norm)
            assert got.axis == axis and rel_err(got, want) < TIGHT


@pytest.mark.parametrize("length", [2, 7, 12, 97, 100])
@pytest.mark.parametrize("kind", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_vector_four_step(cpu_devices, rng, kind, length):
    """A 1-d array has no other axis: four-step transforms (a prime length on one device)."""
    x = _data(rng, length, kind)
    for norm in NORMS:
        for n in (None, length + 5, max(length - 1, 2)):
            want = getattr(np.fft, kind)(x, n=n, norm=norm)
            got = getattr(gk.fft, kind)(gk.shard(x), n=n, norm=norm)
            assert got.sizes == _sizes(want.shape[0], cpu_devices.device_count())
            assert got.dtype == want.dtype and rel_err(got, want) < TIGHT


@pytest.mark.parametrize("length", [7, 12])
@pytest.mark.parametrize("kind", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_vector_four_step_keeps_single_precision(cpu_devices, rng, kind, length):
    """float32/complex64 in, single precision out (NumPy 2's rule), against float64."""
    x = _data(rng, length, kind)
    single = x.astype(np.float32 if kind in REAL_IN else np.complex64)
    got = getattr(gk.fft, kind)(gk.shard(single))
    assert got.dtype == getattr(np.fft, kind)(single).dtype  # complex64 or float32
    want = getattr(np.fft, kind)(single.astype(x.dtype))
    assert rel_err(got, want) < TOL[np.dtype(np.complex64)] * 10  # error grows like log n


@pytest.mark.parametrize(("kind", "axis"), [("fft2", 1), ("ifftn", 1), ("rfftn", 2), ("irfftn", 2)])
def test_transposed_out_saves_the_second_exchange(rng, kind, axis):
    """One all-to-all with transposed_out, two without. The exchange axis is the longest
    one not transformed afterwards: axis 1 (8, already transformed) for the complex
    transforms, axis 2 (6) when the rfft halved axis 1 to 5 or the irfft still needs it."""
    x = _data(rng, (12, 8, 6), kind)
    want = getattr(np.fft, kind)(x, axes=(0, 1))
    with gk.use_backend(NumpyBackend(4)):
        s = gk.shard(x, axis=0)
        gk.reset_transfer_stats()
        out = getattr(gk.sharding, kind)(s, axes=(0, 1), transposed_out=True)
        one = gk.transfer_stats().device_to_device
        gk.reset_transfer_stats()
        back = getattr(gk.sharding, kind)(s, axes=(0, 1))
        two = gk.transfer_stats().device_to_device
    assert out.axis == axis and back.axis == 0
    assert rel_err(out, want) < TIGHT and rel_err(back, want) < TIGHT
    assert one.calls == 4 * 3 and two.calls == 2 * 4 * 3  # a block per ordered device pair
    if kind in ("fft2", "ifftn"):  # complex all along: each exchange moves 3/4 of x
        assert one.bytes == x.nbytes * 3 // 4 and two.bytes == 2 * one.bytes


def test_rfft2_split_along_the_real_axis_needs_two_exchanges(rng):
    """No batch axis and the real axis split: rfft must come first, so it moves twice."""
    x = rng.standard_normal((8, 12))
    with gk.use_backend(NumpyBackend(2)):
        gk.reset_transfer_stats()
        got = gk.sharding.rfft2(gk.shard(x, axis=1), transposed_out=True)
        calls = gk.transfer_stats().device_to_device.calls
    assert got.axis == 1 and calls == 2 * 2 and rel_err(got, np.fft.rfft2(x)) < TIGHT


@pytest.mark.parametrize("kind", ["fft2", "rfft2"])
def test_single_precision_keeps_single(cpu_devices, rng, kind):
    x = _data(rng, (6, 10), kind).astype(np.float32 if kind == "rfft2" else np.complex64)
    got = getattr(gk.fft, kind)(gk.shard(x, axis=1))
    assert got.dtype == np.complex64  # NumPy 2's rule, as unsharded
    want = getattr(np.fft, kind)(x.astype(np.complex128 if kind == "fft2" else np.float64))
    assert rel_err(got, want) < TOL[np.dtype(np.complex64)] * 10


def test_fftshift_along_the_split_axis(cpu_devices):
    for length in range(1, 10):
        x = np.arange(length * 3.0).reshape(length, 3)
        for fn in ("fftshift", "ifftshift"):
            for axes in (None, 0, (1,)):
                got = getattr(gk.fft, fn)(gk.shard(x), axes=axes)
                want = getattr(np.fft, fn)(x, axes)
                assert got.axis == 0 and np.array_equal(gk.to_numpy(got), want)


def test_bad_arguments_raise_before_any_exchange(rng):
    with gk.use_backend(NumpyBackend(2)):
        s = gk.shard(rng.standard_normal((4, 6)) + 1j)
        gk.reset_transfer_stats()
        with pytest.raises(TypeError, match=r"gk\.fft\.rfft2: x must be real"):
            gk.fft.rfft2(s)
        with pytest.raises(ValueError, match=r"gk\.fft\.fft2: norm must be"):
            gk.fft.fft2(s, norm="unitary")
        with pytest.raises(ValueError, match="repeats an axis"):
            gk.fft.fftn(s, axes=(0, 0))
        with pytest.raises(TypeError, match="out= is not supported for a ShardedArray"):
            gk.fft.fft2(s, out=s)
        with pytest.raises(TypeError, match="out"):
            gk.sharding.fft2(s, out=s)
        with pytest.raises(TypeError, match=r"gk\.fft\.fft: argument 'x' must be a ShardedArray"):
            gk.sharding.fft(np.ones(4))
        assert gk.transfer_stats().device_to_device.calls == 0


def test_numpy_fft_functions_run_the_distributed_fft(rng):
    x = rng.standard_normal((6, 8)) + 1j * rng.standard_normal((6, 8))
    with gk.use_backend(NumpyBackend(3)):
        got = np.fft.fft2(gk.shard(x, axis=1))
    assert isinstance(got, gk.ShardedArray) and got.axis == 1
    assert rel_err(got, np.fft.fft2(x)) < TIGHT


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 7), min_size=1, max_size=3),
    devices=st.integers(1, 4),
    kind=st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]),
    data=st.data(),
)
def test_property_any_layout_any_axes(shape, devices, kind, data):
    ndim = len(shape)
    split = data.draw(st.integers(0, ndim - 1))
    axes = data.draw(st.permutations(range(ndim)).map(lambda p: p[: max(1, len(p) - 1)]))
    axes = tuple(axes) if data.draw(st.booleans()) else None
    last = (axes or tuple(range(ndim)))[-1]
    if kind in ("irfftn", "hfftn") and shape[last] == 1:
        shape[last] = 2  # the default output length 2 * (m - 1) must be positive
    norm = data.draw(st.sampled_from(NORMS))
    transposed = data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = _data(rng, tuple(shape), kind)
    want = getattr(scipy.fft, kind)(x, axes=axes, norm=norm)
    with gk.use_backend(NumpyBackend(devices)):
        got = getattr(gk.sharding, kind)(
            gk.shard(x, axis=split), axes=axes, norm=norm, transposed_out=transposed
        )
    assert got.shape == want.shape and got.dtype == want.dtype
    assert transposed or got.axis == split
    assert rel_err(got, want) < TIGHT
