// TMA tensor maps at launch: a kernel's TensorMapSpec (support/kernel_abi.h)
// and the launch's own arguments give the arguments of the driver's
// cuTensorMapEncodeTiled, which gives the 128-byte CUtensorMap the kernel's
// cp.async.bulk.tensor copies read. GpuKernel::launch does this for every
// map of every launch (launcher.h).
//
// Two steps, so that the first is testable without a driver:
//  1. tensorMapEncoding: spec + parameters + argument slots -> the encode
//     arguments, innermost dimension first, every value checked against the
//     driver's rules (a CudaError names the kernel, the map, its base
//     parameter and the offending value);
//  2. encodeTensorMap: the driver call.
//
// In messages, dims and strides are numbered as in the kernel's tensor and
// the spec (outermost first: "dim 0" of an [M, K] matrix is M).
#pragma once

#include "tritium/runtime/cuda_driver.h"
#include "tritium/support/kernel_abi.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tritium::runtime {

struct ArgSlot; // launcher.h

inline constexpr int kTensorMapBytes = 128;
inline constexpr int kTensorMapAlign = 64;
inline constexpr int kMaxTensorMapRank = 5;

// cuda.h's enum values (CUtensorMapInterleave, CUtensorMapL2promotion,
// CUtensorMapFloatOOBfill; CUtensorMapSwizzle is 0, 1, 2, 3 for none, 32,
// 64 and 128 bytes).
inline constexpr int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
inline constexpr int CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2;
inline constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;
inline constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA = 1;

/// The storage of one encoded map (a CUtensorMap), as the driver writes it
/// and the kernel parameter declares it (`.param .align 64 .b8 [128]`).
struct alignas(kTensorMapAlign) TensorMapBuffer {
  unsigned char bytes[kTensorMapBytes];
};

/// The arguments of one cuTensorMapEncodeTiled call, in the driver's order:
/// the innermost dimension first (the reverse of the spec's). Entries past
/// the rank are zero.
struct TensorMapEncoding {
  int dataType = 0;
  uint32_t rank = 0;
  uint64_t address = 0;
  uint64_t dims[kMaxTensorMapRank] = {};        // elements
  uint64_t strides[kMaxTensorMapRank - 1] = {}; // bytes, of dims 1..rank-1
  uint32_t box[kMaxTensorMapRank] = {};         // elements
  uint32_t elementStrides[kMaxTensorMapRank] = {}; // 1 per dim
  int interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  int swizzle = 0;
  int l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  int oobFill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  /// A dim of the tensor is 0: no element is in bounds. The dims are all 1,
  /// the strides 16 bytes and the address 0; the launcher points the map at
  /// its module's fill element (kTmaFillSymbol), so that every read gives
  /// the fill value.
  bool empty = false;

  bool operator==(const TensorMapEncoding &) const = default;
  /// "address 0x..., data type 6, dims {4096, 1000}, byte strides {8192},
  /// box {64, 128}, swizzle 3, oob fill 0 (innermost dim first)".
  std::string str() const;
};

/// "kernel 'k': TMA tensor map 0 (of 'a_ptr')": how messages about the map
/// begin (the base parameter's index when it is not one of `params`).
std::string tensorMapWhat(const std::string &kernel, size_t index, const TensorMapSpec &spec,
                          const std::vector<KernelParam> &params);

/// Checks what a spec says on its own, against the kernel's parameters:
/// rank 1..5 with a shape, stride and box entry per dim; the base is a
/// pointer parameter and every argument operand an integer one; element
/// size, data type, swizzle, box and NaN fill as the driver allows them;
/// a constant innermost stride is 1. Throws CudaError naming the problem.
void checkTensorMapSpec(const std::string &kernel, size_t index, const TensorMapSpec &spec,
                        const std::vector<KernelParam> &params);

/// The encode arguments of `spec` for one launch: the base address, dims
/// and strides from `args` (one slot per parameter, as GpuKernel::launch
/// takes them) or the spec's constants. Checks the spec
/// (checkTensorMapSpec) and every value: the base is a non-null, 16-byte
/// aligned address; each dim 1..2^32; each stride non-negative, in bytes a
/// multiple of 16 and below 2^40; the innermost stride 1. Needs no driver.
TensorMapEncoding tensorMapEncoding(const std::string &kernel, size_t index,
                                    const TensorMapSpec &spec,
                                    const std::vector<KernelParam> &params, const ArgSlot *args);

/// The driver's entry point (Driver::cuTensorMapEncodeTiled).
using TensorMapEncodeFn = CUresult (*)(void *, int, uint32_t, void *, const uint64_t *,
                                       const uint64_t *, const uint32_t *, const uint32_t *, int,
                                       int, int, int);

/// Encodes `e` into `out` (kTensorMapBytes, kTensorMapAlign-aligned) with
/// `encode`; `what` begins the messages (tensorMapWhat). Throws CudaError
/// when `encode` is null (the driver predates TMA: CUDA 12 needed) or
/// fails (the message has the values passed). `driver`, when given, names
/// the error code.
void encodeTensorMap(const TensorMapEncoding &e, void *out, const std::string &what,
                     TensorMapEncodeFn encode, const Driver *driver = nullptr);
/// The same with the loaded driver (Driver::get()).
void encodeTensorMap(const TensorMapEncoding &e, void *out, const std::string &what);

} // namespace tritium::runtime
