// Scalar element types (dtypes) and their plain facts: width, class, names.
// Below the IR (the IR's scalar types wrap them), so that the float formats,
// the runtime and the compiler share one definition.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tritium {

/// Element types, named as Triton names them (`tl.float16` is FP16).
enum class DType : uint8_t {
  I1,
  I8,
  I16,
  I32,
  I64,
  U8,
  U16,
  U32,
  U64,
  FP8E4NV,  // OCP e4m3fn: bias 7, no inf, NaN = s.1111.111
  FP8E5,    // OCP e5m2: bias 15, IEEE-like inf and NaN
  FP8E4B15, // e4m3 with bias 15: no inf, no NaN, every encoding finite
  FP8E4B8,  // e4m3 "fnuz": bias 8, NaN = 0x80, no inf, no -0
  FP8E5B16, // e5m2 "fnuz": bias 16, NaN = 0x80, no inf, no -0
  FP16,
  BF16,
  FP32,
  FP64,
};

int bitWidth(DType t);
bool isFloat(DType t);
bool isFp8(DType t); // every 8-bit float format (Triton's is_fp8)
/// fp8e4nv and fp8e5: the formats PTX converts (cvt e4m3/e5m2, sm_89+) and
/// the tensor cores multiply. The others are storage formats: converted with
/// integer code, never fed to a dot.
bool isNativeFp8(DType t);
/// Exponent bias and explicit mantissa bits of a float dtype (Triton's
/// dtype.exponent_bias and fp_mantissa_width).
int exponentBias(DType t);
int mantissaBits(DType t);
bool isInteger(DType t); // includes I1
bool isSigned(DType t);  // signed integers (I1 counts as unsigned, as in Triton)
bool isUnsigned(DType t);
/// Text form used by the IR printer and parser: i1 i8 .. i64, u8 .. u64,
/// f8e4nv, f8e5, f8e4b15, f8e4b8, f8e5b16, f16, bf16, f32, f64.
const char *dtypeName(DType t);
std::optional<DType> parseDType(const std::string &name);
/// Triton's Python-side name: int1 .. int64, uint8 .. uint64, fp8e4nv, fp8e5,
/// fp8e4b15, fp8e4b8, fp8e5b16, fp16, bf16, fp32, fp64.
const char *tritonName(DType t);
std::optional<DType> parseTritonName(const std::string &name);

} // namespace tritium
