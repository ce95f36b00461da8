#!/usr/bin/env bash
# Seconds per abliteration trial on the demo model, for several runners (or settings) measured in one interleaved
# run: each round runs every configuration once (`abliterate --seed 1 --headless --trials N` on a fresh study), so
# a machine whose load changes during the run slows every configuration alike. Prints, per configuration, the
# median of each round's median trial duration (the journal's duration_s) and its speed relative to the first,
# over all rounds and round by round.
#   scripts/trial-speed.sh [--trials N] [--rounds R] [--heretic CMD] 'LABEL=COMMAND' ...
# COMMAND is a runner invocation without the abliterate arguments, e.g.
#   scripts/trial-speed.sh 'main=/work/main/runner' 'this=./runner' 'this-b8=./runner --batch-size 8'
# (flags after the runner path are passed to abliterate). Studies and logs: target/trial-speed/.
#   --heretic CMD   also run the reference tool, Heretic (CMD: its executable, e.g. `heretic` from
#                   `pip install heretic-llm`), as the configuration `heretic`, in every round: the same demo model,
#                   bundled prompts and splits, system prompt, seed, trials, startup trials and response length as
#                   Crucible's defaults. Its trial durations come from its Optuna journal (trial start to completion).
#                   It stops at its interactive menu after the last trial; the run counts when all trials completed.
# Also printed per configuration: peak RSS (the median over rounds, from /usr/bin/time when present) and the
# seconds each run spent outside its trials (loading, the residual pass, the batch-size search, the end).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
trials=40
rounds=2
configs=()
heretic=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --trials) trials=${2:-}; shift 2 ;;
    --rounds) rounds=${2:-}; shift 2 ;;
    --heretic) heretic=${2:-}; [[ -n "$heretic" ]] || { echo "trial-speed: --heretic needs a command" >&2; exit 2; }; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *=*) configs+=("$1"); shift ;;
    *) echo "trial-speed: '$1' is not LABEL=COMMAND (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$trials" =~ ^[0-9]+$ && "$trials" -ge 1 && "$rounds" =~ ^[0-9]+$ && "$rounds" -ge 1 && ${#configs[@]} -ge 1 ]] \
  || { echo "usage: scripts/trial-speed.sh [--trials N] [--rounds R] [--heretic CMD] 'LABEL=COMMAND' ..." >&2; exit 2; }
for config in "${configs[@]}"; do
  [[ "${config%%=*}" != heretic ]] || { echo "trial-speed: the label 'heretic' is --heretic's" >&2; exit 2; }
done
if [[ -n "$heretic" ]]; then
  read -r heretic_exe _ <<<"$heretic"
  command -v "$heretic_exe" >/dev/null || { echo "trial-speed: --heretic: '$heretic_exe' is not an executable" >&2; exit 2; }
fi
model=${CRUCIBLE_DEMO_MODEL:-$root/demo-model}
prompts="$root/runner-app/src/main/resources/dev/crucible/runner/prompts"
# Peak RSS where GNU time is there; the runs are the same without it.
timer=()
if /usr/bin/time -f %M true >/dev/null 2>&1; then timer=(/usr/bin/time -o); fi
timed() { # timed RSS_FILE COMMAND...: runs COMMAND, writing its peak RSS (KiB) to RSS_FILE when it can
  local rss=$1; shift
  if [[ ${#timer[@]} -gt 0 ]]; then "${timer[@]}" "$rss" -f %M "$@"; else "$@"; fi
}
out="$root/target/trial-speed"
mkdir -p "$out"
for config in "${configs[@]}"; do
  label=${config%%=*}
  command=${config#*=}
  # Build each runner's distribution before the clock starts.
  read -r runner flags <<<"$command"
  $runner --version >"$out/$label.build.log" 2>&1 || { echo "trial-speed: '$command --version' failed; see $out/$label.build.log" >&2; exit 1; }
done
# Heretic with Crucible's defaults on the demo model (config.example.toml: the first 400 of each train set, the first
# 100 of each test set, the system prompt, 60 startup trials, 100 tokens per response); offline, as Crucible runs.
run_heretic() { # run_heretic DIR LOG
  local dir=$1 log=$2 started
  mkdir -p "$dir"
  started=$(date +%s.%N)
  ( cd "$dir" && HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 timed "$dir/rss" $heretic \
      --model "$model" --n-trials "$trials" --n-startup-trials 60 --seed 1 --max-response-length 100 \
      --system-prompt "You are a helpful assistant." \
      --good-prompts.dataset "$prompts/harmless_train.txt" --good-prompts.split "[:400]" \
      --bad-prompts.dataset "$prompts/harmful_train.txt" --bad-prompts.split "[:400]" \
      --good-evaluation-prompts.dataset "$prompts/harmless_test.txt" --good-evaluation-prompts.split "[:100]" \
      --bad-evaluation-prompts.dataset "$prompts/harmful_test.txt" --bad-evaluation-prompts.split "[:100]" \
      --study-checkpoint-dir "$dir/checkpoints" ) </dev/null >"$log" 2>&1 || true
  awk -v a="$(date +%s.%N)" -v b="$started" 'BEGIN { print a - b }' > "$dir/wall"
  # It ends at its interactive menu (an error without a terminal): the run counts when every trial completed.
  local done
  done=$(cat "$dir"/checkpoints/*.jsonl 2>/dev/null | python3 -c '
import json, sys
print(sum(1 for line in sys.stdin if (op := json.loads(line))["op_code"] == 6 and op.get("state") == 1))')
  [[ "$done" -eq "$trials" ]] || { echo "trial-speed: heretic completed $done of $trials trials; see $log" >&2; exit 1; }
}
echo "trial-speed: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start" >&2
for ((r = 1; r <= rounds; r++)); do
  for config in "${configs[@]}"; do
    label=${config%%=*}
    command=${config#*=}
    study="$out/$label-round$r"
    rm -rf "$study"
    read -r runner flags <<<"$command"
    started=$(date +%s.%N)
    timed "$study.rss" $runner abliterate ${flags:-} --seed 1 --headless --trials "$trials" --study "$study" \
      >"$study.log" 2>&1 || { echo "trial-speed: $label round $r failed; see $study.log" >&2; exit 1; }
    awk -v a="$(date +%s.%N)" -v b="$started" 'BEGIN { print a - b }' > "$study.wall"
    echo "trial-speed: $label round $r done ($(grep '^time:' "$study.log" || true))" >&2
  done
  if [[ -n "$heretic" ]]; then
    rm -rf "$out/heretic-round$r"
    run_heretic "$out/heretic-round$r" "$out/heretic-round$r.log"
    echo "trial-speed: heretic round $r done" >&2
  fi
done
[[ -z "$heretic" ]] || configs+=("heretic=$heretic")
echo "trial-speed: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" >&2
python3 - "$out" "$rounds" "${configs[@]}" <<'EOF'
import datetime, glob, json, os, statistics, sys
out, rounds, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def crucible_durations(study):
    return [json.loads(l)["duration_s"] for l in open(f"{study}/journal.jsonl") if '"record":"trial"' in l]

def heretic_durations(study):
    # Optuna's journal: op 4 creates a trial (datetime_start; trial ids count up from 0), op 6 ends it.
    starts, durations = [], []
    for path in glob.glob(f"{study}/checkpoints/*.jsonl"):
        for line in open(path):
            op = json.loads(line)
            if op["op_code"] == 4:
                starts.append(datetime.datetime.fromisoformat(op["datetime_start"]))
            elif op["op_code"] == 6 and op.get("state") == 1:
                end = datetime.datetime.fromisoformat(op["datetime_complete"])
                durations.append((end - starts[op["trial_id"]]).total_seconds())
    return durations

def read(path):
    # The number is the last line (GNU time writes "Command exited with non-zero status N" above it).
    lines = open(path).read().split() if os.path.exists(path) else []
    return float(lines[-1]) if lines else None

rows = []
for config in configs:
    label = config.split("=", 1)[0]
    medians, rss, outside = [], [], []
    for r in range(1, rounds + 1):
        study = f"{out}/{label}-round{r}"
        heretic = label == "heretic"
        durations = heretic_durations(study) if heretic else crucible_durations(study)
        medians.append(statistics.median(durations))
        kib = read(f"{study}/rss" if heretic else f"{study}.rss")
        if kib is not None:
            rss.append(kib / 1024)
        wall = read(f"{study}/wall" if heretic else f"{study}.wall")
        if wall is not None:
            outside.append(wall - sum(durations))
    rows.append((label, statistics.median(medians), medians,
                 statistics.median(rss) if rss else None, statistics.median(outside) if outside else None))
# Each round's ratio too: configurations of one round ran minutes apart, so it is the interleaved comparison.
print("| configuration | median s/trial | per round | speed vs " + rows[0][0] + " | per round | peak RSS MiB"
      " | s outside trials |")
print("| --- | ---: | --- | ---: | --- | ---: | ---: |")
for label, median, medians, rss, outside in rows:
    ratios = " / ".join(f"{first / m:.2f}x" for first, m in zip(rows[0][2], medians))
    print(f"| {label} | {median:.3f} | {' / '.join(f'{m:.3f}' for m in medians)} | {rows[0][1] / median:.2f}x"
          f" | {ratios} | {'-' if rss is None else f'{rss:.0f}'} | {'-' if outside is None else f'{outside:.1f}'} |")
EOF
