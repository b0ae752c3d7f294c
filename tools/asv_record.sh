#!/usr/bin/env bash
# Record the asv history point of HEAD on this machine, under asv_bench/results/.
# The environment is this machine's python (environment_type "existing"), so asv
# measures the checkout as it is; --set-commit-hash files the results under HEAD.
# Commit a clean tree first. Extra arguments go to `asv run` (e.g. -b bench_fft, --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
# asv's own output (asv_bench/results: benchmarks.json, which every run rewrites, and the
# results of earlier recordings) may be uncommitted; the code measured may not
if [ -n "$(git status --porcelain --untracked-files=no -- . ':(exclude)asv_bench/results')" ]; then
    echo "asv_record: the tree has uncommitted changes; the results would not match HEAD" >&2
    exit 1
fi
machine=$(python tools/asv_machine.py)
echo "asv_record: machine $machine, commit $(git rev-parse --short HEAD)"
asv run --python=same --machine "$machine" --set-commit-hash "$(git rev-parse HEAD)" "$@"
echo "asv_record: results in asv_bench/results/$machine/"
