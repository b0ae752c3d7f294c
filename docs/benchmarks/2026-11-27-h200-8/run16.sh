#!/usr/bin/env bash
# Session 17's second device call: where an nn layer's host time goes on real CuPy.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/../../.."
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
timeout 150 python3 docs/benchmarks/2026-11-27-h200-8/nnprof.py > $OUT/nnprof.txt 2>&1; echo "nnprof rc=$?"
head -30 $OUT/nnprof.txt; grep "^###" $OUT/nnprof.txt
