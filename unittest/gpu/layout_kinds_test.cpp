// The tensor-core layout kinds against brute force: for every (register,
// lane, warp) of a layout, the element its toLinear map gives must be the
// one an enumeration written straight from the PTX ISA's fragment
// descriptions gives (groupID = lane >> 2, threadID_in_group = lane % 4),
// with the tile repetition spelt out as loops. Plus inverses where the map
// is bijective, invertAndCompose against a blocked layout where it holds
// copies, and the text round trip of every kind.
#include "tritium/gpu/layouts.h"
#include "tritium/gpu/mma_layouts.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

using namespace tritium;
using namespace tritium::gpu;

namespace {

using Coord = std::pair<int64_t, int64_t>; // (row, col)
/// (register, lane, warp) -> element.
using Reference = std::function<Coord(int64_t, int64_t, int64_t)>;

int64_t groupID(int64_t lane) { return lane >> 2; }
int64_t threadInGroup(int64_t lane) { return lane % 4; }

// ---- the PTX ISA's fragments -------------------------------------------------

/// mma.m16n8k* accumulator C/D, register i of 4: row groupID (+8 for c2,
/// c3), column 2 * threadID_in_group + (i & 1).
Coord mmaC(int64_t i, int64_t lane) {
  return {groupID(lane) + (i >= 2 ? 8 : 0), threadInGroup(lane) * 2 + (i & 1)};
}

/// mma.m16n8k16 A (16-bit), element i of 8 (a0..a7): row groupID for a0,
/// a1, a4, a5 and groupID + 8 otherwise; column 2 * threadID_in_group +
/// (i & 1), + 8 for a4..a7.
Coord mmaA16(int64_t i, int64_t lane) {
  int64_t row = groupID(lane) + ((i < 2 || (i >= 4 && i < 6)) ? 0 : 8);
  int64_t col = threadInGroup(lane) * 2 + (i & 1) + (i >= 4 ? 8 : 0);
  return {row, col};
}
/// mma.m16n8k16 B (16-bit), element i of 4: row (k) 2 * threadID_in_group +
/// (i & 1), + 8 for b2, b3; column groupID.
Coord mmaB16(int64_t i, int64_t lane) {
  return {threadInGroup(lane) * 2 + (i & 1) + (i >= 2 ? 8 : 0), groupID(lane)};
}
/// mma.m16n8k32 A (8-bit), element i of 16: row groupID for a0..a3 and
/// a8..a11, else groupID + 8; column 4 * threadID_in_group + (i & 3), + 16
/// for a8..a15.
Coord mmaA8(int64_t i, int64_t lane) {
  int64_t row = groupID(lane) + ((i < 4 || (i >= 8 && i < 12)) ? 0 : 8);
  int64_t col = threadInGroup(lane) * 4 + (i & 3) + (i >= 8 ? 16 : 0);
  return {row, col};
}
/// mma.m16n8k32 B (8-bit), element i of 8: row 4 * threadID_in_group +
/// (i & 3), + 16 for b4..b7; column groupID.
Coord mmaB8(int64_t i, int64_t lane) {
  return {threadInGroup(lane) * 4 + (i & 3) + (i >= 4 ? 16 : 0), groupID(lane)};
}
/// mma.m16n8k8 A (tf32), a0..a3: row groupID (+8 for a1, a3), column
/// threadID_in_group (+4 for a2, a3).
Coord mmaATf32(int64_t i, int64_t lane) {
  return {groupID(lane) + ((i & 1) ? 8 : 0),
          threadInGroup(lane) + (i >= 2 ? 4 : 0)};
}
/// mma.m16n8k8 B (tf32), b0, b1: row threadID_in_group (+4 for b1), column
/// groupID.
Coord mmaBTf32(int64_t i, int64_t lane) {
  return {threadInGroup(lane) + (i ? 4 : 0), groupID(lane)};
}
/// wgmma .m64nNk16 D, register i of N/2, in warp `w` of the warpgroup:
/// row 16 * (w % 4) + groupID (+8 when i % 4 >= 2), column 8 * (i / 4) +
/// 2 * threadID_in_group + (i & 1).
Coord wgmmaD(int64_t i, int64_t lane, int64_t w) {
  return {16 * (w % 4) + groupID(lane) + (i % 4 >= 2 ? 8 : 0),
          8 * (i / 4) + threadInGroup(lane) * 2 + (i & 1)};
}
/// ldmatrix.x4 (b16): matrix j's row r comes from the address of thread
/// 8j + r; thread t receives, in register j, elements 2 * (t % 4) and +1 of
/// row t / 4 of matrix j. For a 16x16 tile whose four 8x8 matrices are
/// (rows 0-7 | 8-15) x (cols 0-7 | 8-15) in the order top-left,
/// bottom-left, top-right, bottom-right (what the A operand wants).
Coord ldmatrixX4(int64_t j, int64_t e, int64_t lane) {
  return {8 * (j & 1) + lane / 4, 8 * (j >> 1) + 2 * (lane % 4) + e};
}
/// ldmatrix.x4.trans on a 16x16 B tile stored K-major (rows = K): thread t
/// receives elements (row 2 * (t % 4) + e, column t / 4) of matrix j, the
/// matrices ordered (K 0-7 | 8-15) fastest, then (N 0-7 | 8-15).
Coord ldmatrixX4Trans(int64_t j, int64_t e, int64_t lane) {
  return {8 * (j & 1) + 2 * (lane % 4) + e, 8 * (j >> 1) + lane / 4};
}

// ---- whole layouts: the fragment tiled by warps and register repeats -------

int64_t divUp(int64_t a, int64_t b) { return std::max<int64_t>(1, a / b); }

/// The accumulator of `l` over `shape`: register r is fragment register
/// r % perTile of repeat r / perTile (N-fastest over the repeats); warp w is
/// (w / wn, w % wn) for mma.sync and (w % wm, w / wm) for wgmma. Coordinates
/// beyond the tensor wrap (the warps that hold copies).
Reference accumulatorReference(const NvidiaMmaLayout &l,
                               const std::vector<int64_t> &shape) {
  int64_t wm = l.warpsPerCTA[0], wn = l.warpsPerCTA[1];
  bool hopper = l.isHopper();
  int64_t tileN = hopper ? l.instrShape[1] : 8;
  int64_t perTile = hopper ? tileN / 2 : 4;
  int64_t repsN = divUp(shape[1], tileN * wn);
  return [=](int64_t r, int64_t lane, int64_t w) -> Coord {
    int64_t i = r % perTile, rep = r / perTile;
    int64_t repN = rep % repsN, repM = rep / repsN;
    int64_t warpM = hopper ? w % wm : w / wn;
    int64_t warpN = hopper ? w / wm : w % wn;
    Coord f = hopper ? wgmmaD(i, lane, warpM % 4) : mmaC(i, lane);
    int64_t row = hopper ? 64 * (warpM / 4) + f.first : 16 * warpM + f.first;
    int64_t col = tileN * warpN + f.second;
    row += repM * 16 * wm;
    col += repN * tileN * wn;
    return {row % shape[0], col % shape[1]};
  };
}

/// Operand opIdx of an mma with `parent`: the PTX fragment of kWidth's
/// element width, repeats K-fastest, warps as the parent's with those along
/// the other operand's dim holding copies.
Reference operandReference(const DotOperandLayout &l,
                           const std::vector<int64_t> &shape) {
  const NvidiaMmaLayout &p = *l.parent;
  int64_t wm = p.warpsPerCTA[0], wn = p.warpsPerCTA[1];
  int kw = l.kWidth;
  bool a = l.opIdx == 0;
  int64_t tileK = 8 * kw, tileO = a ? 16 : 8, wO = a ? wm : wn;
  int64_t perTile = a ? 4 * kw : 2 * kw;
  int64_t repsK = divUp(shape[a ? 1 : 0], tileK);
  return [=](int64_t r, int64_t lane, int64_t w) -> Coord {
    int64_t i = r % perTile, rep = r / perTile;
    int64_t repK = rep % repsK, repO = rep / repsK;
    int64_t warpM = p.isHopper() ? w % wm : w / wn;
    int64_t warpN = p.isHopper() ? w / wm : w % wn;
    int64_t warpO = a ? warpM : warpN;
    Coord f;
    if (a)
      f = kw == 2 ? mmaA16(i, lane) : kw == 4 ? mmaA8(i, lane) : mmaATf32(i, lane);
    else
      f = kw == 2 ? mmaB16(i, lane) : kw == 4 ? mmaB8(i, lane) : mmaBTf32(i, lane);
    int64_t o = (a ? f.first : f.second) + tileO * warpO + repO * tileO * wO;
    int64_t k = (a ? f.second : f.first) + repK * tileK;
    Coord c = a ? Coord{o, k} : Coord{k, o};
    return {c.first % shape[0], c.second % shape[1]};
  };
}

/// Compares `ll` with `ref` at every (register, lane, warp); the register
/// count must be what the reference expects.
void expectMatches(const LinearLayout &ll, const Reference &ref,
                   int64_t numRegs, int numWarps, const std::string &what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(ll.numRegs(), numRegs);
  ASSERT_EQ(ll.inSize(kLane), 32);
  ASSERT_EQ(ll.numWarps(), numWarps);
  int bad = 0;
  for (int64_t w = 0; w < numWarps; ++w)
    for (int64_t lane = 0; lane < 32; ++lane)
      for (int64_t r = 0; r < numRegs; ++r) {
        Basis got = ll.apply((int)r, (int)lane, (int)w);
        Coord want = ref(r, lane, w);
        if (got != Basis{want.first, want.second} && bad++ < 5)
          ADD_FAILURE() << "register " << r << " lane " << lane << " warp "
                        << w << ": layout (" << got[0] << ", " << got[1]
                        << "), PTX (" << want.first << ", " << want.second
                        << ")";
      }
  EXPECT_EQ(bad, 0);
}

/// Every element is held; when the layout is bijective, its inverse maps
/// each element back to its (register, lane, warp); otherwise
/// invertAndCompose into a blocked layout of the same tensor finds, for
/// every index, a blocked holder of the same element.
void expectInverses(const LinearLayout &ll, int numWarps,
                    const std::string &what) {
  SCOPED_TRACE(what);
  std::vector<int64_t> shape = ll.shape();
  std::set<Basis> seen;
  for (int w = 0; w < numWarps; ++w)
    for (int lane = 0; lane < 32; ++lane)
      for (int r = 0; r < ll.numRegs(); ++r)
        seen.insert(ll.apply(r, lane, w));
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  ASSERT_EQ((int64_t)seen.size(), elements) << "an element is lost";
  if (ll.isInjective()) {
    LinearLayout inv = ll.invert();
    for (int w = 0; w < numWarps; ++w)
      for (int lane = 0; lane < 32; ++lane)
        for (int r = 0; r < ll.numRegs(); ++r) {
          Basis c = ll.apply(r, lane, w);
          ASSERT_EQ(inv.apply(c), (Basis{r, lane, w, 0}));
        }
  }
  LinearLayout blocked = BlockedLayout::defaultFor(shape, numWarps)->toLinear(shape);
  LinearLayout x = ll.invertAndCompose(blocked);
  for (int w = 0; w < numWarps; ++w)
    for (int lane = 0; lane < 32; lane += 3)
      for (int r = 0; r < ll.numRegs(); ++r) {
        Basis hw = x.apply(std::vector<int64_t>{r, lane, w, 0});
        ASSERT_EQ(blocked.apply(hw), ll.apply(r, lane, w));
      }
}

/// str() parses back to the same interned layout.
void expectRoundTrip(const GPULayout *l, const std::vector<int64_t> &shape) {
  std::string text = "x " + l->str() + ">";
  size_t pos = 2;
  EXPECT_EQ(parseLayout(text, pos, shape), l) << text;
  EXPECT_EQ(text.substr(pos), ">");
}

/// A batched (rank-3) layout against the 2-D reference `ref2` of its
/// matrix part (registers 0..regs2-1, warps 0..warps2-1): register r is
/// matrix register r % regs2 of batch repeat r / regs2, warp w is matrix
/// warp w % warps2 of batch warp w / warps2, and the batch coordinate is
/// batch warp + wB * batch repeat (modulo the batch: warps beyond it hold
/// copies).
void expectBatchedMatches(const LinearLayout &ll, const Reference &ref2,
                          int64_t regs2, int64_t warps2, int64_t wB,
                          int64_t batch, const std::string &what) {
  SCOPED_TRACE(what);
  int64_t repsB = divUp(batch, wB);
  ASSERT_EQ(ll.numRegs(), regs2 * repsB);
  ASSERT_EQ(ll.numWarps(), warps2 * wB);
  int bad = 0;
  for (int64_t w = 0; w < warps2 * wB; ++w)
    for (int64_t lane = 0; lane < 32; ++lane)
      for (int64_t r = 0; r < ll.numRegs(); ++r) {
        Coord m = ref2(r % regs2, lane, w % warps2);
        Basis want = {(w / warps2 + wB * (r / regs2)) % batch, m.first,
                      m.second};
        Basis got = ll.apply((int)r, (int)lane, (int)w);
        if (got != want && bad++ < 5)
          ADD_FAILURE() << "register " << r << " lane " << lane << " warp "
                        << w << ": layout (" << got[0] << ", " << got[1]
                        << ", " << got[2] << "), PTX (" << want[0] << ", "
                        << want[1] << ", " << want[2] << ")";
      }
  EXPECT_EQ(bad, 0);
}

// ---- the tests --------------------------------------------------------------

TEST(MmaLayouts, MmaSyncAccumulatorMatchesThePTXFragment) {
  struct Case {
    std::vector<int64_t> warps, shape;
  };
  std::vector<Case> cases = {
      {{2, 2}, {128, 64}}, {{4, 1}, {128, 64}}, {{2, 4}, {128, 64}},
      {{4, 2}, {128, 64}}, {{1, 1}, {16, 8}},   {{2, 2}, {32, 16}},
      {{4, 2}, {64, 128}}, {{8, 1}, {128, 128}}, {{2, 2}, {16, 16}},
  };
  for (const Case &c : cases) {
    auto *l = NvidiaMmaLayout::get(2, 0, c.warps, {16, 8});
    LinearLayout ll = l->toLinear(c.shape);
    int nw = l->numWarps();
    int64_t regs = 4 * divUp(c.shape[0], 16 * c.warps[0]) *
                   divUp(c.shape[1], 8 * c.warps[1]);
    std::string what = l->str() + " on " + std::to_string(c.shape[0]) + "x" +
                       std::to_string(c.shape[1]);
    expectMatches(ll, accumulatorReference(*l, c.shape), regs, nw, what);
    expectInverses(ll, nw, what);
    expectRoundTrip(l, c.shape);
  }
}

TEST(MmaLayouts, WgmmaAccumulatorMatchesThePTXFragment) {
  for (int64_t n = 8; n <= 256; n *= 2)
    for (std::vector<int64_t> warps :
         {std::vector<int64_t>{4, 1}, {8, 1}, {4, 2}}) {
      auto *l = NvidiaMmaLayout::get(3, 0, warps, {16, n, 16});
      for (std::vector<int64_t> shape :
           {std::vector<int64_t>{64, n}, {128, n}, {128, 2 * n}, {64, 256}}) {
        if (shape[1] % n)
          continue;
        LinearLayout ll = l->toLinear(shape);
        int64_t regs = (n / 2) * divUp(shape[0], 16 * warps[0]) *
                       divUp(shape[1], n * warps[1]);
        std::string what = l->str() + " on " + std::to_string(shape[0]) +
                           "x" + std::to_string(shape[1]);
        expectMatches(ll, accumulatorReference(*l, shape), regs,
                      l->numWarps(), what);
        expectInverses(ll, l->numWarps(), what);
        expectRoundTrip(l, shape);
      }
    }
}

TEST(MmaLayouts, DotOperandsMatchThePTXFragments) {
  struct Case {
    int opIdx, kWidth;
    std::vector<int64_t> warps, shape;
  };
  std::vector<Case> cases;
  for (int kw : {1, 2, 4})
    for (std::vector<int64_t> warps :
         {std::vector<int64_t>{2, 2}, {4, 1}, {1, 4}, {4, 2}, {2, 4}}) {
      cases.push_back({0, kw, warps, {128, 64}});
      cases.push_back({1, kw, warps, {64, 128}});
      cases.push_back({1, kw, warps, {64, 64}});
      cases.push_back({0, kw, warps, {16, 8 * kw}});
      cases.push_back({1, kw, warps, {8 * kw, 8}});
    }
  for (const Case &c : cases) {
    auto *p = NvidiaMmaLayout::get(2, 0, c.warps, {16, 8});
    auto *l = DotOperandLayout::get(c.opIdx, p, c.kWidth);
    LinearLayout ll = l->toLinear(c.shape);
    int64_t tileK = 8 * c.kWidth;
    int64_t regs =
        c.opIdx == 0
            ? 4 * c.kWidth * divUp(c.shape[1], tileK) *
                  divUp(c.shape[0], 16 * c.warps[0])
            : 2 * c.kWidth * divUp(c.shape[0], tileK) *
                  divUp(c.shape[1], 8 * c.warps[1]);
    std::string what = l->str() + " on " + std::to_string(c.shape[0]) + "x" +
                       std::to_string(c.shape[1]);
    expectMatches(ll, operandReference(*l, c.shape), regs, p->numWarps(), what);
    expectInverses(ll, p->numWarps(), what);
    expectRoundTrip(l, c.shape);
  }
}

TEST(MmaLayouts, BatchedMmaSyncAccumulatorMatchesThePTXFragment) {
  // [wB, wM, wN] over [B, M, N]: each batch element's matrix is the 2-D
  // layout's (warps [wM, wN]), the batch spread over the slowest warps,
  // then over the slowest registers.
  struct Case {
    std::vector<int64_t> warps, shape;
  };
  std::vector<Case> cases = {
      {{1, 1, 1}, {2, 16, 16}},  {{2, 1, 1}, {2, 16, 16}},
      {{2, 2, 1}, {4, 64, 32}},  {{4, 1, 1}, {4, 64, 32}},
      {{2, 2, 2}, {2, 128, 64}}, {{1, 2, 2}, {4, 32, 32}},
      {{4, 1, 1}, {2, 16, 8}},   {{2, 4, 1}, {8, 64, 16}},
  };
  for (const Case &c : cases) {
    auto *l = NvidiaMmaLayout::get(2, 0, c.warps, {1, 16, 8});
    auto *l2 = NvidiaMmaLayout::get(2, 0, {c.warps[1], c.warps[2]}, {16, 8});
    std::vector<int64_t> mat = {c.shape[1], c.shape[2]};
    LinearLayout ll = l->toLinear(c.shape);
    int64_t regs2 = 4 * divUp(mat[0], 16 * c.warps[1]) *
                    divUp(mat[1], 8 * c.warps[2]);
    std::string what = l->str() + " on " + std::to_string(c.shape[0]) + "x" +
                       std::to_string(c.shape[1]) + "x" +
                       std::to_string(c.shape[2]);
    EXPECT_EQ(l->rank(), 3);
    EXPECT_EQ(l->numWarps(), c.warps[0] * c.warps[1] * c.warps[2]);
    expectBatchedMatches(ll, accumulatorReference(*l2, mat), regs2,
                         l2->numWarps(), c.warps[0], c.shape[0], what);
    expectInverses(ll, l->numWarps(), what);
    expectRoundTrip(l, c.shape);
  }
}

TEST(MmaLayouts, BatchedDotOperandsMatchThePTXFragments) {
  struct Case {
    int opIdx, kWidth;
    std::vector<int64_t> warps, shape;
  };
  std::vector<Case> cases;
  for (int kw : {1, 2, 4})
    for (std::vector<int64_t> warps :
         {std::vector<int64_t>{1, 1, 1}, {2, 2, 1}, {4, 1, 1}, {2, 1, 4},
          {2, 2, 2}, {8, 1, 1}}) {
      cases.push_back({0, kw, warps, {2, 128, 64}});
      cases.push_back({1, kw, warps, {2, 64, 128}});
      cases.push_back({0, kw, warps, {4, 64, 32}});
      cases.push_back({1, kw, warps, {4, 32, 32}});
      cases.push_back({0, kw, warps, {2, 16, 8 * kw}});
      cases.push_back({1, kw, warps, {2, 8 * kw, 8}});
    }
  for (const Case &c : cases) {
    auto *p = NvidiaMmaLayout::get(2, 0, c.warps, {1, 16, 8});
    auto *p2 = NvidiaMmaLayout::get(2, 0, {c.warps[1], c.warps[2]}, {16, 8});
    auto *l = DotOperandLayout::get(c.opIdx, p, c.kWidth);
    auto *l2 = DotOperandLayout::get(c.opIdx, p2, c.kWidth);
    std::vector<int64_t> mat = {c.shape[1], c.shape[2]};
    LinearLayout ll = l->toLinear(c.shape);
    int64_t tileK = 8 * c.kWidth;
    int64_t regs2 =
        c.opIdx == 0
            ? 4 * c.kWidth * divUp(mat[1], tileK) *
                  divUp(mat[0], 16 * c.warps[1])
            : 2 * c.kWidth * divUp(mat[0], tileK) *
                  divUp(mat[1], 8 * c.warps[2]);
    std::string what = l->str() + " on " + std::to_string(c.shape[0]) + "x" +
                       std::to_string(c.shape[1]) + "x" +
                       std::to_string(c.shape[2]);
    EXPECT_EQ(l->rank(), 3);
    expectBatchedMatches(ll, operandReference(*l2, mat), regs2,
                         p2->numWarps(), c.warps[0], c.shape[0], what);
    expectInverses(ll, p->numWarps(), what);
    expectRoundTrip(l, c.shape);
  }
  // The text form Triton uses for a batched mma.sync layout.
  auto *p = NvidiaMmaLayout::get(2, 0, {2, 2, 1}, {1, 16, 8});
  EXPECT_EQ(p->str(), "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, "
                      "warpsPerCTA = [2, 2, 1], instrShape = [1, 16, 8]}>");
  // A 2-D shape for a batched layout, and the reverse, are ours to avoid.
  EXPECT_THROW(p->toLinear({64, 32}), InternalError);
  EXPECT_THROW(NvidiaMmaLayout::get(2, 0, {2, 2}, {16, 8})->toLinear({2, 16, 8}),
               InternalError);
  // No batched instrShape for a 2-D warp grid and vice versa; no batched
  // wgmma.
  EXPECT_THROW(NvidiaMmaLayout::get(2, 0, {2, 2, 1}, {16, 8}), InternalError);
  EXPECT_THROW(NvidiaMmaLayout::get(2, 0, {2, 2}, {1, 16, 8}), InternalError);
  EXPECT_THROW(NvidiaMmaLayout::get(3, 0, {1, 4, 1}, {1, 16, 64, 16}),
               InternalError);
}

TEST(MmaLayouts, BatchedSliceDropsTheBatch) {
  // A row vector of a batched accumulator (rows[:, :, None]-style slices
  // feed the epilogue's broadcasts): the slice of dim 2 keeps the batch and
  // M placement of the parent.
  auto *p = NvidiaMmaLayout::get(2, 0, {2, 2, 1}, {1, 16, 8});
  LinearLayout acc = p->toLinear({2, 32, 16});
  LinearLayout rows = SliceLayout::get(2, p)->toLinear({2, 32});
  for (int w = 0; w < 4; ++w)
    for (int lane = 0; lane < 32; ++lane)
      for (int r = 0; r < acc.numRegs(); ++r) {
        Basis a = acc.apply(r, lane, w);
        bool found = false;
        for (int q = 0; q < rows.numRegs(); ++q) {
          Basis s = rows.apply(q, lane, w);
          found |= s[0] == a[0] && s[1] == a[1];
        }
        ASSERT_TRUE(found) << "reg " << r << " lane " << lane << " warp " << w;
      }
}

TEST(MmaLayouts, WgmmaOperandAFromRegisters) {
  for (int kw : {1, 2, 4})
    for (std::vector<int64_t> warps :
         {std::vector<int64_t>{4, 1}, {8, 1}, {4, 2}}) {
      auto *p = NvidiaMmaLayout::get(3, 0, warps, {16, 64, 16});
      auto *l = DotOperandLayout::get(0, p, kw);
      for (std::vector<int64_t> shape :
           {std::vector<int64_t>{64, 8 * kw}, {128, 64}, {64, 128}}) {
        LinearLayout ll = l->toLinear(shape);
        int64_t regs = 4 * kw * divUp(shape[1], 8 * kw) *
                       divUp(shape[0], 16 * warps[0]);
        std::string what = l->str();
        expectMatches(ll, operandReference(*l, shape), regs, p->numWarps(),
                      what);
        expectInverses(ll, p->numWarps(), what);
        expectRoundTrip(l, shape);
      }
    }
}

TEST(MmaLayouts, Ldmatrix16x16TilesAreTheOperandLayouts) {
  // One warp's ldmatrix.x4 of a 16x16 fp16 tile gives exactly the m16n8k16
  // A fragment; ldmatrix.x4.trans of a K-major 16x16 tile gives the B
  // fragments of two n8 tiles.
  auto *p = NvidiaMmaLayout::get(2, 0, {1, 1}, {16, 8});
  LinearLayout a = DotOperandLayout::get(0, p, 2)->toLinear({16, 16});
  LinearLayout b = DotOperandLayout::get(1, p, 2)->toLinear({16, 16});
  expectMatches(
      a, [](int64_t r, int64_t lane, int64_t) { return ldmatrixX4(r / 2, r % 2, lane); },
      8, 1, "ldmatrix.x4 -> A");
  expectMatches(
      b,
      [](int64_t r, int64_t lane, int64_t) {
        return ldmatrixX4Trans(r / 2, r % 2, lane);
      },
      8, 1, "ldmatrix.x4.trans -> B");
  // With 4 warps along M the same tile repeats per warp's 16 rows.
  auto *p4 = NvidiaMmaLayout::get(2, 0, {4, 1}, {16, 8});
  LinearLayout a4 = DotOperandLayout::get(0, p4, 2)->toLinear({64, 16});
  expectMatches(
      a4,
      [](int64_t r, int64_t lane, int64_t w) {
        Coord c = ldmatrixX4(r / 2, r % 2, lane);
        return Coord{16 * w + c.first, c.second};
      },
      8, 4, "ldmatrix.x4 per warp -> A");
}

TEST(MmaLayouts, SmallerThanTheInstructionBroadcasts) {
  // A tensor smaller than the instruction tile along a dim (the 1 x N of
  // `cols[None, :]` beside an accumulator) keeps the tile's hardware dims;
  // the coordinates past its extent fold onto it (those threads and
  // registers hold copies): the tile's map with each coordinate masked.
  auto *p = NvidiaMmaLayout::get(2, 0, {2, 2}, {16, 8});
  auto *h = NvidiaMmaLayout::get(3, 0, {4, 1}, {16, 64, 16});
  struct Case {
    const GPULayout *l;
    std::vector<int64_t> tile, small;
  };
  std::vector<Case> cases = {
      {p, {32, 16}, {1, 16}},
      {p, {32, 16}, {32, 1}},
      {p, {32, 16}, {8, 4}},
      {DotOperandLayout::get(0, p, 2), {32, 16}, {8, 16}},
      {DotOperandLayout::get(1, p, 4), {32, 16}, {16, 8}},
      {h, {64, 64}, {1, 64}},
      {h, {64, 64}, {64, 1}},
      {h, {64, 64}, {32, 64}},
  };
  for (const Case &c : cases) {
    LinearLayout full = c.l->toLinear(c.tile);
    LinearLayout small = c.l->toLinear(c.small);
    ASSERT_EQ(small.numRegs(), full.numRegs()) << c.l->str();
    for (int r = 0; r < full.numRegs(); ++r)
      for (int lane = 0; lane < 32; ++lane)
        for (int w = 0; w < 4; ++w) {
          Basis f = full.apply(r, lane, w), s = small.apply(r, lane, w);
          for (int d = 0; d < 2; ++d)
            ASSERT_EQ(s[d], f[d] & (c.small[d] - 1))
                << c.l->str() << " on " << c.small[0] << "x" << c.small[1]
                << " reg " << r << " lane " << lane << " warp " << w;
        }
  }
  EXPECT_THROW(p->toLinear({16, 8, 2}), InternalError);
  EXPECT_THROW(p->toLinear({16, 12}), InternalError);
  // Smaller than the warps' tiling but a whole instruction: warps hold copies.
  LinearLayout small = p->toLinear({16, 8});
  EXPECT_EQ(small.zeroBasesMask(kWarp), 3u);
  EXPECT_EQ(small.numRegs(), 4);
}

TEST(MmaLayouts, InvalidParametersAreInternalErrors) {
  EXPECT_THROW(NvidiaMmaLayout::get(2, 0, {2, 2}, {16, 16}), InternalError);
  EXPECT_THROW(NvidiaMmaLayout::get(3, 0, {2, 2}, {16, 64, 16}), InternalError);
  EXPECT_THROW(NvidiaMmaLayout::get(3, 0, {4, 1}, {16, 96, 16}), InternalError);
  EXPECT_THROW(NvidiaMmaLayout::get(1, 0, {4, 1}, {16, 8}), InternalError);
  auto *p = NvidiaMmaLayout::get(2, 0, {2, 2}, {16, 8});
  EXPECT_THROW(DotOperandLayout::get(2, p, 2), InternalError);
  EXPECT_THROW(DotOperandLayout::get(0, p, 3), InternalError);
  auto *h = NvidiaMmaLayout::get(3, 0, {4, 1}, {16, 64, 16});
  EXPECT_THROW(DotOperandLayout::get(1, h, 2), InternalError);
  auto *blocked = BlockedLayout::get({1, 1}, {4, 8}, {2, 2}, {1, 0});
  EXPECT_THROW(DotOperandLayout::get(0, blocked, 2), InternalError);
}

TEST(MmaLayouts, TextFormsFollowTritonAndParseBack) {
  auto *p = NvidiaMmaLayout::get(2, 0, {2, 2}, {16, 8});
  EXPECT_EQ(p->str(), "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, "
                      "warpsPerCTA = [2, 2], instrShape = [16, 8]}>");
  auto *d = DotOperandLayout::get(0, p, 2);
  EXPECT_EQ(d->str(), "#ttg.dot_op<{opIdx = 0, parent = " + p->str() +
                          ", kWidth = 2}>");
  auto *h = NvidiaMmaLayout::get(3, 0, {4, 1}, {16, 128, 16});
  EXPECT_EQ(h->str(), "#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, "
                      "warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>");
  expectRoundTrip(SliceLayout::get(1, p), {64});
  expectRoundTrip(DotOperandLayout::get(1, p, 4), {64, 32});
  // As part of a tensor type in IR text.
  registerLayoutParser();
  const Type *t = Type::tensor(Type::scalar(DType::FP16), {128, 64}, d);
  EXPECT_EQ(t->str(), "tensor<128x64xf16, " + d->str() + ">");
  // Malformed: wrong field order, an instruction that does not exist, a
  // parent that is not an mma.
  for (std::string bad : std::vector<std::string>{
       "#ttg.nvidia_mma<{versionMinor = 0, versionMajor = 2, warpsPerCTA = "
        "[2, 2], instrShape = [16, 8]}>",
        "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = "
        "[2, 2], instrShape = [16, 16]}>",
        "#ttg.dot_op<{opIdx = 0, parent = #ttg.blocked<{sizePerThread = [1, "
        "1], threadsPerWarp = [4, 8], warpsPerCTA = [2, 2], order = [1, 0]}>, "
        "kWidth = 2}>",
        "#ttg.dot_op<{opIdx = 3, parent = " + p->str() + ", kWidth = 2}>",
        // kWidth 2^32 + 2 must not wrap to 2 when it becomes an int.
        "#ttg.dot_op<{opIdx = 0, parent = " + p->str() +
            ", kWidth = 4294967298}>",
        "#ttg.dot_op<{opIdx = -1, parent = " + p->str() + ", kWidth = 2}>",
        // 30 digits: malformed text, not std::out_of_range.
        "#ttg.blocked<{sizePerThread = [100000000000000000000000000000, "
        "1], threadsPerWarp = [4, 8], warpsPerCTA = [2, 2], order = [1, 0]}>"}) {
    size_t pos = 0;
    EXPECT_EQ(parseLayout(bad, pos, {64, 64}), nullptr) << bad;
    EXPECT_EQ(pos, 0u);
  }
}

} // namespace
