// The IR verifier: structural, type and dominance checks of every op, per the
// conventions written beside each row of ops.def.
//
// Outline:
//  1. Per function: the body is one block ending in tt.return; collect every
//     value the function defines (to tell "defined elsewhere" from "used
//     before its definition").
//  2. Walk blocks in order with a stack of visible values (the block's own
//     arguments and earlier results, then those of the enclosing blocks): each
//     operand must be visible, which is SSA dominance for structured control
//     flow.
//  3. Per op: operand/result/region counts, then the op's own type and
//     attribute rules; ops with regions check their blocks' arguments and
//     terminators against their operands and results.
//
// The first violation throws IRError whose message reads `'arith.addf' op
// operand types differ: f32 vs f16`, then a line with the op as printed and
// one naming the function; IRError::loc is the op's location, which the
// reporter prints in front (`k.py:3:7: error: ...`).
#include "tritium/ir/verifier.h"

#include "tritium/ir/inline_asm.h"

#include "text_internal.h"

#include <set>

namespace tritium {
namespace {

using text::typeText;

const Type *elemOf(const Type *t) { return t->isTensor() ? t->element() : t; }
bool intLike(const Type *t) {
  const Type *e = elemOf(t);
  return e->isScalar() && isInteger(e->dtype());
}
bool floatLike(const Type *t) {
  const Type *e = elemOf(t);
  return e->isScalar() && isFloat(e->dtype());
}
bool ptrLike(const Type *t) { return elemOf(t)->isPointer(); }
bool sameShape(const Type *a, const Type *b) {
  if (a->isTensor() != b->isTensor())
    return false;
  return !a->isTensor() || a->shape() == b->shape();
}
/// `t` with its element replaced by `e` (shape and layout kept).
const Type *withElem(const Type *t, const Type *e) {
  return t->isTensor() ? Type::tensor(e, t->shape(), t->layout()) : e;
}
int elemBits(const Type *t) {
  const Type *e = elemOf(t);
  return e->isScalar() ? bitWidth(e->dtype()) : 64;
}

std::string kindName(const Attribute &a) {
  switch (a.index()) {
  case 0:
    return "a bool";
  case 1:
    return "an integer";
  case 2:
    return "a float";
  case 3:
    return "a string";
  default:
    return "an array";
  }
}

std::string joinTypes(const std::vector<const Type *> &ts) {
  std::string s = "(";
  for (size_t i = 0; i < ts.size(); ++i)
    s += (i ? ", " : "") + typeText(ts[i]);
  return s + ")";
}

std::vector<const Type *> typesOf(const std::vector<Value *> &vs) {
  std::vector<const Type *> ts;
  for (const Value *v : vs)
    ts.push_back(v->type());
  return ts;
}

std::vector<const Type *> argTypesOf(const Block &b) {
  std::vector<const Type *> ts;
  for (unsigned i = 0; i < b.numArguments(); ++i)
    ts.push_back(b.argument(i)->type());
  return ts;
}

const std::vector<std::unique_ptr<Block>> &blocksOf(const Region &r) {
  return const_cast<Region &>(r).blocks();
}

class Verifier {
public:
  explicit Verifier(const Module *m) : module_(m) {}

  void verifyFunction(const Function &f) {
    func_ = &f;
    const auto &blocks = blocksOf(f.body());
    if (blocks.size() != 1)
      failFunc("body must have exactly one block, found " +
               std::to_string(blocks.size()));
    if (f.argAttrs().size() > f.numArgs())
      failFunc("has attributes for " + std::to_string(f.argAttrs().size()) +
               " arguments but only " + std::to_string(f.numArgs()) +
               " arguments");
    for (const Type *t : f.resultTypes())
      if (!t)
        failFunc("has a null result type");
    all_.clear();
    const Block &entry = f.entry();
    for (unsigned i = 0; i < entry.numArguments(); ++i) {
      all_.insert(entry.argument(i));
      if (!entry.argument(i)->type())
        failFunc("argument #" + std::to_string(i) + " has a null type");
    }
    const_cast<Function &>(f).walk([&](Operation *op) {
      for (unsigned i = 0; i < op->numResults(); ++i)
        all_.insert(op->result(i));
      for (unsigned r = 0; r < op->numRegions(); ++r)
        for (const auto &b : blocksOf(op->region(r)))
          for (unsigned i = 0; i < b->numArguments(); ++i)
            all_.insert(b->argument(i));
    });
    scopes_.clear();
    verifyBlock(entry, OpCode::Return, nullptr, 0);
    func_ = nullptr;
  }

private:
  // ---- diagnostics ----------------------------------------------------------

  [[noreturn]] void fail(const Operation &op, const std::string &msg) const {
    std::string s = std::string("'") + op.name() + "' op " + msg + "\n  " +
                    text::opSummary(op);
    if (func_)
      s += "\n  in tt.func @" + func_->name();
    throw IRError(s, op.loc());
  }
  [[noreturn]] void failFunc(const std::string &msg) const {
    throw IRError("'tt.func' @" + func_->name() + " " + msg, func_->loc());
  }

  // ---- counts and attributes ------------------------------------------------

  void operands(const Operation &op, unsigned lo, unsigned hi) const {
    unsigned n = op.numOperands();
    if (n >= lo && n <= hi)
      return;
    std::string want = lo == hi ? std::to_string(lo)
                       : hi == ~0u
                           ? "at least " + std::to_string(lo)
                           : std::to_string(lo) + " to " + std::to_string(hi);
    fail(op, "expects " + want + " operand" + (hi == 1 && lo == 1 ? "" : "s") +
                 ", found " + std::to_string(n));
  }
  void results(const Operation &op, unsigned n) const {
    if (op.numResults() != n)
      fail(op, "expects " + std::to_string(n) + " result" +
                   (n == 1 ? "" : "s") + ", found " +
                   std::to_string(op.numResults()));
  }

  const Attribute &attr(const Operation &op, const std::string &key,
                        size_t kind, const char *kindText) const {
    auto it = op.attrs().find(key);
    if (it == op.attrs().end())
      fail(op,
           std::string("requires ") + kindText + " attribute '" + key + "'");
    if (it->second.index() != kind)
      fail(op, "attribute '" + key + "' must be " + kindText + ", found " +
                   kindName(it->second));
    return it->second;
  }
  /// One attribute of the op's schema (ops.def).
  void checkAttr(const Operation &op, const AttrSpec &spec) const {
    if (!spec.required && !op.hasAttr(spec.name))
      return;
    if (spec.kind == AttrKind::Any) {
      if (!op.hasAttr(spec.name))
        fail(op, "requires attribute '" + spec.name + "'");
      return;
    }
    attr(op, spec.name, size_t(spec.kind), attrKindText(spec.kind));
  }
  /// The optional sem/scope strings of tt.atomic_rmw / tt.atomic_cas.
  void checkAtomicOrdering(const Operation &op) const {
    for (const char *key : {"sem", "scope"}) {
      if (!op.hasAttr(key))
        continue;
      auto *v = std::get_if<std::string>(&op.attrs().at(key));
      if (!v)
        fail(op, std::string("attribute '") + key + "' must be a string");
      if (std::string(key) == "sem")
        oneOf(op, key, *v, {"acquire", "release", "acq_rel", "relaxed"});
      else
        oneOf(op, key, *v, {"gpu", "cta", "sys"});
    }
  }
  void oneOf(const Operation &op, const std::string &key,
             const std::string &value,
             std::initializer_list<const char *> allowed) const {
    std::string list;
    for (const char *a : allowed) {
      if (value == a)
        return;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    fail(op, "attribute '" + key + "' has invalid value \"" + value +
                 "\" (expected one of " + list + ")");
  }

  // ---- type rules -----------------------------------------------------------

  const Type *ty(const Operation &op, unsigned i) const {
    return op.operand(i)->type();
  }
  const Type *rty(const Operation &op, unsigned i = 0) const {
    return op.result(i)->type();
  }

  void sameOperandTypes(const Operation &op) const {
    for (unsigned i = 1; i < op.numOperands(); ++i)
      if (ty(op, i) != ty(op, 0))
        fail(op, "operand types differ: " + typeText(ty(op, 0)) + " vs " +
                     typeText(ty(op, i)));
  }
  void resultIsOperandType(const Operation &op, const Type *t) const {
    if (rty(op) != t)
      fail(op, "result type " + typeText(rty(op)) +
                   " differs from operand type " + typeText(t));
  }
  /// Same-typed integer (or float) operands, result of that type.
  void arith(const Operation &op, unsigned n, bool isFloatOp) const {
    sameOperandTypes(op);
    const Type *t = ty(op, 0);
    if (isFloatOp && !floatLike(t))
      fail(op, "operands must be floats, found " + typeText(t));
    if (!isFloatOp && !intLike(t))
      fail(op, "operands must be integers, found " + typeText(t));
    resultIsOperandType(op, t);
  }
  void compare(const Operation &op, bool isFloatOp) const {
    sameOperandTypes(op);
    const Type *t = ty(op, 0);
    if (isFloatOp && !floatLike(t))
      fail(op, "operands must be floats, found " + typeText(t));
    if (!isFloatOp && !intLike(t) && !ptrLike(t))
      fail(op, "operands must be integers or pointers, found " + typeText(t));
    const Type *want = withElem(t, Type::scalar(DType::I1));
    if (rty(op) != want)
      fail(op, "result type must be " + typeText(want) + ", found " +
                   typeText(rty(op)));
    const std::string &p = op.strAttr("predicate");
    if (isFloatOp)
      oneOf(op, "predicate", p,
            {"oeq", "one", "olt", "ole", "ogt", "oge", "ueq", "une", "ult",
             "ule", "ugt", "uge"});
    else
      oneOf(
          op, "predicate", p,
          {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"});
  }

  enum class Cls { Int, Float, Ptr };
  void cast(const Operation &op, Cls from, Cls to, int widthOrder) const {
    const Type *in = ty(op, 0), *out = rty(op);
    if (!sameShape(in, out))
      fail(op, "result shape differs from operand shape: " + typeText(in) +
                   " -> " + typeText(out));
    auto is = [](const Type *t, Cls c) {
      return c == Cls::Int     ? intLike(t)
             : c == Cls::Float ? floatLike(t)
                               : ptrLike(t);
    };
    auto name = [](Cls c) {
      return c == Cls::Int     ? "an integer"
             : c == Cls::Float ? "a float"
                               : "a pointer";
    };
    if (!is(in, from))
      fail(op, std::string("operand must be ") + name(from) + ", found " +
                   typeText(in));
    if (!is(out, to))
      fail(op, std::string("result must be ") + name(to) + ", found " +
                   typeText(out));
    int a = elemBits(in), b = elemBits(out);
    if (widthOrder > 0 && !(b > a))
      fail(op, "must widen, but " + typeText(in) + " -> " + typeText(out) +
                   " does not");
    if (widthOrder < 0 && !(b < a))
      fail(op, "must narrow, but " + typeText(in) + " -> " + typeText(out) +
                   " does not");
  }

  void checkMask(const Operation &op, unsigned idx, const Type *ptr) const {
    const Type *want = withElem(ptr, Type::scalar(DType::I1));
    if (ty(op, idx) != want)
      fail(op, "mask must be " + typeText(want) +
                   " (i1 of the pointer's "
                   "shape), found " +
                   typeText(ty(op, idx)));
  }
  /// The value type a pointer (tensor) loads/stores; fails if not pointers.
  const Type *pointeeValueType(const Operation &op) const {
    const Type *p = ty(op, 0);
    if (!ptrLike(p))
      fail(op, "operand #0 must be a pointer or a tensor of pointers, found " +
                   typeText(p));
    return withElem(p, elemOf(p)->pointee());
  }
  /// A tensor descriptor's block: at operand `first` the base (a scalar
  /// pointer to `block`'s element), then r shapes (i32 or i64), r strides (i64)
  /// and r offsets (i32), r the rank of `block` (a tensor or memdesc).
  void checkDescriptorOperands(const Operation &op, unsigned first, const Type *block) const {
    size_t rank = block->shape().size();
    if (op.numOperands() != first + 1 + 3 * rank)
      fail(op, "a rank-" + std::to_string(rank) + " block takes " +
                   std::to_string(first + 1 + 3 * rank) +
                   " operands (base, shape, strides, offsets), found " +
                   std::to_string(op.numOperands()));
    const Type *base = ty(op, first);
    if (base->isTensor() || !base->isPointer())
      fail(op, "base must be a scalar pointer, found " + typeText(base));
    expectType(op, "block element", block->element(), base->pointee());
    for (size_t d = 0; d < rank; ++d) {
      // A descriptor's dims are i32; a block pointer's i64.
      if (ty(op, unsigned(first + 1 + d)) != Type::scalar(DType::I64))
        scalarOperand(op, unsigned(first + 1 + d), DType::I32, "a shape");
      scalarOperand(op, unsigned(first + 1 + rank + d), DType::I64, "a stride");
      scalarOperand(op, unsigned(first + 1 + 2 * rank + d), DType::I32, "an offset");
    }
  }
  void checkPadding(const Operation &op, const Type *block) const {
    oneOf(op, "padding", op.strAttr("padding"), {"zero", "nan"});
    if (op.strAttr("padding") == "nan" && !isFloat(block->element()->dtype()))
      fail(op, "padding \"nan\" needs a floating-point element, found " +
                   typeText(block->element()));
  }
  void checkDescriptorLoad(const Operation &op) const {
    checkDescriptorOperands(op, 0, tensorResult(op));
    checkPadding(op, rty(op));
  }
  void checkDescriptorStore(const Operation &op) const {
    checkDescriptorOperands(op, 1, tensorOperand(op));
  }
  void expectType(const Operation &op, const std::string &what, const Type *got,
                  const Type *want) const {
    if (got != want)
      fail(op,
           what + " must be " + typeText(want) + ", found " + typeText(got));
  }
  const Type *tensorOperand(const Operation &op) const {
    if (!ty(op, 0)->isTensor())
      fail(op, "operand must be a tensor, found " + typeText(ty(op, 0)));
    return ty(op, 0);
  }
  const Type *tensorResult(const Operation &op) const {
    if (!rty(op)->isTensor())
      fail(op, "result must be a tensor, found " + typeText(rty(op)));
    return rty(op);
  }
  void sameElement(const Operation &op, const Type *in, const Type *out) const {
    if (elemOf(in) != elemOf(out))
      fail(op, "result element type " + typeText(elemOf(out)) +
                   " differs from operand element type " +
                   typeText(elemOf(in)));
  }

  // ---- blocks and dominance -------------------------------------------------

  /// Verifies `b`'s ops in order and that it ends with `term`. `owner` is the
  /// op holding the region (null for the function body).
  void verifyBlock(const Block &b, OpCode term, const Operation *owner,
                   unsigned regionIdx) {
    scopes_.emplace_back();
    for (unsigned i = 0; i < b.numArguments(); ++i)
      scopes_.back().insert(b.argument(i));
    for (auto it = b.ops().begin(); it != b.ops().end(); ++it) {
      const Operation &op = **it;
      if (op.parentBlock() != &b)
        fail(op, "is linked into a block that does not own it");
      if (op.hasTrait(TERM) && std::next(it) != b.ops().end())
        fail(op, "is a terminator but is not the last op of its block");
      verifyOp(op);
      for (unsigned i = 0; i < op.numResults(); ++i)
        scopes_.back().insert(op.result(i));
    }
    const Operation *last = b.ops().empty() ? nullptr : b.ops().back().get();
    if (!last || last->code() != term) {
      std::string found = last ? std::string(", found '") + last->name() + "'"
                               : " (it is empty)";
      std::string want = std::string("'") + opInfo(term).name + "'";
      if (owner)
        fail(*owner, "region #" + std::to_string(regionIdx) +
                         " must end with " + want + found);
      failFunc("body must end with " + want + found);
    }
    scopes_.pop_back();
  }

  bool visible(const Value *v) const {
    for (const auto &s : scopes_)
      if (s.count(v))
        return true;
    return false;
  }

  /// Checks that `r` has exactly `n` blocks (n < 0: zero or one).
  const Block *singleBlock(const Operation &op, unsigned idx, bool optional) {
    const auto &blocks = blocksOf(op.region(idx));
    if (blocks.size() > 1 || (!optional && blocks.empty()))
      fail(op, "region #" + std::to_string(idx) + " must have " +
                   (optional ? "at most one block" : "exactly one block") +
                   ", found " + std::to_string(blocks.size()));
    return blocks.empty() ? nullptr : blocks[0].get();
  }

  void verifyOp(const Operation &op) {
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      const Value *v = op.operand(i);
      std::string which = "operand #" + std::to_string(i);
      if (!v)
        fail(op, which + " is null");
      if (!v->type())
        fail(op, which + " has a null type");
      if (!all_.count(v))
        fail(op, which + " is a value defined outside the function");
      if (!visible(v))
        fail(op, which + " (" + text::valueName(op, v) +
                     ") does not dominate this use (it is defined later or "
                     "in a region that does not enclose this op)");
    }
    for (unsigned i = 0; i < op.numResults(); ++i)
      if (!op.result(i)->type())
        fail(op, "result #" + std::to_string(i) + " has a null type");

    if (op.code() >= OpCode::NumOps)
      fail(op, "has an invalid op code");
    const OpInfo &info = op.info();
    unsigned wantRegions = (unsigned)info.numRegions;
    if (op.numRegions() != wantRegions)
      fail(op, "expects " + std::to_string(wantRegions) + " region" +
                   (wantRegions == 1 ? "" : "s") + ", found " +
                   std::to_string(op.numRegions()));
    // Arity and attributes come from the op's row in ops.def; the per-op
    // rules below may then index operands and read attributes freely.
    operands(op, (unsigned)info.minOperands,
             info.maxOperands == VARIADIC ? ~0u : (unsigned)info.maxOperands);
    if (info.numResults != VARIADIC)
      results(op, (unsigned)info.numResults);
    for (const AttrSpec &a : opAttrs(op.code()))
      checkAttr(op, a);

    verifyRules(op);
  }

  // ---- per-op rules ---------------------------------------------------------

  void verifyRules(const Operation &op) {
    if (op.hasTrait(IBIN))
      return arith(op, 2, false);
    if (op.hasTrait(FBIN))
      return arith(op, 2, true);
    if (op.hasTrait(MATH1))
      return arith(op, 1, op.code() != OpCode::AbsI);
    switch (op.code()) {
    case OpCode::Constant:
      return verifyConstant(op);

    case OpCode::CmpI:
      return compare(op, false);

    case OpCode::NegF:
      return arith(op, 1, true);
    case OpCode::CmpF:
      return compare(op, true);

    case OpCode::Select: {
      if (ty(op, 1) != ty(op, 2))
        fail(op, "operand types differ: " + typeText(ty(op, 1)) + " vs " +
                     typeText(ty(op, 2)));
      resultIsOperandType(op, ty(op, 1));
      expectType(op, "condition", ty(op, 0),
                 withElem(ty(op, 1), Type::scalar(DType::I1)));
      return;
    }
    case OpCode::ExtSI:
    case OpCode::ExtUI:
      return cast(op, Cls::Int, Cls::Int, +1);
    case OpCode::TruncI:
      return cast(op, Cls::Int, Cls::Int, -1);
    case OpCode::SIToFP:
    case OpCode::UIToFP:
      return cast(op, Cls::Int, Cls::Float, 0);
    case OpCode::FPToSI:
    case OpCode::FPToUI:
      return cast(op, Cls::Float, Cls::Int, 0);
    case OpCode::ExtF:
      return cast(op, Cls::Float, Cls::Float, +1);
    case OpCode::TruncF:
      if (op.hasAttr("rounding"))
        oneOf(op, "rounding", op.strAttr("rounding"), {"rtne", "rtz"});
      return cast(op, Cls::Float, Cls::Float, -1);
    case OpCode::Bitcast: {
      const Type *in = ty(op, 0), *out = rty(op);
      if (!sameShape(in, out))
        fail(op, "result shape differs from operand shape: " + typeText(in) +
                     " -> " + typeText(out));
      if (ptrLike(in) != ptrLike(out))
        fail(op, "cannot bitcast between a pointer and a non-pointer: " +
                     typeText(in) + " -> " + typeText(out));
      if (elemBits(in) != elemBits(out))
        fail(op, "bit widths differ: " + typeText(in) + " -> " + typeText(out));
      return;
    }
    case OpCode::IntToPtr:
      cast(op, Cls::Int, Cls::Ptr, 0);
      if (elemBits(ty(op, 0)) != 64)
        fail(op,
             "operand must be a 64-bit integer, found " + typeText(ty(op, 0)));
      return;
    case OpCode::PtrToInt:
      cast(op, Cls::Ptr, Cls::Int, 0);
      if (elemBits(rty(op)) != 64)
        fail(op, "result must be a 64-bit integer, found " + typeText(rty(op)));
      return;

    case OpCode::Fma:
      return arith(op, 3, true);

    case OpCode::GetProgramId:
    case OpCode::GetNumPrograms: {
      int64_t axis = op.intAttr("axis");
      if (axis < 0 || axis > 2)
        fail(op, "axis must be 0, 1 or 2, found " + std::to_string(axis));
      expectType(op, "result", rty(op), Type::scalar(DType::I32));
      return;
    }
    case OpCode::MakeRange: {
      int64_t start = op.intAttr("start"), end = op.intAttr("end");
      if (end <= start)
        fail(op, "end (" + std::to_string(end) +
                     ") must be greater than start (" + std::to_string(start) +
                     ")");
      uint64_t n = (uint64_t)end - (uint64_t)start;
      if ((n & (n - 1)) != 0)
        fail(op,
             "end - start must be a power of two, found " + std::to_string(n));
      const Type *r = rty(op);
      if (!r->isTensor() || r->rank() != 1 || (uint64_t)r->shape()[0] != n ||
          elemOf(r) != Type::scalar(DType::I32))
        fail(op, "result must be tensor<" + std::to_string(n) +
                     "xi32>, found " + typeText(r));
      return;
    }
    case OpCode::Splat: {
      if (ty(op, 0)->isTensor())
        fail(op, "operand must be a scalar or pointer, found " +
                     typeText(ty(op, 0)));
      sameElement(op, ty(op, 0), tensorResult(op));
      return;
    }
    case OpCode::Broadcast: {
      const Type *in = tensorOperand(op), *out = tensorResult(op);
      sameElement(op, in, out);
      if (in->rank() != out->rank())
        fail(op, "operand and result ranks differ: " + typeText(in) + " -> " +
                     typeText(out));
      for (int i = 0; i < in->rank(); ++i)
        if (in->shape()[i] != out->shape()[i] && in->shape()[i] != 1)
          fail(op, "dimension " + std::to_string(i) + " of size " +
                       std::to_string(in->shape()[i]) +
                       " cannot broadcast to " +
                       std::to_string(out->shape()[i]));
      return;
    }
    case OpCode::ExpandDims: {
      const Type *in = tensorOperand(op), *out = tensorResult(op);
      sameElement(op, in, out);
      int64_t axis = op.intAttr("axis");
      if (axis < 0 || axis > in->rank())
        fail(op, "axis " + std::to_string(axis) + " out of range [0, " +
                     std::to_string(in->rank()) + "]");
      std::vector<int64_t> want = in->shape();
      want.insert(want.begin() + axis, 1);
      if (out->shape() != want)
        fail(op, "result shape must be " +
                     typeText(Type::tensor(elemOf(out), want)) + ", found " +
                     typeText(out));
      return;
    }
    case OpCode::Reshape: {
      const Type *in = tensorOperand(op), *out = tensorResult(op);
      sameElement(op, in, out);
      if (in->numElements() != out->numElements())
        fail(op,
             "element counts differ: " + typeText(in) + " -> " + typeText(out));
      return;
    }
    case OpCode::ConvertLayout: {
      // Moves elements between threads only: what the tensor holds (shape
      // and element type) stays; only the layout may change.
      const Type *in = tensorOperand(op), *out = tensorResult(op);
      sameElement(op, in, out);
      if (in->shape() != out->shape())
        fail(op, "operand and result shapes differ: " + typeText(in) + " -> " +
                     typeText(out));
      if (!in->layout() || !out->layout())
        fail(op, "operand and result must carry layouts (GPU IR only): " +
                     typeText(in) + " -> " + typeText(out));
      return;
    }
    case OpCode::Trans: {
      const Type *in = tensorOperand(op), *out = tensorResult(op);
      sameElement(op, in, out);
      const auto &order = op.arrayAttr("order");
      std::vector<bool> seen(in->rank(), false);
      bool ok = (int)order.size() == in->rank();
      for (int64_t d : order) {
        if (!ok || d < 0 || d >= in->rank() || seen[d]) {
          ok = false;
          break;
        }
        seen[d] = true;
      }
      if (!ok)
        fail(op, "order must be a permutation of the operand's " +
                     std::to_string(in->rank()) + " dimensions");
      std::vector<int64_t> want;
      for (int64_t d : order)
        want.push_back(in->shape()[d]);
      if (out->shape() != want)
        fail(op, "result shape must be " +
                     typeText(Type::tensor(elemOf(out), want)) + ", found " +
                     typeText(out));
      return;
    }

    case OpCode::AddPtr: {
      const Type *p = ty(op, 0), *o = ty(op, 1);
      if (!ptrLike(p))
        fail(op, "operand #0 must be a pointer or a tensor of pointers, "
                 "found " +
                     typeText(p));
      if (!intLike(o))
        fail(op, "offset must be an integer, found " + typeText(o));
      if (!sameShape(p, o))
        fail(op, "pointer and offset shapes differ: " + typeText(p) + " vs " +
                     typeText(o));
      resultIsOperandType(op, p);
      return;
    }
    case OpCode::Load: {
      const Type *val = pointeeValueType(op);
      expectType(op, "result", rty(op), val);
      if (op.numOperands() > 1)
        checkMask(op, 1, ty(op, 0));
      if (op.numOperands() > 2)
        expectType(op, "other", ty(op, 2), val);
      return;
    }
    case OpCode::DescriptorLoad:
      checkDescriptorLoad(op);
      return;
    case OpCode::DescriptorStore:
      checkDescriptorStore(op);
      return;
    case OpCode::Store: {
      const Type *val = pointeeValueType(op);
      expectType(op, "stored value", ty(op, 1), val);
      if (op.numOperands() > 2)
        checkMask(op, 2, ty(op, 0));
      return;
    }
    case OpCode::AtomicRMW: {
      const Type *val = pointeeValueType(op);
      expectType(op, "value", ty(op, 1), val);
      if (op.numOperands() > 2)
        checkMask(op, 2, ty(op, 0));
      expectType(op, "result", rty(op), val);
      // The language's kinds: signedness comes from the element type (max
      // on u32 is unsigned), and the bitwise kinds exist for integers only.
      const std::string &kind = op.strAttr("kind");
      oneOf(op, "kind", kind, {"add", "max", "min", "and", "or", "xor", "xchg"});
      checkAtomicOrdering(op);
      if ((kind == "and" || kind == "or" || kind == "xor") && !intLike(val))
        fail(op, "kind \"" + kind + "\" needs integers, found " +
                     typeText(val));
      return;
    }
    case OpCode::AtomicCAS: {
      const Type *val = pointeeValueType(op);
      expectType(op, "compared value", ty(op, 1), val);
      expectType(op, "new value", ty(op, 2), val);
      expectType(op, "result", rty(op), val);
      checkAtomicOrdering(op);
      return;
    }

    case OpCode::Reduce: {
      const Type *in = tensorOperand(op);
      int64_t axis = op.intAttr("axis");
      if (axis < 0 || axis >= in->rank())
        fail(op, "axis " + std::to_string(axis) + " out of range [0, " +
                     std::to_string(in->rank()) + ")");
      const std::string &kind = op.strAttr("kind");
      oneOf(op, "kind", kind,
            {"sum", "prod", "max", "min", "argmax", "argmin", "xor_sum"});
      if (ptrLike(in))
        fail(op, "cannot reduce pointers: " + typeText(in));
      if (kind == "xor_sum" && !intLike(in))
        fail(op, "kind \"xor_sum\" needs integers, found " + typeText(in));
      const Type *elem = (kind == "argmax" || kind == "argmin")
                             ? Type::scalar(DType::I32)
                             : elemOf(in);
      std::vector<int64_t> shape = in->shape();
      shape.erase(shape.begin() + axis);
      const Type *out = rty(op);
      // Shape and element only: at the GPU level the result has its own
      // (slice) layout.
      bool ok = elemOf(out) == elem &&
                (shape.empty() ? !out->isTensor()
                               : out->isTensor() && out->shape() == shape);
      if (!ok)
        fail(op,
             "result must be " +
                 typeText(shape.empty() ? elem : Type::tensor(elem, shape)) +
                 ", found " + typeText(out));
      return;
    }
    case OpCode::Dot: {
      // 2-D: MxK @ KxN + MxN; batched (3-D): BxMxK @ BxKxN + BxMxN.
      const Type *a = ty(op, 0), *b = ty(op, 1), *c = ty(op, 2);
      for (unsigned i = 0; i < 3; ++i)
        if (!ty(op, i)->isTensor() ||
            (ty(op, i)->rank() != 2 && ty(op, i)->rank() != 3))
          fail(op, "operand #" + std::to_string(i) +
                       " must be a 2-D or 3-D tensor, found " +
                       typeText(ty(op, i)));
      if (b->rank() != a->rank() || c->rank() != a->rank())
        fail(op, "operands must all be 2-D or all be 3-D, found " +
                     typeText(a) + ", " + typeText(b) + " and " + typeText(c));
      for (unsigned i = 0; i < 3; ++i)
        if (ptrLike(ty(op, i)))
          fail(op, "operand #" + std::to_string(i) +
                       " must hold numbers, not pointers: " +
                       typeText(ty(op, i)));
      int o = a->rank() - 2;
      if (o == 1 && (b->shape()[0] != a->shape()[0] ||
                     c->shape()[0] != a->shape()[0]))
        fail(op, "batch dimensions differ: " + typeText(a) + ", " +
                     typeText(b) + " and " + typeText(c));
      int64_t M = a->shape()[o], K = a->shape()[o + 1], N = b->shape()[o + 1];
      if (b->shape()[o] != K)
        fail(op,
             "inner dimensions differ: " + typeText(a) + " and " + typeText(b));
      if (c->shape()[o] != M || c->shape()[o + 1] != N)
        fail(op, "accumulator must be " +
                     (o ? std::to_string(a->shape()[0]) + "x" : "") +
                     std::to_string(M) + "x" + std::to_string(N) + ", found " +
                     typeText(c));
      resultIsOperandType(op, c);
      if (op.hasAttr("input_precision"))
        oneOf(op, "input_precision", op.strAttr("input_precision"),
              {"tf32", "tf32x3", "ieee"});
      if (op.hasAttr("max_num_imprecise_acc") &&
          op.intAttr("max_num_imprecise_acc") < 0)
        fail(op, "attribute 'max_num_imprecise_acc' must be >= 0, found " +
                     std::to_string(op.intAttr("max_num_imprecise_acc")));
      return;
    }

    case OpCode::Call:
      return verifyCall(op);
    case OpCode::Return: {
      if (op.parentOp())
        fail(op, "must be in a function body, not in '" +
                     std::string(op.parentOp()->name()) + "'");
      auto got = typesOf(op.operands());
      if (func_ && got != func_->resultTypes())
        fail(op, "operand types " + joinTypes(got) +
                     " do not match the function's result types " +
                     joinTypes(func_->resultTypes()));
      return;
    }
    case OpCode::ReduceCombine:
    case OpCode::Scan:
      return verifyCombineOp(op);
    case OpCode::CombineReturn: {
      const Operation *p = op.parentOp();
      if (!p || (p->code() != OpCode::ReduceCombine && p->code() != OpCode::Scan))
        fail(op, "must end the combine region of 'tt.reduce_combine' or "
                 "'tt.scan'");
      return;
    }
    case OpCode::For:
      return verifyFor(op);
    case OpCode::If:
      return verifyIf(op);
    case OpCode::While:
      return verifyWhile(op);
    case OpCode::Condition: {
      const Operation *p = op.parentOp();
      if (!p || p->code() != OpCode::While ||
          op.parentBlock()->parentRegion() != &p->region(0))
        fail(op, "must end the 'before' region of 'scf.while'");
      expectType(op, "condition", ty(op, 0), Type::scalar(DType::I1));
      return;
    }
    case OpCode::Yield: {
      const Operation *p = op.parentOp();
      bool ok = p && (p->code() == OpCode::For || p->code() == OpCode::If ||
                      (p->code() == OpCode::While &&
                       op.parentBlock()->parentRegion() == &p->region(1)));
      if (!ok)
        fail(op, "must end a region of 'scf.for', 'scf.if' or the 'after' "
                 "region of 'scf.while'");
      return;
    }
    case OpCode::Print:
      return;
    case OpCode::InlineAsm:
      return verifyInlineAsm(op);
    case OpCode::Assert:
      if (elemOf(ty(op, 0)) != Type::scalar(DType::I1))
        fail(op, "condition must be i1 (or a tensor of i1), found " +
                     typeText(ty(op, 0)));
      return;
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
    case OpCode::BarrierExpect:
    case OpCode::ArriveBarrier:
    case OpCode::WaitBarrier:
    case OpCode::AsyncTMACopyGlobalToLocal:
    case OpCode::AsyncTMACopyLocalToGlobal:
    case OpCode::FenceAsyncShared:
    case OpCode::GPUBarrier:
    case OpCode::WarpGroupDot:
      return verifySharedMemoryOp(op);
    case OpCode::NumOps:
      break;
    }
    fail(op, "has an invalid op code");
  }

  // ---- shared memory, async copies, barriers --------------------------------

  /// Operand i must be a memdesc whose layout accepts it; returns its type.
  const Type *memdescOperand(const Operation &op, unsigned i) const {
    const Type *t = ty(op, i);
    if (!t->isMemDesc())
      fail(op, "operand #" + std::to_string(i) + " must be a !ttg.memdesc, " +
                   "found " + typeText(t));
    checkMemDescType(op, t);
    return t;
  }
  void checkMemDescType(const Operation &op, const Type *t) const {
    if (!t->layout())
      fail(op, "memdesc " + typeText(t) + " has no shared layout");
    std::string why = t->layout()->checkMemDesc(t->element(), t->bufferShape());
    if (!why.empty())
      fail(op, "invalid memdesc " + typeText(t) + ": " + why);
  }
  /// A memdesc that one access reads or writes whole: not multi-buffered.
  const Type *singleBuffer(const Operation &op, unsigned i) const {
    const Type *t = memdescOperand(op, i);
    if (t->isMultiBuffered())
      fail(op, "needs one buffer, but " + typeText(t) +
                   " is multi-buffered (take one with ttg.memdesc_index)");
    return t;
  }
  void mutableMemDesc(const Operation &op, const Type *t) const {
    if (!t->isMutable())
      fail(op, "writes to an immutable memdesc " + typeText(t));
  }
  /// The tensor that matches memdesc `m` (same shape and element).
  void matchesBuffer(const Operation &op, const std::string &what,
                     const Type *t, const Type *m) const {
    if (!t->isTensor() || t->shape() != m->shape() ||
        t->element() != m->element())
      fail(op, what + " " + typeText(t) + " does not match the buffer " +
                   typeText(m) + " (same shape and element type)");
  }
  void tokenOperands(const Operation &op, unsigned from) const {
    for (unsigned i = from; i < op.numOperands(); ++i)
      if (!ty(op, i)->isToken())
        fail(op, "operand #" + std::to_string(i) +
                     " must be a !ttg.async.token, found " +
                     typeText(ty(op, i)));
  }
  void tokenResult(const Operation &op) const {
    results(op, 1);
    if (!rty(op)->isToken())
      fail(op, "result must be a !ttg.async.token, found " +
                   typeText(rty(op)));
  }
  /// An mbarrier: one mutable 64-bit word in shared memory.
  void barrierOperand(const Operation &op, unsigned i = 0) const {
    const Type *t = singleBuffer(op, i);
    if (t->numElements() != 1 || t->element()->isPointer() ||
        bitWidth(t->element()->dtype()) != 64 ||
        isFloat(t->element()->dtype()))
      fail(op, "barrier must be a memdesc of one 64-bit integer, found " +
                   typeText(t));
    mutableMemDesc(op, t);
  }
  void scalarOperand(const Operation &op, unsigned i, DType want,
                     const char *what) const {
    if (ty(op, i) != Type::scalar(want))
      fail(op, std::string(what) + " must be " + dtypeName(want) +
                   ", found " + typeText(ty(op, i)));
  }
  void positiveAttr(const Operation &op, const std::string &key,
                    int64_t min) const {
    if (op.intAttr(key) < min)
      fail(op, "attribute '" + key + "' must be at least " +
                   std::to_string(min) + ", found " +
                   std::to_string(op.intAttr(key)));
  }

  // Arity and attribute kinds are checked from ops.def before this.
  void verifySharedMemoryOp(const Operation &op) const {
    switch (op.code()) {
    case OpCode::LocalAlloc: {
      const Type *m = rty(op);
      if (!m->isMemDesc())
        fail(op, "result must be a !ttg.memdesc, found " + typeText(m));
      checkMemDescType(op, m);
      if (op.numOperands() == 1) {
        if (m->isMultiBuffered())
          fail(op, "cannot initialise the multi-buffered " + typeText(m));
        matchesBuffer(op, "initial value", ty(op, 0), m);
      } else if (!m->isMutable()) {
        fail(op, "allocates an immutable memdesc without an initial value");
      }
      if (op.hasAttr("allocation.offset"))
        positiveAttr(op, "allocation.offset", 0);
      return;
    }
    case OpCode::LocalDealloc:
      memdescOperand(op, 0);
      return;
    case OpCode::WarpGroupDot: {
      // A comes from shared memory or, in a dot_op layout, from registers.
      const Type *a = ty(op, 0)->isTensor() ? ty(op, 0) : singleBuffer(op, 0);
      const Type *b = singleBuffer(op, 1);
      const Type *c = ty(op, 2);
      if (a->rank() != 2 || b->rank() != 2 || !c->isTensor() || c->rank() != 2)
        fail(op, "needs a 2-D A (memdesc or tensor), a 2-D memdesc B and a "
                 "2-D accumulator, found " +
                     typeText(a) + ", " + typeText(b) + ", " + typeText(c));
      int64_t M = a->shape()[0], K = a->shape()[1], N = b->shape()[1];
      if (b->shape()[0] != K)
        fail(op,
             "inner dimensions differ: " + typeText(a) + " and " + typeText(b));
      if (c->shape()[0] != M || c->shape()[1] != N)
        fail(op, "accumulator must be " + std::to_string(M) + "x" +
                     std::to_string(N) + ", found " + typeText(c));
      resultIsOperandType(op, c);
      if (op.hasAttr("input_precision"))
        oneOf(op, "input_precision", op.strAttr("input_precision"),
              {"tf32", "tf32x3", "ieee"});
      return;
    }
    case OpCode::LocalLoad: {
      const Type *m = singleBuffer(op, 0);
      tokenOperands(op, 1);
      matchesBuffer(op, "result", rty(op), m);
      return;
    }
    case OpCode::LocalStore: {
      const Type *m = singleBuffer(op, 1);
      mutableMemDesc(op, m);
      matchesBuffer(op, "stored value", ty(op, 0), m);
      return;
    }
    case OpCode::MemDescIndex: {
      const Type *m = memdescOperand(op, 0);
      if (!m->isMultiBuffered())
        fail(op, "operand " + typeText(m) + " is not multi-buffered");
      scalarOperand(op, 1, DType::I32, "buffer index");
      const Type *want = Type::memdesc(m->element(), m->bufferShape(),
                                       m->layout(), m->isMutable());
      expectType(op, "result", rty(op), want);
      return;
    }
    case OpCode::MemDescTrans: {
      const Type *m = singleBuffer(op, 0);
      const auto &order = op.arrayAttr("order");
      std::vector<bool> seen(m->rank(), false);
      bool ok = (int)order.size() == m->rank();
      for (int64_t d : order) {
        if (!ok || d < 0 || d >= m->rank() || seen[d]) {
          ok = false;
          break;
        }
        seen[d] = true;
      }
      if (!ok)
        fail(op, "order must be a permutation of the operand's " +
                     std::to_string(m->rank()) + " dimensions");
      const Layout *view = m->layout()->permuted(order);
      if (!view)
        fail(op, "the layout of " + typeText(m) +
                     " has no form with its dimensions permuted");
      std::vector<int64_t> shape;
      for (int64_t d : order)
        shape.push_back(m->shape()[d]);
      expectType(op, "result", rty(op),
                 Type::memdesc(m->element(), shape, view, m->isMutable()));
      return;
    }
    case OpCode::AsyncCopyGlobalToLocal: {
      tokenResult(op);
      const Type *m = singleBuffer(op, 1);
      mutableMemDesc(op, m);
      const Type *p = ty(op, 0);
      if (!p->isTensor() || !p->element()->isPointer())
        fail(op, "operand #0 must be a tensor of pointers, found " +
                     typeText(p));
      const Type *val = withElem(p, p->element()->pointee());
      matchesBuffer(op, "copied value", val, m);
      if (op.numOperands() > 2)
        checkMask(op, 2, p);
      if (op.numOperands() > 3)
        expectType(op, "other", ty(op, 3), val);
      return;
    }
    case OpCode::AsyncCommitGroup:
      tokenResult(op);
      tokenOperands(op, 0);
      return;
    case OpCode::AsyncWait:
      tokenResult(op);
      tokenOperands(op, 0);
      positiveAttr(op, "num", 0);
      return;
    case OpCode::InitBarrier:
      barrierOperand(op);
      positiveAttr(op, "count", 1);
      return;
    case OpCode::InvalBarrier:
      barrierOperand(op);
      return;
    case OpCode::AsyncTMACopyGlobalToLocal: {
      const Type *m = singleBuffer(op, 0);
      mutableMemDesc(op, m);
      barrierOperand(op, 1);
      scalarOperand(op, 2, DType::I1, "predicate");
      checkDescriptorOperands(op, 3, m);
      checkPadding(op, m);
      return;
    }
    case OpCode::AsyncTMACopyLocalToGlobal: {
      const Type *m = singleBuffer(op, 0);
      checkDescriptorOperands(op, 1, m);
      oneOf(op, "wait", op.strAttr("wait"), {"read", "write"});
      return;
    }
    case OpCode::FenceAsyncShared:
      return;
    case OpCode::BarrierExpect:
    case OpCode::ArriveBarrier:
      barrierOperand(op);
      if (op.numOperands() > 1)
        scalarOperand(op, 1, DType::I1, "predicate");
      if (op.code() == OpCode::BarrierExpect)
        positiveAttr(op, "bytes", 0);
      else if (op.hasAttr("count"))
        positiveAttr(op, "count", 1);
      return;
    case OpCode::WaitBarrier:
      barrierOperand(op);
      scalarOperand(op, 1, DType::I32, "phase");
      if (op.numOperands() > 2)
        scalarOperand(op, 2, DType::I1, "predicate");
      return;
    case OpCode::GPUBarrier:
      return;
    default:
      fail(op, "is not a shared-memory op");
    }
  }

  void verifyInlineAsm(const Operation &op) const {
    if (op.numResults() == 0)
      fail(op, "needs at least one result");
    std::vector<const Type *> results, args;
    const Type *shape = rty(op, 0);
    for (unsigned i = 0; i < op.numResults(); ++i) {
      if (!sameShape(rty(op, i), shape))
        fail(op, "results differ in shape: " + typeText(shape) + " vs " +
                     typeText(rty(op, i)));
      results.push_back(elemOf(rty(op, i)));
    }
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      if (!sameShape(ty(op, i), shape))
        fail(op, "operand #" + std::to_string(i) + " of type " +
                     typeText(ty(op, i)) + " differs in shape from the " +
                     "results' " + typeText(shape));
      args.push_back(elemOf(ty(op, i)));
    }
    std::vector<InlineAsmOperand> operands;
    std::string why =
        inlineAsmOperands(op.strAttr("constraints"), results, args,
                          (int)op.intAttr("pack"), operands);
    if (!why.empty())
      fail(op, why);
  }

  void verifyConstant(const Operation &op) {
    const Type *e = elemOf(rty(op));
    const Attribute &v = op.attrs().at("value"); // present: ops.def
    bool ok;
    std::string want;
    if (e->isPointer()) {
      ok = v.index() == 1;
      want = "an integer";
    } else if (isFloat(e->dtype())) {
      ok = v.index() == 2 || v.index() == 1;
      want = "a float";
    } else if (e->dtype() == DType::I1) {
      ok = v.index() == 0 || v.index() == 1;
      want = "a bool";
    } else {
      ok = v.index() == 1 || v.index() == 0;
      want = "an integer";
    }
    if (!ok)
      fail(op, "attribute 'value' must be " + want + " for " + typeText(e) +
                   ", found " + kindName(v));
  }

  void verifyCall(const Operation &op) {
    const std::string &callee = op.strAttr("callee");
    const Module *m =
        module_ ? module_ : (func_ ? func_->parentModule() : nullptr);
    if (!m)
      return; // a lone function: nothing to resolve against
    const Function *f = m->lookup(callee);
    if (!f)
      fail(op, "callee @" + callee + " is not defined in the module");
    auto got = typesOf(op.operands());
    auto want = f->argTypes();
    if (got != want)
      fail(op, "operand types " + joinTypes(got) + " do not match @" + callee +
                   "'s argument types " + joinTypes(want));
    auto res = typesOf(op.results());
    if (res != f->resultTypes())
      fail(op, "result types " + joinTypes(res) + " do not match @" + callee +
                   "'s result types " + joinTypes(f->resultTypes()));
  }

  /// The terminator of `b` (already verified to be of the right kind).
  const Operation &terminatorOf(const Block &b) { return *b.ops().back(); }

  void verifyFor(const Operation &op) {
    const Type *iv = ty(op, 0);
    if (!iv->isScalar() || !isInteger(iv->dtype()))
      fail(op, "lower bound must be a scalar integer, found " + typeText(iv));
    if (ty(op, 1) != iv || ty(op, 2) != iv)
      fail(op, "bounds and step must have one type, found " + typeText(iv) +
                   ", " + typeText(ty(op, 1)) + ", " + typeText(ty(op, 2)));
    std::vector<Value *> inits(op.operands().begin() + 3, op.operands().end());
    auto initTypes = typesOf(inits);
    auto resTypes = typesOf(op.results());
    if (resTypes != initTypes)
      fail(op, "result types " + joinTypes(resTypes) +
                   " do not match the init types " + joinTypes(initTypes));
    const Block *body = singleBlock(op, 0, false);
    std::vector<const Type *> want{iv};
    want.insert(want.end(), initTypes.begin(), initTypes.end());
    if (argTypesOf(*body) != want)
      fail(op, "body arguments " + joinTypes(argTypesOf(*body)) +
                   " must be the induction variable and one per init: " +
                   joinTypes(want));
    verifyBlock(*body, OpCode::Yield, &op, 0);
    checkYield(terminatorOf(*body), resTypes, "scf.for");
  }

  /// tt.reduce_combine / tt.scan: N tensors of one shape, an axis in
  /// range, N results (the operands' types for a scan; without the axis for
  /// a reduction), and a combine region of 2N scalar args of the operands'
  /// element types returning N such scalars.
  void verifyCombineOp(const Operation &op) {
    const Type *first = ty(op, 0);
    if (!first->isTensor())
      fail(op, "operand #0 must be a tensor, found " + typeText(first));
    for (unsigned i = 1; i < op.numOperands(); ++i)
      if (!ty(op, i)->isTensor() || ty(op, i)->shape() != first->shape())
        fail(op, "operands must be tensors of one shape, found " +
                     typeText(first) + " and " + typeText(ty(op, i)));
    int64_t axis = op.intAttr("axis");
    if (axis < 0 || axis >= first->rank())
      fail(op, "axis " + std::to_string(axis) + " out of range [0, " +
                   std::to_string(first->rank()) + ")");
    if (op.numResults() != op.numOperands())
      fail(op, "has " + std::to_string(op.numOperands()) + " operands but " +
                   std::to_string(op.numResults()) + " results");
    bool scan = op.code() == OpCode::Scan;
    std::vector<int64_t> shape = first->shape();
    shape.erase(shape.begin() + axis);
    std::vector<const Type *> elems;
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      const Type *in = ty(op, i), *out = rty(op, i);
      elems.push_back(elemOf(in));
      // Shape and element only: at the GPU level a reduction's result has
      // its own (slice) layout.
      bool ok = scan ? out == in
                     : elemOf(out) == elemOf(in) &&
                           (shape.empty() ? !out->isTensor()
                                          : out->isTensor() &&
                                                out->shape() == shape);
      if (!ok)
        fail(op, "result #" + std::to_string(i) + " must be " +
                     typeText(scan ? in
                              : shape.empty()
                                  ? elemOf(in)
                                  : Type::tensor(elemOf(in), shape)) +
                     ", found " + typeText(out));
    }
    const Block *body = singleBlock(op, 0, false);
    std::vector<const Type *> want = elems;
    want.insert(want.end(), elems.begin(), elems.end());
    if (argTypesOf(*body) != want)
      fail(op, "combine region arguments " + joinTypes(argTypesOf(*body)) +
                   " must be two of each operand's element type: " +
                   joinTypes(want));
    verifyBlock(*body, OpCode::CombineReturn, &op, 0);
    checkYield(terminatorOf(*body), elems, scan ? "tt.scan" : "tt.reduce_combine");
    // The combine runs once per pair of elements: on scalars only (the
    // lowerings emit it per element). A tensor nothing returned depends on is
    // dead code that DCE removes before any lowering: Inductor's
    // `promote_to_tensor(x).dtype` builds `x + tl.zeros((1,), tl.int1)` just
    // to read a dtype.
    std::set<const Value *> live;
    std::vector<Value *> work = terminatorOf(*body).operands();
    while (!work.empty()) {
      Value *v = work.back();
      work.pop_back();
      if (!live.insert(v).second)
        continue;
      if (Operation *d = v->definingOp())
        d->walk([&](Operation *x) {
          for (Value *o : x->operands())
            work.push_back(o);
        });
    }
    for (const auto &inner : body->ops())
      for (unsigned i = 0; i < inner->numResults(); ++i)
        if (inner->result(i)->type()->isTensor() && live.count(inner->result(i)))
          fail(*inner, "is in a combine region, which computes on scalars, "
                       "but its result is " +
                           typeText(inner->result(i)->type()));
  }

  void verifyIf(const Operation &op) {
    expectType(op, "condition", ty(op, 0), Type::scalar(DType::I1));
    const Block *thenB = singleBlock(op, 0, false);
    const Block *elseB = singleBlock(op, 1, true);
    auto resTypes = typesOf(op.results());
    if (!elseB && !resTypes.empty())
      fail(op, "has results, so it needs an else region");
    for (const Block *b : {thenB, elseB}) {
      if (!b)
        continue;
      if (b->numArguments())
        fail(op, "regions must not have block arguments");
      verifyBlock(*b, OpCode::Yield, &op, b == thenB ? 0 : 1);
      checkYield(terminatorOf(*b), resTypes, "scf.if");
    }
  }

  void verifyWhile(const Operation &op) {
    auto initTypes = typesOf(op.operands());
    auto resTypes = typesOf(op.results());
    const Block *before = singleBlock(op, 0, false);
    const Block *after = singleBlock(op, 1, false);
    if (argTypesOf(*before) != initTypes)
      fail(op, "'before' block arguments " + joinTypes(argTypesOf(*before)) +
                   " must match the init types " + joinTypes(initTypes));
    verifyBlock(*before, OpCode::Condition, &op, 0);
    const Operation &cond = terminatorOf(*before);
    std::vector<Value *> fwd(cond.operands().begin() + 1,
                             cond.operands().end());
    if (typesOf(fwd) != resTypes)
      fail(op, "scf.condition forwards " + joinTypes(typesOf(fwd)) +
                   " but the op's result types are " + joinTypes(resTypes));
    if (argTypesOf(*after) != resTypes)
      fail(op, "'after' block arguments " + joinTypes(argTypesOf(*after)) +
                   " must match the result types " + joinTypes(resTypes));
    verifyBlock(*after, OpCode::Yield, &op, 1);
    checkYield(terminatorOf(*after), initTypes, "scf.while");
  }

  void checkYield(const Operation &yield, const std::vector<const Type *> &want,
                  const char *what) {
    auto got = typesOf(yield.operands());
    if (got != want)
      fail(yield, "operand types " + joinTypes(got) + " do not match the " +
                      std::string(what) + " types " + joinTypes(want));
  }

  const Module *module_;
  const Function *func_ = nullptr;
  std::set<const Value *> all_;
  std::vector<std::set<const Value *>> scopes_;
};

} // namespace

void verify(const Module &m) {
  std::set<std::string> names;
  Verifier v(&m);
  for (const auto &f : m.functions()) {
    if (!names.insert(f->name()).second)
      throw IRError("'tt.func' @" + f->name() + " is defined twice", f->loc());
    v.verifyFunction(*f);
  }
}

void verify(const Function &f) {
  Verifier v(f.parentModule());
  v.verifyFunction(f);
}

} // namespace tritium
