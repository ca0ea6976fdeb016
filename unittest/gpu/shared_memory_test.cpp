// Tests of live ranges (lib/analysis/liveness.cpp), the placement of
// shared-memory buffers (lib/gpu/allocate_shared_memory.cpp) and how the
// PTX emitter prints the barriers of --insert-barriers. The passes' IR
// output is tested by lit: test/gpu/allocate-shared-memory.tir,
// test/gpu/insert-barriers*.tir, test/gpu/errors/.
#include "tritium/analysis/liveness.h"
#include "tritium/gpu/shared_memory.h"
#include "tritium/ir/printer.h"
#include "tritium/target/nvidia/ptx.h"

#include <gtest/gtest.h>

using namespace tritium;
using namespace tritium::gpu;

namespace {

Operation *opNamed(Function &f, const std::string &result) {
  Operation *found = nullptr;
  f.walk([&](Operation *op) {
    for (Value *r : op->results())
      if (r->nameHint == result)
        found = op;
  });
  if (!found)
    throw std::runtime_error("no op defines %" + result);
  return found;
}

const char *kLoop = R"(
tt.func @k(%n: i32, %p: !tt.ptr<f32>) {
  %lb = arith.constant {value = 0} : i32
  %one = arith.constant {value = 1} : i32
  %z = arith.constant {value = 0.0} : f32
  %outside = arith.constant {value = 2.0} : f32
  %dead = arith.constant {value = 3.0} : f32
  %acc = scf.for %lb, %n, %one, %z : f32 {
  ^bb0(%iv: i32, %a: f32):
    %inside = arith.addf %a, %outside : f32
    %twice = arith.addf %inside, %inside : f32
    %last = arith.addf %twice, %a : f32
    scf.yield %last
  }
  tt.store %p, %acc
  tt.return
}
)";

TEST(Liveness, OpsNestAndFollowProgramOrder) {
  auto m = parseModule(kLoop);
  Function &f = *m->functions().front();
  Liveness live(f);
  LiveRange loop = live.opRange(*opNamed(f, "acc"));
  LiveRange inside = live.opRange(*opNamed(f, "inside"));
  LiveRange lb = live.opRange(*opNamed(f, "lb"));
  EXPECT_LT(lb.end, loop.begin);
  EXPECT_LT(loop.begin, inside.begin);
  EXPECT_LT(inside.end, loop.end);
  EXPECT_FALSE(lb.overlaps(inside));
  EXPECT_TRUE(loop.overlaps(inside));
}

TEST(Liveness, AUseInALoopKeepsAValueLiveToTheLoopsEnd) {
  auto m = parseModule(kLoop);
  Function &f = *m->functions().front();
  Liveness live(f);
  LiveRange loop = live.opRange(*opNamed(f, "acc"));
  // Defined before the loop, used inside: live through the whole loop.
  LiveRange outside = live.valueRange(opNamed(f, "outside")->result(0));
  EXPECT_EQ(outside.end, loop.end);
  // Defined and used inside one iteration: dead after its last use.
  LiveRange inside = live.valueRange(opNamed(f, "inside")->result(0));
  EXPECT_EQ(inside.begin, live.opRange(*opNamed(f, "inside")).begin);
  EXPECT_EQ(inside.end, live.opRange(*opNamed(f, "twice")).end);
  EXPECT_LT(inside.end, loop.end);
  // A block argument is live from the start of its block; unused: only
  // there.
  Value *a = opNamed(f, "inside")->operand(0);
  ASSERT_TRUE(a->isBlockArg());
  LiveRange ar = live.valueRange(a);
  EXPECT_LT(ar.begin, inside.begin);
  EXPECT_EQ(ar.end, live.opRange(*opNamed(f, "last")).end);
  LiveRange dead = live.valueRange(opNamed(f, "dead")->result(0));
  EXPECT_EQ(dead.begin, dead.end);
  // The loop's result is used by the store after it.
  LiveRange acc = live.valueRange(opNamed(f, "acc")->result(0));
  EXPECT_GT(acc.end, loop.end);
}

SharedBuffer buffer(int64_t bytes, int begin, int end) {
  SharedBuffer b;
  b.bytes = bytes;
  b.live = {begin, end};
  return b;
}

bool disjointBytes(const SharedBuffer &a, const SharedBuffer &b) {
  return a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset;
}

TEST(SharedMemory, BuffersLiveTogetherNeverShareBytes) {
  std::vector<SharedBuffer> bs = {
      buffer(64, 0, 10),  // A
      buffer(32, 5, 20),  // B: overlaps A
      buffer(128, 15, 30), // C: overlaps B, not A
      buffer(48, 25, 40), // D: overlaps C
      buffer(16, 50, 60), // E: alone
  };
  int64_t total = assignOffsets(bs);
  for (size_t i = 0; i < bs.size(); ++i) {
    EXPECT_EQ(bs[i].offset % kSharedAlignment, 0) << i;
    EXPECT_LE(bs[i].offset + bs[i].bytes, total) << i;
    for (size_t j = i + 1; j < bs.size(); ++j)
      if (bs[i].live.overlaps(bs[j].live))
        EXPECT_TRUE(disjointBytes(bs[i], bs[j])) << i << " " << j;
  }
  // Largest first: C at 0; A (not live with C) at 0 too; D (live with C)
  // above C; B (live with A and C) above C as well (D is not live with B);
  // E at 0.
  EXPECT_EQ(bs[2].offset, 0);
  EXPECT_EQ(bs[1].offset, 128);
  EXPECT_EQ(bs[0].offset, 0);
  EXPECT_EQ(bs[3].offset, 128);
  EXPECT_EQ(bs[4].offset, 0);
  EXPECT_EQ(total, 176);
}

TEST(SharedMemory, FirstFitUsesAGapBetweenBuffers) {
  std::vector<SharedBuffer> bs = {
      buffer(64, 0, 100), // P: at 0
      buffer(64, 0, 10),  // Q: live with P: at 64
      buffer(64, 0, 100), // R: live with P and Q: at 128
      buffer(48, 20, 30), // S: live with P and R, not Q: in Q's bytes
  };
  int64_t total = assignOffsets(bs);
  EXPECT_EQ(bs[0].offset, 0);
  EXPECT_EQ(bs[1].offset, 64);
  EXPECT_EQ(bs[2].offset, 128);
  EXPECT_EQ(bs[3].offset, 64);
  EXPECT_EQ(total, 192);
}

TEST(SharedMemory, DefaultLimitIsSM90s) {
  EXPECT_EQ(kDefaultSharedLimit, GPUTarget::parse("sm_90a").maxSharedBytes());
  EXPECT_LT(GPUTarget::parse("sm_80").maxSharedBytes(),
            GPUTarget::parse("sm_90a").maxSharedBytes());
}

TEST(SharedMemory, OffsetsWrittenByHandAreChecked) {
  auto m = parseModule(R"(
tt.func @k(%p: !tt.ptr<i32>) {
  %one = arith.constant {allocation.offset = 8, value = 1} : i32
  tt.return
}
)");
  Operation *c = opNamed(*m->functions().front(), "one");
  EXPECT_THROW(sharedOffset(*c), UserError);
  c->setAttr(kAllocationOffsetAttr, int64_t(32));
  EXPECT_EQ(sharedOffset(*c), 32);
  // A constant needs no shared memory: --insert-barriers says so.
  PassStats stats;
  EXPECT_THROW(insertBarriers(*m, stats), UserError);
}

// ---- what the emitter prints ----------------------------------------------

GPUOptions sm90() {
  GPUOptions o;
  o.target = GPUTarget::parse("sm_90a");
  return o;
}

/// A 1024-element fp32 tile split over 4 warps; `body` reduces %x.
std::string kernel(const std::string &body) {
  return R"(tt.func @k(%p: !tt.ptr<f32> {tt.divisibility = 16}, %q: !tt.ptr<f32>, %c: i1, %n: i32) attributes {kernel = true} {
  %r = tt.make_range {end = 1024, start = 0} : tensor<1024xi32>
  %ps = tt.splat %p : tensor<1024x!tt.ptr<f32>>
  %pa = tt.addptr %ps, %r : tensor<1024x!tt.ptr<f32>>
  %x = tt.load %pa : tensor<1024xf32>
)" + body + R"(  tt.return
}
)";
}

size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos;
       at = s.find(what, at + 1))
    ++n;
  return n;
}

TEST(SharedMemory, ConsecutiveReductionsTakeDifferentBytes) {
  auto m = parseModule(
      kernel(R"(  %s = tt.reduce %x {axis = 0, kind = "sum"} : f32
  %t = tt.reduce %x {axis = 0, kind = "max"} : f32
  %u = arith.addf %s, %t : f32
  tt.store %q, %u
)"));
  CompiledKernel ck = compileToPTX(*m, "k", sm90());
  // 32 bytes each, at 0 and 32: the second writes nothing the first still
  // reads, so each has only the barrier inside it.
  EXPECT_EQ(ck.sharedBytes, 64);
  EXPECT_EQ(ck.gir.find("gpu.barrier"), std::string::npos) << ck.gir;
  EXPECT_EQ(count(ck.ptx, "bar.sync 0"), 2u) << ck.ptx;
}

TEST(SharedMemory, OneReductionPerBranchNeedsNoBarrierBetweenThem) {
  auto m = parseModule(kernel(R"(  %v = scf.if %c : f32 {
    %s = tt.reduce %x {axis = 0, kind = "sum"} : f32
    scf.yield %s
  } {
    %t = tt.reduce %x {axis = 0, kind = "max"} : f32
    scf.yield %t
  }
  tt.store %q, %v
)"));
  CompiledKernel ck = compileToPTX(*m, "k", sm90());
  // Only the barrier inside each reduction.
  EXPECT_EQ(count(ck.ptx, "bar.sync 0"), 2u) << ck.ptx;
}

TEST(SharedMemory, AReductionInALoopWaitsForTheLastIteration) {
  auto m = parseModule(kernel(R"(  %lb = arith.constant {value = 0} : i32
  %one = arith.constant {value = 1} : i32
  %z = arith.constant {value = 0.0} : f32
  %acc = scf.for %lb, %n, %one, %z : f32 {
  ^bb0(%iv: i32, %a: f32):
    %s = tt.reduce %x {axis = 0, kind = "sum"} : f32
    %a1 = arith.addf %a, %s : f32
    scf.yield %a1
  }
  tt.store %q, %acc
)"));
  CompiledKernel ck = compileToPTX(*m, "k", sm90());
  // The previous iteration's reads of its bytes come back along the back
  // edge: a barrier before its writes, besides its own.
  EXPECT_EQ(ck.sharedBytes, 32);
  EXPECT_NE(ck.gir.find("gpu.barrier"), std::string::npos) << ck.gir;
  EXPECT_EQ(count(ck.ptx, "bar.sync 0"), 2u) << ck.ptx;
  // That barrier waits only for the reduction's shuffles (they touch no
  // shared memory): shuffles, barrier, writes.
  size_t shfl = ck.ptx.find("shfl.sync.bfly");
  size_t bar = ck.ptx.find("bar.sync 0");
  size_t st = ck.ptx.find("st.shared");
  ASSERT_NE(shfl, std::string::npos);
  EXPECT_LT(shfl, bar);
  EXPECT_LT(bar, st);
}

} // namespace
