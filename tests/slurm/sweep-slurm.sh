#!/usr/bin/env bash
# sweep-slurm.sh SRC TPSIM - a sweep of 120 points run as a SLURM job array on a real one-node
# SLURM started here (scripts/slurm-local.sh: its own ports, state and logs in this test's
# temporary directory, stopped at the end whatever happens). One running task is killed with
# scancel; `status` and `merge` must say which points are missing, `--slurm --resume` must
# submit only that shard and run only its missing points, and the merged CSV must be byte for
# byte the CSV of the same sweep run by `-j 2` on this machine. Fails with the reason when SLURM
# cannot start (never skips).
set -euo pipefail
src=$(cd "$1" && pwd)
tpsim=$(realpath "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/tpsim-slurm-XXXXXX")
cleanup() {
  "$src/scripts/slurm-local.sh" stop "$work/slurm" || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "sweep-slurm: FAIL: $*" >&2
  for f in "$work"/shards/logs/*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -n 5 "$f" >&2; }
  done
  exit 1
}
eval "$("$src/scripts/slurm-local.sh" start "$work/slurm")"

# wait_job ID: until SLURM has no task of job ID left
wait_job() {
  for _ in $(seq 6000); do
    [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  fail "job $1 still queued after 600 s"
}

cat >"$work/s.yaml" <<'YAML'
model: gpt3-1.3b
device: A100-80GB
platform: dgx-a100
strategy: {tp: 2}
run: {layers: 12, micro_batches: 1, fold: false}
sweep:
  strategy.tp: [1, 2, 4, 8]
  strategy.chunks: [1, 2, 4]
  run.micro_batches: [1, 2]
  platform.nodes: [1, 2, 4, 8, 16]
YAML
cd "$work"
"$tpsim" sweep s.yaml -j 2 -o one.csv 2>/dev/null
[ "$(wc -l <one.csv)" -eq 121 ] || fail "the one-machine sweep wrote $(wc -l <one.csv) lines, not 121"

# the array: 4 shards of 30 points, each task on one CPU
job=$("$tpsim" sweep s.yaml --slurm --array-size 4 -o shards --submit \
  --sbatch-args "--cpus-per-task=1 --time=10")
[[ "$job" =~ ^[0-9]+$ ]] || fail "--submit printed '$job', not a job id"
grep -q -- '--array=0-3' shards/sweep.sbatch || fail "the script does not run shards 0-3"

# kill one task that is running and has written rows
killed=""
for _ in $(seq 3000); do
  while read -r shard points rows ok state; do
    if [ "$state" = running ] && [ "$rows" -gt 0 ] && [ "$rows" -lt "$points" ]; then
      killed=$shard
      break
    fi
  done < <("$tpsim" sweep status shards 2>/dev/null | awk '$1 ~ /^[0-9]+$/')
  [ -n "$killed" ] && break
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 0.05
done
[ -n "$killed" ] || fail "every task finished before one could be killed"
scancel "${job}_${killed}"
wait_job "$job"

# status and merge name the killed shard's missing points; its finished rows are kept
set +e
st=$("$tpsim" sweep status shards)
st_rc=$?
"$tpsim" sweep merge shards -o partial.csv 2>merge.err
merge_rc=$?
set -e
[ "$st_rc" -eq 1 ] || fail "status exited $st_rc with a shard killed (expected 1)"
line=$(awk -v s="$killed" '$1 == s' <<<"$st")
read -r _ points kept _ state <<<"$line"
[ "$state" = partial ] || [ "$state" = started ] || fail "the killed shard is '$state': $line"
[ "$merge_rc" -eq 1 ] || fail "merge exited $merge_rc with points missing (expected 1)"
grep -q "point(s) missing" merge.err || fail "merge did not report the missing points"
echo "sweep-slurm: killed shard $killed of job $job with $kept of $points rows written"

# resume: only the killed shard is submitted, and it runs only its missing points
job2=$("$tpsim" sweep s.yaml --slurm --resume -o shards --submit)
grep -q -- "--array=$killed\$" shards/sweep.sbatch || fail "--resume did not submit shard $killed alone"
wait_job "$job2"
want="($((points - kept)) to run)"
grep -qF "$want" "shards/logs/shard-$killed.log" ||
  fail "the resumed shard did not run just its $((points - kept)) missing points"
"$tpsim" sweep status shards >/dev/null || fail "status: not every shard is done after --resume"
"$tpsim" sweep merge shards -o merged.csv 2>/dev/null || fail "merge failed after --resume"
cmp merged.csv one.csv || fail "the merged CSV differs from the one-machine sweep"
echo "sweep-slurm: 120 points over 4 SLURM tasks, one killed and resumed: merged CSV identical"
