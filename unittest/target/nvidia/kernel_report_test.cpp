// What compileKernel reports of a kernel besides its PTX: each memory op as
// the emitter lowered it (CompiledKernel::accesses: instruction, elements
// per instruction, instructions per thread) and each shared-memory buffer
// (sharedAllocations). `python -m tritium.tools.explain` prints them per
// source line, so they must agree with the PTX they describe.
#include "tritium/gpu/layouts.h"
#include "tritium/gpu/shared_memory.h"
#include "tritium/ir/printer.h"
#include "tritium/target/nvidia/pipeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

using namespace tritium;

namespace {

std::string kernelFile(const std::string &name) {
  std::ifstream in(std::filesystem::path(TRITIUM_SOURCE_DIR) / "test" / "target" / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

PipelineOptions options(const std::string &target) {
  PipelineOptions o;
  o.target = GPUTarget::parse(target);
  o.numWarps = 4;
  return o;
}

/// PTX instructions (optionally predicated) whose opcode starts with `prefix`.
int countInstructions(const std::string &ptx, const std::string &prefix) {
  std::regex re("^\\s*(@!?%p\\d+\\s+)?" + prefix, std::regex::multiline);
  return (int)std::distance(std::sregex_iterator(ptx.begin(), ptx.end(), re),
                            std::sregex_iterator());
}

/// Instructions per thread the report gives for ops lowered to `instruction`.
int reported(const CompiledKernel &k, const std::string &instruction) {
  int n = 0;
  for (const MemoryAccess &a : k.accesses)
    if (a.instruction == instruction)
      n += a.count;
  return n;
}

TEST(KernelReport, VectorAddMovesSixteenBytesWhenDivisible) {
  auto m = parseModule(kernelFile("vector_add.tir"));
  CompiledKernel k = compileKernel(*m, "add_f32", options("sm_90a")).kernel;
  ASSERT_EQ(k.accesses.size(), 3u);
  for (const MemoryAccess &a : k.accesses) {
    EXPECT_EQ(a.elemBytes, 4);
    EXPECT_EQ(a.elems, 4) << a.op; // 16 bytes: ld.global.v4.f32
    EXPECT_EQ(a.count, 2) << a.op; // 1024 elements / 128 threads / 4
    EXPECT_TRUE(a.loc.known());    // the position in the .tir text
  }
  EXPECT_EQ(k.accesses[0].op, "tt.load");
  EXPECT_EQ(k.accesses[0].instruction, "ld.global");
  EXPECT_EQ(k.accesses[2].op, "tt.store");
  EXPECT_EQ(k.accesses[2].instruction, "st.global");
  EXPECT_EQ(countInstructions(k.ptx, "ld\\.global\\.v4"), reported(k, "ld.global"));
  EXPECT_TRUE(k.sharedAllocations.empty());
}

TEST(KernelReport, VectorAddIsScalarWithoutDivisibility) {
  std::string text = kernelFile("vector_add.tir");
  // Nothing known of the pointers and n: one element per access.
  text = std::regex_replace(text, std::regex(" \\{tt\\.divisibility = 16\\}"), "");
  auto m = parseModule(text);
  CompiledKernel k = compileKernel(*m, "add_f32", options("sm_90a")).kernel;
  ASSERT_EQ(k.accesses.size(), 3u);
  for (const MemoryAccess &a : k.accesses) {
    EXPECT_EQ(a.elems, 1) << a.op;
    EXPECT_EQ(a.count, 8) << a.op;
  }
  EXPECT_EQ(countInstructions(k.ptx, "ld\\.global\\.f32"), reported(k, "ld.global"));
  EXPECT_EQ(countInstructions(k.ptx, "ld\\.global\\.v"), 0);
}

// Every kernel of these files: the report's instructions per thread are the
// PTX's, instruction by instruction, and the buffers fit the kernel's bytes.
TEST(KernelReport, AgreesWithThePTX) {
  struct Case {
    const char *file, *target;
  };
  for (Case c : {Case{"vector_add.tir", "sm_90a"}, Case{"dot.tir", "sm_80"},
                 Case{"dot.tir", "sm_90a"}, Case{"dot_sm90.tir", "sm_90a"},
                 Case{"shared_async_copy.tir", "sm_80"}, Case{"softmax.tir", "sm_90a"}}) {
    gpu::registerLayoutParser(); // shared_async_copy.tir is GPU IR
    auto m = parseModule(kernelFile(c.file));
    std::vector<std::string> names;
    for (auto &f : m->functions())
      names.push_back(f->name());
    for (const std::string &name : names) {
      SCOPED_TRACE(std::string(c.file) + " @" + name + " " + c.target);
      PipelineInput input = isGPUIR(*m) ? PipelineInput::GPUIR : PipelineInput::OptimizedTileIR;
      CompiledKernel k = compileKernel(*m, name, options(c.target), input).kernel;
      EXPECT_FALSE(k.accesses.empty());
      int sync = reported(k, "ld.global+st.shared");
      EXPECT_EQ(countInstructions(k.ptx, "ld\\.global"), reported(k, "ld.global") + sync);
      EXPECT_EQ(countInstructions(k.ptx, "st\\.global"), reported(k, "st.global"));
      EXPECT_EQ(countInstructions(k.ptx, "cp\\.async\\.c[ag]"), reported(k, "cp.async"));
      EXPECT_EQ(countInstructions(k.ptx, "ldmatrix"),
                reported(k, "ldmatrix") + reported(k, "ldmatrix.trans"));
      for (const MemoryAccess &a : k.accesses)
        EXPECT_LE(a.elems * a.elemBytes, 16) << a.op;
      int64_t end = 0;
      for (const SharedAllocation &b : k.sharedAllocations) {
        EXPECT_GT(b.bytes, 0) << b.op;
        EXPECT_EQ(b.offset % gpu::kSharedAlignment, 0) << b.op;
        EXPECT_EQ(b.scratch, b.op != "ttg.local_alloc");
        end = std::max(end, b.offset + b.bytes);
      }
      EXPECT_EQ(end, k.sharedBytes);
    }
  }
}

TEST(KernelReport, PipelinedMatmulOwnsItsBuffers) {
  auto m = parseModule(kernelFile("dot.tir"));
  for (const char *target : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(target);
    CompiledKernel k = compileKernel(*m, "mm_f16", options(target)).kernel;
    int allocs = 0;
    for (const SharedAllocation &b : k.sharedAllocations)
      allocs += b.op == "ttg.local_alloc";
    EXPECT_EQ(allocs, 2); // the A and B stages
    EXPECT_GT(reported(k, "cp.async"), 0);
    EXPECT_GT(k.sharedBytes, 0);
  }
}

} // namespace
