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
  enum class Kind { Pointer, Int32, Int64, UInt32, UInt64, Float32, Float64, Bool };
  Kind kind;
  std::string name;
};

} // namespace tritium
