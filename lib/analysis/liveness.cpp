// Live ranges over structured IR (see liveness.h).
#include "tritium/analysis/liveness.h"

#include <algorithm>

namespace tritium {

Liveness::Liveness(Function &f) {
  number(f.entry());
  f.walk([&](Operation *op) {
    for (Value *v : op->operands())
      users_[v].push_back(op);
  });
}

void Liveness::number(Block &b) {
  LiveRange &br = blocks_[&b];
  br.begin = next_++;
  for (auto &op : b.ops()) {
    LiveRange r;
    r.begin = next_++;
    for (unsigned i = 0; i < op->numRegions(); ++i)
      for (auto &inner : op->region(i).blocks())
        number(*inner);
    r.end = next_++;
    ops_[op.get()] = r;
  }
  br.end = next_++;
}

LiveRange Liveness::opRange(const Operation &op) const {
  auto it = ops_.find(&op);
  if (it == ops_.end())
    throw InternalError("liveness: '" + std::string(op.name()) +
                        "' is not in the function analysed");
  return it->second;
}

LiveRange Liveness::valueRange(Value *v) const {
  int def = v->isBlockArg() ? blocks_.at(v->ownerBlock()).begin
                            : opRange(*v->definingOp()).begin;
  LiveRange r{def, def};
  auto it = users_.find(v);
  if (it == users_.end())
    return r;
  for (const Operation *u : it->second) {
    r.end = std::max(r.end, opRange(*u).end);
    // The next iteration of a loop around the use (but not around the
    // definition) uses the value again: it stays live to the loop's end.
    for (const Operation *p = u->parentOp(); p; p = p->parentOp()) {
      if (p->code() != OpCode::For && p->code() != OpCode::While)
        continue;
      LiveRange loop = opRange(*p);
      if (def < loop.begin || def > loop.end)
        r.end = std::max(r.end, loop.end);
    }
  }
  return r;
}

} // namespace tritium
