#!/usr/bin/env bash
# CI smoke for the asv suite (< 2 min): every benchmark imports and is well formed
# (`asv check`), and a few run once against the working tree, so a broken benchmark
# cannot land. Pass asv -b regexes to pick others. Needs only `pip install -e ".[bench]"`:
# what is not installed (a GPU, PyTorch, Dask) is skipped, and a skip passes.
#
# Nothing is saved: asv writes results/benchmarks.json and results/<machine>/machine.json
# on every run, --dry-run included, so it runs on a copy of asv.conf.json whose results
# go to a scratch folder, and the checkout is left as it was found.
set -euo pipefail
cd "$(dirname "$0")/.."
machine=$(python tools/asv_machine.py)  # asv refuses to run on a machine it has not registered
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python - "$scratch" <<'EOF'
import json, os, sys

scratch = sys.argv[1]
with open("asv.conf.json") as f:
    conf = json.load(f)
# asv reads paths relative to its configuration file, which now lives in the scratch folder
conf["repo"] = os.path.abspath(conf["repo"])
conf["benchmark_dir"] = os.path.abspath(conf["benchmark_dir"])
for key in ("results_dir", "html_dir", "env_dir"):
    conf[key] = os.path.join(scratch, key)
with open(os.path.join(scratch, "asv.conf.json"), "w") as f:
    json.dump(conf, f)
EOF
asv=(asv --config "$scratch/asv.conf.json")
"${asv[@]}" check --python=same
bench=("$@")
if [ ${#bench[@]} -eq 0 ]; then
    bench=(-b 'bench_core\.Dispatch' -b 'bench_core\.Prepare' -b 'bench_core\.ToDevice'
           -b 'bench_matmul' -b 'bench_fft')
fi
# asv run exits non-zero when a benchmark fails (skips, from NotImplementedError, pass)
"${asv[@]}" run --python=same --quick --dry-run --show-stderr --machine "$machine" "${bench[@]}"
echo "bench_smoke: ok"
