// Shared memory as a value: the CPU executor's semantics of memdescs, async
// copies and barriers, and kernel parameters of any size and alignment (a
// 128-byte, 64-aligned TMA descriptor): their PTX declaration assembles and
// the launcher hands the driver the caller's bytes.
#include "tritium/exec/executor.h"
#include "tritium/gpu/layouts.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"
#include "tritium/runtime/launcher.h"
#include "tritium/runtime/ptxas.h"
#include "tritium/target/nvidia/ptx.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace tritium;

namespace {

/// A 16x16 f32 tile: loads `in` (row-major), passes it through shared
/// memory in `layout` (buffer 1 of 2, or by an async copy), stores `out`.
std::string roundTripKernel(const std::string &layout, bool asyncCopy,
                            bool masked = false) {
  std::string md = "!ttg.memdesc<16x16xf32, " + layout + ", mutable>";
  std::string s = R"(tt.func @k(%in: !tt.ptr<f32>, %out: !tt.ptr<f32>) {
  %r = tt.make_range {end = 16, start = 0} : tensor<16xi32>
  %r2 = tt.expand_dims %r {axis = 1} : tensor<16x1xi32>
  %c16 = arith.constant {value = 16} : tensor<16x1xi32>
  %rows = arith.muli %r2, %c16 : tensor<16x1xi32>
  %c2 = tt.expand_dims %r {axis = 0} : tensor<1x16xi32>
  %rb = tt.broadcast %rows : tensor<16x16xi32>
  %cb = tt.broadcast %c2 : tensor<16x16xi32>
  %offs = arith.addi %rb, %cb : tensor<16x16xi32>
  %ib = tt.splat %in : tensor<16x16x!tt.ptr<f32>>
  %ip = tt.addptr %ib, %offs : tensor<16x16x!tt.ptr<f32>>
  %ob = tt.splat %out : tensor<16x16x!tt.ptr<f32>>
  %op = tt.addptr %ob, %offs : tensor<16x16x!tt.ptr<f32>>
  %bufs = ttg.local_alloc : !ttg.memdesc<2x16x16xf32, )" +
                  layout + R"(, mutable>
  %one = arith.constant {value = 1} : i32
  %buf = ttg.memdesc_index %bufs, %one : )" +
                  md + "\n";
  if (asyncCopy) {
    s += masked ? R"(  %c100 = arith.constant {value = 100} : tensor<16x16xi32>
  %mask = arith.cmpi %offs, %c100 {predicate = "slt"} : tensor<16x16xi1>
  %other = arith.constant {value = -1.0} : tensor<16x16xf32>
  %t = ttg.async_copy_global_to_local %ip, %buf, %mask, %other : !ttg.async.token
)"
                : "  %t = ttg.async_copy_global_to_local %ip, %buf : "
                  "!ttg.async.token\n";
    s += R"(  %g = ttg.async_commit_group %t : !ttg.async.token
  %w = ttg.async_wait %g {num = 0} : !ttg.async.token
  %y = ttg.local_load %buf, %w : tensor<16x16xf32>
)";
  } else {
    s += R"(  %x = tt.load %ip : tensor<16x16xf32>
  ttg.local_store %x, %buf
  gpu.barrier
  %y = ttg.local_load %buf : tensor<16x16xf32>
)";
  }
  s += R"(  tt.store %op, %y
  ttg.local_dealloc %bufs
  tt.return
}
)";
  return s;
}

std::vector<float> run(const std::string &text) {
  gpu::registerLayoutParser();
  auto m = parseModule(text, "t.tir");
  verify(*m);
  std::vector<float> in(256), out(256, 0.0f);
  for (int i = 0; i < 256; ++i)
    in[i] = float(i) * 0.5f + 1.0f;
  execute(*m, "k", {1, 1, 1},
          {ExecPointer{(uint64_t)in.data(), in.size() * 4},
           ExecPointer{(uint64_t)out.data(), out.size() * 4}});
  return out;
}

const char *kSwizzled =
    "#ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 4, order = [1, "
    "0]}>";
const char *kNVMMA = "#ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed "
                     "= false, elementBitWidth = 32}>";

} // namespace

TEST(SharedMemoryExec, StoreThenLoadThroughASwizzledLayoutIsTheIdentity) {
  for (const char *layout : {kSwizzled, kNVMMA}) {
    std::vector<float> out = run(roundTripKernel(layout, false));
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(out[i], float(i) * 0.5f + 1.0f) << layout << " element " << i;
  }
}

TEST(SharedMemoryExec, AsyncCopyCompletesWithMaskAndOther) {
  std::vector<float> out = run(roundTripKernel(kSwizzled, true));
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(out[i], float(i) * 0.5f + 1.0f) << i;
  out = run(roundTripKernel(kNVMMA, true, /*masked=*/true));
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(out[i], i < 100 ? float(i) * 0.5f + 1.0f : -1.0f) << i;
}

TEST(SharedMemoryExec, BuffersOfAMultiBufferedMemDescAreDistinct) {
  gpu::registerLayoutParser();
  // Buffer 0 gets 1.0, buffer 1 gets 2.0; loading buffer 0 gives 1.0 back.
  const char *text = R"(tt.func @k(%out: !tt.ptr<f32>) {
  %bufs = ttg.local_alloc : !ttg.memdesc<2x8x8xf32, #ttg.swizzled_shared<{vec = 2, perPhase = 1, maxPhase = 4, order = [1, 0]}>, mutable>
  %i0 = arith.constant {value = 0} : i32
  %i1 = arith.constant {value = 1} : i32
  %b0 = ttg.memdesc_index %bufs, %i0 : !ttg.memdesc<8x8xf32, #ttg.swizzled_shared<{vec = 2, perPhase = 1, maxPhase = 4, order = [1, 0]}>, mutable>
  %b1 = ttg.memdesc_index %bufs, %i1 : !ttg.memdesc<8x8xf32, #ttg.swizzled_shared<{vec = 2, perPhase = 1, maxPhase = 4, order = [1, 0]}>, mutable>
  %one = arith.constant {value = 1.0} : tensor<8x8xf32>
  %two = arith.constant {value = 2.0} : tensor<8x8xf32>
  ttg.local_store %one, %b0
  ttg.local_store %two, %b1
  %x = ttg.local_load %b0 : tensor<8x8xf32>
  %s = tt.reduce %x {axis = 1, kind = "sum"} : tensor<8xf32>
  %t = tt.reduce %s {axis = 0, kind = "sum"} : f32
  tt.store %out, %t
  tt.return
}
)";
  auto m = parseModule(text, "t.tir");
  verify(*m);
  float out = 0;
  execute(*m, "k", {1, 1, 1}, {ExecPointer{(uint64_t)&out, 4}});
  EXPECT_EQ(out, 64.0f);
}

TEST(SharedMemoryExec, WaitingOnAnUninitialisedBarrierFails) {
  gpu::registerLayoutParser();
  const char *text = R"(tt.func @k(%phase: i32) {
  %bar = ttg.local_alloc : !ttg.memdesc<1xi64, #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
  ttng.wait_barrier %bar, %phase loc("k.py":7:5)
  tt.return
}
)";
  auto m = parseModule(text, "t.tir");
  verify(*m);
  try {
    execute(*m, "k", {1, 1, 1}, {int64_t(0)});
    FAIL() << "expected an ExecutionError";
  } catch (const ExecutionError &e) {
    EXPECT_NE(std::string(e.what()).find("uninitialised barrier"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.loc.line, 7);
  }
  // Initialised, the same wait passes (the copy it waits for is done).
  std::string ok = text;
  ok.insert(ok.find("  ttng.wait_barrier"),
            "  ttng.init_barrier %bar {count = 1}\n"
            "  ttng.arrive_barrier %bar\n");
  auto m2 = parseModule(ok, "t.tir");
  verify(*m2);
  EXPECT_NO_THROW(execute(*m2, "k", {1, 1, 1}, {int64_t(0)}));
}

// ---------------------------------------------------------------------------
// Kernel parameters of any size and alignment
// ---------------------------------------------------------------------------

TEST(KernelParams, DescriptorParameterDeclarationAssembles) {
  KernelParam desc{KernelParam::Kind::Bytes, "desc", 128, 64};
  EXPECT_EQ(paramBytes(desc), 128);
  std::string decl = ptxBytesParamDecl(desc, "k_param_1");
  EXPECT_EQ(decl, ".param .align 64 .b8 k_param_1[128]");
  // A kernel that reads the last 8 bytes of the descriptor and stores them.
  std::string ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
                    ".visible .entry k(\n\t.param .u64 k_param_0,\n\t" +
                    decl +
                    "\n)\n{\n\t.reg .b64 %rd<3>;\n"
                    "\tld.param.u64 %rd1, [k_param_0];\n"
                    "\tld.param.u64 %rd2, [k_param_1+120];\n"
                    "\tst.global.u64 [%rd1], %rd2;\n\tret;\n}\n";
  if (!runtime::findPtxas())
    GTEST_SKIP() << "no ptxas";
  for (const char *arch : {"sm_90a", "sm_80"}) {
    std::string text = ptx;
    if (std::string(arch) == "sm_80")
      text.replace(text.find("sm_90a"), 6, "sm_80");
    EXPECT_NO_THROW(runtime::runPtxas(text, arch)) << arch;
  }
}

TEST(KernelParams, LauncherPassesTheDescriptorsBytes) {
  std::vector<KernelParam> params = {
      {KernelParam::Kind::Pointer, "out"},
      {KernelParam::Kind::Bytes, "desc", 128, 64},
      {KernelParam::Kind::Int32, "n"},
  };
  alignas(64) unsigned char desc[128];
  for (int i = 0; i < 128; ++i)
    desc[i] = (unsigned char)(i * 3 + 1);
  runtime::ArgSlot slots[3];
  slots[0].bits = 0x1234;
  slots[1] = runtime::packBytes(params[1], desc, sizeof desc, "desc");
  slots[2] = runtime::packInt(KernelParam::Kind::Int32, 7, "n");
  void *ptrs[3] = {};
  runtime::launchArgPointers("k", params, slots, ptrs);
  EXPECT_EQ(ptrs[0], &slots[0].bits);
  EXPECT_EQ(ptrs[1], (void *)desc);
  EXPECT_EQ(std::memcmp(ptrs[1], desc, 128), 0);
  int32_t n;
  std::memcpy(&n, ptrs[2], 4);
  EXPECT_EQ(n, 7);
  EXPECT_STREQ(runtime::kindName(KernelParam::Kind::Bytes), "bytes");
  EXPECT_EQ(runtime::parseKind("bytes"), KernelParam::Kind::Bytes);
}

TEST(KernelParams, DescriptorOfTheWrongSizeOrMissingIsRejected) {
  KernelParam desc{KernelParam::Kind::Bytes, "desc", 128, 64};
  unsigned char small[64] = {};
  EXPECT_THROW(runtime::packBytes(desc, small, sizeof small, "desc"),
               runtime::CudaError);
  EXPECT_THROW(runtime::packInt(KernelParam::Kind::Bytes, 1, "desc"),
               runtime::CudaError);
  KernelParam i32{KernelParam::Kind::Int32, "n"};
  EXPECT_THROW(runtime::packBytes(i32, small, 4, "n"), runtime::CudaError);
  std::vector<KernelParam> params = {desc};
  runtime::ArgSlot slot; // no data
  void *ptr = nullptr;
  EXPECT_THROW(runtime::launchArgPointers("k", params, &slot, &ptr),
               runtime::CudaError);
}

// ---------------------------------------------------------------------------
// The memory-space trait
// ---------------------------------------------------------------------------

TEST(SharedMemoryOps, EveryOpThatTouchesMemoryNamesItsSpace) {
  for (size_t i = 0; i < static_cast<size_t>(OpCode::NumOps); ++i) {
    const OpInfo &info = opInfo(static_cast<OpCode>(i));
    if (info.traits & (READ | WRITE))
      EXPECT_TRUE(info.traits & (GLOBAL | SHARED)) << info.name;
    if (info.traits & (GLOBAL | SHARED))
      EXPECT_TRUE(info.traits & (READ | WRITE)) << info.name;
  }
  EXPECT_TRUE(opInfo(OpCode::Load).traits & GLOBAL);
  EXPECT_TRUE(opInfo(OpCode::AtomicRMW).traits & GLOBAL);
  EXPECT_TRUE(opInfo(OpCode::LocalLoad).traits & SHARED);
  EXPECT_FALSE(opInfo(OpCode::LocalLoad).traits & GLOBAL);
  unsigned copy = opInfo(OpCode::AsyncCopyGlobalToLocal).traits;
  EXPECT_TRUE((copy & GLOBAL) && (copy & SHARED));
}
