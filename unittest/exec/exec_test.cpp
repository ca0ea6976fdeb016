// Tests of the CPU executor (lib/exec): kernels built with the raw IR API and
// run over a grid, checked element by element; and the float format helpers.
#include "tritium/exec/executor.h"
#include "tritium/support/float_formats.h"
#include "tritium/gpu/passes.h"
#include "tritium/ir/ir.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace tritium;

namespace {

const Type *sc(DType t) { return Type::scalar(t); }
const Type *ptrTo(DType t) { return Type::pointer(sc(t)); }
const Type *ten(DType t, std::vector<int64_t> shape) {
  return Type::tensor(sc(t), std::move(shape));
}

/// Builds a module op by op with the raw IR API.
class KB {
public:
  std::unique_ptr<Module> mod = std::make_unique<Module>();
  Function *fn = nullptr;
  Block *cur = nullptr;
  Location loc{"add.py", 1, 1};

  KB(const std::string &name, std::vector<const Type *> argTypes,
     std::vector<std::string> names = {}, std::vector<const Type *> res = {}) {
    fn = mod->addFunction(std::make_unique<Function>(name, argTypes, res));
    for (size_t i = 0; i < names.size(); ++i)
      fn->arg(i)->nameHint = names[i];
    cur = &fn->entry();
  }
  /// Another function of the same module; the insertion block moves to it.
  Function *addFunction(const std::string &name,
                        std::vector<const Type *> argTypes,
                        std::vector<const Type *> res) {
    Function *f =
        mod->addFunction(std::make_unique<Function>(name, argTypes, res));
    cur = &f->entry();
    return f;
  }
  void at(int line, int col) { loc = {"add.py", line, col}; }

  Operation *emit(OpCode c, std::vector<Value *> ins,
                  std::vector<const Type *> outs,
                  std::map<std::string, Attribute> attrs = {},
                  unsigned regions = 0) {
    return cur->push_back(Operation::create(c, std::move(ins), outs,
                                            std::move(attrs), loc, regions));
  }
  Value *v(OpCode c, std::vector<Value *> ins, const Type *out,
           std::map<std::string, Attribute> attrs = {}) {
    return emit(c, std::move(ins), {out}, std::move(attrs))->result(0);
  }
  Value *cInt(int64_t x, DType t = DType::I32) {
    return v(OpCode::Constant, {}, sc(t), {{"value", x}});
  }
  Value *cF(double x, DType t = DType::FP32) {
    return v(OpCode::Constant, {}, sc(t), {{"value", x}});
  }
  Value *constT(const Type *t, Attribute value) {
    return v(OpCode::Constant, {}, t, {{"value", value}});
  }
  Value *range(int64_t n) {
    return v(OpCode::MakeRange, {}, ten(DType::I32, {n}),
             {{"start", int64_t(0)}, {"end", n}});
  }
  Value *pid(int axis = 0) {
    return v(OpCode::GetProgramId, {}, sc(DType::I32),
             {{"axis", int64_t(axis)}});
  }
  Value *splat(Value *x, std::vector<int64_t> shape) {
    return v(OpCode::Splat, {x}, Type::tensor(x->type(), shape));
  }
  Value *bin(OpCode c, Value *a, Value *b) { return v(c, {a, b}, a->type()); }
  Value *cmpi(const std::string &pred, Value *a, Value *b) {
    return v(OpCode::CmpI, {a, b}, a->type()->withElement(sc(DType::I1)),
             {{"predicate", pred}});
  }
  Value *addptr(Value *p, Value *off) {
    return v(OpCode::AddPtr, {p, off}, p->type());
  }
  Value *load(Value *p, Value *mask = nullptr, Value *other = nullptr) {
    std::vector<Value *> ins{p};
    if (mask)
      ins.push_back(mask);
    if (other)
      ins.push_back(other);
    const Type *pt = p->type();
    return v(OpCode::Load, ins, pt->withElement(pt->scalarType()->pointee()));
  }
  void store(Value *p, Value *val, Value *mask = nullptr) {
    std::vector<Value *> ins{p, val};
    if (mask)
      ins.push_back(mask);
    emit(OpCode::Store, ins, {});
  }
  void ret(std::vector<Value *> vals = {}) { emit(OpCode::Return, vals, {}); }

  /// ptr + offsets of a [R, C] tile starting at `base` (scalar ptr), rows
  /// `stride` elements apart (C when 0).
  Value *tilePtrs(Value *base, int64_t R, int64_t C, int64_t stride = 0) {
    if (stride == 0)
      stride = C;
    Value *rows = v(OpCode::ExpandDims, {range(R)}, ten(DType::I32, {R, 1}),
                    {{"axis", int64_t(1)}});
    Value *rowsC =
        bin(OpCode::MulI, rows, constT(ten(DType::I32, {R, 1}), stride));
    Value *cols = v(OpCode::ExpandDims, {range(C)}, ten(DType::I32, {1, C}),
                    {{"axis", int64_t(0)}});
    Value *b1 = v(OpCode::Broadcast, {rowsC}, ten(DType::I32, {R, C}));
    Value *b2 = v(OpCode::Broadcast, {cols}, ten(DType::I32, {R, C}));
    Value *offs = bin(OpCode::AddI, b1, b2);
    return addptr(splat(base, {R, C}), offs);
  }
};

template <class T> ExecPointer ep(std::vector<T> &v) {
  return ExecPointer{uint64_t(reinterpret_cast<uintptr_t>(v.data())),
                     uint64_t(v.size() * sizeof(T))};
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

// ---------------------------------------------------------------------------
// Float formats
// ---------------------------------------------------------------------------

TEST(FloatFormats, HalfRoundsToNearestEven) {
  EXPECT_EQ(floatToHalfBits(1.0), 0x3c00);
  EXPECT_EQ(floatToHalfBits(-2.0), 0xc000);
  EXPECT_EQ(floatToHalfBits(65504.0), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65519.0), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65520.0), 0x7c00); // tie -> even -> inf
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0, -25)), 0x0000); // tie -> 0
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0, -26)), 0x0001);
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0, -25)), 0x0002); // 1.5 -> 2
  EXPECT_EQ(floatToHalfBits(-0.0), 0x8000);
  EXPECT_EQ(floatToHalfBits(INFINITY), 0x7c00);
  EXPECT_EQ(floatToHalfBits(NAN) & 0x7fff, 0x7e00);
  EXPECT_EQ(floatToHalfBits(1.0 + std::ldexp(1.0, -11)), 0x3c00); // tie
  EXPECT_EQ(floatToHalfBits(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);
  // Rounds once from the double: via float this would tie and go down.
  EXPECT_EQ(floatToHalfBits(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)),
            0x3c01);
  EXPECT_EQ(halfBitsToFloat(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(halfBitsToFloat(0x3555), 0.333251953125);
  EXPECT_TRUE(std::isinf(halfBitsToFloat(0xfc00)));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7c01)));
}

TEST(FloatFormats, EveryBitPatternRoundTrips) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    double h = halfBitsToFloat(uint16_t(b));
    if (!std::isnan(h)) {
      ASSERT_EQ(floatToHalfBits(h), b) << std::hex << b;
    }
    double bf = bf16BitsToFloat(uint16_t(b));
    if (!std::isnan(bf)) {
      ASSERT_EQ(floatToBF16Bits(bf), b) << std::hex << b;
    }
    // bf16 is the top half of a float.
    float asFloat = std::bit_cast<float>(b << 16);
    if (!std::isnan(asFloat)) {
      ASSERT_EQ(bf, double(asFloat));
    }
  }
  for (uint32_t b = 0; b < 0x100; ++b) {
    double e4 = fp8e4nvBitsToFloat(uint8_t(b));
    if (!std::isnan(e4)) {
      ASSERT_EQ(floatToFP8E4NVBits(e4), b) << std::hex << b;
    }
    double e5 = fp8e5BitsToFloat(uint8_t(b));
    if (!std::isnan(e5) && !std::isinf(e5)) {
      ASSERT_EQ(floatToFP8E5Bits(e5), b) << std::hex << b;
    }
  }
}

TEST(FloatFormats, BF16AndFP8) {
  EXPECT_EQ(floatToBF16Bits(1.0), 0x3f80);
  EXPECT_EQ(floatToBF16Bits(1.0 + std::ldexp(1.0, -8)), 0x3f80); // tie
  EXPECT_EQ(floatToBF16Bits(1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82);
  EXPECT_EQ(floatToBF16Bits(1e39), 0x7f80);  // overflow -> inf
  EXPECT_EQ(floatToBF16Bits(1e-45), 0x0000); // below half the min subnormal
  EXPECT_EQ(floatToBF16Bits(std::ldexp(1.0, -133)), 0x0001);
  // e4m3fn: max 448, no inf, NaN 0x7f; overflow saturates.
  EXPECT_EQ(fp8e4nvBitsToFloat(0x7e), 448.0);
  EXPECT_TRUE(std::isnan(fp8e4nvBitsToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(fp8e4nvBitsToFloat(0xff)));
  EXPECT_EQ(fp8e4nvBitsToFloat(0x78), 256.0); // exponent field 15 is normal
  EXPECT_EQ(fp8e4nvBitsToFloat(0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(floatToFP8E4NVBits(464.0), 0x7e); // tie -> even (448)
  EXPECT_EQ(floatToFP8E4NVBits(1000.0), 0x7e);
  EXPECT_EQ(floatToFP8E4NVBits(-INFINITY), 0xfe);
  EXPECT_EQ(floatToFP8E4NVBits(NAN) & 0x7f, 0x7f);
  EXPECT_EQ(floatToFP8E4NVBits(1.0), 0x38);
  // e5m2: max 57344, inf 0x7c.
  EXPECT_EQ(fp8e5BitsToFloat(0x7b), 57344.0);
  EXPECT_TRUE(std::isinf(fp8e5BitsToFloat(0x7c)));
  EXPECT_EQ(floatToFP8E5Bits(1e6), 0x7b);
  EXPECT_EQ(floatToFP8E5Bits(1.0), 0x3c);
  EXPECT_EQ(floatToFP8E5Bits(1.25), 0x3d);
  EXPECT_EQ(floatToFP8E5Bits(1.125), 0x3c); // tie -> even
  EXPECT_EQ(roundToFloatDType(0.1, DType::FP32), double(0.1f));
  EXPECT_EQ(roundToFloatDType(0.1, DType::FP64), 0.1);
  EXPECT_EQ(roundToFloatDType(0.1, DType::FP16), halfBitsToFloat(0x2e66));
}

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

/// add_kernel(x, y, out, n): out[i] = x[i] + y[i] for i < n (masked when
/// `masked`), BLOCK elements per program.
std::unique_ptr<Module> buildAdd(int64_t block, bool masked) {
  KB b("add_kernel",
       {ptrTo(DType::FP32), ptrTo(DType::FP32), ptrTo(DType::FP32),
        sc(DType::I32)},
       {"x_ptr", "y_ptr", "out_ptr", "n_elements"});
  Value *x = b.fn->arg(0), *y = b.fn->arg(1), *out = b.fn->arg(2),
        *n = b.fn->arg(3);
  Value *start = b.bin(OpCode::MulI, b.pid(), b.cInt(block));
  Value *offs = b.bin(OpCode::AddI, b.splat(start, {block}), b.range(block));
  Value *mask = masked ? b.cmpi("slt", offs, b.splat(n, {block})) : nullptr;
  b.at(12, 9);
  Value *xv = b.load(b.addptr(b.splat(x, {block}), offs), mask);
  b.at(13, 9);
  Value *yv = b.load(b.addptr(b.splat(y, {block}), offs), mask);
  Value *sum = b.bin(OpCode::AddF, xv, yv);
  b.at(14, 5);
  b.store(b.addptr(b.splat(out, {block}), offs), sum, mask);
  b.ret();
  return std::move(b.mod);
}

TEST(Executor, VectorAdd) {
  const int64_t n = (1 << 20) + 17, block = 1024;
  std::vector<float> x(n), y(n), out(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = float(i) * 0.5f;
    y[i] = 1.0f / float(i + 1);
  }
  auto m = buildAdd(block, true);
  auto t0 = std::chrono::steady_clock::now();
  execute(*m, "add_kernel", {(n + block - 1) / block, 1, 1},
          {ep(x), ep(y), ep(out), int64_t(n)});
  std::printf("[ timing ] vector add of %lld fp32 elements (BLOCK=%lld): "
              "%.3f s\n",
              (long long)n, (long long)block, secondsSince(t0));
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], x[i] + y[i]) << i;
}

TEST(Executor, VectorAdd2Pow20Timing) {
  const int64_t n = 1 << 20;
  for (int64_t block : {1024, 64}) {
    std::vector<float> x(n, 1.5f), y(n, 2.25f), out(n);
    auto m = buildAdd(block, true);
    for (int threads : {1, 2}) {
      auto t0 = std::chrono::steady_clock::now();
      ExecOptions opts;
      opts.numThreads = threads;
      execute(*m, "add_kernel", {n / block, 1, 1},
              {ep(x), ep(y), ep(out), int64_t(n)}, opts);
      std::printf("[ timing ] vector add 2^20 fp32, BLOCK=%lld, %d thread(s): "
                  "%.3f s\n",
                  (long long)block, threads, secondsSince(t0));
    }
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], 3.75f);
  }
}

TEST(Executor, OutOfBoundsLoadNamesKernelLocationArgumentAndProgram) {
  std::vector<float> x(1030), y(2048), out(2048);
  auto m = buildAdd(1024, false);
  try {
    execute(*m, "add_kernel", {2, 1, 1}, {ep(x), ep(y), ep(out), int64_t(0)});
    FAIL() << "expected an ExecutionError";
  } catch (const ExecutionError &e) {
    EXPECT_STREQ(e.what(),
                 "out-of-bounds load in kernel 'add_kernel' at add.py:12:9: "
                 "element offset 1030 of argument 'x_ptr' (1030 elements of "
                 "f32), program id (1, 0, 0)");
    EXPECT_EQ(e.loc.line, 12);
    EXPECT_EQ(e.loc.col, 9);
  }
  // Nothing was stored by the failing program's lanes before the error.
  for (int64_t i = 1024; i < 2048; ++i)
    ASSERT_EQ(out[i], 0.0f);
}

TEST(Executor, OutOfBoundsStoreUnnamedArgumentManyThreads) {
  auto m = buildAdd(1024, false);
  m->lookup("add_kernel")->arg(2)->nameHint = "";
  std::vector<float> x(8192), y(8192), out(4096 + 3);
  ExecOptions opts;
  opts.numThreads = 4;
  try {
    execute(*m, "add_kernel", {8, 1, 1}, {ep(x), ep(y), ep(out), int64_t(0)},
            opts);
    FAIL() << "expected an ExecutionError";
  } catch (const ExecutionError &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("out-of-bounds store in kernel 'add_kernel' at "
                       "add.py:14:5: element offset "),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("of argument 2 (4099 elements of f32), program id ("),
              std::string::npos)
        << msg;
  }
}

TEST(Executor, MaskedLanesNeverTouchMemoryAndTakeOther) {
  // Loads x[0..8) with mask i < 5 into a buffer of exactly 5 floats;
  // masked-off lanes get `other` (-7).
  KB b("k", {ptrTo(DType::FP32), ptrTo(DType::FP32)}, {"x", "out"});
  Value *offs = b.range(8);
  Value *mask = b.cmpi("slt", offs, b.constT(ten(DType::I32, {8}), int64_t(5)));
  Value *other = b.constT(ten(DType::FP32, {8}), -7.0);
  Value *v = b.load(b.addptr(b.splat(b.fn->arg(0), {8}), offs), mask, other);
  Value *mask2 =
      b.cmpi("slt", offs, b.constT(ten(DType::I32, {8}), int64_t(6)));
  b.store(b.addptr(b.splat(b.fn->arg(1), {8}), offs), v, mask2);
  b.ret();
  std::vector<float> x{1, 2, 3, 4, 5}, out(6, 0);
  execute(*b.mod, "k", {1, 1, 1}, {ep(x), ep(out)});
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4, 5, -7}));

  // Without `other`, masked-off lanes are zero.
  KB c("k", {ptrTo(DType::I32), ptrTo(DType::I32)}, {"x", "out"});
  Value *o2 = c.range(4);
  Value *m2 = c.cmpi("slt", o2, c.constT(ten(DType::I32, {4}), int64_t(2)));
  Value *v2 = c.load(c.addptr(c.splat(c.fn->arg(0), {4}), o2), m2);
  c.store(c.addptr(c.splat(c.fn->arg(1), {4}), o2), v2);
  c.ret();
  std::vector<int32_t> xi{9, 8}, outi(4, -1);
  execute(*c.mod, "k", {1, 1, 1}, {ep(xi), ep(outi)});
  EXPECT_EQ(outi, (std::vector<int32_t>{9, 8, 0, 0}));
}

TEST(Executor, MisalignedAccessIsAnError) {
  KB b("k", {ptrTo(DType::I8), ptrTo(DType::I32)}, {"raw", "out"});
  // Reinterpret raw+1 (i8*) as i32*.
  Value *p = b.addptr(b.fn->arg(0), b.cInt(1));
  Value *q = b.v(OpCode::Bitcast, {p}, ptrTo(DType::I32));
  b.store(b.fn->arg(1), b.load(q));
  b.ret();
  alignas(8) std::vector<int8_t> raw(16);
  std::vector<int32_t> out(1);
  try {
    execute(*b.mod, "k", {1, 1, 1}, {ep(raw), ep(out)});
    FAIL();
  } catch (const ExecutionError &e) {
    EXPECT_NE(std::string(e.what()).find("misaligned load"), std::string::npos)
        << e.what();
  }
}

/// Per-row reductions of a 4x8 tile (axis 1) and per-column (axis 0).
TEST(Executor, Reductions) {
  const int64_t R = 4, C = 8;
  std::vector<float> x(R * C);
  for (int i = 0; i < R * C; ++i)
    x[i] = float((i * 7) % 11) - 5.0f;
  x[3] = NAN; // row 0 has one NaN
  for (int c = 0; c < C; ++c)
    x[3 * C + c] = NAN; // row 3 is all NaN
  struct Case {
    const char *kind;
    int axis;
    DType out;
  };
  std::vector<Case> cases{{"sum", 1, DType::FP32},   {"max", 1, DType::FP32},
                          {"min", 1, DType::FP32},   {"argmax", 1, DType::I32},
                          {"argmin", 1, DType::I32}, {"sum", 0, DType::FP32},
                          {"max", 0, DType::FP32},   {"argmax", 0, DType::I32},
                          {"prod", 1, DType::FP32}};
  for (const Case &cs : cases) {
    int64_t outN = cs.axis == 1 ? R : C;
    KB b("red", {ptrTo(DType::FP32), ptrTo(cs.out)}, {"x", "out"});
    Value *tile = b.load(b.tilePtrs(b.fn->arg(0), R, C));
    Value *r =
        b.v(OpCode::Reduce, {tile}, ten(cs.out, {outN}),
            {{"axis", int64_t(cs.axis)}, {"kind", std::string(cs.kind)}});
    b.store(b.addptr(b.splat(b.fn->arg(1), {outN}), b.range(outN)), r);
    b.ret();
    std::vector<float> outF(outN);
    std::vector<int32_t> outI(outN);
    bool isF = cs.out == DType::FP32;
    execute(*b.mod, "red", {1, 1, 1}, {ep(x), isF ? ep(outF) : ep(outI)});
    for (int64_t o = 0; o < outN; ++o) {
      // Reference: NaN ignored by max/min/arg*, propagated by sum/prod.
      double acc = std::string(cs.kind) == "prod" ? 1 : 0;
      double best = NAN;
      int bestIdx = 0;
      int64_t len = cs.axis == 1 ? C : R;
      for (int64_t k = 0; k < len; ++k) {
        float e = cs.axis == 1 ? x[o * C + k] : x[k * C + o];
        if (std::string(cs.kind) == "prod")
          acc *= e;
        else
          acc += e;
        bool isMax = std::string(cs.kind).find("max") != std::string::npos;
        if (!std::isnan(e) &&
            (std::isnan(best) || (isMax ? e > best : e < best))) {
          best = e;
          bestIdx = int(k);
        }
      }
      std::string kind = cs.kind;
      SCOPED_TRACE(kind + " axis " + std::to_string(cs.axis) + " index " +
                   std::to_string(o));
      if (kind == "sum" || kind == "prod") {
        if (std::isnan(acc))
          EXPECT_TRUE(std::isnan(outF[o]));
        else
          EXPECT_EQ(outF[o], float(acc));
      } else if (kind == "max" || kind == "min") {
        if (std::isnan(best))
          EXPECT_TRUE(std::isnan(outF[o]));
        else
          EXPECT_EQ(outF[o], float(best));
      } else {
        EXPECT_EQ(outI[o], bestIdx);
      }
    }
  }
}

TEST(Executor, IntegerReductionsWrapAndKeepSign) {
  // sum of i8 into i8 wraps; max of u8 is unsigned; xor_sum.
  std::vector<int8_t> x{100, 100, 100, -1};
  for (auto [kind, outT, expect] :
       std::vector<std::tuple<std::string, DType, int64_t>>{
           {"sum", DType::I8, int8_t(299)},
           {"max", DType::I8, 100},
           {"min", DType::I8, -1},
           {"xor_sum", DType::I8, int8_t(100 ^ -1)}}) {
    KB b("r", {ptrTo(DType::I8), ptrTo(outT)}, {"x", "out"});
    Value *t = b.load(b.addptr(b.splat(b.fn->arg(0), {4}), b.range(4)));
    Value *r = b.v(OpCode::Reduce, {t}, sc(outT),
                   {{"axis", int64_t(0)}, {"kind", kind}});
    b.store(b.fn->arg(1), r);
    b.ret();
    std::vector<int8_t> out(1);
    execute(*b.mod, "r", {1, 1, 1}, {ep(x), ep(out)});
    EXPECT_EQ(out[0], expect) << kind;
  }
  KB b("r", {ptrTo(DType::U8), ptrTo(DType::U8)}, {"x", "out"});
  Value *t = b.load(b.addptr(b.splat(b.fn->arg(0), {4}), b.range(4)));
  Value *r = b.v(OpCode::Reduce, {t}, sc(DType::U8),
                 {{"axis", int64_t(0)}, {"kind", std::string("max")}});
  b.store(b.fn->arg(1), r);
  b.ret();
  std::vector<uint8_t> xu{100, 255, 3, 7}, out(1);
  execute(*b.mod, "r", {1, 1, 1}, {ep(xu), ep(out)});
  EXPECT_EQ(out[0], 255);
}

/// out[pid] = sum over blocks of x[pid * n + k], k < n, looping with scf.for
/// over BLOCK-sized chunks, the accumulator a loop-carried tensor.
TEST(Executor, LoopAccumulatesRowSums) {
  const int64_t block = 64;
  KB b("rowsum", {ptrTo(DType::FP32), ptrTo(DType::FP32), sc(DType::I32)},
       {"x", "out", "n"});
  Value *x = b.fn->arg(0), *out = b.fn->arg(1), *n = b.fn->arg(2);
  Value *rowStart = b.bin(OpCode::MulI, b.pid(), n);
  Value *rowPtr = b.addptr(x, rowStart);
  Value *zeros = b.constT(ten(DType::FP32, {block}), 0.0);
  Operation *loop = b.emit(OpCode::For, {b.cInt(0), n, b.cInt(block), zeros},
                           {ten(DType::FP32, {block})}, {}, 1);
  Block *body = loop->region(0).addBlock();
  Value *iv = body->addArgument(sc(DType::I32));
  Value *acc = body->addArgument(ten(DType::FP32, {block}));
  Block *outer = b.cur;
  b.cur = body;
  Value *offs = b.bin(OpCode::AddI, b.splat(iv, {block}), b.range(block));
  Value *mask = b.cmpi("slt", offs, b.splat(n, {block}));
  Value *v = b.load(b.addptr(b.splat(rowPtr, {block}), offs), mask);
  Value *next = b.bin(OpCode::AddF, acc, v);
  b.emit(OpCode::Yield, {next}, {});
  b.cur = outer;
  Value *total = b.v(OpCode::Reduce, {loop->result(0)}, sc(DType::FP32),
                     {{"axis", int64_t(0)}, {"kind", std::string("sum")}});
  b.store(b.addptr(out, b.pid()), total);
  b.ret();

  const int64_t rows = 5, cols = 1000;
  std::vector<float> xs(rows * cols), outs(rows);
  for (int64_t i = 0; i < rows * cols; ++i)
    xs[i] = float(i % 13) * 0.25f;
  execute(*b.mod, "rowsum", {rows, 1, 1}, {ep(xs), ep(outs), int64_t(cols)});
  for (int64_t r = 0; r < rows; ++r) {
    double ref = 0;
    for (int64_t c = 0; c < cols; ++c)
      ref += xs[r * cols + c];
    EXPECT_NEAR(outs[r], ref, 1e-3) << r;
  }
}

TEST(Executor, ForWithNonPositiveStepIsAnError) {
  KB b("k", {sc(DType::I32)}, {"step"});
  Operation *loop =
      b.emit(OpCode::For, {b.cInt(0), b.cInt(10), b.fn->arg(0)}, {}, {}, 1);
  Block *body = loop->region(0).addBlock();
  body->addArgument(sc(DType::I32));
  body->push_back(Operation::create(OpCode::Yield, {}, {}));
  b.ret();
  EXPECT_THROW(execute(*b.mod, "k", {1, 1, 1}, {int64_t(0)}), ExecutionError);
  EXPECT_THROW(execute(*b.mod, "k", {1, 1, 1}, {int64_t(-1)}), ExecutionError);
  EXPECT_NO_THROW(execute(*b.mod, "k", {1, 1, 1}, {int64_t(3)}));
}

/// Collatz steps of n with scf.while; the parity test with scf.if.
TEST(Executor, WhileAndIf) {
  KB b("collatz", {sc(DType::I32), ptrTo(DType::I32)}, {"n", "out"});
  const Type *i32 = sc(DType::I32);
  Operation *w =
      b.emit(OpCode::While, {b.fn->arg(0), b.cInt(0)}, {i32, i32}, {}, 2);
  Block *before = w->region(0).addBlock();
  Value *bn = before->addArgument(i32);
  Value *bsteps = before->addArgument(i32);
  Block *after = w->region(1).addBlock();
  Value *an = after->addArgument(i32);
  Value *asteps = after->addArgument(i32);
  Block *top = b.cur;
  b.cur = before;
  Value *go = b.cmpi("ne", bn, b.cInt(1));
  b.emit(OpCode::Condition, {go, bn, bsteps}, {});
  b.cur = after;
  Value *odd = b.cmpi("ne", b.bin(OpCode::AndI, an, b.cInt(1)), b.cInt(0));
  Operation *iff = b.emit(OpCode::If, {odd}, {i32}, {}, 2);
  Block *thenB = iff->region(0).addBlock();
  Block *elseB = iff->region(1).addBlock();
  b.cur = thenB;
  Value *t = b.bin(OpCode::AddI, b.bin(OpCode::MulI, an, b.cInt(3)), b.cInt(1));
  b.emit(OpCode::Yield, {t}, {});
  b.cur = elseB;
  Value *e = b.bin(OpCode::DivSI, an, b.cInt(2));
  b.emit(OpCode::Yield, {e}, {});
  b.cur = after;
  b.emit(OpCode::Yield,
         {iff->result(0), b.bin(OpCode::AddI, asteps, b.cInt(1))}, {});
  b.cur = top;
  b.store(b.fn->arg(1), w->result(1));
  b.ret();
  std::vector<int32_t> out(1);
  execute(*b.mod, "collatz", {1, 1, 1}, {int64_t(27), ep(out)});
  EXPECT_EQ(out[0], 111);
  execute(*b.mod, "collatz", {1, 1, 1}, {int64_t(1), ep(out)});
  EXPECT_EQ(out[0], 0);
}

TEST(Executor, CallAnotherFunctionWithArgsAndResults) {
  KB b("k", {ptrTo(DType::FP32)}, {"out"});
  Block *kernelBlock = b.cur;
  // helper(a: f32, b: i32) -> (f32, i32) = (a * a, b + 1)
  Function *helper = b.addFunction("helper", {sc(DType::FP32), sc(DType::I32)},
                                   {sc(DType::FP32), sc(DType::I32)});
  Value *sq = b.bin(OpCode::MulF, helper->arg(0), helper->arg(0));
  Value *inc = b.bin(OpCode::AddI, helper->arg(1), b.cInt(1));
  b.ret({sq, inc});
  b.cur = kernelBlock;
  Operation *call = b.emit(OpCode::Call, {b.cF(1.5), b.cInt(41)},
                           {sc(DType::FP32), sc(DType::I32)},
                           {{"callee", std::string("helper")}});
  b.store(b.fn->arg(0), call->result(0));
  Value *asF = b.v(OpCode::SIToFP, {call->result(1)}, sc(DType::FP32));
  b.store(b.addptr(b.fn->arg(0), b.cInt(1)), asF);
  b.ret();
  std::vector<float> out(2);
  execute(*b.mod, "k", {1, 1, 1}, {ep(out)});
  EXPECT_EQ(out[0], 2.25f);
  EXPECT_EQ(out[1], 42.0f);
}

DType dtOf(Value *v) { return v->type()->scalarType()->dtype(); }

/// Computes op(a, b) on scalar args of dtype t and stores it as i64
/// (sign-extended for signed results, zero-extended otherwise).
int64_t intOp(OpCode code, DType t, int64_t a, int64_t bv,
              const std::string &pred = "") {
  KB b("k", {sc(t), sc(t), ptrTo(DType::I64)}, {"a", "b", "out"});
  Value *r;
  if (code == OpCode::CmpI)
    r = b.cmpi(pred, b.fn->arg(0), b.fn->arg(1));
  else
    r = b.bin(code, b.fn->arg(0), b.fn->arg(1));
  if (bitWidth(dtOf(r)) < 64)
    r = b.v(isSigned(dtOf(r)) ? OpCode::ExtSI : OpCode::ExtUI, {r},
            sc(DType::I64));
  else if (dtOf(r) != DType::I64)
    r = b.v(OpCode::Bitcast, {r}, sc(DType::I64));
  b.store(b.fn->arg(2), r);
  b.ret();
  std::vector<int64_t> out(1, 12345);
  execute(*b.mod, "k", {1, 1, 1}, {a, bv, ep(out)});
  return out[0];
}

TEST(Executor, IntegerSemantics) {
  using O = OpCode;
  // Wrap-around at the width.
  EXPECT_EQ(intOp(O::AddI, DType::I8, 100, 100), -56);
  EXPECT_EQ(intOp(O::AddI, DType::U8, 200, 100), 44);
  EXPECT_EQ(intOp(O::MulI, DType::I32, 1 << 20, 1 << 12), 0);
  EXPECT_EQ(intOp(O::SubI, DType::U32, 0, 1), 0xffffffffLL);
  EXPECT_EQ(intOp(O::AddI, DType::I64, INT64_MAX, 1), INT64_MIN);
  // The high half of the unsigned product, at every width (i8 included).
  EXPECT_EQ(intOp(O::MulHiUI, DType::I32, -1, -1), -2);
  EXPECT_EQ(intOp(O::MulHiUI, DType::U8, 200, 200), 156);
  EXPECT_EQ(intOp(O::MulHiUI, DType::I64, -1, 3), 2);
  // Division: toward zero; by zero -> -1 (all ones), rem by zero -> x.
  EXPECT_EQ(intOp(O::DivSI, DType::I32, -7, 2), -3);
  EXPECT_EQ(intOp(O::RemSI, DType::I32, -7, 2), -1);
  EXPECT_EQ(intOp(O::DivSI, DType::I32, 7, 0), -1);
  EXPECT_EQ(intOp(O::RemSI, DType::I32, 7, 0), 7);
  EXPECT_EQ(intOp(O::DivUI, DType::U32, 7, 0), 0xffffffffLL);
  EXPECT_EQ(intOp(O::RemUI, DType::U32, 7, 0), 7);
  EXPECT_EQ(intOp(O::DivSI, DType::I32, INT32_MIN, -1), INT32_MIN);
  EXPECT_EQ(intOp(O::RemSI, DType::I32, INT32_MIN, -1), 0);
  EXPECT_EQ(intOp(O::DivSI, DType::I64, INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(intOp(O::DivUI, DType::U32, 0xfffffffeLL, 2), 0x7fffffff);
  // Shifts by >= the width are defined.
  EXPECT_EQ(intOp(O::ShLI, DType::I32, 1, 31), INT32_MIN);
  EXPECT_EQ(intOp(O::ShLI, DType::I32, 1, 32), 0);
  EXPECT_EQ(intOp(O::ShLI, DType::I64, 1, 64), 0);
  EXPECT_EQ(intOp(O::ShRSI, DType::I32, -8, 40), -1);
  EXPECT_EQ(intOp(O::ShRSI, DType::I32, 8, 40), 0);
  EXPECT_EQ(intOp(O::ShRSI, DType::I32, -8, 1), -4);
  EXPECT_EQ(intOp(O::ShRUI, DType::I32, -8, 28), 0xf);
  EXPECT_EQ(intOp(O::ShRUI, DType::I32, -8, -1), 0);
  EXPECT_EQ(intOp(O::ShLI, DType::I8, 1, 7), -128);
  // Signed vs unsigned comparisons and min/max.
  EXPECT_EQ(intOp(O::CmpI, DType::I32, -1, 1, "slt"), 1);
  EXPECT_EQ(intOp(O::CmpI, DType::I32, -1, 1, "ult"), 0);
  EXPECT_EQ(intOp(O::CmpI, DType::U32, 0xffffffffLL, 1, "ugt"), 1);
  EXPECT_EQ(intOp(O::MaxSI, DType::I32, -1, 1), 1);
  EXPECT_EQ(intOp(O::MaxUI, DType::I32, -1, 1), -1);
  EXPECT_EQ(intOp(O::MinUI, DType::U64, -1, 5), 5);
  EXPECT_EQ(intOp(O::XOrI, DType::U16, 0xffff, 0x0f0f), 0xf0f0);
}

/// Stores cast(x) as the target dtype's memory bits, for every cast op.
template <class Out> Out castOp(OpCode code, DType from, DType to, ExecArg x) {
  KB b("k", {sc(from), ptrTo(to)}, {"x", "out"});
  b.store(b.fn->arg(1), b.v(code, {b.fn->arg(0)}, sc(to)));
  b.ret();
  std::vector<Out> out(1);
  execute(*b.mod, "k", {1, 1, 1}, {x, ep(out)});
  return out[0];
}

TEST(Executor, Casts) {
  using O = OpCode;
  EXPECT_EQ(castOp<int32_t>(O::ExtSI, DType::I8, DType::I32, int64_t(-3)), -3);
  EXPECT_EQ(castOp<int32_t>(O::ExtUI, DType::I8, DType::I32, int64_t(-3)), 253);
  EXPECT_EQ(castOp<int8_t>(O::TruncI, DType::I32, DType::I8, int64_t(0x1ff)),
            -1);
  EXPECT_EQ(castOp<int32_t>(O::ExtSI, DType::I1, DType::I32, true), -1);
  EXPECT_EQ(castOp<int32_t>(O::ExtUI, DType::I1, DType::I32, true), 1);
  EXPECT_EQ(castOp<float>(O::SIToFP, DType::I32, DType::FP32, int64_t(-5)),
            -5.0f);
  EXPECT_EQ(castOp<float>(O::UIToFP, DType::I32, DType::FP32, int64_t(-1)),
            4294967296.0f);
  EXPECT_EQ(castOp<float>(O::SIToFP, DType::I64, DType::FP32,
                          int64_t((1LL << 40) + 1)),
            float((1LL << 40) + 1));
  // Float -> int: toward zero, saturating, NaN -> 0.
  EXPECT_EQ(castOp<int32_t>(O::FPToSI, DType::FP32, DType::I32, -2.9), -2);
  EXPECT_EQ(castOp<int32_t>(O::FPToSI, DType::FP32, DType::I32, 1e20),
            INT32_MAX);
  EXPECT_EQ(castOp<int8_t>(O::FPToSI, DType::FP32, DType::I8, -1000.0), -128);
  EXPECT_EQ(castOp<int32_t>(O::FPToSI, DType::FP64, DType::I32, double(NAN)),
            0);
  EXPECT_EQ(castOp<uint8_t>(O::FPToUI, DType::FP32, DType::U8, 300.0), 255);
  EXPECT_EQ(castOp<uint8_t>(O::FPToUI, DType::FP32, DType::U8, -3.0), 0);
  // Float <-> float with round-to-nearest-even.
  EXPECT_EQ(castOp<uint16_t>(O::TruncF, DType::FP32, DType::FP16, 65520.0),
            0x7c00);
  EXPECT_EQ(castOp<uint16_t>(O::TruncF, DType::FP64, DType::FP16,
                             1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)),
            0x3c01);
  EXPECT_EQ(castOp<uint16_t>(O::TruncF, DType::FP32, DType::BF16, 3.0), 0x4040);
  EXPECT_EQ(castOp<uint8_t>(O::TruncF, DType::FP32, DType::FP8E4NV, 1000.0),
            0x7e);
  EXPECT_EQ(castOp<uint8_t>(O::TruncF, DType::FP16, DType::FP8E5, 1.25), 0x3d);
  EXPECT_EQ(castOp<float>(O::TruncF, DType::FP64, DType::FP32, 0.1), 0.1f);
  EXPECT_EQ(castOp<double>(O::ExtF, DType::FP16, DType::FP64, 0.1),
            halfBitsToFloat(0x2e66));
  // Bitcast keeps the bits.
  EXPECT_EQ(castOp<int32_t>(O::Bitcast, DType::FP32, DType::I32, 1.0),
            0x3f800000);
  EXPECT_EQ(
      castOp<float>(O::Bitcast, DType::I32, DType::FP32, int64_t(0x40490fdb)),
      std::bit_cast<float>(0x40490fdb));
  EXPECT_EQ(castOp<uint16_t>(O::Bitcast, DType::FP16, DType::I16, -2.0),
            0xc000);
}

/// fp16 tensors: loads decode IEEE half bits, every op rounds to fp16,
/// stores write half bits.
TEST(Executor, HalfPrecisionArithmetic) {
  const int64_t n = 256;
  KB b("k", {ptrTo(DType::FP16), ptrTo(DType::FP16), ptrTo(DType::FP16)},
       {"x", "y", "out"});
  Value *offs = b.range(n);
  Value *x = b.load(b.addptr(b.splat(b.fn->arg(0), {n}), offs));
  Value *y = b.load(b.addptr(b.splat(b.fn->arg(1), {n}), offs));
  Value *r = b.bin(OpCode::AddF, b.bin(OpCode::MulF, x, y), x);
  b.store(b.addptr(b.splat(b.fn->arg(2), {n}), offs), r);
  b.ret();
  std::vector<uint16_t> xs(n), ys(n), out(n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> dist(-300, 300);
  for (int64_t i = 0; i < n; ++i) {
    xs[i] = floatToHalfBits(dist(rng));
    ys[i] = floatToHalfBits(dist(rng));
  }
  xs[0] = 0x7bff; // 65504 * 2 + 65504 overflows to inf
  ys[0] = 0x4000;
  execute(*b.mod, "k", {1, 1, 1}, {ep(xs), ep(ys), ep(out)});
  for (int64_t i = 0; i < n; ++i) {
    double xv = halfBitsToFloat(xs[i]), yv = halfBitsToFloat(ys[i]);
    double p = halfBitsToFloat(floatToHalfBits(xv * yv));
    ASSERT_EQ(out[i], floatToHalfBits(p + xv)) << i;
  }
  EXPECT_EQ(out[0], 0x7c00);
}

TEST(Executor, FloatMinMaxAndNaN) {
  struct Case {
    OpCode code;
    double a, b, expect;
  };
  double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Case> cases{
      {OpCode::MaximumF, 1, nan, nan},    {OpCode::MaxNumF, 1, nan, 1},
      {OpCode::MinimumF, nan, 2, nan},    {OpCode::MinNumF, nan, 2, 2},
      {OpCode::MaximumF, -0.0, 0.0, 0.0}, {OpCode::MinimumF, 0.0, -0.0, -0.0},
      {OpCode::RemF, -7.5, 2, -1.5},      {OpCode::DivF, 1, 0, INFINITY}};
  for (const Case &c : cases) {
    KB b("k", {sc(DType::FP32), sc(DType::FP32), ptrTo(DType::FP32)});
    b.store(b.fn->arg(2), b.bin(c.code, b.fn->arg(0), b.fn->arg(1)));
    b.ret();
    std::vector<float> out(1);
    execute(*b.mod, "k", {1, 1, 1}, {c.a, c.b, ep(out)});
    if (std::isnan(c.expect)) {
      EXPECT_TRUE(std::isnan(out[0])) << opInfo(c.code).name;
    } else {
      EXPECT_EQ(out[0], float(c.expect)) << opInfo(c.code).name;
      EXPECT_EQ(std::signbit(out[0]), std::signbit(c.expect))
          << opInfo(c.code).name;
    }
  }
}

TEST(Executor, MathFunctionsRoundToTheType) {
  std::vector<std::pair<OpCode, double (*)(double)>> fns{
      {OpCode::Exp, [](double v) { return std::exp(v); }},
      {OpCode::Exp2, [](double v) { return std::exp2(v); }},
      {OpCode::Log, [](double v) { return std::log(v); }},
      {OpCode::Log2, [](double v) { return std::log2(v); }},
      {OpCode::Sqrt, [](double v) { return std::sqrt(v); }},
      {OpCode::Rsqrt, [](double v) { return 1 / std::sqrt(v); }},
      {OpCode::Sin, [](double v) { return std::sin(v); }},
      {OpCode::Cos, [](double v) { return std::cos(v); }},
      {OpCode::Erf, [](double v) { return std::erf(v); }},
      {OpCode::Tanh, [](double v) { return std::tanh(v); }},
      {OpCode::Floor, [](double v) { return std::floor(v); }},
      {OpCode::Ceil, [](double v) { return std::ceil(v); }},
      {OpCode::Trunc, [](double v) { return std::trunc(v); }},
      {OpCode::RoundEven, [](double v) { return std::nearbyint(v); }},
      {OpCode::AbsF, [](double v) { return std::fabs(v); }}};
  for (auto [code, ref] : fns) {
    KB b("k", {sc(DType::FP16), ptrTo(DType::FP16)});
    b.store(b.fn->arg(1), b.v(code, {b.fn->arg(0)}, sc(DType::FP16)));
    b.ret();
    std::vector<uint16_t> out(1);
    double x = halfBitsToFloat(floatToHalfBits(1.7));
    execute(*b.mod, "k", {1, 1, 1}, {1.7, ep(out)});
    EXPECT_EQ(out[0], floatToHalfBits(ref(x))) << opInfo(code).name;
  }
}

TEST(Executor, DotAccumulatesInTheAccumulatorType) {
  const int64_t M = 16, N = 32, K = 64;
  KB b("dot", {ptrTo(DType::FP16), ptrTo(DType::FP16), ptrTo(DType::FP32)},
       {"a", "b", "c"});
  Value *a = b.load(b.tilePtrs(b.fn->arg(0), M, K));
  Value *bb = b.load(b.tilePtrs(b.fn->arg(1), K, N));
  Value *acc = b.constT(ten(DType::FP32, {M, N}), 0.5);
  Value *d = b.v(OpCode::Dot, {a, bb, acc}, ten(DType::FP32, {M, N}),
                 {{"input_precision", std::string("ieee")}});
  b.store(b.tilePtrs(b.fn->arg(2), M, N), d);
  b.ret();
  std::vector<uint16_t> as(M * K), bs(K * N);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-2, 2);
  for (auto &v : as)
    v = floatToHalfBits(dist(rng));
  for (auto &v : bs)
    v = floatToHalfBits(dist(rng));
  std::vector<float> c(M * N);
  execute(*b.mod, "dot", {1, 1, 1}, {ep(as), ep(bs), ep(c)});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float ref = 0.5f;
      for (int64_t k = 0; k < K; ++k)
        ref += float(halfBitsToFloat(as[m * K + k])) *
               float(halfBitsToFloat(bs[k * N + n]));
      ASSERT_EQ(c[m * N + n], ref) << m << "," << n;
    }
}

/// A tiled fp16 matmul: grid (M/BM, N/BN), a loop over K carrying the fp32
/// accumulator tile through tt.dot.
TEST(Executor, TiledMatmul) {
  const int64_t M = 128, N = 96, K = 160, BM = 32, BN = 32, BK = 32;
  KB b("matmul", {ptrTo(DType::FP16), ptrTo(DType::FP16), ptrTo(DType::FP32)},
       {"a", "b", "c"});
  Value *aBase =
      b.addptr(b.fn->arg(0), b.bin(OpCode::MulI, b.pid(0), b.cInt(BM * K)));
  Value *bBase =
      b.addptr(b.fn->arg(1), b.bin(OpCode::MulI, b.pid(1), b.cInt(BN)));
  const Type *accT = ten(DType::FP32, {BM, BN});
  Operation *loop = b.emit(
      OpCode::For, {b.cInt(0), b.cInt(K), b.cInt(BK), b.constT(accT, 0.0)},
      {accT}, {}, 1);
  Block *body = loop->region(0).addBlock();
  Value *k0 = body->addArgument(sc(DType::I32));
  Value *acc = body->addArgument(accT);
  Block *top = b.cur;
  b.cur = body;
  Value *at = b.load(b.tilePtrs(b.addptr(aBase, k0), BM, BK, K));
  Value *bt = b.load(b.tilePtrs(
      b.addptr(bBase, b.bin(OpCode::MulI, k0, b.cInt(N))), BK, BN, N));
  Value *d = b.v(OpCode::Dot, {at, bt, acc}, accT,
                 {{"input_precision", std::string("tf32")}});
  b.emit(OpCode::Yield, {d}, {});
  b.cur = top;
  Value *cOff =
      b.bin(OpCode::AddI, b.bin(OpCode::MulI, b.pid(0), b.cInt(BM * N)),
            b.bin(OpCode::MulI, b.pid(1), b.cInt(BN)));
  b.store(b.tilePtrs(b.addptr(b.fn->arg(2), cOff), BM, BN, N), loop->result(0));
  b.ret();

  std::vector<uint16_t> as(M * K), bs(K * N);
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (auto &v : as)
    v = floatToHalfBits(dist(rng));
  for (auto &v : bs)
    v = floatToHalfBits(dist(rng));
  std::vector<float> c(M * N, NAN);
  auto t0 = std::chrono::steady_clock::now();
  execute(*b.mod, "matmul", {M / BM, N / BN, 1}, {ep(as), ep(bs), ep(c)});
  std::printf("[ timing ] matmul %lldx%lldx%lld fp16 -> fp32: %.3f s\n",
              (long long)M, (long long)N, (long long)K, secondsSince(t0));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float ref = 0; // same order as the kernel: k ascending
      for (int64_t k = 0; k < K; ++k)
        ref += float(halfBitsToFloat(as[m * K + k])) *
               float(halfBitsToFloat(bs[k * N + n]));
      ASSERT_EQ(c[m * N + n], ref) << m << "," << n;
    }
}

TEST(Executor, DotIntegerAndTransposedOperand) {
  const int64_t M = 16, N = 16, K = 16;
  KB b("dot", {ptrTo(DType::I8), ptrTo(DType::I8), ptrTo(DType::I32)});
  Value *a = b.load(b.tilePtrs(b.fn->arg(0), M, K));
  // b is stored as N x K and transposed in the kernel.
  Value *bt = b.load(b.tilePtrs(b.fn->arg(1), N, K));
  Value *bb = b.v(OpCode::Trans, {bt}, ten(DType::I8, {K, N}),
                  {{"order", std::vector<int64_t>{1, 0}}});
  Value *acc = b.constT(ten(DType::I32, {M, N}), int64_t(0));
  Value *d = b.v(OpCode::Dot, {a, bb, acc}, ten(DType::I32, {M, N}));
  b.store(b.tilePtrs(b.fn->arg(2), M, N), d);
  b.ret();
  std::vector<int8_t> as(M * K), bs(N * K);
  for (int64_t i = 0; i < M * K; ++i) {
    as[i] = int8_t(i * 37 % 255 - 127);
    bs[i] = int8_t(i * 91 % 255 - 127);
  }
  std::vector<int32_t> c(M * N);
  execute(*b.mod, "dot", {1, 1, 1}, {ep(as), ep(bs), ep(c)});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int32_t ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += int32_t(as[m * K + k]) * int32_t(bs[n * K + k]);
      ASSERT_EQ(c[m * N + n], ref);
    }
}

TEST(Executor, AtomicsAreAtomicAcrossPrograms) {
  KB b("k", {ptrTo(DType::I32), ptrTo(DType::FP32), ptrTo(DType::I32)},
       {"counter", "fsum", "olds"});
  const Type *i32 = sc(DType::I32), *f32 = sc(DType::FP32);
  Value *old = b.v(OpCode::AtomicRMW, {b.fn->arg(0), b.cInt(1)}, i32,
                   {{"kind", std::string("add")}});
  // "add" on f32 adds floats: the kind's meaning follows the element type.
  b.v(OpCode::AtomicRMW, {b.fn->arg(1), b.cF(0.5)}, f32,
      {{"kind", std::string("add")}});
  // Each program records the counter value it saw: a permutation of 0..n-1.
  b.store(b.addptr(b.fn->arg(2), old), b.pid());
  b.ret();
  const int64_t n = 2000;
  std::vector<int32_t> counter(1, 0), olds(n, -1);
  std::vector<float> fsum(1, 0);
  ExecOptions opts;
  opts.numThreads = 4;
  execute(*b.mod, "k", {n, 1, 1}, {ep(counter), ep(fsum), ep(olds)}, opts);
  EXPECT_EQ(counter[0], n);
  EXPECT_EQ(fsum[0], 1000.0f);
  std::vector<bool> seen(n, false);
  for (int32_t p : olds) {
    ASSERT_GE(p, 0);
    seen[p] = true;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), n);
}

TEST(Executor, AtomicMaxMaskedAndCas) {
  KB b("k", {ptrTo(DType::I32), ptrTo(DType::I32)}, {"m", "cas"});
  const int64_t n = 8;
  Value *offs = b.range(n);
  Value *vals =
      b.bin(OpCode::SubI, offs, b.constT(ten(DType::I32, {n}), int64_t(3)));
  Value *mask = b.cmpi("slt", offs, b.constT(ten(DType::I32, {n}), int64_t(6)));
  // All lanes hit m[0]; masked-off lanes (6, 7) would set it to 4.
  b.v(OpCode::AtomicRMW, {b.splat(b.fn->arg(0), {n}), vals, mask},
      ten(DType::I32, {n}), {{"kind", std::string("max")}});
  Value *old = b.v(OpCode::AtomicCAS, {b.fn->arg(1), b.cInt(5), b.cInt(9)},
                   sc(DType::I32));
  b.store(b.addptr(b.fn->arg(1), b.cInt(1)), old);
  b.ret();
  std::vector<int32_t> m(1, -100), cas{5, 0};
  execute(*b.mod, "k", {1, 1, 1}, {ep(m), ep(cas)});
  EXPECT_EQ(m[0], 2);
  EXPECT_EQ(cas[0], 9);
  EXPECT_EQ(cas[1], 5);
}

TEST(Executor, ShapeOps) {
  // x: 2x4 -> trans -> 4x2; expand/broadcast a row; reshape to 8. (Ranges
  // have power-of-two lengths, as the verifier requires.)
  KB b("k", {ptrTo(DType::I32), ptrTo(DType::I32), ptrTo(DType::I32)});
  Value *x = b.load(b.tilePtrs(b.fn->arg(0), 2, 4));
  Value *t = b.v(OpCode::Trans, {x}, ten(DType::I32, {4, 2}),
                 {{"order", std::vector<int64_t>{1, 0}}});
  b.store(b.tilePtrs(b.fn->arg(1), 4, 2), t);
  Value *row = b.v(OpCode::ExpandDims, {b.range(4)}, ten(DType::I32, {1, 4}),
                   {{"axis", int64_t(0)}});
  Value *bc = b.v(OpCode::Broadcast, {row}, ten(DType::I32, {2, 4}));
  Value *flat =
      b.v(OpCode::Reshape, {b.bin(OpCode::AddI, bc, x)}, ten(DType::I32, {8}));
  b.store(b.addptr(b.splat(b.fn->arg(2), {8}), b.range(8)), flat);
  b.ret();
  std::vector<int32_t> xs{1, 2, 3, 4, 5, 6, 7, 8}, ts(8), fl(8);
  execute(*b.mod, "k", {1, 1, 1}, {ep(xs), ep(ts), ep(fl)});
  EXPECT_EQ(ts, (std::vector<int32_t>{1, 5, 2, 6, 3, 7, 4, 8}));
  EXPECT_EQ(fl, (std::vector<int32_t>{1, 3, 5, 7, 5, 7, 9, 11}));
}

TEST(Executor, RunsGPUIRWhereConvertLayoutIsTheIdentity) {
  // A transpose: after the GPU passes, the loaded tile changes layout
  // (ttg.convert_layout) before tt.trans.
  const char *text = R"(
tt.func @transpose(%in: !tt.ptr<f32> {tt.divisibility = 16}, %out: !tt.ptr<f32> {tt.divisibility = 16}) attributes {kernel = true} {
  %r = tt.make_range {end = 64, start = 0} : tensor<64xi32>
  %c64 = arith.constant {value = 64} : tensor<64x1xi32>
  %rows = tt.expand_dims %r {axis = 1} : tensor<64x1xi32>
  %rs = arith.muli %rows, %c64 : tensor<64x1xi32>
  %cols = tt.expand_dims %r {axis = 0} : tensor<1x64xi32>
  %rb = tt.broadcast %rs : tensor<64x64xi32>
  %cb = tt.broadcast %cols : tensor<64x64xi32>
  %off = arith.addi %rb, %cb : tensor<64x64xi32>
  %ip = tt.splat %in : tensor<64x64x!tt.ptr<f32>>
  %ia = tt.addptr %ip, %off : tensor<64x64x!tt.ptr<f32>>
  %x = tt.load %ia : tensor<64x64xf32>
  %t = tt.trans %x {order = [1, 0]} : tensor<64x64xf32>
  %op = tt.splat %out : tensor<64x64x!tt.ptr<f32>>
  %oa = tt.addptr %op, %off : tensor<64x64x!tt.ptr<f32>>
  tt.store %oa, %t
  tt.return
}
)";
  auto m = parseModule(text, "transpose.tir");
  PassStats stats;
  runPasses(*m, {"convert-to-gpu", "remove-layout-conversions"}, stats, {},
            gpu::gpuPasses());
  verify(*m);
  int conversions = 0;
  m->walk([&](Operation *op) {
    conversions += op->code() == OpCode::ConvertLayout;
  });
  ASSERT_EQ(conversions, 1) << print(*m);
  std::vector<float> in(64 * 64), out(64 * 64, -1.0f);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = float(i) * 0.5f;
  execute(*m, "transpose", {1, 1, 1}, {ep(in), ep(out)});
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j)
      ASSERT_EQ(out[i * 64 + j], in[j * 64 + i]) << i << ", " << j;
}

TEST(Executor, ProgramIdsAndNumPrograms) {
  KB b("k", {ptrTo(DType::I32)}, {"out"});
  const Type *i32 = sc(DType::I32);
  Value *gx = b.v(OpCode::GetNumPrograms, {}, i32, {{"axis", int64_t(0)}});
  Value *gy = b.v(OpCode::GetNumPrograms, {}, i32, {{"axis", int64_t(1)}});
  // linear = (z * gy + y) * gx + x; out[linear] = x + 10 y + 100 z + 1000 gz
  Value *gz = b.v(OpCode::GetNumPrograms, {}, i32, {{"axis", int64_t(2)}});
  Value *lin = b.bin(
      OpCode::AddI,
      b.bin(OpCode::MulI,
            b.bin(OpCode::AddI, b.bin(OpCode::MulI, b.pid(2), gy), b.pid(1)),
            gx),
      b.pid(0));
  Value *val = b.bin(
      OpCode::AddI,
      b.bin(OpCode::AddI, b.pid(0), b.bin(OpCode::MulI, b.pid(1), b.cInt(10))),
      b.bin(OpCode::AddI, b.bin(OpCode::MulI, b.pid(2), b.cInt(100)),
            b.bin(OpCode::MulI, gz, b.cInt(1000))));
  b.store(b.addptr(b.fn->arg(0), lin), val);
  b.ret();
  std::vector<int32_t> out(4 * 3 * 2, -1);
  execute(*b.mod, "k", {4, 3, 2}, {ep(out)});
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 4; ++x)
        EXPECT_EQ(out[(z * 3 + y) * 4 + x], x + 10 * y + 100 * z + 2000);
}

TEST(Executor, AssertFailureIsAnExecutionError) {
  KB b("k", {sc(DType::I32)}, {"n"});
  b.at(7, 3);
  Value *ok = b.cmpi("slt", b.range(4), b.splat(b.fn->arg(0), {4}));
  b.emit(OpCode::Assert, {ok}, {}, {{"message", std::string("i < n")}});
  b.ret();
  EXPECT_NO_THROW(execute(*b.mod, "k", {3, 1, 1}, {int64_t(4)}));
  try {
    execute(*b.mod, "k", {1, 1, 1}, {int64_t(2)});
    FAIL();
  } catch (const ExecutionError &e) {
    EXPECT_STREQ(e.what(), "device assertion failed in kernel 'k' at "
                           "add.py:7:3: i < n (element (2)), program id "
                           "(0, 0, 0)");
  }
}

TEST(Executor, PrintWritesToStdout) {
  KB b("k", {sc(DType::I32), sc(DType::FP32)}, {"n", "f"});
  b.emit(OpCode::Print, {b.fn->arg(0)}, {}, {{"prefix", std::string("n:")}});
  b.emit(OpCode::Print, {b.range(2)}, {}, {{"prefix", std::string("r: ")}});
  b.emit(OpCode::Print, {b.fn->arg(1)}, {}, {{"prefix", std::string("f ")}});
  b.ret();
  testing::internal::CaptureStdout();
  execute(*b.mod, "k", {1, 1, 1}, {int64_t(-42), 0.1});
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, "pid (0, 0, 0) n: -42\n"
                 "pid (0, 0, 0) idx (0) r: 0\n"
                 "pid (0, 0, 0) idx (1) r: 1\n"
                 "pid (0, 0, 0) f 0.1\n");
}

TEST(Executor, ArgumentChecks) {
  auto m = buildAdd(16, true);
  std::vector<float> x(16);
  auto expectError = [&](std::vector<ExecArg> args, const std::string &part) {
    try {
      execute(*m, "add_kernel", {1, 1, 1}, args);
      ADD_FAILURE() << "no error for " << part;
    } catch (const ExecutionError &e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << e.what();
    }
  };
  expectError({ep(x), ep(x), ep(x)}, "expects 4 arguments, got 3");
  expectError({ep(x), int64_t(3), ep(x), int64_t(16)},
              "argument 1 ('y_ptr') has type !tt.ptr<f32> and needs a "
              "pointer, got an integer");
  expectError({ep(x), ep(x), ep(x), 1.5}, "needs an integer, got a float");
  expectError({ep(x), ep(x), ep(x), ep(x)}, "needs an integer, got a pointer");
  try {
    execute(*m, "nope", {1, 1, 1}, {});
    FAIL();
  } catch (const ExecutionError &e) {
    EXPECT_NE(std::string(e.what()).find("no kernel named 'nope'"),
              std::string::npos);
  }
  // Integer args are cast to the parameter's type.
  KB b("k", {sc(DType::I8), ptrTo(DType::I32)});
  b.store(b.fn->arg(1), b.v(OpCode::ExtSI, {b.fn->arg(0)}, sc(DType::I32)));
  b.ret();
  std::vector<int32_t> out(1);
  execute(*b.mod, "k", {1, 1, 1}, {int64_t(255), ep(out)});
  EXPECT_EQ(out[0], -1);
  // An empty grid runs nothing.
  EXPECT_NO_THROW(execute(*m, "add_kernel", {0, 1, 1},
                          {ep(x), ep(x), ep(x), int64_t(1 << 30)}));
}

TEST(Executor, IntToPtrKeepsProvenance) {
  KB b("k", {ptrTo(DType::FP32), ptrTo(DType::FP32)}, {"x", "y"});
  Value *addr = b.v(OpCode::PtrToInt, {b.fn->arg(0)}, sc(DType::I64));
  Value *addr4 = b.bin(OpCode::AddI, addr, b.cInt(4, DType::I64));
  Value *p = b.v(OpCode::IntToPtr, {addr4}, ptrTo(DType::FP32));
  b.store(p, b.cF(3.0));
  b.ret();
  std::vector<float> x(2), y(2);
  execute(*b.mod, "k", {1, 1, 1}, {ep(x), ep(y)});
  EXPECT_EQ(x[1], 3.0f);
  // One element: x+4 bytes is one past the end of x -> out of bounds of x.
  std::vector<float> one(1);
  EXPECT_THROW(execute(*b.mod, "k", {1, 1, 1}, {ep(one), ep(y)}),
               ExecutionError);
}

/// softmax over rows of a [rows, 1024] fp32 matrix, one program per row.
TEST(Executor, SoftmaxRows) {
  const int64_t rows = 4096, cols = 1024, block = 1024;
  KB b("softmax", {ptrTo(DType::FP32), ptrTo(DType::FP32), sc(DType::I32)},
       {"x", "out", "n_cols"});
  Value *start = b.bin(OpCode::MulI, b.pid(), b.fn->arg(2));
  Value *offs = b.range(block);
  Value *mask = b.cmpi("slt", offs, b.splat(b.fn->arg(2), {block}));
  Value *x =
      b.load(b.addptr(b.splat(b.addptr(b.fn->arg(0), start), {block}), offs),
             mask, b.constT(ten(DType::FP32, {block}), -INFINITY));
  const Type *f32 = sc(DType::FP32);
  Value *mx = b.v(OpCode::Reduce, {x}, f32,
                  {{"axis", int64_t(0)}, {"kind", std::string("max")}});
  Value *e = b.v(OpCode::Exp, {b.bin(OpCode::SubF, x, b.splat(mx, {block}))},
                 x->type());
  Value *s = b.v(OpCode::Reduce, {e}, f32,
                 {{"axis", int64_t(0)}, {"kind", std::string("sum")}});
  Value *y = b.bin(OpCode::DivF, e, b.splat(s, {block}));
  b.store(b.addptr(b.splat(b.addptr(b.fn->arg(1), start), {block}), offs), y,
          mask);
  b.ret();
  std::vector<float> xs(rows * cols), out(rows * cols);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0, 2);
  for (auto &v : xs)
    v = dist(rng);
  for (int threads : {1, 2}) {
    ExecOptions opts;
    opts.numThreads = threads;
    auto t0 = std::chrono::steady_clock::now();
    execute(*b.mod, "softmax", {rows, 1, 1}, {ep(xs), ep(out), int64_t(cols)},
            opts);
    std::printf("[ timing ] softmax %lldx%lld fp32, %d thread(s): %.3f s\n",
                (long long)rows, (long long)cols, threads, secondsSince(t0));
  }
  for (int64_t r = 0; r < rows; r += 97) {
    double m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, double(xs[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c)
      sum += double(float(std::exp(double(float(xs[r * cols + c] - m)))));
    for (int64_t c = 0; c < cols; ++c) {
      double ref =
          double(float(std::exp(double(float(xs[r * cols + c] - m))))) /
          float(sum);
      ASSERT_NEAR(out[r * cols + c], ref, 1e-6 * std::max(1.0, ref)) << r;
    }
  }
}

TEST(Executor, MalformedIRIsAnIRError) {
  KB b("k", {sc(DType::I32)});
  b.v(OpCode::CmpI, {b.fn->arg(0), b.fn->arg(0)}, sc(DType::I1),
      {{"predicate", std::string("bogus")}});
  b.ret();
  EXPECT_THROW(execute(*b.mod, "k", {1, 1, 1}, {int64_t(1)}), IRError);
}

} // namespace
