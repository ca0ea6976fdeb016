// Elementwise ops of the CPU executor: integer and float arithmetic,
// comparisons, select, casts and math. Each op switches once on its code and
// dtype, then loops over the elements.
//
// Integer results wrap at the result's width. Defined results where C++ or
// LLVM leave them undefined (as RISC-V does):
//   x / 0 = -1 (all ones at the width), x % 0 = x, INT_MIN / -1 = INT_MIN,
//   INT_MIN % -1 = 0; a shift by >= the width (the amount read as unsigned)
//   gives 0 (shli, shrui) or the sign fill (shrsi).
// Float results are computed in double and rounded to the dtype.
#include "exec_internal.h"

#include <bit>
#include <cmath>

namespace tritium::exec {

namespace {

template <class F>
void mapInt2(const Slot *x, const Slot *y, Slot *z, int64_t n, IntFmt out,
             F fn) {
  for (int64_t i = 0; i < n; ++i)
    z[i].i = out.norm(fn(x[i].i, y[i].i));
}

template <class F>
void mapFloat2(DType dt, const Slot *x, const Slot *y, Slot *z, int64_t n,
               F fn) {
  switch (dt) {
  case DType::FP64:
    for (int64_t i = 0; i < n; ++i)
      z[i].f = fn(x[i].f, y[i].f);
    break;
  case DType::FP32:
    for (int64_t i = 0; i < n; ++i)
      z[i].f = double(float(fn(x[i].f, y[i].f)));
    break;
  default:
    for (int64_t i = 0; i < n; ++i)
      z[i].f = roundToFloatDType(fn(x[i].f, y[i].f), dt);
    break;
  }
}

template <class F>
void mapFloat1(DType dt, const Slot *x, Slot *z, int64_t n, F fn) {
  mapFloat2(dt, x, x, z, n, [&](double a, double) { return fn(a); });
}

double maximumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? b : a; // +0 over -0
  return a > b ? a : b;
}
double minimumF(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
double maxNumF(double a, double b) {
  if (std::isnan(a))
    return b;
  if (std::isnan(b))
    return a;
  return maximumF(a, b);
}
double minNumF(double a, double b) {
  if (std::isnan(a))
    return b;
  if (std::isnan(b))
    return a;
  return minimumF(a, b);
}

void intBinary(const OpPlan &op, const RValue &a, const RValue &b, RValue &r) {
  DType dt = elemDType(a.type());
  IntFmt out = intFmt(elemDType(r.type()));
  int w = intFmt(dt).width;
  const Slot *x = a.data(), *y = b.data();
  Slot *z = r.mutableData();
  int64_t n = r.size();
  auto U = [](int64_t v) { return uint64_t(v); };
  switch (op.code) {
  case OpCode::AddI:
    return mapInt2(x, y, z, n, out,
                   [&](int64_t p, int64_t q) { return int64_t(U(p) + U(q)); });
  case OpCode::SubI:
    return mapInt2(x, y, z, n, out,
                   [&](int64_t p, int64_t q) { return int64_t(U(p) - U(q)); });
  case OpCode::MulI:
    return mapInt2(x, y, z, n, out,
                   [&](int64_t p, int64_t q) { return int64_t(U(p) * U(q)); });
  case OpCode::MulHiUI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) {
      unsigned __int128 prod =
          (unsigned __int128)zext(p, w) * (unsigned __int128)zext(q, w);
      return int64_t(uint64_t(prod >> w));
    });
  case OpCode::DivSI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) -> int64_t {
      int64_t sp = sext(p, w), sq = sext(q, w);
      if (sq == 0)
        return -1;
      if (sq == -1)
        return int64_t(0 - U(sp));
      return sp / sq;
    });
  case OpCode::DivUI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) -> int64_t {
      uint64_t up = zext(p, w), uq = zext(q, w);
      return uq == 0 ? -1 : int64_t(up / uq);
    });
  case OpCode::RemSI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) -> int64_t {
      int64_t sp = sext(p, w), sq = sext(q, w);
      if (sq == 0)
        return sp;
      if (sq == -1)
        return 0;
      return sp % sq;
    });
  case OpCode::RemUI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) -> int64_t {
      uint64_t up = zext(p, w), uq = zext(q, w);
      return uq == 0 ? int64_t(up) : int64_t(up % uq);
    });
  case OpCode::AndI:
    return mapInt2(x, y, z, n, out, [](int64_t p, int64_t q) { return p & q; });
  case OpCode::OrI:
    return mapInt2(x, y, z, n, out, [](int64_t p, int64_t q) { return p | q; });
  case OpCode::XOrI:
    return mapInt2(x, y, z, n, out, [](int64_t p, int64_t q) { return p ^ q; });
  case OpCode::ShLI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) -> int64_t {
      uint64_t amt = zext(q, w);
      return amt >= uint64_t(w) ? 0 : int64_t(U(p) << amt);
    });
  case OpCode::ShRSI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) -> int64_t {
      uint64_t amt = zext(q, w);
      return sext(p, w) >> (amt >= uint64_t(w) ? 63 : amt);
    });
  case OpCode::ShRUI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) -> int64_t {
      uint64_t amt = zext(q, w);
      return amt >= uint64_t(w) ? 0 : int64_t(zext(p, w) >> amt);
    });
  case OpCode::MaxSI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) {
      return sext(p, w) >= sext(q, w) ? p : q;
    });
  case OpCode::MinSI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) {
      return sext(p, w) <= sext(q, w) ? p : q;
    });
  case OpCode::MaxUI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) {
      return zext(p, w) >= zext(q, w) ? p : q;
    });
  case OpCode::MinUI:
    return mapInt2(x, y, z, n, out, [&](int64_t p, int64_t q) {
      return zext(p, w) <= zext(q, w) ? p : q;
    });
  default:
    break;
  }
}

void floatBinary(const OpPlan &op, const RValue &a, const RValue &b,
                 RValue &r) {
  DType dt = elemDType(r.type());
  const Slot *x = a.data(), *y = b.data();
  Slot *z = r.mutableData();
  int64_t n = r.size();
  switch (op.code) {
  case OpCode::AddF:
    return mapFloat2(dt, x, y, z, n, [](double p, double q) { return p + q; });
  case OpCode::SubF:
    return mapFloat2(dt, x, y, z, n, [](double p, double q) { return p - q; });
  case OpCode::MulF:
    return mapFloat2(dt, x, y, z, n, [](double p, double q) { return p * q; });
  case OpCode::DivF:
    return mapFloat2(dt, x, y, z, n, [](double p, double q) { return p / q; });
  case OpCode::RemF:
    return mapFloat2(dt, x, y, z, n,
                     [](double p, double q) { return std::fmod(p, q); });
  case OpCode::MaximumF:
    return mapFloat2(dt, x, y, z, n, maximumF);
  case OpCode::MinimumF:
    return mapFloat2(dt, x, y, z, n, minimumF);
  case OpCode::MaxNumF:
    return mapFloat2(dt, x, y, z, n, maxNumF);
  case OpCode::MinNumF:
    return mapFloat2(dt, x, y, z, n, minNumF);
  default:
    break;
  }
}

template <class F>
void mapCmp(const Slot *x, const Slot *y, Slot *z, int64_t n, F fn) {
  for (int64_t i = 0; i < n; ++i)
    z[i].i = fn(x[i], y[i]) ? 1 : 0;
}

void cmpI(const OpPlan &op, const RValue &a, const RValue &b, RValue &r,
          const RunState &run) {
  const Slot *x = a.data(), *y = b.data();
  Slot *z = r.mutableData();
  int64_t n = r.size();
  if (isPtrElem(a.type())) {
    // Pointers compare by address; provenance plays no part.
    auto addr = [&](Slot s) { return int64_t(ptrAddress(run, s.u)); };
    CmpIPred p = CmpIPred(op.kind);
    auto pred = [p](uint64_t u, uint64_t v) {
      switch (p) {
      case CmpIPred::EQ:
        return u == v;
      case CmpIPred::NE:
        return u != v;
      case CmpIPred::SLT:
        return int64_t(u) < int64_t(v);
      case CmpIPred::SLE:
        return int64_t(u) <= int64_t(v);
      case CmpIPred::SGT:
        return int64_t(u) > int64_t(v);
      case CmpIPred::SGE:
        return int64_t(u) >= int64_t(v);
      case CmpIPred::ULT:
        return u < v;
      case CmpIPred::ULE:
        return u <= v;
      case CmpIPred::UGT:
        return u > v;
      case CmpIPred::UGE:
        return u >= v;
      }
      return false;
    };
    for (int64_t i = 0; i < n; ++i)
      z[i].i = pred(addr(x[i]), addr(y[i]));
    return;
  }
  int w = intFmt(elemDType(a.type())).width;
  switch (CmpIPred(op.kind)) {
  case CmpIPred::EQ:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return p.i == q.i; });
  case CmpIPred::NE:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return p.i != q.i; });
  case CmpIPred::SLT:
    return mapCmp(x, y, z, n,
                  [w](Slot p, Slot q) { return sext(p.i, w) < sext(q.i, w); });
  case CmpIPred::SLE:
    return mapCmp(x, y, z, n,
                  [w](Slot p, Slot q) { return sext(p.i, w) <= sext(q.i, w); });
  case CmpIPred::SGT:
    return mapCmp(x, y, z, n,
                  [w](Slot p, Slot q) { return sext(p.i, w) > sext(q.i, w); });
  case CmpIPred::SGE:
    return mapCmp(x, y, z, n,
                  [w](Slot p, Slot q) { return sext(p.i, w) >= sext(q.i, w); });
  case CmpIPred::ULT:
    return mapCmp(x, y, z, n,
                  [w](Slot p, Slot q) { return zext(p.i, w) < zext(q.i, w); });
  case CmpIPred::ULE:
    return mapCmp(x, y, z, n,
                  [w](Slot p, Slot q) { return zext(p.i, w) <= zext(q.i, w); });
  case CmpIPred::UGT:
    return mapCmp(x, y, z, n,
                  [w](Slot p, Slot q) { return zext(p.i, w) > zext(q.i, w); });
  case CmpIPred::UGE:
    return mapCmp(x, y, z, n,
                  [w](Slot p, Slot q) { return zext(p.i, w) >= zext(q.i, w); });
  }
}

void cmpF(const OpPlan &op, const RValue &a, const RValue &b, RValue &r) {
  const Slot *x = a.data(), *y = b.data();
  Slot *z = r.mutableData();
  int64_t n = r.size();
  auto uno = [](double p, double q) { return std::isnan(p) || std::isnan(q); };
  switch (CmpFPred(op.kind)) {
  case CmpFPred::OEQ:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return p.f == q.f; });
  case CmpFPred::ONE:
    return mapCmp(x, y, z, n,
                  [&](Slot p, Slot q) { return !uno(p.f, q.f) && p.f != q.f; });
  case CmpFPred::OLT:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return p.f < q.f; });
  case CmpFPred::OLE:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return p.f <= q.f; });
  case CmpFPred::OGT:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return p.f > q.f; });
  case CmpFPred::OGE:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return p.f >= q.f; });
  case CmpFPred::UEQ:
    return mapCmp(x, y, z, n,
                  [&](Slot p, Slot q) { return uno(p.f, q.f) || p.f == q.f; });
  case CmpFPred::UNE:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return p.f != q.f; });
  case CmpFPred::ULT:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return !(p.f >= q.f); });
  case CmpFPred::ULE:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return !(p.f > q.f); });
  case CmpFPred::UGT:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return !(p.f <= q.f); });
  case CmpFPred::UGE:
    return mapCmp(x, y, z, n, [](Slot p, Slot q) { return !(p.f < q.f); });
  case CmpFPred::ORD:
    return mapCmp(x, y, z, n, [&](Slot p, Slot q) { return !uno(p.f, q.f); });
  case CmpFPred::UNO:
    return mapCmp(x, y, z, n, [&](Slot p, Slot q) { return uno(p.f, q.f); });
  case CmpFPred::AlwaysTrue:
    return mapCmp(x, y, z, n, [](Slot, Slot) { return true; });
  case CmpFPred::AlwaysFalse:
    return mapCmp(x, y, z, n, [](Slot, Slot) { return false; });
  }
}

/// Memory bits of a scalar slot of dtype t (low bitWidth(t) bits).
uint64_t slotBits(Slot s, DType t) {
  if (isFloat(t))
    return encodeFloat(s.f, t);
  return zext(s.i, bitWidth(t));
}

void cast(const OpPlan &op, const RValue &a, RValue &r, const RunState &run) {
  const Type *from = a.type()->scalarType(), *to = r.type()->scalarType();
  const Slot *x = a.data();
  Slot *z = r.mutableData();
  int64_t n = r.size();
  if (op.code == OpCode::Bitcast) {
    if (from->isPointer() && to->isPointer()) {
      std::copy(x, x + n, z);
    } else if (from->isPointer()) {
      IntFmt o = intFmt(to->dtype());
      for (int64_t i = 0; i < n; ++i)
        z[i].i = o.norm(int64_t(ptrAddress(run, x[i].u)));
    } else if (to->isPointer()) {
      for (int64_t i = 0; i < n; ++i)
        z[i].u = ptrFromAddress(run, slotBits(x[i], from->dtype()));
    } else {
      DType df = from->dtype(), dt = to->dtype();
      IntFmt o = intFmt(dt);
      for (int64_t i = 0; i < n; ++i) {
        uint64_t bits = slotBits(x[i], df);
        if (isFloat(dt))
          z[i].f = decodeFloat(bits, dt);
        else
          z[i].i = o.norm(int64_t(bits));
      }
    }
    return;
  }
  DType df = from->dtype(), dt = to->dtype();
  int wf = isInteger(df) ? bitWidth(df) : 64;
  IntFmt o = intFmt(dt);
  switch (op.code) {
  case OpCode::ExtSI:
    for (int64_t i = 0; i < n; ++i)
      z[i].i = o.norm(sext(x[i].i, wf));
    return;
  case OpCode::ExtUI:
  case OpCode::TruncI:
    for (int64_t i = 0; i < n; ++i)
      z[i].i = o.norm(int64_t(zext(x[i].i, wf)));
    return;
  case OpCode::SIToFP:
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = sext(x[i].i, wf);
      // Straight to float for fp32 so that large i64 round once.
      z[i].f = dt == DType::FP32 ? double(float(v)) : roundF(double(v), dt);
    }
    return;
  case OpCode::UIToFP:
    for (int64_t i = 0; i < n; ++i) {
      uint64_t v = zext(x[i].i, wf);
      z[i].f = dt == DType::FP32 ? double(float(v)) : roundF(double(v), dt);
    }
    return;
  case OpCode::FPToSI:
    for (int64_t i = 0; i < n; ++i)
      z[i].i = o.norm(fpToInt(x[i].f, o.width, true));
    return;
  case OpCode::FPToUI:
    for (int64_t i = 0; i < n; ++i)
      z[i].i = o.norm(fpToInt(x[i].f, o.width, false));
    return;
  case OpCode::ExtF:
    for (int64_t i = 0; i < n; ++i)
      z[i].f = roundF(x[i].f, dt);
    return;
  case OpCode::TruncF: {
    FloatRounding mode = op.op->hasAttr("rounding") &&
                                 op.op->strAttr("rounding") == "rtz"
                             ? FloatRounding::TowardZero
                             : FloatRounding::NearestEven;
    for (int64_t i = 0; i < n; ++i)
      z[i].f = roundToFloatDType(x[i].f, dt, mode);
    return;
  }
  default:
    return;
  }
}

void mathUnary(const OpPlan &op, const RValue &a, RValue &r) {
  const Slot *x = a.data();
  Slot *z = r.mutableData();
  int64_t n = r.size();
  DType dt = elemDType(r.type());
  switch (op.code) {
  case OpCode::NegF:
    return mapFloat1(dt, x, z, n, [](double v) { return -v; });
  case OpCode::Exp:
    return mapFloat1(dt, x, z, n, [](double v) { return std::exp(v); });
  case OpCode::Exp2:
    return mapFloat1(dt, x, z, n, [](double v) { return std::exp2(v); });
  case OpCode::Log:
    return mapFloat1(dt, x, z, n, [](double v) { return std::log(v); });
  case OpCode::Log2:
    return mapFloat1(dt, x, z, n, [](double v) { return std::log2(v); });
  case OpCode::Sqrt:
    return mapFloat1(dt, x, z, n, [](double v) { return std::sqrt(v); });
  case OpCode::Rsqrt:
    return mapFloat1(dt, x, z, n, [](double v) { return 1.0 / std::sqrt(v); });
  case OpCode::AbsF:
    return mapFloat1(dt, x, z, n, [](double v) { return std::fabs(v); });
  case OpCode::Sin:
    return mapFloat1(dt, x, z, n, [](double v) { return std::sin(v); });
  case OpCode::Cos:
    return mapFloat1(dt, x, z, n, [](double v) { return std::cos(v); });
  case OpCode::Floor:
    return mapFloat1(dt, x, z, n, [](double v) { return std::floor(v); });
  case OpCode::Ceil:
    return mapFloat1(dt, x, z, n, [](double v) { return std::ceil(v); });
  case OpCode::Trunc:
    return mapFloat1(dt, x, z, n, [](double v) { return std::trunc(v); });
  case OpCode::RoundEven:
    // nearbyint in the default rounding mode rounds ties to even.
    return mapFloat1(dt, x, z, n, [](double v) { return std::nearbyint(v); });
  case OpCode::Erf:
    return mapFloat1(dt, x, z, n, [](double v) { return std::erf(v); });
  case OpCode::Tanh:
    return mapFloat1(dt, x, z, n, [](double v) { return std::tanh(v); });
  case OpCode::AbsI: {
    IntFmt o = intFmt(dt);
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = sext(x[i].i, o.width);
      z[i].i = o.norm(v < 0 ? int64_t(0 - uint64_t(v)) : v);
    }
    return;
  }
  default:
    return;
  }
}

} // namespace

void evalArith(const OpPlan &op, Frame &f, const ProgramCtx &ctx) {
  RValue r = RValue::alloc(op.op->result(0)->type());
  if (op.op->hasTrait(IBIN))
    intBinary(op, f[op.in[0]], f[op.in[1]], r);
  else if (op.op->hasTrait(FBIN))
    floatBinary(op, f[op.in[0]], f[op.in[1]], r);
  else
    switch (op.code) {
    case OpCode::CmpI:
      cmpI(op, f[op.in[0]], f[op.in[1]], r, *ctx.run);
      break;
    case OpCode::CmpF:
      cmpF(op, f[op.in[0]], f[op.in[1]], r);
      break;
    case OpCode::Select: {
      const RValue &c = f[op.in[0]];
      const Slot *a = f[op.in[1]].data(), *b = f[op.in[2]].data();
      Slot *z = r.mutableData();
      int64_t n = r.size();
      if (c.size() == 1 && n != 1) {
        const Slot *src = c[0].i ? a : b;
        std::copy(src, src + n, z);
      } else {
        const Slot *cs = c.data();
        for (int64_t i = 0; i < n; ++i)
          z[i] = cs[i].i ? a[i] : b[i];
      }
      break;
    }
    case OpCode::Fma: {
      const Slot *a = f[op.in[0]].data(), *b = f[op.in[1]].data(),
                 *c = f[op.in[2]].data();
      Slot *z = r.mutableData();
      DType dt = elemDType(r.type());
      for (int64_t i = 0, n = r.size(); i < n; ++i)
        z[i].f = roundF(std::fma(a[i].f, b[i].f, c[i].f), dt);
      break;
    }
    case OpCode::ExtSI:
    case OpCode::ExtUI:
    case OpCode::TruncI:
    case OpCode::SIToFP:
    case OpCode::UIToFP:
    case OpCode::FPToSI:
    case OpCode::FPToUI:
    case OpCode::ExtF:
    case OpCode::TruncF:
    case OpCode::Bitcast:
      cast(op, f[op.in[0]], r, *ctx.run);
      break;
    default:
      mathUnary(op, f[op.in[0]], r);
      break;
    }
  f[op.out[0]] = std::move(r);
}

} // namespace tritium::exec
