#!/usr/bin/env bash
# doc-figures.sh - the figures the documentation prints, checked against the commands that print
# them, so that a documented figure cannot drift from the program. In README.md and docs/*.md, a
# line (indented inside a list item if need be)
#   <!-- doc-figures: COMMAND [-- rel R] -->
# is followed (after blank lines) by a fenced block or a table (its header row and rule left out:
# they name the columns): COMMAND runs from a scratch copy
# of the repository (with ../shared beside it, as doc-commands.sh does), and the numbers of the
# block must be the numbers COMMAND prints, in order and as many, each within a relative R
# (default 0.001, for figures printed to 3 or more digits; a run time quoted loosely takes a
# larger R). Words, tokens holding a '/' (paths) and a block's "$ " command lines are not
# compared: the figures are.
# Two more options may end the marker, after COMMAND and before or after "-- rel R":
#   -- text F1 F2 ...  the figures of a paragraph of prose: the paragraph that follows holds each
#                      of F1 F2 ... as written, and COMMAND prints them, in order and as many
#   -- slow            a command of minutes, or a run time: skipped (and listed) when LIMIT_S is
#                      followed by "quick", as the sanitizer suite asks; the ordinary suite runs it
# Markers one after another share the block that follows them (the second on: -- text markers),
# so that one paragraph can hold figures of several commands. A run time quoted in the docs
# ("about 4 s on 2 cores") is checked by tests/docs/seconds.sh COMMAND, which prints the wall
# seconds COMMAND took, with the loose tolerance the marker states.
# Usage: tests/docs/doc-figures.sh SOURCE_DIR TPSIM_BINARY [LIMIT_S [quick]]
# (DOC_FIGURES_DOCS="docs/x.md ..." checks those files only.)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/scratch.sh"
mkdir -p out

# The numbers of a text, one per line: tokens split at blanks, '|', ',', '(', ')', ':', ';', '=',
# '*', '`' and brackets, paths dropped, then the number each token that starts with one starts with
# (1.53x, 42.8%, +0.5%, 2.5e-3 s); a word holding digits (H100, gpt3-175b, v24.11) is a word.
# Thousands commas are not supported: write 4350, not 4,350.
numbers() {
  tr -s ' \t|,():;=[]{}*`' '\n' | grep -v '/' |
    grep -oE -- '^[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?' | sed 's/^+//' || true
}

# file<TAB>line<TAB>command<TAB>rel<TAB>block file
quick=${4:-}
n=0; failed=0; skipped=0
for doc in ${DOC_FIGURES_DOCS:-README.md docs/*.md}; do # DOC_FIGURES_DOCS: a subset, to write docs
  awk -v pre="$tmp/$(echo "$doc" | tr '/.' '__')-" '
    /^[ \t]*<!-- doc-figures: / {
      if (want && para) emit() # a paragraph ends at the next marker
      c = $0; sub(/^[ \t]*<!-- doc-figures: */, "", c); sub(/ *-->.*/, "", c)
      r = "0.001"; s = 0; t = ""
      while (1) {
        if (match(c, / -- rel [0-9.eE-]+$/)) { r = substr(c, RSTART + 8); c = substr(c, 1, RSTART - 1); continue }
        if (match(c, / -- slow$/)) { s = 1; c = substr(c, 1, RSTART - 1); continue }
        if (match(c, / -- text [-0-9.eE ]+$/)) { t = substr(c, RSTART + 9); c = substr(c, 1, RSTART - 1); continue }
        break
      }
      # markers one after another share the block the first one starts (the others: -- text)
      if (!(want && !fence && !tab && !para)) { np = 0; text = t; k++; want = 1; at = FNR; f = pre k }
      np++; pc[np] = c; prel[np] = r; pslow[np] = s; ptext[np] = t; pat[np] = FNR
      fence = 0; tab = 0; para = 0; next
    }
    want && text != "" && /^[ \t]*$/ { if (para) emit(); next }
    want && text != "" { para = 1; print > f; next }
    want && !fence && !tab && /^[ \t]*$/ { next }
    want && !tab && /^```/ { if (fence) { emit(); next } fence = 1; next }
    want && fence { if ($0 !~ /^\$ /) print > f; next } # a "$ " line is the command, not a figure
    want && /^[ \t]*\|/ { if (tab++ && $0 !~ /^[ \t]*\|[-| :]+\|$/) print > f; next } # header and rule: names
    want && tab { emit(); next }
    want { want = 0; printf "%s\t%d\t%s\t%s\t%s\t0\t\n", FILENAME, at, "#NOBLOCK", prel[1], "" }
    function emit(  i) {
      close(f)
      for (i = 1; i <= np; i++)
        printf "%s\t%d\t%s\t%s\t%s\t%d\t%s\n", FILENAME, pat[i], pc[i], prel[i], f, pslow[i], ptext[i]
      want = 0; fence = 0; tab = 0; para = 0
    }
    END { if (want && (fence || tab || para)) emit() }
  ' "$doc" > "$tmp/list.txt"
  while IFS=$'\t' read -r file line cmd rel block slow text; do
    n=$((n + 1))
    if [ "$cmd" = "#NOBLOCK" ]; then
      failed=$((failed + 1)); echo "FAIL  $file:$line: no fenced block, table or paragraph follows"; continue
    fi
    if [ "$slow" = 1 ] && [ "$quick" = quick ]; then
      skipped=$((skipped + 1)); echo "skip  $file:$line (slow; the ordinary suite runs it): $cmd"; continue
    fi
    src=$block
    if [ -n "$text" ]; then # prose: the paragraph holds each listed figure as written
      missing=""
      for fig in $text; do numbers < "$block" | grep -qxF -- "$fig" || missing="$missing $fig"; done
      if [ -n "$missing" ]; then
        failed=$((failed + 1)); echo "FAIL  $file:$line: the paragraph does not hold$missing"; continue
      fi
      printf '%s\n' $text > "$tmp/text.txt"; src=$tmp/text.txt # the block may serve another marker
    fi
    if ! timeout "$limit" bash -c "$cmd" > "$tmp/out.txt" 2> "$tmp/err.txt"; then
      failed=$((failed + 1)); echo "FAIL  $file:$line (the command failed): $cmd"
      tail -n 5 "$tmp/err.txt" | sed 's/^/      /'; continue
    fi
    numbers < "$src" > "$tmp/want.txt"
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
echo "doc-figures: $n blocks, $failed failed, $skipped skipped"
[ "$n" -gt 0 ] && [ "$failed" -eq 0 ]
