#!/usr/bin/env bash
# doc-figures.sh - the figures the documentation prints, checked against the commands that print
# them, so that a documented figure cannot drift from the program. In README.md and docs/*.md, a
# line
#   <!-- doc-figures: COMMAND [-- rel R] -->
# is followed (after blank lines) by a fenced block or a table (its header row and rule left out:
# they name the columns): COMMAND runs from a scratch copy
# of the repository (with ../shared beside it, as doc-commands.sh does), and the numbers of the
# block must be the numbers COMMAND prints, in order and as many, each within a relative R
# (default 0.001, for figures printed to 3 or more digits; a run time quoted loosely takes a
# larger R). Words, tokens holding a '/' (paths) and a block's "$ " command lines are not
# compared: the figures are.
# Usage: tests/docs/doc-figures.sh SOURCE_DIR TPSIM_BINARY [LIMIT_S]
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/scratch.sh"
mkdir -p out

# The numbers of a text, one per line: tokens split at blanks, '|', ',', '(', ')', ':' and '=',
# paths dropped, then every number in what is left (1.53x, 42.8%, 4,350 as 4350 when written
# with thousands commas inside a token is not supported: write figures without them).
numbers() {
  tr -s ' \t|,():=[]{}' '\n' | grep -v '/' | grep -oE -- '-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?' || true
}

# file<TAB>line<TAB>command<TAB>rel<TAB>block file
n=0; failed=0
for doc in README.md docs/*.md; do
  awk -v pre="$tmp/$(echo "$doc" | tr '/.' '__')-" '
    /^<!-- doc-figures: / {
      c = $0; sub(/^<!-- doc-figures: */, "", c); sub(/ *-->.*/, "", c)
      rel = "0.001"
      if (match(c, / -- rel [0-9.eE-]+$/)) { rel = substr(c, RSTART + 8); c = substr(c, 1, RSTART - 1) }
      k++; want = 1; at = FNR; fence = 0; tab = 0; f = pre k; next
    }
    want && !fence && !tab && /^[ \t]*$/ { next }
    want && !tab && /^```/ { if (fence) { emit(); next } fence = 1; next }
    want && fence { if ($0 !~ /^\$ /) print > f; next } # a "$ " line is the command, not a figure
    want && /^\|/ { if (tab++ && $0 !~ /^\|[-| :]+\|$/) print > f; next } # header and rule: names
    want && tab { emit(); next }
    want { want = 0; printf "%s\t%d\t%s\t%s\t%s\n", FILENAME, at, "#NOBLOCK", rel, "" }
    function emit() { close(f); printf "%s\t%d\t%s\t%s\t%s\n", FILENAME, at, c, rel, f; want = 0; fence = 0; tab = 0 }
    END { if (want && (fence || tab)) emit() }
  ' "$doc" > "$tmp/list.txt"
  while IFS=$'\t' read -r file line cmd rel block; do
    n=$((n + 1))
    if [ "$cmd" = "#NOBLOCK" ]; then
      failed=$((failed + 1)); echo "FAIL  $file:$line: no fenced block or table follows"; continue
    fi
    if ! timeout "$limit" bash -c "$cmd" > "$tmp/out.txt" 2> "$tmp/err.txt"; then
      failed=$((failed + 1)); echo "FAIL  $file:$line (the command failed): $cmd"
      tail -n 5 "$tmp/err.txt" | sed 's/^/      /'; continue
    fi
    numbers < "$block" > "$tmp/want.txt"
    numbers < "$tmp/out.txt" > "$tmp/got.txt"
    if msg=$(paste -d' ' "$tmp/want.txt" "$tmp/got.txt" | awk -v rel="$rel" \
        -v nw="$(wc -l < "$tmp/want.txt")" -v ng="$(wc -l < "$tmp/got.txt")" '
        { d = $1 - $2; if (d < 0) d = -d; m = ($1 < 0 ? -$1 : $1); if (($2 < 0 ? -$2 : $2) > m) m = ($2 < 0 ? -$2 : $2)
          if (d > rel * m + 1e-12) { printf "figure %d: documented %s, the command prints %s", NR, $1, $2; bad = 1; exit } }
        END { if (!bad && nw != ng) { printf "%d figures documented, the command prints %d", nw, ng; bad = 1 }
              exit bad }'); then
      echo "ok    $file:$line ($(wc -l < "$tmp/want.txt") figures): $cmd"
    else
      failed=$((failed + 1)); echo "FAIL  $file:$line: $msg"; echo "      $cmd"
    fi
  done < "$tmp/list.txt"
done
echo "doc-figures: $n blocks checked, $failed failed"
[ "$n" -gt 0 ] && [ "$failed" -eq 0 ]
