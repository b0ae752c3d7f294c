"""gk.nn.fit(graph=True) and gk.nn.GraphedStep: the step replayed as a CUDA graph trains as
the eager step does, falls back where capture cannot work and says why once."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gpukit as gk

from helpers import rel_err, simulated


def _docs_mlp(dtype="float32"):
    """docs/nn.rst's model: 64-128-10, ReLU (seeded layers: the same init every time)."""
    return gk.nn.Sequential(
        gk.nn.Linear(64, 128, seed=1, dtype=dtype), gk.nn.ReLU(),
        gk.nn.Linear(128, 10, seed=2, dtype=dtype),
    )  # fmt: skip


def _data(rng, n=300):
    x = rng.standard_normal((n, 64)).astype(np.float32)
    y = (x[:, :10].argmax(axis=1) + (x[:, 10] > 1)) % 10  # learnable labels
    return x, y


def _fit(model, x, y, graph, epochs=4, **kw):
    opt = gk.optim.Adam(model.parameters(), lr=3e-3)
    return gk.nn.fit(
        model, gk.nn.CrossEntropyLoss(), opt, x, y, epochs=epochs, batch_size=64, seed=0,
        progress=False, graph=graph, **kw,
    )["loss"]  # fmt: skip


def test_graph_trains_the_docs_mlp_as_the_eager_step(cupy_backend, rng):
    """Same data, init and order: per-epoch losses agree with the eager path's and with a
    float64 training of the same network on the host."""
    x, y = _data(rng)
    eager = _fit(_docs_mlp(), x, y, graph=False)
    with pytest.warns(gk.errors.GpukitWarning, match="smaller last batch") as record:
        graphed = _fit(_docs_mlp(), x, y, graph=True)
    assert len(record) == 1 and record[0].filename == __file__  # once, at the user's call
    with gk.use_backend("numpy"):
        reference = _fit(_docs_mlp("float64"), x.astype(np.float64), y, graph=False)
    assert rel_err(np.array(graphed), np.array(eager)) < 1e-5
    assert rel_err(np.array(graphed), np.array(reference)) < 1e-4
    assert graphed[-1] < graphed[0] * 0.8  # it learnt


def test_fit_with_a_graph_costs_one_replay_two_copies_and_one_add_a_step(cupy_backend, rng):
    """Steady state of ``fit(graph=True)`` (the difference of a 52- and a 20-batch epoch):
    per step the replay, the batch's two copies into the static buffers and the loss
    added to the epoch's sum in place; the status read every 16 steps (a wait for the
    device and the copy of its slots): no sync in between."""
    if not simulated():
        pytest.skip("counted on the simulator (python -m pytest --cupy=sim)")
    import cupysim

    def epoch(batches):
        x, y = _data(rng, 64 * batches)
        model = _docs_mlp()
        opt = gk.optim.Adam(model.parameters(), lr=3e-3)
        xd, yd = gk.asarray(x), gk.asarray(y)
        gk.synchronize()
        with cupysim.trace() as t:
            gk.nn.fit(
                model, gk.nn.CrossEntropyLoss(), opt, xd, yd, epochs=1, batch_size=64,
                shuffle=False, progress=False, graph=True,
            )  # fmt: skip
            gk.synchronize()
        return t.summary()

    step = (epoch(52) - epoch(20)) / 32
    assert step.graph_launches == 1
    assert step.kernels == 3
    assert step.syncs == 2 / 16


def test_graphed_step_replays_and_follows_the_learning_rate(cupy_backend, rng):
    """A hand-written loop: steps 2 on are replays; a scheduler's rate reaches the graph."""
    x, y = _data(rng, 64)
    xd, yd = gk.asarray(x), gk.asarray(y)
    models = [_docs_mlp(), _docs_mlp()]
    opts = [gk.optim.AdamW(m.parameters(), lr=1e-2) for m in models]
    loss_fn = gk.nn.CrossEntropyLoss()
    step = gk.nn.GraphedStep(models[1], loss_fn, opts[1], xd, yd)
    eager, graphed = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing falls back
        for i in range(6):
            for opt in opts:
                opt.param_groups[0]["lr"] = 1e-2 / (1 + i)
            opts[0].zero_grad()
            loss = loss_fn(models[0](xd), yd)
            models[0].backward(loss_fn.backward())
            opts[0].step()
            eager.append(float(loss))
            graphed.append(float(step(xd, yd)))
            assert step.graphed == (i >= 1)
    assert rel_err(np.array(graphed), np.array(eager)) < 1e-5
    state = opts[1].state_dict()["state"]
    assert state[0]["step"] == opts[0].state_dict()["state"][0]["step"] == 6
    w = [gk.to_numpy(m[0].weight.data).astype(np.float64) for m in models]
    assert rel_err(w[1], w[0]) < 1e-5


def test_graph_nonfinite_loss_names_the_batch(cupy_backend, rng):
    x, y = _data(rng)
    x[3 * 64 + 5] = np.nan  # no shuffle: batch 3 of epoch 0, a replay (0: eager, 1: capture)
    model = _docs_mlp()
    opt = gk.optim.Adam(model.parameters(), lr=1e-3)
    with pytest.raises(gk.NonFiniteError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gk.nn.fit(
            model, gk.nn.CrossEntropyLoss(), opt, x, y, epochs=1, batch_size=64,
            shuffle=False, progress=False, graph=True,
        )  # fmt: skip
    assert (info.value.epoch, info.value.batch) == (0, 3)
    assert np.isfinite(gk.to_numpy(model[0].weight.data)).all()  # no bad update applied
    # batches 0-2 applied; 3 and the eager last batch skipped, their counts taken back
    assert opt.state_dict()["state"][0]["step"] == 3


@pytest.mark.parametrize(
    "case, reason",
    [
        ("float64", "float32 GEMM kernel"),
        ("dropout", "capture failed"),
    ],
)
def test_graph_falls_back_and_says_why_once(cupy_backend, rng, case, reason):
    x, y = _data(rng, 256)
    dtype = "float64" if case == "float64" else "float32"
    layers = [gk.nn.Linear(64, 32, seed=1, dtype=dtype), gk.nn.ReLU()]
    if case == "dropout":
        layers.append(gk.nn.Dropout(0.1))
    model = gk.nn.Sequential(*layers, gk.nn.Linear(32, 10, seed=2, dtype=dtype))
    with pytest.warns(gk.errors.GpukitWarning, match=reason) as record:
        losses = _fit(model, x.astype(dtype), y, graph=True, epochs=2)
    assert len(record) == 1 and record[0].filename == __file__
    assert losses[-1] < losses[0]  # trained eagerly


def test_graph_on_the_numpy_backend_runs_eagerly(rng):
    x, y = _data(rng, 128)
    with gk.use_backend("numpy"):
        with pytest.warns(gk.errors.GpukitWarning, match="numpy backend has no CUDA graphs"):
            graphed = _fit(_docs_mlp(), x, y, graph=True, epochs=2)
        eager = _fit(_docs_mlp(), x, y, graph=False, epochs=2)
    assert graphed == eager
    with pytest.raises(TypeError, match="graph"):
        _fit(_docs_mlp(), x, y, graph="yes", epochs=1)
