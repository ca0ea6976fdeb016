// Conversions between doubles and the memory representation of the narrow
// floating-point dtypes (fp16, bf16, fp8e4nv, fp8e5), rounding to nearest even.
//
// Shared by the CPU executor, the constant folder and the PTX emitter, so
// that all agree bit for bit on what `x.to(tl.float16)` gives.
//
// Rounding is done once, directly from the double (never double -> float ->
// half, which can round twice). Subnormals are kept (no flush to zero).
//
// Overflow:
//  - fp16, bf16, fp32: IEEE: a finite value beyond the largest finite rounds to
//    +-inf.
//  - fp8e4nv (OCP e4m3fn: no inf, max 448, NaN = 0x7f/0xff) and fp8e5 (e5m2):
//    saturate to +-max finite, as the GPU's `cvt.rn.satfinite` does; an
//    infinite input saturates too. NaN stays NaN.
#pragma once

#include "tritium/support/dtype.h"

#include <cstdint>

namespace tritium {

/// Rounds `x` to the nearest value representable in float dtype `t`
/// (round-to-nearest-even, overflow as described above), returned as a double.
/// For fp64 returns x. `t` must be a float dtype.
double roundToFloatDType(double x, DType t);

/// The memory representation of `x` in float dtype `t` (rounded first), in the
/// low bitWidth(t) bits.
uint64_t encodeFloat(double x, DType t);
/// The value of the bits `bits` (low bitWidth(t) bits) of float dtype `t`.
double decodeFloat(uint64_t bits, DType t);

uint16_t floatToHalfBits(double x);
double halfBitsToFloat(uint16_t bits);
uint16_t floatToBF16Bits(double x);
double bf16BitsToFloat(uint16_t bits);
uint8_t floatToFP8E4NVBits(double x);
double fp8e4nvBitsToFloat(uint8_t bits);
uint8_t floatToFP8E5Bits(double x);
double fp8e5BitsToFloat(uint8_t bits);

} // namespace tritium
