// The executor's tt.dot (lib/exec/dot.cpp) on the cases random inputs rarely
// hit: tf32 rounding of ties, subnormals, values that round up to inf, NaN
// and inf operands under each precision, and the fp16 accumulator's one
// rounding per 16-wide k chunk. Kernels are IR text; the random-input
// comparisons against numpy models are in python/test/test_dot_precision.py.
#include "tritium/exec/executor.h"
#include "tritium/ir/ir.h"
#include "tritium/ir/printer.h"
#include "tritium/support/float_formats.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace tritium;

namespace {

/// Lines that load the 16x16 tile at %<ptr> (row-major) into %<name>.
std::string load16(const std::string &name, const std::string &ptr,
                   const std::string &elem) {
  std::string t = "tensor<16x16x" + elem + ">";
  std::string p = "tensor<16x16x!tt.ptr<" + elem + ">>";
  return "  %" + name + "_s = tt.splat %" + ptr + " : " + p + "\n" + "  %" +
         name + "_p = tt.addptr %" + name + "_s, %offs : " + p + "\n" + "  %" +
         name + " = tt.load %" + name + "_p : " + t + "\n";
}

/// A kernel: out = tt.dot(a, b, c) on 16x16 tiles of the given element types
/// and input_precision.
std::string dotKernel(const std::string &ab, const std::string &acc,
                      const std::string &precision) {
  std::string t = "tensor<16x16x" + acc + ">";
  return "tt.func @k(%a: !tt.ptr<" + ab + ">, %b: !tt.ptr<" + ab +
         ">, %c: !tt.ptr<" + acc + ">, %out: !tt.ptr<" + acc +
         ">) attributes {kernel = true} {\n"
         "  %r = tt.make_range {end = 16, start = 0} : tensor<16xi32>\n"
         "  %r0 = tt.expand_dims %r {axis = 1} : tensor<16x1xi32>\n"
         "  %r1 = tt.expand_dims %r {axis = 0} : tensor<1x16xi32>\n"
         "  %c16 = arith.constant {value = 16} : tensor<16x1xi32>\n"
         "  %rows = arith.muli %r0, %c16 : tensor<16x1xi32>\n"
         "  %bro = tt.broadcast %rows : tensor<16x16xi32>\n"
         "  %bco = tt.broadcast %r1 : tensor<16x16xi32>\n"
         "  %offs = arith.addi %bro, %bco : tensor<16x16xi32>\n" +
         load16("x", "a", ab) + load16("y", "b", ab) + load16("z", "c", acc) +
         "  %d = tt.dot %x, %y, %z {input_precision = \"" + precision +
         "\", max_num_imprecise_acc = 0} : " + t +
         "\n"
         "  %o_s = tt.splat %out : tensor<16x16x!tt.ptr<" +
         acc +
         ">>\n"
         "  %o_p = tt.addptr %o_s, %offs : tensor<16x16x!tt.ptr<" +
         acc +
         ">>\n"
         "  tt.store %o_p, %d\n"
         "  tt.return\n"
         "}\n";
}

template <class T> ExecPointer ep(std::vector<T> &v) {
  return ExecPointer{uint64_t(reinterpret_cast<uintptr_t>(v.data())),
                     uint64_t(v.size() * sizeof(T))};
}

/// out = a @ b + c for fp32 16x16 tiles under `precision`.
std::vector<float> dotF32(std::vector<float> a, std::vector<float> b,
                          std::vector<float> c, const std::string &precision) {
  auto m = parseModule(dotKernel("f32", "f32", precision));
  std::vector<float> out(256, 12345.0f);
  execute(*m, "k", {1, 1, 1}, {ep(a), ep(b), ep(c), ep(out)});
  return out;
}

std::vector<float> identity16() {
  std::vector<float> id(256, 0.0f);
  for (int i = 0; i < 16; ++i)
    id[i * 17] = 1.0f;
  return id;
}

/// tf32 rounding written arithmetically (an independent model of the
/// executor's bit trick): a multiple of tf32's ulp at x, std::round rounding
/// halfway cases away from zero as cvt.rna does.
float tf32Model(float x) {
  if (x == 0 || !std::isfinite(x))
    return x;
  int e = std::max(std::ilogb(x), -126); // subnormals share 2^-126's ulp
  double ulp = std::ldexp(1.0, e - 10);
  return float(std::round(double(x) / ulp) * ulp); // 2^128 -> inf
}

TEST(ExecDot, TF32RoundsEachOperandToNearestTiesAway) {
  // Random finite bit patterns (below 2, either sign): a @ I reads back
  // tf32(a) element by element (a*1 and the adds of zeros are exact).
  std::vector<float> a(256), zero(256, 0.0f);
  std::mt19937 rng(3);
  for (float &v : a)
    v = std::bit_cast<float>(uint32_t(rng()) & 0xBFFFFFFFu);
  std::vector<float> out = dotF32(a, identity16(), zero, "tf32");
  std::vector<float> same = dotF32(a, identity16(), zero, "ieee");
  for (int i = 0; i < 256; ++i) {
    ASSERT_EQ(out[i], tf32Model(a[i])) << std::hex << "a = 0x"
                                       << std::bit_cast<uint32_t>(a[i]);
    ASSERT_EQ(same[i], a[i]) << i; // ieee reads a back unchanged
  }
  // Hand-picked ones, one per row of a, with b all ones: every column of
  // row m reads tf32(a[m][0]).
  const uint32_t special[16][2] = {
      {0x3F801000, 0x3F802000}, // 1 + 2^-11, a tie: away from zero
      {0xBF801000, 0xBF802000}, // the same below zero
      {0x3F805000, 0x3F806000}, // a tie with an even kept part: still up
      {0x3F803000, 0x3F804000},
      {0x3F800FFF, 0x3F800000}, // below half: down
      {0x3F7FF000, 0x3F800000}, // a carry into the exponent
      {0x7F7FEFFF, 0x7F7FE000}, // the largest tf32 stays
      {0x7F7FF000, 0x7F800000}, // halfway past it: inf
      {0xFF7FFFFF, 0xFF800000},
      {0x00000FFF, 0x00000000}, // subnormals round alike
      {0x00001000, 0x00002000},
      {0x807FF000, 0x80800000}, // the largest subnormal rounds to a normal
      {0x00800000, 0x00800000},
      {0x7F800000, 0x7F800000}, // inf stays inf
      {0x4B7FFFFF, 0x4B800000},
      {0x3EAAAAAB, 0x3EAAA000}};
  std::vector<float> col(256, 0.0f), ones(256, 1.0f);
  for (int m = 0; m < 16; ++m)
    col[m * 16] = std::bit_cast<float>(special[m][0]);
  std::vector<float> got = dotF32(col, ones, zero, "tf32");
  for (int m = 0; m < 16; ++m) {
    EXPECT_EQ(special[m][1],
              std::bit_cast<uint32_t>(tf32Model(col[m * 16])))
        << "the model, row " << m;
    for (int n = 0; n < 16; ++n)
      ASSERT_EQ(std::bit_cast<uint32_t>(got[m * 16 + n]), special[m][1])
          << std::hex << "a = 0x" << special[m][0];
  }
}

TEST(ExecDot, NaNAndInfOperands) {
  std::vector<float> ones(256, 1.0f), zero(256, 0.0f), a(256, 0.5f);
  const float inf = std::numeric_limits<float>::infinity();
  a[0] = inf;                                  // row 0
  a[16] = std::bit_cast<float>(0x7F800001u);   // row 1: a NaN whose payload
                                               // would carry into an inf
  a[32] = std::bit_cast<float>(0xFF801000u);   // row 2: another NaN
  for (const char *p : {"ieee", "tf32", "tf32x3"}) {
    std::vector<float> out = dotF32(a, ones, zero, p);
    for (int n = 0; n < 16; ++n) {
      // tf32x3 splits inf into inf + tf32(inf - inf) = inf + NaN.
      if (std::string(p) == "tf32x3")
        EXPECT_TRUE(std::isnan(out[n])) << p;
      else
        EXPECT_EQ(out[n], inf) << p;
      EXPECT_TRUE(std::isnan(out[16 + n])) << p;
      EXPECT_TRUE(std::isnan(out[32 + n])) << p;
      EXPECT_EQ(out[48 + n], 8.0f) << p;
    }
  }
}

TEST(ExecDot, TF32x3RecoversTheLowBits) {
  // a = 1 + 2^-11 + 2^-22: a_hi = 1 + 2^-10 (the tie rounds away), a - a_hi
  // = -2^-11 + 2^-22 is a tf32 value; with b = 1 the three sums are exact.
  std::vector<float> a(256, float(1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -22)));
  std::vector<float> ones(256, 1.0f), zero(256, 0.0f);
  std::vector<float> x3 = dotF32(a, ones, zero, "tf32x3");
  std::vector<float> t = dotF32(a, ones, zero, "tf32");
  for (int i = 0; i < 256; ++i) {
    ASSERT_EQ(x3[i], float(16 * (1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -22))));
    ASSERT_EQ(t[i], float(16 * (1 + std::ldexp(1.0, -10))));
  }
}

TEST(ExecDot, Fp16AccumulatorRoundsOncePer16K) {
  // K is 16 here; two dots in a row model two chunks. Row 0: 1024 + 0.5 per
  // chunk: each chunk rounds 1024.5 to 1024 (a tie, to even), where a single
  // rounding of both chunks would give 1025. Row 1: 1024 + 0.5 + 0.5 in one
  // chunk sums to 1025 in fp32, where rounding after each add would stay at
  // 1024.
  auto m = parseModule(dotKernel("f16", "f16", "tf32"));
  std::vector<uint16_t> a(256, floatToHalfBits(0)), b(256, floatToHalfBits(1));
  std::vector<uint16_t> c(256, floatToHalfBits(0)), out(256, 0xFFFF);
  a[0] = floatToHalfBits(1024);
  a[1] = floatToHalfBits(0.5);
  a[16] = floatToHalfBits(1024);
  a[17] = floatToHalfBits(0.5);
  a[18] = floatToHalfBits(0.5);
  execute(*m, "k", {1, 1, 1}, {ep(a), ep(b), ep(c), ep(out)});
  std::vector<uint16_t> a2(256, floatToHalfBits(0));
  a2[0] = floatToHalfBits(0.5);
  std::vector<uint16_t> out2(256, 0xFFFF);
  execute(*m, "k", {1, 1, 1}, {ep(a2), ep(b), ep(out), ep(out2)});
  for (int n = 0; n < 16; ++n) {
    EXPECT_EQ(halfBitsToFloat(out[n]), 1024.0);
    EXPECT_EQ(halfBitsToFloat(out2[n]), 1024.0);
    EXPECT_EQ(halfBitsToFloat(out[16 + n]), 1025.0);
    EXPECT_EQ(halfBitsToFloat(out[32 + n]), 0.0);
  }
}

} // namespace
