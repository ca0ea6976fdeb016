#!/usr/bin/env bash
# The wheel, end to end: `pip install <checkout>` (scikit-build-core) into a fresh virtual
# environment in a temporary folder, then, from outside the checkout, import tritium, check that
# it is the installed copy, and run a vector-add kernel on numpy arrays (the CPU executor; no
# CUDA needed). CI runs it after `make test` (.ci/run).
#
#   scripts/wheel-check.sh            PYTHON=python3 (the interpreter the venv is made from)
#                                     JOBS=$(nproc)  (parallel compiles of the wheel's build)
#
# The build goes to <checkout>/build-wheel/ (ignored by git and left out of the sdist).
# scikit-build-core starts it afresh in every new build environment, so the speed-up is ccache's:
# CMakeLists.txt compiles through ccache when it is installed, and with CCACHE_BASEDIR at the
# checkout a folder as deep as build/ hits the objects `make build` cached.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON=${PYTHON:-python3}
export CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-$(nproc)}"
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
fi

log() { echo "[wheel-check] $*" >&2; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/tritium-wheel-check.XXXXXX")"
[[ "${KEEP:-0}" == 1 ]] || trap 'rm -rf "$TMP"' EXIT

# A venv with its own pip; where the interpreter has no ensurepip (Debian's python3 without
# python3-venv), a venv without pip that the host's pip installs into.
VPY="$TMP/venv/bin/python"
if "$PYTHON" -m venv "$TMP/venv" >/dev/null 2>&1; then
  PIP=("$VPY" -m pip)
else
  rm -rf "$TMP/venv"
  log "no ensurepip for $PYTHON: a venv without pip, filled by the host's pip"
  "$PYTHON" -m venv --without-pip "$TMP/venv"
  PIP=("$PYTHON" -m pip --python "$VPY")
fi
PIP+=(install --no-input --disable-pip-version-check --root-user-action=ignore)

log "pip install numpy"
"${PIP[@]}" -q numpy

log "pip install $ROOT (build-dir $ROOT/build-wheel, $CMAKE_BUILD_PARALLEL_LEVEL jobs)"
start=$(date +%s)
"${PIP[@]}" -q -C "build-dir=$ROOT/build-wheel" "$ROOT"
log "wheel built and installed in $(($(date +%s) - start)) s"

# Outside the checkout, with nothing of it on the path (a kernel's source must be in a file).
cd "$TMP"
cat >"$TMP/check_wheel.py" <<'EOF'
import os
import sys

import numpy as np

import tritium as triton
import tritium.language as tl

venv, checkout = (os.path.realpath(p) for p in sys.argv[1:3])
where = os.path.realpath(triton.__file__)
assert where.startswith(venv + os.sep), f"tritium imported from {where}, not from {venv}"
assert not where.startswith(checkout + os.sep), f"tritium imported from the checkout: {where}"
from tritium import _C  # noqa: E402  (the compiled module is the wheel's too)
assert os.path.realpath(_C.__file__).startswith(venv + os.sep), _C.__file__
# Inductor's compile workers import `triton` from here (tritium.inductor.install()).
import tritium.inductor  # noqa: E402
assert os.path.isfile(os.path.join(tritium.inductor.WORKER_PATH, "triton", "__init__.py")), \
    f"the wheel lacks {tritium.inductor.WORKER_PATH}/triton"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2 + y, mask=mask)


n = 5000
rng = np.random.default_rng(0)
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
out = np.full(n, np.nan, dtype=np.float32)
add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
np.testing.assert_array_equal(out, x * 2 + y)
print(f"[wheel-check] ok: tritium from {where}; vector add of {n} elements on the CPU executor")
EOF
env -u PYTHONPATH TRITIUM_CACHE_DIR="$TMP/cache" "$VPY" "$TMP/check_wheel.py" "$TMP/venv" "$ROOT"
