// --canonicalize: constant folding and local simplifications.
//
// Outline:
//  1. Walk every function in program order. Before looking at an op, map its
//     operands through the replacements made so far (ValueReplacer).
//  2. Rewrite the op when one rule applies; the replacement (a new constant,
//     an operand, a simpler op) takes the op's location. The op itself stays
//     in place, dead, except scf.if/scf.for, which move to a graveyard.
//  3. After the walk, apply the replacements everywhere, erase dead pure ops
//     and the graveyard; repeat from 1 until a walk changes nothing.
#include "tritium/transforms/fold.h"
#include "tritium/transforms/passes.h"
#include "tritium/transforms/rewrite.h"

namespace tritium {
namespace {

bool isCast(OpCode c) { return (opInfo(c).traits & CAST) != 0; }

/// cast2(cast1(x)) == x whenever cast2's result type is x's type.
bool roundTripsExactly(OpCode inner, OpCode outer) {
  switch (outer) {
  case OpCode::TruncI:
    return inner == OpCode::ExtSI || inner == OpCode::ExtUI;
  case OpCode::TruncF:
    return inner == OpCode::ExtF;
  case OpCode::Bitcast:
    return inner == OpCode::Bitcast;
  case OpCode::PtrToInt:
    return inner == OpCode::IntToPtr;
  default:
    return false;
  }
}

/// Casts whose composition with themselves is one cast of the same kind.
bool composesWithItself(OpCode c) {
  return c == OpCode::ExtSI || c == OpCode::ExtUI || c == OpCode::TruncI ||
         c == OpCode::ExtF || c == OpCode::Bitcast;
}

/// The result of a rewrite: replace the op's result by `value`, or by a new
/// constant `constant` of the result type, or by the result of `newOp`.
struct Rewrite {
  Value *value = nullptr;
  std::optional<ConstValue> constant;
  std::unique_ptr<Operation> newOp;
  bool folded = false; // evaluated on constants (vs. an identity)
  explicit operator bool() const { return value || constant || newOp; }
};

Rewrite useValue(Value *v) {
  Rewrite r;
  r.value = v;
  return r;
}

Rewrite useConstant(ConstValue c, bool folded = false) {
  Rewrite r;
  r.constant = c;
  r.folded = folded;
  return r;
}

/// A zero (or all-ones) of `v`'s integer element type.
std::optional<ConstValue> intOfType(const Value *v, int64_t n) {
  const Type *st = v->type()->scalarType();
  if (!st->isScalar() || !isInteger(st->dtype()))
    return std::nullopt;
  return ConstValue::ofInt(st->dtype(), (uint64_t)n);
}

Rewrite constantOfType(const Value *v, int64_t n) {
  auto c = intOfType(v, n);
  return c ? useConstant(*c) : Rewrite();
}

/// Algebraic identities of binary integer and float ops.
Rewrite simplifyBinary(Operation *op) {
  Value *x = op->operand(0), *y = op->operand(1);
  Value *res = op->result(0);
  auto isI = [](Value *v, int64_t n) { return isConstantInt(v, n); };
  switch (op->code()) {
  case OpCode::AddI:
  case OpCode::OrI:
  case OpCode::XOrI:
    if (isI(y, 0))
      return useValue(x);
    if (isI(x, 0))
      return useValue(y);
    if (op->code() == OpCode::XOrI && x == y)
      return constantOfType(res, 0);
    if (op->code() == OpCode::OrI && x == y)
      return useValue(x);
    if (op->code() == OpCode::OrI && (isI(x, -1) || isI(y, -1)))
      return constantOfType(res, -1);
    break;
  case OpCode::SubI:
    if (isI(y, 0))
      return useValue(x);
    if (x == y)
      return constantOfType(res, 0);
    break;
  case OpCode::MulI:
    if (isI(y, 1))
      return useValue(x);
    if (isI(x, 1))
      return useValue(y);
    if (isI(x, 0) || isI(y, 0))
      return constantOfType(res, 0);
    break;
  case OpCode::DivSI:
  case OpCode::DivUI:
    if (isI(y, 1))
      return useValue(x);
    break;
  case OpCode::RemSI:
  case OpCode::RemUI:
    if (isI(y, 1))
      return constantOfType(res, 0);
    break;
  case OpCode::AndI:
    if (x == y || isI(y, -1))
      return useValue(x);
    if (isI(x, -1))
      return useValue(y);
    if (isI(x, 0) || isI(y, 0))
      return constantOfType(res, 0);
    break;
  case OpCode::ShLI:
  case OpCode::ShRSI:
  case OpCode::ShRUI:
    if (isI(y, 0))
      return useValue(x);
    break;
  case OpCode::MaxSI:
  case OpCode::MinSI:
  case OpCode::MaxUI:
  case OpCode::MinUI:
  case OpCode::MaximumF:
  case OpCode::MinimumF:
  case OpCode::MaxNumF:
  case OpCode::MinNumF:
    if (x == y)
      return useValue(x);
    break;
  // Float identities only where IEEE keeps x bit for bit: x + 0.0 turns
  // -0.0 into +0.0, and x * 0.0 is NaN for inf, so neither folds.
  case OpCode::AddF:
    if (isConstantFloat(y, -0.0))
      return useValue(x);
    if (isConstantFloat(x, -0.0))
      return useValue(y);
    break;
  case OpCode::SubF:
    if (isConstantFloat(y, 0.0))
      return useValue(x);
    break;
  case OpCode::MulF:
    if (isConstantFloat(y, 1.0))
      return useValue(x);
    if (isConstantFloat(x, 1.0))
      return useValue(y);
    break;
  case OpCode::DivF:
    if (isConstantFloat(y, 1.0))
      return useValue(x);
    break;
  case OpCode::CmpI: {
    if (x != y || !op->hasAttr("predicate"))
      break;
    auto *p = std::get_if<std::string>(&op->attrs().at("predicate"));
    if (!p)
      break;
    if (*p == "eq" || *p == "sle" || *p == "sge" || *p == "ule" || *p == "uge")
      return useConstant(ConstValue::ofBool(true));
    if (*p == "ne" || *p == "slt" || *p == "sgt" || *p == "ult" || *p == "ugt")
      return useConstant(ConstValue::ofBool(false));
    break;
  }
  case OpCode::AddPtr:
    if (isI(y, 0) && x->type() == res->type())
      return useValue(x);
    break;
  default:
    break;
  }
  return {};
}

Rewrite simplifyCast(Operation *op) {
  Value *x = op->operand(0);
  const Type *rt = op->result(0)->type();
  if (x->type() == rt)
    return useValue(x);
  Operation *inner = x->definingOp();
  if (!inner || !isCast(inner->code()) || inner->numOperands() != 1)
    return {};
  Value *src = inner->operand(0);
  if (src->type() == rt && roundTripsExactly(inner->code(), op->code()))
    return useValue(src);
  if (inner->code() == op->code() && composesWithItself(op->code())) {
    Rewrite r;
    r.newOp = Operation::create(op->code(), {src}, {rt}, op->attrs(),
                                op->loc());
    return r;
  }
  return {};
}

Rewrite simplify(Operation *op) {
  if (op->numResults() != 1)
    return {};
  Value *res = op->result(0);
  const Type *rt = res->type();
  OpCode code = op->code();

  // 1. Fold elementwise ops whose operands are all constants.
  if (op->hasTrait(PURE) && op->hasTrait(ELEM) && rt->scalarType()->isScalar()) {
    std::vector<ConstValue> ops;
    for (Value *v : op->operands()) {
      auto c = getConstant(v);
      if (!c)
        break;
      ops.push_back(*c);
    }
    if (ops.size() == op->numOperands())
      if (auto c = foldElementwise(code, op->attrs(), ops,
                                   rt->scalarType()->dtype()))
        return useConstant(*c, /*folded=*/true);
  }

  // 2. Splat and data movement (MOVE) of constants are constants; data
  //    movement to the same type is a no-op (a transpose only when it keeps
  //    the order: a square tensor may still be permuted); a conversion of a
  //    conversion converts the original value once.
  if (code == OpCode::Splat || op->hasTrait(MOVE)) {
    if (op->numOperands() != 1)
      return {};
    Value *x = op->operand(0);
    if (auto c = getConstant(x))
      return useConstant(*c, /*folded=*/true);
    if (code != OpCode::Splat && code != OpCode::ExpandDims &&
        x->type() == rt) {
      if (code == OpCode::Trans) {
        if (!op->hasAttr("order"))
          return {};
        auto *order = std::get_if<std::vector<int64_t>>(&op->attrs().at("order"));
        if (!order)
          return {};
        for (size_t i = 0; i < order->size(); ++i)
          if ((*order)[i] != (int64_t)i)
            return {};
      }
      return useValue(x);
    }
    if (code != OpCode::ConvertLayout)
      return {};
    Operation *inner = x->definingOp();
    if (!inner || inner->code() != OpCode::ConvertLayout ||
        inner->numOperands() != 1)
      return {};
    Value *src = inner->operand(0);
    if (src->type() == rt)
      return useValue(src);
    Rewrite r;
    r.newOp =
        Operation::create(OpCode::ConvertLayout, {src}, {rt}, {}, op->loc());
    return r;
  }

  switch (code) {
  case OpCode::Select: {
    if (op->numOperands() != 3)
      return {};
    if (auto c = getConstant(op->operand(0)))
      return useValue((c->bits & 1) ? op->operand(1) : op->operand(2));
    if (op->operand(1) == op->operand(2))
      return useValue(op->operand(1));
    return {};
  }
  default:
    break;
  }

  // 3. Identities.
  if (isCast(code) && op->numOperands() == 1)
    return simplifyCast(op);
  if (op->hasTrait(ELEM) && op->numOperands() == 2)
    return simplifyBinary(op);
  return {};
}

class Canonicalizer {
public:
  explicit Canonicalizer(PassStats &stats) : stats_(stats) {}

  /// One sweep over `f`; true when something changed.
  bool sweep(Function &f) {
    changed_ = false;
    rewriteBlocks(f.body());
    rep_.applyTo(f);
    rep_.clear();
    graveyard_.clear();
    stats_.add("canonicalize.erased", eraseDeadPureOps(f));
    return changed_;
  }

private:
  void rewriteBlocks(Region &region) {
    for (auto &block : region.blocks())
      rewriteBlock(*block);
  }

  void rewriteBlock(Block &block) {
    for (auto it = block.ops().begin(); it != block.ops().end();) {
      auto next = std::next(it);
      Operation *op = it->get();
      rep_.remapOperands(op);
      if (op->numRegions() != 0) {
        if (!foldControlFlow(block, it))
          for (unsigned i = 0; i < op->numRegions(); ++i)
            rewriteBlocks(op->region(i));
      } else if (op->hasTrait(PURE)) {
        rewriteOp(block, it);
      } else if (op->code() == OpCode::Load && op->numOperands() > 1) {
        // A mask that is all true (e.g. after --split-masked-loops) masks
        // nothing: the load keeps its pointers alone (no `other` either).
        auto m = getConstant(op->operand(1));
        if (m && (m->bits & 1)) {
          op->operands().resize(1);
          stats_.add("canonicalize.simplified");
          changed_ = true;
        }
      }
      it = next;
    }
  }

  void rewriteOp(Block &block, Block::iterator it) {
    Operation *op = it->get();
    Rewrite r = simplify(op);
    if (!r)
      return;
    Value *to = r.value;
    if (r.constant)
      to = insertConstant(block, it, op->result(0)->type(), *r.constant,
                          op->loc());
    else if (r.newOp)
      to = block.insert(it, std::move(r.newOp))->result(0);
    stats_.add(r.folded ? "canonicalize.folded" : "canonicalize.simplified");
    rep_.replace(op->result(0), to);
    changed_ = true;
  }

  /// scf.if on a constant condition and scf.for that runs zero times.
  bool foldControlFlow(Block &block, Block::iterator it) {
    Operation *op = it->get();
    std::vector<Value *> results;
    if (op->code() == OpCode::If) {
      auto cond = getConstant(op->operand(0));
      if (!cond)
        return false;
      Region &taken = op->region((cond->bits & 1) ? 0 : 1);
      if (!taken.empty()) {
        Block &body = taken.front();
        Operation *yield = body.terminator();
        if (!yield || yield->numOperands() != op->numResults())
          return false;
        for (Value *v : yield->operands())
          results.push_back(rep_.lookup(v));
        // Moved ops are remapped and simplified in the next sweep.
        while (body.ops().size() > 1)
          block.insert(it, body.ops().front()->detach());
      } else if (op->numResults() != 0) {
        return false;
      }
    } else if (op->code() == OpCode::For) {
      if (op->numOperands() < 3 || op->numResults() + 3 != op->numOperands())
        return false;
      auto lb = getConstant(op->operand(0)), ub = getConstant(op->operand(1));
      if (!lb || !ub || lb->isFloat())
        return false;
      bool runs = isUnsigned(lb->dtype) ? lb->zext() < ub->zext()
                                        : lb->sext() < ub->sext();
      if (runs)
        return false;
      for (unsigned i = 0; i < op->numResults(); ++i)
        results.push_back(op->operand(3 + i));
    } else {
      return false;
    }
    for (unsigned i = 0; i < op->numResults(); ++i)
      rep_.replace(op->result(i), results[i]);
    graveyard_.push_back(op->detach());
    stats_.add("canonicalize.simplified");
    changed_ = true;
    return true;
  }

  PassStats &stats_;
  ValueReplacer rep_;
  // Detached ops stay allocated until the sweep ends, so that no new value
  // reuses the address of a replaced one while the replacer holds it.
  std::vector<std::unique_ptr<Operation>> graveyard_;
  bool changed_ = false;
};

} // namespace

void canonicalize(Module &m, const PipelineOptions &, PassStats &stats) {
  // Each sweep strictly shrinks or simplifies the IR; the cap only guards
  // against a rule pair that undoes each other.
  constexpr int kMaxSweeps = 64;
  for (auto &f : m.functions()) {
    Canonicalizer c(stats);
    for (int i = 0; i < kMaxSweeps && c.sweep(*f); ++i) {
    }
  }
}

} // namespace tritium
