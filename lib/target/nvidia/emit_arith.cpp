// Integer and float arithmetic, comparisons, select and math, one element at
// a time.
//
// Integers compute in their register width (8-bit ints in 16 bits, then
// re-extended). fp16, bf16 and fp8 compute in fp32 and round back once per
// op, which for +, -, *, / and sqrt gives the correctly rounded result (fp32
// has more than twice their precision). fp32/fp64 add/sub/mul carry no
// rounding modifier, so ptxas may fuse them into fma as Triton lets LLVM do
// (GPUOptions::enableFpFusion = false adds `.rn`, which forbids it). fp32
// math: exp on ex2.approx.ftz and rsqrt.approx.ftz as Triton 3.6's PTX has
// them; log/log2 on lg2.approx and sin/cos.approx, where Triton 3.6 calls
// libdevice's accurate routines; sqrt as Triton's (sqrt.approx.ftz, and
// sqrt.rn for sqrt_rn); `/` as div.full; erf and tanh from short formulas.
// fp64 exp, exp2, log, log2, sin and cos are fp64 sequences (below 0.7 ulp,
// as Triton's fp64 math is full precision); fp64 erf and tanh still run in
// fp32.
// fmod (RemF) is exact, as C's.
#include "emitter.h"
#include "tritium/support/divide.h"

#include "tritium/transforms/fold.h"

#include "tritium/support/float_formats.h"

#include <cmath>

#include <cstring>
#include <optional>

namespace tritium::nvidia {

namespace {

int regBits(DType t) { return std::max(16, bitWidth(t)); }

bool isSmallFloat(DType t) {
  return t == DType::FP16 || t == DType::BF16 || isFp8(t);
}

std::string f64Imm(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0d%016llX", (unsigned long long)b);
  return buf;
}

// ---- integers ---------------------------------------------------------------

bool isSignedOp(OpCode c) {
  return c == OpCode::DivSI || c == OpCode::RemSI || c == OpCode::ShRSI ||
         c == OpCode::MaxSI || c == OpCode::MinSI;
}

/// An i1 as a 16-bit 0/1 (or 0/-1 for signed ops), and back.
std::string widenBool(Emitter &e, const std::string &p, bool signedOp) {
  std::string r = e.reg(RC::B16);
  e.ins("selp.u16 " + r + ", " + (signedOp ? "-1" : "1") + ", 0, " + p);
  return r;
}
std::string narrowBool(Emitter &e, const std::string &r) {
  std::string t = e.reg(RC::B16), p = e.reg(RC::Pred);
  e.ins("and.b16 " + t + ", " + r + ", 1");
  e.ins("setp.ne.u16 " + p + ", " + t + ", 0");
  return p;
}

std::string intBinary(Emitter &e, OpCode c, DType t, std::string a,
                      std::string b);

std::string boolBinary(Emitter &e, OpCode c, const std::string &a,
                       const std::string &b) {
  std::string d = e.reg(RC::Pred);
  switch (c) {
  case OpCode::AndI:
  case OpCode::MulI:
  case OpCode::MinUI:
  case OpCode::MaxSI:
    e.ins("and.pred " + d + ", " + a + ", " + b);
    return d;
  case OpCode::OrI:
  case OpCode::MaxUI:
  case OpCode::MinSI:
    e.ins("or.pred " + d + ", " + a + ", " + b);
    return d;
  case OpCode::XOrI:
  case OpCode::AddI:
  case OpCode::SubI:
    e.ins("xor.pred " + d + ", " + a + ", " + b);
    return d;
  default: {
    bool s = isSignedOp(c);
    std::string r =
        intBinary(e, c, DType::I16, widenBool(e, a, s), widenBool(e, b, s));
    return narrowBool(e, r);
  }
  }
}

/// A shift amount as the .u32 PTX wants (amounts past the width clamp).
std::string shiftAmount(Emitter &e, DType t, const std::string &b) {
  int bits = regBits(t);
  if (bits == 32)
    return b;
  std::string r = e.reg(RC::B32);
  if (bits == 16) {
    e.ins("cvt.u32.u16 " + r + ", " + b);
  } else {
    std::string m = e.reg(RC::B64);
    e.ins("min.u64 " + m + ", " + b + ", 64");
    e.ins("cvt.u32.u64 " + r + ", " + m);
  }
  return r;
}

std::string intBinary(Emitter &e, OpCode c, DType t, std::string a,
                      std::string b) {
  if (t == DType::I1)
    return boolBinary(e, c, a, b);
  bool signedOp = isSignedOp(c) ||
                  (isSigned(t) && !(c == OpCode::DivUI || c == OpCode::RemUI ||
                                    c == OpCode::ShRUI || c == OpCode::MaxUI ||
                                    c == OpCode::MinUI || c == OpCode::MulHiUI));
  a = prepareInt(e, t, a, signedOp);
  b = prepareInt(e, t, b, signedOp);
  RC rc = regClass(Type::scalar(t));
  std::string ty = intType(t, signedOp), bt = bitType(rc);
  std::string d = e.reg(rc);
  std::string ops = " " + d + ", " + a + ", " + b;
  switch (c) {
  case OpCode::AddI:
    e.ins("add." + ty + ops);
    break;
  case OpCode::SubI:
    e.ins("sub." + ty + ops);
    break;
  case OpCode::MulI:
    e.ins("mul.lo." + ty + ops);
    break;
  case OpCode::MulHiUI:
    if (bitWidth(t) == 8) {
      // 8-bit ints live zero-extended in 16 bits: the high byte of the
      // 16-bit product.
      std::string p = e.reg(rc);
      e.ins("mul.lo.u16 " + p + ", " + a + ", " + b);
      e.ins("shr.u16 " + d + ", " + p + ", 8");
    } else {
      e.ins("mul.hi." + intType(t, false) + ops);
    }
    break;
  case OpCode::DivSI:
  case OpCode::DivUI:
    e.ins("div." + ty + ops);
    break;
  case OpCode::RemSI:
  case OpCode::RemUI:
    e.ins("rem." + ty + ops);
    break;
  case OpCode::AndI:
    e.ins("and." + bt + ops);
    break;
  case OpCode::OrI:
    e.ins("or." + bt + ops);
    break;
  case OpCode::XOrI:
    e.ins("xor." + bt + ops);
    break;
  case OpCode::MaxSI:
  case OpCode::MaxUI:
    e.ins("max." + ty + ops);
    break;
  case OpCode::MinSI:
  case OpCode::MinUI:
    e.ins("min." + ty + ops);
    break;
  case OpCode::ShLI:
  case OpCode::ShRSI:
  case OpCode::ShRUI: {
    std::string amt = shiftAmount(e, t, b);
    std::string mn = c == OpCode::ShLI ? "shl." + bt : "shr." + ty;
    e.ins(mn + " " + d + ", " + a + ", " + amt);
    break;
  }
  default:
    throw InternalError("intBinary: unexpected op");
  }
  return normalizeInt(e, t, d);
}

/// n / d or n % d for a constant d (`c` a div or rem op on 32- or 64-bit
/// integers), following planDivision (support/divide.h): a shift, or a
/// mul.hi by the magic number and shifts, where ptxas would emit its generic
/// division (about 20 instructions). "" when the plan leaves it to div/rem.
/// A signed op on a dividend known to be >= 0 by a positive d divides as
/// unsigned: the same result, without the sign fix-up.
std::string divideByConstant(Emitter &e, const Block *blk, OpCode c, DType t,
                             const std::string &n, int64_t d, bool nonNegative) {
  int bits = bitWidth(t);
  if (bits != 32 && bits != 64)
    return "";
  bool signedOp = (c == OpCode::DivSI || c == OpCode::RemSI) ||
                  (isSigned(t) && c != OpCode::DivUI && c != OpCode::RemUI);
  bool rem = c == OpCode::RemSI || c == OpCode::RemUI;
  int64_t sd = bits == 32 ? (int64_t)(int32_t)(uint32_t)d : d;
  if (signedOp && nonNegative && sd > 0)
    signedOp = false;
  DivisionPlan p = planDivision(bits, signedOp, d);
  if (p.kind == DivisionPlan::Kind::Generic)
    return "";
  RC rc = bits == 32 ? RC::B32 : RC::B64;
  std::string s = intType(t, true), u = intType(t, false), b = bitType(rc);
  auto imm = [&](uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, bits == 32 ? "0x%08llX" : "0x%016llX",
                  (unsigned long long)v);
    std::string r = e.reg(rc);
    e.ins("mov." + b + " " + r + ", " + buf);
    return r;
  };
  auto op = [&](const std::string &ins, const std::string &x,
                const std::string &y) {
    std::string r = e.reg(rc);
    e.ins(ins + " " + r + ", " + x + ", " + y);
    return r;
  };
  uint64_t mask = bits == 32 ? 0xFFFFFFFFull : ~0ull;
  uint64_t ud = (uint64_t)d & mask;
  uint64_t ad = signedOp && p.divisor < 0 ? (0 - ud) & mask : ud;
  // The quotient by |d| for the shift plans (a remainder needs only that).
  std::string q;
  switch (p.kind) {
  case DivisionPlan::Kind::Identity:
    return rem ? imm(0) : n;
  case DivisionPlan::Kind::Shift:
    if (!signedOp)
      return rem ? op("and." + b, n, imm(ad - 1))
                 : op("shr." + u, n, std::to_string(p.shift));
    {
      // (n + (n < 0 ? |d| - 1 : 0)) >> k, the bias from the sign bits.
      std::string sign = op("shr." + s, n, std::to_string(bits - 1));
      std::string bias = op("shr." + u, sign, std::to_string(bits - p.shift));
      std::string sum = op("add." + s, n, bias);
      if (rem) // n - (sum with the low k bits cleared)
        return op("sub." + s, n, op("and." + b, sum, imm(~(ad - 1) & mask)));
      q = op("shr." + s, sum, std::to_string(p.shift));
      if (p.divisor < 0) {
        std::string r = e.reg(rc);
        e.ins("neg." + s + " " + r + ", " + q);
        q = r;
      }
      return q;
    }
  case DivisionPlan::Kind::Magic: {
    auto key = std::make_tuple(blk, n, d, signedOp);
    auto known = e.quotients.find(key);
    if (known != e.quotients.end())
      q = known->second;
    else if (!signedOp) {
      std::string t = op("mul.hi." + u, n, imm(p.magic));
      if (!p.add)
        q = p.shift ? op("shr." + u, t, std::to_string(p.shift)) : t;
      else
        q = op("shr." + u,
               op("add." + u, op("shr." + u, op("sub." + u, n, t), "1"), t),
               std::to_string(p.shift - 1));
    } else {
      q = op("mul.hi." + s, n, imm(p.magic));
      if (p.correction > 0)
        q = op("add." + s, q, n);
      else if (p.correction < 0)
        q = op("sub." + s, q, n);
      if (p.shift)
        q = op("shr." + s, q, std::to_string(p.shift));
      q = op("add." + s, q, op("shr." + u, q, std::to_string(bits - 1)));
    }
    e.quotients.emplace(key, q);
    if (!rem)
      return q;
    return op("sub." + (signedOp ? s : u), n, op("mul.lo." + (signedOp ? s : u), q, imm(ud)));
  }
  case DivisionPlan::Kind::Generic:
    break;
  }
  return "";
}

const char *cmpName(const std::string &p) {
  static const std::pair<const char *, const char *> names[] = {
      {"eq", "eq"},   {"ne", "ne"},   {"slt", "lt"},  {"sle", "le"},
      {"sgt", "gt"},  {"sge", "ge"},  {"ult", "lt"},  {"ule", "le"},
      {"ugt", "gt"},  {"uge", "ge"},  {"oeq", "eq"},  {"one", "ne"},
      {"olt", "lt"},  {"ole", "le"},  {"ogt", "gt"},  {"oge", "ge"},
      {"ueq", "equ"}, {"une", "neu"}, {"ult", "ltu"}, {"ule", "leu"},
      {"ugt", "gtu"}, {"uge", "geu"}};
  for (auto &[k, v] : names)
    if (p == k)
      return v;
  return nullptr;
}

std::string cmpInt(Emitter &e, const Operation &op, const Type *t,
                   std::string a, std::string b) {
  const std::string &pred = op.strAttr("predicate");
  const char *cn = cmpName(pred);
  if (!cn)
    e.internalError(op, "has an unknown predicate");
  bool signedOp = pred[0] == 's';
  std::string d = e.reg(RC::Pred);
  if (t->isPointer()) {
    e.ins(std::string("setp.") + cn + (signedOp ? ".s64 " : ".u64 ") + d +
          ", " + a + ", " + b);
    return d;
  }
  DType dt = t->dtype();
  if (dt == DType::I1) {
    if (pred == "eq" || pred == "ne") {
      std::string x = e.reg(RC::Pred);
      e.ins("xor.pred " + x + ", " + a + ", " + b);
      if (pred == "ne")
        return x;
      e.ins("not.pred " + d + ", " + x);
      return d;
    }
    a = widenBool(e, a, signedOp);
    b = widenBool(e, b, signedOp);
    dt = DType::I16;
  }
  a = prepareInt(e, dt, a, signedOp);
  b = prepareInt(e, dt, b, signedOp);
  e.ins(std::string("setp.") + cn + "." + intType(dt, signedOp) + " " + d +
        ", " + a + ", " + b);
  return d;
}

// ---- floats -----------------------------------------------------------------

std::string fmodF64(Emitter &e, const std::string &a, const std::string &b);

std::string floatBinary(Emitter &e, const Operation &op, OpCode c, DType t,
                        std::string a, std::string b) {
  // fp16 (any target) and bf16 (sm_90) add, sub and mul run natively:
  // fp32 carries more than twice their precision, so computing in fp32 and
  // rounding once gives the same result, in three instructions more per
  // element; ptxas pairs the native ones into HADD2/HMUL2/HFMA2 (Triton's
  // code for bf16 * bf16).
  bool native = t == DType::FP16 || (t == DType::BF16 && e.opts.target.sm >= 90);
  if (native && (c == OpCode::AddF || c == OpCode::SubF || c == OpCode::MulF)) {
    std::string d = e.reg(RC::B16);
    const char *name = c == OpCode::AddF ? "add" : c == OpCode::SubF ? "sub" : "mul";
    std::string rn = e.opts.enableFpFusion ? "." : ".rn.";
    e.ins(name + rn + (t == DType::FP16 ? "f16 " : "bf16 ") + d + ", " + a + ", " + b);
    return d;
  }
  if (isSmallFloat(t)) {
    std::string r = floatBinary(e, op, c, DType::FP32, toF32(e, op, t, a),
                                toF32(e, op, t, b));
    return fromF32(e, op, t, r);
  }
  bool f32 = t == DType::FP32;
  std::string ty = f32 ? "f32" : "f64";
  RC rc = f32 ? RC::F32 : RC::F64;
  std::string d = e.reg(rc);
  std::string ops = " " + d + ", " + a + ", " + b;
  // Without a rounding modifier ptxas may fuse a multiply and an add.
  std::string rn = e.opts.enableFpFusion ? "." : ".rn.";
  switch (c) {
  case OpCode::AddF:
    e.ins("add" + rn + ty + ops);
    break;
  case OpCode::SubF:
    e.ins("sub" + rn + ty + ops);
    break;
  case OpCode::MulF:
    e.ins("mul" + rn + ty + ops);
    break;
  case OpCode::DivF:
    // fp32 `/` is div.full.f32 (at most 2 ulp, full range), as Triton lowers
    // arith.divf. div.rn.f32 expands to a Newton step plus a call to a
    // slow-path subroutine whose live registers push a 16-warp row softmax
    // from 64 to 82 registers: one CTA per SM instead of two. An op marked
    // {rounding = "rn"} (tl.div_rn) keeps the correctly rounded quotient.
    if (f32 && !(op.hasAttr("rounding") && op.strAttr("rounding") == "rn"))
      e.ins("div.full.f32" + ops);
    else
      e.ins("div.rn." + ty + ops);
    break;
  case OpCode::MaxNumF:
    e.ins("max." + ty + ops);
    break;
  case OpCode::MinNumF:
    e.ins("min." + ty + ops);
    break;
  case OpCode::MaximumF:
  case OpCode::MinimumF: {
    const char *mn = c == OpCode::MaximumF ? "max" : "min";
    if (f32) {
      e.ins(std::string(mn) + ".NaN.f32" + ops);
      break;
    }
    std::string m = e.reg(RC::F64), p = e.reg(RC::Pred);
    e.ins(std::string(mn) + ".f64 " + m + ", " + a + ", " + b);
    e.ins("setp.nan.f64 " + p + ", " + a + ", " + b);
    e.ins("selp.f64 " + d + ", 0d7FF8000000000000, " + m + ", " + p);
    break;
  }
  case OpCode::RemF: {
    // C's fmod, exact; fp32 operands convert to fp64 and back exactly.
    if (!f32)
      return fmodF64(e, a, b);
    std::string a64 = e.reg(RC::F64), b64 = e.reg(RC::F64);
    e.ins("cvt.f64.f32 " + a64 + ", " + a);
    e.ins("cvt.f64.f32 " + b64 + ", " + b);
    e.ins("cvt.rn.f32.f64 " + d + ", " + fmodF64(e, a64, b64));
    break;
  }
  default:
    e.internalError(op, "is not a float binary op");
  }
  return d;
}

std::string cmpFloat(Emitter &e, const Operation &op, DType t, std::string a,
                     std::string b) {
  if (isSmallFloat(t)) {
    a = toF32(e, op, t, a);
    b = toF32(e, op, t, b);
    t = DType::FP32;
  }
  const char *cn = cmpName(op.strAttr("predicate"));
  if (!cn)
    e.internalError(op, "has an unknown predicate");
  std::string d = e.reg(RC::Pred);
  e.ins(std::string("setp.") + cn + (t == DType::FP32 ? ".f32 " : ".f64 ") + d +
        ", " + a + ", " + b);
  return d;
}

/// Polynomial p(x) = c0 + c1 x + ... (Horner), fp32.
std::string poly(Emitter &e, const std::string &x,
                 const std::vector<float> &c) {
  std::string acc = e.reg(RC::F32);
  e.ins("mov.f32 " + acc + ", " + f32Imm(c.back()));
  for (int i = (int)c.size() - 2; i >= 0; --i) {
    std::string n = e.reg(RC::F32);
    e.ins("fma.rn.f32 " + n + ", " + acc + ", " + x + ", " + f32Imm(c[i]));
    acc = n;
  }
  return acc;
}

std::string unaryF32(Emitter &e, const std::string &mn, const std::string &a) {
  std::string d = e.reg(RC::F32);
  e.ins(mn + " " + d + ", " + a);
  return d;
}

std::string mathF32(Emitter &e, const Operation &op, OpCode c,
                    const std::string &a) {
  switch (c) {
  // exp and exp2 flush subnormal results (x < -126) to zero, as Triton's
  // do: without .ftz the instruction costs a compare and two multiplies
  // more (ptxas scales the input into range and the result back), a third
  // of an attention loop's softmax.
  case OpCode::Exp: {
    std::string t = e.reg(RC::F32);
    e.ins("mul.f32 " + t + ", " + a + ", 0f3FB8AA3B"); // log2(e)
    return unaryF32(e, "ex2.approx.ftz.f32", t);
  }
  case OpCode::Exp2:
    return unaryF32(e, "ex2.approx.ftz.f32", a);
  case OpCode::Log: {
    std::string t = unaryF32(e, "lg2.approx.f32", a);
    std::string d = e.reg(RC::F32);
    e.ins("mul.f32 " + d + ", " + t + ", 0f3F317218"); // ln(2)
    return d;
  }
  case OpCode::Log2:
    return unaryF32(e, "lg2.approx.f32", a);
  case OpCode::Sqrt:
    // tl.sqrt is Triton's fast root (sqrt.approx.ftz, as libdevice's
    // __nv_sqrtf is in Triton's PTX too): one MUFU.RSQ and a multiply
    // against sqrt.rn's refinement and slow-path branch. tl.sqrt_rn
    // ({rounding = "rn"}) keeps the correctly rounded root.
    if (op.hasAttr("rounding") && op.strAttr("rounding") == "rn")
      return unaryF32(e, "sqrt.rn.f32", a);
    return unaryF32(e, "sqrt.approx.ftz.f32", a);
  case OpCode::Rsqrt:
    // .ftz, as Triton's (libdevice's __nv_rsqrtf): a subnormal input gives
    // inf; without it ptxas scales every input into range first (a compare
    // and two multiplies).
    return unaryF32(e, "rsqrt.approx.ftz.f32", a);
  case OpCode::Sin:
    return unaryF32(e, "sin.approx.f32", a);
  case OpCode::Cos:
    return unaryF32(e, "cos.approx.f32", a);
  case OpCode::Floor:
    return unaryF32(e, "cvt.rmi.f32.f32", a);
  case OpCode::Ceil:
    return unaryF32(e, "cvt.rpi.f32.f32", a);
  case OpCode::Trunc:
    return unaryF32(e, "cvt.rzi.f32.f32", a);
  case OpCode::RoundEven:
    return unaryF32(e, "cvt.rni.f32.f32", a);
  case OpCode::AbsF:
    return unaryF32(e, "abs.f32", a);
  case OpCode::Erf: {
    // |x| < 0.5: the Taylor series to x^9 (error < 4e-7 relative);
    // otherwise Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7).
    std::string ax = unaryF32(e, "abs.f32", a);
    std::string x2 = e.reg(RC::F32);
    e.ins("mul.f32 " + x2 + ", " + a + ", " + a);
    std::string s = poly(e, x2,
                         {1.1283791671f, -0.3761263890f, 0.1128379167f,
                          -0.0268661706f, 0.0052239776f});
    std::string small = e.reg(RC::F32);
    e.ins("mul.f32 " + small + ", " + s + ", " + a);
    // 1 / den as rcp.approx and one Newton step, not rcp.rn's branchy
    // subroutine (see Tanh); |x| clamped to 16 (erf is 1 in fp32 from 3.92
    // on) keeps den finite, min.NaN keeps NaN.
    std::string axc = e.reg(RC::F32), den = e.reg(RC::F32), r0 = e.reg(RC::F32),
                nd = e.reg(RC::F32), er = e.reg(RC::F32), t = e.reg(RC::F32);
    e.ins("min.NaN.f32 " + axc + ", " + ax + ", 0f41800000"); // 16
    e.ins("fma.rn.f32 " + den + ", " + axc +
          ", 0f3EA7BA05, 0f3F800000"); // 1 + p|x|
    e.ins("rcp.approx.ftz.f32 " + r0 + ", " + den);
    e.ins("neg.f32 " + nd + ", " + den);
    e.ins("fma.rn.f32 " + er + ", " + nd + ", " + r0 + ", 0f3F800000"); // 1 - den r0
    e.ins("fma.rn.f32 " + t + ", " + er + ", " + r0 + ", " + r0);
    std::string p = poly(e, t,
                         {0.0f, 0.254829592f, -0.284496736f, 1.421413741f,
                          -1.453152027f, 1.061405429f});
    std::string nx2 = e.reg(RC::F32), ex = e.reg(RC::F32), y = e.reg(RC::F32),
                big = e.reg(RC::F32);
    // .ftz: a subnormal input (|x| < 2^-63) gives 1 either way, and a
    // subnormal result (|x| > 9.3) only meets 1 - p*ex, which is 1 there.
    e.ins("mul.f32 " + nx2 + ", " + x2 + ", 0fBFB8AA3B"); // -x^2 log2(e)
    e.ins("ex2.approx.ftz.f32 " + ex + ", " + nx2);
    e.ins("mul.f32 " + y + ", " + p + ", " + ex);
    e.ins("sub.rn.f32 " + big + ", 0f3F800000, " + y);
    std::string sb = e.reg(RC::F32);
    e.ins("copysign.f32 " + sb + ", " + a + ", " + big);
    std::string lt = e.reg(RC::Pred), d = e.reg(RC::F32);
    e.ins("setp.lt.f32 " + lt + ", " + ax + ", 0f3F000000");
    e.ins("selp.f32 " + d + ", " + small + ", " + sb + ", " + lt);
    return d;
  }
  case OpCode::Tanh: {
    // |x| < 0.6: x + x^3 P(x^2), P of degree 4 fitted to tanh in relative
    // error on [0, 0.6]; otherwise sign(x) * (1 - 2 / (exp(2|x|) + 1)),
    // which saturates to +-1. From 0.6 on the subtraction keeps the
    // quotient's error within about an ulp of the result, so rcp.approx needs
    // no Newton step (div.rn.f32 is a branchy subroutine in SASS whose blocks
    // kept ptxas from interleaving a wide elementwise chain: Liger-Kernel's
    // GEGLU backward spilled 440 bytes). The threshold used to be 0.125,
    // where the subtraction multiplies the quotient's error by 8: 6.6 ulp
    // with a Newton-refined reciprocal. python/test/test_tanh_ptx.py runs
    // this sequence in an interpreter: at most 2 ulp with ex2/rcp.approx
    // exact, 4 with both off by their documented bounds. ex2 flushes
    // subnormals (.ftz): its input 2|x| log2(e) is >= 0 and its result >= 1,
    // so only an input below 2^-126 changes, to ex2(0) = 1, which it rounds
    // to anyway; without .ftz ptxas adds a compare and two multiplies per
    // element (Liger's DyT forward: 296 SASS instructions against Triton's
    // 288, 56 FMUL against 24). Large |x| needs no clamp: ex2.approx(+inf)
    // is +inf and rcp.approx(+inf) is +0, so 1 - 2r is 1; a NaN stays NaN.
    std::string ax = unaryF32(e, "abs.f32", a);
    std::string z = e.reg(RC::F32), az = e.reg(RC::F32), small = e.reg(RC::F32);
    e.ins("mul.f32 " + z + ", " + a + ", " + a);
    std::string p = poly(e, z,
                         {-0.33333299f, 0.13331924f, -0.053783838f,
                          0.020796001f, -0.0058951918f});
    e.ins("mul.f32 " + az + ", " + a + ", " + z);
    e.ins("fma.rn.f32 " + small + ", " + p + ", " + az + ", " + a);
    std::string t = e.reg(RC::F32), ex = e.reg(RC::F32), den = e.reg(RC::F32),
                r = e.reg(RC::F32), big = e.reg(RC::F32), sb = e.reg(RC::F32);
    e.ins("mul.f32 " + t + ", " + ax + ", 0f4038AA3B"); // 2 log2(e)
    e.ins("ex2.approx.ftz.f32 " + ex + ", " + t);
    e.ins("add.f32 " + den + ", " + ex + ", 0f3F800000");
    e.ins("rcp.approx.ftz.f32 " + r + ", " + den);
    e.ins("fma.rn.f32 " + big + ", " + r + ", 0fC0000000, 0f3F800000"); // 1 - 2r
    // x's sign on either result: the series gives +0 for -0 (p x^3 + x =
    // +0 + -0), and tanh(-0) is -0.
    std::string lt = e.reg(RC::Pred), sel = e.reg(RC::F32);
    e.ins("setp.lt.f32 " + lt + ", " + ax + ", 0f3F19999A"); // 0.6
    e.ins("selp.f32 " + sel + ", " + small + ", " + big + ", " + lt);
    e.ins("copysign.f32 " + sb + ", " + a + ", " + sel);
    return sb;
  }
  default:
    e.internalError(op, "is not a math op");
  }
}

// ---- fp64 math -------------------------------------------------------------
// PTX has no fp64 exp, log, sin or cos. Each sequence below reduces the
// argument exactly (or into a head and a tail), evaluates a polynomial fitted
// to the reduced range (least squares on Chebyshev nodes, in relative error)
// and finishes with error-free sums: at most about 0.7 ulp (exp 0.63, exp2
// 0.65, log 0.61, log2 0.61, sin 0.70, cos 0.68, measured by emulating these
// exact sequences against mpmath). Every op carries .rn so that ptxas fuses
// nothing: the two-sums and fma-split products rely on each op rounding once,
// as written.


/// Builds fp64 sequences one rounded op at a time.
struct F64Seq {
  Emitter &e;

  std::string op(const std::string &mn, const std::string &a,
                 const std::string &b = "", const std::string &c = "") {
    std::string d = e.reg(RC::F64);
    std::string s = mn + " " + d + ", " + a;
    if (!b.empty())
      s += ", " + b;
    if (!c.empty())
      s += ", " + c;
    e.ins(s);
    return d;
  }
  std::string add(const std::string &a, const std::string &b) {
    return op("add.rn.f64", a, b);
  }
  std::string sub(const std::string &a, const std::string &b) {
    return op("sub.rn.f64", a, b);
  }
  std::string mul(const std::string &a, const std::string &b) {
    return op("mul.rn.f64", a, b);
  }
  std::string fma(const std::string &a, const std::string &b,
                  const std::string &c) {
    return op("fma.rn.f64", a, b, c);
  }
  std::string neg(const std::string &a) { return op("neg.f64", a); }
  std::string k(double v) { return f64Imm(v); }
  /// p ? a : b.
  std::string sel(const std::string &a, const std::string &b,
                  const std::string &p) {
    return op("selp.f64", a, b, p);
  }
  std::string test(const std::string &cmp, const std::string &a,
                   const std::string &b) {
    std::string p = e.reg(RC::Pred);
    e.ins("setp." + cmp + ".f64 " + p + ", " + a + ", " + b);
    return p;
  }
  std::string isNan(const std::string &a) { return test("nan", a, a); }
  /// c[0] + c[1] x + ... (Horner, one fma a step).
  std::string horner(const std::string &x, const std::vector<double> &c) {
    std::string acc = k(c.back());
    for (int i = (int)c.size() - 2; i >= 0; --i)
      acc = fma(acc, x, k(c[i]));
    return acc;
  }
  /// 2^n for an s32 n in [-1022, 1023], from its exponent bits.
  std::string pow2(const std::string &n) {
    std::string b = e.reg(RC::B32), hi = e.reg(RC::B32), d = e.reg(RC::F64);
    e.ins("add.s32 " + b + ", " + n + ", 1023");
    e.ins("shl.b32 " + hi + ", " + b + ", 20");
    e.ins("mov.b64 " + d + ", {0, " + hi + "}");
    return d;
  }
  /// x * 2^n for an s32 n in [-2044, 2046], in two exact factors, so that a
  /// result in the subnormals rounds once (x * 2^(n/2) stays normal).
  std::string scale(const std::string &x, const std::string &n) {
    std::string n1 = e.reg(RC::B32), n2 = e.reg(RC::B32);
    e.ins("shr.s32 " + n1 + ", " + n + ", 1");
    e.ins("sub.s32 " + n2 + ", " + n + ", " + n1);
    return mul(mul(x, pow2(n1)), pow2(n2));
  }
};

// Splits of constants into a head and a tail. ln 2's 42-bit head times an
// exponent below 2^11 is exact; pi/2's three parts make x - q pi/2 exact in the
// first step and carry 160 bits in all.
constexpr double kLn2Hi42 = 0.6931471805598903,
                 kLn2Lo42 = 5.497923018708371e-14;
constexpr double kLn2 = 0.6931471805599453, kLn2Lo = 2.3190468138462996e-17;
constexpr double kLog2e = 1.4426950408889634, kLog2eLo = 2.0355273740931033e-17;
constexpr double kPio2Hi = 1.5707963267948966, kPio2Mid = 6.123233995736766e-17,
                 kPio2Lo = -1.4973849048591698e-33,
                 kTwoOverPi = 0.6366197723675814;

/// (e^r - 1 - r) / r^2 on |r| <= ln(2)/2.
const std::vector<double> kExpTail = {
    0.5, 0.16666666666666685, 0.04166666666666569, 0.008333333333315361,
    0.0013888888889245362, 0.00019841269900413135, 2.480158673958592e-05,
    2.7557230906991552e-06, 2.755770531171966e-07, 2.5113398616601087e-08,
    2.079626537498897e-09};
/// (2 atanh(s) - 2 s) / s^3 in z = s^2, for |s| <= (sqrt2 - 1) / (sqrt2 + 1).
const std::vector<double> kLogTail = {
    0.6666666666666666,  0.4000000000000732,  0.28571428568754514,
    0.22222222695535487, 0.1818177183390801,  0.15387255951643966,
    0.13246436736644854, 0.1328446635193062};
/// (sin r - r) / r^3 and (cos r - 1 + r^2/2) / r^4 in z = r^2, |r| <= pi/4.
const std::vector<double> kSinTail = {
    -0.16666666666666666,    0.008333333333333321,  -0.00019841269841253386,
    2.7557319213328143e-06,  -2.5052104688424673e-08, 1.6058338288339294e-10,
    -7.577294969354881e-13};
const std::vector<double> kCosTail = {
    0.041666666666666664,   -0.0013888888888888872, 2.4801587301569416e-05,
    -2.7557319214508664e-07, 2.087675417525756e-09,  -1.1470271991577494e-11,
    4.7371634264461454e-14};

/// e^(rh + rl) * 2^n for |rh| <= ln(2)/2 (and a little), rl a tail below an
/// ulp of rh: 1 + rh as an exact sum, the rest added to its error term.
std::string expCore(F64Seq &f, const std::string &n, const std::string &rh,
                    const std::string &rl) {
  std::string tail = f.fma(f.mul(rh, rh), f.horner(rh, kExpTail), rl);
  std::string s = f.add(f.k(1.0), rh);
  std::string err = f.sub(rh, f.sub(s, f.k(1.0))); // |rh| < 1: exact
  return f.scale(f.add(s, f.add(err, tail)), n);
}

/// An s32 integer and its fp64 value from rounding x to the nearest.
std::pair<std::string, std::string> roundToInt(F64Seq &f,
                                               const std::string &x) {
  std::string n = f.e.reg(RC::B32);
  f.e.ins("cvt.rni.s32.f64 " + n + ", " + x);
  return {n, f.op("cvt.rni.f64.f64", x)};
}

std::string clamp(F64Seq &f, const std::string &x, double lo, double hi) {
  return f.op("max.f64", f.op("min.f64", x, f.k(hi)), f.k(lo));
}

std::string expF64(F64Seq &f, const std::string &x) {
  // Past these e^x is inf or 0 (NaN is put back at the end).
  std::string xc = clamp(f, x, -760.0, 720.0);
  auto [n, nf] = roundToInt(f, f.mul(xc, f.k(kLog2e)));
  // x - n ln2 = r1 - n lo42: r1 is exact, the second product is split.
  std::string r1 = f.fma(f.neg(nf), f.k(kLn2Hi42), xc);
  std::string p = f.mul(nf, f.k(kLn2Lo42));
  std::string pe = f.fma(nf, f.k(kLn2Lo42), f.neg(p));
  std::string rh = f.sub(r1, p);
  std::string rl = f.sub(f.sub(f.sub(r1, rh), p), pe);
  return f.sel(x, expCore(f, n, rh, rl), f.isNan(x));
}

std::string exp2F64(F64Seq &f, const std::string &x) {
  std::string xc = clamp(f, x, -1100.0, 1100.0);
  auto [n, nf] = roundToInt(f, xc);
  std::string t = f.sub(xc, nf); // exact, |t| <= 1/2
  std::string rh = f.mul(t, f.k(kLn2));
  std::string rl = f.fma(t, f.k(kLn2Lo), f.fma(t, f.k(kLn2), f.neg(rh)));
  return f.sel(x, expCore(f, n, rh, rl), f.isNan(x));
}

/// For a positive finite x: x = 2^e m, m in [sqrt(1/2), sqrt(2)), and
/// log(m) = hi + lo with lo below an ulp of hi. f = m - 1 is exact; with
/// s = f / (2 + f), log(1 + f) = 2 atanh(s) = f - f^2/2 + s (f^2/2 + R(s^2)).
struct LogParts {
  std::string e, hi, lo; // e as fp64
};
LogParts logCore(F64Seq &f, const std::string &x) {
  Emitter &e = f.e;
  // Subnormals scale into the normals first.
  std::string sub = f.test("lt", x, f.k(2.2250738585072014e-308));
  std::string xs = f.sel(f.mul(x, f.k(18014398509481984.0)), x, sub); // 2^54
  std::string lo = e.reg(RC::B32), hi = e.reg(RC::B32), ex = e.reg(RC::B32),
              eb = e.reg(RC::B32), adj = e.reg(RC::B32), mh = e.reg(RC::B32),
              mh1 = e.reg(RC::B32);
  e.ins("mov.b64 {" + lo + ", " + hi + "}, " + xs);
  e.ins("shr.u32 " + eb + ", " + hi + ", 20");
  e.ins("selp.s32 " + adj + ", 1077, 1023, " + sub);
  e.ins("sub.s32 " + ex + ", " + eb + ", " + adj);
  e.ins("and.b32 " + mh + ", " + hi + ", 0x000FFFFF");
  e.ins("or.b32 " + mh1 + ", " + mh + ", 0x3FF00000");
  std::string m0 = e.reg(RC::F64);
  e.ins("mov.b64 " + m0 + ", {" + lo + ", " + mh1 + "}");
  std::string big = f.test("gt", m0, f.k(1.4142135623730951));
  std::string m = f.sel(f.mul(m0, f.k(0.5)), m0, big);
  std::string ex1 = e.reg(RC::B32), one = e.reg(RC::B32);
  e.ins("selp.s32 " + one + ", 1, 0, " + big);
  e.ins("add.s32 " + ex1 + ", " + ex + ", " + one);
  std::string ef = e.reg(RC::F64);
  e.ins("cvt.rn.f64.s32 " + ef + ", " + ex1);

  std::string fm = f.sub(m, f.k(1.0));
  std::string s = f.op("div.rn.f64", fm, f.add(fm, f.k(2.0)));
  std::string z = f.mul(s, s);
  std::string r = f.mul(z, f.horner(z, kLogTail));
  std::string hf = f.mul(fm, f.k(0.5));
  std::string hfsq = f.mul(hf, fm);
  std::string hfsqLo = f.fma(hf, fm, f.neg(hfsq));
  std::string corr = f.fma(s, f.add(hfsq, r), f.neg(hfsqLo));
  std::string h = f.sub(fm, hfsq); // |f| >= f^2/2: a fast two-sum
  std::string l = f.add(f.sub(f.sub(fm, h), hfsq), corr);
  return {ef, h, l};
}

/// log's special values: -inf at +-0, NaN below 0, +inf at +inf, NaN kept.
std::string logSpecials(F64Seq &f, const std::string &x, const std::string &r) {
  std::string d = f.sel(f.k(-INFINITY), r, f.test("eq", x, f.k(0.0)));
  d = f.sel(f.k(NAN), d, f.test("lt", x, f.k(0.0)));
  d = f.sel(x, d, f.test("eq", x, f.k(INFINITY)));
  return f.sel(x, d, f.isNan(x));
}

std::string logF64(F64Seq &f, const std::string &x) {
  LogParts p = logCore(f, x);
  // e ln2hi is exact and, for e != 0, larger than |hi|: a fast two-sum.
  std::string a = f.mul(p.e, f.k(kLn2Hi42));
  std::string s = f.add(a, p.hi);
  std::string err = f.add(f.sub(a, s), p.hi);
  std::string t = f.add(err, f.fma(p.e, f.k(kLn2Lo42), p.lo));
  return logSpecials(f, x, f.add(s, t));
}

std::string log2F64(F64Seq &f, const std::string &x) {
  LogParts p = logCore(f, x);
  // (hi + lo) log2(e) as a product and its error, then e + that (|e| >= 1 >
  // the product, or e = 0).
  std::string ph = f.mul(p.hi, f.k(kLog2e));
  std::string pl = f.fma(p.hi, f.k(kLog2e), f.neg(ph));
  pl = f.add(pl, f.fma(p.hi, f.k(kLog2eLo), f.mul(p.lo, f.k(kLog2e))));
  std::string s = f.add(p.e, ph);
  std::string err = f.add(f.sub(p.e, s), ph);
  return logSpecials(f, x, f.add(s, f.add(err, pl)));
}

/// sin or cos: x = q pi/2 + (rh + rl) with |rh| <= pi/4 (the first fma is
/// exact, the second product is split, the third is far below an ulp of rh),
/// the sine and cosine polynomials on rh with first-order terms for rl, the
/// quadrant (q, plus one for cos) picking and negating. The reduction holds for
/// |x| below about 2^48 (0.66 ulp measured up to there); past it q itself is
/// inexact and the result is not accurate (that needs a Payne-Hanek reduction).
std::string sinCosF64(F64Seq &f, const std::string &x, bool isCos) {
  Emitter &e = f.e;
  std::string qf = f.op("cvt.rni.f64.f64", f.mul(x, f.k(kTwoOverPi)));
  // The quadrant from q mod 4 (exact in fp64; q itself may pass 2^31).
  std::string q4 = f.fma(f.op("cvt.rmi.f64.f64", f.mul(qf, f.k(0.25))),
                         f.k(-4.0), qf);
  std::string q = e.reg(RC::B32);
  e.ins("cvt.rzi.s32.f64 " + q + ", " + q4);
  std::string r1 = f.fma(f.neg(qf), f.k(kPio2Hi), x);
  std::string p = f.mul(qf, f.k(kPio2Mid));
  std::string pe = f.fma(qf, f.k(kPio2Mid), f.neg(p));
  std::string rh0 = f.sub(r1, p);
  std::string rl0 = f.sub(f.sub(f.sub(f.sub(r1, rh0), p), pe),
                          f.mul(qf, f.k(kPio2Lo)));
  std::string rh = f.add(rh0, rl0);
  std::string rl = f.sub(rl0, f.sub(rh, rh0));

  std::string z = f.mul(rh, rh);
  // sin(r) = rh + (rh^3 S(z) + rl (1 - z/2)).
  std::string sl = f.fma(rl, f.mul(z, f.k(-0.5)), rl);
  std::string sn =
      f.add(rh, f.fma(f.mul(rh, z), f.horner(z, kSinTail), sl));
  // cos(r) = w + ((1 - w) - z/2) + (z^2 C(z) - z's rounding / 2 - rh rl), w =
  // 1 - z/2.
  std::string hz = f.mul(z, f.k(0.5));
  std::string w = f.sub(f.k(1.0), hz);
  std::string zl = f.fma(rh, rh, f.neg(z));
  std::string cl = f.fma(f.mul(z, z), f.horner(z, kCosTail),
                         f.fma(f.k(-0.5), zl, f.neg(f.mul(rh, rl))));
  std::string cs = f.add(w, f.add(f.sub(f.sub(f.k(1.0), w), hz), cl));

  std::string quad = q;
  if (isCos) {
    quad = e.reg(RC::B32);
    e.ins("add.s32 " + quad + ", " + q + ", 1");
  }
  std::string odd = e.reg(RC::B32), neg = e.reg(RC::B32);
  e.ins("and.b32 " + odd + ", " + quad + ", 1");
  e.ins("and.b32 " + neg + ", " + quad + ", 2");
  std::string po = e.reg(RC::Pred), pn = e.reg(RC::Pred);
  e.ins("setp.ne.u32 " + po + ", " + odd + ", 0");
  e.ins("setp.ne.u32 " + pn + ", " + neg + ", 0");
  std::string r = f.sel(cs, sn, po);
  r = f.sel(f.neg(r), r, pn);
  std::string ax = f.op("abs.f64", x);
  if (!isCos) // sin x rounds to x below 2^-26 (this keeps -0 and subnormals).
    r = f.sel(x, r, f.test("lt", ax, f.k(1.4901161193847656e-08)));
  return f.sel(f.k(NAN), r, f.test("eq", ax, f.k(INFINITY)));
}

/// C's fmod on fp64, exact: with |a| = ma 2^ea and |b| = mb 2^eb (integer
/// significands, ea >= eb), |a| mod |b| = (ma 2^(ea - eb) mod mb) 2^eb, reduced
/// ten exponent bits a step (r < mb < 2^53, so r 2^10 fits a u64). The result
/// is representable, so scaling it back is exact; it keeps a's sign.
std::string fmodF64(Emitter &e, const std::string &a, const std::string &b) {
  F64Seq f{e};
  auto bits = [&](const std::string &x) {
    std::string r = e.reg(RC::B64);
    e.ins("mov.b64 " + r + ", " + x);
    return r;
  };
  auto b64 = [&](const std::string &mn, const std::string &x,
                 const std::string &y) {
    std::string r = e.reg(RC::B64);
    e.ins(mn + " " + r + ", " + x + ", " + y);
    return r;
  };
  std::string ab = bits(a), bb = bits(b);
  std::string A = b64("and.b64", ab, "0x7FFFFFFFFFFFFFFF");
  std::string B = b64("and.b64", bb, "0x7FFFFFFFFFFFFFFF");
  std::string sign = b64("and.b64", ab, "0x8000000000000000");
  // exponent (1 for subnormals) and integer significand.
  auto split = [&](const std::string &m) {
    std::string ex = b64("shr.u64", m, "52");
    std::string frac = b64("and.b64", m, "0x000FFFFFFFFFFFFF");
    std::string full = b64("or.b64", frac, "0x0010000000000000");
    std::string sub = e.reg(RC::Pred), ex1 = e.reg(RC::B64),
                sig = e.reg(RC::B64);
    e.ins("setp.eq.u64 " + sub + ", " + ex + ", 0");
    e.ins("selp.b64 " + ex1 + ", 1, " + ex + ", " + sub);
    e.ins("selp.b64 " + sig + ", " + frac + ", " + full + ", " + sub);
    return std::make_pair(ex1, sig);
  };
  auto [ea, ma] = split(A);
  auto [eb, mb] = split(B);
  // NaN for a NaN operand, an infinite a or a zero b; a itself when |a| < |b|.
  std::string nanA = e.reg(RC::Pred), nanB = e.reg(RC::Pred),
              zeroB = e.reg(RC::Pred), bad = e.reg(RC::Pred),
              bad1 = e.reg(RC::Pred), small = e.reg(RC::Pred),
              skip = e.reg(RC::Pred);
  e.ins("setp.ge.u64 " + nanA + ", " + A + ", 0x7FF0000000000000");
  e.ins("setp.gt.u64 " + nanB + ", " + B + ", 0x7FF0000000000000");
  e.ins("setp.eq.u64 " + zeroB + ", " + B + ", 0");
  e.ins("or.pred " + bad1 + ", " + nanA + ", " + nanB);
  e.ins("or.pred " + bad + ", " + bad1 + ", " + zeroB);
  e.ins("setp.lt.u64 " + small + ", " + A + ", " + B);
  e.ins("or.pred " + skip + ", " + bad + ", " + small);
  // The remainder; the loop runs only when there is one to take.
  std::string d = e.reg(RC::B64), mbs = e.reg(RC::B64), r = e.reg(RC::B64),
              more = e.reg(RC::Pred), s = e.reg(RC::B64), s32 = e.reg(RC::B32);
  e.ins("sub.s64 " + d + ", " + ea + ", " + eb);
  e.ins("selp.b64 " + d + ", 0, " + d + ", " + skip);
  e.ins("selp.b64 " + mbs + ", 1, " + mb + ", " + skip);
  e.ins("rem.u64 " + r + ", " + ma + ", " + mbs);
  std::string loop = e.newLabel("fmod_step"), done = e.newLabel("fmod_done");
  e.ins("setp.le.s64 " + more + ", " + d + ", 0");
  e.ins("@" + more + " bra " + done);
  e.label(loop);
  e.ins("min.s64 " + s + ", " + d + ", 10");
  e.ins("cvt.u32.u64 " + s32 + ", " + s);
  e.ins("shl.b64 " + r + ", " + r + ", " + s32);
  e.ins("rem.u64 " + r + ", " + r + ", " + mbs);
  e.ins("sub.s64 " + d + ", " + d + ", " + s);
  e.ins("setp.gt.s64 " + more + ", " + d + ", 0");
  e.ins("@" + more + " bra " + loop);
  e.label(done);
  // r 2^(eb - 1075), with a's sign (also on a zero).
  std::string rf = e.reg(RC::F64), k = e.reg(RC::B32), eb32 = e.reg(RC::B32);
  e.ins("cvt.rn.f64.u64 " + rf + ", " + r);
  e.ins("cvt.u32.u64 " + eb32 + ", " + eb);
  e.ins("sub.s32 " + k + ", " + eb32 + ", 1075");
  std::string mag = bits(f.scale(rf, k));
  std::string res = e.reg(RC::F64);
  e.ins("mov.b64 " + res + ", " + b64("or.b64", mag, sign));
  res = f.sel(a, res, small);
  return f.sel(f.k(NAN), res, bad);
}

std::string mathElement(Emitter &e, const Operation &op, DType t,
                        const std::string &a) {
  OpCode c = op.code();
  if (t == DType::FP32)
    return mathF32(e, op, c, a);
  if (isSmallFloat(t)) {
    if (c == OpCode::AbsF) {
      std::string d = e.reg(RC::B16);
      bool fp8 = bitWidth(t) == 8;
      e.ins(std::string("and.b16 ") + d + ", " + a +
            (fp8 ? ", 0x007F" : ", 0x7FFF"));
      return d;
    }
    // A 16- or 8-bit root rounds once from sqrt.rn's fp32 result, which
    // makes it correctly rounded (the builder widens tl.sqrt's operand to
    // fp32 first, as Triton does; this is IR written with an f16 sqrt).
    if (c == OpCode::Sqrt)
      return fromF32(e, op, t, unaryF32(e, "sqrt.rn.f32", toF32(e, op, t, a)));
    return fromF32(e, op, t, mathF32(e, op, c, toF32(e, op, t, a)));
  }
  // fp64: native where PTX has it, else through fp32.
  std::string d = e.reg(RC::F64);
  switch (c) {
  case OpCode::Sqrt:
    e.ins("sqrt.rn.f64 " + d + ", " + a);
    return d;
  case OpCode::Rsqrt: {
    std::string s = e.reg(RC::F64);
    e.ins("sqrt.rn.f64 " + s + ", " + a);
    e.ins("rcp.rn.f64 " + d + ", " + s);
    return d;
  }
  case OpCode::Floor:
    e.ins("cvt.rmi.f64.f64 " + d + ", " + a);
    return d;
  case OpCode::Ceil:
    e.ins("cvt.rpi.f64.f64 " + d + ", " + a);
    return d;
  case OpCode::Trunc:
    e.ins("cvt.rzi.f64.f64 " + d + ", " + a);
    return d;
  case OpCode::RoundEven:
    e.ins("cvt.rni.f64.f64 " + d + ", " + a);
    return d;
  case OpCode::AbsF:
    e.ins("abs.f64 " + d + ", " + a);
    return d;
  case OpCode::Exp:
  case OpCode::Exp2:
  case OpCode::Log:
  case OpCode::Log2:
  case OpCode::Sin:
  case OpCode::Cos: {
    F64Seq f{e};
    switch (c) {
    case OpCode::Exp:
      return expF64(f, a);
    case OpCode::Exp2:
      return exp2F64(f, a);
    case OpCode::Log:
      return logF64(f, a);
    case OpCode::Log2:
      return log2F64(f, a);
    default:
      return sinCosF64(f, a, c == OpCode::Cos);
    }
  }
  default: {
    // erf and tanh.
    std::string f = e.reg(RC::F32);
    e.ins("cvt.rn.f32.f64 " + f + ", " + a);
    e.ins("cvt.f64.f32 " + d + ", " + mathF32(e, op, c, f));
    return d;
  }
  }
}

std::string negElement(Emitter &e, DType t, const std::string &a) {
  if (t == DType::FP32 || t == DType::FP64) {
    std::string d = e.reg(t == DType::FP32 ? RC::F32 : RC::F64);
    e.ins(std::string(t == DType::FP32 ? "neg.f32 " : "neg.f64 ") + d + ", " +
          a);
    return d;
  }
  std::string d = e.reg(RC::B16);
  e.ins(std::string("xor.b16 ") + d + ", " + a +
        (bitWidth(t) == 8 ? ", 0x0080" : ", 0x8000"));
  return d;
}

std::string fmaElement(Emitter &e, const Operation &op, DType t,
                       const std::string &a, const std::string &b,
                       const std::string &c) {
  if (isSmallFloat(t)) {
    std::string r = fmaElement(e, op, DType::FP32, toF32(e, op, t, a),
                               toF32(e, op, t, b), toF32(e, op, t, c));
    return fromF32(e, op, t, r);
  }
  std::string d = e.reg(t == DType::FP32 ? RC::F32 : RC::F64);
  e.ins(std::string(t == DType::FP32 ? "fma.rn.f32 " : "fma.rn.f64 ") + d +
        ", " + a + ", " + b + ", " + c);
  return d;
}

std::string selectElement(Emitter &e, const Type *t, const std::string &c,
                          const std::string &a, const std::string &b) {
  RC rc = regClass(t);
  std::string d = e.reg(rc);
  if (rc == RC::Pred) {
    std::string x = e.reg(RC::Pred), nc = e.reg(RC::Pred), y = e.reg(RC::Pred);
    e.ins("and.pred " + x + ", " + c + ", " + a);
    e.ins("not.pred " + nc + ", " + c);
    e.ins("and.pred " + y + ", " + nc + ", " + b);
    e.ins("or.pred " + d + ", " + x + ", " + y);
    return d;
  }
  std::string ty = rc == RC::F32 ? "f32" : rc == RC::F64 ? "f64" : bitType(rc);
  e.ins("selp." + ty + " " + d + ", " + a + ", " + b + ", " + c);
  return d;
}

std::string absIntElement(Emitter &e, DType t, const std::string &a) {
  if (!isSigned(t))
    return a;
  std::string d = e.reg(regClass(Type::scalar(t)));
  e.ins("abs." + intType(t, true) + " " + d + ", " + a);
  return normalizeInt(e, t, d);
}

} // namespace

std::string f32Imm(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  char buf[16];
  std::snprintf(buf, sizeof buf, "0f%08X", b);
  return buf;
}

std::string intType(DType t, bool signedOp) {
  return (signedOp ? "s" : "u") + std::to_string(regBits(t));
}

std::string bitType(RC c) {
  switch (c) {
  case RC::B16:
    return "b16";
  case RC::B32:
  case RC::F32:
    return "b32";
  case RC::B64:
  case RC::F64:
    return "b64";
  case RC::Pred:
    return "pred";
  }
  return "b32";
}

std::string prepareInt(Emitter &e, DType t, const std::string &r,
                       bool signedOp) {
  if (bitWidth(t) != 8 || isSigned(t) == signedOp)
    return r;
  std::string d = e.reg(RC::B16);
  if (signedOp)
    e.ins("cvt.s16.s8 " + d + ", " + r);
  else
    e.ins("and.b16 " + d + ", " + r + ", 0x00FF");
  return d;
}

std::string normalizeInt(Emitter &e, DType t, const std::string &r) {
  if (bitWidth(t) != 8 || isFloat(t))
    return r;
  std::string d = e.reg(RC::B16);
  if (isSigned(t))
    e.ins("cvt.s16.s8 " + d + ", " + r);
  else
    e.ins("and.b16 " + d + ", " + r + ", 0x00FF");
  return d;
}

std::string materialize(Emitter &e, const Type *t, const Attribute &v) {
  double dv = 0;
  int64_t iv = 0;
  if (auto *i = std::get_if<int64_t>(&v)) {
    iv = *i;
    dv = (double)*i;
  } else if (auto *d = std::get_if<double>(&v)) {
    dv = *d;
    // Converting a double outside int64's range (-inf, the start of every max
    // reduction, or NaN) is undefined behaviour; only an integer type reads iv.
    iv = std::isfinite(*d) && std::fabs(*d) < 9.2e18 ? (int64_t)*d : 0;
  } else if (auto *b = std::get_if<bool>(&v)) {
    iv = *b;
    dv = *b;
  }
  RC rc = regClass(t);
  std::string r = e.reg(rc);
  if (t->isPointer()) {
    e.ins("mov.b64 " + r + ", " + std::to_string(iv));
    return r;
  }
  DType dt = t->dtype();
  char buf[32];
  switch (rc) {
  case RC::Pred:
    e.ins("mov.pred " + r + ", " + (iv ? "1" : "0"));
    break;
  case RC::B16:
    if (isFloat(dt)) {
      std::snprintf(buf, sizeof buf, "0x%04X", (unsigned)encodeFloat(dv, dt));
    } else {
      int64_t x = bitWidth(dt) == 8 ? (isSigned(dt) ? (int64_t)(int8_t)iv
                                                    : (int64_t)(uint8_t)iv)
                                    : iv;
      std::snprintf(buf, sizeof buf, "0x%04X", (unsigned)(uint16_t)x);
    }
    e.ins("mov.b16 " + r + ", " + buf);
    break;
  case RC::B32:
    std::snprintf(buf, sizeof buf, "0x%08X", (unsigned)(uint32_t)iv);
    e.ins("mov.b32 " + r + ", " + buf);
    break;
  case RC::B64:
    std::snprintf(buf, sizeof buf, "0x%016llX", (unsigned long long)iv);
    e.ins("mov.b64 " + r + ", " + buf);
    break;
  case RC::F32:
    e.ins("mov.f32 " + r + ", " + f32Imm((float)dv));
    break;
  case RC::F64:
    e.ins("mov.f64 " + r + ", " + f64Imm(dv));
    break;
  }
  return r;
}

std::string binaryElement(Emitter &e, const Operation &op, OpCode code,
                          const Type *elem, const std::string &a,
                          const std::string &b) {
  if (isFloat(elem->dtype()))
    return floatBinary(e, op, code, elem->dtype(), a, b);
  return intBinary(e, code, elem->dtype(), a, b);
}

namespace {

/// The value of `range OP k` in every thread when the range's bounds [lo,
/// hi] decide it (a register of a tl.arange, see Emitter::rangeBounds).
std::optional<bool> decideRangeCompare(const std::string &pred, int64_t lo,
                                       int64_t hi, int64_t k) {
  // Ranges are never negative, so unsigned and signed orders agree when k
  // is not negative.
  std::string p = pred;
  if (p[0] == 'u') {
    if (k < 0 || lo < 0)
      return std::nullopt;
    p[0] = 's';
  }
  if (p == "slt")
    return hi < k ? std::optional<bool>(true) : lo >= k ? std::optional<bool>(false) : std::nullopt;
  if (p == "sle")
    return hi <= k ? std::optional<bool>(true) : lo > k ? std::optional<bool>(false) : std::nullopt;
  if (p == "sgt")
    return lo > k ? std::optional<bool>(true) : hi <= k ? std::optional<bool>(false) : std::nullopt;
  if (p == "sge")
    return lo >= k ? std::optional<bool>(true) : hi < k ? std::optional<bool>(false) : std::nullopt;
  return std::nullopt;
}

/// Element i of an and/or/select/comparison whose value the known
/// predicates decide (Emitter::knownPreds): the register it is, or "".
std::string foldKnownPredicate(Emitter &e, const Operation &op, const Type *elem,
                               const std::vector<const Regs *> &in, int i,
                               std::optional<int64_t> cmpConst) {
  OpCode c = op.code();
  auto a = [&](int k) { return (*in[k])[i]; };
  if (c == OpCode::CmpI && cmpConst && !elem->isPointer()) {
    auto it = e.rangeBounds.find(a(0));
    if (it == e.rangeBounds.end())
      return "";
    auto v = decideRangeCompare(op.strAttr("predicate"), it->second.first,
                                it->second.second, *cmpConst);
    return v ? e.constPred(*v) : "";
  }
  if (c == OpCode::Select) {
    auto v = e.knownPred(a(0));
    return v ? a(*v ? 1 : 2) : "";
  }
  if (elem->isPointer() || elem->dtype() != DType::I1 ||
      (c != OpCode::AndI && c != OpCode::OrI))
    return "";
  auto x = e.knownPred(a(0)), y = e.knownPred(a(1));
  bool absorbing = c == OpCode::OrI; // x | true = true, x & false = false
  if ((x && *x == absorbing) || (y && *y == absorbing))
    return e.constPred(absorbing);
  if (x)
    return a(1);
  if (y)
    return a(0);
  return "";
}

} // namespace

bool emitArithmetic(Emitter &e, Operation &op) {
  OpCode c = op.code();
  bool isIntBin = op.hasTrait(IBIN), isFloatBin = op.hasTrait(FBIN);
  if (!isIntBin && !isFloatBin && !op.hasTrait(MATH1))
    switch (c) {
    case OpCode::CmpI:
    case OpCode::CmpF:
    case OpCode::Select:
    case OpCode::NegF:
    case OpCode::Fma:
      break;
    default:
      return false;
    }
  const Type *resTy = op.result(0)->type();
  int n = Emitter::numRegs(resTy);
  std::vector<const Regs *> in;
  for (Value *v : op.operands())
    in.push_back(&e.regs(v));
  for (const Regs *r : in)
    if ((int)r->size() != n)
      e.internalError(op, "has operands in another layout than its result");
  // The element type the op computes on (the operands', for comparisons).
  const Type *elem =
      op.operand(c == OpCode::Select ? 1 : 0)->type()->scalarType();
  std::vector<int> rep = e.equalRegisters(op.result(0));
  // A constant divisor (support/divide.h): a shift or a multiply-high.
  std::optional<int64_t> divisor;
  bool dividendNonNegative = false;
  if ((c == OpCode::DivSI || c == OpCode::DivUI || c == OpCode::RemSI ||
       c == OpCode::RemUI) &&
      !elem->isPointer())
    if (auto k = evaluateConstant(op.operand(1)); k && !k->isFloat()) {
      divisor = (int64_t)k->bits;
      dividendNonNegative = knownNonNegative(op.operand(0));
    }
  std::optional<int64_t> cmpConst;
  if (c == OpCode::CmpI)
    if (auto k = getConstant(op.operand(1)); k && !k->isFloat())
      cmpConst = k->asInt();
  Regs out;
  for (int i = 0; i < n; ++i) {
    if (!e.demanded(op.result(0), i)) {
      out.push_back(Emitter::kUndemanded);
      continue;
    }
    if (rep[i] != i) {
      out.push_back(out[rep[i]]);
      continue;
    }
    auto a = [&](int k) { return (*in[k])[i]; };
    std::string r = foldKnownPredicate(e, op, elem, in, i, cmpConst);
    if (!r.empty())
      ;
    else if (divisor &&
             !(r = divideByConstant(e, op.parentBlock(), c, elem->dtype(), a(0),
                                    *divisor, dividendNonNegative))
                  .empty())
      ;
    else if (isIntBin)
      r = intBinary(e, c, elem->dtype(), a(0), a(1));
    else if (isFloatBin)
      r = floatBinary(e, op, c, elem->dtype(), a(0), a(1));
    else if (c == OpCode::CmpI)
      r = cmpInt(e, op, elem, a(0), a(1));
    else if (c == OpCode::CmpF)
      r = cmpFloat(e, op, elem->dtype(), a(0), a(1));
    else if (c == OpCode::Select)
      r = selectElement(e, elem, a(0), a(1), a(2));
    else if (c == OpCode::NegF)
      r = negElement(e, elem->dtype(), a(0));
    else if (c == OpCode::Fma)
      r = fmaElement(e, op, elem->dtype(), a(0), a(1), a(2));
    else if (c == OpCode::AbsI)
      r = absIntElement(e, elem->dtype(), a(0));
    else
      r = mathElement(e, op, elem->dtype(), a(0));
    out.push_back(r);
  }
  e.bind(op.result(0), std::move(out));
  return true;
}

} // namespace tritium::nvidia
