"""``gk.distributed.client()``, ``gpukit info``'s Dask section, and the bad cases: an
unanswered scheduler address, a worker that dies mid-computation.

Every wait has a deadline (a connection timeout, a subprocess timeout): nothing hangs.
"""

from __future__ import annotations

import gc
import os
import socket
import threading

import numpy as np
import pytest
from subproc import run_python

import gpukit as gk
from gpukit._info import collect, render

from helpers import TOL, rel_err

pytest.importorskip("dask", reason='pip install -e ".[dask]"')
pytest.importorskip("distributed", reason='pip install -e ".[dask]"')
import dask
import dask.array as da
from distributed import LocalCluster

ENV = "GPUKIT_DASK_SCHEDULER"


@pytest.fixture
def embedded(monkeypatch):
    """No scheduler address: client() starts an in-process cluster; closed afterwards."""
    monkeypatch.delenv(ENV, raising=False)
    yield
    gk.distributed.close()


def test_client_is_one_per_process_and_computes(embedded, rng):
    c = gk.distributed.client()
    assert gk.distributed.client() is c
    x = rng.standard_normal((6, 4))
    y = gk.matmul(da.from_array(x, chunks=(3, 4)), np.eye(4))
    assert rel_err(y.compute(), x) < TOL[np.dtype(np.float64)]  # the default scheduler now
    info = collect()["dask"]
    assert info["client"]["kind"] == "in-process LocalCluster"
    assert info["client"]["workers"] >= 1
    assert "in-process LocalCluster" in render(collect())


def test_client_from_many_threads_starts_one_cluster(embedded):
    got, barrier = [], threading.Barrier(6)

    def call():
        barrier.wait()
        got.append(gk.distributed.client())

    threads = [threading.Thread(target=call) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(got) == 6 and len({id(c) for c in got}) == 1


def test_close_and_context_manager_then_a_new_client(embedded):
    with gk.distributed.client() as c:
        assert c.status == "running"
    assert c.status == "closed"
    c2 = gk.distributed.client()
    assert c2 is not c and c2.status == "running"
    gk.distributed.close()
    assert c2.status == "closed"
    assert collect()["dask"]["client"] is None
    gk.distributed.close()  # closing twice is harmless


def test_forked_child_does_not_reuse_the_parent_client(embedded):
    gk.distributed.client()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether it would reuse the parent's client
        os.write(write, b"reused" if gk.distributed._client._open() is not None else b"fresh")
        os._exit(0)
    os.close(write)
    assert os.read(read, 16) == b"fresh"
    os.waitpid(pid, 0)


def test_scheduler_address_from_the_environment(monkeypatch, rng):
    with LocalCluster(processes=False, n_workers=1, protocol="tcp", dashboard_address=":0") as cl:
        monkeypatch.setenv(ENV, cl.scheduler_address)
        try:
            c = gk.distributed.client(timeout=30)
            assert c.scheduler.address == cl.scheduler_address
            x = rng.standard_normal((4, 8))
            y = gk.fft.fft(da.from_array(x, chunks=(2, 8)))
            out = c.compute(y).result(timeout=60)
            assert rel_err(out, np.fft.fft(x)) < TOL[np.dtype(np.float64)]
            info = collect()["dask"]
            assert info["scheduler"] == cl.scheduler_address
            assert info["client"]["kind"].startswith("connected")
        finally:
            gk.distributed.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unanswered_scheduler_address_times_out_naming_it(monkeypatch):
    address = f"tcp://127.0.0.1:{_free_port()}"
    monkeypatch.setenv(ENV, address)
    before = dask.config.get("scheduler", None)
    with pytest.raises(gk.errors.SchedulerUnreachableError, match=address.replace(".", r"\.")):
        gk.distributed.client(timeout=1)
    assert dask.config.get("scheduler", None) == before  # the failed client left no trace
    assert isinstance(gk.errors.SchedulerUnreachableError("x"), TimeoutError)


def _clients() -> int:
    from distributed import Client

    return sum(isinstance(o, Client) for o in gc.get_objects())


@pytest.mark.parametrize("bad", ["unanswered", "nonsense"])
def test_a_failed_connection_leaves_no_half_made_client(monkeypatch, bad):
    """The half-made Client of a failed connection is finalized before client() raises:
    left to the garbage collector, its finalizer once ran inside another LocalCluster's
    start and deadlocked on distributed's class-wide LoopRunner lock (the suite hung)."""
    gc.collect()
    before = _clients()
    address = f"tcp://127.0.0.1:{_free_port()}" if bad == "unanswered" else bad
    monkeypatch.setenv(ENV, address)
    gc.disable()  # only client() itself may collect
    try:
        with pytest.raises((ValueError, gk.errors.SchedulerUnreachableError)):
            gk.distributed.client(timeout=1)
        assert _clients() == before
    finally:
        gc.enable()


@pytest.mark.parametrize("bad", ["nonsense", "tcp://host-without-port"])
def test_malformed_scheduler_address_is_a_value_error(monkeypatch, bad):
    monkeypatch.setenv(ENV, bad)
    with pytest.raises((ValueError, gk.errors.SchedulerUnreachableError), match=ENV):
        gk.distributed.client(timeout=1)


def test_timeout_must_be_positive():
    with pytest.raises(ValueError, match="timeout must be a positive"):
        gk.distributed.client(timeout=0)


def test_info_shows_the_scheduler_address_without_connecting():
    proc = run_python(
        "from gpukit.cli import main; main(['info'])",
        env={ENV: "tcp://192.0.2.1:8786"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "GPUKIT_DASK_SCHEDULER=tcp://192.0.2.1:8786" in proc.stdout


# A worker that dies: a subprocess with its own two-process cluster (the deadline is the
# subprocess timeout), allowed-failures 0 so the scheduler gives up at the first death.
_DYING_WORKER = """
import os, dask, numpy as np, dask.array as da, gpukit as gk
from distributed import Client, LocalCluster, KilledWorker

def die(block):
    os._exit(1)

if __name__ == "__main__":
    dask.config.set({"distributed.scheduler.allowed-failures": 0})
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cl, \\
            Client(cl) as c:
        x = da.ones((4, 4), chunks=(2, 4)).map_blocks(die, meta=np.empty((0, 0)))
        try:
            gk.to_numpy(gk.matmul(x, np.eye(4)))
        except gk.errors.WorkerLostError as e:
            print("WorkerLostError:", e)
        try:
            c.compute(gk.fft.fft(x)).result(timeout=60)
        except KilledWorker as e:
            print("KilledWorker")
"""


def test_worker_dying_mid_computation_is_an_error_not_a_hang(tmp_path):
    script = tmp_path / "dying.py"
    script.write_text(_DYING_WORKER)
    proc = run_python(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "WorkerLostError: gk.to_numpy: a Dask worker died" in proc.stdout
    assert "KilledWorker" in proc.stdout.splitlines()[-1]


def test_dask_poisson_example_runs_small(tmp_path):
    """examples/dask_poisson.py through gk.distributed.client(), against SciPy's solve of
    the assembled (small) matrix."""
    import scipy.sparse.linalg

    out = tmp_path / "u.npy"
    proc = run_python(
        "import runpy, sys; sys.argv = ['dask_poisson.py', '12', '--rows', '5', "
        f"'--save', {str(out)!r}]; runpy.run_path('examples/dask_poisson.py', run_name='__main__')"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "CG" in proc.stdout and "3 chunks" in proc.stdout
    n = 12
    h = 1.0 / (n + 1)
    grid = np.linspace(h, 1 - h, n)
    x, y = np.meshgrid(grid, grid, indexing="ij")
    b = (h * h * 2.0 * (x * (1 - x) + y * (1 - y))).ravel()
    with gk.use_backend("numpy"):
        a = gk.sparse.poisson2d(n)
    expected = scipy.sparse.linalg.spsolve(a.tocsc(), b)
    assert rel_err(np.load(out), expected) < 1e-7
