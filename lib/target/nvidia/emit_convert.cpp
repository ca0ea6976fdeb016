// Casts: integer width changes, int <-> float, float <-> float (fp8e4nv and
// fp8e5 through fp16 with PTX's cvt, which needs sm_89; the other fp8
// formats with integer code through fp32, on any target), bitcasts and
// pointer <-> int.
//
// Rounding: to nearest even for narrowing float casts and int -> float, or
// toward zero for a truncf marked {rounding = "rtz"}; toward zero for float
// -> int. bf16 widens by a shift (exact on every target); conversions PTX
// lacks go through fp32, which can round twice only from fp64 or 64-bit ints
// into bf16/fp8 (never under rtz: truncating twice truncates once).
// Overflow and NaN rules of each format: tritium/support/float_formats.h.
#include "emitter.h"

#include <cmath>
#include <cstring>
#include <map>

namespace tritium::nvidia {

namespace {

const char *fp8Name(DType t) {
  return t == DType::FP8E4NV ? "e4m3x2" : "e5m2x2";
}
int regBits(DType t) { return std::max(16, bitWidth(t)); }

std::string fp8ToF16(Emitter &e, const Operation &op, DType t,
                     const std::string &r) {
  e.requireSM(op, 89, "converting from fp8");
  std::string w = e.reg(RC::B32), lo = e.reg(RC::B16), hi = e.reg(RC::B16);
  e.ins(std::string("cvt.rn.f16x2.") + fp8Name(t) + " " + w + ", " + r);
  e.ins("mov.b32 {" + lo + ", " + hi + "}, " + w);
  return lo;
}

std::string f32ToFP8(Emitter &e, const Operation &op, DType t,
                     const std::string &f) {
  e.requireSM(op, 89, "converting to fp8");
  std::string zero = e.reg(RC::F32), p = e.reg(RC::B16), d = e.reg(RC::B16);
  e.ins("mov.f32 " + zero + ", 0f00000000");
  // The low byte gets the second operand.
  e.ins(std::string("cvt.rn.satfinite.") + fp8Name(t) + ".f32 " + p + ", " +
        zero + ", " + f);
  e.ins("and.b16 " + d + ", " + p + ", 0x00FF");
  return d;
}

/// What the integer code needs to know of an fp8 format.
struct Fp8Bits {
  int mant, bias;
  unsigned maxBits; // largest finite magnitude
  bool fnuz;        // 0x80 is the one NaN, no inf (it converts to NaN), no -0
  unsigned nanBits; // the NaN (or, for fp8e4b15, the value) a NaN becomes
  bool nanSigned;   // the NaN keeps the input's sign
};

Fp8Bits fp8Bits(DType t) {
  switch (t) {
  case DType::FP8E4NV:
    return {3, 7, 0x7e, false, 0x7f, true};
  case DType::FP8E5:
    return {2, 15, 0x7b, false, 0x7e, true};
  case DType::FP8E4B15:
    return {3, 15, 0x7f, false, 0x7f, false};
  case DType::FP8E4B8:
    return {3, 8, 0x7f, true, 0x80, false};
  default: // FP8E5B16
    return {2, 16, 0x7f, true, 0x80, false};
  }
}

/// fp8 (low byte of a b16) -> f32, exactly, with integer code: the 7 bits
/// below the sign placed at the top of an f32's exponent and mantissa make an
/// f32 2^(127 - bias) times too small (a subnormal for exponent 0, which is
/// just right), and one exact multiply rescales it.
std::string fp8ToF32Bits(Emitter &e, DType t, const std::string &r) {
  Fp8Bits f = fp8Bits(t);
  std::string w = e.reg(RC::B32), m = e.reg(RC::B32), x = e.reg(RC::F32),
              y = e.reg(RC::F32), v = e.reg(RC::B32), s = e.reg(RC::B32),
              o = e.reg(RC::B32), d = e.reg(RC::F32);
  e.ins("cvt.u32.u16 " + w + ", " + r);
  e.ins("and.b32 " + m + ", " + w + ", 127");
  e.ins("shl.b32 " + m + ", " + m + ", " + std::to_string(23 - f.mant));
  e.ins("mov.b32 " + x + ", " + m);
  e.ins("mul.rn.f32 " + y + ", " + x + ", " +
        f32Imm(std::ldexp(1.0f, 127 - f.bias)));
  e.ins("mov.b32 " + v + ", " + y);
  e.ins("and.b32 " + s + ", " + w + ", 128");
  e.ins("shl.b32 " + s + ", " + s + ", 24");
  e.ins("or.b32 " + o + ", " + v + ", " + s);
  if (f.fnuz) {
    std::string p = e.reg(RC::Pred), q = e.reg(RC::B32);
    e.ins("setp.eq.u32 " + p + ", " + w + ", 128");
    e.ins("selp.b32 " + q + ", 0x7FFFFFFF, " + o + ", " + p);
    o = q;
  }
  e.ins("mov.b32 " + d + ", " + o);
  return d;
}

/// f32 -> fp8 (low byte of a b16) with integer code, rounding once (to
/// nearest even, or toward zero). Values that land among the target's
/// normals round on the re-biased bits (a carry out of the mantissa bumps the
/// exponent); smaller ones are counted in units of the smallest subnormal by
/// an exact scaling and a float -> int rounding (2^mant units is the smallest
/// normal, so the two paths meet). Then saturation, the sign, NaN and inf.
std::string f32ToFp8Bits(Emitter &e, DType t, const std::string &f, bool rz) {
  Fp8Bits b = fp8Bits(t);
  int shift = 23 - b.mant;
  auto R = [&](RC rc) { return e.reg(rc); };
  std::string u = R(RC::B32), a = R(RC::B32), n = R(RC::B32), k = R(RC::B32);
  e.ins("mov.b32 " + u + ", " + f);
  e.ins("and.b32 " + a + ", " + u + ", 0x7FFFFFFF");
  e.ins("sub.s32 " + n + ", " + a + ", " +
        std::to_string((127 - b.bias) << 23));
  std::string nr = n;
  if (!rz) {
    std::string l = R(RC::B32), h = R(RC::B32);
    e.ins("shr.u32 " + l + ", " + n + ", " + std::to_string(shift));
    e.ins("and.b32 " + l + ", " + l + ", 1");
    e.ins("add.u32 " + h + ", " + n + ", " +
          std::to_string((1u << (shift - 1)) - 1));
    nr = R(RC::B32);
    e.ins("add.u32 " + nr + ", " + h + ", " + l);
  }
  e.ins("shr.u32 " + k + ", " + nr + ", " + std::to_string(shift));
  std::string sat = R(RC::B32);
  e.ins("min.u32 " + sat + ", " + k + ", " + std::to_string(b.maxBits));
  // The subnormal path.
  std::string fa = R(RC::F32), fs = R(RC::F32), q = R(RC::B32),
              small = R(RC::Pred), m = R(RC::B32);
  e.ins("mov.b32 " + fa + ", " + a);
  e.ins("mul.rn.f32 " + fs + ", " + fa + ", " +
        f32Imm(std::ldexp(1.0f, b.bias + b.mant - 1)));
  e.ins(std::string(rz ? "cvt.rzi" : "cvt.rni") + ".u32.f32 " + q + ", " +
        fs);
  e.ins("setp.lt.s32 " + small + ", " + n + ", " + std::to_string(1 << 23));
  e.ins("selp.b32 " + m + ", " + q + ", " + sat + ", " + small);
  // The sign (none on a zero of a format without -0).
  std::string s = R(RC::B32), sb = R(RC::B32), o = R(RC::B32);
  e.ins("shr.u32 " + s + ", " + u + ", 24");
  e.ins("and.b32 " + s + ", " + s + ", 128");
  sb = s;
  if (b.fnuz) {
    std::string z = R(RC::Pred);
    sb = R(RC::B32);
    e.ins("setp.eq.u32 " + z + ", " + m + ", 0");
    e.ins("selp.b32 " + sb + ", 0, " + s + ", " + z);
  }
  e.ins("or.b32 " + o + ", " + m + ", " + sb);
  // NaN (and, in fnuz formats, inf).
  std::string nanP = R(RC::Pred), nan = std::to_string(b.nanBits), r = R(RC::B32);
  e.ins(std::string(b.fnuz ? "setp.ge.u32 " : "setp.gt.u32 ") + nanP + ", " +
        a + ", 0x7F800000");
  if (b.nanSigned) {
    std::string sn = R(RC::B32);
    e.ins("or.b32 " + sn + ", " + s + ", " + nan);
    nan = sn;
  }
  e.ins("selp.b32 " + r + ", " + nan + ", " + o + ", " + nanP);
  std::string d = R(RC::B16);
  e.ins("cvt.u16.u32 " + d + ", " + r);
  return d;
}

std::string intCast(Emitter &e, DType from, DType to, const std::string &r,
                    bool sext) {
  if (from == to)
    return r;
  if (from == DType::I1) {
    RC rc = regClass(Type::scalar(to));
    std::string d = e.reg(rc);
    e.ins("selp." + bitType(rc) + " " + d + ", " + (sext ? "-1" : "1") +
          ", 0, " + r);
    return normalizeInt(e, to, d);
  }
  int fb = regBits(from), tb = regBits(to);
  if (to == DType::I1) {
    RC rc = regClass(Type::scalar(from));
    std::string t = e.reg(rc), p = e.reg(RC::Pred);
    e.ins("and." + bitType(rc) + " " + t + ", " + r + ", 1");
    e.ins("setp.ne." + bitType(rc) + " " + p + ", " + t + ", 0");
    return p;
  }
  std::string src = r;
  bool widening = bitWidth(to) > bitWidth(from);
  if (widening && bitWidth(from) == 8)
    src = prepareInt(e, from, r, sext);
  if (fb == tb)
    return normalizeInt(e, to, src);
  std::string d = e.reg(regClass(Type::scalar(to)));
  if (widening)
    e.ins("cvt." + intType(to, sext) + "." + intType(from, sext) + " " + d +
          ", " + src);
  else
    e.ins("cvt.u" + std::to_string(tb) + ".u" + std::to_string(fb) + " " + d +
          ", " + src);
  return normalizeInt(e, to, d);
}

std::string intToFloat(Emitter &e, const Operation &op, DType from, DType to,
                       const std::string &r, bool signedOp) {
  std::string src = r;
  if (from == DType::I1) {
    std::string f = e.reg(RC::F32);
    e.ins("selp.f32 " + f + ", " + (signedOp ? "0fBF800000" : "0f3F800000") +
          ", 0f00000000, " + r);
    return fromF32(e, op, to, f);
  }
  src = prepareInt(e, from, r, signedOp);
  std::string it = intType(from, signedOp);
  if (to == DType::FP32 || to == DType::FP64 || to == DType::FP16) {
    RC rc = to == DType::FP32 ? RC::F32 : to == DType::FP64 ? RC::F64 : RC::B16;
    std::string d = e.reg(rc);
    const char *ft = to == DType::FP32   ? "f32"
                     : to == DType::FP64 ? "f64"
                                         : "f16";
    e.ins(std::string("cvt.rn.") + ft + "." + it + " " + d + ", " + src);
    return d;
  }
  std::string f = e.reg(RC::F32);
  e.ins("cvt.rn.f32." + it + " " + f + ", " + src);
  return fromF32(e, op, to, f);
}

std::string floatToInt(Emitter &e, const Operation &op, DType from, DType to,
                       const std::string &r, bool signedOp) {
  std::string src = r;
  const char *ft = "f32";
  if (from == DType::FP64)
    ft = "f64";
  else if (from == DType::FP16)
    ft = "f16";
  else if (from != DType::FP32)
    src = toF32(e, op, from, r);
  if (to == DType::I1) {
    std::string p = e.reg(RC::Pred);
    if (std::string(ft) == "f16") {
      src = toF32(e, op, from, r);
      ft = "f32";
    }
    e.ins(std::string("setp.ne.") + ft + " " + p + ", " + src + ", " +
          (std::string(ft) == "f64" ? "0d0000000000000000" : "0f00000000"));
    return p;
  }
  std::string d = e.reg(regClass(Type::scalar(to)));
  e.ins("cvt.rzi." + intType(to, signedOp) + "." + ft + " " + d + ", " + src);
  return normalizeInt(e, to, d);
}

/// `rz`: a truncf marked {rounding = "rtz"}.
std::string floatToFloat(Emitter &e, const Operation &op, DType from, DType to,
                         const std::string &r, bool rz = false) {
  if (from == to)
    return r;
  auto cvt = [&](RC rc, const std::string &mn, const std::string &s) {
    std::string d = e.reg(rc);
    e.ins(mn + " " + d + ", " + s);
    return d;
  };
  if (isFp8(from) && !isNativeFp8(from))
    return floatToFloat(e, op, DType::FP32, to, fp8ToF32Bits(e, from, r), rz);
  if (isFp8(to) && (!isNativeFp8(to) || rz)) {
    std::string f = from == DType::FP64
                        ? cvt(RC::F32, rz ? "cvt.rz.f32.f64" : "cvt.rn.f32.f64",
                              r)
                        : toF32(e, op, from, r); // exact
    return f32ToFp8Bits(e, to, f, rz);
  }
  if (rz) {
    // Toward zero: PTX's cvt.rz where it has one; bf16 from fp64 through
    // fp32 (truncating twice truncates once).
    if (from == DType::FP64 && to != DType::BF16)
      return cvt(to == DType::FP32 ? RC::F32 : RC::B16,
                 std::string("cvt.rz.") + (to == DType::FP32 ? "f32" : "f16") +
                     ".f64",
                 r);
    std::string f = from == DType::FP64 ? cvt(RC::F32, "cvt.rz.f32.f64", r)
                                        : toF32(e, op, from, r);
    if (to == DType::FP32)
      return f;
    return cvt(RC::B16,
               std::string("cvt.rz.") + (to == DType::FP16 ? "f16" : "bf16") +
                   ".f32",
               f);
  }
  if (isFp8(from)) {
    std::string h = fp8ToF16(e, op, from, r);
    return floatToFloat(e, op, DType::FP16, to, h);
  }
  switch (from) {
  case DType::FP16:
    if (to == DType::FP32)
      return cvt(RC::F32, "cvt.f32.f16", r);
    if (to == DType::FP64)
      return cvt(RC::F64, "cvt.f64.f16", r);
    if (isFp8(to)) {
      e.requireSM(op, 89, "converting to fp8");
      std::string zero = e.reg(RC::B16), w = e.reg(RC::B32), p = e.reg(RC::B16),
                  d = e.reg(RC::B16);
      e.ins("mov.b16 " + zero + ", 0x0000");
      e.ins("mov.b32 " + w + ", {" + r + ", " + zero + "}");
      e.ins(std::string("cvt.rn.satfinite.") + fp8Name(to) + ".f16x2 " + p +
            ", " + w);
      e.ins("and.b16 " + d + ", " + p + ", 0x00FF");
      return d;
    }
    return fromF32(e, op, to, toF32(e, op, from, r));
  case DType::BF16:
    if (to == DType::FP64)
      return cvt(RC::F64, "cvt.f64.f32", toF32(e, op, from, r));
    return fromF32(e, op, to, toF32(e, op, from, r));
  case DType::FP32:
    return fromF32(e, op, to, r);
  case DType::FP64:
    if (to == DType::FP32)
      return cvt(RC::F32, "cvt.rn.f32.f64", r);
    if (to == DType::FP16)
      return cvt(RC::B16, "cvt.rn.f16.f64", r);
    return fromF32(e, op, to, cvt(RC::F32, "cvt.rn.f32.f64", r));
  default:
    e.internalError(op, "casts from an unexpected float type");
  }
}

std::string bitcastElement(Emitter &e, DType from, DType to,
                           const std::string &r) {
  RC fc = regClass(Type::scalar(from)), tc = regClass(Type::scalar(to));
  if (fc == tc) {
    // Same register; 8-bit ints keep their own extension.
    if (bitWidth(to) == 8 && !isFloat(to))
      return normalizeInt(e, to, r);
    if (isFp8(to) && from != to) {
      std::string d = e.reg(RC::B16);
      e.ins("and.b16 " + d + ", " + r + ", 0x00FF");
      return d;
    }
    return r;
  }
  std::string d = e.reg(tc);
  e.ins((bitWidth(to) == 64 ? "mov.b64 " : "mov.b32 ") + d + ", " + r);
  return d;
}

} // namespace

std::string toF32(Emitter &e, const Operation &op, DType t,
                  const std::string &r) {
  switch (t) {
  case DType::FP32:
    return r;
  case DType::FP64: {
    std::string d = e.reg(RC::F32);
    e.ins("cvt.rn.f32.f64 " + d + ", " + r);
    return d;
  }
  case DType::FP16: {
    std::string d = e.reg(RC::F32);
    e.ins("cvt.f32.f16 " + d + ", " + r);
    return d;
  }
  case DType::BF16: {
    // bf16 is the top half of an fp32.
    std::string w = e.reg(RC::B32), s = e.reg(RC::B32), d = e.reg(RC::F32);
    e.ins("cvt.u32.u16 " + w + ", " + r);
    e.ins("shl.b32 " + s + ", " + w + ", 16");
    e.ins("mov.b32 " + d + ", " + s);
    return d;
  }
  case DType::FP8E4NV:
  case DType::FP8E5:
    return toF32(e, op, DType::FP16, fp8ToF16(e, op, t, r));
  case DType::FP8E4B15:
  case DType::FP8E4B8:
  case DType::FP8E5B16:
    return fp8ToF32Bits(e, t, r);
  default:
    e.internalError(op, "converts a non-float to fp32");
  }
}

std::string fromF32(Emitter &e, const Operation &op, DType t,
                    const std::string &f) {
  switch (t) {
  case DType::FP32:
    return f;
  case DType::FP64: {
    std::string d = e.reg(RC::F64);
    e.ins("cvt.f64.f32 " + d + ", " + f);
    return d;
  }
  case DType::FP16: {
    std::string d = e.reg(RC::B16);
    e.ins("cvt.rn.f16.f32 " + d + ", " + f);
    return d;
  }
  case DType::BF16: {
    std::string d = e.reg(RC::B16);
    e.ins("cvt.rn.bf16.f32 " + d + ", " + f);
    return d;
  }
  case DType::FP8E4NV:
  case DType::FP8E5:
    return f32ToFP8(e, op, t, f);
  case DType::FP8E4B15:
  case DType::FP8E4B8:
  case DType::FP8E5B16:
    return f32ToFp8Bits(e, t, f, /*rz=*/false);
  default:
    e.internalError(op, "converts fp32 to a non-float");
  }
}

std::string castElement(Emitter &e, const Operation &op, OpCode code,
                        const Type *from, const Type *to,
                        const std::string &r) {
  switch (code) {
  case OpCode::IntToPtr:
  case OpCode::PtrToInt:
    return r; // both live in 64-bit registers
  case OpCode::Bitcast:
    if (from->isPointer() || to->isPointer())
      return r;
    return bitcastElement(e, from->dtype(), to->dtype(), r);
  case OpCode::ExtSI:
  case OpCode::ExtUI:
  case OpCode::TruncI:
    return intCast(e, from->dtype(), to->dtype(), r, code == OpCode::ExtSI);
  case OpCode::SIToFP:
  case OpCode::UIToFP:
    return intToFloat(e, op, from->dtype(), to->dtype(), r,
                      code == OpCode::SIToFP);
  case OpCode::FPToSI:
  case OpCode::FPToUI:
    return floatToInt(e, op, from->dtype(), to->dtype(), r,
                      code == OpCode::FPToSI);
  case OpCode::ExtF:
    return floatToFloat(e, op, from->dtype(), to->dtype(), r);
  case OpCode::TruncF:
    return floatToFloat(e, op, from->dtype(), to->dtype(), r,
                        op.hasAttr("rounding") &&
                            op.strAttr("rounding") == "rtz");
  default:
    e.internalError(op, "is not a cast");
  }
}

bool emitCast(Emitter &e, Operation &op) {
  if (!op.hasTrait(CAST))
    return false;
  const Type *from = op.operand(0)->type()->scalarType();
  const Type *to = op.result(0)->type()->scalarType();
  const Regs &in = e.regs(op.operand(0));
  Regs out;
  // fp32 -> fp16/bf16 two at a time (cvt.rn.f16x2.f32: one instruction
  // for a pair, whose halves a store packs back for free).
  if (op.code() == OpCode::TruncF && !op.hasAttr("rounding") &&
      from->dtype() == DType::FP32 &&
      (to->dtype() == DType::FP16 || to->dtype() == DType::BF16) &&
      in.size() % 2 == 0) {
    const char *ty = to->dtype() == DType::FP16 ? "f16x2" : "bf16x2";
    std::map<std::pair<std::string, std::string>,
             std::pair<std::string, std::string>>
        seen;
    for (size_t i = 0; i < in.size(); i += 2) {
      auto key = std::make_pair(in[i], in[i + 1]);
      auto it = seen.find(key);
      if (it == seen.end()) {
        std::string w = e.reg(RC::B32), lo = e.reg(RC::B16),
                    hi = e.reg(RC::B16);
        // The first source goes to the upper half.
        e.ins(std::string("cvt.rn.") + ty + ".f32 " + w + ", " + in[i + 1] +
              ", " + in[i]);
        e.ins("mov.b32 {" + lo + ", " + hi + "}, " + w);
        it = seen.emplace(key, std::make_pair(lo, hi)).first;
      }
      out.push_back(it->second.first);
      out.push_back(it->second.second);
    }
    e.bind(op.result(0), std::move(out));
    return true;
  }
  std::vector<int> rep = e.equalRegisters(op.result(0));
  for (size_t i = 0; i < in.size(); ++i)
    out.push_back(!e.demanded(op.result(0), (int)i) ? Emitter::kUndemanded
                  : rep[i] != (int)i
                      ? out[rep[i]]
                      : castElement(e, op, op.code(), from, to, in[i]));
  e.bind(op.result(0), std::move(out));
  return true;
}

} // namespace tritium::nvidia
