// Turns functions into FunctionPlans: frame slots for every value, decoded
// attributes, precomputed constants, arity checks (so that evaluation can
// index operands without checking), and the slots that die after each op.
#include "exec_internal.h"

#include <algorithm>
#include <unordered_map>

namespace tritium::exec {
namespace {

const Attribute *findAttr(const Operation &op, const std::string &name) {
  auto it = op.attrs().find(name);
  return it == op.attrs().end() ? nullptr : &it->second;
}

int64_t needInt(const Operation &op, const std::string &name) {
  const Attribute *a = findAttr(op, name);
  if (!a || !std::holds_alternative<int64_t>(*a))
    planError(op, "needs an integer attribute '" + name + "'");
  return std::get<int64_t>(*a);
}

std::string needStr(const Operation &op, const std::string &name) {
  const Attribute *a = findAttr(op, name);
  if (!a || !std::holds_alternative<std::string>(*a))
    planError(op, "needs a string attribute '" + name + "'");
  return std::get<std::string>(*a);
}

std::string optStr(const Operation &op, const std::string &name,
                   const std::string &dflt) {
  const Attribute *a = findAttr(op, name);
  if (a && std::holds_alternative<std::string>(*a))
    return std::get<std::string>(*a);
  return dflt;
}

template <class E>
E lookupName(const Operation &op, const std::string &attr,
             const std::string &value,
             std::initializer_list<std::pair<const char *, E>> table) {
  for (auto &[name, e] : table)
    if (value == name)
      return e;
  planError(op, "unknown " + attr + " \"" + value + "\"");
}

void checkArity(const Operation &op, unsigned minIn, unsigned maxIn,
                int numOut) {
  if (op.numOperands() < minIn || op.numOperands() > maxIn)
    planError(op, "unexpected number of operands (" +
                      std::to_string(op.numOperands()) + ")");
  if (numOut >= 0 && op.numResults() != unsigned(numOut))
    planError(op, "unexpected number of results (" +
                      std::to_string(op.numResults()) + ")");
}

void checkSameCount(const Operation &op, const Value *v, int64_t n) {
  if (numElems(v->type()) != n)
    planError(op, "operand/result shapes differ (" + v->type()->str() +
                      " against " + std::to_string(n) + " elements)");
}

RValue splatConstant(const Type *t, Slot s) {
  RValue r = RValue::alloc(t);
  Slot *d = r.mutableData();
  std::fill(d, d + r.size(), s);
  return r;
}

RValue makeConstant(const Operation &op) {
  const Type *t = op.result(0)->type();
  const Attribute *a = findAttr(op, "value");
  if (!a)
    planError(op, "needs a 'value' attribute");
  double dv = 0;
  int64_t iv = 0;
  if (auto *b = std::get_if<bool>(a)) {
    dv = *b;
    iv = *b;
  } else if (auto *i = std::get_if<int64_t>(a)) {
    dv = double(*i);
    iv = *i;
  } else if (auto *d = std::get_if<double>(a)) {
    dv = *d;
    iv = fpToInt(*d, 64, true);
  } else {
    planError(op, "'value' must be a bool, an integer or a float");
  }
  Slot s;
  if (isPtrElem(t)) {
    s.u = makePtr(kNoProvenance, iv);
  } else {
    DType dt = elemDType(t);
    if (isFloat(dt))
      s.f = roundF(dv, dt);
    else
      s.i = intFmt(dt).norm(iv);
  }
  return splatConstant(t, s);
}

class Planner {
public:
  Planner(ModulePlan &mp, const Module &m) : mp_(mp), m_(m) {}

  const FunctionPlan *plan(const Function &fn) {
    const FunctionPlan *result = entryFor(fn);
    while (!pending_.empty()) {
      const Function *f = pending_.back();
      pending_.pop_back();
      planBody(*f, *mp_.functions.at(f));
    }
    return result;
  }

private:
  ModulePlan &mp_;
  const Module &m_;
  std::vector<const Function *> pending_;
  std::unordered_map<const Value *, int> slots_;
  int numSlots_ = 0;

  /// The (possibly not yet filled) plan of fn; queues it when new.
  FunctionPlan *entryFor(const Function &fn) {
    auto it = mp_.functions.find(&fn);
    if (it != mp_.functions.end())
      return it->second.get();
    auto p = std::make_unique<FunctionPlan>();
    p->fn = &fn;
    FunctionPlan *raw = p.get();
    mp_.functions.emplace(&fn, std::move(p));
    pending_.push_back(&fn);
    return raw;
  }

  void planBody(const Function &fn, FunctionPlan &fp) {
    slots_.clear();
    numSlots_ = 0;
    if (fn.body().empty())
      throw IRError("executor: function '" + fn.name() + "' has no body",
                    fn.loc());
    planBlock(fn.entry(), fp.body);
    fp.numSlots = numSlots_;
    size_t nres = fn.resultTypes().size();
    const auto &ops = fp.body.ops;
    if (nres && (ops.empty() || ops.back().code != OpCode::Return))
      throw IRError("executor: function '" + fn.name() +
                        "' must end with tt.return",
                    fn.loc());
    const_cast<Function &>(fn).walk([&](Operation *op) {
      if (op->code() == OpCode::Return && op->numOperands() != nres)
        planError(*op, "returns " + std::to_string(op->numOperands()) +
                           " values; '" + fn.name() + "' has " +
                           std::to_string(nres) + " results");
    });
  }

  int define(const Value *v) {
    int s = numSlots_++;
    slots_[v] = s;
    return s;
  }

  int use(const Operation &op, const Value *v) {
    auto it = slots_.find(v);
    if (it == slots_.end())
      planError(op, "an operand is used before its definition or comes from "
                    "another function");
    return it->second;
  }

  void planBlock(const Block &b, BlockPlan &bp) {
    bp.present = true;
    for (unsigned i = 0; i < b.numArguments(); ++i)
      bp.args.push_back(define(b.argument(i)));
    bp.ops.reserve(b.ops().size());
    for (const auto &op : b.ops()) {
      bp.ops.emplace_back();
      planOp(*op, bp.ops.back());
    }
    computeFrees(b, bp);
  }

  void planRegion(const Operation &op, unsigned i, BlockPlan &bp) {
    Region &r = op.region(i);
    if (r.empty())
      return;
    if (r.blocks().size() != 1)
      planError(op, "a region must hold exactly one block");
    planBlock(r.front(), bp);
  }

  static void collectUses(const Operation &op,
                          std::vector<const Value *> &out) {
    for (Value *v : op.operands())
      out.push_back(v);
    for (unsigned r = 0; r < op.numRegions(); ++r)
      for (const auto &b : op.region(r).blocks())
        for (const auto &inner : b->ops())
          collectUses(*inner, out);
  }

  /// Each value defined in `b` (arguments, results) is released after the
  /// last op of `b` that uses it (directly or in a nested region). Values the
  /// terminator uses stay until the block is left (the parent reads them).
  void computeFrees(const Block &b, BlockPlan &bp) {
    std::unordered_map<int, size_t> lastUse;
    std::vector<const Value *> uses;
    size_t j = 0;
    for (const auto &op : b.ops()) {
      uses.clear();
      collectUses(*op, uses);
      for (const Value *v : uses) {
        bool local = v->isBlockArg() ? v->ownerBlock() == &b
                                     : v->definingOp() &&
                                           v->definingOp()->parentBlock() == &b;
        if (local)
          lastUse[slots_.at(v)] = j;
      }
      ++j;
    }
    size_t n = bp.ops.size();
    for (auto &[slot, at] : lastUse)
      if (at + 1 < n || !b.ops().back()->hasTrait(TERM))
        bp.ops[at].freeAfter.push_back(slot);
    // Results nobody uses die at once.
    for (size_t k = 0; k < n; ++k)
      for (int s : bp.ops[k].out)
        if (!lastUse.count(s))
          bp.ops[k].freeAfter.push_back(s);
    for (auto &o : bp.ops)
      std::sort(o.freeAfter.begin(), o.freeAfter.end());
  }

  void planOp(const Operation &op, OpPlan &p) {
    p.op = &op;
    p.code = op.code();
    for (Value *v : op.operands())
      p.in.push_back(use(op, v));
    checkOp(op, p);
    // Regions see the values defined before the op, not its results.
    for (unsigned r = 0; r < op.numRegions(); ++r) {
      p.regions.emplace_back();
      planRegion(op, r, p.regions.back());
    }
    for (unsigned i = 0; i < op.numResults(); ++i)
      p.out.push_back(define(op.result(i)));
    checkRegions(op, p);
  }

  void checkElementwise(const Operation &op, unsigned numIn) {
    checkArity(op, numIn, numIn, 1);
    int64_t n = numElems(op.result(0)->type());
    for (unsigned i = 0; i < numIn; ++i) {
      if (op.code() == OpCode::Select && i == 0 &&
          numElems(op.operand(0)->type()) == 1 &&
          !op.operand(0)->type()->isTensor())
        continue;
      checkSameCount(op, op.operand(i), n);
    }
  }

  void checkOp(const Operation &op, OpPlan &p) {
    if (op.hasTrait(IBIN) || op.hasTrait(FBIN))
      return checkElementwise(op, 2);
    if (op.hasTrait(MATH1))
      return checkElementwise(op, 1);
    if (op.hasTrait(CAST)) {
      checkElementwise(op, 1);
      if (op.code() == OpCode::Bitcast) {
        const Type *from = op.operand(0)->type()->scalarType();
        const Type *to = op.result(0)->type()->scalarType();
        int wf = from->isPointer() ? 64 : bitWidth(from->dtype());
        int wt = to->isPointer() ? 64 : bitWidth(to->dtype());
        if (wf != wt)
          planError(op, "bitcast between types of different widths");
      }
      return;
    }
    switch (op.code()) {
    case OpCode::Constant:
      checkArity(op, 0, 0, 1);
      p.constant = makeConstant(op);
      return;
    case OpCode::AddPtr:
      checkElementwise(op, 2);
      return;
    case OpCode::CmpI:
      checkElementwise(op, 2);
      p.kind =
          int(lookupName<CmpIPred>(op, "predicate", needStr(op, "predicate"),
                                   {{"eq", CmpIPred::EQ},
                                    {"ne", CmpIPred::NE},
                                    {"slt", CmpIPred::SLT},
                                    {"sle", CmpIPred::SLE},
                                    {"sgt", CmpIPred::SGT},
                                    {"sge", CmpIPred::SGE},
                                    {"ult", CmpIPred::ULT},
                                    {"ule", CmpIPred::ULE},
                                    {"ugt", CmpIPred::UGT},
                                    {"uge", CmpIPred::UGE}}));
      return;
    case OpCode::CmpF:
      checkElementwise(op, 2);
      p.kind =
          int(lookupName<CmpFPred>(op, "predicate", needStr(op, "predicate"),
                                   {{"oeq", CmpFPred::OEQ},
                                    {"one", CmpFPred::ONE},
                                    {"olt", CmpFPred::OLT},
                                    {"ole", CmpFPred::OLE},
                                    {"ogt", CmpFPred::OGT},
                                    {"oge", CmpFPred::OGE},
                                    {"ueq", CmpFPred::UEQ},
                                    {"une", CmpFPred::UNE},
                                    {"ult", CmpFPred::ULT},
                                    {"ule", CmpFPred::ULE},
                                    {"ugt", CmpFPred::UGT},
                                    {"uge", CmpFPred::UGE},
                                    {"ord", CmpFPred::ORD},
                                    {"uno", CmpFPred::UNO},
                                    {"true", CmpFPred::AlwaysTrue},
                                    {"false", CmpFPred::AlwaysFalse}}));
      return;
    case OpCode::Select:
    case OpCode::Fma:
      checkElementwise(op, 3);
      return;
    case OpCode::NegF:
      return checkElementwise(op, 1);
    case OpCode::GetProgramId:
    case OpCode::GetNumPrograms:
      checkArity(op, 0, 0, 1);
      p.axis = needInt(op, "axis");
      if (p.axis < 0 || p.axis > 2)
        planError(op, "axis must be 0, 1 or 2");
      return;
    case OpCode::MakeRange: {
      checkArity(op, 0, 0, 1);
      int64_t start = needInt(op, "start"), end = needInt(op, "end");
      const Type *t = op.result(0)->type();
      if (end - start != numElems(t) || isPtrElem(t))
        planError(op, "range length does not match the result type");
      p.constant = RValue::alloc(t);
      Slot *d = p.constant.mutableData();
      IntFmt fmt = intFmt(elemDType(t));
      for (int64_t i = 0; i < end - start; ++i)
        d[i].i = fmt.norm(start + i);
      return;
    }
    case OpCode::Splat:
      checkArity(op, 1, 1, 1);
      if (numElems(op.operand(0)->type()) != 1)
        planError(op, "operand must be a scalar");
      return;
    case OpCode::Broadcast: {
      checkArity(op, 1, 1, 1);
      const Type *a = op.operand(0)->type(), *r = op.result(0)->type();
      if (a->isTensor()) {
        if (!r->isTensor() || a->rank() != r->rank())
          planError(op, "broadcast changes the rank");
        for (int i = 0; i < a->rank(); ++i)
          if (a->shape()[i] != 1 && a->shape()[i] != r->shape()[i])
            planError(op, "only dims of size 1 can grow");
      }
      return;
    }
    case OpCode::ExpandDims:
    case OpCode::Reshape:
    case OpCode::ConvertLayout: // the executor keeps no layouts: a copy
      checkArity(op, 1, 1, 1);
      checkSameCount(op, op.operand(0), numElems(op.result(0)->type()));
      return;
    case OpCode::Trans: {
      checkArity(op, 1, 1, 1);
      const Type *a = op.operand(0)->type(), *r = op.result(0)->type();
      const Attribute *o = findAttr(op, "order");
      if (!o || !std::holds_alternative<std::vector<int64_t>>(*o))
        planError(op, "needs an 'order' attribute");
      p.order = std::get<std::vector<int64_t>>(*o);
      int rank = a->isTensor() ? a->rank() : 0;
      std::vector<bool> seen(rank, false);
      if ((int)p.order.size() != rank || !r->isTensor() || r->rank() != rank)
        planError(op, "'order' must be a permutation of the dims");
      for (int i = 0; i < rank; ++i) {
        int64_t d = p.order[i];
        if (d < 0 || d >= rank || seen[d] || r->shape()[i] != a->shape()[d])
          planError(op, "'order' must be a permutation of the dims");
        seen[d] = true;
      }
      return;
    }
    case OpCode::Load: {
      checkArity(op, 1, 3, 1);
      const Type *pt = op.operand(0)->type();
      int64_t n = numElems(pt);
      if (!isPtrElem(pt))
        planError(op, "the address must be a pointer");
      for (unsigned i = 1; i < op.numOperands(); ++i)
        if (numElems(op.operand(i)->type()) != 1)
          checkSameCount(op, op.operand(i), n);
      checkSameCount(op, op.result(0), n);
      if (op.result(0)->type()->scalarType() != pt->scalarType()->pointee())
        planError(op, "result type differs from the pointee type");
      return;
    }
    case OpCode::Store:
    case OpCode::AtomicRMW:
    case OpCode::AtomicCAS: {
      bool isStore = op.code() == OpCode::Store;
      if (op.code() == OpCode::AtomicCAS)
        checkArity(op, 3, 3, 1);
      else
        checkArity(op, 2, 3, isStore ? 0 : 1);
      const Type *pt = op.operand(0)->type();
      int64_t n = numElems(pt);
      if (!isPtrElem(pt))
        planError(op, "the address must be a pointer");
      for (unsigned i = 1; i < op.numOperands(); ++i)
        if (numElems(op.operand(i)->type()) != 1)
          checkSameCount(op, op.operand(i), n);
      const Type *pointee = pt->scalarType()->pointee();
      if (op.operand(1)->type()->scalarType() != pointee)
        planError(op, "value type differs from the pointee type");
      if (!isStore)
        checkSameCount(op, op.result(0), n);
      if (op.code() == OpCode::AtomicRMW) {
        std::string k = needStr(op, "kind");
        p.kind = int(lookupName<AtomicKind>(op, "kind", k,
                                            {{"add", AtomicKind::Add},
                                             {"fadd", AtomicKind::Add},
                                             {"max", AtomicKind::Max},
                                             {"min", AtomicKind::Min},
                                             {"umax", AtomicKind::UMax},
                                             {"umin", AtomicKind::UMin},
                                             {"and", AtomicKind::And},
                                             {"or", AtomicKind::Or},
                                             {"xor", AtomicKind::Xor},
                                             {"xchg", AtomicKind::Xchg}}));
        bool isF = isFloat(pointee->dtype());
        AtomicKind ak = AtomicKind(p.kind);
        if (isF && ak != AtomicKind::Add && ak != AtomicKind::Max &&
            ak != AtomicKind::Min && ak != AtomicKind::Xchg)
          planError(op, "atomic '" + k + "' needs an integer type");
      }
      return;
    }
    case OpCode::Reduce: {
      checkArity(op, 1, 1, 1);
      const Type *a = op.operand(0)->type(), *r = op.result(0)->type();
      if (!a->isTensor())
        planError(op, "operand must be a tensor");
      p.axis = needInt(op, "axis");
      if (p.axis < 0 || p.axis >= a->rank())
        planError(op, "axis out of range");
      std::string k = needStr(op, "kind");
      p.kind = int(lookupName<ReduceKind>(op, "kind", k,
                                          {{"sum", ReduceKind::Sum},
                                           {"prod", ReduceKind::Prod},
                                           {"max", ReduceKind::Max},
                                           {"min", ReduceKind::Min},
                                           {"argmax", ReduceKind::ArgMax},
                                           {"argmin", ReduceKind::ArgMin},
                                           {"xor_sum", ReduceKind::XorSum}}));
      checkSameCount(op, op.result(0), a->numElements() / a->shape()[p.axis]);
      ReduceKind rk = ReduceKind(p.kind);
      if (isPtrElem(a) || isPtrElem(r))
        planError(op, "cannot reduce pointers");
      if (rk == ReduceKind::XorSum && isFloat(elemDType(a)))
        planError(op, "xor_sum needs integers");
      bool arg = rk == ReduceKind::ArgMax || rk == ReduceKind::ArgMin;
      if (arg && !isInteger(elemDType(r)))
        planError(op, "argmax/argmin give integers");
      if (!arg && isFloat(elemDType(a)) != isFloat(elemDType(r)))
        planError(op, "result element type differs from the operand's");
      return;
    }
    case OpCode::Dot: {
      checkArity(op, 3, 3, 1);
      const Type *a = op.operand(0)->type(), *b = op.operand(1)->type(),
                 *c = op.operand(2)->type(), *d = op.result(0)->type();
      auto is2d = [](const Type *t) { return t->isTensor() && t->rank() == 2; };
      if (!is2d(a) || !is2d(b) || !is2d(c) || !is2d(d) ||
          a->shape()[1] != b->shape()[0] || c->shape()[0] != a->shape()[0] ||
          c->shape()[1] != b->shape()[1] || c->shape() != d->shape() ||
          isPtrElem(a) || isPtrElem(b) || isPtrElem(c) ||
          elemDType(c) != elemDType(d))
        planError(op, "expects a: MxK, b: KxN, acc and result: MxN");
      p.kind = int(lookupName<DotPrecision>(
          op, "input_precision", optStr(op, "input_precision", "ieee"),
          {{"tf32", DotPrecision::TF32},
           {"tf32x3", DotPrecision::TF32x3},
           {"ieee", DotPrecision::IEEE}}));
      return;
    }
    case OpCode::Call: {
      std::string name = needStr(op, "callee");
      const Function *callee = m_.lookup(name);
      if (!callee)
        planError(op, "no function named '" + name + "' in the module");
      if (callee->numArgs() != op.numOperands() ||
          callee->resultTypes().size() != op.numResults())
        planError(op, "arguments or results do not match '" + name + "'");
      p.callee = entryFor(*callee);
      return;
    }
    case OpCode::Return:
    case OpCode::Yield:
      checkArity(op, 0, ~0u, 0);
      return;
    case OpCode::Condition:
      checkArity(op, 1, ~0u, 0);
      if (numElems(op.operand(0)->type()) != 1)
        planError(op, "the condition must be a scalar");
      return;
    case OpCode::For:
      checkArity(op, 3, ~0u, int(op.numOperands()) - 3);
      for (unsigned i = 0; i < 3; ++i)
        if (!op.operand(i)->type()->isScalar() ||
            !isInteger(op.operand(i)->type()->dtype()))
          planError(op, "bounds and step must be scalar integers");
      if (op.numRegions() != 1)
        planError(op, "needs one region");
      return;
    case OpCode::If:
      checkArity(op, 1, 1, -1);
      if (numElems(op.operand(0)->type()) != 1)
        planError(op, "the condition must be a scalar");
      if (op.numRegions() != 2)
        planError(op, "needs two regions");
      return;
    case OpCode::While:
      checkArity(op, 0, ~0u, -1);
      if (op.numRegions() != 2)
        planError(op, "needs two regions");
      return;
    case OpCode::Print: {
      checkArity(op, 0, ~0u, 0);
      p.text = optStr(op, "prefix", "");
      const Attribute *h = findAttr(op, "hex");
      p.hex = h && std::holds_alternative<bool>(*h) && std::get<bool>(*h);
      return;
    }
    case OpCode::GpuBarrier:
      checkArity(op, 0, 0, 0);
      return;
    case OpCode::Assert:
      checkArity(op, 1, ~0u, 0);
      p.text = optStr(op, "message", "");
      return;
    case OpCode::NumOps:
      break;
    }
    planError(op, "unknown op");
  }

  /// Block arguments and terminators of structured control flow.
  void checkRegions(const Operation &op, OpPlan &p) {
    auto terminatorArity = [&](const BlockPlan &b, OpCode code) -> size_t {
      if (b.ops.empty() || b.ops.back().code != code)
        planError(op,
                  std::string("a region must end with ") + opInfo(code).name);
      return b.ops.back().in.size() - (code == OpCode::Condition ? 1 : 0);
    };
    switch (op.code()) {
    case OpCode::For: {
      const BlockPlan &body = p.regions[0];
      size_t iters = op.numOperands() - 3;
      if (!body.present || body.args.size() != iters + 1 ||
          terminatorArity(body, OpCode::Yield) != iters)
        planError(op, "body must take (iv, iters...) and yield the iters");
      return;
    }
    case OpCode::If:
      for (unsigned r = 0; r < 2; ++r) {
        const BlockPlan &b = p.regions[r];
        if (!b.present) {
          if (r == 0 || op.numResults() != 0)
            planError(op, "missing then/else block");
          continue;
        }
        if (!b.args.empty() ||
            terminatorArity(b, OpCode::Yield) != op.numResults())
          planError(op, "each branch must yield the op's results");
      }
      return;
    case OpCode::While: {
      const BlockPlan &before = p.regions[0], &after = p.regions[1];
      if (!before.present || !after.present ||
          before.args.size() != op.numOperands())
        planError(op, "'before' must take the inits");
      size_t fwd = terminatorArity(before, OpCode::Condition);
      if (fwd != op.numResults() || after.args.size() != fwd ||
          terminatorArity(after, OpCode::Yield) != op.numOperands())
        planError(op, "condition/yield do not match the op's values");
      return;
    }
    default:
      return;
    }
  }
};

} // namespace

const FunctionPlan *planFunction(ModulePlan &mp, const Module &m,
                                 const Function &fn) {
  Planner p(mp, m);
  return p.plan(fn);
}

} // namespace tritium::exec
