// Scratch shared memory per op, and the kernel's total (see shared_memory.h
// for why every buffer starts at offset 0).
#include "tritium/gpu/shared_memory.h"
#include "tritium/gpu/conversion.h"
#include "tritium/gpu/passes.h"

namespace tritium::gpu {

namespace {

/// Bytes a reduction keeps per element while combining (small types are
/// widened to 32 bits; fp64 and 64-bit ints keep 8).
int64_t accumulatorBytes(const Type *elem) {
  return storageBytes(elem) == 8 ? 8 : 4;
}

} // namespace

int64_t reduceScratchBytes(const Operation &op) {
  const Type *in = op.operand(0)->type();
  int axis = (int)op.intAttr("axis");
  const LinearLayout &ll = linearOf(in);
  int64_t warpsAlongAxis = 1;
  for (const Basis &b : ll.warp())
    if (b[axis] != 0)
      warpsAlongAxis *= 2;
  if (warpsAlongAxis == 1)
    return 0;
  int64_t outElems = in->numElements() / in->shape()[axis];
  const std::string &kind = op.strAttr("kind");
  int64_t per = accumulatorBytes(in->element());
  if (kind == "argmax" || kind == "argmin")
    per += 4;
  // The partials of every warp, then the combined result per element.
  return (warpsAlongAxis + 1) * outElems * per;
}

int64_t atomicScratchBytes(Function &f, const Operation &op) {
  Value *r = op.result(0);
  if (!hasUses(f, r))
    return 0;
  const Type *t = r->type();
  if (!t->isTensor())
    return 8;
  const LinearLayout &ll = linearOf(t);
  if (duplicateLaneMask(ll) == 0 && duplicateWarpMask(ll) == 0)
    return 0;
  return t->numElements() * storageBytes(t->element());
}

SharedMemoryPlan allocateSharedMemory(Function &f) {
  SharedMemoryPlan plan;
  f.walk([&](Operation *op) {
    int64_t bytes = 0;
    if (op->hasTrait(MOVE) && op->operand(0)->type()->isTensor() &&
        layoutOf(op->operand(0)->type()) && layoutOf(op->result(0)->type())) {
      MovementPlan mp = planMovement(
          op->operand(0)->type(), op->result(0)->type(), movementWeights(*op));
      bytes = mp.scratchBytes;
    } else if (op->code() == OpCode::Reduce) {
      bytes = reduceScratchBytes(*op);
    } else if (op->code() == OpCode::AtomicRMW ||
               op->code() == OpCode::AtomicCAS) {
      bytes = atomicScratchBytes(f, *op);
    }
    if (bytes <= 0)
      return;
    bytes = (bytes + 15) / 16 * 16;
    plan.bytes[op] = bytes;
    plan.offset[op] = 0;
    if (bytes > plan.totalBytes) {
      plan.totalBytes = bytes;
      plan.largest = op;
    }
  });
  return plan;
}

} // namespace tritium::gpu
