// The GF(2) layout algebra against brute force: every operation is checked
// by enumerating every input index of random layouts.
#include "tritium/gpu/linear_layout.h"
#include "tritium/ir/ir.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

using namespace tritium;
using namespace tritium::gpu;

namespace {

using Index = std::vector<int64_t>;

// Every input index of `ll` (one value per in dim).
std::vector<Index> allInputs(const LinearLayout &ll) {
  std::vector<Index> out{Index(ll.ins().size(), 0)};
  for (size_t d = 0; d < ll.ins().size(); ++d) {
    std::vector<Index> next;
    for (const Index &i : out)
      for (int64_t v = 0; v < ll.inSize(ll.ins()[d].name); ++v) {
        Index j = i;
        j[d] = v;
        next.push_back(j);
      }
    out = std::move(next);
  }
  return out;
}

// The output of `ll` by its definition: XOR of the bases of the set bits.
Basis bruteApply(const LinearLayout &ll, const Index &in) {
  Basis c(ll.outs().size(), 0);
  for (size_t d = 0; d < ll.ins().size(); ++d)
    for (size_t b = 0; b < ll.ins()[d].bases.size(); ++b)
      if ((in[d] >> b) & 1)
        for (size_t o = 0; o < c.size(); ++o)
          c[o] ^= ll.ins()[d].bases[b][o];
  return c;
}

// A random layout from `ins` (name, bits) to `outs`; `zeroOdds` in 1/8ths.
LinearLayout randomLayout(std::mt19937 &rng,
                          const std::vector<std::pair<std::string, int>> &ins,
                          const std::vector<LinearLayout::OutDim> &outs,
                          int zeroOdds = 1) {
  std::vector<LinearLayout::InDim> in;
  for (const auto &[name, bits] : ins) {
    LinearLayout::InDim d{name, {}};
    for (int b = 0; b < bits; ++b) {
      Basis v;
      bool zero = (int)(rng() % 8) < zeroOdds;
      for (const auto &o : outs)
        v.push_back(zero ? 0 : int64_t(rng() % o.size));
      d.bases.push_back(v);
    }
    in.push_back(d);
  }
  return LinearLayout(in, outs);
}

// A random bijection onto `outs` with in dims of the given bit counts
// (summing to the out bits): a random invertible matrix built by row
// operations on a permutation.
LinearLayout randomBijection(std::mt19937 &rng,
                             const std::vector<std::pair<std::string, int>> &ins,
                             const std::vector<LinearLayout::OutDim> &outs) {
  LinearLayout shape({}, outs);
  int n = shape.totalOutBits();
  std::vector<uint64_t> cols(n);
  for (int i = 0; i < n; ++i)
    cols[i] = uint64_t(1) << i;
  std::shuffle(cols.begin(), cols.end(), rng);
  for (int k = 0; k < 3 * n; ++k) {
    int a = rng() % n, b = rng() % n;
    if (a != b)
      cols[a] ^= cols[b];
  }
  std::vector<LinearLayout::InDim> in;
  int c = 0;
  for (const auto &[name, bits] : ins) {
    LinearLayout::InDim d{name, {}};
    for (int b = 0; b < bits; ++b, ++c) {
      Basis v;
      int shift = 0;
      for (const auto &o : outs) {
        int ob = log2Exact(o.size);
        v.push_back(int64_t((cols[c] >> shift) & ((uint64_t(1) << ob) - 1)));
        shift += ob;
      }
      d.bases.push_back(v);
    }
    in.push_back(d);
  }
  return LinearLayout(in, outs);
}

TEST(LinearLayoutAlgebra, ApplyMatchesDefinition) {
  std::mt19937 rng(1);
  for (int t = 0; t < 20; ++t) {
    LinearLayout ll = randomLayout(rng, {{kRegister, 2}, {kLane, 3}, {kWarp, 1}},
                                   {{"dim0", 8}, {"dim1", 16}});
    for (const Index &i : allInputs(ll))
      EXPECT_EQ(ll.apply(i), bruteApply(ll, i));
    EXPECT_EQ(ll.apply(3, 5, 1), bruteApply(ll, {3, 5, 1}));
  }
}

TEST(LinearLayoutAlgebra, ComposeIsFunctionComposition) {
  std::mt19937 rng(2);
  for (int t = 0; t < 20; ++t) {
    LinearLayout inner = randomLayout(rng, {{kRegister, 2}, {kLane, 3}},
                                      {{"x", 8}, {"y", 4}});
    LinearLayout outer = randomLayout(rng, {{"y", 2}, {"x", 3}},
                                      {{"dim0", 16}, {"dim1", 4}});
    LinearLayout c = inner.compose(outer);
    EXPECT_EQ(c.outs(), outer.outs());
    for (const Index &i : allInputs(inner)) {
      Basis mid = bruteApply(inner, i); // (x, y)
      Basis want = outer.apply({{"x", mid[0]}, {"y", mid[1]}});
      EXPECT_EQ(c.apply(i), want);
    }
  }
}

TEST(LinearLayoutAlgebra, InvertOfBijection) {
  std::mt19937 rng(3);
  for (int t = 0; t < 30; ++t) {
    LinearLayout ll = randomBijection(rng, {{kOffset, 7}},
                                      {{"dim0", 16}, {"dim1", 8}});
    ASSERT_TRUE(ll.isInjective());
    ASSERT_TRUE(ll.isSurjective());
    LinearLayout inv = ll.invert();
    std::set<Basis> seen;
    for (const Index &i : allInputs(ll)) {
      Basis c = bruteApply(ll, i);
      EXPECT_TRUE(seen.insert(c).second);
      EXPECT_EQ(inv.apply(c), i); // inverse(ll(i)) == i
    }
    EXPECT_EQ(seen.size(), 128u);
  }
}

TEST(LinearLayoutAlgebra, InvertRejectsNonBijective) {
  LinearLayout dup = LinearLayout::distributed({4}, {{1}, {2}}, {{0}}, {});
  EXPECT_FALSE(dup.isInjective());
  EXPECT_THROW(dup.invert(), InternalError);
}

TEST(LinearLayoutAlgebra, InvertAndComposeFindsTheHolder) {
  std::mt19937 rng(4);
  for (int t = 0; t < 30; ++t) {
    std::vector<LinearLayout::OutDim> outs = {{"dim0", 16}, {"dim1", 16}};
    // A register layout that may hold copies, into a shared layout that is a
    // bijection of the tensor: every element has one offset.
    LinearLayout reg = randomLayout(rng, {{kRegister, 3}, {kLane, 5}, {kWarp, 2}},
                                    outs, 2);
    LinearLayout smem = randomBijection(rng, {{kOffset, 8}}, outs);
    LinearLayout x = reg.invertAndCompose(smem);
    ASSERT_EQ(x.outs().size(), 1u);
    EXPECT_EQ(x.outs()[0].name, kOffset);
    for (const Index &i : allInputs(reg)) {
      Basis off = x.apply(i);
      EXPECT_EQ(smem.apply(Index{off[0]}), bruteApply(reg, i));
    }
  }
}

TEST(LinearLayoutAlgebra, InvertAndComposeWithCopiesInTheTarget) {
  // dst holds each element of an 8-element tensor twice (lane bit 0 is a
  // copy); X must still map every src index to some holder.
  LinearLayout src = LinearLayout::distributed({8}, {{1}, {2}, {4}}, {}, {});
  LinearLayout dst =
      LinearLayout::distributed({8}, {{4}}, {{0}, {1}, {2}}, {});
  LinearLayout x = src.invertAndCompose(dst);
  for (int r = 0; r < 8; ++r) {
    Basis hw = x.apply(Index{r, 0, 0, 0});
    EXPECT_EQ(dst.apply(hw), src.apply(Index{r, 0, 0, 0}));
    EXPECT_EQ(hw[1] & 1, 0) << "the copy bit stays 0";
  }
  // An element the target does not hold is an error.
  LinearLayout half = LinearLayout::distributed({8}, {{1}, {2}}, {}, {});
  EXPECT_THROW(src.invertAndCompose(half), InternalError);
}

TEST(LinearLayoutAlgebra, RankAndZeroBases) {
  LinearLayout ll =
      LinearLayout::distributed({8, 4}, {{1, 0}, {0, 0}}, {{2, 0}, {2, 0}}, {});
  EXPECT_EQ(ll.rankGF2(), 2);
  EXPECT_EQ(ll.zeroBasesMask(kRegister), 2u);
  EXPECT_EQ(ll.zeroBasesMask(kLane), 0u);
  EXPECT_FALSE(ll.isInjective());
  EXPECT_FALSE(ll.isSurjective());
}

TEST(LinearLayoutAlgebra, NumConsecutiveMatchesBruteForce) {
  std::mt19937 rng(5);
  for (int t = 0; t < 200; ++t) {
    std::vector<LinearLayout::OutDim> outs = {{"dim0", 4}, {"dim1", 8}};
    LinearLayout ll = randomLayout(rng, {{kRegister, 3}, {kLane, 2}}, outs, 0);
    // Half the time, make the first register bits consecutive on purpose.
    if (t % 2) {
      int k = rng() % 4;
      std::vector<LinearLayout::InDim> ins = ll.ins();
      for (int b = 0; b < k && b < 3; ++b) {
        int64_t flat = int64_t(1) << b;
        ins[0].bases[b] = {flat / 8, flat % 8};
      }
      ll = LinearLayout(ins, outs);
    }
    int64_t brute = 1;
    while (brute * 2 <= ll.numRegs()) {
      bool ok = true;
      for (int64_t r = 0; r < brute * 2; ++r)
        ok &= ll.flatIndex(bruteApply(ll, {r, 0})) == r;
      if (!ok)
        break;
      brute *= 2;
    }
    EXPECT_EQ(ll.numConsecutive(kRegister), brute) << ll.str();
  }
}

TEST(LinearLayoutAlgebra, DisjointBitsMeansXorIsAdd) {
  std::mt19937 rng(6);
  int disjointSeen = 0;
  for (int t = 0; t < 300; ++t) {
    LinearLayout ll = randomLayout(rng, {{kRegister, 2}, {kLane, 2}},
                                   {{"dim0", 16}}, 2);
    bool brute = true;
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t l = 0; l < 4; ++l) {
        int64_t a = bruteApply(ll, {r, 0})[0], b = bruteApply(ll, {0, l})[0];
        brute &= (a ^ b) == a + b && (a & b) == 0;
      }
    // disjointBits is about the bits the bases use, which is stronger than
    // XOR == + on the values reached; it must never claim more.
    if (ll.disjointBits({kRegister}, {kLane})) {
      ++disjointSeen;
      EXPECT_TRUE(brute) << ll.str();
    }
  }
  EXPECT_GT(disjointSeen, 10);
}

TEST(LinearLayoutAlgebra, TransposeAndReshapeOuts) {
  std::mt19937 rng(7);
  for (int t = 0; t < 20; ++t) {
    LinearLayout ll = randomLayout(rng, {{kRegister, 3}, {kLane, 3}},
                                   {{"dim0", 8}, {"dim1", 4}});
    LinearLayout tr = ll.transposeOuts({"dim1", "dim0"});
    LinearLayout flat = ll.reshapeOuts({{"flat", 32}});
    for (const Index &i : allInputs(ll)) {
      Basis c = bruteApply(ll, i);
      EXPECT_EQ(tr.apply(i), (Basis{c[1], c[0]}));
      // Row-major flattening of XOR-combined coordinates is XOR of the
      // flattened bases only because each dim owns its own bits.
      EXPECT_EQ(flat.apply(i)[0], c[0] * 4 + c[1]);
    }
  }
}

TEST(LinearLayoutAlgebra, SublayoutAndText) {
  LinearLayout ll = LinearLayout::distributed({4, 8}, {{0, 1}}, {{1, 0}, {0, 2}},
                                              {{2, 0}});
  EXPECT_EQ(ll.str(), "#ttg.linear<{register = [[0, 1]], lane = [[1, 0], [0, "
                      "2]], warp = [[2, 0]], block = []}>");
  LinearLayout s = LinearLayout::shared({2, 2}, {{0, 1}, {1, 0}});
  EXPECT_EQ(s.str(), "#ttg.shared_linear<{offset = [[0, 1], [1, 0]], block = "
                     "[]}>");
  LinearLayout sub = ll.sublayout({kLane, kWarp});
  EXPECT_EQ(sub.ins().size(), 2u);
  EXPECT_EQ(sub.apply(Index{3, 1}), (Basis{3, 2}));
}

TEST(LinearLayoutAlgebra, MalformedMapsAreInternalErrors) {
  using ID = LinearLayout::InDim;
  EXPECT_THROW(LinearLayout({}, {{"dim0", 6}}), InternalError);
  EXPECT_THROW(LinearLayout({ID{"r", {{8}}}}, {{"dim0", 8}}), InternalError);
  EXPECT_THROW(LinearLayout({ID{"r", {{1, 0}}}}, {{"dim0", 8}}), InternalError);
  EXPECT_THROW(LinearLayout({ID{"r", {}}, ID{"r", {}}}, {{"dim0", 8}}),
               InternalError);
}

} // namespace
