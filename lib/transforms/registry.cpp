// The table of tile passes and the default tile pipeline. The GPU passes
// have their own table (lib/gpu); the compile driver joins the two
// (lib/target/nvidia/pipeline.cpp).
#include "tritium/transforms/passes.h"

namespace tritium {

const PassTable &tilePasses() {
  static const PassTable passes = {
      {"inline", "Inline every tt.call (recursion is an error)", inlineCalls},
      {"canonicalize",
       "Fold constants, apply algebraic identities, simplify scf.if/scf.for",
       canonicalize},
      {"unroll", "Fully unroll tl.static_range loops (unroll = \"full\")",
       unrollLoops},
      {"cse", "Eliminate common subexpressions of pure ops", cse},
      {"cse-loops", "Eliminate common subexpressions of pure ops inside loops", cseLoops},
      {"dce", "Remove unused pure ops, loop-carried values and functions", dce},
      {"licm", "Hoist loop-invariant pure ops out of scf.for/scf.while", licm},
      {"licm-scalars",
       "Hoist loop-invariant pure ops with scalar results out of scf.for/scf.while",
       licmScalars},
      {"prefetch-loads",
       "Load a loop's next iteration ahead, in registers: a reducing loop's loads "
       "(tile IR; versioned on store/load disjointness), a dot loop's vectors "
       "(GPU IR)",
       prefetchLoads},
      {"expand-descriptor-loads",
       "Expand tensor-descriptor loads into masked loads, but for those a dot loop copies "
       "with TMA (sm_90a)",
       expandDescriptorLoads},
      {"split-masked-loops",
       "Run the prefix of a dot loop's iterations where its tl.where masks are all true "
       "as a loop of its own, without them",
       splitMaskedLoops},
      {"widen-offsets",
       "Compute offsets into tensors of 2^31+ elements (tt.int64_offsets) in i64",
       widenOffsets},
      {"narrow-division",
       "Do 64-bit division/remainder of extended 32-bit values in 32 bits",
       narrowDivision},
      {"check-const-pointers",
       "Reject stores and atomics through pointers made from tl.const arguments",
       checkConstPointers},
  };
  return passes;
}

std::vector<std::string> defaultPipeline() {
  return {
      "inline",       // one function per kernel from here on
      "check-const-pointers", // writes through a tl.const argument's pointers
      "canonicalize", // fold constexpr arithmetic, e.g. static_range bounds
      "unroll",       // tl.static_range
      "canonicalize", // fold the unrolled ivs
      "widen-offsets", // 64-bit offsets into tensors of 2^31+ elements
      "narrow-division", // pid.to(int64) // n: a 32-bit division
      "cse",
      "licm-scalars", // a loop's invariant scalars (e.g. 3.0 / n_cols) once
      "dce",
  };
}

} // namespace tritium
