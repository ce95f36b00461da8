#!/usr/bin/env bash
# Seconds per abliteration trial on the demo model, for several runners (or settings) measured in one interleaved
# run: each round runs every configuration once (`abliterate --seed 1 --headless --trials N` on a fresh study), so
# a machine whose load changes during the run slows every configuration alike. Prints, per configuration, the
# median of each round's median trial duration (the journal's duration_s) and its speed relative to the first.
#   scripts/trial-speed.sh [--trials N] [--rounds R] 'LABEL=COMMAND' ...
# COMMAND is a runner invocation without the abliterate arguments, e.g.
#   scripts/trial-speed.sh 'main=/work/main/runner' 'this=./runner' 'this-b8=./runner --batch-size 8'
# (flags after the runner path are passed to abliterate). Studies and logs: target/trial-speed/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
trials=40
rounds=2
configs=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --trials) trials=${2:-}; shift 2 ;;
    --rounds) rounds=${2:-}; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *=*) configs+=("$1"); shift ;;
    *) echo "trial-speed: '$1' is not LABEL=COMMAND (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$trials" =~ ^[0-9]+$ && "$trials" -ge 1 && "$rounds" =~ ^[0-9]+$ && "$rounds" -ge 1 && ${#configs[@]} -ge 1 ]] \
  || { echo "usage: scripts/trial-speed.sh [--trials N] [--rounds R] 'LABEL=COMMAND' ..." >&2; exit 2; }
out="$root/target/trial-speed"
mkdir -p "$out"
for config in "${configs[@]}"; do
  label=${config%%=*}
  command=${config#*=}
  # Build each runner's distribution before the clock starts.
  read -r runner flags <<<"$command"
  $runner --version >"$out/$label.build.log" 2>&1 || { echo "trial-speed: '$command --version' failed; see $out/$label.build.log" >&2; exit 1; }
done
echo "trial-speed: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start" >&2
for ((r = 1; r <= rounds; r++)); do
  for config in "${configs[@]}"; do
    label=${config%%=*}
    command=${config#*=}
    study="$out/$label-round$r"
    rm -rf "$study"
    read -r runner flags <<<"$command"
    $runner abliterate ${flags:-} --seed 1 --headless --trials "$trials" --study "$study" >"$study.log" 2>&1 \
      || { echo "trial-speed: $label round $r failed; see $study.log" >&2; exit 1; }
    echo "trial-speed: $label round $r done ($(grep '^time:' "$study.log" || true))" >&2
  done
done
echo "trial-speed: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" >&2
python3 - "$out" "$rounds" "${configs[@]}" <<'EOF'
import json, statistics, sys
out, rounds, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = []
for config in configs:
    label = config.split("=", 1)[0]
    medians, walls = [], []
    for r in range(1, rounds + 1):
        durations = [json.loads(l)["duration_s"] for l in open(f"{out}/{label}-round{r}/journal.jsonl")
                     if '"record":"trial"' in l]
        medians.append(statistics.median(durations))
    rows.append((label, statistics.median(medians), medians))
print("| configuration | median s/trial | per round | speed vs " + rows[0][0] + " |")
print("| --- | ---: | --- | ---: |")
for label, median, medians in rows:
    print(f"| {label} | {median:.3f} | {' / '.join(f'{m:.3f}' for m in medians)} | {rows[0][1] / median:.2f}x |")
EOF
