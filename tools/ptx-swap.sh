#!/usr/bin/env bash
# A ptxas wrapper for A/B runs of hand-edited or foreign PTX through tritium's own launcher
# (docs/perf-method.md). Point tritium at it with TRITIUM_PTXAS=tools/ptx-swap.sh; then, while
# SWAP_PTX names a PTX file, every PTX that tritium hands to ptxas and that defines
# `.entry $SWAP_ENTRY` (default matmul_kernel) is replaced by that file before ptxas runs.
# The file must declare the kernel's parameters as tritium's launch passes them (same order,
# no extra ones) and need no more shared memory than tritium's own compile of it asked for.
# REAL_PTXAS: the ptxas to run (default: the one on PATH, else /usr/local/cuda/bin/ptxas).
# SWAP_LOG: a file that gets one line per swap (default /tmp/ptx-swap.log).
set -euo pipefail
real=${REAL_PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
if [[ -n "${SWAP_PTX:-}" ]]; then
  in=""
  for a in "$@"; do
    case "$a" in *.ptx) in="$a" ;; esac
  done
  if [[ -n "$in" ]] && grep -q "\.entry ${SWAP_ENTRY:-matmul_kernel}(" "$in"; then
    cp "$SWAP_PTX" "$in"
    echo "swapped in $SWAP_PTX" >>"${SWAP_LOG:-/tmp/ptx-swap.log}"
  fi
fi
exec "$real" "$@"
