// Every op of ops.def against every consumer of the IR: the executor, the
// PTX emitter, axis analysis and layout assignment each handle it or refuse
// it on purpose. An op added to the table and forgotten by a consumer fails
// here (OpSupport::Missing), not in a user's kernel.
#include "tritium/analysis/axis_info.h"
#include "tritium/exec/executor.h"
#include "tritium/gpu/passes.h"
#include "tritium/ir/ir.h"
#include "tritium/target/nvidia/op_support.h"

#include <gtest/gtest.h>

using namespace tritium;

namespace {

struct Consumer {
  const char *name;
  OpSupport (*support)(OpCode);
};

const Consumer kConsumers[] = {
    {"executor", executorSupport},
    {"PTX emitter", nvidia::ptxSupport},
    {"axis analysis", axisInfoSupport},
    {"layout assignment", gpu::layoutSupport},
};

TEST(OpCoverage, EveryConsumerHandlesOrRejectsEveryOp) {
  for (size_t i = 0; i < size_t(OpCode::NumOps); ++i) {
    OpCode c = OpCode(i);
    for (const Consumer &k : kConsumers)
      EXPECT_NE(k.support(c), OpSupport::Missing)
          << k.name << " has no semantics for '" << opInfo(c).name
          << "' and does not reject it";
  }
}

TEST(OpCoverage, RefusalsAreTheKnownOnes) {
  // The GPU path refuses calls, which the pipeline inlines first.
  using S = OpSupport;
  EXPECT_EQ(nvidia::ptxSupport(OpCode::Dot), S::Handled);
  EXPECT_EQ(nvidia::ptxSupport(OpCode::Print), S::Handled);
  EXPECT_EQ(nvidia::ptxSupport(OpCode::Assert), S::Handled);
  EXPECT_EQ(nvidia::ptxSupport(OpCode::InlineAsm), S::Handled);
  EXPECT_EQ(nvidia::ptxSupport(OpCode::Call), S::Rejected);
  EXPECT_EQ(gpu::layoutSupport(OpCode::Call), S::Rejected);
  // The CPU executor runs everything but PTX inline assembly.
  for (size_t i = 0; i < size_t(OpCode::NumOps); ++i)
    EXPECT_EQ(executorSupport(OpCode(i)),
              OpCode(i) == OpCode::InlineAsm ? S::Rejected : S::Handled)
        << opInfo(OpCode(i)).name;
  // Whole families come from the traits.
  EXPECT_EQ(nvidia::ptxSupport(OpCode::Tanh), S::Handled);
  EXPECT_EQ(nvidia::ptxSupport(OpCode::Trans), S::Handled);
  EXPECT_EQ(nvidia::ptxSupport(OpCode::PtrToInt), S::Handled);
  // Shared-memory values, async copies and mbarriers (emit_shared.cpp).
  for (OpCode c : {OpCode::LocalAlloc, OpCode::LocalDealloc, OpCode::LocalLoad,
                   OpCode::LocalStore, OpCode::MemDescIndex,
                   OpCode::MemDescTrans,
                   OpCode::AsyncCopyGlobalToLocal, OpCode::AsyncCommitGroup,
                   OpCode::AsyncWait, OpCode::InitBarrier,
                   OpCode::BarrierExpect, OpCode::ArriveBarrier,
                   OpCode::WaitBarrier})
    EXPECT_EQ(nvidia::ptxSupport(c), S::Handled) << opInfo(c).name;
}

} // namespace
