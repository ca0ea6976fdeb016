// --allocate-shared-memory: the one place where shared memory gets its
// offsets (see shared_memory.h for the outline).
//
// 1. Collect the buffers of the function: every op that needs scratch.
// 2. Give each its live range over the structured IR (Liveness); a small
//    scratch buffer stays live until the next op with scratch starts, so
//    that the two get different bytes (see alternateScratch).
// 3. Place them largest first, each at the lowest aligned offset where it
//    overlaps no placed buffer whose range intersects its own.
// 4. Write the offsets and the total as attributes.
// 5. Check the total against the target's limit.
#include "tritium/gpu/shared_memory.h"
#include "tritium/gpu/shared_layouts.h"

#include <algorithm>
#include <set>

namespace tritium::gpu {

namespace {

/// Every value that names bytes of `alloc`'s buffer: its result and the
/// results of ttg.memdesc_index and ttg.memdesc_trans ops taken of it
/// (transitively).
std::vector<Value *> memdescViews(Function &f, Operation *alloc) {
  std::vector<Value *> views{alloc->result(0)};
  std::set<Value *> seen(views.begin(), views.end());
  // Program order: an index op comes after the value it indexes, so one
  // walk finds every view.
  f.walk([&](Operation *op) {
    if ((op->code() == OpCode::MemDescIndex ||
         op->code() == OpCode::MemDescTrans) &&
        seen.count(op->operand(0)) &&
        seen.insert(op->result(0)).second)
      views.push_back(op->result(0));
  });
  return views;
}

/// Step 1 and 2. Two kinds of buffers:
///  - scratch, used only while its op runs;
///  - a memory descriptor (ttg.local_alloc): owned by its defining op, of
///    every element of its type (all buffers of a multi-buffered one), live
///    from its definition to its last use, a use of a ttg.memdesc_index of
///    it included (through loops, the whole loop: Liveness).
std::vector<SharedBuffer> collectBuffers(Function &f, const Liveness &live) {
  std::vector<SharedBuffer> buffers;
  f.walk([&](Operation *op) {
    if (op->code() == OpCode::LocalAlloc) {
      int64_t bytes = memdescBytes(op->result(0)->type());
      LiveRange range = live.valueRange(op->result(0));
      for (Value *v : memdescViews(f, op)) {
        LiveRange r = live.valueRange(v);
        range.begin = std::min(range.begin, r.begin);
        range.end = std::max(range.end, r.end);
      }
      int64_t align = kSharedAlignment;
      if (const auto *nv = dynamic_cast<const NVMMASharedLayout *>(
              sharedLayoutOf(op->result(0)->type())))
        align = std::max(align, 8 * nv->swizzlingByteWidth);
      buffers.push_back({op, bytes, 0, range, align});
      return;
    }
    // Scratch is used only while its op runs.
    if (int64_t bytes = scratchBytes(f, *op))
      buffers.push_back({op, bytes, 0, live.opRange(*op)});
  });
  return buffers;
}

/// Scratch up to this size alternates (step 2b). A reduction's partials
/// are (warps along the axis) x (outputs) x 4 bytes: 32 bytes for a row sum
/// over 8 warps, 1 KB for 64 rows over 4 warps. Bounded so that a kernel's
/// shared memory, and with it its programs per SM, grows by little (a 32x32
/// fp32 layout conversion's 4 KB keeps its barrier).
constexpr int64_t kAlternateScratchMaxBytes = 2048;

/// Step 2b. Every scratch op writes its bytes, synchronizes inside its own
/// lowering and reads them, leaving the reads pending (insert_barriers.cpp).
/// When the next scratch op writes the same bytes it needs a barrier of its
/// own first; when its bytes are others, its inner barrier is the one that
/// orders the earlier reads. Keeping each small buffer live until the next
/// one starts makes consecutive ones take different bytes (first fit puts
/// them at alternating offsets): a reduction after a reduction costs one
/// bar.sync, not two. Liger's PolyNorm backward sums four products per row
/// in its row loop: 8 barriers per row before, 4 after, and its bf16
/// backward went from 76-77 to 62 us on the H200 (Triton 70). Program order
/// (the walk's) decides "next"; a loop's last and first buffers still share
/// bytes when the loop has an odd number of them, and insert_barriers then
/// keeps one barrier on the back edge. Returns how many buffers it kept
/// live longer.
int alternateScratch(std::vector<SharedBuffer> &buffers) {
  SharedBuffer *prev = nullptr;
  int extended = 0;
  for (SharedBuffer &b : buffers) {
    if (b.owner->code() == OpCode::LocalAlloc)
      continue;
    if (prev && prev->bytes <= kAlternateScratchMaxBytes &&
        b.bytes <= kAlternateScratchMaxBytes && prev->live.end < b.live.begin) {
      prev->live.end = b.live.begin;
      ++extended;
    }
    prev = &b;
  }
  return extended;
}

} // namespace

/// Step 3: first fit, largest first (ties in program order, so that the
/// plan does not depend on pointer values).
int64_t assignOffsets(std::vector<SharedBuffer> &buffers) {
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].bytes > buffers[b].bytes;
  });
  std::vector<size_t> placed;
  int64_t total = 0;
  for (size_t i : order) {
    SharedBuffer &b = buffers[i];
    // The byte ranges taken by buffers live at the same time, by start.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (buffers[j].live.overlaps(b.live))
        taken.push_back({buffers[j].offset,
                         buffers[j].offset + buffers[j].bytes});
    std::sort(taken.begin(), taken.end());
    int64_t at = 0;
    for (auto [lo, hi] : taken) {
      if (at + b.bytes <= lo)
        break;
      at = std::max(at, (hi + b.align - 1) / b.align * b.align);
    }
    b.offset = at;
    placed.push_back(i);
    total = std::max(total, at + b.bytes);
  }
  return total;
}

SharedMemoryPlan allocateSharedMemory(Function &f, int64_t limitBytes,
                                      const std::string &target,
                                      PassStats *stats) {
  Liveness live(f);
  SharedMemoryPlan plan;
  plan.buffers = collectBuffers(f, live);
  std::vector<SharedBuffer> unextended = plan.buffers;
  int alternated = alternateScratch(plan.buffers);
  plan.totalBytes = assignOffsets(plan.buffers);
  // Alternation trades a few bytes for barriers; never a kernel that fits
  // for one that does not.
  if (alternated && plan.totalBytes > limitBytes) {
    plan.buffers = std::move(unextended);
    plan.totalBytes = assignOffsets(plan.buffers);
    alternated = 0;
  }

  // 4. Attributes (the emitter reads them back).
  for (const SharedBuffer &b : plan.buffers)
    b.owner->setAttr(kAllocationOffsetAttr, b.offset);
  f.attrs()[kSharedBytesAttr] = plan.totalBytes;
  if (stats) {
    stats->add("gpu.shared-buffers", (int64_t)plan.buffers.size());
    stats->add("gpu.shared-bytes", plan.totalBytes);
    stats->add("gpu.shared-scratch-alternated", alternated);
  }

  // 5. The limit. The error names the largest buffer's op as well, the one
  //    to make smaller.
  if (plan.totalBytes > limitBytes) {
    const SharedBuffer *largest = &plan.buffers.front();
    for (const SharedBuffer &b : plan.buffers)
      if (b.bytes > largest->bytes)
        largest = &b;
    std::string where = largest->owner->loc().known()
                            ? " at " + largest->owner->loc().str()
                            : "";
    throw UserError("kernel '" + f.name() + "' needs " +
                        std::to_string(plan.totalBytes) +
                        " bytes of shared memory; " + target +
                        " allows at most " + std::to_string(limitBytes) +
                        " (the largest buffer, " +
                        std::to_string(largest->bytes) + " bytes, is for '" +
                        largest->owner->name() + "'" + where +
                        "; use a smaller block or fewer elements per program)",
                    f.loc());
  }
  return plan;
}

void allocateSharedMemory(Module &m, int64_t limitBytes,
                          const std::string &target, PassStats &stats) {
  for (auto &f : m.functions())
    allocateSharedMemory(*f, limitBytes, target, &stats);
}

} // namespace tritium::gpu
