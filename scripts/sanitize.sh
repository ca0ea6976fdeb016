#!/usr/bin/env bash
# Sanitized builds and runs (make test-sanitize, make fuzz-parser).
#
#   scripts/sanitize.sh deps          install clang and its sanitizer runtimes when missing
#   scripts/sanitize.sh test          build build-asan/ and run, under ASan + UBSan with leak
#                                     checks: tritium-unittests, lit, pytest -m "not gpu"
#   scripts/sanitize.sh fuzz SECONDS  build tools/fuzz/parse_fuzzer.cpp in build-asan/, seed its
#                                     corpus from test/**/*.tir and run it for SECONDS
#
# build-asan/ is one clang build with -fsanitize=address,undefined (UB is fatal) and
# -fsanitize=fuzzer-no-link, so the tests and the fuzzer share one compile of the library.
# Its _C module goes to build-asan/python/tritium/, beside a copy of the Python package: the
# in-tree python/tritium/_C*.so of the normal build is never touched.  pytest runs with
# clang's ASan runtime in LD_PRELOAD and PYTHONMALLOC=malloc (so that LeakSanitizer sees the
# Python objects that own C++ ones), torch included; scripts/lsan-python.supp silences the
# Python objects that the interpreter and extensions keep until exit.  Test subprocesses
# inherit the preload; those that put the source tree's python/ first on their path load the
# normal _C under it.
#
# Environment: ASAN_BUILD_DIR=build-asan  JOBS=2  PYTHON=python3  PYTEST_ARGS  LIT_ARGS
#              TRITIUM_SKIP_DEPS=1 (no apt)   TRITIUM_SANITIZE_CLANG=N (use clang-N)
#              FUZZ_ARGS (more libFuzzer flags)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-2}
B=${ASAN_BUILD_DIR:-build-asan}
[[ $B = /* ]] || B=$ROOT/$B

log() { echo "[sanitize] $*" >&2; }

# Prints the ASan runtime (shared) of clang++-$1, or fails.
asan_runtime() {
  local cxx=clang++-$1 dir
  dir=$("$cxx" --print-runtime-dir 2>/dev/null) || return 1
  for f in "$dir/libclang_rt.asan-x86_64.so" "$dir/libclang_rt.asan.so" \
           "/usr/lib/llvm-$1/lib/clang/"*/lib/linux/libclang_rt.asan-x86_64.so; do
    [[ -f $f ]] && { echo "$f"; return 0; }
  done
  return 1
}

# A clang with the ASan runtime and libFuzzer (the fuzzer runtime is beside the ASan one).
usable_clang() {
  local v=$1 rt
  command -v "clang++-$v" >/dev/null 2>&1 || return 1
  rt=$(asan_runtime "$v") || return 1
  compgen -G "$(dirname "$rt")/libclang_rt.fuzzer*.a" >/dev/null
}

# Prints the clang version to use, installing clang-14 + libclang-rt-14-dev when no usable
# clang is present.  Debian 12 ships clang 14 (default 14); when an index has no clang-14,
# the newest clang-N that has libclang-rt-N-dev is taken instead (a note says so).
pick_clang() {
  local v
  for v in ${TRITIUM_SANITIZE_CLANG:-} 14 20 19 18 17 16 15; do
    usable_clang "$v" && { echo "$v"; return 0; }
  done
  if [[ ${TRITIUM_SKIP_DEPS:-0} == 1 ]] || ! command -v apt-get >/dev/null 2>&1; then
    log "ERROR: no clang with libclang-rt (e.g. clang-14 + libclang-rt-14-dev) and no apt"
    return 1
  fi
  local SUDO=()
  [[ $(id -u) == 0 ]] || SUDO=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  local want=${TRITIUM_SANITIZE_CLANG:-14} chosen=""
  if ! apt-cache show "clang-$want" "libclang-rt-$want-dev" >/dev/null 2>&1; then
    log "apt-get update"
    "${SUDO[@]}" apt-get update -qq >&2 || log "apt-get update failed"
  fi
  for v in "$want" 20 19 18 17 16 15; do
    if apt-cache show "clang-$v" "libclang-rt-$v-dev" >/dev/null 2>&1; then chosen=$v; break; fi
  done
  if [[ -z $chosen ]]; then
    log "ERROR: apt has no clang-N with libclang-rt-N-dev"
    return 1
  fi
  [[ $chosen == "$want" ]] || log "NOTE: clang-$want is not in the apt index; using clang-$chosen"
  log "apt-get install clang-$chosen libclang-rt-$chosen-dev"
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends \
    "clang-$chosen" "libclang-rt-$chosen-dev" "llvm-$chosen" >/dev/null
  usable_clang "$chosen" || { log "ERROR: clang-$chosen has no ASan/libFuzzer runtime"; return 1; }
  echo "$chosen"
}

CLANG_V=""
setup_env() {
  CLANG_V=$(pick_clang)
  CXX=$(command -v "clang++-$CLANG_V")
  ASAN_RT=$(asan_runtime "$CLANG_V")
  log "clang $CLANG_V ($CXX), ASan runtime $ASAN_RT"
  local sym=/usr/lib/llvm-$CLANG_V/bin/llvm-symbolizer
  [[ -x $sym ]] && export ASAN_SYMBOLIZER_PATH=$sym
  # UB is compiled non-recoverable; halt_on_error covers the rest.
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:check_initialization_order=1:detect_stack_use_after_return=0
  export LSAN_OPTIONS=""
}

configure() {
  # A build folder made by another compiler (the old g++ test-sanitize) cannot be reused.
  if [[ -f $B/CMakeCache.txt ]] &&
     ! grep -qx "CMAKE_CXX_COMPILER:[A-Z]*=$CXX" "$B/CMakeCache.txt"; then
    log "$B was configured with another compiler: starting it afresh"
    rm -rf "$B"
  fi
  if [[ ! -f $B/build.ninja ]]; then
    (set -x; cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER="$CXX" \
      -DTRITIUM_SANITIZE=ON -DTRITIUM_FUZZ=ON \
      -DTRITIUM_PYTHON_OUTPUT_DIR="$B/python/tritium" \
      -DPython_EXECUTABLE="$("$PYTHON" -c 'import sys; print(sys.executable)')" >/dev/null)
  fi
}

build() {
  (set -x; nice -n 10 cmake --build "$B" -j "$JOBS" --target "$@")
}

# The package's Python files, copied beside the sanitized _C (which the copy keeps).
sync_package() {
  "$PYTHON" - "$ROOT/python/tritium" "$B/python/tritium" <<'EOF'
import os, shutil, sys
src, dst = sys.argv[1:]
os.makedirs(dst, exist_ok=True)
for name in os.listdir(dst):
    if not (name.startswith("_C") and name.endswith(".so")):
        p = os.path.join(dst, name)
        shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)
shutil.copytree(src, dst, dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("_C*.so", "__pycache__"))
EOF
}

cmd_test() {
  setup_env
  configure
  build tritium-unittests tritium-opt _C
  sync_package

  local t0=$SECONDS
  (set -x; "$B/tritium-unittests" --gtest_brief=1)
  log "unittests: $((SECONDS - t0)) s"

  t0=$SECONDS
  (set -x; TRITIUM_BUILD_DIR="$B" "$PYTHON" -c 'import lit.main; lit.main.main()' \
     -s ${LIT_ARGS:-} test/)
  log "lit: $((SECONDS - t0)) s"

  # pytest: the interpreter is not instrumented, so the ASan runtime is preloaded into it.
  # PYTHONPATH puts the sanitized package first; python/ must be on it too so that
  # conftest.py does not put it in front again.
  local pyenv=(
    LD_PRELOAD="$ASAN_RT"
    PYTHONMALLOC=malloc
    PYTHONPATH="$B/python:$ROOT/python"
    LSAN_OPTIONS="suppressions=$ROOT/scripts/lsan-python.supp:print_suppressions=0"
    # clang-14's leak check at exit can die in its tracer ("Tracer caught signal 11") on the
    # dynamic TLS of the libraries Python loads, after every test passed (seen once in 2026-12);
    # without the __tls_get_addr interceptor it does not (the whole suite ran clean with it).
    ASAN_OPTIONS="$ASAN_OPTIONS:intercept_tls_get_addr=0"
    TRITIUM_CACHE_DIR="$B/cache"
  )
  rm -rf "$B/cache"
  # The interpreter itself, not a wrapper script (pyenv's shim is bash, which leaks).
  local py
  py=$("$PYTHON" -c 'import sys; print(sys.executable)')
  env "${pyenv[@]}" "$py" -c '
import os, sys, tritium._C as c
want = os.path.realpath(sys.argv[1])
if not os.path.realpath(c.__file__).startswith(want + os.sep):
    sys.exit(f"[sanitize] ERROR: tritium._C comes from {c.__file__}, not from {want}")
print("[sanitize] tritium._C:", c.__file__, file=sys.stderr)' "$B/python"

  t0=$SECONDS
  local rc=0
  (set -x; env "${pyenv[@]}" "$py" -m pytest -x -q -p no:cacheprovider \
     python/test -m "not gpu" ${PYTEST_ARGS:-}) || rc=$?
  [[ $rc == 5 ]] && { log "pytest: no tests collected"; rc=0; }
  log "pytest: $((SECONDS - t0)) s"
  return $rc
}

cmd_fuzz() {
  local seconds=${1:-60}
  setup_env
  configure
  build parse_fuzzer
  local corpus=$B/fuzz/parse-corpus seeds=$B/fuzz/parse-seeds
  rm -rf "$seeds"
  mkdir -p "$corpus" "$seeds" "$B/fuzz/artifacts"
  # One seed per file and per `// -----` chunk of a file, and a dictionary of the words
  # and punctuation of those files, so that mutations splice in real tokens.
  "$PYTHON" - "$seeds" "$B/fuzz/parse.dict" <<'EOF'
import hashlib, pathlib, re, sys
out, dict_path = pathlib.Path(sys.argv[1]), sys.argv[2]
words = set()
for f in sorted(pathlib.Path("test").rglob("*.tir")):
    text = f.read_text()
    for chunk in re.split(r"(?m)^// -----\s*$", text):
        if chunk.strip():
            (out / hashlib.sha1(chunk.encode()).hexdigest()).write_text(chunk)
    for line in text.splitlines():
        if not line.lstrip().startswith("//"):
            words.update(re.findall(r"[#!%^]?[A-Za-z_][A-Za-z0-9_.]*|->|[<>{}()\[\],:=]", line))
with open(dict_path, "w") as d:
    for w in sorted(words):
        d.write('"%s"\n' % w)
EOF
  log "corpus: $(ls "$seeds" | wc -l) seeds from test/**/*.tir"
  # Leak checks stay on; -rss_limit_mb keeps a runaway input from eating the machine.
  local rc
  set +e
  (set -x; "$B/parse_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
     -max_len=8192 -print_final_stats=1 -artifact_prefix="$B/fuzz/artifacts/" \
     -dict="$B/fuzz/parse.dict" \
     ${FUZZ_ARGS:-} "$corpus" "$seeds") 2>&1 | tee "$B/fuzz/parse_fuzzer.log" |
     grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)|^"|^###### |NEW_FUNC'
  rc=${PIPESTATUS[0]}
  set -e
  return "$rc"
}

case ${1:-} in
  deps) pick_clang >/dev/null ;;
  test) cmd_test ;;
  fuzz) shift; cmd_fuzz "$@" ;;
  *) echo "usage: $0 deps|test|fuzz [SECONDS]" >&2; exit 2 ;;
esac
