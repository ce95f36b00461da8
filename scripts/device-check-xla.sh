#!/usr/bin/env bash
# The xla backend on a real PJRT device (issue 12), for a machine that is lent one (DEVELOPERS.md, "Checking the
# xla backend on a lent device"). Two steps:
#
#   scripts/device-check-xla.sh pack   here: builds the distribution and packs a jlink'ed JDK 25, the jars the xla
#                                      backend needs (no libtorch) and the four golden fixtures into
#                                      target/device-check-xla.tar.xz (well under 64 MiB)
#   scripts/device-check-xla.sh run    on the device machine, from the repository root: unpacks it under /tmp and
#                                      runs the checks with PJRT_PLUGIN_LIBRARY_PATH = the image's JAX CUDA plugin
#                                      (jax_plugins/xla_cuda13/xla_cuda_plugin.so), unless already set
#
# The checks: `runner devices`; `generate --device xla --dtype float32` on stories260k, tiny-qwen2, tiny-qwen3 and
# tiny-llama3-rope against their goldens (prompt ids and greedy ids exact); `bench decode --device xla` on a
# Qwen2.5-0.5B-shaped init-model; a 5-trial abliteration of the demo model. Every command's output is printed and
# kept under $OUT (or /tmp/device-check-xla/out); the exit status is the number of failed checks.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
archive="$root/target/device-check-xla.tar.xz"
fixtures=(stories260k tiny-qwen2 tiny-qwen3 tiny-llama3-rope)

usage() {
  echo "usage: scripts/device-check-xla.sh pack|run" >&2
  exit 2
}

pack() {
  set -e
  . "$root/scripts/find-jdk.sh"
  crucible_find_jdk || exit 2
  local shared
  for shared in "$root/shared/fixtures" "$root/../shared/fixtures"; do
    [[ -d "$shared/stories260k" ]] && break
  done
  [[ -d "$shared/stories260k" ]] || { echo "error: no shared/fixtures beside or inside the checkout" >&2; exit 2; }
  echo "device-check-xla: building the distribution ..." >&2
  mvn -q -B -f "$root/pom.xml" -DskipTests package >"$root/target/device-check-xla-build.log" 2>&1 \
    || { echo "error: the build failed; see target/device-check-xla-build.log" >&2; exit 1; }
  local stage="$root/target/device-check-xla"
  rm -rf "$stage" "$archive"
  mkdir -p "$stage/dist/lib" "$stage/dist/plugins" "$stage/fixtures"
  local dist="$root/runner-app/target/dist"
  # libtorch, OpenBLAS and JavaCPP are the torch backends' (200 MB); the xla backend and the runner need none.
  local jar
  for jar in "$dist"/lib/*.jar; do
    case "$(basename "$jar")" in
      pytorch-*|openblas-*|javacpp-*|torch-runtime-*) ;;
      tokenizers-*)
        # DJL's tokenizers jar carries its native library for five platforms; the device is linux-x86_64.
        cp "$jar" "$stage/dist/lib/"
        zip -q -d "$stage/dist/lib/$(basename "$jar")" 'native/lib/win-*' 'native/lib/osx-*' 'native/lib/linux-aarch64/*'
        ;;
      *) cp "$jar" "$stage/dist/lib/" ;;
    esac
  done
  cp "$dist"/plugins/accelerator-xla-*.jar "$dist"/plugins/scorers-*.jar "$stage/dist/plugins/"
  cp "$root/scripts/runner-jvm.args" "$stage/dist/"
  local f
  for f in "${fixtures[@]}"; do
    cp -r "$shared/$f" "$stage/fixtures/"
  done
  # The modules jdeps finds in these jars (java.desktop for java.beans in Jackson and JNA, java.sql for Jackson's
  # optional types, java.desktop also for abliterate's Pareto plot), and jdk.zipfs and jdk.crypto.ec, which the
  # runner's archive and hub code reach reflectively. Uncompressed: xz packs the image to 22 MB, against 38 MB for
  # jlink's own zip compression.
  "$JAVA_HOME/bin/jlink" --add-modules java.base,java.compiler,java.desktop,java.logging,java.management,java.naming,java.net.http,java.sql,java.xml,jdk.unsupported,jdk.zipfs,jdk.crypto.ec \
    --strip-debug --no-header-files --no-man-pages --output "$stage/jdk"
  tar -C "$root/target" -cJf "$archive" device-check-xla
  rm -rf "$stage"
  echo "device-check-xla: $archive ($(du -h "$archive" | cut -f1)); on the device machine run: scripts/device-check-xla.sh run" >&2
}

# The image's JAX CUDA PJRT plugin: from the jax_plugins package where Python finds it, else a search.
cuda_plugin() {
  local found
  found=$(python3 -c 'import os, jax_plugins.xla_cuda13 as p; print(os.path.join(os.path.dirname(p.__file__), "xla_cuda_plugin.so"))' 2>/dev/null)
  if [[ -n "$found" && -f "$found" ]]; then
    echo "$found"
    return
  fi
  find / -path /proc -prune -o -name xla_cuda_plugin.so -path '*xla_cuda13*' -print -quit 2>/dev/null
}

run() {
  [[ -f "$archive" ]] || { echo "error: no $archive; run 'scripts/device-check-xla.sh pack' first (and carry it)" >&2; exit 2; }
  local base=/tmp/device-check-xla
  local out=${OUT:-$base/out}
  rm -rf "$base/unpacked"
  mkdir -p "$base/unpacked" "$out"
  tar -C "$base/unpacked" -xJf "$archive"
  local home="$base/unpacked/device-check-xla"
  if [[ -z "${PJRT_PLUGIN_LIBRARY_PATH:-}" ]]; then
    PJRT_PLUGIN_LIBRARY_PATH=$(cuda_plugin)
    export PJRT_PLUGIN_LIBRARY_PATH
  fi
  echo "PJRT_PLUGIN_LIBRARY_PATH=${PJRT_PLUGIN_LIBRARY_PATH:-<none found>}"
  export CRUCIBLE_PJRT_OPTIONS=${CRUCIBLE_PJRT_OPTIONS:-preallocate=false}
  runner() {
    "$home/jdk/bin/java" -XX:+UseSerialGC "@$home/dist/runner-jvm.args" -cp "$home/dist/lib/*" \
      dev.crucible.runner.Main "$@"
  }
  local failed=0
  # Runs one runner command, prints its output; status 1 (and one more failure) when it fails.
  check() {
    local name=$1
    shift
    echo "== $name: runner $*"
    local start=$SECONDS status=0
    runner "$@" >"$out/$name.out" 2>"$out/$name.err" || status=$?
    tail -n 40 "$out/$name.err" | sed 's/^/   stderr: /'
    head -c 4000 "$out/$name.out" | sed 's/^/   /'
    if ((status == 0)); then
      echo "   ok ($((SECONDS - start)) s)"
      return 0
    fi
    echo "   FAILED with status $status ($((SECONDS - start)) s)"
    failed=$((failed + 1))
    return 1
  }
  check devices devices
  local f
  for f in "${fixtures[@]}"; do
    local dir="$home/fixtures/$f"
    # One generate per golden case: its prompt text and its number of new tokens.
    local cases
    cases=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["cases"]))' "$dir/goldens.json")
    local i
    for ((i = 0; i < cases; i++)); do
      local prompt tokens
      prompt=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cases"][int(sys.argv[2])]["prompt"])' "$dir/goldens.json" "$i")
      tokens=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cases"][int(sys.argv[2])]["max_new_tokens"])' "$dir/goldens.json" "$i")
      check "generate-$f-$i" generate --device xla --dtype float32 --model "$dir" --prompt "$prompt" \
        --max-new-tokens "$tokens" --json || continue
      if ! python3 - "$dir/goldens.json" "$i" "$out/generate-$f-$i.out" <<'PY'
import json, sys
golden = json.load(open(sys.argv[1]))["cases"][int(sys.argv[2])]
ours = json.load(open(sys.argv[3]))
ours = ours[0] if isinstance(ours, list) else ours
want, got = golden["generated_ids"], ours["generated_ids"]
if ours["prompt_ids"] != golden["prompt_ids"]:
    sys.exit(f"   prompt ids {ours['prompt_ids']} != golden {golden['prompt_ids']}")
same = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
if got == want or (ours.get("stopped") and got == want[:len(got)]):
    print(f"   {golden['name']}: {len(got)} ids equal the golden's")
else:
    sys.exit(f"   {golden['name']}: ids differ from the golden's at {same}: {got[same:same + 5]} != {want[same:same + 5]}")
PY
      then
        failed=$((failed + 1))
      fi
    done
  done
  local qwen="$base/qwen2.5-0.5b-shaped"
  check init-model init-model --like qwen2 --hidden 896 --layers 24 --heads 14 --kv-heads 2 --intermediate 4864 \
    --vocab 151936 --dtype bfloat16 --seed 1 --out "$qwen" --force
  check bench-decode bench decode --device xla --model "$qwen" --batch 8 --prompt-len 128 --new-tokens 64 --json
  check abliterate abliterate --device xla --model "$root/demo-model" --trials 5 --startup-trials 5 --seed 1 \
    --headless --study "$base/study" --on-existing restart --json
  echo "device-check-xla: $failed failed check(s); outputs in $out"
  return "$failed"
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  *) usage ;;
esac
