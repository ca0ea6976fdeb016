// --pipeline (lib/gpu/pipeline_loops.cpp) against the CPU executor: a small
// matmul in the form accelerate-matmul leaves (tt.load -> ttg.local_alloc ->
// ttg.local_load as a dot operand -> tt.dot; pointer iter args; a masked K
// tail) runs before and after the pass on random inputs, for S = 2..5 and
// loops of 0, 1 and more iterations, with bit-identical results. The
// executor checks every unmasked access against its argument's extent, so
// a copy of an iteration that does not run and is not masked off fails it.
// (The executor completes async copies when issued: it checks the buffer
// indices and masks, not the waits; the wait counts are pinned by
// test/gpu/pipeline*.tir.)
// The same for a wgmma loop (sm_90a: ttng.warp_group_dot reading both
// buffers, pipelined one stage shorter and made {async = true} from S = 3).
#include "tritium/exec/executor.h"
#include "tritium/gpu/layouts.h"
#include "tritium/gpu/passes.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"
#include "tritium/support/float_formats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>

using namespace tritium;

namespace {

// 32x32 tile of C = A (32xK, row-major) @ B (Kx32, row-major), K by 16.
// $MASKK is the K index the masks use: the induction variable, or (with
// kOffsetIter) an i32 iter arg whose final value the kernel stores.
const char *kMatmul = R"(tt.func @matmul(%a: !tt.ptr<f16>, %b: !tt.ptr<f16>, %c: !tt.ptr<f32>, %K: i32) attributes {kernel = true, num_warps = 4} {
  %c0 = arith.constant {value = 0} : i32
  %c16 = arith.constant {value = 16} : i32
  %rm = tt.make_range {end = 32, start = 0} : tensor<32xi32, #ttg.slice<{dim = 1, parent = $BL}>>
  %rka = tt.make_range {end = 16, start = 0} : tensor<16xi32, #ttg.slice<{dim = 0, parent = $BL}>>
  %am = tt.expand_dims %rm {axis = 1} : tensor<32x1xi32, $BL>
  %Ks = tt.splat %K : tensor<32x1xi32, $BL>
  %arow = arith.muli %am, %Ks : tensor<32x1xi32, $BL>
  %ak = tt.expand_dims %rka {axis = 0} : tensor<1x16xi32, $BL>
  %arowb = tt.broadcast %arow : tensor<32x16xi32, $BL>
  %akb = tt.broadcast %ak : tensor<32x16xi32, $BL>
  %aoff = arith.addi %arowb, %akb : tensor<32x16xi32, $BL>
  %abase = tt.splat %a : tensor<32x16x!tt.ptr<f16>, $BL>
  %aptr0 = tt.addptr %abase, %aoff : tensor<32x16x!tt.ptr<f16>, $BL>
  %rkb = tt.make_range {end = 16, start = 0} : tensor<16xi32, #ttg.slice<{dim = 1, parent = $BL}>>
  %rn = tt.make_range {end = 32, start = 0} : tensor<32xi32, #ttg.slice<{dim = 0, parent = $BL}>>
  %bk = tt.expand_dims %rkb {axis = 1} : tensor<16x1xi32, $BL>
  %n32 = arith.constant {value = 32} : tensor<16x1xi32, $BL>
  %brow = arith.muli %bk, %n32 : tensor<16x1xi32, $BL>
  %bn = tt.expand_dims %rn {axis = 0} : tensor<1x32xi32, $BL>
  %browb = tt.broadcast %brow : tensor<16x32xi32, $BL>
  %bnb = tt.broadcast %bn : tensor<16x32xi32, $BL>
  %boff = arith.addi %browb, %bnb : tensor<16x32xi32, $BL>
  %bbase = tt.splat %b : tensor<16x32x!tt.ptr<f16>, $BL>
  %bptr0 = tt.addptr %bbase, %boff : tensor<16x32x!tt.ptr<f16>, $BL>
  %astep = arith.constant {value = 16} : tensor<32x16xi32, $BL>
  %bstep = arith.constant {value = 512} : tensor<16x32xi32, $BL>
  %acc0 = arith.constant {value = 0.0} : tensor<32x32xf32, $MMA>
  %acc, %ap, %bp = scf.for %c0, %K, %c16, %acc0, %aptr0, %bptr0$STAGES : tensor<32x32xf32, $MMA>, tensor<32x16x!tt.ptr<f16>, $BL>, tensor<16x32x!tt.ptr<f16>, $BL> {
  ^bb0(%k: i32, %acc_k: tensor<32x32xf32, $MMA>, %a_k: tensor<32x16x!tt.ptr<f16>, $BL>, %b_k: tensor<16x32x!tt.ptr<f16>, $BL>):
    %rem = arith.subi %K, %k : i32
    %rema = tt.splat %rem : tensor<1x16xi32, $BL>
    %ma = arith.cmpi %ak, %rema {predicate = "slt"} : tensor<1x16xi1, $BL>
    %mab = tt.broadcast %ma : tensor<32x16xi1, $BL>
    %za = arith.constant {value = 0.0} : tensor<32x16xf16, $BL>
    %x = tt.load %a_k, %mab, %za : tensor<32x16xf16, $BL>
    %sa = ttg.local_alloc %x : !ttg.memdesc<32x16xf16, $SH>
    %remb = tt.splat %rem : tensor<16x1xi32, $BL>
    %mb = arith.cmpi %bk, %remb {predicate = "slt"} : tensor<16x1xi1, $BL>
    %mbb = tt.broadcast %mb : tensor<16x32xi1, $BL>
    %y = tt.load %b_k, %mbb : tensor<16x32xf16, $BL>
    %sb = ttg.local_alloc %y : !ttg.memdesc<16x32xf16, $SH>
    %xa = ttg.local_load %sa : tensor<32x16xf16, $DA>
    %yb = ttg.local_load %sb : tensor<16x32xf16, $DB>
    %d = tt.dot %xa, %yb, %acc_k : tensor<32x32xf32, $MMA>
    %an = tt.addptr %a_k, %astep : tensor<32x16x!tt.ptr<f16>, $BL>
    %bn2 = tt.addptr %b_k, %bstep : tensor<16x32x!tt.ptr<f16>, $BL>
    scf.yield %d, %an, %bn2
  }
  %accb = ttg.convert_layout %acc : tensor<32x32xf32, $BL>
  %cm32 = arith.constant {value = 32} : tensor<32x1xi32, $BL>
  %crow = arith.muli %am, %cm32 : tensor<32x1xi32, $BL>
  %crowb = tt.broadcast %crow : tensor<32x32xi32, $BL>
  %cnb = tt.broadcast %bn : tensor<32x32xi32, $BL>
  %coff = arith.addi %crowb, %cnb : tensor<32x32xi32, $BL>
  %cbase = tt.splat %c : tensor<32x32x!tt.ptr<f32>, $BL>
  %cptr = tt.addptr %cbase, %coff : tensor<32x32x!tt.ptr<f32>, $BL>
  tt.store %cptr, %accb
  tt.return
}
)";

std::string replaceAll(std::string s, const std::string &from,
                       const std::string &to) {
  for (size_t at = s.find(from); at != std::string::npos;
       at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

/// The kernel's text: layouts filled in; with `kOffsetIter`, the masks read
/// an iter arg %kk (read after the loop: it keeps its values and gets an
/// ahead copy) instead of the induction variable; with `unmasked`, the
/// loads have no mask (K a multiple of 16): only the pass's own "iteration
/// runs" masks keep the copies past the end from reading.
std::string matmulText(bool kOffsetIter, bool unmasked = false) {
  const std::string mma = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = "
                          "0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>";
  std::string s = kMatmul;
  if (kOffsetIter) {
    s = replaceAll(s, "%K: i32)", "%K: i32, %kout: !tt.ptr<i32>)");
    s = replaceAll(s, "%acc, %ap, %bp = scf.for %c0, %K, %c16, %acc0, "
                      "%aptr0, %bptr0",
                   "%acc, %ap, %bp, %kend = scf.for %c0, %K, %c16, %acc0, "
                   "%aptr0, %bptr0, %c0");
    s = replaceAll(s, "tensor<16x32x!tt.ptr<f16>, $BL> {\n",
                   "tensor<16x32x!tt.ptr<f16>, $BL>, i32 {\n");
    s = replaceAll(s, "%b_k: tensor<16x32x!tt.ptr<f16>, $BL>):",
                   "%b_k: tensor<16x32x!tt.ptr<f16>, $BL>, %kk: i32):");
    s = replaceAll(s, "%rem = arith.subi %K, %k : i32",
                   "%rem = arith.subi %K, %kk : i32\n"
                   "    %kk2 = arith.addi %kk, %c16 : i32");
    s = replaceAll(s, "scf.yield %d, %an, %bn2", "scf.yield %d, %an, %bn2, %kk2");
    s = replaceAll(s, "  tt.store %cptr, %accb\n",
                   "  tt.store %cptr, %accb\n  tt.store %kout, %kend\n");
  }
  if (unmasked) {
    s = replaceAll(s, "tt.load %a_k, %mab, %za", "tt.load %a_k");
    s = replaceAll(s, "tt.load %b_k, %mbb", "tt.load %b_k");
  }
  s = replaceAll(s, "$STAGES", "");
  s = replaceAll(s, "$BL",
                 "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, "
                 "4], warpsPerCTA = [4, 1], order = [1, 0]}>");
  s = replaceAll(s, "$DA",
                 "#ttg.dot_op<{opIdx = 0, parent = " + mma + ", kWidth = 2}>");
  s = replaceAll(s, "$DB",
                 "#ttg.dot_op<{opIdx = 1, parent = " + mma + ", kWidth = 2}>");
  s = replaceAll(s, "$MMA", mma);
  s = replaceAll(s, "$SH",
                 "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 2, "
                 "order = [1, 0]}>");
  return s;
}

std::unique_ptr<Module> parse(const std::string &text) {
  gpu::registerLayoutParser();
  auto m = parseModule(text, "matmul.tir");
  verify(*m);
  return m;
}

/// Runs `passes` with num_stages S; returns the counters.
PassStats runGPU(Module &m, const std::vector<std::string> &passes, int S) {
  PipelineOptions o;
  o.numStages = S;
  PassStats stats;
  runPasses(m, passes, stats, o, gpu::gpuPasses());
  verify(m);
  return stats;
}

struct Result {
  std::vector<float> c;
  int32_t kend = -1;
};

/// A and B hold multiples of 1/4 in [-2, 2] (exact in fp16; every sum
/// exact in fp32, so the reference below is exact too).
struct Inputs {
  int K;
  std::vector<uint16_t> a, b;
  Inputs(int K, unsigned seed) : K(K), a(32 * K + 1), b(K * 32 + 1) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(-8, 8);
    for (auto &x : a)
      x = floatToHalfBits(d(rng) / 4.0);
    for (auto &x : b)
      x = floatToHalfBits(d(rng) / 4.0);
  }
  float ref(int m, int n) const {
    double s = 0;
    for (int k = 0; k < K; ++k)
      s += halfBitsToFloat(a[m * K + k]) * halfBitsToFloat(b[k * 32 + n]);
    return float(s);
  }
};

Result run(const Module &m, const Inputs &in, bool kOffsetIter) {
  Result r;
  r.c.assign(32 * 32, -7.0f);
  // Extents exactly 32*K and K*32 elements: an unmasked access past them
  // is an ExecutionError.
  std::vector<ExecArg> args{
      ExecPointer{(uint64_t)in.a.data(), uint64_t(32 * in.K) * 2},
      ExecPointer{(uint64_t)in.b.data(), uint64_t(in.K * 32) * 2},
      ExecPointer{(uint64_t)r.c.data(), r.c.size() * 4}, int64_t(in.K)};
  if (kOffsetIter)
    args.push_back(ExecPointer{(uint64_t)&r.kend, 4});
  execute(m, "matmul", {1, 1, 1}, args);
  return r;
}

void expectSameBits(const Result &x, const Result &y, const std::string &what) {
  ASSERT_EQ(std::memcmp(x.c.data(), y.c.data(), x.c.size() * 4), 0) << what;
  ASSERT_EQ(x.kend, y.kend) << what;
}

int count(Module &m, OpCode code) {
  int n = 0;
  m.walk([&](Operation *op) { n += op->code() == code; });
  return n;
}

const int kLengths[] = {0, 5, 16, 40, 48, 100};

// 64x64 tile of C = A (64xK, row-major) @ B (Kx64, row-major), K by 32 with
// a masked tail, as tile IR: the test lowers it for sm_90a, where
// accelerate-matmul makes the dot a ttng.warp_group_dot reading both
// operands from NVMMA shared memory.
const char *kWgmmaMatmul = R"(tt.func @matmul(%a: !tt.ptr<f16>, %b: !tt.ptr<f16>, %c: !tt.ptr<f32>, %K: i32) attributes {kernel = true, num_warps = 4} {
  %c0 = arith.constant {value = 0} : i32
  %c32 = arith.constant {value = 32} : i32
  %rm = tt.make_range {end = 64, start = 0} : tensor<64xi32>
  %rk = tt.make_range {end = 32, start = 0} : tensor<32xi32>
  %am = tt.expand_dims %rm {axis = 1} : tensor<64x1xi32>
  %Ks = tt.splat %K : tensor<64x1xi32>
  %arow = arith.muli %am, %Ks : tensor<64x1xi32>
  %ak = tt.expand_dims %rk {axis = 0} : tensor<1x32xi32>
  %arowb = tt.broadcast %arow : tensor<64x32xi32>
  %akb = tt.broadcast %ak : tensor<64x32xi32>
  %aoff = arith.addi %arowb, %akb : tensor<64x32xi32>
  %abase = tt.splat %a : tensor<64x32x!tt.ptr<f16>>
  %aptr0 = tt.addptr %abase, %aoff : tensor<64x32x!tt.ptr<f16>>
  %bk = tt.expand_dims %rk {axis = 1} : tensor<32x1xi32>
  %n64 = arith.constant {value = 64} : tensor<32x1xi32>
  %brow = arith.muli %bk, %n64 : tensor<32x1xi32>
  %bn = tt.expand_dims %rm {axis = 0} : tensor<1x64xi32>
  %browb = tt.broadcast %brow : tensor<32x64xi32>
  %bnb = tt.broadcast %bn : tensor<32x64xi32>
  %boff = arith.addi %browb, %bnb : tensor<32x64xi32>
  %bbase = tt.splat %b : tensor<32x64x!tt.ptr<f16>>
  %bptr0 = tt.addptr %bbase, %boff : tensor<32x64x!tt.ptr<f16>>
  %astep = arith.constant {value = 32} : tensor<64x32xi32>
  %bstep = arith.constant {value = 2048} : tensor<32x64xi32>
  %acc0 = arith.constant {value = 0.0} : tensor<64x64xf32>
  %acc, %ap, %bp = scf.for %c0, %K, %c32, %acc0, %aptr0, %bptr0 : tensor<64x64xf32>, tensor<64x32x!tt.ptr<f16>>, tensor<32x64x!tt.ptr<f16>> {
  ^bb0(%k: i32, %acc_k: tensor<64x64xf32>, %a_k: tensor<64x32x!tt.ptr<f16>>, %b_k: tensor<32x64x!tt.ptr<f16>>):
    %rem = arith.subi %K, %k : i32
    %rema = tt.splat %rem : tensor<1x32xi32>
    %ma = arith.cmpi %ak, %rema {predicate = "slt"} : tensor<1x32xi1>
    %mab = tt.broadcast %ma : tensor<64x32xi1>
    %za = arith.constant {value = 0.0} : tensor<64x32xf16>
    %x = tt.load %a_k, %mab, %za : tensor<64x32xf16>
    %remb = tt.splat %rem : tensor<32x1xi32>
    %mb = arith.cmpi %bk, %remb {predicate = "slt"} : tensor<32x1xi1>
    %mbb = tt.broadcast %mb : tensor<32x64xi1>
    %y = tt.load %b_k, %mbb : tensor<32x64xf16>
    %d = tt.dot %x, %y, %acc_k : tensor<64x64xf32>
    %an = tt.addptr %a_k, %astep : tensor<64x32x!tt.ptr<f16>>
    %bn2 = tt.addptr %b_k, %bstep : tensor<32x64x!tt.ptr<f16>>
    scf.yield %d, %an, %bn2
  }
  %cm = arith.constant {value = 64} : tensor<64x1xi32>
  %crow = arith.muli %am, %cm : tensor<64x1xi32>
  %crowb = tt.broadcast %crow : tensor<64x64xi32>
  %cnb = tt.broadcast %bn : tensor<64x64xi32>
  %coff = arith.addi %crowb, %cnb : tensor<64x64xi32>
  %cbase = tt.splat %c : tensor<64x64x!tt.ptr<f32>>
  %cptr = tt.addptr %cbase, %coff : tensor<64x64x!tt.ptr<f32>>
  tt.store %cptr, %acc
  tt.return
}
)";

/// kWgmmaMatmul with B given N x K (K contiguous, as TensorDescriptor
/// matmuls and attention's K take it) and transposed in the kernel:
/// tl.dot(a, b.T). Its tile has A's offsets and mask.
std::string wgmmaMatmulBT() {
  std::string s = kWgmmaMatmul;
  auto swap = [&](const std::string &from, const std::string &to) {
    size_t at = s.find(from);
    if (at == std::string::npos)
      throw std::runtime_error("kWgmmaMatmul lacks: " + from);
    s.replace(at, from.size(), to);
  };
  swap("%bptr0 = tt.addptr %bbase, %boff : tensor<32x64x!tt.ptr<f16>>",
       "%bbt = tt.splat %b : tensor<64x32x!tt.ptr<f16>>\n"
       "  %bptr0 = tt.addptr %bbt, %aoff : tensor<64x32x!tt.ptr<f16>>");
  swap("%bstep = arith.constant {value = 2048} : tensor<32x64xi32>",
       "%bstep = arith.constant {value = 32} : tensor<64x32xi32>");
  swap("tensor<64x32x!tt.ptr<f16>>, tensor<32x64x!tt.ptr<f16>> {",
       "tensor<64x32x!tt.ptr<f16>>, tensor<64x32x!tt.ptr<f16>> {");
  swap("%b_k: tensor<32x64x!tt.ptr<f16>>):", "%b_k: tensor<64x32x!tt.ptr<f16>>):");
  swap("%y = tt.load %b_k, %mbb : tensor<32x64xf16>",
       "%y0 = tt.load %b_k, %mab : tensor<64x32xf16>\n"
       "    %y = tt.trans %y0 {order = [1, 0]} : tensor<32x64xf16>");
  swap("%bn2 = tt.addptr %b_k, %bstep : tensor<32x64x!tt.ptr<f16>>",
       "%bn2 = tt.addptr %b_k, %bstep : tensor<64x32x!tt.ptr<f16>>");
  return s;
}

/// kWgmmaMatmul (or `text`) as GPU IR for `target`, before pipelining.
std::unique_ptr<Module> wgmmaModule(const std::string &text = kWgmmaMatmul,
                                    const char *target = "sm_90a") {
  auto m = parse(text);
  PipelineOptions o;
  o.target = GPUTarget::parse(target);
  PassStats stats;
  runPasses(*m,
            {"convert-to-gpu", "remove-layout-conversions", "accelerate-matmul",
             "remove-layout-conversions"},
            stats, o, gpu::gpuPasses());
  verify(*m);
  return m;
}

/// C (64x64) of kWgmmaMatmul; A and B as in Inputs, extents exact. With
/// `ref`, also the exact product.
std::vector<float> runWgmma(const Module &m, int K, unsigned seed,
                            std::vector<float> *ref = nullptr,
                            bool bTransposed = false) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-8, 8);
  std::vector<uint16_t> a(64 * K + 1), b(K * 64 + 1);
  for (auto &x : a)
    x = floatToHalfBits(d(rng) / 4.0);
  for (auto &x : b)
    x = floatToHalfBits(d(rng) / 4.0);
  std::vector<float> c(64 * 64, -7.0f);
  execute(m, "matmul", {1, 1, 1},
          {ExecPointer{(uint64_t)a.data(), uint64_t(64 * K) * 2},
           ExecPointer{(uint64_t)b.data(), uint64_t(K * 64) * 2},
           ExecPointer{(uint64_t)c.data(), c.size() * 4}, int64_t(K)});
  if (ref) {
    ref->assign(64 * 64, 0.0f);
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 64; ++j) {
        double sum = 0;
        for (int k = 0; k < K; ++k)
          sum += halfBitsToFloat(a[i * K + k]) *
                 halfBitsToFloat(b[bTransposed ? j * K + k : k * 64 + j]);
        (*ref)[i * 64 + j] = float(sum);
      }
  }
  return c;
}

Operation *onlyLoop(Module &m) {
  Operation *loop = nullptr;
  m.walk([&](Operation *op) {
    if (op->code() == OpCode::For)
      loop = op;
  });
  return loop;
}

} // namespace

TEST(PipelineLoops, MatmulMatchesTheUnpipelinedLoop) {
  const std::string text = matmulText(false);
  auto before = parse(text);
  for (int S = 2; S <= 5; ++S) {
    auto after = parse(text);
    PassStats stats = runGPU(*after, {"pipeline"}, S);
    ASSERT_EQ(stats.counters["gpu.loops-pipelined"], 1) << S;
    ASSERT_EQ(stats.counters["gpu.loads-pipelined"], 2) << S;
    // Both loads: S-1 copies each before the loop, one each in it.
    EXPECT_EQ(count(*after, OpCode::AsyncCopyGlobalToLocal), 2 * S) << S;
    EXPECT_EQ(count(*after, OpCode::Load), 0) << S;
    for (int K : kLengths) {
      Inputs in(K, 1000 * S + K);
      Result want = run(*before, in, false);
      for (int i = 0; i < 32 * 32; ++i)
        ASSERT_EQ(want.c[i], in.ref(i / 32, i % 32))
            << "K = " << K << " at " << i;
      expectSameBits(run(*after, in, false), want,
                     "S = " + std::to_string(S) + ", K = " + std::to_string(K));
    }
  }
}

TEST(PipelineLoops, CopiesPastTheEndAreMaskedOffWithoutALoadMask) {
  const std::string text = matmulText(false, /*unmasked=*/true);
  auto before = parse(text);
  for (int S = 2; S <= 5; ++S) {
    auto after = parse(text);
    ASSERT_EQ(runGPU(*after, {"pipeline"}, S).counters["gpu.loops-pipelined"],
              1);
    for (int K : {0, 16, 48, 96}) {
      Inputs in(K, 3 * S + K);
      expectSameBits(run(*after, in, false), run(*before, in, false),
                     "S = " + std::to_string(S) + ", K = " + std::to_string(K));
    }
  }
}

TEST(PipelineLoops, AnIterArgReadAfterTheLoopGetsAnAheadCopy) {
  const std::string text = matmulText(true);
  auto before = parse(text);
  for (int S = 2; S <= 4; ++S) {
    auto after = parse(text);
    ASSERT_EQ(runGPU(*after, {"pipeline"}, S).counters["gpu.loops-pipelined"],
              1);
    // acc, the two pointers (moved ahead in place), %kk and its ahead copy,
    // the two buffer indices.
    Operation *loop = nullptr;
    after->walk([&](Operation *op) {
      if (op->code() == OpCode::For)
        loop = op;
    });
    ASSERT_NE(loop, nullptr);
    EXPECT_EQ(loop->numResults(), 7u) << print(*after);
    for (int K : kLengths) {
      Inputs in(K, 7 * S + K);
      Result want = run(*before, in, true);
      ASSERT_EQ(want.kend, (K + 15) / 16 * 16);
      expectSameBits(run(*after, in, true), want,
                     "S = " + std::to_string(S) + ", K = " + std::to_string(K));
    }
  }
}

TEST(PipelineLoops, ThroughTheSharedMemoryPasses) {
  const std::string text = matmulText(false);
  auto before = parse(text);
  for (int S = 2; S <= 4; ++S) {
    auto after = parse(text);
    PassStats stats = runGPU(
        *after, {"pipeline", "allocate-shared-memory", "insert-barriers"}, S);
    // One barrier per iteration (before the copies), one after the loop
    // (before the epilogue's layout conversion).
    EXPECT_EQ(stats.counters["gpu.barriers-inserted"], 2) << S;
    for (int K : {0, 16, 100}) {
      Inputs in(K, 31 * S + K);
      expectSameBits(run(*after, in, false), run(*before, in, false),
                     "S = " + std::to_string(S) + ", K = " + std::to_string(K));
    }
  }
}

TEST(PipelineLoops, OneStageLeavesTheLoopAsItWas) {
  const std::string text = matmulText(false);
  auto m = parse(text);
  std::string was = print(*m);
  EXPECT_TRUE(runGPU(*m, {"pipeline"}, 1).counters.empty());
  EXPECT_EQ(print(*m), was);
}

// The executor runs ttng.warp_group_dot synchronously, whether {async} or
// not: this checks the data flow of the schedule (the prologue, the buffer
// each iteration writes and reads, the copies after the dot, the masks past
// the end), not the race it avoids on the GPU, which test/gpu/pipeline*.tir
// pin by the schedule itself.
TEST(PipelineLoops, WgmmaMatmulMatchesTheUnpipelinedLoop) {
  auto before = wgmmaModule();
  ASSERT_EQ(count(*before, OpCode::WarpGroupDot), 1) << print(*before);
  for (int S = 2; S <= 5; ++S) {
    auto after = wgmmaModule();
    PassStats stats = runGPU(*after, {"pipeline"}, S);
    ASSERT_EQ(stats.counters["gpu.loops-pipelined"], 1) << S;
    ASSERT_EQ(stats.counters["gpu.loads-pipelined"], 2) << S;
    // The dot is async at every S >= 2, the lookahead D = S-1: D copies of
    // each load before the loop, one in it (after the dot); the wait leaves
    // D-1 groups.
    const int D = S - 1;
    EXPECT_EQ(count(*after, OpCode::AsyncCopyGlobalToLocal), 2 * (D + 1)) << S;
    Operation *dot = nullptr, *wait = nullptr;
    after->walk([&](Operation *op) {
      if (op->code() == OpCode::WarpGroupDot)
        dot = op;
      if (op->code() == OpCode::AsyncWait && !wait)
        wait = op; // the loop's, the first in program order
    });
    ASSERT_NE(dot, nullptr);
    ASSERT_NE(wait, nullptr);
    EXPECT_TRUE(dot->hasAttr("async") && dot->boolAttr("async")) << S;
    EXPECT_EQ(wait->intAttr("num"), D - 1) << S;
    // acc, two pointers, %read and %write.
    EXPECT_EQ(onlyLoop(*after)->numResults(), 5u) << S;
    for (int K : {0, 5, 32, 40, 96, 130, 192}) {
      std::vector<float> ref;
      std::vector<float> want = runWgmma(*before, K, 100 * S + K, &ref);
      ASSERT_EQ(want, ref) << "K = " << K;
      std::vector<float> got = runWgmma(*after, K, 100 * S + K);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0)
          << "S = " << S << ", K = " << K;
    }
  }
}

// tl.dot(a, b.T) with b loaded N x K: the tt.trans between the load and the
// alloc no longer keeps B out of the pipeline. Its buffers hold the tile as
// loaded (the alloc's layout permuted back) and the dot reads them through
// a ttg.memdesc_trans view; on sm_90a (wgmma, NVMMA layouts) and sm_80
// (mma.sync, swizzled layouts read by ttg.local_load).
TEST(PipelineLoops, ATransposedOperandIsPipelinedThroughAView) {
  for (const char *target : {"sm_90a", "sm_80"}) {
    SCOPED_TRACE(target);
    auto before = wgmmaModule(wgmmaMatmulBT(), target);
    ASSERT_EQ(count(*before, OpCode::Trans), 1) << print(*before);
    for (int S = 2; S <= 4; ++S) {
      auto after = wgmmaModule(wgmmaMatmulBT(), target);
      PassStats stats = runGPU(
          *after, {"pipeline", "allocate-shared-memory", "insert-barriers"}, S);
      ASSERT_EQ(stats.counters["gpu.loads-pipelined"], 2) << print(*after);
      EXPECT_EQ(count(*after, OpCode::Load), 0) << S;
      EXPECT_EQ(count(*after, OpCode::Trans), 0) << S;
      EXPECT_EQ(count(*after, OpCode::MemDescTrans), 1) << S;
      for (int K : {0, 5, 32, 40, 96, 130}) {
        std::vector<float> ref;
        std::vector<float> want =
            runWgmma(*before, K, 300 * S + K, &ref, /*bTransposed=*/true);
        ASSERT_EQ(want, ref) << "K = " << K;
        std::vector<float> got = runWgmma(*after, K, 300 * S + K, nullptr, true);
        ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0)
            << "S = " << S << ", K = " << K;
      }
    }
  }
}
