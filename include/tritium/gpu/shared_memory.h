// Shared memory in the GPU IR: which ops need it, where it goes, and the
// barriers between its users.
//
// A buffer is owned by an op:
//  - scratch: memory an op uses only while it runs, to move data between
//    threads (a reduction across warps, a data movement op whose elements
//    change threads, the result of an atomic held by several threads);
//  - a memory-descriptor value (ttg.local_alloc): live from its definition
//    to its last use (a ttg.memdesc_index of it counts).
// Two passes turn that into plain facts on the IR, which the PTX emitter
// only prints:
//  - where shared memory gets its offsets: --allocate-shared-memory
//    (lib/gpu/allocate_shared_memory.cpp) writes `allocation.offset = N` on
//    every op owning a buffer and `shared = total` on the function;
//  - where barriers are placed: --insert-barriers
//    (lib/gpu/insert_barriers.cpp) inserts `gpu.barrier` ops (bar.sync 0)
//    between ops whose shared-memory accesses may race.
#pragma once

#include "tritium/analysis/liveness.h"
#include "tritium/transforms/pass.h"

#include <string>
#include <vector>

namespace tritium::gpu {

/// The op attribute holding the byte offset of the op's buffer.
inline const std::string kAllocationOffsetAttr = "allocation.offset";
/// The function attribute holding the kernel's shared-memory bytes.
inline const std::string kSharedBytesAttr = "shared";
/// Buffers start at multiples of this (16-byte vector accesses).
constexpr int64_t kSharedAlignment = 16;
/// The limit when none is given (tritium-opt): sm_90's 227 KiB, as
/// GPUTarget::maxSharedBytes says for sm_90 (a unit test checks they agree).
constexpr int64_t kDefaultSharedLimit = 227 * 1024;

/// Scratch bytes a reduction needs (zero when no warps share an output).
int64_t reduceScratchBytes(const Operation &reduce);
/// tt.reduce_combine / tt.scan: the exchange between the warps that split
/// the axis (0 when one warp holds each line); layout in emit_scan.cpp.
int64_t combineScratchBytes(const Operation &op);
/// Scratch bytes an atomic needs to give its result to every thread that
/// holds it (zero when unused or held by one thread).
int64_t atomicScratchBytes(Function &f, const Operation &atomic);
/// Bytes of a `!ttg.memdesc` type: every element of every buffer, rounded
/// up to kSharedAlignment.
int64_t memdescBytes(const Type *memdesc);
/// Scratch bytes of any op (zero for ops that need none), rounded up to
/// kSharedAlignment.
int64_t scratchBytes(Function &f, const Operation &op);

struct SharedBuffer {
  Operation *owner = nullptr; // carries the offset attribute
  int64_t bytes = 0, offset = 0;
  LiveRange live;
  /// The offset's alignment: kSharedAlignment, or a swizzled NVMMA
  /// layout's atom (8 rows of its swizzle width: wgmma and TMA swizzle by
  /// address bits 4-9, so the pattern must start at such an address).
  int64_t align = kSharedAlignment;
};

struct SharedMemoryPlan {
  std::vector<SharedBuffer> buffers; // in program order of their owners
  int64_t totalBytes = 0;
};

/// `--allocate-shared-memory`: gives every buffer of `f` an offset.
///  1. Buffers: the scratch of each op that needs any (scratchBytes), and
///     the memory of each ttg.local_alloc (memdescBytes).
///  2. Live ranges (Liveness): a scratch buffer is live while its op runs
///     (one of at most 2 KB until the next op with scratch starts, so that
///     consecutive ones take different bytes and the later one needs no
///     barrier before its writes; dropped where the total would pass the
///     limit), a local_alloc's from its definition to its last use (a use
///     of a ttg.memdesc_index of it included).
///  3. Largest first, each buffer takes the lowest 16-byte aligned offset
///     where it overlaps no placed buffer live at the same time; buffers
///     never live together may share bytes.
///  4. Writes `allocation.offset` on each owner and `shared` (the end of the
///     highest buffer) on the function.
///  5. A total above `limitBytes` is a UserError located at the kernel,
///     naming it, its bytes and the limit of `target` (for the message).
/// Counters: gpu.shared-buffers, gpu.shared-bytes (summed over kernels),
/// gpu.shared-scratch-alternated.
SharedMemoryPlan allocateSharedMemory(Function &f,
                                      int64_t limitBytes = kDefaultSharedLimit,
                                      const std::string &target = "sm_90a",
                                      PassStats *stats = nullptr);
/// Step 3 alone: sets the offset of every buffer; returns the total.
int64_t assignOffsets(std::vector<SharedBuffer> &buffers);
/// The pass over every function of `m`.
void allocateSharedMemory(Module &m, int64_t limitBytes,
                          const std::string &target, PassStats &stats);

/// `--insert-barriers`: inserts `gpu.barrier` before an op whose
/// shared-memory accesses conflict with those of an earlier op still
/// unsynchronized (a write after another thread's read, or a read or write
/// after another thread's write), using the allocation's offsets: buffers
/// with disjoint bytes never need one. Memory descriptors count by the
/// bytes of their ttg.local_alloc; an access to bytes an asynchronous copy
/// may still write (no ttg.async_wait completed its group) is an
/// InternalError naming the op and the copy. See insert_barriers.cpp.
/// Counters: gpu.barriers-inserted.
void insertBarriers(Module &m, PassStats &stats);

/// The offset `allocateSharedMemory` gave `op`'s buffer, or -1 when it has
/// none.
int64_t sharedOffset(const Operation &op);
/// The kernel's shared-memory bytes; InternalError when the allocation did
/// not run.
int64_t sharedBytes(const Function &f);

} // namespace tritium::gpu
