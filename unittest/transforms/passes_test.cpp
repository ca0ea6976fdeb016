// Tests of lib/transforms: constant folding semantics, each pass on IR built
// with the raw Operation/Block API or parsed from text, and the pass manager.
#include "tritium/gpu/layouts.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"
#include "tritium/transforms/fold.h"
#include "tritium/transforms/pass.h"
#include "tritium/transforms/passes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace tritium;

namespace {

const Type *ty(DType t) { return Type::scalar(t); }

ConstValue I(DType t, int64_t v) { return ConstValue::ofInt(t, (uint64_t)v); }
ConstValue F(DType t, double v) { return ConstValue::ofFloat(t, v); }

std::optional<ConstValue> fold(OpCode c, std::vector<ConstValue> ops, DType rt,
                               std::string predicate = "") {
  std::map<std::string, Attribute> attrs;
  if (!predicate.empty())
    attrs["predicate"] = predicate;
  return foldElementwise(c, attrs, ops, rt);
}

int64_t foldInt(OpCode c, std::vector<ConstValue> ops, DType rt) {
  auto r = fold(c, ops, rt);
  EXPECT_TRUE(r.has_value());
  return r ? r->asInt() : 0;
}

double foldFloat(OpCode c, std::vector<ConstValue> ops, DType rt) {
  auto r = fold(c, ops, rt);
  EXPECT_TRUE(r.has_value());
  return r ? r->f : -12345.0;
}

std::unique_ptr<Module> parse(const std::string &text) {
  auto m = parseModule(text, "test.tir");
  verify(*m);
  return m;
}

std::string printNoLoc(const Module &m) {
  PrintOptions o;
  o.printLocations = false;
  return print(m, o);
}

std::string runOn(const std::string &text, std::vector<std::string> passes,
                  PassStats *statsOut = nullptr) {
  auto m = parse(text);
  PassStats stats;
  runPasses(*m, passes, stats);
  if (statsOut)
    *statsOut = stats;
  return printNoLoc(*m);
}

int count(const std::string &haystack, const std::string &needle) {
  int n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1))
    ++n;
  return n;
}

// ---------------------------------------------------------------------------
// Folding semantics
// ---------------------------------------------------------------------------

TEST(PassesFold, IntegersWrapAtTheirWidth) {
  EXPECT_EQ(foldInt(OpCode::AddI, {I(DType::I8, 127), I(DType::I8, 1)}, DType::I8), -128);
  EXPECT_EQ(foldInt(OpCode::AddI, {I(DType::U8, 255), I(DType::U8, 1)}, DType::U8), 0);
  EXPECT_EQ(foldInt(OpCode::SubI, {I(DType::U16, 0), I(DType::U16, 1)}, DType::U16), 65535);
  EXPECT_EQ(foldInt(OpCode::MulI, {I(DType::I32, 65536), I(DType::I32, 65536)}, DType::I32), 0);
  EXPECT_EQ(foldInt(OpCode::MulI, {I(DType::I64, INT64_MAX), I(DType::I64, 2)}, DType::I64), -2);
  EXPECT_EQ(foldInt(OpCode::ShLI, {I(DType::I32, 1), I(DType::I32, 31)}, DType::I32), INT32_MIN);
  EXPECT_EQ(foldInt(OpCode::AbsI, {I(DType::I8, -128)}, DType::I8), -128);
  // mulhiui reads both operands as unsigned, whatever the type's signedness.
  EXPECT_EQ(foldInt(OpCode::MulHiUI, {I(DType::I32, -1), I(DType::I32, -1)}, DType::I32), -2);
  EXPECT_EQ(foldInt(OpCode::MulHiUI, {I(DType::I32, 65536), I(DType::I32, 65536)}, DType::I32), 1);
  EXPECT_EQ(foldInt(OpCode::MulHiUI, {I(DType::I64, -1), I(DType::I64, 2)}, DType::I64), 1);
  // u64 above INT64_MAX keeps its bits in the attribute.
  auto big = fold(OpCode::AddI, {I(DType::U64, INT64_MAX), I(DType::U64, 1)}, DType::U64);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->zext(), 1ull << 63);
  EXPECT_EQ(std::get<int64_t>(big->toAttr()), INT64_MIN);
}

TEST(PassesFold, SignedAndUnsignedOpsReadTheSameBitsDifferently) {
  ConstValue m7 = I(DType::I32, -7), two = I(DType::I32, 2);
  EXPECT_EQ(foldInt(OpCode::DivSI, {m7, two}, DType::I32), -3); // toward zero
  EXPECT_EQ(foldInt(OpCode::RemSI, {m7, two}, DType::I32), -1); // dividend's sign
  EXPECT_EQ(foldInt(OpCode::DivUI, {m7, two}, DType::I32), 2147483644);
  EXPECT_EQ(foldInt(OpCode::ShRSI, {m7, I(DType::I32, 1)}, DType::I32), -4);
  EXPECT_EQ(foldInt(OpCode::ShRUI, {m7, I(DType::I32, 28)}, DType::I32), 15);
  EXPECT_EQ(foldInt(OpCode::MaxSI, {m7, two}, DType::I32), 2);
  EXPECT_EQ(foldInt(OpCode::MaxUI, {m7, two}, DType::I32), -7);
  ConstValue m1 = I(DType::I32, -1), one = I(DType::I32, 1);
  EXPECT_EQ(fold(OpCode::CmpI, {m1, one}, DType::I1, "slt")->bits, 1u);
  EXPECT_EQ(fold(OpCode::CmpI, {m1, one}, DType::I1, "ult")->bits, 0u);
  EXPECT_EQ(fold(OpCode::CmpI, {m1, one}, DType::I1, "uge")->bits, 1u);
  EXPECT_EQ(fold(OpCode::CmpI, {m1, m1}, DType::I1, "ne")->bits, 0u);
  EXPECT_FALSE(fold(OpCode::CmpI, {m1, one}, DType::I1, "bogus"));
  EXPECT_EQ(std::get<bool>(fold(OpCode::CmpI, {m1, one}, DType::I1, "sle")->toAttr()), true);
}

TEST(PassesFold, UndefinedIntegerResultsAreNotFolded) {
  EXPECT_FALSE(fold(OpCode::DivSI, {I(DType::I32, 5), I(DType::I32, 0)}, DType::I32));
  EXPECT_FALSE(fold(OpCode::DivUI, {I(DType::U32, 5), I(DType::U32, 0)}, DType::U32));
  EXPECT_FALSE(fold(OpCode::RemSI, {I(DType::I32, 5), I(DType::I32, 0)}, DType::I32));
  EXPECT_FALSE(fold(OpCode::RemUI, {I(DType::I32, 5), I(DType::I32, 0)}, DType::I32));
  EXPECT_FALSE(fold(OpCode::DivSI, {I(DType::I8, -128), I(DType::I8, -1)}, DType::I8));
  EXPECT_FALSE(fold(OpCode::ShLI, {I(DType::I32, 1), I(DType::I32, 32)}, DType::I32));
  EXPECT_FALSE(fold(OpCode::ShRSI, {I(DType::I16, 1), I(DType::I16, -1)}, DType::I16));
  EXPECT_FALSE(fold(OpCode::FPToSI, {F(DType::FP32, 3e9)}, DType::I32));
  EXPECT_FALSE(fold(OpCode::FPToSI, {F(DType::FP32, NAN)}, DType::I32));
  EXPECT_FALSE(fold(OpCode::FPToUI, {F(DType::FP32, -1.5)}, DType::U8));
  EXPECT_FALSE(fold(OpCode::FPToUI, {F(DType::FP32, 256.0)}, DType::U8));
}

TEST(PassesFold, FloatResultsAreRoundedToTheirPrecision) {
  // fp16: 11 significant bits, ties to even, max 65504.
  EXPECT_EQ(foldFloat(OpCode::AddF, {F(DType::FP16, 2048), F(DType::FP16, 1)}, DType::FP16), 2048);
  EXPECT_EQ(foldFloat(OpCode::AddF, {F(DType::FP16, 2048), F(DType::FP16, 3)}, DType::FP16), 2052);
  EXPECT_EQ(foldFloat(OpCode::AddF, {F(DType::FP16, 65504), F(DType::FP16, 8)}, DType::FP16), 65504);
  EXPECT_TRUE(std::isinf(foldFloat(OpCode::AddF, {F(DType::FP16, 65504), F(DType::FP16, 16)}, DType::FP16)));
  EXPECT_EQ(foldFloat(OpCode::TruncF, {F(DType::FP32, 0.1)}, DType::FP16), 0.0999755859375);
  // fp16 subnormals: 2^-24 is the smallest; 2^-25 ties to 0.
  EXPECT_EQ(F(DType::FP16, std::ldexp(1.0, -24)).f, std::ldexp(1.0, -24));
  EXPECT_EQ(F(DType::FP16, std::ldexp(1.0, -25)).f, 0.0);
  EXPECT_EQ(F(DType::FP16, std::ldexp(3.0, -26)).f, std::ldexp(1.0, -24));
  // bf16: 8 significant bits.
  EXPECT_EQ(foldFloat(OpCode::AddF, {F(DType::BF16, 256), F(DType::BF16, 1)}, DType::BF16), 256);
  EXPECT_EQ(foldFloat(OpCode::AddF, {F(DType::BF16, 256), F(DType::BF16, 3)}, DType::BF16), 260);
  // fp32 is rounded too, fp64 is not.
  EXPECT_EQ(foldFloat(OpCode::DivF, {F(DType::FP32, 1), F(DType::FP32, 3)}, DType::FP32),
            (double)(1.0f / 3.0f));
  EXPECT_EQ(foldFloat(OpCode::DivF, {F(DType::FP64, 1), F(DType::FP64, 3)}, DType::FP64), 1.0 / 3.0);
  EXPECT_EQ(foldFloat(OpCode::SIToFP, {I(DType::I32, 16777217)}, DType::FP32), 16777216.0);
  EXPECT_EQ(foldFloat(OpCode::UIToFP, {I(DType::U8, 255)}, DType::FP16), 255.0);
  EXPECT_EQ(foldFloat(OpCode::SIToFP, {I(DType::U8, 255)}, DType::FP16), -1.0);
}

TEST(PassesFold, FloatSpecialValues) {
  double nan = NAN;
  EXPECT_TRUE(std::isnan(foldFloat(OpCode::MaximumF, {F(DType::FP32, nan), F(DType::FP32, 1)}, DType::FP32)));
  EXPECT_EQ(foldFloat(OpCode::MaxNumF, {F(DType::FP32, nan), F(DType::FP32, 1)}, DType::FP32), 1.0);
  EXPECT_FALSE(std::signbit(foldFloat(OpCode::MaximumF, {F(DType::FP32, -0.0), F(DType::FP32, 0.0)}, DType::FP32)));
  EXPECT_TRUE(std::signbit(foldFloat(OpCode::MinimumF, {F(DType::FP32, 0.0), F(DType::FP32, -0.0)}, DType::FP32)));
  EXPECT_EQ(fold(OpCode::CmpF, {F(DType::FP32, nan), F(DType::FP32, 1)}, DType::I1, "une")->bits, 1u);
  EXPECT_EQ(fold(OpCode::CmpF, {F(DType::FP32, nan), F(DType::FP32, nan)}, DType::I1, "oeq")->bits, 0u);
  EXPECT_EQ(fold(OpCode::CmpF, {F(DType::FP32, 1), F(DType::FP32, 2)}, DType::I1, "olt")->bits, 1u);
  EXPECT_EQ(foldFloat(OpCode::RemF, {F(DType::FP32, -7), F(DType::FP32, 2)}, DType::FP32), -1.0);
  EXPECT_TRUE(std::isinf(foldFloat(OpCode::DivF, {F(DType::FP32, 1), F(DType::FP32, 0)}, DType::FP32)));
  EXPECT_EQ(foldInt(OpCode::FPToSI, {F(DType::FP32, -3.7)}, DType::I32), -3);
}

TEST(PassesFold, CastsAndBitcasts) {
  EXPECT_EQ(foldInt(OpCode::ExtSI, {I(DType::I8, -1)}, DType::I32), -1);
  EXPECT_EQ(foldInt(OpCode::ExtUI, {I(DType::I8, -1)}, DType::I32), 255);
  EXPECT_EQ(foldInt(OpCode::TruncI, {I(DType::I32, 0x1ff)}, DType::I8), -1);
  EXPECT_EQ(foldInt(OpCode::Bitcast, {F(DType::FP32, 1.0)}, DType::I32), 0x3f800000);
  EXPECT_EQ(foldFloat(OpCode::Bitcast, {I(DType::I16, 0x3c00)}, DType::FP16), 1.0);
  EXPECT_EQ(foldFloat(OpCode::Bitcast, {I(DType::I16, 0x3f80)}, DType::BF16), 1.0);
  EXPECT_EQ(foldInt(OpCode::Bitcast, {F(DType::FP16, -2.0)}, DType::I16), (int16_t)0xc000);
  EXPECT_EQ(foldInt(OpCode::Bitcast, {F(DType::FP16, std::ldexp(1.0, -24))}, DType::I16), 1);
  EXPECT_FALSE(fold(OpCode::Bitcast, {I(DType::I32, 0x7fc00001)}, DType::FP32)); // NaN payload
  // fp8 is left to the hardware.
  EXPECT_FALSE(fold(OpCode::ExtF, {F(DType::FP8E5, 1.0)}, DType::FP32));
  EXPECT_FALSE(fold(OpCode::TruncF, {F(DType::FP32, 1.0)}, DType::FP8E4NV));
}

TEST(PassesFold, MathAndSelect) {
  EXPECT_EQ(foldFloat(OpCode::Sqrt, {F(DType::FP32, 4)}, DType::FP32), 2.0);
  EXPECT_EQ(foldFloat(OpCode::Exp2, {F(DType::FP32, 3)}, DType::FP32), 8.0);
  EXPECT_EQ(foldFloat(OpCode::Floor, {F(DType::FP32, -1.5)}, DType::FP32), -2.0);
  EXPECT_EQ(foldFloat(OpCode::Fma, {F(DType::FP32, 2), F(DType::FP32, 3), F(DType::FP32, 1)}, DType::FP32), 7.0);
  EXPECT_EQ(foldInt(OpCode::Select, {ConstValue::ofBool(false), I(DType::I32, 1), I(DType::I32, 2)}, DType::I32), 2);
}

// ---------------------------------------------------------------------------
// Passes on IR built with the raw API
// ---------------------------------------------------------------------------

struct RawKernel {
  Module m;
  Function *f;
  Block *b;
  RawKernel(std::vector<const Type *> args) {
    f = m.addFunction(std::make_unique<Function>("k", args));
    f->attrs()["kernel"] = true;
    b = &f->entry();
  }
  Value *op(OpCode c, std::vector<Value *> operands, const Type *t,
            std::map<std::string, Attribute> attrs = {}, Location loc = {}) {
    return b->push_back(Operation::create(c, operands, {t}, attrs, loc))->result(0);
  }
  Value *cst(const Type *t, Attribute v) {
    return op(OpCode::Constant, {}, t, {{"value", v}});
  }
  void store(Value *p, Value *v) {
    b->push_back(Operation::create(OpCode::Store, {p, v}, {}));
  }
  void ret() { b->push_back(Operation::create(OpCode::Return, {}, {})); }
};

TEST(PassesCanonicalize, FoldsSplatTensorsAndKeepsTheLocation) {
  const Type *t = Type::tensor(ty(DType::I16), {4});
  RawKernel k({Type::tensor(Type::pointer(ty(DType::I16)), {4})});
  Value *a = k.cst(t, int64_t(30000));
  Value *b = k.cst(t, int64_t(30000));
  Location loc{"k.py", 7, 3};
  Value *sum = k.op(OpCode::AddI, {a, b}, t, {}, loc);
  k.store(k.f->arg(0), sum);
  k.ret();
  PassStats stats;
  runPasses(k.m, {"canonicalize"}, stats);
  Operation *store = std::next(k.b->ops().begin())->get();
  ASSERT_EQ(store->code(), OpCode::Store);
  Operation *c = store->operand(1)->definingOp();
  ASSERT_EQ(c->code(), OpCode::Constant);
  EXPECT_EQ(c->result(0)->type(), t);
  EXPECT_EQ(c->intAttr("value"), 60000 - 65536);
  EXPECT_EQ(c->loc(), loc);
  EXPECT_EQ(k.b->ops().size(), 3u); // constant, store, return
  EXPECT_EQ(stats.counters["canonicalize.folded"], 1);
}

TEST(PassesCanonicalize, DoesNotFoldDivisionByZero) {
  RawKernel k({Type::pointer(ty(DType::I32))});
  Value *a = k.cst(ty(DType::I32), int64_t(7));
  Value *z = k.cst(ty(DType::I32), int64_t(0));
  Value *q = k.op(OpCode::DivSI, {a, z}, ty(DType::I32));
  k.store(k.f->arg(0), q);
  k.ret();
  PassStats stats;
  runPasses(k.m, {"canonicalize"}, stats);
  EXPECT_EQ(q->definingOp()->code(), OpCode::DivSI);
  EXPECT_EQ(stats.counters["canonicalize.folded"], 0);
}

TEST(PassesCanonicalize, IdentitiesKeepFloatSemantics) {
  std::string in = R"(
tt.func @k(%p: !tt.ptr<f32>, %q: !tt.ptr<i32>, %x: f32, %i: i32) attributes {kernel = true} {
  %z = arith.constant {value = 0.0} : f32
  %nz = arith.constant {value = -0.0} : f32
  %one = arith.constant {value = 1.0} : f32
  %iz = arith.constant {value = 0} : i32
  %a = arith.addf %x, %z : f32
  %b = arith.addf %x, %nz : f32
  %c = arith.mulf %a, %one : f32
  %d = arith.mulf %b, %z : f32
  %e = arith.addf %c, %d : f32
  tt.store %p, %e
  %m = arith.muli %i, %iz : i32
  %s = arith.subi %i, %i : i32
  %t = arith.addi %m, %s : i32
  tt.store %q, %t
  tt.return
}
)";
  std::string out = runOn(in, {"canonicalize"});
  // x + 0.0 stays (it turns -0.0 into 0.0); x + -0.0 and x * 1.0 go; x * 0.0
  // stays (inf * 0 is NaN); integer x * 0 and x - x fold.
  EXPECT_EQ(count(out, "arith.addf %x, %z"), 1) << out;
  EXPECT_EQ(count(out, "arith.mulf"), 1) << out;
  EXPECT_EQ(count(out, "arith.mulf %x, %z"), 1) << out;
  EXPECT_EQ(count(out, "arith.addf %a, %d"), 1) << out;
  EXPECT_EQ(count(out, "arith.muli"), 0) << out;
  EXPECT_EQ(count(out, "arith.subi"), 0) << out;
  EXPECT_EQ(count(out, "arith.addi"), 0) << out;
  EXPECT_EQ(count(out, "arith.constant {value = 0} : i32"), 1) << out;
}

TEST(PassesCanonicalize, ControlFlowOnConstants) {
  std::string in = R"(
tt.func @k(%p: !tt.ptr<f32>, %x: f32) attributes {kernel = true} {
  %false = arith.constant {value = false} : i1
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %r = scf.if %false : f32 {
    %a = arith.addf %x, %x : f32
    scf.yield %a
  } {
    %b = arith.mulf %x, %x : f32
    scf.yield %b
  }
  %l = scf.for %c1, %c0, %c1, %r : f32 {
  ^bb0(%iv: i32, %acc: f32):
    %n = arith.addf %acc, %x : f32
    scf.yield %n
  }
  tt.store %p, %l
  tt.return
}
)";
  std::string out = runOn(in, {"canonicalize"});
  EXPECT_EQ(count(out, "scf."), 0) << out;
  EXPECT_EQ(count(out, "arith.addf"), 0) << out;
  EXPECT_EQ(count(out, "%b = arith.mulf %x, %x"), 1) << out;
  EXPECT_EQ(count(out, "tt.store %p, %b"), 1) << out;
}

// ---------------------------------------------------------------------------
// CSE, DCE
// ---------------------------------------------------------------------------

TEST(PassesCSE, ScopesFollowRegions) {
  std::string in = R"(
tt.func @k(%p: !tt.ptr<i32>, %c: i1, %x: i32, %y: i32) attributes {kernel = true} {
  %a = arith.addi %x, %y : i32
  %r = scf.if %c : i32 {
    %b = arith.addi %y, %x : i32
    %in = arith.muli %b, %b : i32
    scf.yield %in
  } {
    %in2 = arith.muli %a, %a : i32
    scf.yield %in2
  }
  %out = arith.muli %a, %a : i32
  %s = arith.addi %r, %out : i32
  tt.store %p, %s
  tt.return
}
)";
  PassStats stats;
  std::string out = runOn(in, {"cse"}, &stats);
  // %b (commuted) is %a; the three muli %a, %a live in sibling or unrelated
  // scopes, so none replaces another.
  EXPECT_EQ(count(out, "arith.addi %y, %x"), 0) << out;
  EXPECT_EQ(count(out, "arith.muli %a, %a"), 3) << out;
  EXPECT_EQ(stats.counters["cse.removed"], 1);
}

TEST(PassesCSE, NeverMergesLoadsOrDistinctZeros) {
  std::string in = R"(
tt.func @k(%p: !tt.ptr<f32>) attributes {kernel = true} {
  %z = arith.constant {value = 0.0} : f32
  %nz = arith.constant {value = -0.0} : f32
  %z2 = arith.constant {value = 0.0} : f32
  %a = tt.load %p : f32
  %b = tt.load %p : f32
  %s = arith.addf %a, %b : f32
  %t = arith.addf %s, %z : f32
  %u = arith.addf %t, %nz : f32
  %v = arith.addf %u, %z2 : f32
  tt.store %p, %v
  tt.return
}
)";
  std::string out = runOn(in, {"cse"});
  EXPECT_EQ(count(out, "tt.load"), 2) << out;
  EXPECT_EQ(count(out, "arith.constant"), 2) << out;
  EXPECT_EQ(count(out, "arith.addf %u, %z :"), 1) << out;
}

TEST(PassesDCE, RemovesSelfFeedingLoopValuesAndUncalledFunctions) {
  std::string in = R"(
tt.func @helper(%x: f32) -> f32 {
  tt.return %x
}
tt.func @used(%x: f32) -> f32 {
  tt.return %x
}
tt.func @k(%p: !tt.ptr<f32>, %x: f32) attributes {kernel = true} {
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %c8 = arith.constant {value = 8} : i32
  %keep, %dead = scf.for %c0, %c8, %c1, %x, %x : f32, f32 {
  ^bb0(%iv: i32, %a: f32, %d: f32):
    %a2 = arith.addf %a, %x : f32
    %d2 = arith.mulf %d, %d : f32
    %d3 = arith.addf %d2, %a : f32
    scf.yield %a2, %d3
  }
  %y = tt.call %keep {callee = "used"} : f32
  tt.store %p, %y
  tt.return
}
)";
  PassStats stats;
  std::string out = runOn(in, {"dce"}, &stats);
  EXPECT_EQ(count(out, "@helper"), 0) << out;
  EXPECT_EQ(count(out, "@used"), 1) << out;
  EXPECT_EQ(count(out, "arith.mulf"), 0) << out;
  EXPECT_EQ(count(out, "arith.addf"), 1) << out;
  EXPECT_EQ(count(out, "scf.yield %a2\n"), 1) << out;
  EXPECT_EQ(stats.counters["dce.iter-args-removed"], 1);
  EXPECT_EQ(stats.counters["dce.functions-removed"], 1);
}

TEST(PassesDCE, KeepsLoopsWithSideEffects) {
  std::string in = R"(
tt.func @k(%p: !tt.ptr<f32>, %x: f32) attributes {kernel = true} {
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %c8 = arith.constant {value = 8} : i32
  %r = scf.for %c0, %c8, %c1, %x : f32 {
  ^bb0(%iv: i32, %a: f32):
    tt.store %p, %a
    scf.yield %a
  }
  %pure = scf.for %c0, %c8, %c1, %x : f32 {
  ^bb0(%iv: i32, %a: f32):
    %l = tt.load %p : f32
    scf.yield %l
  }
  tt.return
}
)";
  std::string out = runOn(in, {"dce"});
  EXPECT_EQ(count(out, "scf.for"), 2) << out;
  EXPECT_EQ(count(out, "tt.store %p, %a"), 1) << out;
}

// ---------------------------------------------------------------------------
// GPU IR: ttg.convert_layout is pure and only changes the layout
// ---------------------------------------------------------------------------

/// Three distinct layouts of a 512-element 1-D tensor, written #A, #B, #C in
/// the tests' text.
const std::vector<std::pair<std::string, std::string>> kLayoutNames = {
    {"#A", "#ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], "
           "warpsPerCTA = [4], order = [0]}>"},
    {"#B", "#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], "
           "warpsPerCTA = [4], order = [0]}>"},
    {"#C", "#ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], "
           "warpsPerCTA = [4], order = [0]}>"},
};

std::string replaceAll(std::string s, const std::string &from,
                       const std::string &to) {
  for (size_t pos = s.find(from); pos != std::string::npos;
       pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

/// Parses blocked layouts (what the IR parser hands to a registered layout
/// parser) while in scope.
struct WithBlockedLayouts {
  static const Layout *parse(const std::string &text,
                             const std::vector<int64_t> &shape) {
    size_t pos = 0;
    const Layout *l = gpu::parseLayout(text, pos, shape);
    if (!l || pos != text.size())
      throw std::runtime_error("not a blocked layout");
    return l;
  }
  LayoutParser previous = setLayoutParser(&parse);
  ~WithBlockedLayouts() { setLayoutParser(previous); }
};

/// runOn for GPU IR written with #A, #B, #C; the output uses them too.
std::string runOnGPU(std::string text, std::vector<std::string> passes,
                     PassStats *statsOut = nullptr) {
  WithBlockedLayouts layouts;
  for (const auto &[name, full] : kLayoutNames)
    text = replaceAll(text, name, full);
  std::string out = runOn(text, passes, statsOut);
  for (const auto &[name, full] : kLayoutNames)
    out = replaceAll(out, full, name);
  return out;
}

TEST(PassesGPU, CanonicalizeFoldsNeedlessConversions) {
  std::string in = R"(
tt.func @k(%p: tensor<512x!tt.ptr<f32>, #A>) attributes {kernel = true} {
  %x = tt.load %p : tensor<512xf32, #A>
  %same = ttg.convert_layout %x : tensor<512xf32, #A>
  %b = ttg.convert_layout %x : tensor<512xf32, #B>
  %back = ttg.convert_layout %b : tensor<512xf32, #A>
  %two = arith.constant {value = 2.0} : tensor<512xf32, #A>
  %twoB = ttg.convert_layout %two : tensor<512xf32, #B>
  %y = arith.mulf %b, %twoB : tensor<512xf32, #B>
  %c = ttg.convert_layout %y : tensor<512xf32, #C>
  %yc = ttg.convert_layout %c : tensor<512xf32, #A>
  %s0 = arith.addf %same, %back : tensor<512xf32, #A>
  %s = arith.addf %s0, %yc : tensor<512xf32, #A>
  tt.store %p, %s
  tt.return
}
)";
  PassStats stats;
  std::string out = runOnGPU(in, {"canonicalize"}, &stats);
  // A conversion to the operand's own type, and a round trip A -> B -> A,
  // are the operand itself.
  EXPECT_EQ(count(out, "%s0 = arith.addf %x, %x : tensor<512xf32, #A>"), 1)
      << out;
  // The constant is built in the wanted layout instead of converted.
  EXPECT_EQ(count(out, "arith.constant {value = 2.0} : tensor<512xf32, #B>"), 1)
      << out;
  EXPECT_EQ(count(out, "arith.constant"), 1) << out;
  // B -> C -> A is one conversion B -> A; the one to C is gone.
  EXPECT_EQ(count(out, "ttg.convert_layout %y : tensor<512xf32, #A>"), 1)
      << out;
  EXPECT_EQ(count(out, "#C"), 0) << out;
  // The conversion that moves data stays.
  EXPECT_EQ(count(out, "%b = ttg.convert_layout %x : tensor<512xf32, #B>"), 1)
      << out;
  EXPECT_EQ(count(out, "ttg.convert_layout"), 2) << out;
}

TEST(PassesGPU, ConstantsEvaluateThroughConversions) {
  WithBlockedLayouts layouts;
  std::string text = replaceAll(replaceAll(R"(
tt.func @k(%p: tensor<512x!tt.ptr<i32>, #A>) attributes {kernel = true} {
  %c = arith.constant {value = 5} : tensor<512xi32, #A>
  %d = ttg.convert_layout %c : tensor<512xi32, #B>
  %e = arith.addi %d, %d : tensor<512xi32, #B>
  %f = ttg.convert_layout %e : tensor<512xi32, #A>
  tt.store %p, %f
  tt.return
}
)",
                                           "#A", kLayoutNames[0].second),
                                "#B", kLayoutNames[1].second);
  auto m = parse(text);
  Operation *store = nullptr;
  m->walk([&](Operation *op) {
    if (op->code() == OpCode::Store)
      store = op;
  });
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->operand(1)->definingOp()->code(), OpCode::ConvertLayout);
  auto v = evaluateConstant(store->operand(1));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->asInt(), 10);
}

TEST(PassesGPU, CSEMergesEqualConversionsAndDCEDropsUnusedOnes) {
  std::string in = R"(
tt.func @k(%p: tensor<512x!tt.ptr<f32>, #A>) attributes {kernel = true} {
  %x = tt.load %p : tensor<512xf32, #A>
  %b1 = ttg.convert_layout %x : tensor<512xf32, #B>
  %b2 = ttg.convert_layout %x : tensor<512xf32, #B>
  %c = ttg.convert_layout %x : tensor<512xf32, #C>
  %s = arith.addf %b1, %b2 : tensor<512xf32, #B>
  %sc = ttg.convert_layout %s : tensor<512xf32, #C>
  %dead = ttg.convert_layout %s : tensor<512xf32, #A>
  %t = arith.addf %sc, %c : tensor<512xf32, #C>
  %ta = ttg.convert_layout %t : tensor<512xf32, #A>
  tt.store %p, %ta
  tt.return
}
)";
  PassStats stats;
  std::string out = runOnGPU(in, {"cse", "dce"}, &stats);
  // Same operand and result type: one value. Another layout: another value.
  EXPECT_EQ(count(out, "ttg.convert_layout %x : tensor<512xf32, #B>"), 1)
      << out;
  EXPECT_EQ(count(out, "ttg.convert_layout %x : tensor<512xf32, #C>"), 1)
      << out;
  EXPECT_EQ(count(out, "arith.addf %b1, %b1"), 1) << out;
  EXPECT_EQ(stats.counters["cse.removed"], 1);
  EXPECT_EQ(count(out, "%dead"), 0) << out;
  EXPECT_EQ(count(out, "ttg.convert_layout"), 4) << out;
}

// ---------------------------------------------------------------------------
// Inline, unroll
// ---------------------------------------------------------------------------

TEST(PassesInline, InlinesNestedCallsAndReportsRecursion) {
  std::string in = R"(
tt.func @sq(%x: f32) -> f32 {
  %y = arith.mulf %x, %x : f32
  tt.return %y
}
tt.func @quad(%x: f32) -> f32 {
  %y = tt.call %x {callee = "sq"} : f32
  %z = tt.call %y {callee = "sq"} : f32
  tt.return %z
}
tt.func @k(%p: !tt.ptr<f32>, %x: f32) attributes {kernel = true} {
  %y = tt.call %x {callee = "quad"} : f32
  tt.store %p, %y
  tt.return
}
)";
  PassStats stats;
  auto m = parse(in);
  runPasses(*m, {"inline", "dce"}, stats);
  std::string out = printNoLoc(*m);
  EXPECT_EQ(count(out, "tt.call"), 0) << out;
  EXPECT_EQ(count(out, "tt.func"), 1) << out;
  EXPECT_EQ(count(out, "arith.mulf"), 2) << out;
  EXPECT_EQ(stats.counters["inline.calls"], 3); // 2 into quad, 1 into k

  std::string rec = R"(
tt.func @f(%x: f32) -> f32 {
  %y = tt.call %x {callee = "g"} : f32 loc("k.py":3:9)
  tt.return %y
}
tt.func @g(%x: f32) -> f32 {
  %y = tt.call %x {callee = "f"} : f32 loc("k.py":7:9)
  tt.return %y
}
tt.func @k(%p: !tt.ptr<f32>, %x: f32) attributes {kernel = true} {
  %y = tt.call %x {callee = "f"} : f32
  tt.store %p, %y
  tt.return
}
)";
  auto m2 = parse(rec);
  try {
    runPasses(*m2, {"inline"}, stats);
    FAIL() << "expected a UserError";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("recursive @jit call"), std::string::npos);
    EXPECT_EQ(e.loc.file, "k.py");
    EXPECT_EQ(e.loc.line, 7);
  }
}

TEST(PassesUnroll, UnrollsNestedStaticRanges) {
  // for i in static_range(3): for j in static_range(i): acc += i * 10 + j
  std::string in = R"(
tt.func @k(%p: !tt.ptr<i32>) attributes {kernel = true} {
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %c3 = arith.constant {value = 3} : i32
  %c10 = arith.constant {value = 10} : i32
  %r = scf.for %c0, %c3, %c1, %c0 {unroll = "full"} : i32 {
  ^bb0(%i: i32, %acc: i32):
    %r2 = scf.for %c0, %i, %c1, %acc {unroll = "full"} : i32 {
    ^bb0(%j: i32, %acc2: i32):
      %t = arith.muli %i, %c10 : i32
      %u = arith.addi %t, %j : i32
      %v = arith.addi %acc2, %u : i32
      scf.yield %v
    }
    scf.yield %r2
  }
  tt.store %p, %r
  tt.return
}
)";
  PassStats stats;
  std::string out = runOn(in, {"unroll", "canonicalize"}, &stats);
  // (10+0) + (20+0) + (20+1) = 51
  EXPECT_EQ(count(out, "scf.for"), 0) << out;
  EXPECT_EQ(count(out, "{value = 51} : i32"), 1) << out;
  EXPECT_EQ(stats.counters["unroll.loops"], 4); // outer + 3 inner copies
  EXPECT_EQ(stats.counters["unroll.iterations"], 3 + 0 + 1 + 2);
}

TEST(PassesUnroll, NegativeStepCountsDown) {
  std::string in = R"(
tt.func @k(%p: !tt.ptr<i32>) attributes {kernel = true} {
  %c0 = arith.constant {value = 0} : i32
  %c7 = arith.constant {value = 7} : i32
  %m2 = arith.constant {value = -2} : i32
  %r = scf.for %c7, %c0, %m2, %c0 {unroll = "full"} : i32 {
  ^bb0(%i: i32, %acc: i32):
    %s = arith.muli %acc, %c7 : i32
    %v = arith.addi %s, %i : i32
    scf.yield %v
  }
  tt.store %p, %r
  tt.return
}
)";
  std::string out = runOn(in, {"unroll", "canonicalize"});
  // i = 7, 5, 3, 1: ((7*7+5)*7+3)*7+1
  EXPECT_EQ(count(out, "{value = " + std::to_string(((7 * 7 + 5) * 7 + 3) * 7 + 1) + "}"), 1)
      << out;
}

TEST(PassesUnroll, UserErrors) {
  auto expectError = [](const std::string &text, const std::string &msg) {
    auto m = parse(text);
    PassStats stats;
    try {
      runPasses(*m, {"unroll"}, stats);
      ADD_FAILURE() << "expected a UserError for " << msg;
    } catch (const UserError &e) {
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
      EXPECT_EQ(e.loc.line, 5);
    }
  };
  expectError(R"(
tt.func @k(%p: !tt.ptr<i32>, %n: i32) attributes {kernel = true} {
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  scf.for %c0, %n, %c1 {unroll = "full"} {
  ^bb0(%i: i32):
    tt.store %p, %i
    scf.yield
  } loc("k.py":5:3)
  tt.return
}
)",
              "tl.static_range bounds must be constexpr");
  expectError(R"(
tt.func @k(%p: !tt.ptr<i32>, %n: i32) attributes {kernel = true} {
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 5000} : i32
  scf.for %c0, %c1, %c0 {unroll = "full"} {
  ^bb0(%i: i32):
    scf.yield
  } loc("k.py":5:3)
  tt.return
}
)",
              "step must not be zero");
  expectError(R"(
tt.func @k(%p: !tt.ptr<i32>, %n: i32) attributes {kernel = true} {
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 4097} : i32
  %s = arith.constant {value = 1} : i32
  scf.for %c0, %c1, %s {unroll = "full"} {
  ^bb0(%i: i32):
    scf.yield
  } loc("k.py":5:3)
  tt.return
}
)",
              "4096");
}

TEST(PassesLICM, HoistsInvariantsButNotTrappingDivisions) {
  std::string in = R"(
tt.func @k(%p: !tt.ptr<i32>, %x: i32, %y: i32) attributes {kernel = true} {
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %c8 = arith.constant {value = 8} : i32
  %r = scf.for %c0, %c8, %c1, %c0 : i32 {
  ^bb0(%i: i32, %acc: i32):
    %inv = arith.muli %x, %y : i32
    %inv2 = arith.addi %inv, %c1 : i32
    %div = arith.divsi %x, %y : i32
    %var = arith.addi %acc, %i : i32
    %s = arith.addi %var, %inv2 : i32
    %t = arith.addi %s, %div : i32
    scf.yield %t
  }
  tt.store %p, %r
  tt.return
}
)";
  PassStats stats;
  std::string out = runOn(in, {"licm"}, &stats);
  size_t loop = out.find("scf.for");
  ASSERT_NE(loop, std::string::npos);
  EXPECT_LT(out.find("%inv = arith.muli"), loop) << out;
  EXPECT_LT(out.find("%inv2 = arith.addi"), loop) << out;
  EXPECT_GT(out.find("%div = arith.divsi"), loop) << out;
  EXPECT_GT(out.find("%var = arith.addi"), loop) << out;
  EXPECT_EQ(stats.counters["licm.hoisted"], 2);
}

// ---------------------------------------------------------------------------
// Pass manager
// ---------------------------------------------------------------------------

TEST(PassesManager, RegistryAndDefaultPipeline) {
  std::vector<std::string> expected = {
      "inline",          "check-const-pointers", "canonicalize", "unroll",
      "canonicalize",    "widen-offsets",        "narrow-division", "cse",
      "licm-scalars",    "dce"};
  EXPECT_EQ(defaultPipeline(), expected);
  for (std::string name :
       {"inline", "canonicalize", "unroll", "cse", "dce", "licm", "licm-scalars",
        "widen-offsets", "narrow-division", "check-const-pointers"})
    EXPECT_NE(lookupPass(tilePasses(), name), nullptr) << name;
  EXPECT_EQ(lookupPass(tilePasses(), "nope"), nullptr);
  for (const std::string &name : defaultPipeline())
    EXPECT_NE(lookupPass(tilePasses(), name), nullptr) << name;
}

TEST(PassesManager, WrapsFailuresAndNamesThePass) {
  Module m;
  PassStats stats;
  EXPECT_THROW(runPasses(m, {"nope"}, stats), InternalError);

  // A call to a function that does not exist: the inliner fails, and the
  // error names the pass.
  RawKernel k({ty(DType::I32)});
  k.b->push_back(Operation::create(OpCode::Call, {k.f->arg(0)}, {},
                                   {{"callee", std::string("missing")}}));
  k.ret();
  try {
    runPasses(k.m, {"inline"}, stats);
    FAIL() << "expected an InternalError";
  } catch (const InternalError &e) {
    EXPECT_NE(std::string(e.what()).find("pass 'inline' failed"), std::string::npos)
        << e.what();
  }
}

TEST(PassesManager, SkipsThePassesTheOptionsName) {
  // 1 + 2 stays unfolded when canonicalize is skipped; the other passes run
  // (the dump sees them), and an unknown name still fails first.
  const char *text = "tt.func @k(%p: !tt.ptr<i32>) attributes {kernel = true} {\n"
                     "  %a = arith.constant {value = 1} : i32\n"
                     "  %b = arith.constant {value = 2} : i32\n"
                     "  %c = arith.addi %a, %b : i32\n"
                     "  tt.store %p, %c\n"
                     "  tt.return\n}\n";
  auto m = parse(text);
  PassStats stats;
  PipelineOptions opts;
  opts.skipPasses = {"canonicalize"};
  std::vector<std::string> ran;
  opts.printAfter = {"all"};
  opts.dump = [&](const std::string &pass, const Module &) { ran.push_back(pass); };
  runPasses(*m, {"canonicalize", "cse"}, stats, opts);
  EXPECT_EQ(ran, std::vector<std::string>{"cse"});
  EXPECT_EQ(count(printNoLoc(*m), "arith.addi"), 1);
  EXPECT_THROW(runPasses(*m, {"canonicalize", "nope"}, stats, opts), InternalError);
  opts.skipPasses.clear();
  runPasses(*m, {"canonicalize"}, stats, opts);
  EXPECT_EQ(count(printNoLoc(*m), "arith.addi"), 0);
}

TEST(PassesManager, VerifiesAfterEachPassAndDumps) {
  // Invalid IR (mismatched operand types) that cse leaves alone: the
  // verifier after cse reports it, naming cse.
  RawKernel k({ty(DType::I32), ty(DType::FP32)});
  k.op(OpCode::AddI, {k.f->arg(0), k.f->arg(1)}, ty(DType::I32));
  k.ret();
  PassStats stats;
  try {
    runPasses(k.m, {"cse"}, stats);
    FAIL() << "expected an InternalError";
  } catch (const InternalError &e) {
    EXPECT_NE(std::string(e.what()).find("'cse'"), std::string::npos) << e.what();
  }
  PipelineOptions noVerify;
  noVerify.verifyEach = false;
  EXPECT_NO_THROW(runPasses(k.m, {"cse"}, stats, noVerify));

  auto m = parse("tt.func @k() attributes {kernel = true} {\n  tt.return\n}\n");
  std::vector<std::string> dumped;
  PipelineOptions opts;
  opts.printAfter = {"dce"};
  opts.dump = [&](const std::string &pass, const Module &dm) {
    dumped.push_back(pass);
    EXPECT_EQ(&dm, m.get());
  };
  runPasses(*m, {"cse", "dce", "cse"}, stats, opts);
  EXPECT_EQ(dumped, std::vector<std::string>{"dce"});
  opts.printAfter = {"all"};
  dumped.clear();
  runPasses(*m, {"cse", "dce"}, stats, opts);
  EXPECT_EQ(dumped, (std::vector<std::string>{"cse", "dce"}));
}

TEST(PassesManager, DefaultPipelineOnAKernel) {
  std::string in = R"(
tt.func @offset(%x: i32, %k: i32) -> i32 {
  %c4 = arith.constant {value = 4} : i32
  %m = arith.muli %k, %c4 : i32
  %y = arith.addi %x, %m : i32
  tt.return %y
}
tt.func @k(%p: !tt.ptr<i32>, %x: i32) attributes {kernel = true} {
  %c0 = arith.constant {value = 0} : i32
  %c1 = arith.constant {value = 1} : i32
  %c2 = arith.constant {value = 2} : i32
  %r = scf.for %c0, %c2, %c1, %x {unroll = "full"} : i32 {
  ^bb0(%i: i32, %acc: i32):
    %n = tt.call %acc, %i {callee = "offset"} : i32
    scf.yield %n
  }
  tt.store %p, %r
  tt.return
}
)";
  PassStats stats;
  std::string out = runOn(in, defaultPipeline(), &stats);
  // x + 0*4 + 1*4 == x + 4
  EXPECT_EQ(count(out, "tt.func"), 1) << out;
  EXPECT_EQ(count(out, "scf.for"), 0) << out;
  EXPECT_EQ(count(out, "arith.addi %x, "), 1) << out;
  EXPECT_EQ(count(out, "{value = 4} : i32"), 1) << out;
  EXPECT_EQ(count(out, "arith."), 2) << out;
}

} // namespace
