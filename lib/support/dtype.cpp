#include "tritium/support/dtype.h"

namespace tritium {

namespace {

struct DTypeRow {
  DType t;
  const char *irName;
  const char *tritonName;
  int bits;
  int bias;     // exponent bias (floats only)
  int mantissa; // explicit mantissa bits (floats only)
};

// One row per dtype: the IR's text name, Triton's name, the bit width.
constexpr DTypeRow kDTypes[] = {
    {DType::I1, "i1", "int1", 1, 0, 0},
    {DType::I8, "i8", "int8", 8, 0, 0},
    {DType::I16, "i16", "int16", 16, 0, 0},
    {DType::I32, "i32", "int32", 32, 0, 0},
    {DType::I64, "i64", "int64", 64, 0, 0},
    {DType::U8, "u8", "uint8", 8, 0, 0},
    {DType::U16, "u16", "uint16", 16, 0, 0},
    {DType::U32, "u32", "uint32", 32, 0, 0},
    {DType::U64, "u64", "uint64", 64, 0, 0},
    {DType::FP8E4NV, "f8e4nv", "fp8e4nv", 8, 7, 3},
    {DType::FP8E5, "f8e5", "fp8e5", 8, 15, 2},
    {DType::FP8E4B15, "f8e4b15", "fp8e4b15", 8, 15, 3},
    {DType::FP8E4B8, "f8e4b8", "fp8e4b8", 8, 8, 3},
    {DType::FP8E5B16, "f8e5b16", "fp8e5b16", 8, 16, 2},
    {DType::FP16, "f16", "fp16", 16, 15, 10},
    {DType::BF16, "bf16", "bf16", 16, 127, 7},
    {DType::FP32, "f32", "fp32", 32, 127, 23},
    {DType::FP64, "f64", "fp64", 64, 1023, 52},
};

static_assert(sizeof(kDTypes) / sizeof(kDTypes[0]) ==
                  size_t(DType::FP64) + 1,
              "one row per dtype, in enum order");

const DTypeRow &row(DType t) { return kDTypes[static_cast<int>(t)]; }

} // namespace

int bitWidth(DType t) { return row(t).bits; }
bool isFloat(DType t) { return t >= DType::FP8E4NV; }
bool isFp8(DType t) { return isFloat(t) && row(t).bits == 8; }
bool isNativeFp8(DType t) { return t == DType::FP8E4NV || t == DType::FP8E5; }
int exponentBias(DType t) { return row(t).bias; }
int mantissaBits(DType t) { return row(t).mantissa; }
bool isInteger(DType t) { return t <= DType::U64; }
bool isSigned(DType t) { return t >= DType::I8 && t <= DType::I64; }
bool isUnsigned(DType t) {
  return t == DType::I1 || (t >= DType::U8 && t <= DType::U64);
}
const char *dtypeName(DType t) { return row(t).irName; }
const char *tritonName(DType t) { return row(t).tritonName; }

std::optional<DType> parseDType(const std::string &name) {
  for (const auto &r : kDTypes)
    if (name == r.irName)
      return r.t;
  return std::nullopt;
}

std::optional<DType> parseTritonName(const std::string &name) {
  for (const auto &r : kDTypes)
    if (name == r.tritonName)
      return r.t;
  return std::nullopt;
}

} // namespace tritium
