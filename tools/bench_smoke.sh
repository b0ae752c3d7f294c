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
# asv exits 0 when a benchmark fails; its log says "failed", so look for that.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
asv run --python=same --quick --dry-run --show-stderr --machine "$machine" "${bench[@]}" | tee "$log"
if grep -Eq '(failed|Traceback)' "$log"; then
    echo "bench_smoke: a benchmark failed (see above)" >&2
    exit 1
fi
echo "bench_smoke: ok"
