// Integer and float arithmetic, comparisons, select and math, one element at
// a time.
//
// Integers compute in their register width (8-bit ints in 16 bits, then
// re-extended). fp16, bf16 and fp8 compute in fp32 and round back once per
// op, which for +, -, *, / and sqrt gives the correctly rounded result (fp32
// has more than twice their precision). fp32/fp64 add/sub/mul carry no
// rounding modifier, so ptxas may fuse them into fma as Triton lets LLVM do
// (GPUOptions::enableFpFusion = false adds `.rn`, which forbids it). Math
// follows Triton's choices: ex2.approx.ftz / lg2.approx based exp and log, sqrt.rn,
// rsqrt.approx, div.rn, sin/cos.approx; erf and tanh from short formulas. fp64
// math without a native instruction runs in fp32.
#include "emitter.h"

#include "tritium/support/float_formats.h"

#include <cmath>

#include <cstring>

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

std::string floatBinary(Emitter &e, const Operation &op, OpCode c, DType t,
                        std::string a, std::string b) {
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
    // C fmod: a - b * trunc(a / b), in fp64 (exact for fp32 operands unless
    // the quotient is huge).
    std::string a64 = a, b64 = b;
    if (f32) {
      a64 = e.reg(RC::F64);
      b64 = e.reg(RC::F64);
      e.ins("cvt.f64.f32 " + a64 + ", " + a);
      e.ins("cvt.f64.f32 " + b64 + ", " + b);
    }
    std::string q = e.reg(RC::F64), qt = e.reg(RC::F64), nq = e.reg(RC::F64),
                r = e.reg(RC::F64);
    e.ins("div.rn.f64 " + q + ", " + a64 + ", " + b64);
    e.ins("cvt.rzi.f64.f64 " + qt + ", " + q);
    e.ins("neg.f64 " + nq + ", " + qt);
    e.ins("fma.rn.f64 " + r + ", " + nq + ", " + b64 + ", " + a64);
    // fmod keeps the dividend's sign, also for a zero result.
    std::string s = e.reg(RC::F64);
    e.ins("copysign.f64 " + s + ", " + a64 + ", " + r);
    if (f32)
      e.ins("cvt.rn.f32.f64 " + d + ", " + s);
    else
      e.ins("mov.f64 " + d + ", " + s);
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
    return unaryF32(e, "sqrt.rn.f32", a);
  case OpCode::Rsqrt:
    return unaryF32(e, "rsqrt.approx.f32", a);
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
    std::string den = e.reg(RC::F32), t = e.reg(RC::F32);
    e.ins("fma.rn.f32 " + den + ", " + ax +
          ", 0f3EA7BA05, 0f3F800000"); // 1 + p|x|
    e.ins("rcp.rn.f32 " + t + ", " + den);
    std::string p = poly(e, t,
                         {0.0f, 0.254829592f, -0.284496736f, 1.421413741f,
                          -1.453152027f, 1.061405429f});
    std::string nx2 = e.reg(RC::F32), ex = e.reg(RC::F32), y = e.reg(RC::F32),
                big = e.reg(RC::F32);
    e.ins("mul.f32 " + nx2 + ", " + x2 + ", 0fBFB8AA3B"); // -x^2 log2(e)
    e.ins("ex2.approx.f32 " + ex + ", " + nx2);
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
    // |x| < 0.125: odd Taylor series to x^9; otherwise
    // sign(x) * (1 - 2 / (exp(2|x|) + 1)), which saturates to +-1.
    std::string ax = unaryF32(e, "abs.f32", a);
    std::string x2 = e.reg(RC::F32);
    e.ins("mul.f32 " + x2 + ", " + a + ", " + a);
    std::string s = poly(
        e, x2, {1.0f, -0.33333333f, 0.13333333f, -0.05396825f, 0.02186949f});
    std::string small = e.reg(RC::F32);
    e.ins("mul.f32 " + small + ", " + s + ", " + a);
    std::string t = e.reg(RC::F32), ex = e.reg(RC::F32), den = e.reg(RC::F32),
                q = e.reg(RC::F32), big = e.reg(RC::F32), sb = e.reg(RC::F32);
    e.ins("mul.f32 " + t + ", " + ax + ", 0f4038AA3B"); // 2 log2(e)
    e.ins("ex2.approx.f32 " + ex + ", " + t);
    e.ins("add.f32 " + den + ", " + ex + ", 0f3F800000");
    e.ins("div.rn.f32 " + q + ", 0f40000000, " + den);
    e.ins("sub.rn.f32 " + big + ", 0f3F800000, " + q);
    e.ins("copysign.f32 " + sb + ", " + a + ", " + big);
    std::string lt = e.reg(RC::Pred), d = e.reg(RC::F32);
    e.ins("setp.lt.f32 " + lt + ", " + ax + ", 0f3E000000");
    e.ins("selp.f32 " + d + ", " + small + ", " + sb + ", " + lt);
    return d;
  }
  default:
    e.internalError(op, "is not a math op");
  }
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
  default: {
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
    std::string r;
    if (isIntBin)
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
