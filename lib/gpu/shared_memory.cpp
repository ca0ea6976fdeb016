// The shared memory each op needs (see shared_memory.h); the offsets come
// from allocate_shared_memory.cpp.
#include "tritium/gpu/shared_memory.h"
#include "tritium/gpu/conversion.h"
#include "tritium/gpu/passes.h"

#include <algorithm>

namespace tritium::gpu {

namespace {

/// Bytes a reduction keeps per element while combining (small types are
/// widened to 32 bits; fp64 and 64-bit ints keep 8).
int64_t accumulatorBytes(const Type *elem) {
  return storageBytes(elem) == 8 ? 8 : 4;
}

/// How much scratch an op needs depends on its layouts: tile IR has none.
void requireLayouts(const Operation &op) {
  auto check = [&](Value *v) {
    if (v->type()->isTensor() && !layoutOf(v->type()))
      throw UserError("'" + std::string(op.name()) +
                          "' has a tensor without a GPU layout (" +
                          v->type()->str() +
                          "): shared memory is planned on GPU IR (run "
                          "--convert-to-gpu first)",
                      op.loc());
  };
  for (Value *v : op.operands())
    check(v);
  for (Value *v : op.results())
    check(v);
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

int64_t combineScratchBytes(const Operation &op) {
  const Type *in = op.operand(0)->type();
  int axis = (int)op.intAttr("axis");
  int stages = 0;
  for (const Basis &b : linearOf(in).warp())
    stages += b[axis] != 0;
  if (stages == 0)
    return 0;
  int64_t per = 0;
  for (Value *v : op.operands())
    per += accumulatorBytes(v->type()->element());
  // Every element's running total, in two buffers used alternately by the
  // warp stages (so that one stage's writes never race the previous
  // stage's reads).
  return std::min(stages, 2) * in->numElements() * per;
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

int64_t memdescBytes(const Type *memdesc) {
  if (!memdesc->isMemDesc())
    throw InternalError("memdescBytes: '" + memdesc->str() +
                        "' is not a memory descriptor");
  int64_t bytes = memdesc->numElements() * storageBytes(memdesc->element());
  return (bytes + kSharedAlignment - 1) / kSharedAlignment * kSharedAlignment;
}

int64_t scratchBytes(Function &f, const Operation &op) {
  bool maybe = op.hasTrait(MOVE) || op.code() == OpCode::Reduce ||
               op.code() == OpCode::ReduceCombine ||
               op.code() == OpCode::Scan ||
               op.code() == OpCode::AtomicRMW ||
               op.code() == OpCode::AtomicCAS;
  if (!maybe)
    return 0;
  requireLayouts(op);
  int64_t bytes = 0;
  if (op.hasTrait(MOVE) && op.operand(0)->type()->isTensor()) {
    MovementPlan mp = planMovement(op.operand(0)->type(),
                                   op.result(0)->type(), movementWeights(op));
    bytes = mp.scratchBytes;
  } else if (op.code() == OpCode::Reduce) {
    bytes = reduceScratchBytes(op);
  } else if (op.code() == OpCode::ReduceCombine ||
             op.code() == OpCode::Scan) {
    bytes = combineScratchBytes(op);
  } else if (op.code() == OpCode::AtomicRMW ||
             op.code() == OpCode::AtomicCAS) {
    bytes = atomicScratchBytes(f, op);
  }
  if (bytes <= 0)
    return 0;
  return (bytes + kSharedAlignment - 1) / kSharedAlignment * kSharedAlignment;
}

int64_t sharedOffset(const Operation &op) {
  auto it = op.attrs().find(kAllocationOffsetAttr);
  if (it == op.attrs().end())
    return -1;
  // IR text may say anything here; the allocation writes only these.
  const int64_t *v = std::get_if<int64_t>(&it->second);
  if (!v || *v < 0 || *v >= (int64_t(1) << 32) || *v % kSharedAlignment != 0)
    throw UserError("'" + kAllocationOffsetAttr + "' of '" +
                        std::string(op.name()) +
                        "' must be a non-negative multiple of " +
                        std::to_string(kSharedAlignment) + ", found " +
                        attrStr(it->second),
                    op.loc());
  return *v;
}

int64_t sharedBytes(const Function &f) {
  auto it = f.attrs().find(kSharedBytesAttr);
  if (it == f.attrs().end() || !std::holds_alternative<int64_t>(it->second))
    throw InternalError("'" + f.name() +
                        "' has no shared-memory plan (the attribute '" +
                        kSharedBytesAttr +
                        "'): run --allocate-shared-memory first");
  return std::get<int64_t>(it->second);
}

} // namespace tritium::gpu
