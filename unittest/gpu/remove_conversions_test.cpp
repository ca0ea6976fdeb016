// --remove-layout-conversions (lib/gpu/remove_conversions.cpp) sinking
// conversions below elementwise ops, against the CPU executor: a matmul
// tile with the tutorial's epilogue (cast to fp16, a scale, leaky ReLU, and
// optionally a second, fp32 output) goes through the GPU
// passes up to accelerate-matmul; the module before and after the second
// --remove-layout-conversions, and the tile IR itself, give bit-identical
// results on random inputs, for mma.sync (sm_80) and wgmma (sm_90a).
#include "tritium/exec/executor.h"
#include "tritium/gpu/layouts.h"
#include "tritium/gpu/passes.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"
#include "tritium/support/float_formats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace tritium;

namespace {

// C16 = leaky_relu(f16(A @ B) * s) (64x64, K = 32, row-major), and with
// `$F32OUT` also C32 = 2 (A @ B), stored as fp32.
const char *kEpilogue = R"(tt.func @epi(%a: !tt.ptr<f16>, %b: !tt.ptr<f16>, %c: !tt.ptr<f16>, %c32: !tt.ptr<f32>, %s: f16) attributes {kernel = true} {
  %rm = tt.make_range {end = 64, start = 0} : tensor<64xi32>
  %rk = tt.make_range {end = 32, start = 0} : tensor<32xi32>
  %am = tt.expand_dims %rm {axis = 1} : tensor<64x1xi32>
  %k32 = arith.constant {value = 32} : tensor<64x1xi32>
  %arow = arith.muli %am, %k32 : tensor<64x1xi32>
  %ak = tt.expand_dims %rk {axis = 0} : tensor<1x32xi32>
  %arowb = tt.broadcast %arow : tensor<64x32xi32>
  %akb = tt.broadcast %ak : tensor<64x32xi32>
  %aoff = arith.addi %arowb, %akb : tensor<64x32xi32>
  %abase = tt.splat %a : tensor<64x32x!tt.ptr<f16>>
  %aptr = tt.addptr %abase, %aoff : tensor<64x32x!tt.ptr<f16>>
  %x = tt.load %aptr : tensor<64x32xf16>
  %bk = tt.expand_dims %rk {axis = 1} : tensor<32x1xi32>
  %n64 = arith.constant {value = 64} : tensor<32x1xi32>
  %brow = arith.muli %bk, %n64 : tensor<32x1xi32>
  %bn = tt.expand_dims %rm {axis = 0} : tensor<1x64xi32>
  %browb = tt.broadcast %brow : tensor<32x64xi32>
  %bnb = tt.broadcast %bn : tensor<32x64xi32>
  %boff = arith.addi %browb, %bnb : tensor<32x64xi32>
  %bbase = tt.splat %b : tensor<32x64x!tt.ptr<f16>>
  %bptr = tt.addptr %bbase, %boff : tensor<32x64x!tt.ptr<f16>>
  %y = tt.load %bptr : tensor<32x64xf16>
  %zero = arith.constant {value = 0.0} : tensor<64x64xf32>
  %acc = tt.dot %x, %y, %zero {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32>
  %m64 = arith.constant {value = 64} : tensor<64x1xi32>
  %crow = arith.muli %am, %m64 : tensor<64x1xi32>
  %crowb = tt.broadcast %crow : tensor<64x64xi32>
  %cnb = tt.broadcast %bn : tensor<64x64xi32>
  %coff = arith.addi %crowb, %cnb : tensor<64x64xi32>
  %h = arith.truncf %acc : tensor<64x64xf16>
  %ss = tt.splat %s : tensor<64x64xf16>
  %hs = arith.mulf %h, %ss : tensor<64x64xf16>
  %z16 = arith.constant {value = 0.0} : tensor<64x64xf16>
  %ge = arith.cmpf %hs, %z16 {predicate = "oge"} : tensor<64x64xi1>
  %slope = arith.constant {value = 0.01} : tensor<64x64xf16>
  %neg = arith.mulf %hs, %slope : tensor<64x64xf16>
  %act = arith.select %ge, %hs, %neg : tensor<64x64xf16>
  %cbase = tt.splat %c : tensor<64x64x!tt.ptr<f16>>
  %cptr = tt.addptr %cbase, %coff : tensor<64x64x!tt.ptr<f16>>
  tt.store %cptr, %act
$F32OUT  tt.return
}
)";

const char *kF32Out = R"(  %two = arith.constant {value = 2.0} : tensor<64x64xf32>
  %acc1 = arith.mulf %acc, %two : tensor<64x64xf32>
  %c32base = tt.splat %c32 : tensor<64x64x!tt.ptr<f32>>
  %c32ptr = tt.addptr %c32base, %coff : tensor<64x64x!tt.ptr<f32>>
  tt.store %c32ptr, %acc1
)";

std::string kernelText(bool f32Out) {
  std::string s = kEpilogue;
  s.replace(s.find("$F32OUT"), 7, f32Out ? kF32Out : "");
  return s;
}

std::unique_ptr<Module> parse(const std::string &text) {
  gpu::registerLayoutParser();
  auto m = parseModule(text, "epi.tir");
  verify(*m);
  return m;
}

PassStats runGPU(Module &m, const std::vector<std::string> &passes,
                 const std::string &target) {
  PipelineOptions o;
  o.target = GPUTarget::parse(target);
  o.numWarps = 4;
  PassStats stats;
  runPasses(m, passes, stats, o, gpu::gpuPasses());
  verify(m);
  return stats;
}

struct Outputs {
  std::vector<uint16_t> c16;
  std::vector<float> c32;
};

/// A and B: multiples of 1/8 in [-1, 1]; s a power of two or 0.75.
Outputs run(const Module &m, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-8, 8);
  std::vector<uint16_t> a(64 * 32), b(32 * 64);
  for (auto &v : a)
    v = floatToHalfBits(d(rng) / 8.0);
  for (auto &v : b)
    v = floatToHalfBits(d(rng) / 8.0);
  Outputs o;
  o.c16.assign(64 * 64, 0x7e00); // NaN: every element must be written
  o.c32.assign(64 * 64, -7.0f);
  double s = (seed % 2) ? 0.75 : 2.0;
  std::vector<ExecArg> args{
      ExecPointer{(uint64_t)a.data(), a.size() * 2},
      ExecPointer{(uint64_t)b.data(), b.size() * 2},
      ExecPointer{(uint64_t)o.c16.data(), o.c16.size() * 2},
      ExecPointer{(uint64_t)o.c32.data(), o.c32.size() * 4},
      s};
  execute(m, "epi", {1, 1, 1}, args);
  return o;
}

void expectSame(const Outputs &x, const Outputs &y, const std::string &what) {
  ASSERT_EQ(std::memcmp(x.c16.data(), y.c16.data(), x.c16.size() * 2), 0)
      << what;
  ASSERT_EQ(std::memcmp(x.c32.data(), y.c32.data(), x.c32.size() * 4), 0)
      << what;
}

/// The element types of the conversions out of the mma layout.
std::vector<DType> mmaConversions(Module &m) {
  std::vector<DType> r;
  m.walk([&](Operation *op) {
    if (!gpu::isLayoutConversion(*op))
      return;
    const gpu::GPULayout *l = gpu::layoutOf(op->operand(0)->type());
    if (l && l->kind() == gpu::GPULayout::Kind::NvidiaMma)
      r.push_back(op->operand(0)->type()->scalarType()->dtype());
  });
  return r;
}

} // namespace

TEST(SinkConversions, EpilogueMovesAndKeepsItsResults) {
  for (const char *target : {"sm_80", "sm_90a"}) {
    for (bool f32Out : {false, true}) {
      std::string what = std::string(target) + (f32Out ? " f32 out" : "");
      auto tile = parse(kernelText(f32Out));
      auto before = parse(kernelText(f32Out));
      runGPU(*before,
             {"convert-to-gpu", "remove-layout-conversions",
              "accelerate-matmul"},
             target);
      auto after = before->clone();
      PassStats st = runGPU(*after, {"remove-layout-conversions"}, target);
      if (!f32Out) {
        // The whole epilogue (cast, scale, compare, multiply, select) runs
        // in the mma layout; one fp16 conversion is left.
        EXPECT_EQ(st.counters["gpu.conversions-sunk"], 1) << what;
        EXPECT_EQ(st.counters["gpu.ops-sunk"], 5) << what;
        EXPECT_EQ(mmaConversions(*after), std::vector<DType>{DType::FP16})
            << what;
      } else {
        // convert-to-gpu gave each user of the accumulator its own
        // conversion: both sink, the cast's to fp16, the multiply's (fp32,
        // no wider) below the multiply.
        EXPECT_EQ(st.counters["gpu.conversions-sunk"], 2) << what;
        EXPECT_EQ(st.counters["gpu.ops-sunk"], 6) << what;
        EXPECT_EQ(mmaConversions(*after),
                  (std::vector<DType>{DType::FP16, DType::FP32}))
            << what;
      }
      for (unsigned seed = 1; seed <= 3; ++seed) {
        Outputs want = run(*tile, seed);
        expectSame(run(*before, seed), want, what + " before");
        expectSame(run(*after, seed), want, what + " after");
      }
    }
  }
}
