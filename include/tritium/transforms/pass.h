// Passes over tile IR and the pass manager.
//
// A pass is a free function `void name(Module &, PassStats &)` registered in
// the table of passes (lib/transforms/registry.cpp) under its flag name, e.g.
// "cse" -> `tritium-opt --cse`. The default pipeline is one readable list
// (defaultPipeline()).
#pragma once

#include "tritium/ir/ir.h"

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

using PassFn = std::function<void(Module &, PassStats &)>;

struct PassInfo {
  std::string name;        // flag name: "cse", "canonicalize", ...
  std::string description; // one line for --help
  PassFn run;
};

/// Every registered pass, in a stable order.
const std::vector<PassInfo> &allPasses();
const PassInfo *lookupPass(const std::string &name);

/// The tile-level pipeline the frontend runs after building a kernel:
/// inline, unroll, canonicalize, cse, dce (see registry.cpp).
std::vector<std::string> defaultPipeline();

struct PassManagerOptions {
  /// Run the verifier after every pass (tests and debug builds).
  bool verifyEach = true;
  /// Print the IR after these passes ("all" for every pass) to `dump`.
  std::vector<std::string> printAfter;
  std::function<void(const std::string &pass, const std::string &ir)> dump;
};

/// Runs the named passes in order. An exception thrown inside a pass that is
/// not a UserError is rethrown as InternalError saying which pass failed.
/// The verifier failing after a pass is an InternalError naming that pass.
void runPasses(Module &m, const std::vector<std::string> &passes,
               PassStats &stats, const PassManagerOptions &opts = {});

} // namespace tritium
