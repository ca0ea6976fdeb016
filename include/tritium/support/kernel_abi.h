// The plain description of a compiled kernel's parameters: what the compiler
// emits (include/tritium/target/nvidia/ptx.h) and the launcher packs
// (lib/runtime), which knows no compiler header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tritium {

/// One kernel parameter as the launcher must pass it. Parameters specialised
/// away (ints equal to 1 the frontend folded) still appear, so the launcher
/// passes the user's arguments in order.
struct KernelParam {
  /// Bytes: an opaque blob of `bytes` bytes aligned to `align` (a TMA
  /// descriptor: 128 bytes, 64-aligned), passed by the caller as raw bytes.
  enum class Kind { Pointer, Int32, Int64, UInt32, UInt64, Float32, Float64, Bool, Bytes };
  Kind kind;
  std::string name;
  int bytes = 0; // Bytes only
  int align = 0; // Bytes only: a power of two
};

/// A TMA tensor map (CUtensorMap) the launcher encodes at every launch, with
/// cuTensorMapEncodeTiled, from the kernel's own arguments, and passes after
/// them as a 128-byte, 64-aligned parameter (`.param .align 64 .b8 [128]`):
/// the kernel's cp.async.bulk.tensor copies read it. The compiler emits one
/// per distinct (tensor, box, swizzle) its TMA copies read (CompiledKernel::
/// tensorMaps), in the order of the extra parameters.
struct TensorMapSpec {
  /// A value the map is made of: argument `arg` (an index into the kernel's
  /// parameters, an integer one) or, when arg < 0, the constant `value` (a
  /// dim or stride the frontend specialised).
  struct Operand {
    int arg = -1;
    int64_t value = 0;
  };
  int base = -1;                // the pointer parameter: the tensor's address
  std::vector<Operand> shape;   // elements per dim, outermost first
  std::vector<Operand> strides; // elements per dim, outermost first (last: 1)
  std::vector<int> box;         // elements per dim one copy moves, outermost first
  int elemBytes = 2;            // 1, 2, 4 or 8
  int dataType = 0;             // CUtensorMapDataType (cuda.h's numbering)
  int swizzleBytes = 0;         // 0 (none), 32, 64 or 128
  bool nanFill = false;         // out-of-bounds elements read NaN, not zero

  /// A flat list of integers (kernel metadata, the disk cache) and back:
  /// [base, rank, (arg, value) per shape dim, (arg, value) per stride,
  ///  box..., elemBytes, dataType, swizzleBytes, nanFill].
  std::vector<int64_t> flatten() const {
    std::vector<int64_t> out{base, (int64_t)shape.size()};
    for (const auto *ops : {&shape, &strides})
      for (const Operand &o : *ops) {
        out.push_back(o.arg);
        out.push_back(o.value);
      }
    for (int b : box)
      out.push_back(b);
    out.insert(out.end(), {elemBytes, dataType, swizzleBytes, nanFill ? 1 : 0});
    return out;
  }
  /// The inverse of flatten(); false when `v` is not one.
  static bool unflatten(const std::vector<int64_t> &v, TensorMapSpec &out) {
    if (v.size() < 2 || v[1] < 1 || v[1] > 5)
      return false;
    size_t r = (size_t)v[1];
    if (v.size() != 2 + 4 * r + r + 4)
      return false;
    TensorMapSpec s;
    s.base = (int)v[0];
    size_t i = 2;
    for (auto *ops : {&s.shape, &s.strides})
      for (size_t d = 0; d < r; ++d, i += 2)
        ops->push_back(Operand{(int)v[i], v[i + 1]});
    for (size_t d = 0; d < r; ++d)
      s.box.push_back((int)v[i++]);
    s.elemBytes = (int)v[i++];
    s.dataType = (int)v[i++];
    s.swizzleBytes = (int)v[i++];
    s.nanFill = v[i] != 0;
    out = std::move(s);
    return true;
  }
};

/// The module-level global a kernel with tensor maps declares: 16 zero bytes
/// then 16 bytes of ones. The launcher points the map of a tensor with no
/// elements (a dim of 0, which the driver refuses) at it as a one-element
/// tensor whose element is the fill value (zero, or NaN: all ones is a NaN
/// in every float format), so that every read gives what an out-of-bounds
/// read would.
inline constexpr const char *kTmaFillSymbol = "tritium_tma_fill";
inline constexpr int kTmaFillBytes = 32;
inline constexpr int kTmaFillNanOffset = 16;

/// The parameter's size in bytes as the kernel reads it.
inline int paramBytes(const KernelParam &p) {
  switch (p.kind) {
  case KernelParam::Kind::Bool:
    return 1;
  case KernelParam::Kind::Int32:
  case KernelParam::Kind::UInt32:
  case KernelParam::Kind::Float32:
    return 4;
  case KernelParam::Kind::Bytes:
    return p.bytes;
  default:
    return 8;
  }
}

} // namespace tritium
