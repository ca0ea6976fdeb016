// Integer bit helpers used across the compiler, the executor and the
// runtime (one definition instead of a copy per file).
#pragma once

#include <cstdint>

namespace tritium {

/// True for 1, 2, 4, ... (not for 0 or negatives).
constexpr bool isPowerOf2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/// log2 of a power of two; -1 otherwise.
constexpr int log2Exact(int64_t v) {
  if (!isPowerOf2(v))
    return -1;
  int n = 0;
  while ((int64_t(1) << n) < v)
    ++n;
  return n;
}
} // namespace tritium
