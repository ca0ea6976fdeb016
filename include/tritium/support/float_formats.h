// Conversions between doubles and the memory representation of the narrow
// floating-point dtypes (fp16, bf16 and the five fp8 formats), rounding to
// nearest even (or toward zero, for `fp_downcast_rounding="rtz"`).
//
// Shared by the CPU executor, the constant folder and the PTX emitter, so
// that all agree bit for bit on what `x.to(tl.float16)` gives.
//
// Rounding is done once, directly from the double (never double -> float ->
// half, which can round twice). Subnormals are kept (no flush to zero).
//
// The formats and what a conversion into each does with values it cannot
// hold (finite overflow is judged after rounding):
//
//  format     bias max      inf   NaN encodings     overflow  +-inf in  NaN in
//  fp16       15   65504    yes   exp 31, mant!=0   +-inf     +-inf     NaN
//  bf16       127  3.39e38  yes   exp 255, mant!=0  +-inf     +-inf     NaN
//  fp8e4nv    7    448      no    s.1111.111        +-max     +-max     NaN
//  fp8e5      15   57344    yes   exp 31, mant!=0   +-max     +-max     NaN
//  fp8e4b15   15   1.875    no    none              +-max     +-max     0x7f
//  fp8e4b8    8    240      no    0x80 only         +-max     NaN       0x80
//  fp8e5b16   16   57344    no    0x80 only         +-max     NaN       0x80
//
//  - fp8e4nv/fp8e5 saturate as PTX's `cvt.rn.satfinite` does.
//  - fp8e4b15 (Triton's software format, all 256 encodings finite, -0
//    included) saturates to +-1.875. Triton's NVIDIA lowering clamps at 1.75
//    instead (its round-half-up trick would carry into the sign bit); tritium
//    rounds correctly and keeps the format's real maximum. A NaN has nowhere
//    to go: it becomes 0x7f (+1.875) whatever its sign bit.
//  - fp8e4b8/fp8e5b16 ("fnuz") follow Triton's AMD lowering: finite overflow
//    saturates, inf and NaN become the one NaN 0x80, and there is no -0: a
//    negative value that rounds to zero gives +0.
#pragma once

#include "tritium/support/dtype.h"

#include <cstdint>

namespace tritium {

/// How a narrowing float conversion rounds (`fp_downcast_rounding`).
enum class FloatRounding : uint8_t {
  NearestEven, // "rtne", the default
  TowardZero,  // "rtz"
};

/// Rounds `x` to the nearest value representable in float dtype `t`
/// (overflow as described above), returned as a double. For fp64 returns x.
/// `t` must be a float dtype.
double roundToFloatDType(double x, DType t,
                         FloatRounding mode = FloatRounding::NearestEven);

/// The memory representation of `x` in float dtype `t` (rounded first), in the
/// low bitWidth(t) bits.
uint64_t encodeFloat(double x, DType t,
                     FloatRounding mode = FloatRounding::NearestEven);
/// The value of the bits `bits` (low bitWidth(t) bits) of float dtype `t`.
double decodeFloat(uint64_t bits, DType t);

/// The largest finite value of float dtype `t`.
double maxFiniteValue(DType t);

uint16_t floatToHalfBits(double x);
double halfBitsToFloat(uint16_t bits);
uint16_t floatToBF16Bits(double x);
double bf16BitsToFloat(uint16_t bits);
uint8_t floatToFP8E4NVBits(double x);
double fp8e4nvBitsToFloat(uint8_t bits);
uint8_t floatToFP8E5Bits(double x);
double fp8e5BitsToFloat(uint8_t bits);

} // namespace tritium
