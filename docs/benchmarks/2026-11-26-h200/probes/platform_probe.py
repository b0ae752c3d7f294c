"""Probe: the VM's cost of a tiny kernel (eager, in a CUDA graph) and its clocks."""

import subprocess
import time

import cupy


def smi():
    return subprocess.run(
        [
            "nvidia-smi",
            "--query-gpu=clocks.sm,clocks.mem,pstate,power.draw",
            "--format=csv,noheader",
        ],
        capture_output=True,
        text=True,
    ).stdout.strip()


x = cupy.zeros(1, cupy.float32)
dev = cupy.cuda.Device()
print("clocks idle:", smi(), flush=True)
for _ in range(200):
    x += 1
dev.synchronize()
n = 5000
t0 = time.perf_counter()
for _ in range(n):
    x += 1
t_host = time.perf_counter() - t0
dev.synchronize()
t_all = time.perf_counter() - t0
print(
    f"eager x += 1: host {t_host / n * 1e6:.2f} us/launch, with sync {t_all / n * 1e6:.2f} us/launch; clocks after: {smi()}",
    flush=True,
)
s = cupy.cuda.Stream(non_blocking=True)
with s:
    s.begin_capture()
    for _ in range(100):
        x += 1
    g = s.end_capture()
g.upload(s)
g.launch(s)
s.synchronize()
start, stop = cupy.cuda.Event(), cupy.cuda.Event()
start.record(s)
for _ in range(50):
    g.launch(s)
stop.record(s)
stop.synchronize()
ms = cupy.cuda.get_elapsed_time(start, stop)
print(
    f"graph of 100 x += 1, 50 replays: {ms * 1e3 / 5000:.2f} us per node (device, CUDA events); clocks: {smi()}",
    flush=True,
)
start.record()
for _ in range(n):
    x += 1
stop.record()
stop.synchronize()
print(
    f"eager, CUDA events: {cupy.cuda.get_elapsed_time(start, stop) * 1e3 / n:.2f} us per kernel",
    flush=True,
)
try:
    import torch

    t = torch.zeros(1, device="cuda")
    for _ in range(200):
        t.add_(1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        t.add_(1)
    torch.cuda.synchronize()
    print(
        f"torch add_ eager: {(time.perf_counter() - t0) / n * 1e6:.2f} us per kernel with sync",
        flush=True,
    )
except Exception as e:
    print("torch:", e)
