// The layout consumers (planMovement, the PTX emitter's shared-memory
// addresses) on layouts with XOR bases, against brute force: the plan's
// register renaming is checked element by element, and the emitted
// addresses by running the PTX's integer address code for every thread of
// the CTA (a tiny interpreter of the handful of instructions it uses).
#include "../../lib/target/nvidia/emitter.h"
#include "tritium/gpu/conversion.h"
#include "tritium/gpu/layouts.h"
#include "tritium/gpu/shared_memory.h"
#include "tritium/ir/printer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using namespace tritium;
using namespace tritium::gpu;

namespace {

// A 32x32 layout for 4 warps whose bases overlap: lanes XOR rows into the
// column bits (a swizzle), and register bit 2 moves row and column at once.
const char *kXorLayout =
    "#ttg.linear<{register = [[0, 1], [0, 2], [16, 16]], lane = [[0, 4], "
    "[0, 8], [1, 4], [2, 8], [4, 16]], warp = [[8, 0], [16, 0]], block = []}>";
const char *kBlocked = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp "
                       "= [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>";

const GPULayout *parse(const std::string &text, std::vector<int64_t> shape) {
  size_t pos = 0;
  const GPULayout *l = parseLayout(text, pos, shape);
  EXPECT_NE(l, nullptr) << text;
  return l;
}

TEST(XorLayouts, TheTestLayoutOverlaps) {
  LinearLayout ll = parse(kXorLayout, {32, 32})->toLinear({32, 32});
  EXPECT_FALSE(ll.isDisjoint());
  EXPECT_TRUE(ll.isInjective());
  EXPECT_TRUE(ll.isSurjective());
  EXPECT_FALSE(ll.disjointBits({kLane, kWarp}, {kRegister}));
}

TEST(XorLayouts, PlanMovementRenamesRegistersOnlyWhenEveryThreadHoldsIt) {
  registerLayoutParser();
  const Type *f32 = Type::scalar(DType::FP32);
  const GPULayout *x = parse(kXorLayout, {32, 32});
  const GPULayout *b = parse(kBlocked, {32, 32});
  // XOR -> blocked cannot stay in registers.
  MovementPlan p = planMovement(Type::tensor(f32, {32, 32}, x),
                                Type::tensor(f32, {32, 32}, b), {32, 1});
  EXPECT_FALSE(p.inRegisters);
  EXPECT_EQ(p.scratchBytes, 32 * 32 * 4);
  // The same XOR layout with its registers permuted can: brute force that
  // every (register, lane, warp) gets its element.
  std::string permuted =
      "#ttg.linear<{register = [[16, 16], [0, 1], [0, 2]], lane = [[0, 4], "
      "[0, 8], [1, 4], [2, 8], [4, 16]], warp = [[8, 0], [16, 0]], block = "
      "[]}>";
  const GPULayout *y = parse(permuted, {32, 32});
  const Type *tx = Type::tensor(f32, {32, 32}, x), *ty = Type::tensor(f32, {32, 32}, y);
  MovementPlan q = planMovement(tx, ty, {32, 1});
  ASSERT_TRUE(q.inRegisters);
  LinearLayout lx = linearOf(tx), ly = linearOf(ty);
  for (int w = 0; w < 4; ++w)
    for (int lane = 0; lane < 32; ++lane)
      for (int r = 0; r < ly.numRegs(); ++r)
        ASSERT_EQ(lx.apply(q.srcReg[r], lane, w), ly.apply(r, lane, w));
}

// ---- running the address code -------------------------------------------------

struct Access {
  bool store;
  int vec;
  int64_t addr;
};

/// Every shared-memory access of `ptx`, in order, for thread `tid`:
/// evaluates the integer instructions that compute addresses (registers
/// whose inputs are not known stay unknown; an address must be known).
std::vector<Access> sharedAccesses(const std::string &ptx, int64_t tid) {
  std::map<std::string, int64_t> regs;
  auto val = [&](const std::string &s, bool &ok) -> int64_t {
    if (s == "%tid.x")
      return tid;
    if (s == "global_smem")
      return 0;
    if (!s.empty() && s[0] == '%') {
      auto it = regs.find(s);
      if (it == regs.end()) {
        ok = false;
        return 0;
      }
      return it->second;
    }
    return std::stoll(s);
  };
  std::vector<Access> out;
  std::istringstream in(ptx);
  std::string line;
  std::regex insn(R"(^\s*(@%p\d+\s+)?([a-z0-9.]+)\s+(.*);\s*$)");
  std::regex mem(R"(\[(%r\d+)\+(-?\d+)\])");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, insn))
      continue;
    std::string op = m[2], args = m[3];
    if (op.rfind("st.shared", 0) == 0 || op.rfind("ld.shared", 0) == 0) {
      std::smatch a;
      if (!std::regex_search(args, a, mem))
        continue;
      bool ok = true;
      int64_t addr = val(a[1], ok) + std::stoll(a[2]);
      EXPECT_TRUE(ok) << "unknown address in: " << line;
      int vec = 1;
      if (op.find(".v4") != std::string::npos)
        vec = 4;
      else if (op.find(".v2") != std::string::npos)
        vec = 2;
      out.push_back({op[0] == 's', vec, addr});
      continue;
    }
    std::vector<std::string> xs;
    std::stringstream ss(args);
    for (std::string t; std::getline(ss, t, ',');) {
      t.erase(0, t.find_first_not_of(' '));
      t.erase(t.find_last_not_of(' ') + 1);
      xs.push_back(t);
    }
    if (xs.empty() || xs[0].empty() || xs[0][0] != '%')
      continue;
    bool ok = true;
    int64_t r = 0;
    auto u32 = [](int64_t v) { return int64_t(uint32_t(v)); };
    if (op == "mov.u32" && xs.size() == 2)
      r = val(xs[1], ok);
    else if (op == "shfl.sync.idx.b32" && xs.size() == 5 && xs[2] == "0")
      r = val(xs[1], ok); // the warp index broadcast from lane 0: the same
                          // in every lane (tid >> 5), so lane 0's is ours
    else if (op == "and.b32")
      r = val(xs[1], ok) & val(xs[2], ok);
    else if (op == "xor.b32")
      r = val(xs[1], ok) ^ val(xs[2], ok);
    else if (op == "shr.u32")
      r = u32(val(xs[1], ok)) >> val(xs[2], ok);
    else if (op == "add.s32")
      r = val(xs[1], ok) + val(xs[2], ok);
    else if (op == "mad.lo.s32")
      r = val(xs[1], ok) * val(xs[2], ok) + val(xs[3], ok);
    else if (op == "bfe.u32" || op == "bfe.s32") {
      int64_t v = u32(val(xs[1], ok)), pos = val(xs[2], ok), len = val(xs[3], ok);
      r = (v >> pos) & ((int64_t(1) << len) - 1);
      if (op == "bfe.s32" && ((r >> (len - 1)) & 1))
        r -= int64_t(1) << len; // sign-extended: the all-ones mask
      r = int64_t(int32_t(uint32_t(r)));
    } else {
      regs.erase(xs[0]); // something else: the register is not an address
      continue;
    }
    if (ok)
      regs[xs[0]] = int64_t(int32_t(uint32_t(r)));
    else
      regs.erase(xs[0]);
  }
  return out;
}

/// Checks, for every thread of `numWarps` warps, that the shared accesses
/// of `ptx` come in `phases` (store or load, in a layout of a tensor with
/// `cols` columns), each register at 4 * its element's row-major index
/// under the scratch's swizzle `sw` (plus the scratch's offset, taken from
/// thread 0's first store).
void expectAddresses(
    const std::string &ptx,
    const std::vector<std::pair<bool, const LinearLayout *>> &phases,
    int64_t cols, int numWarps, const ScratchSwizzle &sw) {
  // A scratch's offset, from thread 0's first store into it; the same for
  // every thread.
  std::vector<int64_t> bases(phases.size(), 0);
  for (int tid = 0; tid < 32 * numWarps; ++tid) {
    std::vector<Access> acc = sharedAccesses(ptx, tid);
    size_t i = 0;
    for (size_t ph = 0; ph < phases.size(); ++ph) {
      const LinearLayout &ll = *phases[ph].second;
      for (int r = 0; r < ll.numRegs();) {
        ASSERT_LT(i, acc.size()) << "too few shared accesses";
        const Access &a = acc[i++];
        ASSERT_EQ(a.store, phases[ph].first) << "phase " << ph;
        for (int k = 0; k < a.vec; ++k, ++r) {
          Basis c = ll.apply(r, tid % 32, tid / 32);
          int64_t want = 4 * sw.apply(c[0] * cols + c[1]);
          if (tid == 0 && ph % 2 == 0 && r == 0)
            bases[ph] = bases[ph + 1] = a.addr - want;
          ASSERT_EQ(a.addr + 4 * k, bases[ph] + want)
              << "thread " << tid << " phase " << ph << " register " << r;
        }
      }
    }
    EXPECT_EQ(i, acc.size());
  }
}

/// blocked -> XOR -> blocked through shared memory: every thread's stores
/// and loads must address, register by register, 4 * the row-major index
/// of the element its layout puts there.
TEST(XorLayouts, SharedMemoryAddressesFollowTheXorMap) {
  registerLayoutParser();
  std::string text =
      "tt.func @xor_move() attributes {kernel = true, num_warps = 4} {\n"
      "  %x = arith.constant {value = 1.0} : tensor<32x32xf32, " +
      std::string(kBlocked) + ">\n"
      "  %y = ttg.convert_layout %x : tensor<32x32xf32, " + kXorLayout + ">\n"
      "  %z = ttg.convert_layout %y : tensor<32x32xf32, " + kBlocked + ">\n"
      "  tt.return\n}\n";
  auto m = parseModule(text, "xor_move");
  Function *f = m->lookup("xor_move");
  ASSERT_NE(f, nullptr);
  GPUOptions o;
  o.target = GPUTarget::parse("sm_90a");
  o.numWarps = 4;
  PassStats stats;
  allocateSharedMemory(*m, kDefaultSharedLimit, "sm_90a", stats);
  insertBarriers(*m, stats);
  nvidia::Emitter e(*f, o);
  std::vector<KernelParam> params;
  std::string ptx;
  // A constant moved there and back: only the movement touches memory.
  try {
    ptx = e.emitKernel(params);
  } catch (const std::exception &ex) {
    FAIL() << ex.what();
  }
  EXPECT_NE(ptx.find("xor.b32"), std::string::npos) << ptx;
  // ptxas accepts it.
  const char *ptxas = "/usr/local/cuda/bin/ptxas";
  if (FILE *fp = std::fopen(ptxas, "r")) {
    std::fclose(fp);
    std::string file = ::testing::TempDir() + "xor_move.ptx";
    std::FILE *out = std::fopen(file.c_str(), "w");
    ASSERT_NE(out, nullptr);
    std::fputs(ptx.c_str(), out);
    std::fclose(out);
    std::string cmd = std::string(ptxas) + " -arch=sm_90a '" + file +
                      "' -o /dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << ptx;
  }

  LinearLayout lb = parse(kBlocked, {32, 32})->toLinear({32, 32});
  LinearLayout lx = parse(kXorLayout, {32, 32})->toLinear({32, 32});
  // The four phases: store blocked, load XOR, store XOR, load blocked.
  // The scratch's 16-byte chunks are XOR-swizzled by row (3 bits).
  ScratchSwizzle sw = scratchSwizzle(
      Type::tensor(Type::scalar(DType::FP32), {32, 32}, parse(kBlocked, {32, 32})),
      4);
  ASSERT_EQ(sw.bits, 3);
  expectAddresses(ptx, {{true, &lb}, {false, &lx}, {true, &lx}, {false, &lb}},
                  32, 4, sw);
}

/// An mma.sync accumulator and a dot operand (disjoint bases, copies across
/// warps) lower like any layout: an elementwise op, then through shared
/// memory into a blocked layout, with the addresses brute-forced.
TEST(XorLayouts, MmaLayoutsMoveThroughSharedMemory) {
  registerLayoutParser();
  std::string mma = "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, "
                    "warpsPerCTA = [2, 2], instrShape = [16, 8]}>";
  std::string dotA = "#ttg.dot_op<{opIdx = 0, parent = " + mma + ", kWidth = 2}>";
  std::string text =
      "tt.func @mma_move() attributes {kernel = true, num_warps = 4} {\n"
      "  %x = arith.constant {value = 1.0} : tensor<32x32xf32, " + mma + ">\n"
      "  %y = arith.addf %x, %x : tensor<32x32xf32, " + mma + ">\n"
      "  %z = ttg.convert_layout %y : tensor<32x32xf32, " + kBlocked + ">\n"
      "  %a = arith.constant {value = 1.0} : tensor<32x32xf32, " + dotA + ">\n"
      "  %b = ttg.convert_layout %a : tensor<32x32xf32, " + kBlocked + ">\n"
      "  tt.return\n}\n";
  auto m = parseModule(text, "mma_move");
  Function *f = m->lookup("mma_move");
  ASSERT_NE(f, nullptr);
  GPUOptions o;
  o.target = GPUTarget::parse("sm_90a");
  o.numWarps = 4;
  PassStats stats;
  allocateSharedMemory(*m, kDefaultSharedLimit, "sm_90a", stats);
  insertBarriers(*m, stats);
  nvidia::Emitter e(*f, o);
  std::vector<KernelParam> params;
  std::string ptx = e.emitKernel(params);
  LinearLayout lm = parse(mma, {32, 32})->toLinear({32, 32});
  LinearLayout la = parse(dotA, {32, 32})->toLinear({32, 32});
  LinearLayout lb = parse(kBlocked, {32, 32})->toLinear({32, 32});
  ScratchSwizzle sw = scratchSwizzle(
      Type::tensor(Type::scalar(DType::FP32), {32, 32}, parse(kBlocked, {32, 32})),
      4);
  expectAddresses(ptx, {{true, &lm}, {false, &lb}, {true, &la}, {false, &lb}},
                  32, 4, sw);
}

/// The scratch swizzle, by brute force over row lengths and element sizes:
/// a permutation of the scratch that keeps every 16-byte chunk whole, and
/// the write an mma accumulator makes (a quad group's 8 rows at one column,
/// 4 lanes x 4 bytes each) or a column-wise read (8 rows, one 16-byte
/// chunk each) touches 8 different chunks of the 128-byte bank lines: no
/// bank conflicts where row-major rows of 128 bytes or more had 8-way ones.
TEST(ScratchSwizzle, PermutesWholeChunksAndSpreadsAColumnOverTheBanks) {
  registerLayoutParser();
  for (int64_t eb : {1, 2, 4, 8}) {
    for (int64_t cols : {8, 16, 32, 64, 128, 256}) {
      int64_t rows = 64, n = rows * cols;
      const char *blocked = "#ttg.blocked<{sizePerThread = [1, 1], "
                            "threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], "
                            "order = [1, 0]}>";
      DType dt = eb == 1 ? DType::I8 : eb == 2 ? DType::FP16
                 : eb == 4 ? DType::FP32 : DType::FP64;
      ScratchSwizzle sw = scratchSwizzle(
          Type::tensor(Type::scalar(dt), {rows, cols}, parse(blocked, {rows, cols})),
          eb);
      std::string at = "eb " + std::to_string(eb) + " cols " + std::to_string(cols);
      std::vector<bool> seen(n, false);
      int64_t chunk = 16 / std::min<int64_t>(eb, 16);
      for (int64_t i = 0; i < n; ++i) {
        int64_t j = sw.apply(i);
        ASSERT_GE(j, 0) << at;
        ASSERT_LT(j, n) << at;
        ASSERT_FALSE(seen[j]) << at << ": " << i << " -> " << j;
        seen[j] = true;
        ASSERT_EQ(j % chunk, i % chunk) << at; // within-chunk bits kept
      }
      if (cols * eb < 16)
        continue; // a row within one chunk: consecutive rows already differ
      // One column (its chunk) over 8 consecutive rows: 8 distinct chunks
      // of a 128-byte line (bank groups), for every column and row group.
      for (int64_t r0 = 0; r0 < rows; r0 += 8)
        for (int64_t c = 0; c < cols; c += chunk) {
          std::set<int64_t> lines;
          for (int64_t r = r0; r < r0 + 8; ++r)
            lines.insert((sw.apply(r * cols + c) * eb / 16) % 8);
          EXPECT_EQ(lines.size(), 8u) << at << " rows " << r0 << " column " << c;
        }
    }
  }
}

} // namespace
