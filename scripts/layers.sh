#!/usr/bin/env bash
# layers.sh - checks that every folder includes only the folders below it (docs/architecture.md):
#   common <- models <- platforms <- core <- sim <- pipeline <- validate <- cli
# validate/ and cli/ reach the engine (sim/) only through pipeline/pipeline.h, and only sim/
# includes SimGrid, and only pipeline_lower calls mdl_strategy_lower; sim/ reads the tuner's plan
# (core/commplan.h) but never includes the tuner (core/tune.h); struct pipeline_job's fields
# (pipeline/pipeline_int.h) stay inside pipeline/. Prints each offending include and
# exits 1; run by CTest and scripts/test.sh.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
declare -A allowed=(
  [common]="common"
  [models]="common models"
  [platforms]="common models platforms"
  [core]="common models platforms core"
  [sim]="common models platforms core sim"
  [pipeline]="common models platforms core sim pipeline"
  [validate]="common models platforms core pipeline validate"
  [cli]="common models platforms core pipeline validate cli"
)
bad=0
for dir in "${!allowed[@]}"; do
  while IFS= read -r hit; do
    file=${hit%%:*}
    inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$hit")
    top=${inc%%/*}
    [ "$top" = "$inc" ] && continue # a header beside the file: same folder
    if [[ " ${allowed[$dir]} " != *" $top "* ]]; then
      echo "layers: $file includes $inc ($dir/ may include only: ${allowed[$dir]})" >&2
      bad=1
    fi
  done < <(find "$dir" -maxdepth 1 -name '*.[ch]' -print0 | xargs -0 grep -H '^#include "' || true)
  if [ "$dir" != sim ] &&
    find "$dir" -maxdepth 1 -name '*.[ch]' -print0 | xargs -0 grep -lE '#include <(simgrid|xbt)/'; then
    echo "layers: SimGrid included outside sim/ (above)" >&2
    bad=1
  fi
done
# The engine replays the plan the tuner made; it decides nothing itself.
if grep -n '#include "core/tune.h"' sim/*.[ch]; then
  echo "layers: sim/ includes the tuner (above): the engine reads core/commplan.h's plan" >&2
  bad=1
fi
# A loaded job is opaque outside pipeline/ (and the tests): its fields are pipeline_int.h's.
if grep -n '#include "pipeline/pipeline_int.h"' common/*.[ch] models/*.[ch] platforms/*.[ch] \
  core/*.[ch] sim/*.[ch] validate/*.[ch] cli/*.[ch]; then
  echo "layers: pipeline_int.h included outside pipeline/ (above): use pipeline.h's functions" >&2
  bad=1
fi
# A strategy becomes a program in one place: pipeline_lower.
if grep -n 'mdl_strategy_lower(' common/*.[ch] platforms/*.[ch] core/*.[ch] sim/*.[ch] \
  validate/*.[ch] cli/*.[ch] pipeline/planner.c; then
  echo "layers: mdl_strategy_lower called outside pipeline/pipeline.c (above)" >&2
  bad=1
fi
exit $bad
