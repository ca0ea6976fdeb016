// Constant evaluation of pure elementwise ops (see fold.h).
//
// Integers are computed on uint64_t bit patterns and truncated to the
// result's width, so wrap-around matches the hardware's; the op (divsi vs
// divui, cmpi "slt" vs "ult") decides how the bits are read, not the dtype.
// Floats are computed in double and rounded once to the result dtype: for
// + - * / sqrt on fp32/fp16/bf16 operands that double rounding is exact
// (double has more than 2p+2 bits), so folded values equal the GPU's.
#include "tritium/transforms/fold.h"
#include "tritium/support/float_formats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tritium {
namespace {

uint64_t widthMask(int w) { return w >= 64 ? ~0ull : ((1ull << w) - 1); }

int64_t signExtend(uint64_t b, int w) {
  if (w >= 64)
    return (int64_t)b;
  uint64_t m = 1ull << (w - 1);
  b &= widthMask(w);
  return (int64_t)((b ^ m) - m);
}

bool hasFloatBits(DType t) {
  return t == DType::FP16 || t == DType::BF16 || t == DType::FP32 ||
         t == DType::FP64;
}

const std::string *predicateOf(const std::map<std::string, Attribute> &attrs) {
  auto it = attrs.find("predicate");
  if (it == attrs.end())
    return nullptr;
  return std::get_if<std::string>(&it->second);
}

std::optional<bool> compareInts(const std::string &p, const ConstValue &a,
                                const ConstValue &b) {
  int64_t x = a.sext(), y = b.sext();
  uint64_t ux = a.zext(), uy = b.zext();
  if (p == "eq")
    return ux == uy;
  if (p == "ne")
    return ux != uy;
  if (p == "slt")
    return x < y;
  if (p == "sle")
    return x <= y;
  if (p == "sgt")
    return x > y;
  if (p == "sge")
    return x >= y;
  if (p == "ult")
    return ux < uy;
  if (p == "ule")
    return ux <= uy;
  if (p == "ugt")
    return ux > uy;
  if (p == "uge")
    return ux >= uy;
  return std::nullopt;
}

std::optional<bool> compareFloats(const std::string &p, double x, double y) {
  bool unordered = std::isnan(x) || std::isnan(y);
  if (p == "ord")
    return !unordered;
  if (p == "uno")
    return unordered;
  if (p.size() != 3 || (p[0] != 'o' && p[0] != 'u'))
    return std::nullopt;
  if (unordered)
    return p[0] == 'u';
  std::string rel = p.substr(1);
  if (rel == "eq")
    return x == y;
  if (rel == "ne")
    return x != y;
  if (rel == "lt")
    return x < y;
  if (rel == "le")
    return x <= y;
  if (rel == "gt")
    return x > y;
  if (rel == "ge")
    return x >= y;
  return std::nullopt;
}

/// IEEE maximum/minimum ordering zeros as -0 < +0.
double maxOrdered(double x, double y) {
  if (x == y)
    return std::signbit(x) ? y : x;
  return x > y ? x : y;
}
double minOrdered(double x, double y) {
  if (x == y)
    return std::signbit(x) ? x : y;
  return x < y ? x : y;
}

std::optional<ConstValue> intToFloat(bool isSignedSrc, const ConstValue &a,
                                     DType rt) {
  if (isSignedSrc) {
    int64_t v = a.sext();
    if (rt == DType::FP32)
      return ConstValue::ofFloat(rt, (double)(float)v);
    if (rt == DType::FP64)
      return ConstValue::ofFloat(rt, (double)v);
    // Through double is exact below 2^53; beyond, fp16 overflows anyway but
    // bf16 would be rounded twice.
    if (rt == DType::BF16 && (v >= (1ll << 53) || v <= -(1ll << 53)))
      return std::nullopt;
    return ConstValue::ofFloat(rt, (double)v);
  }
  uint64_t v = a.zext();
  if (rt == DType::FP32)
    return ConstValue::ofFloat(rt, (double)(float)v);
  if (rt == DType::FP64)
    return ConstValue::ofFloat(rt, (double)v);
  if (rt == DType::BF16 && v >= (1ull << 53))
    return std::nullopt;
  return ConstValue::ofFloat(rt, (double)v);
}

std::optional<ConstValue> floatToInt(bool toSigned, double x, DType rt) {
  if (std::isnan(x) || std::isinf(x))
    return std::nullopt;
  double t = std::trunc(x);
  int w = bitWidth(rt);
  if (toSigned) {
    double lo = -std::ldexp(1.0, w - 1), hi = std::ldexp(1.0, w - 1);
    if (t < lo || t >= hi)
      return std::nullopt; // poison in LLVM, saturated on the GPU
    return ConstValue::ofInt(rt, (uint64_t)(int64_t)t);
  }
  if (t < 0 || t >= std::ldexp(1.0, w))
    return std::nullopt;
  return ConstValue::ofInt(rt, (uint64_t)t);
}

std::optional<ConstValue> foldInt(OpCode code, const ConstValue &a,
                                  const ConstValue &b, DType rt) {
  int w = bitWidth(a.dtype);
  uint64_t x = a.bits, y = b.bits;
  int64_t sx = a.sext(), sy = b.sext();
  int64_t minSigned = signExtend(1ull << (w - 1), w);
  auto r = [&](uint64_t v) { return ConstValue::ofInt(rt, v); };
  switch (code) {
  case OpCode::AddI:
    return r(x + y);
  case OpCode::SubI:
    return r(x - y);
  case OpCode::MulI:
    return r(x * y);
  case OpCode::MulHiUI:
    return r(uint64_t((unsigned __int128)a.zext() * b.zext() >> w));
  case OpCode::DivSI:
    if (sy == 0 || (sx == minSigned && sy == -1))
      return std::nullopt;
    return r((uint64_t)(sx / sy));
  case OpCode::RemSI:
    if (sy == 0 || (sx == minSigned && sy == -1))
      return std::nullopt;
    return r((uint64_t)(sx % sy));
  case OpCode::DivUI:
    if (b.zext() == 0)
      return std::nullopt;
    return r(a.zext() / b.zext());
  case OpCode::RemUI:
    if (b.zext() == 0)
      return std::nullopt;
    return r(a.zext() % b.zext());
  case OpCode::AndI:
    return r(x & y);
  case OpCode::OrI:
    return r(x | y);
  case OpCode::XOrI:
    return r(x ^ y);
  case OpCode::ShLI:
    if (b.zext() >= (uint64_t)w)
      return std::nullopt;
    return r(x << b.zext());
  case OpCode::ShRSI:
    if (b.zext() >= (uint64_t)w)
      return std::nullopt;
    return r((uint64_t)(sx >> b.zext()));
  case OpCode::ShRUI:
    if (b.zext() >= (uint64_t)w)
      return std::nullopt;
    return r(a.zext() >> b.zext());
  case OpCode::MaxSI:
    return r((uint64_t)std::max(sx, sy));
  case OpCode::MinSI:
    return r((uint64_t)std::min(sx, sy));
  case OpCode::MaxUI:
    return r(std::max(a.zext(), b.zext()));
  case OpCode::MinUI:
    return r(std::min(a.zext(), b.zext()));
  default:
    return std::nullopt;
  }
}

std::optional<ConstValue> foldFloat(OpCode code, double x, double y,
                                    DType rt) {
  auto r = [&](double v) { return ConstValue::ofFloat(rt, v); };
  switch (code) {
  case OpCode::AddF:
    return r(x + y);
  case OpCode::SubF:
    return r(x - y);
  case OpCode::MulF:
    return r(x * y);
  case OpCode::DivF:
    return r(x / y);
  case OpCode::RemF:
    return r(std::fmod(x, y));
  case OpCode::MaximumF:
    return r(std::isnan(x) || std::isnan(y) ? NAN : maxOrdered(x, y));
  case OpCode::MinimumF:
    return r(std::isnan(x) || std::isnan(y) ? NAN : minOrdered(x, y));
  case OpCode::MaxNumF:
    return r(std::isnan(x) ? y : std::isnan(y) ? x : maxOrdered(x, y));
  case OpCode::MinNumF:
    return r(std::isnan(x) ? y : std::isnan(y) ? x : minOrdered(x, y));
  default:
    return std::nullopt;
  }
}

std::optional<ConstValue> foldMath(OpCode code, double x, DType rt) {
  auto r = [&](double v) { return ConstValue::ofFloat(rt, v); };
  switch (code) {
  case OpCode::NegF:
    return r(-x);
  case OpCode::Exp:
    return r(std::exp(x));
  case OpCode::Exp2:
    return r(std::exp2(x));
  case OpCode::Log:
    return r(std::log(x));
  case OpCode::Log2:
    return r(std::log2(x));
  case OpCode::Sqrt:
    return r(std::sqrt(x));
  case OpCode::Rsqrt:
    return r(1.0 / std::sqrt(x));
  case OpCode::AbsF:
    return r(std::fabs(x));
  case OpCode::Sin:
    return r(std::sin(x));
  case OpCode::Cos:
    return r(std::cos(x));
  case OpCode::Floor:
    return r(std::floor(x));
  case OpCode::Ceil:
    return r(std::ceil(x));
  case OpCode::Trunc:
    return r(std::trunc(x));
  case OpCode::RoundEven:
    return r(std::nearbyint(x)); // the default rounding mode: ties to even
  case OpCode::Erf:
    return r(std::erf(x));
  case OpCode::Tanh:
    return r(std::tanh(x));
  default:
    return std::nullopt;
  }
}

} // namespace

// ---------------------------------------------------------------------------
// ConstValue
// ---------------------------------------------------------------------------

ConstValue ConstValue::ofInt(DType t, uint64_t bits) {
  ConstValue c;
  c.dtype = t;
  c.bits = bits & widthMask(bitWidth(t));
  return c;
}

ConstValue ConstValue::ofFloat(DType t, double v) {
  ConstValue c;
  c.dtype = t;
  c.f = roundToDType(v, t);
  return c;
}

int64_t ConstValue::sext() const { return signExtend(bits, bitWidth(dtype)); }
uint64_t ConstValue::zext() const { return bits & widthMask(bitWidth(dtype)); }

Attribute ConstValue::toAttr() const {
  if (isFloat())
    return f;
  if (dtype == DType::I1)
    return bits != 0;
  return asInt();
}

bool ConstValue::operator==(const ConstValue &o) const {
  if (dtype != o.dtype)
    return false;
  if (!isFloat())
    return bits == o.bits;
  if (std::isnan(f) || std::isnan(o.f))
    return std::isnan(f) && std::isnan(o.f);
  return f == o.f && std::signbit(f) == std::signbit(o.f);
}

double roundToDType(double x, DType t) {
  // fp8 values stay as written: the folder never computes in fp8 (see
  // foldElementwise), and the executor and the GPU round them on use.
  if (isFp8(t) || !isFloat(t))
    return x;
  return roundToFloatDType(x, t);
}

// ---------------------------------------------------------------------------
// Reading constants
// ---------------------------------------------------------------------------

std::optional<ConstValue> getConstant(const Value *v) {
  if (!v)
    return std::nullopt;
  Operation *def = v->definingOp();
  if (!def || def->code() != OpCode::Constant)
    return std::nullopt;
  const Type *st = v->type()->scalarType();
  if (!st->isScalar())
    return std::nullopt;
  DType dt = st->dtype();
  auto it = def->attrs().find("value");
  if (it == def->attrs().end())
    return std::nullopt;
  const Attribute &a = it->second;
  if (auto *b = std::get_if<bool>(&a))
    return isFloat(dt) ? ConstValue::ofFloat(dt, *b ? 1 : 0)
                       : ConstValue::ofInt(dt, *b ? 1 : 0);
  if (auto *i = std::get_if<int64_t>(&a))
    return isFloat(dt) ? ConstValue::ofFloat(dt, (double)*i)
                       : ConstValue::ofInt(dt, (uint64_t)*i);
  if (auto *d = std::get_if<double>(&a)) {
    if (!isFloat(dt))
      return std::nullopt;
    return ConstValue::ofFloat(dt, *d);
  }
  return std::nullopt;
}

bool isConstantInt(const Value *v, int64_t n) {
  auto c = getConstant(v);
  if (!c)
    return false;
  if (c->isFloat())
    return c->f == (double)n;
  return c->bits == ConstValue::ofInt(c->dtype, (uint64_t)n).bits;
}

bool isConstantFloat(const Value *v, double x) {
  auto c = getConstant(v);
  return c && c->isFloat() && c->f == x &&
         std::signbit(c->f) == std::signbit(x);
}

// ---------------------------------------------------------------------------
// Folding
// ---------------------------------------------------------------------------

std::optional<ConstValue>
foldElementwise(OpCode code, const std::map<std::string, Attribute> &attrs,
                const std::vector<ConstValue> &ops, DType rt) {
  const OpInfo &info = opInfo(code);
  if (!(info.traits & PURE) || !(info.traits & ELEM) || ops.empty())
    return std::nullopt;
  if (code == OpCode::Select) {
    if (ops.size() != 3)
      return std::nullopt;
    ConstValue r = (ops[0].bits & 1) ? ops[1] : ops[2];
    if (r.dtype != rt)
      return std::nullopt;
    return r;
  }
  // fp8 arithmetic and conversions saturate or round in target-specific
  // ways; leave them to the hardware.
  if (isFp8(rt))
    return std::nullopt;
  for (const ConstValue &c : ops)
    if (isFp8(c.dtype))
      return std::nullopt;

  const ConstValue &a = ops[0];
  switch (code) {
  case OpCode::AddI:
  case OpCode::SubI:
  case OpCode::MulI:
  case OpCode::DivSI:
  case OpCode::DivUI:
  case OpCode::RemSI:
  case OpCode::RemUI:
  case OpCode::AndI:
  case OpCode::OrI:
  case OpCode::XOrI:
  case OpCode::ShLI:
  case OpCode::ShRSI:
  case OpCode::ShRUI:
  case OpCode::MaxSI:
  case OpCode::MinSI:
  case OpCode::MaxUI:
  case OpCode::MinUI:
  case OpCode::MulHiUI:
    if (ops.size() != 2 || a.isFloat() || ops[1].isFloat() || isFloat(rt))
      return std::nullopt;
    return foldInt(code, a, ops[1], rt);
  case OpCode::CmpI: {
    const std::string *p = predicateOf(attrs);
    if (!p || ops.size() != 2 || a.isFloat())
      return std::nullopt;
    auto r = compareInts(*p, a, ops[1]);
    if (!r)
      return std::nullopt;
    return ConstValue::ofInt(rt, *r ? 1 : 0);
  }
  case OpCode::AddF:
  case OpCode::SubF:
  case OpCode::MulF:
  case OpCode::DivF:
  case OpCode::RemF:
  case OpCode::MaximumF:
  case OpCode::MinimumF:
  case OpCode::MaxNumF:
  case OpCode::MinNumF:
    if (ops.size() != 2 || !a.isFloat() || !ops[1].isFloat() || !isFloat(rt))
      return std::nullopt;
    return foldFloat(code, a.f, ops[1].f, rt);
  case OpCode::CmpF: {
    const std::string *p = predicateOf(attrs);
    if (!p || ops.size() != 2 || !a.isFloat())
      return std::nullopt;
    auto r = compareFloats(*p, a.f, ops[1].f);
    if (!r)
      return std::nullopt;
    return ConstValue::ofInt(rt, *r ? 1 : 0);
  }
  case OpCode::ExtSI:
    return isFloat(rt) ? std::nullopt
                       : std::optional(ConstValue::ofInt(rt, a.sext()));
  case OpCode::ExtUI:
    return isFloat(rt) ? std::nullopt
                       : std::optional(ConstValue::ofInt(rt, a.zext()));
  case OpCode::TruncI:
    return isFloat(rt) ? std::nullopt
                       : std::optional(ConstValue::ofInt(rt, a.bits));
  case OpCode::SIToFP:
  case OpCode::UIToFP:
    if (a.isFloat() || !isFloat(rt))
      return std::nullopt;
    return intToFloat(code == OpCode::SIToFP, a, rt);
  case OpCode::FPToSI:
  case OpCode::FPToUI:
    if (!a.isFloat() || isFloat(rt))
      return std::nullopt;
    return floatToInt(code == OpCode::FPToSI, a.f, rt);
  case OpCode::ExtF:
  case OpCode::TruncF:
    if (!a.isFloat() || !isFloat(rt))
      return std::nullopt;
    if (attrs.count("rounding")) // rtz: the executor and the GPU round
      return std::nullopt;
    return ConstValue::ofFloat(rt, a.f);
  case OpCode::Bitcast: {
    if (bitWidth(a.dtype) != bitWidth(rt))
      return std::nullopt;
    if ((a.isFloat() && !hasFloatBits(a.dtype)) ||
        (isFloat(rt) && !hasFloatBits(rt)))
      return std::nullopt;
    uint64_t bits = a.isFloat() ? encodeFloat(a.f, a.dtype) : a.bits;
    if (!isFloat(rt))
      return ConstValue::ofInt(rt, bits);
    double x = decodeFloat(bits, rt);
    if (std::isnan(x))
      return std::nullopt; // the attribute cannot carry a NaN's payload
    return ConstValue::ofFloat(rt, x);
  }
  case OpCode::AbsI: {
    if (a.isFloat() || isFloat(rt))
      return std::nullopt;
    int64_t v = a.sext();
    return ConstValue::ofInt(rt, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
  }
  case OpCode::Fma: {
    if (ops.size() != 3 || !isFloat(rt))
      return std::nullopt;
    for (const ConstValue &c : ops)
      if (!c.isFloat())
        return std::nullopt;
    if (rt == DType::FP32)
      return ConstValue::ofFloat(
          rt, std::fmaf((float)a.f, (float)ops[1].f, (float)ops[2].f));
    return ConstValue::ofFloat(rt, std::fma(a.f, ops[1].f, ops[2].f));
  }
  default:
    break;
  }
  // Remaining unary float ops (negf, math.*).
  if (ops.size() != 1 || !a.isFloat() || !isFloat(rt))
    return std::nullopt;
  return foldMath(code, a.f, rt);
}

std::optional<ConstValue> evaluateConstant(const Value *v, int depth) {
  if (auto c = getConstant(v))
    return c;
  if (!v || depth <= 0)
    return std::nullopt;
  Operation *def = v->definingOp();
  if (!def || def->numResults() != 1)
    return std::nullopt;
  // Splat and data movement repeat or move their operand's elements, so a
  // uniform operand gives a uniform result of the same value.
  if (def->code() == OpCode::Splat || def->hasTrait(MOVE)) {
    if (def->numOperands() != 1)
      return std::nullopt;
    return evaluateConstant(def->operand(0), depth - 1);
  }
  if (!def->hasTrait(PURE) || !def->hasTrait(ELEM))
    return std::nullopt;
  const Type *st = v->type()->scalarType();
  if (!st->isScalar())
    return std::nullopt;
  std::vector<ConstValue> ops;
  for (Value *o : def->operands()) {
    auto c = evaluateConstant(o, depth - 1);
    if (!c)
      return std::nullopt;
    ops.push_back(*c);
  }
  return foldElementwise(def->code(), def->attrs(), ops, st->dtype());
}

std::unique_ptr<Operation> makeConstant(const Type *type, const ConstValue &c,
                                        Location loc) {
  return Operation::create(OpCode::Constant, {}, {type},
                           {{"value", c.toAttr()}}, std::move(loc));
}

Value *insertConstant(Block &block, Block::iterator pos, const Type *type,
                      const ConstValue &c, Location loc) {
  return block.insert(pos, makeConstant(type, c, std::move(loc)))->result(0);
}

namespace {

/// An upper bound U with 0 <= v <= U for every element of v, proven by the
/// ops that make v without wrap-around in v's type (each sum and product is
/// checked against the type's signed maximum); nullopt where they prove
/// nothing. Program ids and grid sizes are below 2^31 (CUDA's grid limit),
/// a range lies within [start, end).
std::optional<uint64_t> nonNegativeBound(const Value *v, int depth) {
  Operation *d = v->definingOp();
  const Type *st = v->type()->scalarType();
  if (!d || depth <= 0 || st->isPointer() || !isInteger(st->dtype()))
    return std::nullopt;
  int bits = bitWidth(st->dtype());
  if (bits < 8)
    return std::nullopt;
  const unsigned __int128 maxPos = (((unsigned __int128)1) << (bits - 1)) - 1;
  auto fits = [&](unsigned __int128 x) -> std::optional<uint64_t> {
    if (x > maxPos)
      return std::nullopt;
    return (uint64_t)x;
  };
  auto operand = [&](unsigned i) { return nonNegativeBound(d->operand(i), depth - 1); };
  auto positiveConstant = [&](unsigned i) -> std::optional<uint64_t> {
    auto c = getConstant(d->operand(i));
    if (!c || c->isFloat() || c->sext() <= 0)
      return std::nullopt;
    return (uint64_t)c->sext();
  };
  switch (d->code()) {
  case OpCode::GetProgramId:
  case OpCode::GetNumPrograms:
    return fits(INT32_MAX);
  case OpCode::MakeRange: {
    int64_t start = d->intAttr("start"), end = d->intAttr("end");
    if (start < 0 || end <= start)
      return std::nullopt;
    return fits((uint64_t)(end - 1));
  }
  case OpCode::Constant: {
    auto c = getConstant(v);
    if (!c || c->isFloat() || c->sext() < 0)
      return std::nullopt;
    return fits((uint64_t)c->sext());
  }
  case OpCode::ExtSI:
    return operand(0);
  case OpCode::ExtUI: {
    if (auto b = operand(0))
      return b;
    int srcBits = bitWidth(d->operand(0)->type()->scalarType()->dtype());
    if (srcBits >= bits)
      return std::nullopt;
    return fits((((unsigned __int128)1) << srcBits) - 1);
  }
  case OpCode::AddI: {
    auto a = operand(0), b = operand(1);
    if (!a || !b)
      return std::nullopt;
    return fits((unsigned __int128)*a + *b);
  }
  case OpCode::MulI: {
    auto a = operand(0), b = operand(1);
    if (!a || !b)
      return std::nullopt;
    return fits((unsigned __int128)*a * *b);
  }
  case OpCode::AndI: { // and with a non-negative value is at most that value
    auto a = operand(0), b = operand(1);
    if (a && b)
      return std::min(*a, *b);
    return a ? a : b;
  }
  case OpCode::DivSI:
  case OpCode::DivUI:
  case OpCode::ShRSI:
  case OpCode::ShRUI: { // a non-negative value divided or shifted down
    auto a = operand(0);
    if (!a)
      return std::nullopt;
    if (d->code() == OpCode::DivSI || d->code() == OpCode::DivUI) {
      auto c = positiveConstant(1);
      return c ? std::optional<uint64_t>(*a / *c) : std::nullopt;
    }
    return a;
  }
  case OpCode::RemSI:
  case OpCode::RemUI: {
    auto a = operand(0), c = positiveConstant(1);
    if (!a || !c)
      return std::nullopt;
    return std::min(*a, *c - 1);
  }
  case OpCode::MinSI: {
    auto a = operand(0), b = operand(1);
    if (!a || !b)
      return std::nullopt;
    return std::min(*a, *b);
  }
  case OpCode::MaxSI: {
    auto a = operand(0), b = operand(1);
    if (!a || !b)
      return std::nullopt;
    return std::max(*a, *b);
  }
  case OpCode::Splat:
    return operand(0);
  default:
    // The MOVE ops (broadcast, expand_dims, reshape, trans, convert_layout)
    // repeat their operand's elements.
    if (d->hasTrait(MOVE))
      return operand(0);
    return std::nullopt;
  }
}

} // namespace

// Depth 12: the operand trees are walked without memo, so a value built from
// shared subexpressions costs at most 2^12 visits.
bool knownNonNegative(const Value *v) { return nonNegativeBound(v, 12).has_value(); }

} // namespace tritium
