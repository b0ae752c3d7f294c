"""gk.nn.save / load and load_state_dict: round trips, PyTorch interop, bad files."""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk

from helpers import oracle, rel_err


def _model(seed=0):
    return gk.nn.Sequential(
        gk.nn.Linear(4, 6, seed=seed), gk.nn.ReLU(), gk.nn.Linear(6, 3, seed=seed + 1)
    )


def test_round_trip(backend, rng, tmp_path):
    model, other = _model(0), _model(5)
    path = tmp_path / "m.npz"
    gk.nn.save(model, path)
    state = gk.nn.load(path)
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert all(type(v) is np.ndarray and v.dtype == np.float32 for v in state.values())
    other.load_state_dict(state)
    x = gk.asarray(rng.standard_normal((5, 4)).astype(np.float32))
    assert rel_err(other(x), gk.to_numpy(model(x))) == 0.0


def test_pytorch_interop_both_ways(backend, rng):
    torch = oracle("torch")
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    model = _model()
    model.load_state_dict({k: v.numpy() for k, v in net.state_dict().items()})
    x = rng.standard_normal((5, 4)).astype(np.float32)
    with torch.no_grad():
        expected = net(torch.from_numpy(x).double().float()).numpy()
    assert rel_err(model(x), expected) < 1e-6
    back = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    back.load_state_dict(
        {k: torch.from_numpy(gk.to_numpy(v)) for k, v in model.state_dict().items()}
    )
    with torch.no_grad():
        assert rel_err(back(torch.from_numpy(x)).numpy(), expected) == 0.0


def test_load_state_dict_lists_every_problem():
    model = _model()
    state = dict(model.state_dict())
    state["4.weight"] = np.zeros((2, 3), np.float32)
    del state["2.bias"]
    state["0.weight"] = np.zeros((6, 5), np.float32)
    with pytest.raises(ValueError) as info:
        model.load_state_dict(state)
    text = str(info.value)
    assert "missing keys ['2.bias']" in text
    assert "unexpected keys ['4.weight']" in text
    assert "0.weight: expected (6, 4), got (6, 5)" in text
    state["0.weight"] = np.zeros((6, 4), np.float32)
    model.load_state_dict(state, strict=False)  # missing/unexpected tolerated, shapes fine
    assert not model[0].weight.data.any()


def test_module_to_moves_and_casts(backend):
    model = _model().to(dtype="float64")
    assert all(p.dtype == np.float64 for p in model.parameters())
    model.to(backend.name)
    assert all(gk.namespace(p.data) is backend.xp for p in model.parameters())


def test_device_state_dict_loads_into_a_host_model(fake_device, rng):
    host = gk.nn.Linear(3, 2, seed=0).to("numpy")
    w = rng.standard_normal((2, 3)).astype(np.float32)
    with gk.use_backend("fakedevice"):
        state = {"weight": gk.asarray(w), "bias": gk.asarray(np.zeros(2, np.float32))}
    gk.reset_transfer_stats()
    with gk.transfer_guard("disallow"):  # copying values out is explicit, not a parameter move
        host.load_state_dict(state)
    assert type(host.weight.data) is np.ndarray
    assert rel_err(host.weight.data, w) == 0.0
    assert gk.transfer_stats().host_to_device.calls == 0
