// Shared-memory allocation for the GPU IR.
//
// v1 uses shared memory only as scratch inside one op: a reduction across
// warps, a data movement op whose elements change threads, the result of an
// atomic held by several threads. A scratch buffer is live from the barrier
// that opens its op to the barrier that opens the next user, so buffers of
// different ops never overlap in time and all of them start at offset 0; the
// kernel needs the largest.
#pragma once

#include "tritium/ir/ir.h"

#include <map>

namespace tritium::gpu {

struct SharedMemoryPlan {
  /// Scratch bytes of each op that needs any, and its offset.
  std::map<const Operation *, int64_t> bytes, offset;
  int64_t totalBytes = 0;
  /// The op needing the most (for the error message).
  const Operation *largest = nullptr;
};

/// Plans the scratch of every op of `f` (GPU IR).
SharedMemoryPlan allocateSharedMemory(Function &f);

/// Scratch bytes a reduction needs (zero when no warps share an output).
int64_t reduceScratchBytes(const Operation &reduce);
/// Scratch bytes an atomic needs to give its result to every thread that
/// holds it (zero when unused or held by one thread).
int64_t atomicScratchBytes(Function &f, const Operation &atomic);

} // namespace tritium::gpu
