// The table of passes and the default pipeline.
#include "tritium/gpu/passes.h"
#include "tritium/transforms/passes.h"

namespace tritium {

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> passes = [] {
    std::vector<PassInfo> all = {
        {"inline", "Inline every tt.call (recursion is an error)", inlineCalls},
        {"canonicalize",
         "Fold constants, apply algebraic identities, simplify scf.if/scf.for",
         canonicalize},
        {"unroll", "Fully unroll tl.static_range loops (unroll = \"full\")",
         unrollLoops},
        {"cse", "Eliminate common subexpressions of pure ops", cse},
        {"dce", "Remove unused pure ops, loop-carried values and functions", dce},
        {"licm", "Hoist loop-invariant pure ops out of scf.for/scf.while", licm},
    };
    // Tile IR -> GPU IR (lib/gpu), for tritium-opt and the bindings.
    for (const PassInfo &p : gpu::gpuPasses())
      all.push_back(p);
    return all;
  }();
  return passes;
}

const PassInfo *lookupPass(const std::string &name) {
  for (const PassInfo &p : allPasses())
    if (p.name == name)
      return &p;
  return nullptr;
}

std::vector<std::string> defaultPipeline() {
  return {
      "inline",       // one function per kernel from here on
      "canonicalize", // fold constexpr arithmetic, e.g. static_range bounds
      "unroll",       // tl.static_range
      "canonicalize", // fold the unrolled ivs
      "cse",
      "dce",
  };
}

} // namespace tritium
