// --allocate-shared-memory: the one place where shared memory gets its
// offsets (see shared_memory.h for the outline).
//
// 1. Collect the buffers of the function: every op that needs scratch.
// 2. Give each its live range over the structured IR (Liveness).
// 3. Place them largest first, each at the lowest aligned offset where it
//    overlaps no placed buffer whose range intersects its own.
// 4. Write the offsets and the total as attributes.
// 5. Check the total against the target's limit.
#include "tritium/gpu/shared_memory.h"

#include <algorithm>
#include <set>

namespace tritium::gpu {

namespace {

/// Every value that names bytes of `alloc`'s buffer: its result and the
/// results of ttg.memdesc_index ops taken of it (transitively).
std::vector<Value *> memdescViews(Function &f, Operation *alloc) {
  std::vector<Value *> views{alloc->result(0)};
  std::set<Value *> seen(views.begin(), views.end());
  // Program order: an index op comes after the value it indexes, so one
  // walk finds every view.
  f.walk([&](Operation *op) {
    if (op->code() == OpCode::MemDescIndex && seen.count(op->operand(0)) &&
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
      buffers.push_back({op, bytes, 0, range});
      return;
    }
    // Scratch is used only while its op runs.
    if (int64_t bytes = scratchBytes(f, *op))
      buffers.push_back({op, bytes, 0, live.opRange(*op)});
  });
  return buffers;
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
      at = std::max(at, (hi + kSharedAlignment - 1) / kSharedAlignment *
                            kSharedAlignment);
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
  plan.totalBytes = assignOffsets(plan.buffers);

  // 4. Attributes (the emitter reads them back).
  for (const SharedBuffer &b : plan.buffers)
    b.owner->setAttr(kAllocationOffsetAttr, b.offset);
  f.attrs()[kSharedBytesAttr] = plan.totalBytes;
  if (stats) {
    stats->add("gpu.shared-buffers", (int64_t)plan.buffers.size());
    stats->add("gpu.shared-bytes", plan.totalBytes);
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
