#!/usr/bin/env bash
# compare-builds.sh - runs the same commands with two tpsim binaries and diffs what they write:
# the goldens' commands (scripts/golden.sh), `run --json` of every scenario in scenarios/ and
# bench/, `plan --json` of the job plans and the TP 32 plan, `validate layers` (shared and repo
# tables), `validate nccl --json`, `validate e2e --json` (rows up to --max-gpus, default 64;
# --full: every row, several minutes) and the paper sweeps' CSVs (scripts/papers.sh's list), and
# the error and exit status of `run` on every bad-input fixture (tests/data/bad,
# tests/data/hardening). A JSON's "csv" and "table" paths are compared by file name (a binary
# built in another worktree finds the reference data by another path). Prints each output that
# differs with its first differing lines, then "identical: N outputs" or "differ: K of N
# outputs"; exits 1 when any differs. A refactor must print identical; a model change lists what
# it moves.
# Usage: scripts/compare-builds.sh OLD_TPSIM NEW_TPSIM [--full] [--keep DIR]
set -u
cd "$(dirname "$0")/.."
old=$(realpath "${1:?usage: compare-builds.sh OLD_TPSIM NEW_TPSIM [--full] [--keep DIR]}")
new=$(realpath "${2:?usage: compare-builds.sh OLD_TPSIM NEW_TPSIM [--full] [--keep DIR]}")
shift 2
e2e=(--max-gpus 64)
keep=""
while [ $# -gt 0 ]; do
    case $1 in
    --full) e2e=() ;;
    --keep) keep=$2; shift ;;
    *) echo "compare-builds.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT

# Each line: an output name, then a command in which $T is the binary and $O the output file.
commands() {
    for s in quickstart atp-2d-2node pcie-8gpu-sp dgx-h100-2node-tp16; do
        echo "golden-run-$s.json|\$T run scenarios/$s.yaml --json \$O -q"
    done
    echo "golden-coll.json|\$T collective --platform dgx-a100 --min 1K --max 1G --factor 8 --json \$O"
    echo "golden-coll-ag.json|\$T collective --platform 'dgx-a100 nodes=4' --op all_gather --min 1M --max 256M --factor 16 --json \$O"
    echo "golden-plan.json|\$T plan scenarios/atp-2d-2node.yaml --json \$O"
    # the planners' picks, job and TP (seconds each on 2 cores)
    for f in scenarios/job-70b-1024-h100.yaml scenarios/job-mixtral-8x22b-ep8-256-h100.yaml \
        bench/gpt3-175b-tp32-4node.yaml; do
        echo "plan-$(echo "$f" | tr / _).json|\$T plan $f -j 2 --json \$O"
    done
    echo "golden-sweep.csv|\$T sweep scenarios/sweep-example.yaml -j 2 -o \$O"
    for f in $(find scenarios bench -name '*.yaml' | sort); do
        grep -q -E '^(sweep|logs|preset):' "$f" && continue # sweeps; validate nccl's manifests
        echo "run-$(echo "$f" | tr / _).json|\$T run $f --json \$O -q"
    done
    # bad input: the one error line (file, line, column, field) and the exit status of every
    # fixture that must be refused
    for f in $(find tests/data/bad tests/data/hardening -name '*.yaml' | sort); do
        echo "error-$(echo "$f" | tr / _).txt|\$T run $f -q >/dev/null 2>\$O"
    done
    echo "layers-shared.json|\$T validate layers --json \$O"
    for f in $(find validate/data/layers -name '*_times*.csv' 2>/dev/null | sort); do
        echo "layers-$(basename "$f" .csv).json|\$T validate layers $f --json \$O"
    done
    echo "nccl.json|\$T validate nccl --out $work/vn-\$N --json \$O"
    echo "e2e.json|\$T validate e2e ${e2e[*]} --json \$O"
    for s in atp-dgx-a100 atp-pcie-8gpu atp-multinode oases-rtx3090 oases-plan-rtx3090 \
        primepar-dgx-a100 primepar-dgx-h100 primepar-rings-dgx-a100 colossal-dgx-a100 \
        colossal-tesseract-dgx-a100; do
        echo "paper-$s.csv|\$T sweep scenarios/papers/$s.yaml -j 2 -o \$O"
    done
}

n=0
differ=0
while IFS='|' read -r name cmd; do
    n=$((n + 1))
    for side in old new; do
        T=${!side}
        O=$work/$side/$name
        N=$side
        mkdir -p "$work/$side"
        (eval "$cmd" >"$O.stdout" 2>"$O.stderr") </dev/null
        echo "exit $?" >"$O.exit"
        [ -f "$O" ] || : >"$O"
        # reference tables by file name: the two binaries may resolve ../shared differently
        case $name in *.json) sed -i -E 's#("(csv|table)": ")[^"]*/([^/"]+")#\1\3#g' "$O" ;; esac
    done
    if ! cmp -s "$work/old/$name" "$work/new/$name" ||
        ! cmp -s "$work/old/$name.exit" "$work/new/$name.exit"; then
        differ=$((differ + 1))
        echo "== $name differs"
        diff "$work/old/$name" "$work/new/$name" | head -8
    fi
done < <(commands)
if [ "$differ" -eq 0 ]; then
    echo "identical: $n outputs"
else
    echo "differ: $differ of $n outputs (outputs in $work)"
    [ -n "$keep" ] || trap - EXIT
fi
[ "$differ" -eq 0 ]
