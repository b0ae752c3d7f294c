#!/usr/bin/env bash
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
timeout 120 python3 -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" -n 8 tests/test_kernels.py tests/test_nn_graphed.py tests/test_user_kernels.py > $OUT/kernel-tests.log 2>&1; echo "tests rc=$?"; tail -2 $OUT/kernel-tests.log
timeout 60 python3 .probe/nrm2_probe.py > $OUT/nrm2-probe.txt 2>&1; echo "nrm2 rc=$?"; cat $OUT/nrm2-probe.txt
timeout 90 python3 .probe/tiles_probe.py > $OUT/tiles-probe.txt 2>&1; echo "tiles rc=$?"; cat $OUT/tiles-probe.txt
NCU=/usr/local/cuda/bin/ncu
timeout 120 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip 60 --launch-count 60 python3 .probe/mlp_eager.py > $OUT/ncu-mlp-step.csv 2> $OUT/ncu.err; echo "ncu eager rc=$?"; python3 .probe/ncu_table.py $OUT/ncu-mlp-step.csv | head -12
timeout 150 $NCU --clock-control none --graph-profiling node --metrics gpu__time_duration.sum --csv python3 .probe/graph_step.py > $OUT/ncu-graph-step.csv 2>> $OUT/ncu.err; echo "ncu graph rc=$?"; python3 .probe/ncu_table.py $OUT/ncu-graph-step.csv | head -25
