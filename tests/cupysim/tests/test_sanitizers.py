"""The sanitizer modes find what compute-sanitizer finds: an out-of-bounds write
(memcheck: AddressSanitizer) and a missing __syncthreads (racecheck:
ThreadSanitizer). Each runs in a subprocess started with the sanitizer runtime
preloaded (``python -m cupysim.kernels.sanitize``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="sanitizer runtimes are preloaded with LD_PRELOAD"
)

PRELUDE = """
import re
import numpy as np, cupy
from cupysim.kernels import SanitizerError

def launch(code, name, grid, block, args, **kw):
    cupy.RawModule(code=code).get_function(name)(grid, block, args, **kw)

def reported(code, name, grid, block, args, **kw):
    try:
        launch(code, name, grid, block, args, **kw)
    except SanitizerError as exc:
        return str(exc)
    return ""
"""


def run_sanitized(mode: str, body: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    script = PRELUDE + textwrap.dedent(body)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "cupysim.kernels.sanitize",
            mode,
            "--",
            sys.executable,
            "-c",
            script,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_address_mode_reports_out_of_bounds_writes():
    proc = run_sanitized(
        "address",
        """
        oob = r'''extern "C" __global__ void k(float* y, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          y[i] = 1.0f;  // no bounds check: the last block writes past n
        }'''
        # 500 floats, 512 threads: the last 12 write past the end (within ASan's
        # redzone: a report does not stop the faulting write, the launch stops after it)
        y = cupy.zeros(500, dtype=np.float32)
        text = reported(oob, "k", (2,), (256,), (y, np.int32(500)))
        assert "heap-buffer-overflow" in text and "WRITE of size 4" in text, text
        assert re.search(r" in k \\S+:3\\b", text), text  # the kernel's line 3

        dyn = r'''extern "C" __global__ void k(int n) {
          extern __shared__ float buf[];
          buf[threadIdx.x] = 1.0f;  // the launch gave n floats of dynamic shared memory
        }'''
        text = reported(dyn, "k", (1,), (64,), (np.int32(32),), shared_mem=32 * 4)
        assert "AddressSanitizer" in text and re.search(r" in k \\S+:3\\b", text), text

        ok = r'''extern "C" __global__ void k(float* y, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) y[i] = 1.0f;
        }'''
        assert reported(ok, "k", (2,), (256,), (y, np.int32(500))) == ""
        print("CHECKED")
    """,
    )
    assert "CHECKED" in proc.stdout, proc.stdout + proc.stderr


def test_thread_mode_reports_a_missing_syncthreads():
    proc = run_sanitized(
        "thread",
        """
        template = r'''extern "C" __global__ void k(const float* x, float* y) {
          __shared__ float tile[256];
          tile[threadIdx.x] = x[threadIdx.x];
          SYNC
          y[threadIdx.x] = tile[255 - threadIdx.x];
        }'''
        x = cupy.asarray(np.arange(256, dtype=np.float32))
        y = cupy.zeros(256, dtype=np.float32)
        text = reported(template.replace("SYNC", ""), "k", (1,), (256,), (x, y))
        assert "ThreadSanitizer: data race" in text, text
        assert "kernel.cu:5" in text and "kernel.cu:3" in text, text

        assert reported(template.replace("SYNC", "__syncthreads();"), "k", (1,), (256,),
                        (x, y)) == ""
        assert (cupy.asnumpy(y) == np.arange(256)[::-1]).all()
        print("CHECKED")
    """,
    )
    assert "CHECKED" in proc.stdout, proc.stdout + proc.stderr


def test_sanitized_kernels_need_the_preloaded_runtime():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "CUPYSIM_SANITIZE": "address"}
    env.pop("LD_PRELOAD", None)
    script = PRELUDE + textwrap.dedent("""
        try:
            launch('extern "C" __global__ void k() {}', "k", (1,), (1,), ())
        except RuntimeError as exc:
            print("REFUSED", exc)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert "REFUSED" in proc.stdout and "python -m cupysim.kernels.sanitize address" in (
        proc.stdout
    ), proc.stdout + proc.stderr
