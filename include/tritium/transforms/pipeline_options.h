// The options of one compile, handed to every pass.
//
// They sit low in the stack (beside the pass manager) so that a tile pass,
// a GPU pass and the PTX emitter read the same value: convert-to-gpu places
// `numWarps` warps, the emitter prints `.target` from `target`, a pipelining
// pass will read `numStages`. The compile driver
// (tritium/target/nvidia/pipeline.h) checks them once, before any pass.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace tritium {

class Module;

/// The target is a value, not the machine we stand on.
struct GPUTarget {
  int sm = 90;         // 80, 86, 89, 90
  bool archA = true;   // sm_90a: wgmma/TMA allowed
  int ptxVersion = 80; // PTX ISA 8.0 (CUDA 12.0+) for sm_90a
  /// "sm_80", "sm_90a"; parse accepts the same forms (and "sm_90", "cuda:90")
  /// and throws UserError for anything else.
  std::string str() const;
  static GPUTarget parse(const std::string &s);
  /// The most shared memory one program (CTA) may use, with the opt-in
  /// above 48 KiB: 227 KiB on sm_90, 163 KiB on sm_80/87, 99 KiB otherwise.
  int64_t maxSharedBytes() const;
};

struct PipelineOptions {
  GPUTarget target;
  /// Warps per program (a power of two, 1..32). The function attribute
  /// `num_warps`, when present, wins in convert-to-gpu.
  int numWarps = 4;
  /// Buffers of a software-pipelined loop (>= 1). Read by the pipelining
  /// pass once it exists; part of every cache key already.
  int numStages = 3;
  /// Debug builds (TRITIUM_DEBUG=1): check every load, store and atomic
  /// against the extent of the pointer argument it derives from, and report
  /// the first violation in a device record instead of faulting. Adds the
  /// hidden parameters of CompiledKernel::hiddenParams. See
  /// docs/gpu-debug.md.
  bool boundsCheck = false;
  /// Let ptxas fuse fp32/fp64 multiplies and adds into fma (Triton's
  /// enable_fp_fusion, on by default); off: every add/sub/mul rounds (.rn).
  bool enableFpFusion = true;
  /// Assemble the PTX with ptxas, the compile driver's last step (the
  /// runtime hands PTX to the driver's JIT otherwise).
  bool assemble = false;
  /// Optimizations the GPU compile leaves out (TRITIUM_DISABLE_PASSES): a
  /// user's workaround for a pass that miscompiles, and a way to measure
  /// what one gains. Only passes whose output is correct without them may
  /// be named (checkOptions in lib/target/nvidia/pipeline.cpp says which).
  std::vector<std::string> skipPasses;
  /// Whether skipPasses names `name`.
  bool skips(const std::string &name) const {
    return std::find(skipPasses.begin(), skipPasses.end(), name) != skipPasses.end();
  }

  // ---- the pass manager ----------------------------------------------------
  /// Run the verifier after every pass (tests and debug builds).
  bool verifyEach = true;
  /// Hand the module to `dump` after these passes ("all" for every pass),
  /// e.g. to print it (tritium-opt --print-after).
  std::vector<std::string> printAfter;
  std::function<void(const std::string &pass, const Module &m)> dump;
};

} // namespace tritium
