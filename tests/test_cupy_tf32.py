"""TF32 is opt-in on the cupy backend: a product gets it exactly when it asks for it.

Per call with ``precision="tf32"`` (2-D and batched alike), or for every product with
gpukit's one global, ``GPUKIT_TF32=1``, which ``gpukit info`` shows; CuPy's own
``CUPY_TF32=1`` does not reach gpukit's products. The CuPy simulator records, for every
float32/complex64 GEMM, whether cuBLAS was allowed TF32 (``cupysim.tf32_requests()``);
on a real GPU the full-precision checks below still hold (TF32 would miss them by ~1e-3).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from subproc import ROOT, run_python

import gpukit as gk

from helpers import TOL, rel_err, simulated

pytestmark = pytest.mark.gpu


@pytest.fixture
def requests():
    """The simulator's record of TF32 requests, cleared (real GPUs keep no such record)."""
    if not simulated():
        pytest.skip("only the CuPy simulator records TF32 requests (python -m pytest --cupy=sim)")
    import cupysim

    cupysim.clear_tf32_requests()

    def taken() -> list[tuple[str, str, bool]]:
        out = [(r.routine, r.dtype, r.tf32) for r in cupysim.tf32_requests()]
        cupysim.clear_tf32_requests()
        return out

    return taken


def test_a_product_gets_tf32_exactly_when_it_asks(cupy_backend, requests, rng):
    a = cupy_backend.asarray(rng.standard_normal((3, 8, 8)).astype(np.float32))
    z = cupy_backend.asarray((rng.standard_normal((8, 8)) + 1j).astype(np.complex64))
    for precision, tf32 in [(None, False), ("highest", False), ("tf32", True), (None, False)]:
        gk.matmul(a[0], a[0], precision=precision)  # 2-D: gemmEx
        gk.matmul(a, a, precision=precision)  # batched: gemmStridedBatchedEx
        gk.matmul(a, a[0], precision=precision)  # batched against one matrix
        gk.matmul(z, z, precision=precision)  # complex64: single precision too
        assert requests() == [
            ("gemm", "float32", tf32),
            ("gemmStridedBatched", "float32", tf32),
            ("gemmStridedBatched", "float32", tf32),
            ("gemm", "complex64", tf32),
        ], precision
    gk.matmul(a.astype(np.float64), a.astype(np.float64), precision="tf32")
    assert requests() == []  # double precision: never TF32, nothing to record


def test_sharded_products_pass_the_request_on(cupy_backend, requests, rng):
    a = rng.standard_normal((9, 8)).astype(np.float32)
    s = gk.shard(a, devices=[0])
    gk.sharding.matmul(s, a.T, precision="tf32")
    gk.sharding.matmul(s, a.T)
    assert [r[2] for r in requests()] == [True, False]


_SCRIPT = """
import json, logging, numpy as np, gpukit as gk
logging.basicConfig(level=logging.WARNING)
rng = np.random.default_rng(0)
a, b = rng.standard_normal((2, 192, 192)).astype(np.float32)
with gk.use_backend("cupy"):
    exact = a.astype(np.float64) @ b.astype(np.float64)
    errs = {}
    for p in (None, "highest"):
        got = gk.to_numpy(gk.matmul(gk.asarray(a), gk.asarray(b), precision=p))
        errs[str(p)] = float(np.linalg.norm(got - exact) / np.linalg.norm(exact))
    gk.matmul(gk.asarray(a[None]), gk.asarray(b[None]))
    layer = gk.nn.Linear(192, 4, seed=0).to("cupy")
    layer.forward(gk.asarray(a))  # a raw x @ W.T inside the layer
    x, info = gk.linalg.cg(gk.asarray(a @ a.T / 192 + 4 * np.eye(192, dtype=np.float32)),
                           gk.asarray(a[0]), rtol=1e-5)
    gk.matmul(gk.asarray(a), gk.asarray(b), precision="tf32")
try:
    import cupysim
    tf32 = [r.tf32 for r in cupysim.tf32_requests()]
except ImportError:
    tf32 = None
print(json.dumps({"errs": errs, "tf32": tf32, "converged": bool(info.converged)}))
"""


def _python(code: str, **env: str):
    """``code`` in a fresh interpreter with this checkout's backends (not an installed copy)."""
    return run_python(code, env=env, extra_path=[str(ROOT / "backends")])


def _run(env: dict[str, str]) -> tuple[dict, str]:
    r = _python(_SCRIPT, GPUKIT_BACKEND="cupy", **env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def test_cupy_tf32_in_the_environment_does_not_reach_gpukit(cupy_backend):
    got, log = _run({"CUPY_TF32": "1"})
    assert got["converged"]
    assert max(got["errs"].values()) < TOL[np.dtype(np.float32)]  # full float32
    if got["tf32"] is not None:  # the simulator: every product asked for full precision
        assert len(got["tf32"]) >= 5 and got["tf32"][:-1] == [False] * (len(got["tf32"]) - 1)
        assert got["tf32"][-1] is True  # the one call that asked
    assert "CUPY_TF32=1 is set, but TF32 is opt-in in gpukit" in log
    info = _python("import gpukit.cli as c; c.main(['info'])", CUPY_TF32="1")
    assert "products that name no precision: off" in info.stdout
    assert "CUPY_TF32=1 is set; gpukit does not apply it" in info.stdout


def test_gpukit_tf32_is_the_documented_global(cupy_backend):
    got, _ = _run({"GPUKIT_TF32": "1"})
    assert got["errs"]["highest"] < TOL[np.dtype(np.float32)]  # asked for full precision
    if got["tf32"] is not None:
        # None -> TF32 (2-D, batched, the layer's raw product, the solver's mat-vecs);
        # "highest" (the second product) -> full precision
        assert got["tf32"][1] is False
        assert all(got["tf32"][i] for i in range(len(got["tf32"])) if i != 1)
    info = _python("import gpukit.cli as c; c.main(['info'])", GPUKIT_TF32="1")
    assert "products that name no precision: on (GPUKIT_TF32=1)" in info.stdout


def test_a_malformed_global_is_refused(cupy_backend):
    r = _python(
        "import gpukit as gk; print(gk.available_backends()['cupy'].reason)", GPUKIT_TF32="maybe"
    )
    assert "misconfigured: GPUKIT_TF32 must be 1 or 0" in r.stdout


def test_full_precision_by_default_on_the_device(cupy_backend, rng):
    a, b = (rng.standard_normal((128, 128)).astype(np.float32) for _ in range(2))
    got = gk.matmul(gk.asarray(a), gk.asarray(b))
    assert rel_err(got, a.astype(np.float64) @ b) < TOL[np.dtype(np.float32)]
