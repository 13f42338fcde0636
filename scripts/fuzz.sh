#!/usr/bin/env bash
# fuzz.sh - builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan, build-fuzz/) and
# runs each for SECONDS (default 60) on a corpus seeded from the repository's own files (and
# ../shared/refdata's nccl-tests logs when present). Prints one line per target: executions,
# coverage, and whether it found anything; exits 1 if any target crashed, leaked or tripped a
# sanitizer (the reproducer is kept in build-fuzz/crashes/TARGET/).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET ...]
#        (targets: scenario platform trace merge ncclog sweep kineto kineto_fields job fabric shard)
#        TPSIM_FUZZ_RUNS=N scripts/fuzz.sh 0 ...    runs each target for N executions instead
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(scenario platform trace merge ncclog sweep kineto kineto_fields job fabric shard)
if ! command -v clang > /dev/null; then
  echo "fuzz.sh: clang not found (apt-get install clang); not fuzzing" >&2
  exit 0
fi
probe=$(mktemp -d)
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
  > "$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2> /dev/null; then
  rm -rf "$probe"
  echo "fuzz.sh: clang has no libFuzzer runtime (apt-get install libclang-rt-14-dev); not fuzzing" >&2
  exit 0
fi
rm -rf "$probe"
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTPSIM_FUZZ=ON \
  -DTPSIM_BUILD_TESTS=OFF > build-fuzz.log 2>&1 || { cat build-fuzz.log; exit 1; }
cmake --build build-fuzz -j"$(nproc)" $(printf -- '--target fuzz_%s ' "${targets[@]}") \
  >> build-fuzz.log 2>&1 || { tail -n 30 build-fuzz.log; exit 1; }
mv build-fuzz.log build-fuzz/build.log

# Seeds: the repository's own inputs of each kind.
seed() {
  local t=$1 d=build-fuzz/corpus/$1
  mkdir -p "$d"
  case $t in
    scenario) cp scenarios/*.yaml scenarios/papers/*.yaml tests/data/good/*.yaml tests/data/bad/*.yaml "$d"/ 2>/dev/null ;;
    sweep) cp scenarios/papers/*.yaml scenarios/sweep-example.yaml "$d"/ 2>/dev/null ;;
    platform) cp platforms/*.yaml scenarios/validation/*.yaml tests/data/good/*platform*.yaml "$d"/ 2>/dev/null ;;
    ncclog) cp ../shared/refdata/nccl/*.txt "$d"/ 2>/dev/null; cp tests/data/ncclog/* "$d"/ 2>/dev/null ;;
    job) cp scenarios/job-*.yaml tests/data/good/job-*.yaml tests/data/bad/job*.yaml "$d"/ 2>/dev/null ;;
    fabric) grep -l '^jobs:' scenarios/*.yaml scenarios/papers/*.yaml tests/data/bad/*.yaml \
      tests/data/good/*.yaml | xargs -r cp -t "$d"/ 2>/dev/null ;;
    kineto_fields) seq 1000 | tr -d '\n' > "$d/digits" ;; # bytes, not JSON: any seed will do
    trace | merge | kineto | shard) cp tests/fuzz/seeds/$t/* "$d"/ 2>/dev/null ;;
  esac
  true
}

limit="-max_total_time=$secs"
[ -n "${TPSIM_FUZZ_RUNS:-}" ] && limit="-runs=$TPSIM_FUZZ_RUNS"
status=0
for t in "${targets[@]}"; do
  seed "$t"
  mkdir -p "build-fuzz/crashes/$t"
  log=build-fuzz/fuzz_$t.log
  # -rss_limit_mb: a 1 KB input must not take gigabytes; -timeout: nor seconds
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    build-fuzz/fuzz_$t "build-fuzz/corpus/$t" $limit -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="build-fuzz/crashes/$t/" \
    -print_final_stats=1 > "$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  took=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  if [ $rc -eq 0 ]; then
    echo "fuzz_$t: ${runs:-0} executions in ${took:-$secs} s, coverage ${cov:-?} edges, ${ft:-?} features: no crash"
  else
    status=1
    echo "fuzz_$t: FOUND A PROBLEM after ${runs:-?} executions (exit $rc); see $log and build-fuzz/crashes/$t/"
    grep -m 3 -E 'ERROR|SUMMARY|runtime error' "$log" | sed 's/^/  /'
  fi
done
exit $status
