// --licm: loop-invariant code motion out of scf.for and scf.while.
//
// Outline:
//  1. Visit loops innermost first, so that an op hoisted out of an inner
//     loop can leave the outer one too.
//  2. In program order over the loop's body blocks, move an op in front of
//     the loop when it is pure, has no regions, cannot trap, and all its
//     operands are defined outside the loop (ops hoisted earlier count as
//     outside, as they now are).
// Ops nested in an scf.if of the body stay: only the body's own ops move.
// Integer division and remainder move only with a constant divisor that
// cannot trap, since the loop may run zero times.
//
// --licm-scalars, in the default pipeline, moves only ops whose results are
// scalars, as Triton's pipeline hoists a row loop's `3.0 / n_cols` (Liger's
// PolyNorm backward: three divisions an iteration, each a reciprocal and its
// range fix-ups in SASS, which ptxas leaves in the loop). A hoisted scalar
// costs at most a register across the loop; a hoisted tensor costs one a
// thread per element, which a loop near its register limit cannot afford
// (ptxas rematerializes what is cheap to recompute), so tensors stay.
#include "tritium/transforms/passes.h"
#include "tritium/transforms/rewrite.h"

namespace tritium {
namespace {

bool canHoist(const Operation *op, const Operation *loop, bool scalarsOnly) {
  if (!op->hasTrait(PURE) || op->numRegions() != 0 || op->hasTrait(TERM))
    return false;
  if (scalarsOnly)
    for (Value *r : op->results())
      if (r->type()->isTensor())
        return false;
  for (Value *v : op->operands())
    if (isDefinedInside(v, loop))
      return false;
  return isSpeculatable(op);
}

int64_t hoistFrom(Operation *loop, bool scalarsOnly) {
  Block *outer = loop->parentBlock();
  auto pos = outer->find(loop);
  int64_t hoisted = 0;
  for (unsigned r = 0; r < loop->numRegions(); ++r)
    for (auto &block : loop->region(r).blocks()) {
      auto &ops = block->ops();
      for (auto it = ops.begin(); it != ops.end();) {
        Operation *op = (it++)->get();
        if (canHoist(op, loop, scalarsOnly)) {
          outer->insert(pos, op->detach());
          ++hoisted;
        }
      }
    }
  return hoisted;
}

int64_t visitRegion(Region &region, bool scalarsOnly) {
  // Innermost loops first, so that an op hoisted out of an inner loop can
  // leave the outer one too.
  int64_t hoisted = 0;
  walkRegionOpsInnermostFirst(region, [&](Operation *op) {
    if (op->code() == OpCode::For || op->code() == OpCode::While)
      hoisted += hoistFrom(op, scalarsOnly);
  });
  return hoisted;
}

} // namespace

void licm(Module &m, const PipelineOptions &, PassStats &stats) {
  int64_t hoisted = 0;
  for (auto &f : m.functions())
    hoisted += visitRegion(f->body(), /*scalarsOnly=*/false);
  stats.add("licm.hoisted", hoisted);
}

void licmScalars(Module &m, const PipelineOptions &, PassStats &stats) {
  int64_t hoisted = 0;
  for (auto &f : m.functions())
    hoisted += visitRegion(f->body(), /*scalarsOnly=*/true);
  stats.add("licm-scalars.hoisted", hoisted);
}

} // namespace tritium
