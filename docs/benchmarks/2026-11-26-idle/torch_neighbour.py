"""A 4096x4096 float64 ReLU backward pass of gk.kernels, alone, after pauses, and after a
PyTorch call (``python torch_neighbour.py torch``): milliseconds per call."""

import sys
import time

import numpy as np

import gpukit as gk


def timed_ms(f, idle):
    time.sleep(idle)
    t0 = time.perf_counter()
    f()
    return round((time.perf_counter() - t0) * 1e3, 1)


def main():
    rng = np.random.default_rng(0)
    n = 4096
    x, g, b = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)
    y = gk.kernels.bias_activation(x, b, "relu")

    def ours():
        return gk.kernels.bias_activation_backward(g, x, b, "relu")

    ours()
    print("idle 0    ", [timed_ms(ours, 0) for _ in range(5)])
    print("idle 0.15 ", [timed_ms(ours, 0.15) for _ in range(5)])
    if len(sys.argv) > 1:
        import torch

        torch.set_num_threads(2)
        tg, ty = torch.from_numpy(g), torch.from_numpy(y)

        def peer():
            return torch.ops.aten.threshold_backward(tg, ty, 0)

        after = []
        for _ in range(5):
            timed_ms(peer, 0.15)
            after.append(timed_ms(ours, 0.15))
        print("after torch", after)


if __name__ == "__main__":
    main()
