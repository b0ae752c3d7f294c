"""gk.optim: several steps of each optimizer and schedule vs torch.optim."""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk

from helpers import TOL, oracle, rel_err

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
    torch = oracle("torch")
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


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_float16_parameters_are_updated_in_float32(backend, rng, name):
    """float16 parameters and state are computed in float32 and rounded once per step, as
    PyTorch does: in float16, Adam's eps (1e-8) and the square of a 1e-4 gradient vanish
    (0 / 0 on the host), and the GPU kernels take float32/float64 (found by the
    capability test on the simulator). Compared with torch.optim on the float32 copy."""
    torch = oracle("torch")
    cls, kwargs = OPTIMIZERS[name]
    init = rng.standard_normal(12).astype(np.float16)
    p = gk.nn.Parameter(gk.asarray(init.copy()))
    tp = torch.tensor(init.astype(np.float32), requires_grad=True)
    opt = getattr(gk.optim, cls)([p], **kwargs)
    t_opt = getattr(torch.optim, cls)([tp], **kwargs)
    for scale in (1e-4, 1.0, 1e-4):
        g = (scale * rng.standard_normal(12)).astype(np.float16)
        p.grad = gk.asarray(g)
        tp.grad = torch.from_numpy(g.astype(np.float32))
        opt.step()
        t_opt.step()
        with torch.no_grad():  # the float16 parameter, as gpukit keeps it
            tp.copy_(tp.to(torch.float16).to(torch.float32))
        for s in opt.state.get(p, {}).values():
            assert not hasattr(s, "dtype") or s.dtype == np.float16
    assert p.data.dtype == np.float16
    assert rel_err(p.data, tp.detach().numpy()) < np.finfo(np.float16).eps


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
    with pytest.raises(ValueError, match="empty parameter list"):
        gk.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="must be a Parameter"):
        gk.optim.SGD([np.zeros(2)], lr=0.1)
    with pytest.raises(TypeError, match=r"got Sequential; pass model\.parameters\(\)"):
        gk.optim.SGD(gk.nn.Sequential(gk.nn.Linear(2, 2)), lr=0.1)
    with pytest.raises(ValueError, match=r"params\[0\] of group 0 and params\[0\] of group 1"):
        gk.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    q = gk.nn.Parameter(np.zeros(2))
    with pytest.raises(ValueError, match=r"params\[1\] of group 0 and params\[2\] of group 0"):
        gk.optim.SGD([q, p, p], lr=0.1)  # within one group too: it would be stepped twice
    layer = gk.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="used at two places"):
        gk.optim.SGD(gk.nn.Sequential(layer, gk.nn.ReLU(), layer).parameters(), lr=0.1)
    with pytest.raises(TypeError, match="must be floating, got dtype int64"):
        gk.optim.SGD([gk.nn.Parameter(np.zeros(2, int))], lr=0.1)


INF, NAN = float("inf"), float("nan")
# (optimizer, keyword arguments, exception, message): not a real number is a TypeError;
# out of range or not finite a ValueError (PyTorch's checks, plus finiteness)
BAD_HYPER = [
    ("SGD", {"lr": "0.1"}, TypeError, r"lr must be a real number, got '0\.1' \(str\)"),
    ("SGD", {"lr": None}, TypeError, "lr must be a real number, got None"),
    ("SGD", {"lr": True}, TypeError, "lr must be a real number, got True"),
    ("SGD", {"lr": 1 + 0j}, TypeError, "lr must be a real number"),
    ("SGD", {"lr": INF}, ValueError, "lr must be finite, got inf"),
    ("SGD", {"lr": NAN}, ValueError, "lr must be finite, got nan"),
    ("SGD", {"lr": -1}, ValueError, r"lr must be >= 0\.0, got -1"),
    ("SGD", {"lr": 0.1, "momentum": -0.5}, ValueError, "momentum must be >= 0"),
    ("SGD", {"lr": 0.1, "momentum": INF}, ValueError, "momentum must be finite"),
    ("SGD", {"lr": 0.1, "dampening": NAN}, ValueError, "dampening must be finite"),
    ("SGD", {"lr": 0.1, "weight_decay": "0"}, TypeError, "weight_decay must be a real number"),
    ("SGD", {"lr": 0.1, "weight_decay": -1e-4}, ValueError, "weight_decay must be >= 0"),
    ("SGD", {"lr": 0.1, "nesterov": True}, ValueError, "Nesterov momentum requires momentum > 0"),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True}, ValueError,
     "and dampening == 0"),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": "yes"}, TypeError, "nesterov must be a bool"),
    ("Adam", {"lr": -1}, ValueError, r"lr must be >= 0"),
    ("Adam", {"betas": (0.9, 1.0)}, ValueError, r"betas\[1\] must be in \[0\.0, 1\.0\), got 1"),
    ("Adam", {"betas": (NAN, 0.9)}, ValueError, r"betas\[0\] must be finite"),
    ("Adam", {"betas": (0.9,)}, TypeError, r"betas must be a pair \(beta1, beta2\)"),
    ("Adam", {"betas": 0.9}, TypeError, "betas must be a pair"),
    ("Adam", {"betas": ("0.9", 0.99)}, TypeError, r"betas\[0\] must be a real number"),
    ("Adam", {"eps": -1e-8}, ValueError, "eps must be >= 0"),
    ("Adam", {"eps": INF}, ValueError, "eps must be finite"),
    ("Adam", {"weight_decay": NAN}, ValueError, "weight_decay must be finite"),
    ("AdamW", {"lr": INF}, ValueError, "lr must be finite"),
    ("AdamW", {"weight_decay": -0.01}, ValueError, "weight_decay must be >= 0"),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "kwargs", "error", "match"), BAD_HYPER)
def test_hyperparameters_are_validated(cls, kwargs, error, match):
    p = gk.nn.Parameter(np.zeros(2))
    with pytest.raises(error, match=match) as info:
        getattr(gk.optim, cls)([p], **kwargs)
    assert type(info.value) is error
    assert str(info.value).startswith(f"gk.optim.{cls}: ")


def test_numpy_numbers_are_real_numbers():
    p = gk.nn.Parameter(np.zeros(2))
    opt = gk.optim.Adam([p], lr=np.float32(0.5), betas=[np.float64(0.8), 0.9], eps=np.array(1e-8))
    p.grad = np.ones(2)
    opt.step()
    assert np.allclose(p.data, -0.5)


@pytest.mark.parametrize("bad", [INF, NAN, -0.1, "0.1"])
def test_a_learning_rate_set_between_steps_is_checked_before_any_update(rng, bad):
    params = [gk.nn.Parameter(rng.standard_normal(3)) for _ in range(2)]
    opt = gk.optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1, momentum=0.9)
    before = [p.data.copy() for p in params]
    for p in params:
        p.grad = np.ones(3)
    opt.param_groups[1]["lr"] = bad  # as a buggy scheduler would
    with pytest.raises((TypeError, ValueError), match=r"^gk\.optim\.SGD: lr must be"):
        opt.step()
    assert all(np.array_equal(p.data, b) for p, b in zip(params, before, strict=True))
    assert opt.state == {}


def test_load_state_dict_with_bad_hyperparameters_changes_nothing():
    params = [gk.nn.Parameter(np.zeros(2)), gk.nn.Parameter(np.zeros(2))]
    opt = gk.optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1)
    saved = opt.state_dict()
    saved["param_groups"][0]["lr"] = 0.5
    saved["param_groups"][1]["lr"] = float("inf")
    with pytest.raises(ValueError, match="lr must be finite"):
        opt.load_state_dict(saved)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.1]


def test_gradients_must_match_their_parameter(rng):
    p = gk.nn.Parameter(rng.standard_normal((3, 4)))
    opt = gk.optim.SGD([p], lr=0.1)
    before = p.data.copy()
    for grad, error, match in (
        (np.ones(4), ValueError, r"shape \(3, 4\) has a gradient of shape \(4,\)"),
        (np.ones((3, 4), np.float32), TypeError, "dtype float64 has a gradient of dtype float32"),
        (p.data, ValueError, "gradient is the parameter's own array"),
    ):
        p.grad = grad
        with pytest.raises(error, match=match):
            opt.step()
        assert np.array_equal(p.data, before)  # never broadcast into the parameter
    strided = gk.nn.Parameter(np.ones((3, 8))[:, ::2])
    strided.grad = np.ones((3, 4))
    with pytest.raises(ValueError, match="writeable C-contiguous"):
        gk.optim.SGD([strided], lr=0.1).step()


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda opt: gk.optim.StepLR(opt, 0), ValueError, "step_size must be >= 1"),
        (lambda opt: gk.optim.StepLR(opt, 2.5), TypeError, "step_size must be an integer"),
        (lambda opt: gk.optim.StepLR(opt, 2, gamma=NAN), ValueError, "gamma must be finite"),
        (lambda opt: gk.optim.StepLR(opt, 2, gamma=-1), ValueError, "gamma must be >= 0"),
        (lambda opt: gk.optim.CosineAnnealingLR(opt, "4"), TypeError, "T_max must be an int"),
        (lambda opt: gk.optim.CosineAnnealingLR(opt, 4, eta_min=INF), ValueError, "finite"),
        (lambda opt: gk.optim.StepLR(None, 2), TypeError, "optimizer must be a gk.optim.Opt"),
    ],
)
def test_scheduler_arguments_are_validated(make, error, match):
    opt = gk.optim.SGD([gk.nn.Parameter(np.zeros(1))], lr=1.0)
    with pytest.raises(error, match=match) as info:
        make(opt)
    assert str(info.value).startswith("gk.optim.")


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        ("StepLR", {"step_size": 3, "gamma": 0.5}),
        ("CosineAnnealingLR", {"T_max": 4}),
        ("CosineAnnealingLR", {"T_max": 5, "eta_min": 0.01}),
    ],
)
def test_scheduler_matches_torch(cls, kwargs):
    torch = oracle("torch")
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


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [("StepLR", {"step_size": 2, "gamma": 0.5}), ("CosineAnnealingLR", {"T_max": 6})],
)
def test_a_resumed_schedule_continues_at_the_saved_rates(cls, kwargs):
    """A new optimizer and scheduler loaded from saved state (PyTorch's way of resuming)
    step at the rates of the saved epoch, not at the initial ones until the next step."""
    torch = oracle("torch")
    rates = {}
    for lib, optim, sched_mod in (
        ("gk", gk.optim, gk.optim),
        ("torch", torch.optim, torch.optim.lr_scheduler),
    ):
        param = gk.nn.Parameter(np.zeros(1)) if lib == "gk" else torch.zeros(1, requires_grad=True)
        opt = optim.SGD([param], lr=0.3)
        sched = getattr(sched_mod, cls)(opt, **kwargs)
        for _ in range(3):
            opt.step()  # no gradient: nothing to update
            sched.step()
        saved, saved_sched = opt.state_dict(), sched.state_dict()
        opt = optim.SGD([param], lr=0.3)
        opt.load_state_dict(saved)
        sched = getattr(sched_mod, cls)(opt, **kwargs)
        sched.load_state_dict(saved_sched)
        rates[lib] = [opt.param_groups[0]["lr"]]
        for _ in range(3):
            opt.step()
            sched.step()
            rates[lib].append(opt.param_groups[0]["lr"])
    assert rel_err(np.array(rates["gk"]), np.array(rates["torch"])) < F64


class _MomentumReference:
    """torch.optim.SGD(momentum) in float64, written out: the reference for the flat
    buffers' bookkeeping (a parameter without a gradient is left alone)."""

    def __init__(self, lr=0.1, momentum=0.9):
        self.lr, self.momentum, self.values, self.bufs = lr, momentum, [], []

    def add(self, value):
        self.values.append(value.astype(np.float64))
        self.bufs.append(None)

    def step(self, grads):
        for i, g in enumerate(grads):
            if g is not None:
                b = self.bufs[i]
                self.bufs[i] = g.copy() if b is None else self.momentum * b + g
                self.values[i] = self.values[i] - self.lr * self.bufs[i]


def test_flat_buffers_keep_what_users_rely_on(backend, rng):
    """Parameters live in the optimizer's flat buffers (one update launch): a reference
    to ``data``, replacing ``data``, a parameter added later, one without a gradient, and
    state_dict/load_state_dict into a new optimizer behave as with separate arrays."""
    shapes = [(4, 3), (3,), (2, 5)]
    ref = _MomentumReference()
    params = []
    for s in shapes[:2]:
        a = rng.standard_normal(s)
        ref.add(a)
        params.append(gk.nn.Parameter(gk.asarray(a)))
    opt = gk.optim.SGD(params, lr=0.1, momentum=0.9)

    def step(grads):
        for p, g in zip(params, grads, strict=True):
            p.grad = None if g is None else gk.asarray(g)
        opt.step()
        ref.step(grads)

    step([rng.standard_normal(s) for s in shapes[:2]])
    held = params[0].data  # a reference taken after construction tracks the parameter
    step([rng.standard_normal(s) for s in shapes[:2]])
    assert rel_err(gk.to_numpy(held), ref.values[0]) < F64
    new = rng.standard_normal(shapes[0])  # a replaced data is taken into the buffer
    params[0].data, ref.values[0] = gk.asarray(new), new
    step([rng.standard_normal(s) for s in shapes[:2]])
    a = rng.standard_normal(shapes[2])  # a parameter added later
    ref.add(a)
    params.append(gk.nn.Parameter(gk.asarray(a)))
    opt.add_param_group({"params": [params[2]]})
    step([None, rng.standard_normal(shapes[1]), rng.standard_normal(shapes[2])])
    saved = opt.state_dict()
    opt = gk.optim.SGD(params[:2], lr=0.1, momentum=0.9)  # a new optimizer, loaded
    opt.add_param_group({"params": [params[2]]})
    opt.load_state_dict(saved)
    step([rng.standard_normal(s) for s in shapes])
    for p, want in zip(params, ref.values, strict=True):
        assert rel_err(gk.to_numpy(p.data), want) < F64


@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW"])
def test_hyperparameters_changed_between_steps_take_effect(backend, rng, cls):
    """A scheduler's new lr, then a user's, and a user's new momentum, dampening, betas,
    eps or weight decay, assigned to ``param_groups`` between warm steps, are used by the
    next step, as in torch.optim (float64)."""
    torch = oracle("torch")
    init = [rng.standard_normal(s) for s in [(4, 3), (3,)]]
    kwargs = {"lr": 0.1, "momentum": 0.9} if cls == "SGD" else {"lr": 0.05}
    params = [gk.nn.Parameter(gk.asarray(a.copy())) for a in init]
    t_params = [torch.tensor(a, requires_grad=True) for a in init]
    opts = [getattr(gk.optim, cls)(params, **kwargs), getattr(torch.optim, cls)(t_params, **kwargs)]
    scheds = [
        gk.optim.StepLR(opts[0], 2, gamma=0.5),
        torch.optim.lr_scheduler.StepLR(opts[1], 2, 0.5),
    ]
    changes = (
        [{"momentum": 0.5}, {"dampening": 0.25}, {"weight_decay": 0.1}]
        if cls == "SGD"
        else [{"betas": (0.5, 0.9)}, {"eps": 1e-3}, {"weight_decay": 0.2}]
    )
    for step in range(10):
        grads = [rng.standard_normal(a.shape) for a in init]
        for p, tp, g in zip(params, t_params, grads, strict=True):
            p.grad = gk.asarray(g)
            tp.grad = torch.from_numpy(g)
        for opt, sched in zip(opts, scheds, strict=True):
            opt.step()
            if step < 7:
                sched.step()
            else:  # the scheduler stopped: lr set by hand (schedulers chain differently)
                opt.param_groups[0]["lr"] = 0.3 / (step - 5)
            if step % 2 and step // 2 < len(changes):  # by hand, after warm steps
                opt.param_groups[0].update(changes[step // 2])
    for p, tp in zip(params, t_params, strict=True):
        assert rel_err(p.data, tp.detach().numpy()) < F64


def test_warm_steps_still_refuse_bad_gradients_and_frozen_parameters(rng):
    """After warm steps (one launch over the flat buffer, its kernel kept), each refusal
    of a step still fires and changes nothing: a gradient of another shape or dtype, the
    parameter's own array, a read-only parameter, a learning rate made negative."""
    params = [gk.nn.Parameter(rng.standard_normal(s)) for s in [(3, 4), (5,)]]
    opt = gk.optim.Adam(params, lr=0.1)
    for _ in range(3):
        for p in params:
            p.grad = rng.standard_normal(p.shape)
        opt.step()
    before = [p.data.copy() for p in params]
    state = {k: v.copy() for k, v in opt.state[params[0]].items() if k != "step"}
    steps = opt.state[params[0]]["step"]
    good = params[1].grad
    for grad, error, match in (
        (np.ones(4), ValueError, r"shape \(3, 4\) has a gradient of shape \(4,\)"),
        (np.ones((3, 4), np.float32), TypeError, "dtype float64 has a gradient of dtype float32"),
        (params[0].data, ValueError, "gradient is the parameter's own array"),
    ):
        params[0].grad = grad
        with pytest.raises(error, match=match):
            opt.step()
    params[0].grad = np.ones((3, 4))
    params[0].data.flags.writeable = False  # its view in the buffer, frozen in place
    with pytest.raises(ValueError, match="writeable C-contiguous"):
        opt.step()
    params[0].data.flags.writeable = True
    opt.param_groups[0]["lr"] = -0.5
    with pytest.raises(ValueError, match="lr must be >= 0"):
        opt.step()
    assert params[1].grad is good
    for p, b in zip(params, before, strict=True):
        assert np.array_equal(p.data, b)
    assert opt.state[params[0]]["step"] == steps
    for k, v in state.items():
        assert np.array_equal(opt.state[params[0]][k], v)


def test_warm_plain_sgd_steps_refuse_and_follow_each_change(rng):
    """Warm plain SGD steps (no state arrays: the step count is not read) still refuse a
    gradient of another shape or dtype, the parameter's own array and a read-only
    parameter, changing nothing; and follow a strided gradient, a gradient written into
    its slot, a parameter without a gradient and a replaced ``data`` (float64
    reference: ``p - lr * g``)."""
    shapes = [(3, 4), (5,)]
    params = [gk.nn.Parameter(rng.standard_normal(s)) for s in shapes]
    opt = gk.optim.SGD(params, lr=0.25)
    want = [p.data.copy() for p in params]

    def step(grads):
        for p, g in zip(params, grads, strict=True):
            p.grad = g
        opt.step()
        for w, g in zip(want, grads, strict=True):
            if g is not None:
                w -= 0.25 * np.asarray(g)

    def frozen(p):
        p.data.flags.writeable = False
        return np.ones(p.shape)

    for make, error, match in (
        (lambda p: np.ones(4), ValueError, r"shape \(3, 4\) has a gradient of shape \(4,\)"),
        (
            lambda p: np.ones((3, 4), np.float32),
            TypeError,
            "float64 has a gradient of dtype float32",
        ),
        (lambda p: p.data, ValueError, "gradient is the parameter's own array"),
        (frozen, ValueError, "writeable C-contiguous"),
    ):
        for _ in range(2):  # the second step is warm, and so is the refused one
            step([rng.standard_normal(s) for s in shapes])
        before = [p.data.copy() for p in params]
        good = params[1].grad
        params[0].grad = make(params[0])
        with pytest.raises(error, match=match):
            opt.step()
        params[0].data.flags.writeable = True
        assert params[1].grad is good
        for p, b in zip(params, before, strict=True):
            assert np.array_equal(p.data, b)
    step([rng.standard_normal((3, 8))[:, ::2], rng.standard_normal(5)])  # strided
    params[1].grad = None
    slot = params[1]._grad_target()  # where a backward pass writes it
    slot[...] = rng.standard_normal(5)
    step([rng.standard_normal((3, 4)), slot])
    step([None, rng.standard_normal(5)])
    new = rng.standard_normal(shapes[0])
    params[0].data, want[0] = new.copy(), new
    step([rng.standard_normal(s) for s in shapes])
    for p, w in zip(params, want, strict=True):
        assert rel_err(p.data, w) < F64


def test_warm_steps_reread_hyperparameters_not_the_objects_last_read(rng):
    """A warm step reuses the hyper-parameters it made only while each group entry is the
    object last read: a learning rate of equal value but another type (True for 1.0) is
    refused as on a cold step, changing nothing; an int of equal value is taken; betas
    kept in a list changed in place take effect (torch.optim, float64)."""
    torch = oracle("torch")
    p = gk.nn.Parameter(rng.standard_normal(6))
    opt = gk.optim.SGD([p], lr=1.0)
    want = p.data.copy()
    for lr in (1.0, 1.0, 1):  # two warm steps, then an int of the same value
        opt.param_groups[0]["lr"] = lr
        g = rng.standard_normal(6)
        p.grad = g
        opt.step()
        want -= g
    assert rel_err(p.data, want) < F64
    before = p.data.copy()
    for bad, error in ((True, TypeError), (float("nan"), ValueError)):
        opt.param_groups[0]["lr"] = bad
        with pytest.raises(error, match=r"^gk\.optim\.SGD: lr must be"):
            opt.step()
        assert np.array_equal(p.data, before)

    init = rng.standard_normal(5)
    q = gk.nn.Parameter(init.copy())
    tq = torch.tensor(init.copy(), requires_grad=True)
    betas, t_betas = [0.9, 0.999], [0.9, 0.999]
    opts = [
        gk.optim.Adam([{"params": [q], "betas": betas}], lr=0.1),
        torch.optim.Adam([{"params": [tq], "betas": t_betas}], lr=0.1),
    ]
    for step in range(4):
        g = rng.standard_normal(5)
        q.grad, tq.grad = g, torch.from_numpy(g.copy())
        for opt in opts:
            opt.step()
        if step == 1:  # after warm steps: the same list, another value
            betas[0] = t_betas[0] = 0.5
    assert rel_err(q.data, tq.detach().numpy()) < F64


def test_numpy_sgd_kernel_refuses_a_read_only_parameter_warm(rng):
    """The numpy plain-SGD kernel (what a step runs) refuses a read-only parameter before
    writing, on a warm call too, for the small one-pass path and the others alike."""
    from gpukit.kernels._direct import kernel

    for n, momentum in ((8, 0.0), (8, 0.9), (4096, 0.0)):
        p, g, buf = (rng.standard_normal(n) for _ in range(3))
        sgd = kernel(p, "sgd_update")
        for _ in range(2):
            sgd(p, g, buf, 0.1, momentum, 0.0, False, 0.0, False)
        frozen = p.copy()
        frozen.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            sgd(frozen, g, buf, 0.1, momentum, 0.0, False, 0.0, False)
        assert np.array_equal(frozen, p)


def test_a_device_gradient_of_a_host_parameter_is_refused(fake_device):
    """A device gradient of a host parameter is refused, naming both places, and the
    parameter is left as it was."""
    host = gk.nn.Parameter(np.zeros(3))
    host.grad = fake_device.asarray(np.ones(3))
    with pytest.raises(gk.DeviceMismatchError, match="parameters are on the host"):
        gk.optim.SGD([host], lr=0.5).step()
    np.testing.assert_array_equal(host.data, np.zeros(3))


@pytest.mark.gpu
def test_a_host_gradient_of_a_device_parameter_is_moved_there(cupy_backend):
    """A host gradient of a device parameter is moved there (a counted transfer) and the
    step runs with it."""
    p = gk.nn.Parameter(cupy_backend.asarray(np.zeros(3, np.float32)))
    p.grad = np.ones(3, np.float32)
    before = gk.transfer_stats().host_to_device.calls
    gk.optim.SGD([p], lr=0.5).step()
    assert gk.transfer_stats().host_to_device.calls == before + 1
    np.testing.assert_array_equal(gk.to_numpy(p.data), [-0.5, -0.5, -0.5])
