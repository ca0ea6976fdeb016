// Rewriting utilities shared by the passes (see rewrite.h).
#include "tritium/transforms/rewrite.h"
#include "tritium/transforms/fold.h"

namespace tritium {

void ValueReplacer::replace(Value *from, Value *to) {
  to = lookup(to);
  if (from != to)
    map_[from] = to;
}

Value *ValueReplacer::lookup(Value *v) const {
  // Chains are short: a replacement's target is itself looked up when it is
  // recorded, so only later replacements of the target extend them.
  for (auto it = map_.find(v); it != map_.end(); it = map_.find(v))
    v = it->second;
  return v;
}

void ValueReplacer::remapOperands(Operation *op) const {
  if (map_.empty())
    return;
  for (Value *&v : op->operands())
    v = lookup(v);
}

void ValueReplacer::applyTo(Function &f) const {
  if (map_.empty())
    return;
  walkOps(f.body(), [&](Operation *op) { remapOperands(op); });
}

void walkOps(Region &region, const std::function<void(Operation *)> &fn) {
  for (auto &block : region.blocks())
    for (auto &op : block->ops()) {
      fn(op.get());
      for (unsigned i = 0; i < op->numRegions(); ++i)
        walkOps(op->region(i), fn);
    }
}

std::vector<Operation *> collectOps(Function &f) {
  std::vector<Operation *> ops;
  walkOps(f.body(), [&](Operation *op) { ops.push_back(op); });
  return ops;
}

std::unordered_map<Value *, unsigned> useCounts(Function &f) {
  std::unordered_map<Value *, unsigned> counts;
  walkOps(f.body(), [&](Operation *op) {
    for (Value *v : op->operands())
      ++counts[v];
  });
  return counts;
}

namespace {

/// Walks `region` in reverse program order (an op's regions before the op),
/// erasing the ops for which `shouldErase` says so.
int64_t eraseBackwards(Region &region,
                       const std::function<bool(Operation *)> &shouldErase) {
  int64_t erased = 0;
  for (auto b = region.blocks().rbegin(); b != region.blocks().rend(); ++b) {
    auto &ops = (*b)->ops();
    for (auto it = ops.end(); it != ops.begin();) {
      --it;
      Operation *op = it->get();
      for (unsigned r = op->numRegions(); r-- > 0;)
        erased += eraseBackwards(op->region(r), shouldErase);
      if (shouldErase(op)) {
        it = ops.erase(it); // destroys the op
        ++erased;
      }
    }
  }
  return erased;
}

} // namespace

int64_t eraseDeadPureOps(Function &f) {
  auto counts = useCounts(f);
  // Users come after their operands' definitions in program order, so one
  // backward sweep sees every op only after all of its users.
  return eraseBackwards(f.body(), [&](Operation *op) {
    if (!op->hasTrait(PURE) || op->numRegions() != 0)
      return false;
    for (unsigned i = 0; i < op->numResults(); ++i) {
      auto c = counts.find(op->result(i));
      if (c != counts.end() && c->second > 0)
        return false;
    }
    for (Value *v : op->operands())
      --counts[v];
    return true;
  });
}

int64_t eraseOps(Function &f, const std::unordered_set<Operation *> &ops) {
  if (ops.empty())
    return 0;
  return eraseBackwards(f.body(),
                        [&](Operation *op) { return ops.count(op) != 0; });
}

bool isInside(const Operation *op, const Region &region) {
  for (Block *b = op->parentBlock(); b; ) {
    Region *r = b->parentRegion();
    if (r == &region)
      return true;
    Operation *parent = r ? r->parentOp() : nullptr;
    if (!parent)
      return false;
    b = parent->parentBlock();
  }
  return false;
}

void walkRegionOpsInnermostFirst(Region &region,
                                 const std::function<void(Operation *)> &fn) {
  for (auto &block : region.blocks()) {
    std::vector<Operation *> ops;
    for (auto &op : block->ops())
      if (op->numRegions() != 0)
        ops.push_back(op.get());
    for (Operation *op : ops) {
      for (unsigned r = 0; r < op->numRegions(); ++r)
        walkRegionOpsInnermostFirst(op->region(r), fn);
      fn(op);
    }
  }
}

bool isDefinedInside(const Value *v, const Operation *op) {
  const Block *b = v->isBlockArg() ? v->ownerBlock() : v->definingOp()->parentBlock();
  while (b) {
    const Operation *parent = b->parentOp();
    if (parent == op)
      return true;
    b = parent ? parent->parentBlock() : nullptr;
  }
  return false;
}

bool isSpeculatable(const Operation *op) {
  switch (op->code()) {
  case OpCode::DivSI:
  case OpCode::RemSI:
  case OpCode::DivUI:
  case OpCode::RemUI: {
    auto d = getConstant(op->operand(1));
    if (!d || d->bits == 0)
      return false;
    bool isSignedOp = op->code() == OpCode::DivSI || op->code() == OpCode::RemSI;
    return !(isSignedOp && d->sext() == -1);
  }
  default:
    return true;
  }
}

} // namespace tritium
