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

namespace nvidia {
/// The most shared memory one CTA may use on sm_<sm> (with the opt-in).
int64_t maxSharedBytes(int sm);
} // namespace nvidia

struct GPUOptions {
  int numWarps = 4;
  int numStages = 3;
  GPUTarget target;
  /// Let ptxas fuse fp32/fp64 multiplies and adds into fma (Triton's
  /// enable_fp_fusion, on by default); off: every add/sub/mul rounds (.rn).
  bool enableFpFusion = true;
  /// Debug builds (TRITIUM_DEBUG=1): check every load, store and atomic
  /// against the extent of the pointer argument it derives from, and report
  /// the first violation in a device record instead of faulting. Adds the
  /// hidden parameters of CompiledKernel::hiddenParams. See
  /// docs/gpu-debug.md.
  bool boundsCheck = false;
};

/// One kernel parameter as the launcher must pass it. Parameters specialised
/// away (ints equal to 1 the frontend folded) still appear, so the launcher
/// passes the user's arguments in order.
struct KernelParam {
  enum class Kind { Pointer, Int32, Int64, UInt32, UInt64, Float32, Float64, Bool };
  Kind kind;
  std::string name;
};

/// One checked global-memory access of a bounds-checked kernel; its index
/// in CompiledKernel::accessSites is what the device record names.
struct AccessSite {
  std::string kind; // "load", "store", "atomic"
  int param = -1;   // the pointer parameter the address derives from
  int elemBytes = 0;
  Location loc;
};

/// The device record a bounds-checked kernel writes on a violation (32
/// bytes, zeroed by the launcher). `count` is incremented by every violating
/// access (one per thread and vector); the one that finds it 0 writes the
/// rest.
struct BoundsRecordLayout {
  static constexpr int kCount = 0;   // u32
  static constexpr int kSite = 4;    // u32, index into accessSites
  static constexpr int kPid = 8;     // 3 x u32: program id x, y, z
  static constexpr int kBytes = 20;  // u32, bytes the access touches
  static constexpr int kOffset = 24; // s64, address - argument base
  static constexpr int kSize = 32;
};

struct CompiledKernel {
  std::string name;             // the .entry name in the PTX
  std::string gir;              // GPU IR text (every tensor has a layout)
  std::string ptx;              // PTX text
  int numWarps = 4;
  int sharedBytes = 0;          // dynamic shared memory the kernel needs
  std::vector<KernelParam> params;
  /// With GPUOptions::boundsCheck: after `params`, one UInt64 extent (bytes
  /// reachable from the pointer; ~0 = unknown, unchecked) per parameter,
  /// in order (non-pointers' are ignored: pass 0), then a Pointer to the
  /// BoundsRecordLayout record. Empty otherwise.
  std::vector<KernelParam> hiddenParams;
  std::vector<AccessSite> accessSites;
  /// Accesses left unchecked: the address's argument is unknown (a pointer
  /// loaded from memory, made from an integer, or chosen at run time).
  int uncheckedAccesses = 0;
};

/// Lowers `kernel` of `m` (tile IR after the default pipeline; calls
/// inlined) to PTX. Throws UserError for a kernel the GPU cannot run (e.g.
/// too much shared memory), InternalError (naming the pass and op) for bugs.
CompiledKernel compileToPTX(Module &m, const std::string &kernel,
                            const GPUOptions &opts);

} // namespace tritium
