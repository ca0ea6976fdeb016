// The compile driver: tile IR -> GPU IR -> PTX -> cubin, in one function.
//
// compileKernel (lib/target/nvidia/pipeline.cpp) is the whole compile, read
// top to bottom: the checks of the options, the tile passes, the GPU passes,
// shared-memory planning, PTX emission and ptxas. Every entry point calls
// it: tritium._C.compile_to_ptx (one kernel), compile_batch (the autotuner's
// configs, bounds-checked or not), tritium-opt --emit-ptx.
#pragma once

#include "tritium/runtime/ptxas.h"
#include "tritium/target/nvidia/ptx.h"
#include "tritium/transforms/pass.h"

#include <string>
#include <utility>
#include <vector>

namespace tritium {

/// Where the input of compileKernel stands, i.e. where the compile starts.
enum class PipelineInput {
  /// As the code generator builds it: the tile passes run first.
  TileIR,
  /// After the tile pipeline (defaultPipeline()): what the Python frontend
  /// hands over, and what tritium-opt holds after the passes it was given.
  OptimizedTileIR,
  /// GPU IR (every tensor has a layout): the GPU passes already ran.
  GPUIR,
};

struct CompileResult {
  /// Name, GPU IR, PTX, parameters, shared bytes and the bounds-check
  /// tables (tritium/target/nvidia/ptx.h).
  CompiledKernel kernel;
  std::string target; // normalised: "sm_90a"
  /// The tile IR after the tile passes (PipelineInput::TileIR only).
  std::string tir;
  /// With PipelineOptions::assemble: the cubin and ptxas's log.
  bool assembled = false;
  std::string cubin, ptxasLog;
  /// Whether the kernel loads in a loop (nvidia::loadsInALoop): what a later
  /// assembly of `kernel.ptx` alone (assemble_ptx) needs to know.
  bool loopLoads = false;
  PassStats stats;
  /// The step running ("options", "tile", "gpu", "shared-memory", "ptx",
  /// "ptxas"): after a throw, the one that threw.
  std::string step;
  /// Milliseconds of each step that finished, in order.
  std::vector<std::pair<std::string, double>> timings;
  /// The milliseconds of `step`, 0 when it did not run.
  double ms(const std::string &step) const;
};

/// compileKernel's last step on its own: `ptx` (a CompiledKernel's, for
/// `arch`, programs of `threads` threads asking for `sharedBytes`) assembled
/// by ptxas, with the register-cap variants where they apply (`loopLoads`:
/// CompileResult::loopLoads); `ptx` is rewritten where a cap is kept. Lets a
/// caller emit PTX first and assemble it later, with the same result.
runtime::PtxasResult assembleKernelPTX(std::string &ptx, const std::string &arch,
                                       int threads, bool loopLoads, int64_t sharedBytes,
                                       PassStats &stats);

/// Compiles `kernel` of `m` (left unchanged: the compile works on a copy)
/// for opts.target. Throws UserError (with the op's location where there is
/// one) for a kernel or options the GPU cannot run, InternalError naming the
/// pass or op for a bug of ours.
CompileResult compileKernel(const Module &m, const std::string &kernel,
                            const PipelineOptions &opts,
                            PipelineInput input = PipelineInput::OptimizedTileIR);
/// The same, filling `out` as it goes, so that a caller that catches a
/// failure still knows which step failed (out.step) and what ran before.
void compileKernel(const Module &m, const std::string &kernel,
                   const PipelineOptions &opts, PipelineInput input,
                   CompileResult &out);

/// Every pass, tile passes then GPU passes: the table tritium-opt and
/// tritium._C.run_passes look names up in.
const PassTable &allPasses();

/// True when some value of `m` has a tensor type with a layout, or is a
/// memory descriptor.
bool isGPUIR(Module &m);

} // namespace tritium
