#!/usr/bin/env bash
# Installs what tritium needs to build and test, on a Debian 12/13 machine as
# root with Python 3 + pip.  Idempotent: anything already present is skipped, so
# a second run only checks (well under a second).
#
# Environment:
#   PYTHON=python3           interpreter whose site-packages receive pip packages
#   TRITIUM_SKIP_DEPS=1      do nothing (e.g. on the GPU machine, which has no index)
#   TRITIUM_SKIP_TORCH=1     do not try to install torch (tests skip torch when absent)
#   TRITIUM_TORCH_SPEC=...   pip spec for torch (default torch==2.13.0, CPU build on disk)
set -euo pipefail

[[ "${TRITIUM_SKIP_DEPS:-0}" == 1 ]] && exit 0

PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TRITIUM_TORCH_SPEC:-torch==2.13.0}

log()  { echo "[setup-deps] $*" >&2; }
warn() { echo "[setup-deps] WARNING: $*" >&2; }

pip_install() {
  "$PYTHON" -m pip install -q --no-input --root-user-action=ignore "$@"
}

installed_something=0

# ---------------------------------------------------------------- pip packages
# One interpreter start checks everything (find_spec does not import, so it is
# fast even for torch).  Prints the pip specs of what is missing, one per line;
# "torch" is reported separately.
missing=$("$PYTHON" - <<'EOF'
import importlib.util, shutil, subprocess, re
mods = [("pybind11", "pybind11>=2.12"), ("scikit_build_core", "scikit-build-core"),
        ("lit", "lit"), ("numpy", "numpy"), ("pytest", "pytest"),
        ("hypothesis", "hypothesis"), ("torch", "torch")]
for mod, spec in mods:
    if importlib.util.find_spec(mod) is None:
        print(spec)
if shutil.which("ninja") is None:
    print("ninja")
cmake = shutil.which("cmake")
ok = False
if cmake:
    try:
        out = subprocess.run([cmake, "--version"], capture_output=True, text=True).stdout
        m = re.search(r"(\d+)\.(\d+)", out)
        ok = bool(m) and (int(m.group(1)), int(m.group(2))) >= (3, 20)
    except OSError:
        pass
if not ok:
    print("cmake>=3.20")
EOF
)

want_torch=0
pkgs=()
while IFS= read -r spec; do
  [[ -z "$spec" ]] && continue
  if [[ "$spec" == torch ]]; then want_torch=1; else pkgs+=("$spec"); fi
done <<<"$missing"

if ((${#pkgs[@]})); then
  log "pip install ${pkgs[*]}"
  installed_something=1
  if ! pip_install "${pkgs[@]}"; then
    # Retry one by one so that one unavailable package does not block the rest.
    for p in "${pkgs[@]}"; do
      pip_install "$p" || warn "could not pip install $p"
    done
  fi
fi

if ((want_torch)) && [[ "${TRITIUM_SKIP_TORCH:-0}" != 1 ]]; then
  log "pip install $TORCH_SPEC"
  installed_something=1
  if ! pip_install "$TORCH_SPEC"; then
    warn "could not install $TORCH_SPEC; tests that need torch will be skipped"
  fi
fi

# pyenv only creates shims for new console scripts (lit, cmake, ninja) on rehash.
if ((installed_something)) && command -v pyenv >/dev/null 2>&1; then
  pyenv rehash || true
fi

# ---------------------------------------------------------------- apt packages
apt_pkgs=()
dpkg -s libgtest-dev >/dev/null 2>&1 || apt_pkgs+=(libgtest-dev)

have_filecheck() {
  [[ -x /usr/lib/llvm-14/bin/FileCheck ]] && return 0
  command -v FileCheck >/dev/null 2>&1 && return 0
  compgen -G '/usr/lib/llvm-*/bin/FileCheck' >/dev/null && return 0
  return 1
}
need_filecheck=0
have_filecheck || need_filecheck=1

if ((${#apt_pkgs[@]} || need_filecheck)); then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=()
    if [[ $(id -u) != 0 ]]; then
      if command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else warn "not root and no sudo"; fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    log "apt-get update"
    "${SUDO[@]}" apt-get update -qq || warn "apt-get update failed"
    if ((need_filecheck)); then
      # llvm-14 is what Debian 12 ships; a newer Debian may only have newer ones.
      for v in 14 15 16 17 18 19 20; do
        if apt-cache show "llvm-$v-tools" >/dev/null 2>&1; then
          apt_pkgs+=("llvm-$v-tools"); break
        fi
      done
    fi
    if ((${#apt_pkgs[@]})); then
      log "apt-get install ${apt_pkgs[*]}"
      "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null ||
        warn "apt-get install ${apt_pkgs[*]} failed"
    fi
  else
    warn "no apt-get: install GoogleTest and LLVM's FileCheck by hand (${apt_pkgs[*]})"
  fi
fi

# ---------------------------------------------------------------- final check
"$PYTHON" - <<'EOF' || { echo "[setup-deps] ERROR: a required package is missing" >&2; exit 1; }
import importlib.util, shutil, sys
bad = [m for m in ("pybind11", "numpy") if importlib.util.find_spec(m) is None]
bad += [t for t in ("cmake", "ninja") if shutil.which(t) is None]
if bad:
    print("[setup-deps] missing:", ", ".join(bad), file=sys.stderr)
    sys.exit(1)
EOF
