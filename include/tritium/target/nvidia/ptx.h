// Tile IR -> GPU IR -> PTX for NVIDIA GPUs. The contract between the GPU
// compiler (lib/gpu, lib/analysis, lib/target/nvidia) and the runtime.
#pragma once

#include "tritium/ir/ir.h"
#include "tritium/transforms/pipeline_options.h"
#include "tritium/support/kernel_abi.h"

#include <string>
#include <vector>

namespace tritium {

/// The emitter's name for the options of a compile (GPUTarget and
/// PipelineOptions live in tritium/transforms/pipeline_options.h, so that
/// every pass can read them).
using GPUOptions = PipelineOptions;

/// The PTX declaration of a Bytes parameter: `.param .align 64 .b8
/// name[128]` (the scalar kinds' declarations depend on the IR type: see
/// the emitter).
inline std::string ptxBytesParamDecl(const KernelParam &p,
                                     const std::string &name) {
  return ".param .align " + std::to_string(p.align) + " .b8 " + name + "[" +
         std::to_string(p.bytes) + "]";
}

/// One checked global-memory access, or one tl.device_assert, of a
/// bounds-checked kernel; its index in CompiledKernel::accessSites is what
/// the device record names.
struct AccessSite {
  std::string kind; // "load", "store", "atomic", "assert"
  int param = -1;   // the pointer parameter the address derives from
  int elemBytes = 0;
  Location loc;
  std::string message;        // "assert": the assertion's message
  std::vector<int64_t> shape; // "assert": the condition's shape ({}: scalar)
};

/// The device record a bounds-checked kernel writes on a violation (32
/// bytes, zeroed by the launcher). `count` is incremented by every violating
/// access (one per thread and vector) and every false element of a
/// tl.device_assert; the one that finds it 0 writes the rest.
struct BoundsRecordLayout {
  static constexpr int kCount = 0;   // u32
  static constexpr int kSite = 4;    // u32, index into accessSites
  static constexpr int kPid = 8;     // 3 x u32: program id x, y, z
  static constexpr int kBytes = 20;  // u32, bytes the access touches (0: assert)
  static constexpr int kOffset = 24; // s64, address - argument base; for an
                                     // assert, the row-major element index
  static constexpr int kSize = 32;
};

/// One memory op as the emitter lowered it: `count` instructions per thread,
/// each moving `elems` elements of `elemBytes` bytes (16 bytes: a
/// ld.global.v4.b32). What `python -m tritium.tools.explain` shows per line.
struct MemoryAccess {
  std::string op;          // "tt.load", "ttg.async_copy_global_to_local", ...
  std::string instruction; // "ld.global", "st.shared", "cp.async", "ldmatrix"
  int elemBytes = 0;
  int elems = 1; // per instruction and thread
  int count = 0; // instructions per thread
  Location loc;
};

/// One shared-memory buffer as --allocate-shared-memory placed it.
struct SharedAllocation {
  std::string op;   // its owner: "ttg.local_alloc", or an op's scratch
  bool scratch = false; // memory used only while the op runs
  int64_t offset = 0, bytes = 0;
  Location loc;
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
  /// Every global and shared access the PTX makes, in emission order.
  std::vector<MemoryAccess> accesses;
  /// Every shared-memory buffer, in program order of its owner.
  std::vector<SharedAllocation> sharedAllocations;
  /// The TMA tensor maps the launcher encodes and passes after `params`
  /// (before any hiddenParams), one `.param .align 64 .b8 [128]` each.
  std::vector<TensorMapSpec> tensorMaps;
};

/// compileKernel(m, kernel, opts).kernel (tritium/target/nvidia/
/// pipeline.h): `kernel` of `m`, tile IR after the default pipeline, to PTX.
/// For tests that want only the PTX; entry points call compileKernel.
CompiledKernel compileToPTX(Module &m, const std::string &kernel,
                            const GPUOptions &opts);

} // namespace tritium
