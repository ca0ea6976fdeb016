// How a consumer of the IR (the executor, the PTX emitter, axis analysis,
// layout assignment) stands toward an op. Each consumer answers from its own
// dispatch; unittest/op_coverage_test.cpp asks every consumer about every op
// of ops.def, so an op added to the table without its semantics in some
// consumer fails there instead of at a user's kernel.
#pragma once

namespace tritium {

enum class OpSupport {
  Handled,  // lowered, run or analysed
  Rejected, // refused on purpose with a clear error (e.g. tl.dot on the GPU)
  Missing,  // nobody decided: a bug the coverage test reports
};

} // namespace tritium
