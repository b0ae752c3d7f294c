"""Five GraphedStep steps (asv_bench/gpu_cost.mlp_graph_step), for ncu's per-node times."""

import sys

sys.path.insert(0, ".")
from asv_bench import gpu_cost

gk = gpu_cost._gk()
run, _ = gpu_cost.WORKLOADS["mlp_graph_step"](gk)
run(5)
gk.synchronize()
