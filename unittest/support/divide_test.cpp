// planDivision / applyDivision against the C++ operators, for every plan
// kind, 32 and 64 bits, signed and unsigned, on the dividends where
// division by a constant goes wrong first: 0, +-1, the extremes, and the
// multiples of d and their neighbours.
#include "tritium/support/divide.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tritium {
namespace {

std::vector<int64_t> divisors(int bits) {
  std::vector<int64_t> ds;
  for (int64_t d = -300; d <= 300; ++d)
    ds.push_back(d);
  for (int k = 1; k < bits; ++k)
    for (int64_t off : {-1, 0, 1}) {
      uint64_t v = (uint64_t(1) << k) + off;
      ds.push_back((int64_t)v);
      ds.push_back((int64_t)(0 - v)); // unsigned negation: v may be 2^63
    }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i)
    ds.push_back((int64_t)rng());
  for (int64_t d : std::initializer_list<int64_t>{641, 6700417, 1000000007, 274177, 67280421310721LL})
    ds.push_back(d);
  return ds;
}

std::vector<uint64_t> dividends(int64_t d, std::mt19937_64 &rng) {
  std::vector<uint64_t> ns = {0, 1, 2, ~0ull, ~0ull - 1, 1ull << 31, (1ull << 31) - 1,
                              (1ull << 31) + 1, 1ull << 63, (1ull << 63) - 1, (1ull << 32) - 1,
                              1ull << 32, 0xFFFFFFFF80000000ull, 0xFFFFFFFF7FFFFFFFull};
  uint64_t ud = (uint64_t)d;
  for (uint64_t k : {1ull, 2ull, 3ull, 1000ull, 123456789ull})
    for (int64_t off : {-1, 0, 1}) {
      ns.push_back(ud * k + off);
      ns.push_back(0 - (ud * k + off));
    }
  for (int i = 0; i < 64; ++i) {
    ns.push_back(rng());
    ns.push_back(rng() >> (rng() % 64));
  }
  return ns;
}

void check(int bits, bool isSigned) {
  std::mt19937_64 rng(bits * 2 + isSigned);
  int planned = 0;
  for (int64_t d0 : divisors(bits)) {
    DivisionPlan p = planDivision(bits, isSigned, d0);
    uint64_t m = bits == 64 ? ~0ull : (1ull << bits) - 1;
    uint64_t ud = (uint64_t)d0 & m;
    int64_t sd = bits == 64 ? (int64_t)ud : (int64_t)(int32_t)(uint32_t)ud;
    if (p.kind == DivisionPlan::Kind::Generic) {
      // Only the divisors left to the hardware on purpose.
      if (isSigned)
        EXPECT_TRUE(sd == 0 || sd == -1 || ud == (1ull << (bits - 1))) << sd;
      else
        EXPECT_EQ(ud, 0u);
      continue;
    }
    ++planned;
    for (uint64_t n0 : dividends(d0, rng)) {
      uint64_t n = n0 & m;
      uint64_t want;
      if (isSigned) {
        int64_t sn = bits == 64 ? (int64_t)n : (int64_t)(int32_t)(uint32_t)n;
        want = (uint64_t)(sn / sd) & m;
      } else {
        want = n / ud;
      }
      ASSERT_EQ(applyDivision(p, n), want)
          << bits << (isSigned ? " signed " : " unsigned ") << "n=" << n << " d=" << sd
          << " kind=" << (int)p.kind << " magic=" << p.magic << " shift=" << p.shift;
    }
  }
  EXPECT_GT(planned, 1000);
}

TEST(DivideByConstant, Signed32) { check(32, true); }
TEST(DivideByConstant, Unsigned32) { check(32, false); }
TEST(DivideByConstant, Signed64) { check(64, true); }
TEST(DivideByConstant, Unsigned64) { check(64, false); }

TEST(DivideByConstant, PlanKinds) {
  EXPECT_EQ(planDivision(32, true, 1).kind, DivisionPlan::Kind::Identity);
  EXPECT_EQ(planDivision(32, true, 256).kind, DivisionPlan::Kind::Shift);
  EXPECT_EQ(planDivision(32, true, 256).shift, 8);
  EXPECT_EQ(planDivision(32, true, -8).kind, DivisionPlan::Kind::Shift);
  EXPECT_EQ(planDivision(32, false, 7).kind, DivisionPlan::Kind::Magic);
  EXPECT_TRUE(planDivision(32, false, 7).add); // 7 needs the 33-bit multiplier
  EXPECT_FALSE(planDivision(32, false, 3).add);
  EXPECT_EQ(planDivision(32, true, 0).kind, DivisionPlan::Kind::Generic);
  EXPECT_EQ(planDivision(32, true, -1).kind, DivisionPlan::Kind::Generic);
  EXPECT_EQ(planDivision(16, true, 3).kind, DivisionPlan::Kind::Generic);
}

} // namespace
} // namespace tritium
