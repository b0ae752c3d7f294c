#!/usr/bin/env bash
# CI smoke for the asv suite (< 2 min): every benchmark imports and is well formed
# (`asv check`), and a few run once against the working tree, so a broken benchmark
# cannot land. Nothing is saved (--dry-run). Pass asv -b regexes to pick others.
set -euo pipefail
cd "$(dirname "$0")/.."
machine=$(python tools/asv_machine.py)
asv check --python=same
bench=("$@")
if [ ${#bench[@]} -eq 0 ]; then
    bench=(-b 'bench_core\.Dispatch' -b 'bench_core\.Prepare' -b 'bench_core\.ToDevice'
           -b 'bench_matmul' -b 'bench_fft')
fi
# asv run exits non-zero when a benchmark fails (skips, from NotImplementedError, pass)
asv run --python=same --quick --dry-run --show-stderr --machine "$machine" "${bench[@]}"
echo "bench_smoke: ok"
