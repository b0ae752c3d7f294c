"""gk.optim: several steps of each optimizer and schedule vs torch.optim."""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk

from helpers import TOL, rel_err

F64 = TOL[np.dtype(np.float64)]

OPTIMIZERS = {
    "sgd": ("SGD", {"lr": 0.1}),
    "sgd_momentum": ("SGD", {"lr": 0.1, "momentum": 0.9}),
    "sgd_dampening_wd": (
        "SGD",
        {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.1},
    ),
    "sgd_nesterov": ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    "adam": ("Adam", {"lr": 0.01}),
    "adam_wd": ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1}),
    "adamw": ("AdamW", {"lr": 0.01}),
    "adamw_wd": ("AdamW", {"lr": 0.02, "weight_decay": 0.3}),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_match_torch(backend, rng, name):
    torch = pytest.importorskip("torch")
    cls, kwargs = OPTIMIZERS[name]
    shapes = [(4, 3), (3,)]
    init = [rng.standard_normal(s) for s in shapes]
    params = [gk.nn.Parameter(gk.asarray(a.copy())) for a in init]
    t_params = [torch.tensor(a, requires_grad=True) for a in init]
    opt = getattr(gk.optim, cls)(params, **kwargs)
    t_opt = getattr(torch.optim, cls)(t_params, **kwargs)
    for _ in range(5):
        grads = [rng.standard_normal(s) for s in shapes]
        for p, tp, g in zip(params, t_params, grads, strict=True):
            p.grad = gk.asarray(g)
            tp.grad = torch.from_numpy(g)
        opt.step()
        t_opt.step()
    for p, tp in zip(params, t_params, strict=True):
        assert rel_err(p.data, tp.detach().numpy()) < F64


def test_optimizer_state_dict_round_trip(rng):
    init = rng.standard_normal((3, 2))
    grads = [rng.standard_normal((3, 2)) for _ in range(4)]
    a = gk.nn.Parameter(init.copy())
    opt = gk.optim.Adam([a], lr=0.1)
    for g in grads[:2]:
        a.grad = g
        opt.step()
    b = gk.nn.Parameter(a.data.copy())
    opt_b = gk.optim.Adam([b], lr=0.5)
    opt_b.load_state_dict(opt.state_dict())
    assert opt_b.param_groups[0]["lr"] == 0.1
    for g in grads[2:]:
        a.grad, b.grad = g, g.copy()
        opt.step()
        opt_b.step()
    assert rel_err(b.data, a.data) == 0.0


def test_optimizer_state_is_restored_where_the_parameter_lives(fake_device, rng):
    with gk.use_backend("fakedevice"):
        p = gk.nn.Parameter(gk.asarray(rng.standard_normal(4)))
    opt = gk.optim.SGD([p], lr=0.1, momentum=0.9)
    saved = opt.state_dict()
    saved["state"] = {0: {"momentum_buffer": rng.standard_normal(4)}}  # host, as saved
    opt.load_state_dict(saved)
    buf = opt.state[p]["momentum_buffer"]
    assert fake_device.owns(buf) and fake_device.device_of(buf) == fake_device.device_of(p.data)
    assert rel_err(buf, saved["state"][0]["momentum_buffer"]) == 0.0


def test_zero_grad_and_errors():
    p = gk.nn.Parameter(np.zeros(2))
    p.grad = np.ones(2)
    opt = gk.optim.SGD([p], lr=0.1)
    opt.zero_grad()
    assert p.grad is None
    opt.step()  # no gradient: no update
    assert p.data.tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="Nesterov"):
        gk.optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="lr must be >= 0"):
        gk.optim.Adam([p], lr=-1)
    with pytest.raises(ValueError, match=r"betas\[1\] must be in"):
        gk.optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="empty parameter list"):
        gk.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="must be a Parameter"):
        gk.optim.SGD([np.zeros(2)], lr=0.1)


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        ("StepLR", {"step_size": 3, "gamma": 0.5}),
        ("CosineAnnealingLR", {"T_max": 4}),
        ("CosineAnnealingLR", {"T_max": 5, "eta_min": 0.01}),
    ],
)
def test_scheduler_matches_torch(cls, kwargs):
    torch = pytest.importorskip("torch")
    opt = gk.optim.SGD([gk.nn.Parameter(np.zeros(1))], lr=0.3, momentum=0.9)
    t_opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.3, momentum=0.9)
    sched = getattr(gk.optim, cls)(opt, **kwargs)
    t_sched = getattr(torch.optim.lr_scheduler, cls)(t_opt, **kwargs)
    ours, theirs = [sched.get_last_lr()[0]], [t_sched.get_last_lr()[0]]
    for _ in range(12):
        t_opt.step()
        sched.step()
        t_sched.step()
        ours.append(opt.param_groups[0]["lr"])
        theirs.append(t_opt.param_groups[0]["lr"])
    assert rel_err(np.array(ours), np.array(theirs)) < F64
