// Rounding doubles to the narrow float formats and encoding/decoding their
// bits. See float_formats.h for the overflow rules.
#include "tritium/support/float_formats.h"

#include <bit>
#include <cmath>
#include <limits>

namespace tritium {
namespace {

/// A binary float format with an implicit leading one.
struct Format {
  int mantBits; // explicit mantissa bits
  int expBits;
  int bias;
  int emin;         // unbiased exponent of the smallest normal
  double maxFinite; // largest finite value
  bool saturate;    // overflow (and inf) saturates to maxFinite
  bool hasInf;      // the format can hold inf
  uint64_t nanBits; // canonical positive NaN
};

constexpr Format kHalf{10, 5, 15, -14, 65504.0, false, true, 0x7e00};
constexpr Format kBF16{7,     8,    127,   -126, 3.3895313892515355e38,
                       false, true, 0x7fc0};
// e4m3fn: exponent field 15 holds normals too, except mantissa 111 (NaN).
constexpr Format kE4M3{3, 4, 7, -6, 448.0, true, false, 0x7f};
constexpr Format kE5M2{2, 5, 15, -14, 57344.0, true, true, 0x7e};

/// Rounds a finite, non-negative double to `f` (ignoring overflow).
double roundMagnitude(double a, const Format &f) {
  uint64_t bits = std::bit_cast<uint64_t>(a);
  int e = int((bits >> 52) & 0x7ff) - 1023;
  if (e >= f.emin) {
    // Target normal: round the 52-bit mantissa to mantBits bits; a carry out
    // of the mantissa correctly bumps the exponent.
    int shift = 52 - f.mantBits;
    uint64_t lsb = (bits >> shift) & 1;
    bits += (uint64_t(1) << (shift - 1)) - 1 + lsb;
    bits &= ~((uint64_t(1) << shift) - 1);
    return std::bit_cast<double>(bits);
  }
  // Target subnormal (or zero): a fixed quantum. The division is exact.
  double q = std::ldexp(1.0, f.emin - f.mantBits);
  return std::nearbyint(a / q) * q;
}

double roundTo(double x, const Format &f) {
  if (std::isnan(x))
    return x;
  double a = std::fabs(x);
  double r;
  if (std::isinf(a)) {
    r = f.saturate ? f.maxFinite : a;
  } else {
    r = roundMagnitude(a, f);
    if (r > f.maxFinite)
      r = f.saturate ? f.maxFinite : std::numeric_limits<double>::infinity();
  }
  return std::signbit(x) ? -r : r;
}

uint64_t encode(double x, const Format &f) {
  int width = 1 + f.expBits + f.mantBits;
  uint64_t sign = std::signbit(x) ? uint64_t(1) << (width - 1) : 0;
  if (std::isnan(x))
    return sign | f.nanBits;
  double r = std::fabs(roundTo(x, f));
  if (std::isinf(r))
    return sign | (((uint64_t(1) << f.expBits) - 1) << f.mantBits);
  if (r == 0)
    return sign;
  uint64_t bits = std::bit_cast<uint64_t>(r);
  int e = int((bits >> 52) & 0x7ff) - 1023;
  if (e < f.emin) {
    double q = std::ldexp(1.0, f.emin - f.mantBits);
    return sign | uint64_t(r / q);
  }
  uint64_t mant =
      (bits >> (52 - f.mantBits)) & ((uint64_t(1) << f.mantBits) - 1);
  return sign | (uint64_t(e + f.bias) << f.mantBits) | mant;
}

double decode(uint64_t bits, const Format &f) {
  int width = 1 + f.expBits + f.mantBits;
  bool neg = (bits >> (width - 1)) & 1;
  uint64_t expField = (bits >> f.mantBits) & ((uint64_t(1) << f.expBits) - 1);
  uint64_t mant = bits & ((uint64_t(1) << f.mantBits) - 1);
  uint64_t expMax = (uint64_t(1) << f.expBits) - 1;
  double v;
  if (f.hasInf && expField == expMax) {
    v = mant ? std::numeric_limits<double>::quiet_NaN()
             : std::numeric_limits<double>::infinity();
  } else if (!f.hasInf && expField == expMax &&
             mant == (uint64_t(1) << f.mantBits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (expField == 0) {
    v = std::ldexp(double(mant), f.emin - f.mantBits);
  } else {
    v = std::ldexp(double(mant | (uint64_t(1) << f.mantBits)),
                   int(expField) - f.bias - f.mantBits);
  }
  return neg ? -v : v;
}

const Format *formatOf(DType t) {
  switch (t) {
  case DType::FP16:
    return &kHalf;
  case DType::BF16:
    return &kBF16;
  case DType::FP8E4NV:
    return &kE4M3;
  case DType::FP8E5:
    return &kE5M2;
  default:
    return nullptr;
  }
}

} // namespace

double roundToFloatDType(double x, DType t) {
  if (t == DType::FP64)
    return x;
  if (t == DType::FP32)
    return double(float(x));
  if (const Format *f = formatOf(t))
    return roundTo(x, *f);
  return x;
}

uint64_t encodeFloat(double x, DType t) {
  if (t == DType::FP64)
    return std::bit_cast<uint64_t>(x);
  if (t == DType::FP32)
    return std::bit_cast<uint32_t>(float(x));
  if (const Format *f = formatOf(t))
    return encode(x, *f);
  return 0;
}

double decodeFloat(uint64_t bits, DType t) {
  if (t == DType::FP64)
    return std::bit_cast<double>(bits);
  if (t == DType::FP32)
    return double(std::bit_cast<float>(uint32_t(bits)));
  if (const Format *f = formatOf(t))
    return decode(bits, *f);
  return 0;
}

uint16_t floatToHalfBits(double x) { return uint16_t(encode(x, kHalf)); }
double halfBitsToFloat(uint16_t bits) { return decode(bits, kHalf); }
uint16_t floatToBF16Bits(double x) { return uint16_t(encode(x, kBF16)); }
double bf16BitsToFloat(uint16_t bits) { return decode(bits, kBF16); }
uint8_t floatToFP8E4NVBits(double x) { return uint8_t(encode(x, kE4M3)); }
double fp8e4nvBitsToFloat(uint8_t bits) { return decode(bits, kE4M3); }
uint8_t floatToFP8E5Bits(double x) { return uint8_t(encode(x, kE5M2)); }
double fp8e5BitsToFloat(uint8_t bits) { return decode(bits, kE5M2); }

} // namespace tritium
