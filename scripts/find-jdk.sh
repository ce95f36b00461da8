# Sourced by ./runner and ./run-tests: exports JAVA_HOME (and PATH) for a JDK >= 25.
# Order: $JAVA_HOME, the java on PATH, then the newest JDK under /usr/lib/jvm (and the macOS and SDKMAN folders).

crucible_java_major() { # the feature version of the java binary $1, or 0
  local v
  v=$("$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' | head -n1)
  echo "${v:-0}"
}

crucible_find_jdk() {
  local home java
  local ordered=()
  [ -n "${JAVA_HOME:-}" ] && ordered+=("$JAVA_HOME")
  if java=$(command -v java 2>/dev/null); then
    java=$(readlink -f "$java" 2>/dev/null || echo "$java")
    ordered+=("$(dirname "$(dirname "$java")")")
  fi
  # Installed JDKs, newest first.
  while IFS= read -r home; do
    ordered+=("$home")
  done < <(for home in /usr/lib/jvm/* /Library/Java/JavaVirtualMachines/*/Contents/Home "$HOME"/.sdkman/candidates/java/*; do
             [ -x "$home/bin/java" ] && echo "$(crucible_java_major "$home/bin/java") $home"
           done | sort -rn | cut -d' ' -f2-)
  for home in "${ordered[@]}"; do
    [ -x "$home/bin/java" ] && [ -x "$home/bin/javac" ] || continue
    if [ "$(crucible_java_major "$home/bin/java")" -ge 25 ]; then
      export JAVA_HOME="$home"
      export PATH="$JAVA_HOME/bin:$PATH"
      return 0
    fi
  done
  echo "error: Crucible needs a JDK 25 or newer; set JAVA_HOME or install one (e.g. Temurin 25 under /usr/lib/jvm)" >&2
  return 2
}
