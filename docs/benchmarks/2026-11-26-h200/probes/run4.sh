#!/usr/bin/env bash
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
timeout 60 python3 .probe/platform_probe.py > $OUT/platform-probe.txt 2>&1; echo "platform rc=$?"; cat $OUT/platform-probe.txt
timeout 90 python3 .probe/fft_nrm2_probe.py > $OUT/fft-nrm2-probe.txt 2>&1; echo "fft/nrm2 rc=$?"; cat $OUT/fft-nrm2-probe.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
timeout 180 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip 60 --launch-count 60 python3 .probe/mlp_eager.py > $OUT/ncu-mlp-step.csv 2> $OUT/ncu.err; echo "ncu rc=$?"; tail -3 $OUT/ncu.err; wc -l $OUT/ncu-mlp-step.csv
python3 - <<'PY' $OUT/ncu-mlp-step.csv
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: sys.exit("no rows")
h = rows[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); ui = h.index("Metric Unit")
agg = collections.defaultdict(list)
for r in rows[1:]:
    v = float(r[vi].replace(",", "")); v = v / 1000 if r[ui] == "nsecond" else v
    agg[r[ki][:70]].append(v)
tot = sum(sum(v) for v in agg.values())
for k, v in sorted(agg.items(), key=lambda kv: -sum(kv[1])):
    print(f"{len(v):3d} x {sum(v)/len(v):8.2f} us  {k}")
print(f"total {tot:.1f} us over {sum(len(v) for v in agg.values())} kernels")
PY
