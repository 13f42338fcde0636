#!/usr/bin/env bash
# seconds.sh COMMAND... - runs COMMAND (its output discarded) and prints the wall seconds it took,
# so that tests/docs/doc-figures.sh can check a run time the documentation quotes ("about 4 s on
# 2 cores") within the tolerance its marker states. Exits with COMMAND's status.
set -uo pipefail
start=$(date +%s%N)
"$@" > /dev/null 2>&1
rc=$?
end=$(date +%s%N)
awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
exit $rc
