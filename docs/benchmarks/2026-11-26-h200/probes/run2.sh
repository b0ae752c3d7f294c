#!/usr/bin/env bash
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
timeout 60 python3 .probe/nan_probe.py > $OUT/nan-probe.txt 2>&1; echo "nan rc=$?"
timeout 120 python3 .probe/prof.py > $OUT/prof.txt 2>&1; echo "prof rc=$?"
