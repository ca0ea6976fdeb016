// Pointer provenance: see pointer_provenance.h.
#include "tritium/analysis/pointer_provenance.h"

namespace tritium {

namespace {

void add(PointerSources &into, const PointerSources &from) {
  into.args.insert(from.args.begin(), from.args.end());
  into.unknown = into.unknown || from.unknown;
}

PointerSources unknownSources() {
  PointerSources s;
  s.unknown = true;
  return s;
}

/// Operand k of `op`'s terminator, or null.
Value *terminatorOperand(Block &b, unsigned k) {
  Operation *t = b.terminator();
  return t && k < t->numOperands() ? t->operand(k) : nullptr;
}

} // namespace

PointerSources PointerProvenance::of(Value *v) {
  if (auto it = memo_.find(v); it != memo_.end())
    return it->second;
  if (!visiting_.insert(v).second) {
    ++cuts_; // a cycle back to v: the other way into the loop decides
    return {};
  }
  int cutsBefore = cuts_;
  PointerSources s = resolve(v);
  visiting_.erase(v);
  if (cuts_ == cutsBefore)
    memo_[v] = s;
  return s;
}

PointerSources PointerProvenance::resolve(Value *v) {
  if (!v->type()->scalarType()->isPointer())
    return unknownSources();
  if (v->isBlockArg())
    return blockArgument(v);
  Operation *op = v->definingOp();
  if (!op)
    return unknownSources();
  // Data movement keeps each pointer's value, so its provenance too.
  if (op->hasTrait(MOVE))
    return of(op->operand(0));
  PointerSources s;
  switch (op->code()) {
  case OpCode::AddPtr:
  case OpCode::Splat:
  case OpCode::Bitcast:
    return of(op->operand(0));
  case OpCode::Select:
    add(s, of(op->operand(1)));
    add(s, of(op->operand(2)));
    return s;
  case OpCode::For:
    return of(op->region(0).front().argument(v->index() + 1));
  case OpCode::If:
    for (unsigned r = 0; r < op->numRegions(); ++r) {
      Value *y = op->region(r).empty()
                     ? nullptr
                     : terminatorOperand(op->region(r).front(), v->index());
      add(s, y ? of(y) : unknownSources());
    }
    return s;
  case OpCode::While: {
    // The condition's operands: the flag, then the values forwarded.
    Value *c = terminatorOperand(op->region(0).front(), v->index() + 1);
    return c ? of(c) : unknownSources();
  }
  default:
    return unknownSources();
  }
}

PointerSources PointerProvenance::blockArgument(Value *v) {
  Block *b = v->ownerBlock();
  Operation *parent = b->parentOp();
  unsigned i = v->index();
  PointerSources s;
  if (!parent) {
    if (b != &fn_.entry())
      return unknownSources();
    s.args.insert(i);
    return s;
  }
  if (parent->code() == OpCode::For && i > 0) {
    Value *y = terminatorOperand(*b, i - 1);
    if (!y || 3 + i - 1 >= parent->numOperands())
      return unknownSources();
    add(s, of(parent->operand(3 + i - 1)));
    add(s, of(y));
    return s;
  }
  if (parent->code() == OpCode::While) {
    Block &before = parent->region(0).front();
    Block &after = parent->region(1).front();
    if (b == &before) {
      Value *y = terminatorOperand(after, i);
      if (!y || i >= parent->numOperands())
        return unknownSources();
      add(s, of(parent->operand(i)));
      add(s, of(y));
      return s;
    }
    Value *c = terminatorOperand(before, i + 1);
    return c ? of(c) : unknownSources();
  }
  return unknownSources();
}

} // namespace tritium
