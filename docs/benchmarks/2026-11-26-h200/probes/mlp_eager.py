"""Ten eager MLP Adam steps (asv_bench/gpu_cost.mlp_step), for ncu."""

import sys

sys.path.insert(0, ".")
from asv_bench import gpu_cost

gk = gpu_cost._gk()
run, _ = gpu_cost.WORKLOADS["mlp_step"](gk)
run(10)
gk.synchronize()
