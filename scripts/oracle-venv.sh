#!/usr/bin/env bash
# Makes the Python venv of test oracles (scripts/oracle-requirements.txt) under target/venv, once: later calls
# find it ready and only print its python. Installs from the local wheel mirror only, never from the internet.
# Prints the venv's python on stdout; exits 3 with one line on stderr when the venv cannot be made.
# Safe to run from several test JVMs at once (flock), and from any directory.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
requirements="$root/scripts/oracle-requirements.txt"
venv="$root/target/venv"
index="${CRUCIBLE_PIP_INDEX_URL:-file:///opt/pypi/simple}"
extra="${CRUCIBLE_PIP_EXTRA_INDEX_URL:-file:///opt/pypi-more/simple}"
wheels="${CRUCIBLE_PIP_FIND_LINKS:-/opt/wheels}"

if [[ $# -gt 0 ]]; then
  echo "usage: scripts/oracle-venv.sh   (no arguments; the packages are in scripts/oracle-requirements.txt)" >&2
  exit 2
fi
mkdir -p "$root/target"
exec 9>"$root/target/venv.lock"
flock 9

want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [[ -x "$venv/bin/python" && -f "$venv/.requirements.sha256" && "$(cat "$venv/.requirements.sha256")" == "$want" ]]; then
  echo "$venv/bin/python"
  exit 0
fi
fail() { echo "oracle venv: $*" >&2; exit 3; }
command -v python3 >/dev/null || fail "python3 is not installed"
mirror="${index#file://}"
[[ "$index" != file://* || -d "$mirror" ]] || fail "no local wheel mirror at $mirror (set CRUCIBLE_PIP_INDEX_URL)"
rm -rf "$venv"
python3 -m venv "$venv" >"$root/target/venv.log" 2>&1 || fail "python3 -m venv failed (see target/venv.log)"
"$venv/bin/pip" install --no-input --disable-pip-version-check --index-url "$index" --extra-index-url "$extra" \
    --find-links "$wheels" -r "$requirements" >>"$root/target/venv.log" 2>&1 \
  || fail "pip install -r scripts/oracle-requirements.txt failed (see target/venv.log)"
echo "$want" >"$venv/.requirements.sha256"
echo "$venv/bin/python"
