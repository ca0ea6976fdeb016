// Tile IR -> GPU IR -> PTX for NVIDIA GPUs. The contract between the GPU
// compiler (lib/gpu, lib/analysis, lib/target/nvidia) and the runtime.
#pragma once

#include "tritium/ir/ir.h"

#include <string>
#include <vector>

namespace tritium {

/// The target is a value, not the machine we stand on.
struct GPUTarget {
  int sm = 90;         // 80, 86, 89, 90
  bool archA = true;   // sm_90a: wgmma/TMA allowed
  int ptxVersion = 80; // PTX ISA 8.0 (CUDA 12.0+) for sm_90a
  /// "sm_80", "sm_90a"; parse accepts the same forms (and "sm_90").
  std::string str() const;
  static GPUTarget parse(const std::string &s);
};

struct GPUOptions {
  int numWarps = 4;
  int numStages = 3;
  GPUTarget target;
  /// Let ptxas fuse fp32/fp64 multiplies and adds into fma (Triton's
  /// enable_fp_fusion, on by default); off: every add/sub/mul rounds (.rn).
  bool enableFpFusion = true;
};

/// One kernel parameter as the launcher must pass it. Parameters specialised
/// away (ints equal to 1 the frontend folded) still appear, so the launcher
/// passes the user's arguments in order.
struct KernelParam {
  enum class Kind { Pointer, Int32, Int64, UInt32, UInt64, Float32, Float64, Bool };
  Kind kind;
  std::string name;
};

struct CompiledKernel {
  std::string name;             // the .entry name in the PTX
  std::string gir;              // GPU IR text (every tensor has a layout)
  std::string ptx;              // PTX text
  int numWarps = 4;
  int sharedBytes = 0;          // dynamic shared memory the kernel needs
  std::vector<KernelParam> params;
};

/// Lowers `kernel` of `m` (tile IR after the default pipeline; calls
/// inlined) to PTX. Throws UserError for a kernel the GPU cannot run (e.g.
/// too much shared memory), InternalError (naming the pass and op) for bugs.
CompiledKernel compileToPTX(Module &m, const std::string &kernel,
                            const GPUOptions &opts);

} // namespace tritium
