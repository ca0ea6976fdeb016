#!/usr/bin/env bash
# The GPU machine's whole check in one run: build, GPU tests, benchmarks.
#
#   tools/gpu-check.sh OUTDIR
#
# Writes into OUTDIR: env.txt, build.log, pytest-gpu.log, pytest-runtime.log, gpu-fuzz.log,
# bench_<name>.log for each benchmarks/bench_*.py, and results.json (every
# benchmark's rows plus the environment). Prints a summary table last.
# Meant for the GPU machine (Ubuntu 24.04, Python 3.12, torch, triton, no
# package index): builds into build-gpu/ with TRITIUM_SKIP_DEPS=1.
#
# Environment: JOBS (default: nproc), BUILD_DIR (build-gpu), BUILD_TYPE (Release), FUZZ_SEEDS (1000),
# TEST_SHARDS (parallel pytest processes for the GPU tests; default JOBS/4, at most 8),
# BENCH_ARGS (e.g. --quick), BENCH_TIMEOUT (seconds per benchmark, 300),
# PYTEST_GPU_ARGS (e.g. "-x -k softmax"), SKIP_BUILD=1, SKIP_TESTS=1, SKIP_BENCH=1,
# BENCHES (names of benchmarks/bench_*.py to run, e.g. "vector_add softmax"; default all).
# Exit status: 0 when the build, the tests and every tritium benchmark result passed.
set -uo pipefail

OUT=${1:?usage: tools/gpu-check.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
export PYTHONUNBUFFERED=1
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
# A fresh cache per run: the numbers and failures are those of this build.
TRITIUM_CACHE_DIR=$(mktemp -d /tmp/tritium-cache.XXXXXX)
export TRITIUM_CACHE_DIR
status=0
summary=()

step() { echo; echo "=== $* ==="; }

{
  date -u
  uname -a
  nvidia-smi 2>&1 || echo "nvidia-smi failed"
  "$PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")' 2>&1
  "$PYTHON" -c 'import triton; print("triton", triton.__version__)' 2>&1 | tail -1
  command -v ptxas && ptxas --version | tail -2
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  step "build (${BUILD_DIR:-build-gpu}, ${BUILD_TYPE:-Release}, $JOBS jobs)"
  t0=$(date +%s)
  if make build BUILD_DIR="${BUILD_DIR:-build-gpu}" CMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
       TRITIUM_SKIP_DEPS=1 JOBS="$JOBS" PYTHON="$PYTHON" \
       CMAKE_ARGS="-DTRITIUM_BUILD_UNITTESTS=OFF -DTRITIUM_BUILD_TOOLS=OFF" \
       >"$OUT/build.log" 2>&1; then
    summary+=("build: ok ($(( $(date +%s) - t0 )) s)")
  else
    tail -40 "$OUT/build.log"
    summary+=("build: FAILED (see build.log)")
    echo "${summary[@]}"
    exit 1
  fi
fi

if [[ "${SKIP_TESTS:-0}" != 1 ]]; then
  # A hung kernel must not eat the whole run: a per-test limit when the plugin is there.
  TO=$("$PYTHON" -c 'import pytest_timeout' 2>/dev/null && echo --timeout=120)
  # The runtime's own tests first, in a process of their own: a crash in the
  # compiler's tests must not hide them. Both logs go to pytest-gpu.log.
  step "pytest -m gpu: the runtime (hand-written PTX)"
  # shellcheck disable=SC2086
  "$PYTHON" -m pytest -q -rfE -m gpu python/test/test_gpu_runtime.py $TO ${PYTEST_GPU_ARGS:-} \
      -p no:cacheprovider >"$OUT/pytest-gpu.log" 2>&1
  rc=$?
  line=$(tail -1 "$OUT/pytest-gpu.log")
  tail -15 "$OUT/pytest-gpu.log"
  if [[ $rc -eq 0 || $rc -eq 5 ]]; then summary+=("pytest -m gpu (runtime): ok ($line)")
  else status=1; summary+=("pytest -m gpu (runtime): FAILED, exit $rc ($line)"); fi

  step "pytest -m gpu: everything else"
  echo "=== pytest -m gpu: everything else ===" >>"$OUT/pytest-gpu.log"
  # Most of a GPU test's time is compiling on the CPU: the files with GPU tests go to
  # TEST_SHARDS pytest processes at once (default: a quarter of the cores, at most 8), the
  # largest files first onto the least loaded shard; one log each (pytest-gpu-<k>.log).
  shards=${TEST_SHARDS:-$(( JOBS / 4 > 8 ? 8 : (JOBS / 4 < 1 ? 1 : JOBS / 4) ))}
  # Weighed by their number of GPU tests (a collection pass), most first.
  mapfile -t weighed < <(grep -l -E "pytest\.mark\.gpu|pytestmark = .*gpu" python/test/test_*.py |
                         grep -v test_gpu_runtime.py |
                         xargs "$PYTHON" -m pytest -q --collect-only -m gpu -p no:cacheprovider 2>/dev/null |
                         grep "::" | cut -d: -f1 | sort | uniq -c | sort -rn)
  declare -a shard_files shard_size
  for ((k = 0; k < shards; k++)); do shard_files[k]=""; shard_size[k]=0; done
  for w in "${weighed[@]}"; do
    read -r n f <<<"$w"
    best=0
    for ((k = 1; k < shards; k++)); do
      (( shard_size[k] < shard_size[best] )) && best=$k
    done
    shard_files[best]+=" $f"
    shard_size[best]=$(( shard_size[best] + n ))
  done
  pids=()
  for ((k = 0; k < shards; k++)); do
    [[ -z "${shard_files[k]}" ]] && continue
    # shellcheck disable=SC2086
    "$PYTHON" -m pytest -q -rfE -m gpu ${shard_files[k]} $TO ${PYTEST_GPU_ARGS:-} \
        -p no:cacheprovider >"$OUT/pytest-gpu-$k.log" 2>&1 &
    pids+=("$!:$k")
  done
  rc=0
  for pk in "${pids[@]}"; do
    wait "${pk%%:*}"; r=$?
    [[ $r -ne 0 && $r -ne 5 ]] && rc=$r
    line=$(tail -1 "$OUT/pytest-gpu-${pk##*:}.log")
    echo "shard ${pk##*:} (exit $r): $line" | tee -a "$OUT/pytest-gpu.log"
    grep -E "^(FAILED|ERROR) " "$OUT/pytest-gpu-${pk##*:}.log" | tee -a "$OUT/pytest-gpu.log"
  done
  counts=$(for k in "${!shard_files[@]}"; do tail -1 "$OUT/pytest-gpu-$k.log" 2>/dev/null; done |
           grep -oE "[0-9]+ (passed|failed|skipped|xfailed|errors?)" |
           awk '{n[$2] += $1} END {for (k in n) printf "%d %s, ", n[k], k}')
  if [[ $rc -eq 0 ]]; then summary+=("pytest -m gpu (compiler, $shards shards): ok (${counts%, })")
  else status=1; summary+=("pytest -m gpu (compiler, $shards shards): FAILED, exit $rc (${counts%, })"); fi

  step "pytest test_runtime.py (CPU tests, with a driver present)"
  "$PYTHON" -m pytest -q -rfE python/test/test_runtime.py -p no:cacheprovider \
      >"$OUT/pytest-runtime.log" 2>&1
  rc=$?
  tail -5 "$OUT/pytest-runtime.log"
  if [[ $rc -eq 0 ]]; then summary+=("pytest test_runtime.py: ok ($(tail -1 "$OUT/pytest-runtime.log"))")
  else status=1; summary+=("pytest test_runtime.py: FAILED ($(tail -1 "$OUT/pytest-runtime.log"))"); fi

  # The random kernels of tools/fuzz on the GPU against the CPU executor.
  step "gpu fuzz (${FUZZ_SEEDS:-1000} seeds)"
  timeout 300 "$PYTHON" tools/fuzz/gpu_fuzz.py --seeds "${FUZZ_SEEDS:-1000}" \
      --jobs "$(( JOBS > 12 ? 12 : JOBS ))" >"$OUT/gpu-fuzz.log" 2>&1
  rc=$?
  tail -1 "$OUT/gpu-fuzz.log"
  if [[ $rc -eq 0 ]]; then summary+=("gpu fuzz: ok ($(tail -1 "$OUT/gpu-fuzz.log"))")
  else status=1; summary+=("gpu fuzz: FAILED, exit $rc ($(tail -1 "$OUT/gpu-fuzz.log"))"); fi
fi

if [[ "${SKIP_BENCH:-0}" != 1 ]]; then
  rm -f "$OUT/results.json"
  for b in benchmarks/bench_*.py; do
    name=$(basename "$b" .py)
    if [[ -n "${BENCHES:-}" && " $BENCHES " != *" ${name#bench_} "* ]]; then continue; fi
    step "$name"
    # shellcheck disable=SC2086
    (cd benchmarks && timeout "${BENCH_TIMEOUT:-300}" "$PYTHON" "$(basename "$b")" \
        --json "$OUT/results.json" ${BENCH_ARGS:-}) \
        >"$OUT/$name.log" 2>&1
    rc=$?
    sed -n '/^bench /,$p' "$OUT/$name.log"
    if [[ $rc -eq 0 ]]; then summary+=("$name: ok")
    else status=1; summary+=("$name: FAILED or wrong (exit $rc, see $name.log)"); tail -15 "$OUT/$name.log"; fi
  done
fi

rm -rf "$TRITIUM_CACHE_DIR"
step "summary"
printf '%s\n' "${summary[@]}"
exit $status
