// Division by a constant: see divide.h. The two planners are Hacker's
// Delight's `magic` (signed, figure 10-1) and `magicu` (unsigned, figure
// 10-2), in W-bit arithmetic (W = 32 or 64) held in unsigned __int128 and
// masked to W bits where the book's code wraps.
#include "tritium/support/divide.h"

#include "tritium/support/bits.h"

namespace tritium {
namespace {

using u128 = unsigned __int128;

uint64_t mask(int bits) { return bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1; }

int64_t signExtend(uint64_t v, int bits) {
  if (bits == 64)
    return (int64_t)v;
  uint64_t sign = uint64_t(1) << (bits - 1);
  v &= mask(bits);
  return (int64_t)((v ^ sign) - sign);
}

DivisionPlan signedMagic(int W, int64_t d) {
  const u128 m = mask(W);
  const u128 two = u128(1) << (W - 1);
  u128 ad = (u128)(d < 0 ? -(u128)d : (u128)d) & m;
  u128 t = two + ((u128)(uint64_t)d & m) / two; // two + sign bit of d
  u128 anc = t - 1 - t % ad;
  int p = W - 1;
  u128 q1 = two / anc, r1 = two - q1 * anc;
  u128 q2 = two / ad, r2 = two - q2 * ad;
  u128 delta;
  do {
    ++p;
    q1 = (2 * q1) & m;
    r1 = (2 * r1) & m;
    if (r1 >= anc) {
      q1 = (q1 + 1) & m;
      r1 -= anc;
    }
    q2 = (2 * q2) & m;
    r2 = (2 * r2) & m;
    if (r2 >= ad) {
      q2 = (q2 + 1) & m;
      r2 -= ad;
    }
    delta = ad - r2;
  } while (q1 < delta || (q1 == delta && r1 == 0));
  DivisionPlan pl;
  pl.kind = DivisionPlan::Kind::Magic;
  int64_t M = signExtend((uint64_t)((q2 + 1) & m), W);
  if (d < 0)
    M = signExtend((uint64_t)(-(u128)(uint64_t)M) & mask(W), W);
  pl.magic = (uint64_t)M & mask(W);
  pl.shift = p - W;
  pl.correction = (d > 0 && M < 0) ? 1 : (d < 0 && M > 0) ? -1 : 0;
  return pl;
}

DivisionPlan unsignedMagic(int W, uint64_t d) {
  const u128 m = mask(W);
  const u128 two = u128(1) << (W - 1);
  u128 D = d;
  u128 nc = (m - ((((u128(1) << W) - D) & m) % D)) & m;
  int p = W - 1;
  u128 q1 = two / nc, r1 = two - q1 * nc;
  u128 q2 = (two - 1) / D, r2 = (two - 1) - q2 * D;
  bool a = false;
  u128 delta;
  do {
    ++p;
    if (r1 >= nc - r1) {
      q1 = (2 * q1 + 1) & m;
      r1 = (2 * r1 - nc) & m;
    } else {
      q1 = (2 * q1) & m;
      r1 = (2 * r1) & m;
    }
    if (r2 + 1 >= D - r2) {
      if (q2 >= two - 1)
        a = true;
      q2 = (2 * q2 + 1) & m;
      r2 = (2 * r2 + 1 - D) & m;
    } else {
      if (q2 >= two)
        a = true;
      q2 = (2 * q2) & m;
      r2 = (2 * r2 + 1) & m;
    }
    delta = D - 1 - r2;
  } while (p < 2 * W && (q1 < delta || (q1 == delta && r1 == 0)));
  DivisionPlan pl;
  pl.kind = DivisionPlan::Kind::Magic;
  pl.magic = (uint64_t)((q2 + 1) & m);
  pl.shift = p - W;
  pl.add = a;
  return pl;
}

} // namespace

DivisionPlan planDivision(int bits, bool isSigned, int64_t d) {
  DivisionPlan p;
  if (bits != 32 && bits != 64)
    return p;
  uint64_t ud = (uint64_t)d & mask(bits);
  int64_t sd = signExtend(ud, bits);
  if (isSigned) {
    uint64_t minValue = uint64_t(1) << (bits - 1);
    if (sd == 0 || sd == -1 || ud == minValue)
      return p;
    if (sd == 1) {
      p.kind = DivisionPlan::Kind::Identity;
    } else if (isPowerOf2(sd < 0 ? -sd : sd)) {
      p.kind = DivisionPlan::Kind::Shift;
      p.shift = log2Exact(sd < 0 ? -sd : sd);
    } else {
      p = signedMagic(bits, sd);
    }
  } else {
    if (ud == 0)
      return p;
    if (ud == 1) {
      p.kind = DivisionPlan::Kind::Identity;
    } else if ((ud & (ud - 1)) == 0) {
      p.kind = DivisionPlan::Kind::Shift;
      p.shift = __builtin_ctzll(ud);
    } else {
      p = unsignedMagic(bits, ud);
    }
  }
  p.bits = bits;
  p.isSigned = isSigned;
  p.divisor = sd;
  return p;
}

uint64_t applyDivision(const DivisionPlan &p, uint64_t n) {
  const int W = p.bits;
  const uint64_t m = mask(W);
  n &= m;
  auto mulhiU = [&](uint64_t a, uint64_t b) { return (uint64_t)(((u128)a * b) >> W) & m; };
  auto mulhiS = [&](uint64_t a, uint64_t b) {
    __int128 r = (__int128)signExtend(a, W) * signExtend(b, W);
    return (uint64_t)(r >> W) & m;
  };
  auto sra = [&](uint64_t v, int s) { return (uint64_t)(signExtend(v, W) >> s) & m; };
  switch (p.kind) {
  case DivisionPlan::Kind::Generic:
    return 0; // not planned: the caller emits div
  case DivisionPlan::Kind::Identity:
    return n;
  case DivisionPlan::Kind::Shift:
    if (!p.isSigned)
      return n >> p.shift;
    {
      // q = (n + (sign(n) >>> (W - k))) >> k, negated for d < 0.
      uint64_t bias = (sra(n, W - 1) >> (W - p.shift)) & m;
      uint64_t q = sra((n + bias) & m, p.shift);
      return p.divisor < 0 ? (0 - q) & m : q;
    }
  case DivisionPlan::Kind::Magic:
    if (!p.isSigned) {
      uint64_t t = mulhiU(p.magic, n);
      if (!p.add)
        return t >> p.shift;
      return ((((n - t) & m) >> 1) + t) >> (p.shift - 1);
    }
    {
      uint64_t q = mulhiS(p.magic, n);
      if (p.correction > 0)
        q = (q + n) & m;
      else if (p.correction < 0)
        q = (q - n) & m;
      q = sra(q, p.shift);
      return (q + (q >> (W - 1))) & m;
    }
  }
  return 0;
}

} // namespace tritium
