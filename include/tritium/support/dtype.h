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
  FP8E4NV,
  FP8E5,
  FP16,
  BF16,
  FP32,
  FP64,
};

int bitWidth(DType t);
bool isFloat(DType t);
bool isFp8(DType t);     // fp8e4nv, fp8e5
bool isInteger(DType t); // includes I1
bool isSigned(DType t);  // signed integers (I1 counts as unsigned, as in Triton)
bool isUnsigned(DType t);
/// Text form used by the IR printer and parser: i1 i8 .. i64, u8 .. u64,
/// f8e4nv, f8e5, f16, bf16, f32, f64.
const char *dtypeName(DType t);
std::optional<DType> parseDType(const std::string &name);
/// Triton's Python-side name: int1 .. int64, uint8 .. uint64, fp8e4nv, fp8e5,
/// fp16, bf16, fp32, fp64.
const char *tritonName(DType t);
std::optional<DType> parseTritonName(const std::string &name);

} // namespace tritium
