#!/usr/bin/env bash
# doc-commands.sh - runs every `build/tpsim ...` command written in README.md and docs/*.md, as
# written, from a scratch copy of the repository (with ../shared beside it), so that the
# documentation cannot drift from the program. A command fails the test when it exits non-zero.
# A fenced block preceded by a line
#   <!-- doc-commands: skip (REASON) -->
# is not run, and the test prints it as skipped with its reason (data CI lacks, a GPU).
# `mkdir -p` lines in the blocks are run too; `$ ` prompts are dropped; a trailing backslash
# continues a command on the next line.
# Usage: tests/docs/doc-commands.sh SOURCE_DIR TPSIM_BINARY [LIMIT_S]
# LIMIT_S (default 300) bounds each command; CTest passes three times that under the sanitizers,
# where the weak-scaling runs of docs/validation.md take 250-300 s each on 2 busy cores.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/scratch.sh"
# file:line<TAB>command, or file:line<TAB>#SKIP reason
awk '
  FNR == 1 { fence = 0; skip = "" }
  /^<!-- doc-commands: skip/ { r = $0; sub(/^<!-- doc-commands: skip */, "", r); sub(/ *-->.*/, "", r); skip = r; next }
  /^```/ { fence = !fence; if (!fence) skip = ""; next }
  fence {
    line = $0; sub(/^\$ /, "", line)
    if (cont != "") { cmd = cmd " " line; if (line !~ /\\$/) { emit(); } else sub(/\\$/, "", cmd); next }
    if (line ~ /^(build\/tpsim|mkdir -p)/) {
      where = FILENAME ":" FNR; cmd = line
      if (line ~ /\\$/) { cont = 1; sub(/\\$/, "", cmd) } else emit()
    }
  }
  function emit() { printf "%s\t%s\n", where, (skip != "" ? "#SKIP " skip : cmd); cont = "" }
' README.md docs/*.md > "$tmp/commands.txt"
n=0; failed=0; skipped=0
while IFS=$'\t' read -r where cmd; do
  case "$cmd" in
    "#SKIP "*) skipped=$((skipped + 1)); echo "skip  $where: ${cmd#\#SKIP }"; continue ;;
  esac
  n=$((n + 1))
  start=$(date +%s%N)
  if timeout "$limit" bash -c "$cmd" > "$tmp/out.txt" 2>&1; then
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    printf "ok    %s (%d.%03d s): %s\n" "$where" $((ms / 1000)) $((ms % 1000)) "$cmd"
  else
    rc=$?
    failed=$((failed + 1))
    echo "FAIL  $where (exit $rc): $cmd"
    tail -n 5 "$tmp/out.txt" | sed 's/^/      /'
  fi
done < "$tmp/commands.txt"
echo "doc-commands: $n run, $failed failed, $skipped skipped (marked in the docs)"
[ "$n" -gt 0 ] && [ "$failed" -eq 0 ]
