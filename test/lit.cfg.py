# -*- Python -*-
# lit configuration for tritium's IR and pass tests (test/**/*.tir).
#
# A test says, for example:
#   // RUN: tritium-opt %s --canonicalize | FileCheck %s
# tritium-opt is taken from $TRITIUM_BUILD_DIR (default <repo>/build), FileCheck
# (and `not`, `count`) from /usr/lib/llvm-14/bin, another /usr/lib/llvm-*/bin,
# or PATH.  Run with `make lit` or `lit -v test/`.

import glob
import os
import shutil

import lit.formats

config.name = "tritium"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tir"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "Output"]

config.test_source_root = os.path.dirname(os.path.abspath(__file__))
repo_root = os.path.dirname(config.test_source_root)
build_dir = os.path.abspath(
    os.environ.get("TRITIUM_BUILD_DIR") or os.path.join(repo_root, "build"))
# Keep lit's Output/ folders (%t files) out of the source tree.
config.test_exec_root = os.path.join(build_dir, "test")


def _filecheck_dir():
    candidates = ["/usr/lib/llvm-14/bin"]
    candidates += sorted(glob.glob("/usr/lib/llvm-*/bin"), reverse=True)
    for d in candidates:
        if os.access(os.path.join(d, "FileCheck"), os.X_OK):
            return d
    found = shutil.which("FileCheck")
    if found:
        return os.path.dirname(found)
    lit_config.fatal("FileCheck not found: install llvm-14-tools "
                     "(scripts/setup-deps.sh does) or put FileCheck on PATH")


if not os.access(os.path.join(build_dir, "tritium-opt"), os.X_OK):
    lit_config.fatal(f"tritium-opt not found in {build_dir}: run `make build` "
                     "or set TRITIUM_BUILD_DIR")

path = [build_dir, _filecheck_dir(), config.environment.get("PATH", os.environ.get("PATH", ""))]
config.environment["PATH"] = os.pathsep.join(path)

# Pass through what tools may want.
for var in ("HOME", "TMPDIR", "TRITIUM_CACHE_DIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%tritium_opt", os.path.join(build_dir, "tritium-opt")))


def _ptxas():
    """$TRITIUM_PTXAS (empty: none), /usr/local/cuda/bin/ptxas or ptxas on
    PATH, as the runtime looks for it."""
    env = os.environ.get("TRITIUM_PTXAS")
    if env is not None:
        return env if env and os.access(env, os.X_OK) else None
    if os.access("/usr/local/cuda/bin/ptxas", os.X_OK):
        return "/usr/local/cuda/bin/ptxas"
    return shutil.which("ptxas")


# Tests assemble PTX with `%if ptxas %{ ... %{ptxas} -arch=... %}`: skipped
# where ptxas is not installed (CI has it).
_ptxas_path = _ptxas()
if _ptxas_path:
    config.available_features.add("ptxas")
    config.substitutions.append(("%{ptxas}", _ptxas_path))
if "TRITIUM_PTXAS" in os.environ:
    config.environment["TRITIUM_PTXAS"] = os.environ["TRITIUM_PTXAS"]
