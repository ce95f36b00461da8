#!/usr/bin/env bash
# Crucible's TPE against Optuna 5.0's multivariate TPE (the reference tool's sampler) at equal trials and seeds:
# ZDT1-3 on the abliteration's 10-parameter space and on 10 floats, and the demo-model abliteration replayed from
# a cache of its real evaluations; mean hypervolume ± standard deviation over the seeds at 50, 100 and 200 trials.
#   scripts/search-comparison.sh [SEEDS]      (default 10)
# 1. The cache belongs to the demo model in demo-model/: target/search/demo-evaluations-<SHA-256 prefix of
#    model.safetensors>.csv. Where it is missing or short, runner-app's DemoReplayTest#collect evaluates the real
#    objective at the trials of a Crucible and an Optuna study per seed (COLLECT_SEEDS, default 2, 200 trials each;
#    ~1 h on two idle cores for a new model) and appends to it; what is cached is not evaluated again, so a stopped
#    collection continues where it was. COLLECT_SEEDS=0 skips this step.
# 2. SearchComparisonTest#fullComparison (Optuna from the oracle venv, scripts/oracle-venv.sh) prints the Markdown
#    tables that docs/search.md quotes (~15 minutes on two idle cores).
# Output and logs: target/search/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seeds=${1:-10}
collect_seeds=${COLLECT_SEEDS:-2}
[[ $# -le 1 && "$seeds" =~ ^[0-9]+$ && "$seeds" -ge 2 && "$collect_seeds" =~ ^[0-9]+$ ]] \
  || { echo "usage: [COLLECT_SEEDS=N] scripts/search-comparison.sh [SEEDS >= 2]" >&2; exit 2; }
out="$root/target/search"
mkdir -p "$out"
sha=$(sha256sum "$root/demo-model/model.safetensors" | cut -c1-12)
cache="$out/demo-evaluations-$sha.csv"
tests() { "$root/run-tests" -q -pl runner-app -am -Dsurefire.failIfNoSpecifiedTests=false "$@"; }
if [[ "$collect_seeds" -gt 0 ]]; then
  echo "collecting the demo model's evaluations into $cache (log: $out/collect.log)" >&2
  tests -Dtest='DemoReplayTest#collect' -Dcrucible.search.collect="$cache" \
      -Dcrucible.search.collect.seeds="$collect_seeds" >"$out/collect.log" 2>&1 \
    || { echo "the collection failed; see $out/collect.log" >&2; exit 1; }
fi
[[ -s "$cache" ]] || { echo "no cached evaluations of this demo model at $cache" >&2; exit 1; }
report="$out/comparison.md"
rm -f "$report"
echo "comparing the samplers (log: $out/comparison.log)" >&2
tests -Dtest='SearchComparisonTest#fullComparison' -Dcrucible.search.report="$report" -Dcrucible.search.seeds="$seeds" \
    -Dcrucible.search.demo-evaluations="$cache" >"$out/comparison.log" 2>&1 \
  || { echo "the comparison failed; see $out/comparison.log" >&2; exit 1; }
[[ -s "$report" ]] || { echo "no table was written (was the comparison skipped? see $out/comparison.log)" >&2; exit 1; }
echo "demo model: demo-model/model.safetensors SHA-256 $sha..., $(($(wc -l <"$cache") - 1)) cached evaluations"
cat "$report"
