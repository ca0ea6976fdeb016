// Passes and the pass manager.
//
// A pass is a free function `void name(Module &, const PipelineOptions &,
// PassStats &)` registered in a table of passes under its flag name, e.g.
// "cse" -> `tritium-opt --cse`. Each layer keeps its own table: the tile
// passes here (tilePasses(), lib/transforms/registry.cpp), the GPU passes in
// lib/gpu (gpu::gpuPasses()); the table of every pass, which tritium-opt and
// the bindings use, is the compile driver's (tritium/target/nvidia/
// pipeline.h), the one layer that sees both.
#pragma once

#include "tritium/ir/ir.h"
#include "tritium/transforms/pipeline_options.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tritium {

/// Counters a pass keeps (e.g. "cse.ops-removed"); `tritium-opt --stats`
/// prints them.
struct PassStats {
  std::map<std::string, int64_t> counters;
  void add(const std::string &name, int64_t n = 1) { counters[name] += n; }
};

using PassFn =
    std::function<void(Module &, const PipelineOptions &, PassStats &)>;

struct PassInfo {
  std::string name;        // flag name: "cse", "canonicalize", ...
  std::string description; // one line for --help
  PassFn run;
};

using PassTable = std::vector<PassInfo>;

/// The target-independent passes over tile IR, in a stable order.
const PassTable &tilePasses();
/// The pass named `name` in `table`, or nullptr.
const PassInfo *lookupPass(const PassTable &table, const std::string &name);

/// The tile-level pipeline the frontend runs after building a kernel:
/// inline, unroll, canonicalize, cse, dce (see registry.cpp).
std::vector<std::string> defaultPipeline();

/// Runs the named passes of `table` in order with `opts`. An exception
/// thrown inside a pass that is not a UserError is rethrown as InternalError
/// saying which pass failed. With opts.verifyEach, the verifier failing after
/// a pass is an InternalError naming that pass; opts.dump receives the IR
/// after the passes opts.printAfter names. Passes named in opts.skipPasses
/// are left out.
void runPasses(Module &m, const std::vector<std::string> &passes,
               PassStats &stats, const PipelineOptions &opts = {},
               const PassTable &table = tilePasses());

} // namespace tritium
