#!/usr/bin/env bash
# slurm-local.sh - a one-node SLURM on this machine, for the sweep tests and benchmarks:
#   scripts/slurm-local.sh start DIR   writes DIR/slurm.conf, starts slurmctld and slurmd (their
#                                      state, spool, pids and logs under DIR, their own ports)
#                                      and waits until the node is idle; prints
#                                      "export SLURM_CONF=DIR/slurm.conf" for the caller to eval
#   scripts/slurm-local.sh stop DIR    cancels what is queued and stops both daemons by their PIDs
# Needs root (SlurmUser=root) and Debian's slurm-wlm (scripts/install-deps.sh). No munge: auth/none
# and cred/none, which only a private test cluster may use. Exits 1 with the reason (and the
# daemons' logs) when SLURM cannot start.
set -euo pipefail
cmd=${1:?usage: slurm-local.sh start|stop DIR}
dir=${2:?usage: slurm-local.sh start|stop DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
conf=$dir/slurm.conf

fail() {
  echo "slurm-local: $*" >&2
  for f in "$dir"/log/*.log; do
    [ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}

stop() {
  SLURM_CONF=$conf scancel --quiet --user=root 2>/dev/null || true
  for p in slurmd slurmctld; do
    [ -f "$dir/$p.pid.own" ] || continue
    pid=$(cat "$dir/$p.pid.own")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/$p.pid.own"
  done
}

if [ "$cmd" = stop ]; then
  stop
  exit 0
fi
[ "$cmd" = start ] || { echo "usage: slurm-local.sh start|stop DIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || fail "needs root (the test cluster's SlurmUser is root)"
for b in slurmctld slurmd sbatch squeue scancel sinfo; do
  command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] ||
    fail "$b not found: install Debian's slurm-wlm (scripts/install-deps.sh)"
done
# two free ports of our own, so that a SLURM already on this machine is not disturbed
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 30000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  fail "no free TCP port found"
}
ctld_port=$(free_port)
d_port=$(free_port)
[ "$ctld_port" != "$d_port" ] || d_port=$((ctld_port + 1))
host=$(hostname -s 2>/dev/null || uname -n | cut -d. -f1)
cpus=$(nproc)
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
cat >"$conf" <<EOF
# written by scripts/slurm-local.sh: a one-node test cluster, auth/none (never on a real one)
ClusterName=tpsimtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MinJobAge=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf
ctld=$(command -v slurmctld || echo /usr/sbin/slurmctld)
sd=$(command -v slurmd || echo /usr/sbin/slurmd)
# -D: in the foreground of a background job of ours, so that our PIDs are the daemons'
setsid "$ctld" -D -f "$conf" >"$dir/log/slurmctld.out" 2>&1 </dev/null &
echo $! >"$dir/slurmctld.pid.own"
setsid "$sd" -D -f "$conf" >"$dir/log/slurmd.out" 2>&1 </dev/null &
echo $! >"$dir/slurmd.pid.own"
for _ in $(seq 150); do
  if [ "$(sinfo -h -o %t 2>/dev/null)" = idle ]; then
    echo "export SLURM_CONF=$conf"
    exit 0
  fi
  kill -0 "$(cat "$dir/slurmctld.pid.own")" 2>/dev/null || { stop; fail "slurmctld exited"; }
  kill -0 "$(cat "$dir/slurmd.pid.own")" 2>/dev/null || { stop; fail "slurmd exited"; }
  sleep 0.1
done
state=$(sinfo -h -o %t 2>&1 || true)
stop
fail "the node did not become idle within 15 s (sinfo: ${state:-nothing})"
