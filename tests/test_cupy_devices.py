"""The cupy backend across devices: copies of any layout, and work ordered between streams.

Every copy between two GPUs works for any memory layout (C, Fortran, strided, reversed,
broadcast), with and without peer access; reductions over shards combine on the device
that owns the result; work crossing streams (the workers', the caller's, another
device's) is ordered by events, not by the host waiting. On the CuPy simulator an
unordered read raises ``StreamHazard``, so these tests check the ordering too, in every
stream mode (``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1`` included).
"""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk

from helpers import TOL, rel_err

pytestmark = [pytest.mark.gpu, pytest.mark.multi_gpu(2)]

# Views of a (6, 8) array on the device; each is a layout CuPy cannot peer-copy as is
# unless it is C- or F-contiguous.
LAYOUTS = {
    "C": lambda a: a,
    "F": lambda a: a.T,
    "strided": lambda a: a[:, ::2],
    "reversed": lambda a: a[::-1, ::-1],
    "transposed-strided": lambda a: a.T[::3],
    "broadcast": lambda a: gk.namespace(a).broadcast_to(a[1, ::3], (5, 3)),
    "0-d": lambda a: a[2, 3],
    "empty": lambda a: a[:0, ::2],
}


@pytest.fixture
def no_host_waits(cupy_backend, monkeypatch):
    """Fail if gpukit makes the host wait for a device (it should order streams instead)."""
    # a checked kernel of an earlier test leaves its device's status unread: the test's
    # own gk.to_numpy would wait to read it (a wait the host makes there anyway)
    gk.synchronize()
    calls = []
    monkeypatch.setattr(cupy_backend, "synchronize", lambda device=None: calls.append(device))
    yield
    assert calls == [], f"gpukit made the host wait for devices {calls}"


def _on(backend, host, device, layout):
    whole = backend.asarray(host, device=device)
    return LAYOUTS[layout](whole), LAYOUTS[layout](host)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_asarray_moves_any_layout_between_devices(cupy_backend, rng, layout, no_host_waits):
    x, want = _on(cupy_backend, rng.standard_normal((6, 8)), 1, layout)
    with gk.device(1):
        x = x * 1  # produced by a kernel still queued on device 1's stream
    for current in (0, 1):
        with gk.device(current):
            y = gk.asarray(x, device=0)
            assert y.device.id == 0 and y.shape == want.shape
            assert np.array_equal(gk.to_numpy(y), want)
            back = gk.asarray(y, device=1)
        assert back.device.id == 1 and np.array_equal(gk.to_numpy(back), want)


@pytest.mark.parametrize("layout", ["C", "F", "strided", "reversed", "transposed-strided"])
def test_shard_gather_replicate_and_broadcast_any_layout(cupy_backend, rng, layout):
    x, want = _on(cupy_backend, rng.standard_normal((6, 8)), 1, layout)
    for axis in (0, 1):  # along axis 1 the shards of a C array are strided views
        s = gk.shard(x, axis=axis, devices=[0, 1])
        assert [sh.device.id for sh in s.shards] == [0, 1]
        for target in (0, 1):
            g = s.gather(target)
            assert g.device.id == target and np.array_equal(gk.to_numpy(g), want)
        assert np.array_equal(gk.to_numpy(gk.reshard(s, axis=1 - axis, devices=[1, 0])), want)
    r = gk.sharding.replicate(x, devices=[0, 1])
    assert [np.array_equal(gk.to_numpy(r.on(d)), want) for d in (0, 1)] == [True, True]
    coll = cupy_backend.collectives((0, 1))
    out = coll.broadcast(x, root=1)
    assert [o.device.id for o in out] == [0, 1]
    assert all(np.array_equal(gk.to_numpy(o), want) for o in out)


def test_peer_copy_collectives_take_any_layout(cupy_backend, rng):
    from gpukit.backend.collectives import PeerCopyCollectives

    coll = PeerCopyCollectives(cupy_backend, (1, 0))
    host = [rng.standard_normal((4, 6)) for _ in range(2)]
    parts = [
        cupy_backend.asarray(h, device=d)[::-1, ::2] for h, d in zip(host, (1, 0), strict=True)
    ]
    want = host[0][::-1, ::2] + host[1][::-1, ::2]
    total = coll.reduce(parts)
    assert total.device.id == 1 and rel_err(total, want) < 1e-15
    summed = coll.all_reduce(parts)
    assert [o.device.id for o in summed] == [1, 0] and all(rel_err(o, want) < 1e-15 for o in summed)
    whole = coll.all_gather(parts, axis=1)
    expected = np.concatenate([h[::-1, ::2] for h in host], axis=1)
    assert all(np.array_equal(gk.to_numpy(w), expected) for w in whole)


@pytest.mark.parametrize("devices", [(0, 1), (1, 0)])
def test_reductions_over_shards_land_on_the_first_shards_device(
    cupy_backend, rng, devices, no_host_waits
):
    x, y = rng.random((9, 5)) + 0.5, rng.random((9, 5)) + 0.5  # sums without cancellation
    sx, sy = gk.shard(x, devices=devices), gk.shard(y, devices=devices)
    v, w = gk.shard(x[:, 0], devices=devices), gk.shard(y[:, 0], devices=devices)
    for current in (0, 1):
        with gk.device(current):
            results = {
                "sum": (gk.sharding.sum(sx * 2), 2 * x.sum()),
                "max": (sx.max(), x.max()),
                "mean axis 0": (sx.mean(axis=0), x.mean(axis=0)),
                "vdot": (gk.sharding.vdot(sx, sy), np.vdot(x, y)),
                "dot": (gk.sharding.dot(v, w), x[:, 0] @ y[:, 0]),
                "norm": (gk.sharding.norm(sx), np.linalg.norm(x)),
            }
        for name, (got, want) in results.items():
            if name != "norm":  # a Python float: read on the host
                assert got.device.id == devices[0], name
            assert rel_err(got, want) < TOL[np.dtype("float64")], name


def test_sharded_krylov_solve_on_devices_other_than_the_current(cupy_backend, rng):
    n = 120
    q = rng.standard_normal((n, n))
    a, b = q @ q.T / n + 2 * np.eye(n), rng.standard_normal(n)
    with gk.device(0):
        x, info = gk.linalg.cg(gk.shard(a, devices=[1, 0]), b, rtol=1e-12)
    assert info.converged and [s.device.id for s in x.shards] == [1, 0]
    assert rel_err(x, np.linalg.solve(a, b)) < 1e-9


def test_worker_results_are_ordered_before_the_callers_stream(cupy_backend, rng):
    """A shard a worker produced is read by the caller (another thread, another stream)
    and by the next worker, without the host waiting in between."""
    x = rng.standard_normal((64, 16))
    s = gk.shard(x, devices=[0, 1])
    for _ in range(3):
        s = gk.map_shards(lambda a: a * 2 + 1, s)  # queued on the workers' streams
        s = s - 1  # and again
    assert rel_err(s, x * 8) < TOL[np.dtype("float64")]
    t = gk.shard(x, devices=[0, 1])
    u = t + 1  # the caller then writes into a shard the workers just read
    t.shards[0][...] = 0
    assert np.array_equal(gk.to_numpy(u), x + 1)


def test_warm_plans_name_the_device_their_arrays_share(cupy_backend, rng):
    """Two or more arrays on one of several devices keep a plan for that device: arrays
    of the same types, dtypes and shapes on the other device compute there, and a mixture
    of devices is refused as on a cold call."""
    import cupy

    from helpers import same_errors_warm_as_cold

    a = rng.standard_normal((4, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    on = {}
    for d in (0, 1):
        with cupy.cuda.Device(d):
            m = cupy.asarray(a @ a.T + 8 * np.eye(4, dtype=np.float32))
            on[d] = cupy.asarray(a), cupy.asarray(b), cupy.asarray(a.T.copy()), m

    def calls(d):
        x, bias, xt, m = on[d]
        return [
            lambda: gk.matmul(x, xt),
            lambda: gk.kernels.bias_activation(x, bias, "relu"),
            lambda: gk.linalg.solve(m, x),
        ]

    same_errors_warm_as_cold(
        calls(0),
        [
            lambda: gk.matmul(on[0][0], on[1][2]),
            lambda: gk.kernels.bias_activation(on[1][0], on[0][1], "relu"),
            lambda: gk.linalg.solve(on[0][3], on[1][0]),
        ],
    )
    for d in (1, 0):  # warm for device 0: device 1's calls plan and run there
        for call in calls(d):
            got = call()
            assert got.device.id == d
    x, bias, xt, _ = (cupy.asnumpy(v) for v in on[1])
    want = np.maximum(x.astype(np.float64) + bias, 0)
    assert (
        rel_err(gk.kernels.bias_activation(on[1][0], on[1][1], "relu"), want)
        < TOL[np.dtype(np.float32)]
    )
    assert (
        rel_err(gk.matmul(on[1][0], on[1][2]), x.astype(np.float64) @ xt)
        < TOL[np.dtype(np.float32)]
    )


def test_linalg_pairs_on_one_device_plan_nothing_when_warm(cupy_backend, rng, monkeypatch):
    """``solve``, ``lstsq`` and ``cho_solve`` of two arrays on one of several devices keep
    their plan under that device: a warm call makes no decision (every one starts by
    reading the plans' generation), and computes the float64 reference; a mixture of
    devices is still refused."""
    import cupy
    import scipy.linalg

    from gpukit._runtime import plans

    m = rng.standard_normal((4, 4))
    a, b, tall = m @ m.T + 4 * np.eye(4), rng.standard_normal(4), rng.standard_normal((6, 4))
    factor = np.linalg.cholesky(a)
    with cupy.cuda.Device(1):
        a1, b1, tall1, col1, c1 = map(cupy.asarray, (a, b, tall, tall[:, 0], factor))
    calls = {
        "solve": (lambda: gk.linalg.solve(a1, b1), np.linalg.solve(a, b)),
        "lstsq": (
            lambda: gk.linalg.lstsq(tall1, col1)[0],
            np.linalg.lstsq(tall, tall[:, 0], rcond=None)[0],
        ),
        "cho_solve": (
            lambda: gk.linalg.cho_solve((c1, True), b1),
            scipy.linalg.cho_solve((factor, True), b),
        ),
    }
    plans.forget()  # no table near its limit, which would start over during the warm-up
    for call, _ in calls.values():
        call()
        call()
    decided = []
    generation = plans.generation
    monkeypatch.setattr(plans, "generation", lambda: decided.append(1) or generation())
    for name, (call, want) in calls.items():
        got = call()
        assert decided == [], f"{name} planned again on a warm call"
        assert got.device.id == 1 and rel_err(got, want) < TOL[np.dtype(np.float64)], name
        decided.clear()  # (rel_err's own first calls plan)
    col0 = cupy.asarray(tall[:, 0])  # the current device, 0
    with pytest.raises(gk.DeviceMismatchError, match="'b' is on cupy:0 but argument 'a'"):
        gk.linalg.lstsq(tall1, col0)


def test_kernel_plans_name_the_device_their_arrays_share(cupy_backend, rng, monkeypatch):
    """Each ``gk.kernels`` front-end keeps a plan for arrays on one of several devices:
    a warm call there takes no kernel from the backend, arrays of the same types, dtypes
    and shapes on the other device plan once and compute there, and a mixture of devices
    is refused on a warm call as on a cold one."""
    import cupy

    from helpers import same_errors_warm_as_cold

    host = {
        "x": rng.standard_normal((4, 8)).astype(np.float32),
        "xt": rng.standard_normal((8, 4)).astype(np.float32),
        "bias": rng.standard_normal(8).astype(np.float32),
        "labels": rng.integers(0, 8, 4),
        "p": rng.standard_normal(8),
        "g": rng.standard_normal(8),
        "m": np.zeros(8),
        "v": np.zeros(8),
    }
    on = {}
    for d in (0, 1):
        with cupy.cuda.Device(d):
            on[d] = {name: cupy.asarray(a) for name, a in host.items()}

    def calls(d, e=None):
        """One call of each front-end on device ``d``'s arrays, the last on device ``e``'s."""
        a, b = on[d], on[d if e is None else e]
        return [
            lambda: gk.kernels.bias_activation(a["x"], b["bias"], "relu"),
            lambda: gk.kernels.bias_activation_backward(a["x"], a["x"], b["bias"], "relu"),
            lambda: gk.kernels.softmax_cross_entropy(a["x"], b["labels"]),
            lambda: gk.kernels.softmax_cross_entropy_backward(a["x"], a["labels"], b["bias"][:4]),
            lambda: gk.kernels.sgd_update(a["p"], b["g"], lr=0.0),
            lambda: gk.kernels.adam_update(a["p"], a["g"], a["m"], b["v"], step=1, lr=0.0),
            lambda: gk.kernels.matmul_tiled(a["x"], b["xt"]),
        ]

    same_errors_warm_as_cold(calls(0), calls(0, 1))
    for call, mixed in zip(calls(0), calls(1, 0), strict=True):
        with pytest.raises(gk.DeviceMismatchError):
            mixed()
        call()
    taken = []
    kernel = cupy_backend.kernel
    monkeypatch.setattr(cupy_backend, "kernel", lambda name: taken.append(name) or kernel(name))
    for call in calls(0):
        call()
    assert taken == []  # every call warm on device 0
    for call in calls(1) + calls(1):
        call()
    assert len(taken) == len(calls(1))  # device 1 planned once per front-end
    a = on[1]
    with cupy.cuda.Device(0):  # not the arrays' device
        y = gk.kernels.bias_activation(a["x"], a["bias"], "relu")
        gk.kernels.sgd_update(a["p"], a["g"], lr=0.5)
    assert y.device.id == 1
    want = np.maximum(host["x"].astype(np.float64) + host["bias"], 0)
    assert rel_err(y, want) < TOL[np.dtype(np.float32)]
    assert rel_err(a["p"], host["p"] - 0.5 * host["g"]) < TOL[np.dtype(np.float64)]


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_a_step_refuses_a_gradient_on_another_device(cupy_backend, rng, name):
    """After steps on one device, a gradient set on the other device is refused, naming
    both devices, and the parameter is left as it was."""
    import cupy

    p, g = rng.standard_normal(8), rng.standard_normal(8)
    with cupy.cuda.Device(1):
        param = gk.nn.Parameter(cupy.asarray(p))
        param.grad = cupy.asarray(g)
    opt = getattr(gk.optim, name)([param], lr=0.1)
    for _ in range(2):
        opt.step()
    before = cupy.asnumpy(param.data)
    with cupy.cuda.Device(0):
        param.grad = cupy.asarray(g)
    refused = "a parameter on <CUDA Device 1> has a gradient on <CUDA Device 0>"
    with pytest.raises(gk.DeviceMismatchError, match=refused):
        opt.step()
    assert np.array_equal(cupy.asnumpy(param.data), before)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_warm_steps_update_on_the_parameters_device_whichever_is_current(cupy_backend, rng, name):
    """Warm steps (the plan bound to the flat buffers on device 1) launch there while
    device 0 is current, and follow each step's new gradient, set by hand on device 1
    (float64 reference: SGD with momentum, Adam at lr 0.1)."""
    import cupy

    p = rng.standard_normal(8)
    with cupy.cuda.Device(1):
        param = gk.nn.Parameter(cupy.asarray(p))
    kwargs = {"lr": 0.1, "momentum": 0.9} if name == "SGD" else {"lr": 0.1}
    opt = getattr(gk.optim, name)([param], **kwargs)
    want, m, v = p.copy(), np.zeros(8), np.zeros(8)
    for step in range(1, 5):
        g = rng.standard_normal(8)
        with cupy.cuda.Device(1):
            param.grad = cupy.asarray(g)
        with cupy.cuda.Device(0):
            opt.step()
        if name == "SGD":
            m = g if step == 1 else 0.9 * m + g
            want -= 0.1 * m
        else:
            m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            want -= 0.1 / (1 - 0.9**step) * m / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    assert param.data.device.id == 1
    assert rel_err(param.data, want) < TOL[np.dtype(np.float64)]
