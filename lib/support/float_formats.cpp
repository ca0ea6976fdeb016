// Rounding doubles to the narrow float formats and encoding/decoding their
// bits. See float_formats.h for the table of formats and overflow rules.
#include "tritium/support/float_formats.h"

#include <bit>
#include <cmath>
#include <limits>

namespace tritium {
namespace {

/// Which encodings of the top exponent (or the sign) are not numbers.
enum class Specials : uint8_t {
  IEEE, // exponent all ones: inf (mantissa 0) or NaN
  FN,   // no inf; only exponent and mantissa all ones is NaN (OCP e4m3fn)
  FNUZ, // no inf, no -0; the negative-zero encoding is the one NaN
  None, // every encoding is a finite number
};

/// A binary float format with an implicit leading one.
struct Format {
  int mantBits; // explicit mantissa bits
  int expBits;
  int bias;
  Specials specials;
  bool saturate;    // finite overflow saturates to maxFinite (else +-inf)
  bool infToNaN;    // +-inf converts to NaN (else as overflow)
  uint64_t nanBits; // the NaN a conversion produces (sign added unless FNUZ
                    // or None)

  int emin() const { return 1 - bias; } // exponent of the smallest normal
  int width() const { return 1 + expBits + mantBits; }
  uint64_t expMax() const { return (uint64_t(1) << expBits) - 1; }
  uint64_t mantMask() const { return (uint64_t(1) << mantBits) - 1; }
  /// The largest finite magnitude's bits (sign clear).
  uint64_t maxBits() const {
    switch (specials) {
    case Specials::IEEE:
      return ((expMax() - 1) << mantBits) | mantMask();
    case Specials::FN:
      return (expMax() << mantBits) | (mantMask() - 1);
    default:
      return (expMax() << mantBits) | mantMask();
    }
  }
};

constexpr Format kHalf{10,    5,     15,    Specials::IEEE,
                       false, false, 0x7e00};
constexpr Format kBF16{7, 8, 127, Specials::IEEE, false, false, 0x7fc0};
constexpr Format kE4M3{3, 4, 7, Specials::FN, true, false, 0x7f};
constexpr Format kE5M2{2, 5, 15, Specials::IEEE, true, false, 0x7e};
constexpr Format kE4B15{3, 4, 15, Specials::None, true, false, 0x7f};
constexpr Format kE4B8{3, 4, 8, Specials::FNUZ, true, true, 0x80};
constexpr Format kE5B16{2, 5, 16, Specials::FNUZ, true, true, 0x80};

double decodeMagnitude(uint64_t bits, const Format &f) {
  uint64_t expField = (bits >> f.mantBits) & f.expMax();
  uint64_t mant = bits & f.mantMask();
  if (expField == 0)
    return std::ldexp(double(mant), f.emin() - f.mantBits);
  return std::ldexp(double(mant | (uint64_t(1) << f.mantBits)),
                    int(expField) - f.bias - f.mantBits);
}

double maxFinite(const Format &f) { return decodeMagnitude(f.maxBits(), f); }

/// Rounds a finite, non-negative double to `f` (ignoring overflow).
double roundMagnitude(double a, const Format &f, FloatRounding mode) {
  uint64_t bits = std::bit_cast<uint64_t>(a);
  int e = int((bits >> 52) & 0x7ff) - 1023;
  if (e >= f.emin()) {
    // Target normal: round the 52-bit mantissa to mantBits bits; a carry out
    // of the mantissa correctly bumps the exponent.
    int shift = 52 - f.mantBits;
    if (mode == FloatRounding::NearestEven) {
      uint64_t lsb = (bits >> shift) & 1;
      bits += (uint64_t(1) << (shift - 1)) - 1 + lsb;
    }
    bits &= ~((uint64_t(1) << shift) - 1);
    return std::bit_cast<double>(bits);
  }
  // Target subnormal (or zero): a fixed quantum. The division is exact.
  double q = std::ldexp(1.0, f.emin() - f.mantBits);
  double n = mode == FloatRounding::NearestEven ? std::nearbyint(a / q)
                                                : std::trunc(a / q);
  return n * q;
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// `x` rounded to `f`, with `f`'s overflow rules; NaN for a NaN result.
double roundTo(double x, const Format &f, FloatRounding mode) {
  if (std::isnan(x))
    return f.specials == Specials::None ? maxFinite(f) : kNaN;
  double a = std::fabs(x), r;
  if (std::isinf(a)) {
    if (f.infToNaN)
      return kNaN;
    r = f.saturate ? maxFinite(f) : kInf;
  } else {
    r = roundMagnitude(a, f, mode);
    if (r > maxFinite(f)) {
      // Toward zero never reaches inf: IEEE's rz gives the largest finite.
      r = f.saturate || mode == FloatRounding::TowardZero ? maxFinite(f)
                                                          : kInf;
    }
  }
  if (f.specials == Specials::FNUZ && r == 0)
    return 0.0; // no -0
  return std::signbit(x) ? -r : r;
}

uint64_t encode(double x, const Format &f, FloatRounding mode) {
  uint64_t sign = std::signbit(x) ? uint64_t(1) << (f.width() - 1) : 0;
  double r = roundTo(x, f, mode);
  if (std::isnan(r)) {
    bool signed_ = f.specials == Specials::IEEE || f.specials == Specials::FN;
    return (signed_ ? sign : 0) | f.nanBits;
  }
  if (f.specials == Specials::None && std::isnan(x))
    return f.nanBits; // 0x7f whatever the NaN's sign
  sign = std::signbit(r) ? uint64_t(1) << (f.width() - 1) : 0;
  r = std::fabs(r);
  if (std::isinf(r))
    return sign | (f.expMax() << f.mantBits);
  if (r == 0)
    return sign;
  uint64_t bits = std::bit_cast<uint64_t>(r);
  int e = int((bits >> 52) & 0x7ff) - 1023;
  if (e < f.emin()) {
    double q = std::ldexp(1.0, f.emin() - f.mantBits);
    return sign | uint64_t(r / q);
  }
  uint64_t mant = (bits >> (52 - f.mantBits)) & f.mantMask();
  return sign | (uint64_t(e + f.bias) << f.mantBits) | mant;
}

double decode(uint64_t bits, const Format &f) {
  bool neg = (bits >> (f.width() - 1)) & 1;
  uint64_t mag = bits & ((uint64_t(1) << (f.width() - 1)) - 1);
  uint64_t expField = mag >> f.mantBits;
  uint64_t mant = mag & f.mantMask();
  switch (f.specials) {
  case Specials::IEEE:
    if (expField == f.expMax())
      // copysign, not a product: -1 * NaN keeps the NaN's own (positive)
      // sign on x86, and a negative NaN must stay negative (signbit).
      return std::copysign(mant ? kNaN : kInf, neg ? -1.0 : 1.0);
    break;
  case Specials::FN:
    if (mag == ((f.expMax() << f.mantBits) | f.mantMask()))
      return std::copysign(kNaN, neg ? -1.0 : 1.0);
    break;
  case Specials::FNUZ:
    if (neg && mag == 0)
      return kNaN;
    break;
  case Specials::None:
    break;
  }
  double v = decodeMagnitude(mag, f);
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
  case DType::FP8E4B15:
    return &kE4B15;
  case DType::FP8E4B8:
    return &kE4B8;
  case DType::FP8E5B16:
    return &kE5B16;
  default:
    return nullptr;
  }
}

/// fp32 rounding of a double, toward zero: float() rounds to nearest, so
/// step back toward zero when it went past x.
float toF32TowardZero(double x) {
  float r = float(x);
  if (std::isinf(r) && !std::isinf(x))
    return std::copysign(std::numeric_limits<float>::max(), float(x));
  if (std::fabs(double(r)) > std::fabs(x))
    r = std::nextafter(r, 0.0f);
  return r;
}

float toF32(double x, FloatRounding mode) {
  return mode == FloatRounding::TowardZero && std::isfinite(x)
             ? toF32TowardZero(x)
             : float(x);
}

} // namespace

double roundToFloatDType(double x, DType t, FloatRounding mode) {
  if (t == DType::FP64)
    return x;
  if (t == DType::FP32)
    return double(toF32(x, mode));
  if (const Format *f = formatOf(t))
    return roundTo(x, *f, mode);
  return x;
}

uint64_t encodeFloat(double x, DType t, FloatRounding mode) {
  if (t == DType::FP64)
    return std::bit_cast<uint64_t>(x);
  if (t == DType::FP32)
    return std::bit_cast<uint32_t>(toF32(x, mode));
  if (const Format *f = formatOf(t))
    return encode(x, *f, mode);
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

double maxFiniteValue(DType t) {
  if (t == DType::FP64)
    return std::numeric_limits<double>::max();
  if (t == DType::FP32)
    return std::numeric_limits<float>::max();
  if (const Format *f = formatOf(t))
    return maxFinite(*f);
  return 0;
}

uint16_t floatToHalfBits(double x) {
  return uint16_t(encode(x, kHalf, FloatRounding::NearestEven));
}
double halfBitsToFloat(uint16_t bits) { return decode(bits, kHalf); }
uint16_t floatToBF16Bits(double x) {
  return uint16_t(encode(x, kBF16, FloatRounding::NearestEven));
}
double bf16BitsToFloat(uint16_t bits) { return decode(bits, kBF16); }
uint8_t floatToFP8E4NVBits(double x) {
  return uint8_t(encode(x, kE4M3, FloatRounding::NearestEven));
}
double fp8e4nvBitsToFloat(uint8_t bits) { return decode(bits, kE4M3); }
uint8_t floatToFP8E5Bits(double x) {
  return uint8_t(encode(x, kE5M2, FloatRounding::NearestEven));
}
double fp8e5BitsToFloat(uint8_t bits) { return decode(bits, kE5M2); }

} // namespace tritium
