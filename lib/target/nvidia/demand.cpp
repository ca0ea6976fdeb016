// Which registers of each tensor value the kernel reads (Emitter::demanded).
//
// A vectorized access reads the pointer (and mask) of the first element of
// each vector only; the other elements' pointers are computed for nothing.
// ptxas removes such dead code in straight-line code, but not a dead cycle:
// a loop-carried tensor of pointers (the matmul's a_ptrs, advanced every
// iteration and read once per 16-byte vector) keeps every element's 64-bit
// increment alive. So the emitter computes, before printing, the registers
// each value really needs, backwards from the ops that read them, through
// elementwise ops, tt.addptr and scf.for's carried values (iterated to a
// fixed point around loops); elementwise ops, tt.addptr and the loop's
// copies skip the others. Every op not modelled here demands all registers
// of its operands, so the analysis only ever removes work whose result
// nobody reads.
#include "emitter.h"

namespace tritium::nvidia {

namespace {

struct Demand {
  Emitter &e;
  std::map<Value *, std::vector<char>> &d;
  bool changed = false;

  std::vector<char> &of(Value *v) {
    auto it = d.find(v);
    if (it == d.end())
      it = d.emplace(v, std::vector<char>(Emitter::numRegs(v->type()), 0))
               .first;
    return it->second;
  }
  void mark(Value *v, int r) {
    if (!v->type()->isTensor())
      return;
    std::vector<char> &m = of(v);
    if (r < (int)m.size() && !m[r]) {
      m[r] = 1;
      changed = true;
    }
  }
  void all(Value *v) {
    if (!v->type()->isTensor())
      return;
    for (int r = 0; r < Emitter::numRegs(v->type()); ++r)
      mark(v, r);
  }
  void leaders(Value *v, int width) {
    if (!v || !v->type()->isTensor())
      return;
    int n = Emitter::numRegs(v->type());
    for (int r = 0; r < n; r += std::max(width, 1))
      mark(v, r);
  }
  bool isDemanded(Value *v, int r) {
    auto it = d.find(v);
    return it != d.end() && r < (int)it->second.size() && it->second[r];
  }

  /// Elementwise: register r of the result is computed (as register rep[r],
  /// the first one known equal) from register rep[r] of every operand.
  void elementwise(Operation &op) {
    Value *res = op.result(0);
    if (!res->type()->isTensor()) {
      for (Value *o : op.operands())
        all(o);
      return;
    }
    std::vector<int> rep = op.code() == OpCode::AddPtr
                               ? std::vector<int>()
                               : e.equalRegisters(res);
    int n = Emitter::numRegs(res->type());
    for (int r = 0; r < n; ++r) {
      if (!isDemanded(res, r))
        continue;
      int q = rep.empty() ? r : rep[r];
      mark(res, q);
      for (Value *o : op.operands()) {
        if (!o->type()->isTensor())
          continue;
        if (Emitter::numRegs(o->type()) != n)
          all(o);
        else
          mark(o, q);
      }
    }
  }

  /// The elementwise ops whose lowering computes only demanded registers
  /// (emit_arith.cpp's and emit_convert.cpp's per-register loops); the
  /// fp32 -> 16-bit truncation converts pairs, so it reads both.
  static bool skipsUndemanded(const Operation &op) {
    if (op.numResults() != 1)
      return false;
    if (op.hasTrait(IBIN) || op.hasTrait(FBIN) || op.hasTrait(MATH1))
      return true;
    switch (op.code()) {
    case OpCode::CmpI:
    case OpCode::CmpF:
    case OpCode::Select:
    case OpCode::NegF:
    case OpCode::Fma:
      return true;
    case OpCode::TruncF:
      return false;
    default:
      return op.hasTrait(CAST);
    }
  }

  void forLoop(Operation &op) {
    Block &body = op.region(0).front();
    Operation *y = body.terminator();
    for (unsigned i = 0; i < op.numResults(); ++i) {
      Value *arg = body.argument(1 + i), *res = op.result(i);
      if (!arg->type()->isTensor())
        continue;
      for (int r = 0; r < Emitter::numRegs(arg->type()); ++r)
        if (isDemanded(arg, r) || isDemanded(res, r)) {
          mark(arg, r);
          mark(res, r);
          mark(y->operand(i), r);
          mark(op.operand(3 + i), r);
        }
    }
    for (unsigned i = 0; i < 3; ++i)
      all(op.operand(i));
  }

  void visit(Operation &op) {
    switch (op.code()) {
    case OpCode::Yield:
      // scf.for's yield: forLoop. Elsewhere (if/while): everything.
      if (op.parentOp() && op.parentOp()->code() == OpCode::For)
        return;
      for (Value *o : op.operands())
        all(o);
      return;
    case OpCode::For:
      forLoop(op);
      return;
    case OpCode::AddPtr:
      elementwise(op);
      return;
    case OpCode::Load: {
      Value *ptr = op.operand(0);
      Value *mask = op.numOperands() > 1 ? op.operand(1) : nullptr;
      int v = globalVectorWidth(
          e, ptr, mask, gpu::storageBytes(op.result(0)->type()->scalarType()));
      leaders(ptr, v);
      leaders(mask, v);
      if (op.numOperands() > 2)
        all(op.operand(2));
      return;
    }
    case OpCode::Store: {
      Value *ptr = op.operand(0), *val = op.operand(1);
      Value *mask = op.numOperands() > 2 ? op.operand(2) : nullptr;
      int v = globalVectorWidth(e, ptr, mask,
                                gpu::storageBytes(val->type()->scalarType()));
      leaders(ptr, v);
      leaders(mask, v);
      all(val);
      return;
    }
    case OpCode::AtomicRMW: {
      int v = atomicVectorWidth(e, op);
      leaders(op.operand(0), v);
      if (op.numOperands() > 2)
        leaders(op.operand(2), v);
      all(op.operand(1));
      return;
    }
    case OpCode::AsyncCopyGlobalToLocal: {
      int v = asyncCopyWidth(e, op);
      leaders(op.operand(0), v);
      if (op.numOperands() > 2)
        leaders(op.operand(2), v);
      if (op.numOperands() > 3)
        all(op.operand(3));
      return;
    }
    default:
      if (skipsUndemanded(op)) {
        elementwise(op);
        return;
      }
      for (Value *o : op.operands())
        all(o);
      return;
    }
  }

  void block(Block &b) {
    for (auto it = b.ops().rbegin(); it != b.ops().rend(); ++it) {
      Operation &op = **it;
      // Uses inside come after the op's own rule for loops: a loop's body
      // first (its demands reach the carried values), then the loop.
      if (op.code() == OpCode::For) {
        forLoop(op);
        block(op.region(0).front());
        forLoop(op);
        continue;
      }
      visit(op);
      for (unsigned i = 0; i < op.numRegions(); ++i)
        for (auto &blk : op.region(i).blocks())
          block(*blk);
    }
  }
};

} // namespace

void Emitter::computeDemand() {
  Demand dm{*this, demand_};
  int rounds = 0;
  do {
    dm.changed = false;
    dm.block(fn.entry());
    demandComputed_ = true;
    if (++rounds > 64)
      throw InternalError("ptx emission: the register demand of '" +
                          fn.name() + "' did not converge");
  } while (dm.changed);
}

bool Emitter::demanded(Value *v, int r) const {
  if (!v->type()->isTensor())
    return true;
  auto it = demand_.find(v);
  // A value the analysis never saw (made during emission) is computed.
  if (it == demand_.end())
    return !demandComputed_;
  return r < (int)it->second.size() && it->second[r];
}

} // namespace tritium::nvidia
