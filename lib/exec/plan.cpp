// Turns functions into FunctionPlans: frame slots for every value, decoded
// attributes, precomputed constants, and the slots that die after each op.
//
// The module has passed the verifier (execute() runs it first), so arity,
// attribute kinds and values, types and dominance hold here; the planner
// checks none of them again and only decodes what evaluation needs.
#include "exec_internal.h"

#include <algorithm>
#include <unordered_map>

namespace tritium::exec {
namespace {

std::string optStr(const Operation &op, const std::string &name,
                   const std::string &dflt) {
  return op.hasAttr(name) ? op.strAttr(name) : dflt;
}

/// The enum value of an attribute's text. The verifier allowed only the
/// names listed, so a miss means the two tables differ: a bug of ours.
template <class E>
E lookupName(const Operation &op, const std::string &attr,
             std::initializer_list<std::pair<const char *, E>> table) {
  const std::string &value = op.strAttr(attr);
  for (auto &[name, e] : table)
    if (value == name)
      return e;
  throw InternalError(std::string("executor: '") + op.name() + "' has " +
                      attr + " \"" + value +
                      "\", which the verifier allows but the executor does "
                      "not know");
}

RValue splatConstant(const Type *t, Slot s) {
  RValue r = RValue::alloc(t);
  Slot *d = r.mutableData();
  std::fill(d, d + r.size(), s);
  return r;
}

RValue makeConstant(const Operation &op, PointerTable &pointers) {
  const Type *t = op.result(0)->type();
  const Attribute &a = op.attrs().at("value");
  double dv = 0;
  int64_t iv = 0;
  if (auto *b = std::get_if<bool>(&a)) {
    dv = *b;
    iv = *b;
  } else if (auto *i = std::get_if<int64_t>(&a)) {
    dv = double(*i);
    iv = *i;
  } else {
    // The verifier allows bool, int or float only.
    dv = std::get<double>(a);
    iv = fpToInt(dv, 64, true);
  }
  Slot s;
  if (isPtrElem(t)) {
    s.u = makePtr(pointers, kNoProvenance, uint64_t(iv));
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
    planBlock(fn.entry(), fp.body);
    fp.numSlots = numSlots_;
  }

  int define(const Value *v) {
    int s = numSlots_++;
    slots_[v] = s;
    return s;
  }

  /// Operands dominate their uses (verified), so they have slots by now.
  int use(const Value *v) { return slots_.at(v); }

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

  /// An empty region (the absent else of an scf.if) stays not present.
  void planRegion(const Operation &op, unsigned i, BlockPlan &bp) {
    Region &r = op.region(i);
    if (!r.empty())
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
      p.in.push_back(use(v));
    decodeOp(op, p);
    // Regions see the values defined before the op, not its results.
    for (unsigned r = 0; r < op.numRegions(); ++r) {
      p.regions.emplace_back();
      planRegion(op, r, p.regions.back());
    }
    for (unsigned i = 0; i < op.numResults(); ++i)
      p.out.push_back(define(op.result(i)));
  }

  /// What evaluation reads from the op's attributes, decoded once.
  void decodeOp(const Operation &op, OpPlan &p) {
    switch (op.code()) {
    case OpCode::Constant:
      p.constant = makeConstant(op, *mp_.pointers);
      return;
    case OpCode::CmpI:
      p.kind = int(lookupName<CmpIPred>(op, "predicate",
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
      p.kind = int(lookupName<CmpFPred>(op, "predicate",
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
                                         {"uge", CmpFPred::UGE}}));
      return;
    case OpCode::GetProgramId:
    case OpCode::GetNumPrograms:
      p.axis = op.intAttr("axis");
      return;
    case OpCode::MakeRange: {
      int64_t start = op.intAttr("start"), end = op.intAttr("end");
      const Type *t = op.result(0)->type();
      p.constant = RValue::alloc(t);
      Slot *d = p.constant.mutableData();
      IntFmt fmt = intFmt(elemDType(t));
      for (int64_t i = 0; i < end - start; ++i)
        d[i].i = fmt.norm(start + i);
      return;
    }
    case OpCode::Trans:
      p.order = op.arrayAttr("order");
      return;
    case OpCode::AtomicRMW:
      // Signedness comes from the element type (max on u32 is unsigned), as
      // in the language; there are no separate unsigned or float kinds.
      p.kind = int(lookupName<AtomicKind>(op, "kind",
                                          {{"add", AtomicKind::Add},
                                           {"max", AtomicKind::Max},
                                           {"min", AtomicKind::Min},
                                           {"and", AtomicKind::And},
                                           {"or", AtomicKind::Or},
                                           {"xor", AtomicKind::Xor},
                                           {"xchg", AtomicKind::Xchg}}));
      return;
    case OpCode::Reduce:
      p.axis = op.intAttr("axis");
      p.kind = int(lookupName<ReduceKind>(op, "kind",
                                          {{"sum", ReduceKind::Sum},
                                           {"prod", ReduceKind::Prod},
                                           {"max", ReduceKind::Max},
                                           {"min", ReduceKind::Min},
                                           {"argmax", ReduceKind::ArgMax},
                                           {"argmin", ReduceKind::ArgMin},
                                           {"xor_sum", ReduceKind::XorSum}}));
      return;
    case OpCode::Dot:
      p.kind = op.hasAttr("input_precision")
                   ? int(lookupName<DotPrecision>(
                         op, "input_precision",
                         {{"tf32", DotPrecision::TF32},
                          {"tf32x3", DotPrecision::TF32x3},
                          {"ieee", DotPrecision::IEEE}}))
                   : int(DotPrecision::IEEE);
      return;
    case OpCode::Call: {
      // The verifier resolved the callee against this module.
      const Function *callee = m_.lookup(op.strAttr("callee"));
      if (!callee)
        throw InternalError(std::string("executor: '") + op.name() +
                            "' calls an undefined function");
      p.callee = entryFor(*callee);
      return;
    }
    case OpCode::Print: {
      p.text = optStr(op, "prefix", "");
      p.hex = op.hasAttr("hex") && op.boolAttr("hex");
      return;
    }
    case OpCode::Assert:
      p.text = optStr(op, "message", "");
      return;
    case OpCode::InlineAsm:
      throw ExecutionError("tl.inline_asm_elementwise at " +
                               locStr(op.loc()) +
                               " needs a GPU: its PTX text cannot run on the "
                               "CPU executor (launch the kernel on CUDA "
                               "tensors)",
                           op.loc());
    case OpCode::LocalAlloc:
    case OpCode::LocalDealloc:
    case OpCode::LocalLoad:
    case OpCode::LocalStore:
    case OpCode::MemDescIndex:
    case OpCode::MemDescTrans:
    case OpCode::AsyncCopyGlobalToLocal:
    case OpCode::AsyncCommitGroup:
    case OpCode::AsyncWait:
    case OpCode::InitBarrier:
    case OpCode::InvalBarrier:
    case OpCode::AsyncTMACopyGlobalToLocal:
    case OpCode::AsyncTMACopyLocalToGlobal:
    case OpCode::FenceAsyncShared:
    case OpCode::BarrierExpect:
    case OpCode::ArriveBarrier:
    case OpCode::WaitBarrier:
    case OpCode::GPUBarrier:
    case OpCode::WarpGroupDot:
      return planSharedMemoryOp(op, p);
    default:
      // Everything else is evaluated from its operand and result types.
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
