// Triton's typing rules for elementwise code: implicit promotion (with the
// weak typing of Python literals), casts, arithmetic, comparisons, bitwise
// and logical ops, math functions and tl.where. The rules follow Triton 3.x's
// python/triton/language/semantic.py (computation_type_impl,
// binary_op_type_checking_impl, cast, ...), so a kernel types here as it does
// under Triton.
#include "builder_internal.h"
#include "tritium/ir/inline_asm.h"

#include <cmath>
#include <map>

namespace tritium {
using namespace builder_detail;

namespace {

// ---------------------------------------------------------------------------
// Promotion
// ---------------------------------------------------------------------------

/// C's usual arithmetic conversions on integers (Triton's
/// integer_promote_impl); i1 counts as unsigned.
DType integerPromote(DType a, DType b) {
  bool as = isSigned(a), bs = isSigned(b);
  int aw = bitWidth(a), bw = bitWidth(b);
  if (as == bs)
    return aw > bw ? a : b;
  if (!as)
    return aw >= bw ? a : b;
  return bw >= aw ? b : a;
}

std::string opSymbol(const std::string &op) {
  static const std::map<std::string, std::string> sym = {
      {"add", "+"},        {"sub", "-"},       {"mul", "*"},
      {"truediv", "/"},    {"floordiv", "//"}, {"mod", "%"},
      {"and", "&"},        {"or", "|"},        {"xor", "^"},
      {"lshift", "<<"},    {"rshift", ">>"},   {"lt", "<"},
      {"le", "<="},        {"gt", ">"},        {"ge", ">="},
      {"eq", "=="},        {"ne", "!="},       {"logical_and", "and"},
      {"logical_or", "or"}};
  auto it = sym.find(op);
  return it == sym.end() ? op : it->second;
}

/// Triton's computation_type_impl: the dtype both operands of an arithmetic
/// op are converted to. A literal of a kind (bool < int < float) no higher
/// than the other operand's adopts that operand's dtype.
DType computationType(Builder &b, const std::string &op, DType a, bool aLit,
                      DType c, bool cLit, bool divOrMod) {
  if (aLit != cLit) {
    DType lit = aLit ? a : c, ten = aLit ? c : a;
    if (dtypeKind(lit) <= dtypeKind(ten)) {
      if (divOrMod && (ten == DType::FP16 || ten == DType::BF16))
        return DType::FP32;
      return ten;
    }
  }
  if (a == DType::FP64 || c == DType::FP64)
    return DType::FP64;
  if (a == DType::FP32 || c == DType::FP32)
    return DType::FP32;
  if (a == DType::FP16 || c == DType::FP16)
    return divOrMod ? DType::FP32 : DType::FP16;
  if (a == DType::BF16 && c == DType::BF16)
    return divOrMod ? DType::FP32 : DType::BF16;
  if (a == DType::BF16 || c == DType::BF16)
    return DType::FP32;
  if (isFp8(a) && isFp8(c))
    return a == c ? a : DType::FP16;
  if (!isInteger(a) || !isInteger(c))
    b.error(std::string("invalid operands of types ") + dtypeName(a) + " and " +
            dtypeName(c) + " for '" + opSymbol(op) +
            "': cast the fp8 operand to a wider float first");
  // The wording of Triton's message first, so code that matches it keeps
  // working; then which operator it was.
  if (divOrMod && isSigned(a) != isSigned(c))
    b.error(std::string("Cannot use /, #, or % with triton.language.") +
            tritonName(a) + " and triton.language." + tritonName(c) +
            " because they have different signedness; cast them to the same "
            "signedness ('" + opSymbol(op) + "' of " + dtypeName(a) + " and " +
            dtypeName(c) + ")");
  return integerPromote(a, c);
}

const Type *elemTypeOf(const Operand &o) {
  return o.isLiteral() ? scalarTy(literalDType(o))
                       : o.value->type()->scalarType();
}

/// Triton's check_ptr_type_impl.
void checkPtr(Builder &b, const std::string &op, const Operand &x,
              const Operand &y, bool allowPtr) {
  const Type *tx = elemTypeOf(x), *ty = elemTypeOf(y);
  if (!tx->isPointer())
    return;
  auto fail = [&] {
    b.error("invalid operands of types " + describe(x) + " and " + describe(y) +
            " for '" + opSymbol(op) + "'");
  };
  if (!allowPtr)
    fail();
  if (ty->isPointer() && tx != ty)
    fail();
  if (ty->isScalar() && isFloat(ty->dtype()))
    fail();
}

struct BinaryOpts {
  bool allowLhsPtr = false;
  bool allowRhsPtr = false;
  bool arithmeticCheck = true;
  bool divOrMod = false;
};

/// Triton's binary_op_type_checking_impl: promotes both operands to their
/// computation type (literals become constants of that type, range-checked)
/// and broadcasts them against each other.
std::pair<Value *, Value *> checkBinary(Builder &b, const std::string &op,
                                        const Operand &x, const Operand &y,
                                        BinaryOpts opts) {
  if (!x.isLiteral() && !x.value)
    throw InternalError("builder: null lhs operand for " + op);
  if (!y.isLiteral() && !y.value)
    throw InternalError("builder: null rhs operand for " + op);
  checkPtr(b, op, x, y, opts.allowLhsPtr);
  checkPtr(b, op, y, x, opts.allowRhsPtr);
  const Type *tx = elemTypeOf(x), *ty = elemTypeOf(y);
  Value *lhs = nullptr, *rhs = nullptr;
  // A literal facing a tensor becomes a constant of the tensor's shape
  // directly (a splat constant) rather than a scalar plus tt.splat.
  auto otherShape = [](const Operand &other) -> std::vector<int64_t> {
    return other.isLiteral() ? std::vector<int64_t>{} : shapeOf(other.value);
  };
  if (opts.arithmeticCheck && !tx->isPointer() && !ty->isPointer()) {
    DType ret = computationType(b, op, tx->dtype(), x.isLiteral(), ty->dtype(),
                                y.isLiteral(), opts.divOrMod);
    for (const Operand *lit : {&x, &y}) {
      if (!lit->isLiteral())
        continue;
      if (literalNegative(*lit) && isUnsigned(ret))
        b.error("cannot perform '" + opSymbol(op) + "' between an unsigned " +
                dtypeName(ret) + " operand and the negative " + describe(*lit) +
                "; cast one of them explicitly");
      if (isInteger(ret) && lit->kind != Operand::Kind::Float) {
        __int128 v = literalInt(*lit);
        if (v < intMin(ret) || v > intMax(ret))
          b.error("the " + describe(*lit) + " is out of range for " +
                  dtypeName(ret) + " (the type of the other operand of '" +
                  opSymbol(op) + "')");
      }
    }
    lhs = x.isLiteral() ? literalConstant(b, x, ret, otherShape(y))
                        : castElem(b, x.value, scalarTy(ret));
    rhs = y.isLiteral() ? literalConstant(b, y, ret, otherShape(x))
                        : castElem(b, y.value, scalarTy(ret));
  } else {
    lhs = x.isLiteral() ? literalConstant(b, x, literalDType(x), otherShape(y))
                        : x.value;
    rhs = y.isLiteral() ? literalConstant(b, y, literalDType(y), otherShape(x))
                        : y.value;
  }
  return b.broadcastPair(lhs, rhs);
}

Value *mk(Builder &b, OpCode code, std::vector<Value *> operands,
          const Type *type, std::map<std::string, Attribute> attrs = {}) {
  return b.create(code, operands, {type}, std::move(attrs))->result(0);
}

Value *cmp(Builder &b, OpCode code, const char *pred, Value *x, Value *y) {
  return mk(b, code, {x, y}, x->type()->withElement(scalarTy(DType::I1)),
            {{"predicate", std::string(pred)}});
}

/// Triton's `minus`: 0 - x (subf for floats, so -(0.0) is +0.0 as there).
Value *minus(Builder &b, Value *x) {
  if (isPtrLike(x))
    b.error("wrong type argument to unary minus (" + x->type()->str() + ")");
  DType d = elemDType(x);
  Value *zero = constantLike(b, 0.0, d, x);
  return mk(b, isFloat(d) ? OpCode::SubF : OpCode::SubI, {zero, x}, x->type());
}

/// ptr + offset: unsigned offsets narrower than 64 bits are zero-extended so
/// addptr (which treats offsets as signed) sees them as positive.
Value *addPtr(Builder &b, Value *ptr, Value *off) {
  DType d = elemDType(off);
  if (isUnsigned(d) && bitWidth(d) < 64)
    off = mk(b, OpCode::ExtUI, {off},
             off->type()->withElement(scalarTy(DType::I64)));
  return mk(b, OpCode::AddPtr, {ptr, off}, ptr->type());
}

/// Triton's wording for operands an operator does not take ("invalid
/// operands of type triton.language.fp32 and triton.language.int32"): the
/// operands' own element types, before any promotion, as Triton names them.
std::string invalidOperands(const Type *l, const Type *r) {
  auto name = [](const Type *t) {
    return std::string("triton.language.") +
           (t->isPointer() ? "pointer" : tritonName(t->dtype()));
  };
  return "invalid operands of type " + name(l) + " and " + name(r);
}

Value *bitwise(Builder &b, const std::string &op, const Operand &x,
               const Operand &y, OpCode code) {
  // Checked on the operands as written: promotion would turn `f32 & i32`
  // into two f32s and the message would name the wrong type.
  const Type *tx = elemTypeOf(x), *ty = elemTypeOf(y);
  if (tx->isPointer() || ty->isPointer() || !isInteger(tx->dtype()) ||
      !isInteger(ty->dtype()))
    b.error(invalidOperands(tx, ty) + ": '" + opSymbol(op) +
            "' expects integer operands, got " + describe(x) + " and " +
            describe(y));
  auto [l, r] = checkBinary(b, op, x, y, {});
  return mk(b, code, {l, r}, l->type());
}

Value *compare(Builder &b, const std::string &op, const Operand &x,
               const Operand &y) {
  // Triton's tensor.__lt__ & co. call to_tensor on the other side first, so
  // literals in comparisons take their default types (`x_f16 < 0.1`
  // compares in f32; `x_i8 < 300` is an i32 comparison, not an error).
  auto [l, r] = checkBinary(b, op, b.materialize(x), b.materialize(y), {});
  DType d = elemDType(l);
  if (isFloat(d)) {
    static const std::map<std::string, const char *> fp = {
        {"lt", "olt"}, {"le", "ole"}, {"gt", "ogt"},
        {"ge", "oge"}, {"eq", "oeq"}, {"ne", "une"}};
    return cmp(b, OpCode::CmpF, fp.at(op), l, r);
  }
  bool s = isSigned(d);
  static const std::map<std::string, std::pair<const char *, const char *>> ip =
      {{"lt", {"slt", "ult"}}, {"le", {"sle", "ule"}}, {"gt", {"sgt", "ugt"}},
       {"ge", {"sge", "uge"}}, {"eq", {"eq", "eq"}},   {"ne", {"ne", "ne"}}};
  auto p = ip.at(op);
  return cmp(b, OpCode::CmpI, s ? p.first : p.second, l, r);
}

Value *operandToBool(Builder &b, const Operand &o) {
  if (o.isLiteral()) {
    bool v = o.kind == Operand::Kind::Float ? o.f != 0.0 : literalInt(o) != 0;
    return b.constBool(v);
  }
  return toBool(b, o.value);
}

} // namespace

// ---------------------------------------------------------------------------
// Casts
// ---------------------------------------------------------------------------

Value *builder_detail::toBool(Builder &b, Value *x) {
  if (x->type()->scalarType() == scalarTy(DType::I1))
    return x;
  return castElem(b, x, scalarTy(DType::I1));
}

Value *builder_detail::castElem(Builder &b, Value *x, const Type *dstElem,
                                const std::string &rounding) {
  const Type *src = x->type()->scalarType();
  if (src == dstElem)
    return x;
  const Type *resTy = x->type()->withElement(dstElem);
  auto conv = [&](OpCode code) {
    std::map<std::string, Attribute> attrs;
    if (code == OpCode::TruncF && !rounding.empty())
      attrs["rounding"] = rounding;
    return mk(b, code, {x}, resTy, std::move(attrs));
  };
  auto via = [&](DType mid) {
    return castElem(b, castElem(b, x, scalarTy(mid), rounding), dstElem,
                    rounding);
  };

  if (src->isPointer() || dstElem->isPointer()) {
    if (src->isPointer() && dstElem->isPointer())
      return conv(OpCode::Bitcast);
    if (src->isPointer() && isInteger(dstElem->dtype())) {
      Value *i = mk(b, OpCode::PtrToInt, {x},
                    x->type()->withElement(scalarTy(DType::I64)));
      if (dstElem->dtype() == DType::I1)
        return cmp(b, OpCode::CmpI, "ne", i, constantLike(b, 0, DType::I64, i));
      return castElem(b, i, dstElem);
    }
    if (dstElem->isPointer() && isInteger(src->dtype())) {
      Value *i = castElem(b, x, scalarTy(DType::I64));
      return mk(b, OpCode::IntToPtr, {i}, resTy);
    }
    b.error("cannot cast " + x->type()->str() + " to " + dstElem->str());
  }

  DType s = src->dtype(), d = dstElem->dtype();
  bool sf = isFloat(s), df = isFloat(d);
  if (sf && df) {
    if (isFp8(s) || isFp8(d)) {
      // fp8 <-> fp8 goes through f16, which holds both formats exactly.
      if (isFp8(s) && isFp8(d))
        return via(DType::FP16);
      return conv(bitWidth(s) < bitWidth(d) ? OpCode::ExtF : OpCode::TruncF);
    }
    // Triton converts f16/bf16 to anything but f32 through f32.
    if ((s == DType::FP16 || s == DType::BF16) && d != DType::FP32)
      return via(DType::FP32);
    return conv(bitWidth(s) > bitWidth(d) ? OpCode::TruncF : OpCode::ExtF);
  }
  if (!sf && !df) {
    if (d == DType::I1)
      return cmp(b, OpCode::CmpI, "ne", x, constantLike(b, 0, s, x));
    if (bitWidth(s) < bitWidth(d))
      return conv(isSigned(s) ? OpCode::ExtSI : OpCode::ExtUI);
    if (bitWidth(s) > bitWidth(d))
      return conv(OpCode::TruncI);
    return conv(OpCode::Bitcast); // same width, other signedness
  }
  if (sf) { // float -> int
    // fp8 converts through f32 (Triton has no direct fp8 -> int cast);
    // f16/bf16 go through f32 as in Triton.
    if (isFp8(s) || s == DType::FP16 || s == DType::BF16)
      return via(DType::FP32);
    if (d == DType::I1)
      return cmp(b, OpCode::CmpF, "une", x, constantLike(b, 0, s, x));
    return conv(isSigned(d) ? OpCode::FPToSI : OpCode::FPToUI);
  }
  // int -> float
  if (isFp8(d))
    return via(DType::FP32);
  return conv(isSigned(s) ? OpCode::SIToFP : OpCode::UIToFP);
}

Value *Builder::cast(Value *x, DType to, bool bitcast,
                     const std::string &fpDowncastRounding) {
  if (!x)
    throw InternalError("builder: cast of a null value");
  const Type *srcElem = x->type()->scalarType();
  if (!fpDowncastRounding.empty() && !bitcast && srcElem->isScalar() &&
      srcElem->dtype() == to)
    return x; // nothing to round (Triton returns the input first, too)
  if (!fpDowncastRounding.empty()) {
    if (fpDowncastRounding != "rtne" && fpDowncastRounding != "rtz")
      error("fp_downcast_rounding must be \"rtne\" or \"rtz\", got \"" +
            fpDowncastRounding + "\"");
    const Type *src = x->type()->scalarType();
    if (bitcast || !src->isScalar() || !isFloat(src->dtype()) ||
        !isFloat(to) || bitWidth(src->dtype()) <= bitWidth(to))
      error("fp_downcast_rounding should be set only for truncating fp "
            "conversions, but source scalar type is " +
            src->str() + " and destination type is " + dtypeName(to));
    // rtne is the default rounding: no attribute.
    if (fpDowncastRounding == "rtz")
      return castElem(*this, x, scalarTy(to), "rtz");
  }
  if (!bitcast)
    return castElem(*this, x, scalarTy(to));
  const Type *src = x->type()->scalarType();
  if (src->isPointer())
    return castElem(*this, x, scalarTy(to));
  if (src->dtype() == to)
    return x;
  if (bitWidth(src->dtype()) != bitWidth(to))
    error("cannot bitcast " + x->type()->str() + " to " + dtypeName(to) +
          ": the bit widths differ (" + std::to_string(bitWidth(src->dtype())) +
          " vs " + std::to_string(bitWidth(to)) + ")");
  return mk(*this, OpCode::Bitcast, {x}, x->type()->withElement(scalarTy(to)));
}

Value *Builder::castToPointer(Value *x, const Type *ptrType) {
  if (!ptrType->isPointer())
    throw InternalError("builder: castToPointer to non-pointer type " +
                        ptrType->str());
  const Type *src = x->type()->scalarType();
  if (src->isScalar() && isFloat(src->dtype()))
    error("cannot cast " + x->type()->str() + " to " + ptrType->str());
  return castElem(*this, x, ptrType);
}

// ---------------------------------------------------------------------------
// Binary and unary operators
// ---------------------------------------------------------------------------

Value *Builder::binary(const std::string &op, Operand a, Operand b) {
  Builder &B = *this;
  if (op == "add") {
    auto [l, r] = checkBinary(B, op, a, b, {true, true, true, false});
    if (isPtrLike(l) && isPtrLike(r))
      error("cannot add pointers together: " + l->type()->str() + " and " +
            r->type()->str());
    if (isPtrLike(r))
      std::swap(l, r);
    if (isPtrLike(l))
      return addPtr(B, l, r);
    if (isFloat(elemDType(l)))
      return mk(B, OpCode::AddF, {l, r}, l->type());
    return mk(B, OpCode::AddI, {l, r}, l->type());
  }
  if (op == "sub") {
    auto [l, r] = checkBinary(B, op, a, b, {true, false, true, false});
    if (isPtrLike(l))
      return addPtr(B, l, minus(B, r));
    if (isFloat(elemDType(l)))
      return mk(B, OpCode::SubF, {l, r}, l->type());
    return mk(B, OpCode::SubI, {l, r}, l->type());
  }
  if (op == "mul") {
    auto [l, r] = checkBinary(B, op, a, b, {});
    if (isFloat(elemDType(l)))
      return mk(B, OpCode::MulF, {l, r}, l->type());
    return mk(B, OpCode::MulI, {l, r}, l->type());
  }
  if (op == "truediv" || op == "div_rn") {
    auto [l, r] = checkBinary(B, op, a, b, {false, false, true, true});
    // After promotion both sides share a type; int / int divides in f32.
    if (isInteger(elemDType(l))) {
      l = castElem(B, l, scalarTy(DType::FP32));
      r = castElem(B, r, scalarTy(DType::FP32));
    }
    // `/` may be approximate on GPUs (div.full.f32, as in Triton);
    // tl.div_rn asks for the correctly rounded quotient.
    std::map<std::string, Attribute> attrs;
    if (op == "div_rn")
      attrs["rounding"] = std::string("rn");
    return mk(B, OpCode::DivF, {l, r}, l->type(), std::move(attrs));
  }
  if (op == "floordiv") {
    auto [l, r] = checkBinary(B, op, a, b, {false, false, true, true});
    DType d = elemDType(l);
    if (!isInteger(d))
      error("'//' expects integer operands, got " + describe(a) + " and " +
            describe(b));
    // Triton's `//` on ints is divsi/divui: it truncates toward zero.
    return mk(B, isSigned(d) ? OpCode::DivSI : OpCode::DivUI, {l, r},
              l->type());
  }
  if (op == "mod") {
    auto [l, r] = checkBinary(B, op, a, b, {false, false, true, true});
    DType d = elemDType(l);
    if (isFloat(d))
      return mk(B, OpCode::RemF, {l, r}, l->type());
    return mk(B, isSigned(d) ? OpCode::RemSI : OpCode::RemUI, {l, r},
              l->type());
  }
  if (op == "and")
    return bitwise(B, op, a, b, OpCode::AndI);
  if (op == "or")
    return bitwise(B, op, a, b, OpCode::OrI);
  if (op == "xor")
    return bitwise(B, op, a, b, OpCode::XOrI);
  if (op == "lshift")
    return bitwise(B, op, a, b, OpCode::ShLI);
  if (op == "umulhi") {
    // Triton's tl.umulhi: 32- and 64-bit integers only (after promotion).
    auto [l, r] = checkBinary(B, op, a, b, {});
    DType d = isPtrLike(l) ? DType::I1 : elemDType(l);
    if (!isInteger(d) || (bitWidth(d) != 32 && bitWidth(d) != 64))
      error("tl.umulhi expects int32, int64, uint32 or uint64 operands, got " +
            describe(a) + " and " + describe(b));
    return mk(B, OpCode::MulHiUI, {l, r}, l->type());
  }
  if (op == "rshift") {
    // Triton picks arithmetic vs logical shift from the tensor operand's
    // dtype before promotion (the left one, or the right one for `lit >> x`).
    const Operand &t = a.isLiteral() && !b.isLiteral() ? b : a;
    bool arith = false;
    if (t.isLiteral())
      arith = isSigned(literalDType(t));
    else if (!isPtrLike(t.value))
      arith = isSigned(elemDType(t.value));
    return bitwise(B, op, a, b, arith ? OpCode::ShRSI : OpCode::ShRUI);
  }
  if (op == "lt" || op == "le" || op == "gt" || op == "ge" || op == "eq" ||
      op == "ne")
    return compare(B, op, a, b);
  if (op == "logical_and" || op == "logical_or") {
    Value *l = operandToBool(B, a), *r = operandToBool(B, b);
    std::tie(l, r) = broadcastPair(l, r);
    return mk(B, op == "logical_and" ? OpCode::AndI : OpCode::OrI, {l, r},
              l->type());
  }
  throw InternalError("builder: unknown binary op '" + op + "'");
}

Value *Builder::unary(const std::string &op, Operand a) {
  Value *x = materialize(a);
  if (op == "pos")
    return x;
  if (op == "neg")
    return minus(*this, x);
  if (op == "invert") {
    if (isPtrLike(x) || isFloat(elemDType(x)))
      error("wrong type argument to unary invert (" + x->type()->str() + ")");
    DType d = elemDType(x);
    Value *ones = literalConstant(*this, Operand::ofInt(-1), d, shapeOf(x));
    if (isUnsigned(d) && bitWidth(d) < 64)
      ones = literalConstant(*this, Operand::ofInt((int64_t)intMax(d)), d,
                             shapeOf(x));
    return mk(*this, OpCode::XOrI, {x, ones}, x->type());
  }
  if (op == "not") {
    Value *c = toBool(*this, x);
    return mk(*this, OpCode::XOrI,
              {c, literalConstant(*this, Operand::ofBool(true), DType::I1,
                                  shapeOf(c))},
              c->type());
  }
  throw InternalError("builder: unknown unary op '" + op + "'");
}

// ---------------------------------------------------------------------------
// Math, fma, maximum/minimum, where
// ---------------------------------------------------------------------------

Value *Builder::math(const std::string &op, Operand xo) {
  Value *x = materialize(xo);
  if (isPtrLike(x))
    error("tl." + op + " expects a numeric operand, got " + x->type()->str());
  DType d = elemDType(x);
  if (op == "abs") {
    if (isFloat(d))
      return mk(*this, OpCode::AbsF, {x}, x->type());
    if (isSigned(d))
      return mk(*this, OpCode::AbsI, {x}, x->type());
    return x; // unsigned: no-op
  }
  static const std::map<std::string, OpCode> codes = {
      {"exp", OpCode::Exp},     {"exp2", OpCode::Exp2},
      {"log", OpCode::Log},     {"log2", OpCode::Log2},
      {"sqrt", OpCode::Sqrt},   {"sqrt_rn", OpCode::Sqrt},
      {"rsqrt", OpCode::Rsqrt}, {"sin", OpCode::Sin},
      {"cos", OpCode::Cos},     {"floor", OpCode::Floor},
      {"ceil", OpCode::Ceil},   {"erf", OpCode::Erf},
      {"trunc", OpCode::Trunc}, {"rint", OpCode::RoundEven},
      {"tanh", OpCode::Tanh}};
  if (op != "sigmoid" && !codes.count(op))
    throw InternalError("builder: unknown math op '" + op + "'");
  // Ints compute in f32 and stay f32; f16/bf16/fp8 compute in f32 and round
  // back (libdevice has f32/f64 entry points only).
  DType back = d;
  if (isInteger(d)) {
    x = castElem(*this, x, scalarTy(DType::FP32));
    back = DType::FP32;
  } else if (d != DType::FP32 && d != DType::FP64) {
    x = castElem(*this, x, scalarTy(DType::FP32));
  }
  Value *r;
  if (op == "sigmoid") {
    // Triton: 1 / (1 + exp(-x)).
    Value *e = mk(*this, OpCode::Exp, {minus(*this, x)}, x->type());
    Value *den = binary("add", Operand::ofInt(1), e);
    r = binary("truediv", Operand::ofInt(1), den);
  } else if (op == "sqrt_rn") {
    // tl.sqrt may be approximate on GPUs (sqrt.approx.ftz, as in Triton);
    // tl.sqrt_rn asks for the correctly rounded root.
    r = mk(*this, OpCode::Sqrt, {x}, x->type(), {{"rounding", std::string("rn")}});
  } else {
    r = mk(*this, codes.at(op), {x}, x->type());
  }
  return castElem(*this, r, scalarTy(back));
}

Value *Builder::fma(Operand a, Operand b, Operand c) {
  // Triton's tl.fma materialises literals with their default types, then
  // legalises (x, y), (z, x), (z, y) pairwise.
  Value *x = materialize(a), *y = materialize(b), *z = materialize(c);
  std::tie(x, y) = checkBinary(*this, "fma", x, y, {});
  std::tie(z, x) = checkBinary(*this, "fma", z, x, {});
  std::tie(z, y) = checkBinary(*this, "fma", z, y, {});
  if (isInteger(elemDType(x))) {
    x = castElem(*this, x, scalarTy(DType::FP32));
    y = castElem(*this, y, scalarTy(DType::FP32));
    z = castElem(*this, z, scalarTy(DType::FP32));
  }
  return mk(*this, OpCode::Fma, {x, y, z}, x->type());
}

namespace {
Value *minMax(Builder &b, bool isMax, Operand a, Operand c, bool propagateNan) {
  // tl.maximum/minimum: literals take their default types (no weak typing)
  // and bf16 computes in f32.
  Value *x = b.materialize(a), *y = b.materialize(c);
  for (Value **v : {&x, &y})
    if (!isPtrLike(*v) && elemDType(*v) == DType::BF16)
      *v = castElem(b, *v, scalarTy(DType::FP32));
  std::tie(x, y) = checkBinary(b, isMax ? "maximum" : "minimum", x, y, {});
  DType d = elemDType(x);
  OpCode code;
  if (isFloat(d))
    code = propagateNan ? (isMax ? OpCode::MaximumF : OpCode::MinimumF)
                        : (isMax ? OpCode::MaxNumF : OpCode::MinNumF);
  else if (isSigned(d))
    code = isMax ? OpCode::MaxSI : OpCode::MinSI;
  else
    code = isMax ? OpCode::MaxUI : OpCode::MinUI;
  return mk(b, code, {x, y}, x->type());
}
} // namespace

Value *Builder::maximum(Operand a, Operand b, bool propagateNan) {
  return minMax(*this, true, a, b, propagateNan);
}

Value *Builder::minimum(Operand a, Operand b, bool propagateNan) {
  return minMax(*this, false, a, b, propagateNan);
}

Value *Builder::where(Operand cond, Operand a, Operand b) {
  Value *c = toBool(*this, materialize(cond));
  auto [x, y] = checkBinary(*this, "where", a, b, {true, true, true, false});
  if (x->type()->scalarType() != y->type()->scalarType())
    error("tl.where: the two branches must have one type, got " +
          x->type()->str() + " and " + y->type()->str());
  std::vector<Value *> vs{c, x, y};
  broadcastAll(*this, vs);
  return mk(*this, OpCode::Select, vs, vs[1]->type());
}


std::vector<Value *>
Builder::inlineAsmElementwise(const std::string &asmText,
                              const std::string &constraints,
                              std::vector<Value *> args,
                              const std::vector<DType> &resultDTypes,
                              bool pure, int64_t pack) {
  const std::string fn = "tl.inline_asm_elementwise: ";
  for (Value *&a : args)
    if (a->type()->isMemDesc() || a->type()->isToken())
      error(fn + "cannot pass a value of type " + a->type()->str());
  broadcastAll(*this, args);
  if (pack < 1 || pack > 64)
    error(fn + "pack must be between 1 and 64, got " + std::to_string(pack));
  if (resultDTypes.empty())
    error(fn + "needs at least one result dtype");
  std::vector<int64_t> shape = args.empty() ? std::vector<int64_t>{}
                                            : shapeOf(args[0]);
  std::vector<const Type *> types, elems, argElems;
  for (DType d : resultDTypes) {
    elems.push_back(scalarTy(d));
    types.push_back(shape.empty() ? scalarTy(d)
                                  : Type::tensor(scalarTy(d), shape));
  }
  for (Value *a : args)
    argElems.push_back(a->type()->scalarType());
  std::vector<InlineAsmOperand> operands;
  std::string why =
      inlineAsmOperands(constraints, elems, argElems, (int)pack, operands);
  if (!why.empty())
    error(fn + why);
  Operation *op = create(OpCode::InlineAsm, args, types,
                         {{"asm", asmText},
                          {"constraints", constraints},
                          {"pure", pure},
                          {"pack", pack}});
  return op->results();
}

} // namespace tritium
