// The plain description of a compiled kernel's parameters: what the compiler
// emits (include/tritium/target/nvidia/ptx.h) and the launcher packs
// (lib/runtime), which knows no compiler header.
#pragma once

#include <string>

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
