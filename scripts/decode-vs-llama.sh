#!/usr/bin/env bash
# Crucible's CPU decode against llama.cpp's, side by side in one run: for each configuration, `runner bench decode
# --compare-gguf FILE --llama-bench PATH` runs llama-bench between its own rounds, between the same ceilings.
#   scripts/decode-vs-llama.sh LLAMA_BENCH [MODEL_DIR] [ROUNDS]
# CONFIGS="int8-1-thread int8-head-1-thread" (labels as the output names them) runs only those configurations.
# MODEL_DIR defaults to a Qwen2.5-0.5B-shaped random bf16 model under target/decode-vs-llama/ (made with
# `runner init-model` if missing); its GGUF files are written there with `runner convert`. Configurations: bf16 on
# one and two threads, and int8 per-channel against Q8_0 on one thread twice: as each does by default (llama.cpp's
# Q8_0 also quantizes the embedding table and head, which Crucible keeps in bf16), and with Crucible's head quantized
# too (--quant-exclude model.embed_tokens), which reads the bytes Q8_0 reads.
# OPENBLAS_CORETYPE is unset inside this script only: libtorch's fp32 GEMM runs at half speed under it, and a
# benchmark measures the machine as a user's would be. Output: one table per configuration, and the JSON beside it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
llama_bench=${1:-}
[[ -n "$llama_bench" && -x "$llama_bench" ]] \
  || { echo "usage: scripts/decode-vs-llama.sh LLAMA_BENCH [MODEL_DIR] [ROUNDS] (LLAMA_BENCH: llama.cpp's build/bin/llama-bench)" >&2; exit 2; }
out="$root/target/decode-vs-llama"
mkdir -p "$out"
model=${2:-$out/qwen05}
rounds=${3:-3}
unset OPENBLAS_CORETYPE
runner="$root/runner"
if [[ ! -f "$model/config.json" ]]; then
  "$runner" init-model --like qwen2 --hidden 896 --layers 24 --heads 14 --kv-heads 2 --intermediate 4864 \
    --vocab 151936 --dtype bfloat16 --seed 1 --out "$model"
fi
for type in bf16 q8_0; do
  [[ -f "$out/model-$type.gguf" ]] || "$runner" convert --model "$model" --to gguf --gguf-type "$type" \
    --out "$out/model-$type.gguf"
done
run() { # LABEL GGUF_TYPE THREADS [bench flags...]
  local label=$1 type=$2 threads=$3
  shift 3
  [[ -z "${CONFIGS:-}" || " $CONFIGS " == *" $label "* ]] || return 0
  echo "== $label"
  "$runner" bench decode --model "$model" --dtype bfloat16 --threads "$threads" --rounds "$rounds" "$@" \
    --compare-gguf "$out/model-$type.gguf" --llama-bench "$llama_bench" --json >"$out/$label.json" \
    2>"$out/$label.log" || { tail -n 3 "$out/$label.log" >&2; exit 1; }
  python3 - "$out/$label.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
p, d, l = r["prefill"], r["decode"], r["llama_cpp"]
print(f"  Crucible  prefill {p['tokens_per_s']:7.1f} tok/s   decode {d['tokens_per_s']:6.2f} tok/s "
      f"({d['ratio_to_bandwidth']:.2f} of the {r['ceilings']['bandwidth_gbs']} GB/s read ceiling)")
print(f"  llama.cpp prefill {l['prefill_tokens_per_s']:7.1f} tok/s   decode {l['decode_tokens_per_s']:6.2f} tok/s")
print(f"  Crucible / llama.cpp: prefill {l['prefill_ratio']:.2f}x, decode {l['decode_ratio']:.2f}x "
      f"(median of per-round ratios); peak RSS {r['rss_to_weights']:.2f} x weights; {r['env'].get('huge_pages', '')}")
EOF
}
run bf16-1-thread bf16 1
run bf16-2-threads bf16 2
run int8-1-thread q8_0 1 --quantization int8
run int8-head-1-thread q8_0 1 --quantization int8 --quant-exclude model.embed_tokens
