// A TMA tensor map's encode arguments from a launch's arguments, and the
// driver call. See include/tritium/runtime/tensor_map.h.
#include "tritium/runtime/tensor_map.h"

#include "tritium/runtime/launcher.h"

#include <cstdio>
#include <cstring>
#include <limits>

namespace tritium::runtime {

namespace {

constexpr uint64_t kMaxDim = uint64_t(1) << 32;       // globalDim: 1..2^32
constexpr uint64_t kStrideLimit = uint64_t(1) << 40;  // globalStrides: < 2^40 bytes
constexpr int kMaxBox = 256;                          // boxDim: 1..256
constexpr uint64_t kStrideAlign = 16;                 // globalStrides, boxDim[0] bytes
constexpr uint64_t kAddressAlign = 16;                // globalAddress

// Bytes per element of cuda.h's CUtensorMapDataType values up to
// TFLOAT32_FTZ (the packed sub-byte types after it are not supported);
// 0 for an unknown value.
int dataTypeBytes(int dataType) {
  static constexpr int bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  if (dataType < 0 || dataType >= (int)(sizeof bytes / sizeof bytes[0]))
    return 0;
  return bytes[dataType];
}

// FLOAT16 and after (FLOAT32, FLOAT64, BFLOAT16, the FTZ and TF32 forms).
bool isFloatDataType(int dataType) { return dataType >= 6 && dataType <= 12; }

int swizzleEnum(int swizzleBytes) {
  switch (swizzleBytes) {
  case 0:
    return 0;
  case 32:
    return 1;
  case 64:
    return 2;
  case 128:
    return 3;
  default:
    return -1;
  }
}

bool isIntegerKind(KernelParam::Kind k) {
  using K = KernelParam::Kind;
  return k == K::Int32 || k == K::UInt32 || k == K::Int64 || k == K::UInt64 || k == K::Bool;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
  return buf;
}

template <typename T> std::string list(const T *v, size_t n) {
  std::string out = "{";
  for (size_t i = 0; i < n; ++i)
    out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "}";
}

[[noreturn]] void fail(const std::string &what, const std::string &msg) {
  throw CudaError(what + ": " + msg);
}

// Where a dim's or stride's value comes from, for messages: " (argument
// 'K')", or "" for a constant.
std::string source(const TensorMapSpec::Operand &o, const std::vector<KernelParam> &params) {
  if (o.arg < 0)
    return "";
  return " (argument '" + params[o.arg].name + "')";
}

// The value of an operand at this launch into `out`: the constant, or the
// integer argument's slot read per its kind. False (with the raw bits in
// `out` as unsigned) for a UInt64 beyond int64.
bool operandValue(const TensorMapSpec::Operand &o, const std::vector<KernelParam> &params,
                  const ArgSlot *args, int64_t &out) {
  using K = KernelParam::Kind;
  if (o.arg < 0) {
    out = o.value;
    return true;
  }
  uint64_t bits = args[o.arg].bits;
  switch (params[o.arg].kind) {
  case K::Int32: {
    int32_t x;
    std::memcpy(&x, &bits, sizeof x);
    out = x;
    return true;
  }
  case K::UInt32: {
    uint32_t x;
    std::memcpy(&x, &bits, sizeof x);
    out = x;
    return true;
  }
  case K::Bool: {
    uint8_t x;
    std::memcpy(&x, &bits, sizeof x);
    out = x != 0;
    return true;
  }
  default: // Int64, UInt64 (checkTensorMapSpec rejects the other kinds)
    out = (int64_t)bits;
    return params[o.arg].kind != K::UInt64 || bits <= (uint64_t)std::numeric_limits<int64_t>::max();
  }
}

} // namespace

std::string TensorMapEncoding::str() const {
  uint32_t r = rank > (uint32_t)kMaxTensorMapRank ? kMaxTensorMapRank : rank;
  return "address " + hex(address) + ", data type " + std::to_string(dataType) + ", dims " +
         list(dims, r) + ", byte strides " + list(strides, r ? r - 1 : 0) + ", box " +
         list(box, r) + ", swizzle " + std::to_string(swizzle) + ", oob fill " +
         std::to_string(oobFill) + " (innermost dim first)";
}

std::string tensorMapWhat(const std::string &kernel, size_t index, const TensorMapSpec &spec,
                          const std::vector<KernelParam> &params) {
  std::string base = spec.base >= 0 && (size_t)spec.base < params.size()
                         ? "'" + params[spec.base].name + "'"
                         : "parameter " + std::to_string(spec.base);
  return "kernel '" + kernel + "': TMA tensor map " + std::to_string(index) + " (of " + base +
         ")";
}

void checkTensorMapSpec(const std::string &kernel, size_t index, const TensorMapSpec &spec,
                        const std::vector<KernelParam> &params) {
  auto what = [&] { return tensorMapWhat(kernel, index, spec, params); }; // errors only
  size_t rank = spec.shape.size();
  if (rank < 1 || rank > (size_t)kMaxTensorMapRank)
    fail(what(), "rank " + std::to_string(rank) + ", TMA takes 1 to 5 dims");
  if (spec.strides.size() != rank || spec.box.size() != rank)
    fail(what(), "the shape has " + std::to_string(rank) + " dims, the strides " +
                   std::to_string(spec.strides.size()) + " and the box " +
                   std::to_string(spec.box.size()));
  if (spec.base < 0 || (size_t)spec.base >= params.size())
    fail(what(), "the base is parameter " + std::to_string(spec.base) + ", but the kernel has " +
                   std::to_string(params.size()));
  if (params[spec.base].kind != KernelParam::Kind::Pointer)
    fail(what(), "the base parameter is " + std::string(kindName(params[spec.base].kind)) +
                   ", not a pointer");
  for (const auto *ops : {&spec.shape, &spec.strides})
    for (size_t d = 0; d < rank; ++d) {
      const TensorMapSpec::Operand &o = (*ops)[d];
      auto name = [&] { return (ops == &spec.shape ? "dim " : "stride ") + std::to_string(d); };
      if (o.arg < 0)
        continue;
      if ((size_t)o.arg >= params.size())
        fail(what(), name() + " is parameter " + std::to_string(o.arg) +
                         ", but the kernel has " + std::to_string(params.size()));
      if (!isIntegerKind(params[o.arg].kind))
        fail(what(), name() + " is parameter '" + params[o.arg].name + "', a " +
                         kindName(params[o.arg].kind) + ", not an integer");
    }
  const TensorMapSpec::Operand &inner = spec.strides[rank - 1];
  if (inner.arg < 0 && inner.value != 1)
    fail(what(), "stride " + std::to_string(rank - 1) + " (the innermost) is " +
                   std::to_string(inner.value) +
                   " elements; TMA needs the innermost dim contiguous (stride 1)");
  int eb = spec.elemBytes;
  if (eb != 1 && eb != 2 && eb != 4 && eb != 8)
    fail(what(), "element size " + std::to_string(eb) + " bytes, not 1, 2, 4 or 8");
  int tb = dataTypeBytes(spec.dataType);
  if (tb == 0)
    fail(what(), "data type " + std::to_string(spec.dataType) +
                   " is not a CUtensorMapDataType tritium supports (0 to 12)");
  if (tb != eb)
    fail(what(), "data type " + std::to_string(spec.dataType) + " has " + std::to_string(tb) +
                   "-byte elements, the spec says " + std::to_string(eb));
  if (spec.nanFill && !isFloatDataType(spec.dataType))
    fail(what(), "NaN fill of out-of-bounds elements needs a floating-point data type, not " +
                   std::to_string(spec.dataType));
  if (swizzleEnum(spec.swizzleBytes) < 0)
    fail(what(), "swizzle of " + std::to_string(spec.swizzleBytes) +
                   " bytes; TMA swizzles 0, 32, 64 or 128");
  for (size_t d = 0; d < rank; ++d)
    if (spec.box[d] < 1 || spec.box[d] > kMaxBox)
      fail(what(), "box dim " + std::to_string(d) + " is " + std::to_string(spec.box[d]) +
                     " elements, not 1 to 256");
  int64_t innerBytes = (int64_t)spec.box[rank - 1] * eb;
  if (innerBytes % (int64_t)kStrideAlign != 0)
    fail(what(), "the box's innermost dim is " + std::to_string(innerBytes) +
                   " bytes, not a multiple of 16");
  if (spec.swizzleBytes != 0 && innerBytes > spec.swizzleBytes)
    fail(what(), "the box's innermost dim is " + std::to_string(innerBytes) +
                   " bytes, more than the " + std::to_string(spec.swizzleBytes) +
                   "-byte swizzle span");
}

TensorMapEncoding tensorMapEncoding(const std::string &kernel, size_t index,
                                    const TensorMapSpec &spec,
                                    const std::vector<KernelParam> &params, const ArgSlot *args) {
  checkTensorMapSpec(kernel, index, spec, params);
  auto what = [&] { return tensorMapWhat(kernel, index, spec, params); }; // errors only
  TensorMapEncoding e;
  size_t rank = spec.shape.size();
  e.rank = (uint32_t)rank;
  e.dataType = spec.dataType;
  e.swizzle = swizzleEnum(spec.swizzleBytes);
  e.oobFill = spec.nanFill ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                           : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;

  // Dims first: a tensor without elements has a placeholder map, whatever
  // its base and strides (torch's strides of an empty tensor are arbitrary).
  auto dimName = [&](size_t d) { // for messages
    return "dim " + std::to_string(d) + source(spec.shape[d], params);
  };
  int64_t dimValue[kMaxTensorMapRank] = {};
  for (size_t d = 0; d < rank; ++d) {
    int64_t &n = dimValue[d];
    if (!operandValue(spec.shape[d], params, args, n))
      fail(what(), dimName(d) + " is " + std::to_string((uint64_t)n) + ", too large");
    if (n < 0 || (uint64_t)n > kMaxDim)
      fail(what(), dimName(d) + " is " + std::to_string(n) +
                       "; TMA takes 0 to 2^32 elements per dim");
    e.empty |= n == 0;
  }
  if (e.empty) {
    for (size_t d = 0; d < rank; ++d) {
      size_t inner = rank - 1 - d;
      e.dims[inner] = 1;
      e.box[inner] = (uint32_t)spec.box[d];
      e.elementStrides[inner] = 1;
      if (inner > 0)
        e.strides[inner - 1] = kStrideAlign;
    }
    return e;
  }

  e.address = args[spec.base].bits;
  if (e.address == 0)
    fail(what(), "the base '" + params[spec.base].name + "' is a null pointer");
  if (e.address % kAddressAlign != 0)
    fail(what(), "the base '" + params[spec.base].name + "' is " + hex(e.address) +
                       ", not 16-byte aligned");

  uint64_t eb = (uint64_t)spec.elemBytes;
  // Names for messages, built only on an error.
  auto strideName = [&](size_t d) {
    std::string name = "stride " + std::to_string(d);
    const TensorMapSpec::Operand &o = spec.strides[d];
    if (d + 1 == rank)
      return name + (o.arg < 0 ? " (the innermost)"
                               : " (the innermost, argument '" + params[o.arg].name + "')");
    return name + source(o, params);
  };
  for (size_t d = 0; d < rank; ++d) {
    size_t inner = rank - 1 - d; // the driver's index: innermost first
    e.dims[inner] = (uint64_t)dimValue[d];
    e.box[inner] = (uint32_t)spec.box[d];
    e.elementStrides[inner] = 1;

    int64_t s = 0;
    if (!operandValue(spec.strides[d], params, args, s))
      fail(what(), strideName(d) + " is " + std::to_string((uint64_t)s) + ", too large");
    if (inner == 0) {
      if (s != 1)
        fail(what(), strideName(d) + " is " + std::to_string(s) +
                           " elements; TMA needs the innermost dim contiguous (stride 1)");
      continue;
    }
    if (s < 0)
      fail(what(), strideName(d) + " is " + std::to_string(s) +
                         " elements; TMA takes no negative strides");
    if ((uint64_t)s >= kStrideLimit / eb)
      fail(what(), strideName(d) + " is " + std::to_string(s) + " elements of " +
                         std::to_string(eb) + " bytes, not below 2^40 bytes");
    uint64_t bytes = (uint64_t)s * eb;
    if (bytes % kStrideAlign != 0)
      fail(what(), strideName(d) + " is " + std::to_string(bytes) + " bytes (" +
                         std::to_string(s) + " elements of " + std::to_string(eb) +
                         "), not a multiple of 16");
    e.strides[inner - 1] = bytes;
  }
  return e;
}

void encodeTensorMap(const TensorMapEncoding &e, void *out, const std::string &what,
                     TensorMapEncodeFn encode, const Driver *driver) {
  if (!encode)
    throw CudaError(what + ": the CUDA driver lacks cuTensorMapEncodeTiled; TMA tensor maps "
                           "need a CUDA 12 (or newer) driver");
  CUresult r = encode(out, e.dataType, e.rank, reinterpret_cast<void *>(e.address), e.dims,
                      e.strides, e.box, e.elementStrides, e.interleave, e.swizzle,
                      e.l2Promotion, e.oobFill);
  if (r != CUDA_SUCCESS)
    throw CudaError(what + ": cuTensorMapEncodeTiled failed: " +
                        (driver ? driver->errorString(r) : "CUDA error " + std::to_string(r)) +
                        ", for " + e.str(),
                    r);
}

void encodeTensorMap(const TensorMapEncoding &e, void *out, const std::string &what) {
  Driver &d = Driver::get();
  encodeTensorMap(e, out, what, d.cuTensorMapEncodeTiled, &d);
}

} // namespace tritium::runtime
