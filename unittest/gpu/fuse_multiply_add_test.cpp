// --fuse-multiply-add (lib/gpu/fuse_multiply_add.cpp) against the CPU
// executor: a kernel with every fused shape (mul + c, c + mul, mul - c,
// c - mul, chained) runs before and after the pass, and after the GPU
// lowering with it, on inputs whose products and sums are exact in fp32
// (multiples of 1/4 below 2^10), so fused and unfused results are
// bit-identical exactly when the pass kept each operand in its place and
// sign. With enable_fp_fusion off it changes nothing.
#include "tritium/exec/executor.h"
#include "tritium/gpu/layouts.h"
#include "tritium/gpu/passes.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace tritium;

namespace {

const char *kKernel = R"(tt.func @k(%A: !tt.ptr<f32>, %B: !tt.ptr<f32>, %C: !tt.ptr<f32>, %O: !tt.ptr<f32>) attributes {kernel = true, num_warps = 2} {
  %r = tt.make_range {end = 64, start = 0} : tensor<64xi32>
  %sa = tt.splat %A : tensor<64x!tt.ptr<f32>>
  %pa = tt.addptr %sa, %r : tensor<64x!tt.ptr<f32>>
  %a = tt.load %pa : tensor<64xf32>
  %sb = tt.splat %B : tensor<64x!tt.ptr<f32>>
  %pb = tt.addptr %sb, %r : tensor<64x!tt.ptr<f32>>
  %b = tt.load %pb : tensor<64xf32>
  %sc = tt.splat %C : tensor<64x!tt.ptr<f32>>
  %pc = tt.addptr %sc, %r : tensor<64x!tt.ptr<f32>>
  %c = tt.load %pc : tensor<64xf32>
  %ab = arith.mulf %a, %b : tensor<64xf32>
  %x1 = arith.addf %ab, %c : tensor<64xf32>
  %bc = arith.mulf %b, %c : tensor<64xf32>
  %x2 = arith.addf %x1, %bc : tensor<64xf32>
  %ca = arith.mulf %c, %a : tensor<64xf32>
  %x3 = arith.subf %ca, %x2 : tensor<64xf32>
  %aa = arith.mulf %a, %a : tensor<64xf32>
  %x4 = arith.subf %x3, %aa : tensor<64xf32>
  %so = tt.splat %O : tensor<64x!tt.ptr<f32>>
  %po = tt.addptr %so, %r : tensor<64x!tt.ptr<f32>>
  tt.store %po, %x4
  tt.return
}
)";

std::unique_ptr<Module> parse() {
  gpu::registerLayoutParser();
  auto m = parseModule(kKernel, "fma.tir");
  verify(*m);
  return m;
}

int64_t run(Module &m, const std::vector<std::string> &passes, bool fusion = true) {
  PipelineOptions o;
  o.enableFpFusion = fusion;
  PassStats stats;
  runPasses(m, passes, stats, o, gpu::gpuPasses());
  verify(m);
  return stats.counters["gpu.fma-fused"];
}

int count(Module &m, OpCode code) {
  int n = 0;
  m.walk([&](Operation *op) { n += op->code() == code; });
  return n;
}

std::vector<float> execute(const Module &m, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-64, 64);
  std::vector<float> a(64), b(64), c(64), o(64, -1.0f);
  for (auto *v : {&a, &b, &c})
    for (auto &x : *v)
      x = d(rng) / 4.0f;
  std::vector<ExecArg> args{ExecPointer{(uint64_t)a.data(), 256},
                            ExecPointer{(uint64_t)b.data(), 256},
                            ExecPointer{(uint64_t)c.data(), 256},
                            ExecPointer{(uint64_t)o.data(), 256}};
  tritium::execute(m, "k", {1, 1, 1}, args);
  return o;
}

TEST(FuseMultiplyAdd, EveryShapeComputesTheSameFunction) {
  auto before = parse();
  auto after = parse();
  EXPECT_EQ(run(*after, {"fuse-multiply-add"}), 4) << print(*after);
  EXPECT_EQ(count(*after, OpCode::MulF), 0) << print(*after);
  EXPECT_EQ(count(*after, OpCode::Fma), 4);
  EXPECT_EQ(count(*after, OpCode::NegF), 2);
  for (unsigned seed : {1u, 2u, 3u, 4u}) {
    auto want = execute(*before, seed);
    auto got = execute(*after, seed);
    ASSERT_EQ(std::memcmp(want.data(), got.data(), 256), 0) << "seed=" << seed;
  }
}

TEST(FuseMultiplyAdd, AfterTheGPULoweringAndOnlyWithFusion) {
  auto tile = parse();
  auto gpuIR = parse();
  EXPECT_EQ(run(*gpuIR, {"convert-to-gpu", "remove-layout-conversions",
                         "fuse-multiply-add"}),
            4);
  for (unsigned seed : {5u, 6u}) {
    auto want = execute(*tile, seed);
    auto got = execute(*gpuIR, seed);
    ASSERT_EQ(std::memcmp(want.data(), got.data(), 256), 0) << "seed=" << seed;
  }
  auto off = parse();
  EXPECT_EQ(run(*off, {"fuse-multiply-add"}, /*fusion=*/false), 0);
  EXPECT_EQ(count(*off, OpCode::Fma), 0);
  EXPECT_EQ(count(*off, OpCode::MulF), 4);
}

} // namespace
