#!/usr/bin/env bash
# device-check.sh - the GPU measurements of tpsim's own validation data, in one run on a machine
# with an NVIDIA GPU, PyTorch and no SimGrid (issue 53). It writes to $OUT (default: a new
# temporary directory):
#   host.txt            the machine: CPU (model, clock, governor), GPU, driver, PyTorch, NCCL
#   log.txt             everything the steps printed
#   recordings.tar.gz   scripts/gpu/trace_step.py recorded three ways: under the tracer and the
#                       PyTorch profiler in the same process (both/), under the tracer alone
#                       (tracer/), under the profiler alone (kineto/)
#   rows.jsonl          layer shards timed by ../shared/tools/gpu/layer.py, repeated: processes
#                       pinned to one CPU core (taskset) and unpinned, in turn
#   host-launch.jsonl   scripts/gpu/layer_host.py: the host's time per layer and per launch
#   cpu-mhz.txt, gpu-clocks.csv   the pinned core's and the GPU's clocks, sampled each second
# Usage: scripts/gpu/device-check.sh GPU_TOOLS_DIR [PREBUILT_TRACER.so]
# GPU_TOOLS_DIR is a copy of ../shared/tools/gpu (the device machine does not see ../shared); the
# prebuilt tracer is used when gcc cannot build one there. Environment: CORE (the core pinned
# processes use, default 2), REPS (processes of layer rows, odd ones pinned, default 5),
# ONLY_TRACES=1 (the recordings alone), HOST_SPEED=1 (scripts/gpu/host_speed.py alone, pinned
# and unpinned: host-speed-*.csv). On 2026-11-26 it ran on one H100 in about 2.5 minutes:
#   mkdir .gpu; cp ../shared/tools/gpu/* build/libtpsim_tracer.so .gpu/   (.gpu/ in .git/info/exclude)
#   device run, carrying .gpu: bash scripts/gpu/device-check.sh .gpu .gpu/libtpsim_tracer.so
set -u
tools=${1:?usage: device-check.sh GPU_TOOLS_DIR [PREBUILT_TRACER.so]}
prebuilt=${2:-}
OUT=${OUT:-$(mktemp -d)}
B=$(mktemp -d)
CORE=${CORE:-2}
REPS=${REPS:-5}
exec > >(tee "$OUT/log.txt") 2>&1
step() { echo "== $(date -u +%T) $*"; }

step "the machine"
{
    date -u
    uname -a
    lscpu
    grep -m1 "model name" /proc/cpuinfo
    for f in scaling_governor scaling_cur_freq scaling_max_freq cpuinfo_max_freq; do
        echo "cpu$CORE $f: $(cat /sys/devices/system/cpu/cpu$CORE/cpufreq/$f 2>/dev/null || echo n/a)"
    done
    nproc
    free -g
    nvidia-smi
    nvidia-smi -q -d CLOCK,PERFORMANCE,POWER
    python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'cudnn', torch.backends.cudnn.version())"
    python3 -m pip list 2>/dev/null | grep -i -E "^(torch|nvidia-nccl|nvidia-cublas|nvidia-cuda-runtime) "
} >"$OUT/host.txt" 2>&1
grep -m1 "model name" /proc/cpuinfo

if [ "${HOST_SPEED:-0}" = 1 ]; then
    step "host speed over time: pinned to core $CORE, then unpinned"
    timeout 100 taskset -c "$CORE" python3 scripts/gpu/host_speed.py --seconds 40 --out "$OUT/host-speed-pinned.csv"
    timeout 100 python3 scripts/gpu/host_speed.py --seconds 40 --out "$OUT/host-speed-unpinned.csv"
    grep -m1 "model name" /proc/cpuinfo
    step done
    sleep 1
    exit 0
fi
step "build the tracer (gcc, no SimGrid)"
# CUDA's headers from the toolkit, NCCL's (and any missing one) from PyTorch's nvidia packages
incs=$(python3 - <<'PY' 2>/dev/null
import glob, os
dirs = ["/usr/local/cuda/include"]
try:
    import nvidia
    for root in nvidia.__path__:
        for h in ("nccl.h", "cublasLt.h", "cuda_runtime_api.h"):
            dirs += [os.path.dirname(p) for p in glob.glob(f"{root}/**/include/{h}", recursive=True)]
except ImportError:
    pass
print(" ".join("-isystem " + d for d in dict.fromkeys(dirs) if os.path.isdir(d)))
PY
)
echo "include flags: $incs"
tracer=$B/libtpsim_tracer.so
# shellcheck disable=SC2086
if gcc -std=c11 -O2 -fPIC -shared -Wall -Werror -o "$tracer" validate/tracer/tracer.c $incs -ldl -lpthread; then
    echo "built here: $tracer"
elif [ -n "$prebuilt" ] && [ -f "$prebuilt" ]; then
    echo "build failed here; using the prebuilt $prebuilt"
    cp "$prebuilt" "$tracer"
else
    echo "no tracer"
fi

step "trace_step.py under the tracer and the profiler (one process)"
run_traced() { # DIR [args...]
    local d=$1
    shift
    mkdir -p "$B/$d"
    TPSIM_TRACE_DIR=$B/$d NVTX_INJECTION64_PATH=$tracer LD_PRELOAD=$tracer RANK=0 WORLD_SIZE=1 \
        timeout 180 python3 scripts/gpu/trace_step.py "$@" >"$B/$d/run.json" 2>"$B/$d/stderr.txt"
    echo "rc=$? $(cat "$B/$d/run.json")"
    tail -5 "$B/$d/stderr.txt"
    ls -la "$B/$d"
}
[ -f "$tracer" ] && run_traced both --kineto "$B/both/kineto.json"
step "trace_step.py under the tracer alone"
[ -f "$tracer" ] && run_traced tracer
step "trace_step.py under the profiler alone"
mkdir -p "$B/kineto"
RANK=0 WORLD_SIZE=1 timeout 180 python3 scripts/gpu/trace_step.py --kineto "$B/kineto/kineto.json" \
    >"$B/kineto/run.json" 2>"$B/kineto/stderr.txt"
echo "rc=$? $(cat "$B/kineto/run.json")"
tail -3 "$B/kineto/stderr.txt"
gzip -9 "$B"/*/kineto.json 2>/dev/null
tar czf "$OUT/recordings.tar.gz" -C "$B" both tracer kineto 2>&1
ls -la "$OUT"

[ "${ONLY_TRACES:-0}" = 1 ] && { sleep 1; exit 0; }
step "layer shards: clocks sampled each second"
(while :; do echo "$(date -u +%T) $(awk -v c=$CORE '/^processor/{p=$3} /^cpu MHz/ && p==c {print $4}' /proc/cpuinfo)"; sleep 1; done) >"$OUT/cpu-mhz.txt" 2>&1 &
sampler=$!
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv -l 1 \
    >"$OUT/gpu-clocks.csv" 2>&1 &
smi=$!
python3 - "$B" <<'PY'
import json, sys
b = sys.argv[1]
shapes = [("gpt3-1.3b", 2048, 16), ("gpt3-6.7b", 4096, 32)]
cfgs = []
for name, h, a in shapes:
    for attn in ("bmm", "flash"):
        for tp in (1, 2, 4, 8):
            cfgs.append(dict(name=name, hidden=h, heads=a, seq=2048, batch=1, tp=tp, attn=attn, execution="eager"))
cfgs += [dict(name="gpt3-1.3b", hidden=2048, heads=16, seq=2048, batch=4, tp=tp, attn="bmm", execution="eager") for tp in (1, 8)]
for name, h, a in shapes:
    for tp in (1, 2, 4, 8):
        cfgs.append(dict(name=name, hidden=h, heads=a, seq=2048, batch=1, tp=tp, attn="bmm", execution="graphs", graphs=True))
for c in cfgs:
    c.update(layers=2, warmup=10, iters=50, dtype="bfloat16")
json.dump(cfgs, open(f"{b}/cfgs.json", "w"))
print(len(cfgs), "configurations")
PY
for rep in $(seq 1 "$REPS"); do
    if [ $((rep % 2)) -eq 1 ]; then pin="cpu$CORE"; run="taskset -c $CORE"; else pin="none"; run=""; fi
    python3 -c "import json,sys; c=json.load(open(sys.argv[1])); [x.update(rep=$rep, pin='$pin') for x in c]; json.dump(c, open(sys.argv[2],'w'))" "$B/cfgs.json" "$B/cfgs-$rep.json"
    step "rows: repetition $rep, pinned: $pin"
    timeout 150 $run python3 "$tools/layer.py" --configs "@$B/cfgs-$rep.json" --out "$OUT/rows.jsonl" 2>&1 | tail -3
done
step "host time per launch (pinned)"
timeout 120 taskset -c "$CORE" python3 scripts/gpu/layer_host.py --layer-py "$tools/layer.py" \
    --configs "@$B/cfgs.json" >"$OUT/host-launch.jsonl" 2>"$B/host-launch.err"
echo "rc=$?"
tail -3 "$B/host-launch.err"
kill $sampler $smi 2>/dev/null
wc -l "$OUT"/*.jsonl
step done
sleep 1
