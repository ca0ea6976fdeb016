// Tests of the builder's semantic layer: Triton's promotion rules, the weak
// typing of literals, broadcasting, casts, shape ops, memory ops, reductions,
// dot, control flow, and the UserErrors (message and location) users see.
#include "tritium/ir/builder.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"

#include <gtest/gtest.h>

#include <functional>

using namespace tritium;

namespace {

const Type *S(DType d) { return Type::scalar(d); }
const Type *T(DType d, std::vector<int64_t> shape) {
  return Type::tensor(S(d), std::move(shape));
}
const Type *P(DType d) { return Type::pointer(S(d)); }

/// A module with one kernel `k` whose arguments are the given types; the
/// builder's insertion point is the end of its body.
struct Fixture {
  Module m;
  Builder b{m};
  Function *f;
  explicit Fixture(std::vector<const Type *> args = {}) {
    b.setLoc({"kernel.py", 7, 9});
    f = b.createFunction("k", args, {});
  }
  /// Every test's IR must pass the verifier: the builder's output is
  /// well-typed even around the user errors the test provokes.
  ~Fixture() {
    try {
      b.setInsertionPointToEnd(&f->entry());
      if (!f->entry().terminator())
        b.ret({});
      verify(m);
    } catch (const std::exception &e) {
      ADD_FAILURE() << "verifier: " << e.what() << "\n" << print(m);
    }
  }
  Value *arg(unsigned i) { return f->arg(i); }
  /// A fresh value of type `t` (a function argument added on the fly would
  /// change the signature, so use a load from a pointer argument instead
  /// when that matters; here a block argument is enough).
  Value *val(const Type *t) { return f->entry().addArgument(t); }
  std::vector<std::string> ops() {
    std::vector<std::string> out;
    f->walk([&](Operation *op) { out.push_back(op->name()); });
    return out;
  }
  int count(const std::string &name) {
    int n = 0;
    for (auto &s : ops())
      n += s == name;
    return n;
  }
};

/// Runs `fn`, expects a UserError whose message contains `needle`, and checks
/// it carries the builder's location.
void expectUserError(const std::function<void()> &fn,
                     const std::string &needle) {
  try {
    fn();
    ADD_FAILURE() << "expected a UserError containing: " << needle;
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what();
    EXPECT_EQ(e.loc.file, "kernel.py");
    EXPECT_EQ(e.loc.line, 7);
    EXPECT_EQ(e.loc.col, 9);
  }
}

// ---------------------------------------------------------------------------
// Promotion
// ---------------------------------------------------------------------------

struct PromoCase {
  DType a, b, want;
};

TEST(BuilderPromotion, TensorTensorFollowsTriton) {
  const PromoCase cases[] = {
      {DType::I32, DType::I64, DType::I64},
      {DType::I8, DType::U8, DType::U8},
      {DType::I32, DType::U32, DType::U32},
      {DType::I64, DType::U32, DType::I64},
      {DType::I1, DType::I32, DType::I32},
      {DType::I1, DType::U8, DType::U8},
      {DType::I1, DType::I1, DType::I1},
      {DType::FP16, DType::BF16, DType::FP16},
      {DType::FP16, DType::I32, DType::FP16},
      {DType::BF16, DType::BF16, DType::BF16},
      {DType::BF16, DType::I32, DType::FP32},
      {DType::FP32, DType::FP64, DType::FP64},
      {DType::FP32, DType::I64, DType::FP32},
      {DType::FP8E5, DType::FP16, DType::FP16},
      {DType::FP8E4NV, DType::FP8E5, DType::FP16},
      {DType::FP8E5, DType::FP8E5, DType::FP8E5},
      {DType::FP8E4NV, DType::FP32, DType::FP32},
  };
  for (const auto &c : cases) {
    Fixture fx;
    Value *x = fx.val(T(c.a, {16})), *y = fx.val(T(c.b, {16}));
    Value *r = fx.b.binary("add", x, y);
    EXPECT_EQ(r->type(), T(c.want, {16}))
        << dtypeName(c.a) << " + " << dtypeName(c.b) << " gave "
        << r->type()->str();
    // Commutes.
    EXPECT_EQ(fx.b.binary("mul", y, x)->type(), T(c.want, {16}));
  }
}

TEST(BuilderPromotion, ScalarValuesAreNotWeak) {
  // A 0-d IR value (e.g. a kernel argument) promotes like a tensor.
  Fixture fx({S(DType::I64)});
  Value *t = fx.val(T(DType::I32, {8}));
  EXPECT_EQ(fx.b.binary("add", t, fx.arg(0))->type(), T(DType::I64, {8}));
  EXPECT_EQ(fx.count("arith.extsi"), 1);
}

TEST(BuilderPromotion, FloatWithIntEmitsConversion) {
  Fixture fx;
  Value *x = fx.val(T(DType::FP32, {8})), *i = fx.val(T(DType::I32, {8}));
  Value *u = fx.val(T(DType::U32, {8}));
  EXPECT_EQ(fx.b.binary("add", x, i)->type(), T(DType::FP32, {8}));
  EXPECT_EQ(fx.count("arith.sitofp"), 1);
  fx.b.binary("add", x, u);
  EXPECT_EQ(fx.count("arith.uitofp"), 1);
  EXPECT_EQ(fx.count("arith.addf"), 2);
}

TEST(BuilderPromotion, Fp8WithIntIsAnError) {
  Fixture fx;
  Value *x = fx.val(T(DType::FP8E5, {8})), *i = fx.val(T(DType::I32, {8}));
  expectUserError([&] { fx.b.binary("add", x, i); }, "f8e5 and i32");
}

// ---------------------------------------------------------------------------
// Weak typing of literals
// ---------------------------------------------------------------------------

TEST(BuilderLiterals, AdoptTheTensorType) {
  Fixture fx;
  Value *i8 = fx.val(T(DType::I8, {8})), *h = fx.val(T(DType::FP16, {8}));
  Value *u16 = fx.val(T(DType::U16, {8})), *bl = fx.val(T(DType::I1, {8}));
  EXPECT_EQ(fx.b.binary("add", i8, Operand::ofInt(1))->type(),
            T(DType::I8, {8}));
  EXPECT_EQ(fx.b.binary("mul", h, Operand::ofFloat(2.0))->type(),
            T(DType::FP16, {8}));
  EXPECT_EQ(fx.b.binary("mul", Operand::ofInt(3), h)->type(),
            T(DType::FP16, {8}));
  EXPECT_EQ(fx.b.binary("add", u16, Operand::ofInt(7))->type(),
            T(DType::U16, {8}));
  EXPECT_EQ(fx.b.binary("and", bl, Operand::ofBool(true))->type(),
            T(DType::I1, {8}));
  // A bool literal adopts an int tensor's type too.
  EXPECT_EQ(fx.b.binary("add", i8, Operand::ofBool(true))->type(),
            T(DType::I8, {8}));
  // No cast of the tensor was needed anywhere.
  EXPECT_EQ(fx.count("arith.extsi") + fx.count("arith.extf") +
                fx.count("arith.sitofp"),
            0);
}

TEST(BuilderLiterals, FloatLiteralMakesIntTensorFp32) {
  Fixture fx;
  Value *i = fx.val(T(DType::I32, {8}));
  Value *i64 = fx.val(T(DType::I64, {8}));
  EXPECT_EQ(fx.b.binary("add", i, Operand::ofFloat(1.5))->type(),
            T(DType::FP32, {8}));
  EXPECT_EQ(fx.b.binary("add", i64, Operand::ofFloat(1.5))->type(),
            T(DType::FP32, {8}));
  // Outside fp32's range the literal is fp64, and so is the result.
  EXPECT_EQ(fx.b.binary("add", i, Operand::ofFloat(1e-50))->type(),
            T(DType::FP64, {8}));
}

TEST(BuilderLiterals, IntLiteralPromotesBoolTensor) {
  Fixture fx;
  Value *bl = fx.val(T(DType::I1, {8}));
  EXPECT_EQ(fx.b.binary("add", bl, Operand::ofInt(2))->type(),
            T(DType::I32, {8}));
}

TEST(BuilderLiterals, OutOfRangeLiteralsRaise) {
  Fixture fx;
  Value *i8 = fx.val(T(DType::I8, {8})), *u32 = fx.val(T(DType::U32, {8}));
  expectUserError([&] { fx.b.binary("add", i8, Operand::ofInt(300)); },
                  "int literal 300 is out of range for i8");
  expectUserError([&] { fx.b.binary("sub", u32, Operand::ofInt(-1)); },
                  "negative int literal -1");
}

TEST(BuilderLiterals, MaterializeDefaults) {
  Fixture fx;
  EXPECT_EQ(fx.b.materialize(Operand::ofInt(5))->type(), S(DType::I32));
  EXPECT_EQ(fx.b.materialize(Operand::ofInt(-(int64_t(1) << 31)))->type(),
            S(DType::I32));
  EXPECT_EQ(fx.b.materialize(Operand::ofInt(int64_t(1) << 31))->type(),
            S(DType::U32));
  EXPECT_EQ(fx.b.materialize(Operand::ofInt(int64_t(1) << 40))->type(),
            S(DType::I64));
  EXPECT_EQ(fx.b.materialize(Operand::ofUInt64(uint64_t(1) << 63))->type(),
            S(DType::U64));
  EXPECT_EQ(fx.b.materialize(Operand::ofUInt64(5))->type(), S(DType::I32));
  EXPECT_EQ(fx.b.materialize(Operand::ofBool(true))->type(), S(DType::I1));
  EXPECT_EQ(fx.b.materialize(Operand::ofFloat(1.5))->type(), S(DType::FP32));
  EXPECT_EQ(fx.b.materialize(Operand::ofFloat(0.0))->type(), S(DType::FP32));
  EXPECT_EQ(fx.b.materialize(Operand::ofFloat(1e300))->type(), S(DType::FP64));
  Value *c = fx.b.materialize(Operand::ofUInt64(~uint64_t(0)));
  EXPECT_EQ(c->definingOp()->intAttr("value"), -1); // bit pattern of 2^64-1
}

TEST(BuilderLiterals, LiteralFacingTensorIsOneSplatConstant) {
  Fixture fx;
  Value *x = fx.val(T(DType::FP32, {4, 8}));
  fx.b.binary("add", x, Operand::ofFloat(1.0));
  EXPECT_EQ(fx.count("arith.constant"), 1);
  EXPECT_EQ(fx.count("tt.splat"), 0);
}

// ---------------------------------------------------------------------------
// Division, modulo, shifts, comparisons, logical ops
// ---------------------------------------------------------------------------

TEST(BuilderArith, TrueDiv) {
  Fixture fx;
  Value *i = fx.val(T(DType::I32, {8})), *h = fx.val(T(DType::FP16, {8}));
  Value *d = fx.val(T(DType::FP64, {8}));
  EXPECT_EQ(fx.b.binary("truediv", i, i)->type(), T(DType::FP32, {8}));
  EXPECT_EQ(fx.count("arith.sitofp"), 2);
  // Triton divides f16 in f32 (no native f16 division in PTX).
  EXPECT_EQ(fx.b.binary("truediv", h, h)->type(), T(DType::FP32, {8}));
  EXPECT_EQ(fx.b.binary("truediv", h, Operand::ofFloat(2.0))->type(),
            T(DType::FP32, {8}));
  EXPECT_EQ(fx.b.binary("truediv", d, Operand::ofInt(2))->type(),
            T(DType::FP64, {8}));
  EXPECT_EQ(fx.count("arith.divf"), 4);
}

TEST(BuilderArith, FloorDivAndMod) {
  Fixture fx;
  Value *i = fx.val(T(DType::I32, {8})), *u = fx.val(T(DType::U32, {8}));
  Value *x = fx.val(T(DType::FP32, {8}));
  fx.b.binary("floordiv", i, Operand::ofInt(3));
  fx.b.binary("floordiv", u, Operand::ofInt(3));
  fx.b.binary("mod", i, Operand::ofInt(3));
  fx.b.binary("mod", u, u);
  fx.b.binary("mod", x, Operand::ofFloat(1.5));
  EXPECT_EQ(fx.count("arith.divsi"), 1);
  EXPECT_EQ(fx.count("arith.divui"), 1);
  EXPECT_EQ(fx.count("arith.remsi"), 1);
  EXPECT_EQ(fx.count("arith.remui"), 1);
  EXPECT_EQ(fx.count("arith.remf"), 1);
  expectUserError([&] { fx.b.binary("floordiv", x, x); },
                  "'//' expects integer");
  expectUserError([&] { fx.b.binary("mod", i, u); }, "different signedness");
}

TEST(BuilderArith, Shifts) {
  Fixture fx;
  Value *i = fx.val(T(DType::I32, {8})), *u = fx.val(T(DType::U32, {8}));
  fx.b.binary("rshift", i, Operand::ofInt(2));
  fx.b.binary("rshift", u, Operand::ofInt(2));
  fx.b.binary("lshift", i, Operand::ofInt(2));
  EXPECT_EQ(fx.count("arith.shrsi"), 1);
  EXPECT_EQ(fx.count("arith.shrui"), 1);
  EXPECT_EQ(fx.count("arith.shli"), 1);
  Value *x = fx.val(T(DType::FP32, {8}));
  expectUserError([&] { fx.b.binary("lshift", x, Operand::ofInt(1)); },
                  "expects integer operands");
}

TEST(BuilderArith, Comparisons) {
  Fixture fx;
  Value *x = fx.val(T(DType::FP32, {8})), *i = fx.val(T(DType::I32, {8}));
  Value *u = fx.val(T(DType::U32, {8}));
  const char *ops[] = {"lt", "le", "gt", "ge", "eq", "ne"};
  const char *fpreds[] = {"olt", "ole", "ogt", "oge", "oeq", "une"};
  const char *spreds[] = {"slt", "sle", "sgt", "sge", "eq", "ne"};
  const char *upreds[] = {"ult", "ule", "ugt", "uge", "eq", "ne"};
  for (int k = 0; k < 6; ++k) {
    Value *r = fx.b.binary(ops[k], x, Operand::ofFloat(0.5));
    EXPECT_EQ(r->type(), T(DType::I1, {8}));
    EXPECT_EQ(r->definingOp()->strAttr("predicate"), fpreds[k]);
    EXPECT_EQ(fx.b.binary(ops[k], i, Operand::ofInt(1))
                  ->definingOp()
                  ->strAttr("predicate"),
              spreds[k]);
    EXPECT_EQ(fx.b.binary(ops[k], u, Operand::ofInt(1))
                  ->definingOp()
                  ->strAttr("predicate"),
              upreds[k]);
  }
}

TEST(BuilderArith, ComparisonLiteralsAreNotWeak) {
  // As in Triton, where tensor.__lt__ materialises the literal first.
  Fixture fx;
  Value *h = fx.val(T(DType::FP16, {8})), *i8 = fx.val(T(DType::I8, {8}));
  Value *r = fx.b.binary("lt", h, Operand::ofFloat(0.1));
  EXPECT_EQ(r->type(), T(DType::I1, {8}));
  EXPECT_EQ(r->definingOp()->operand(0)->type(), T(DType::FP32, {8}));
  Value *c = fx.b.binary("gt", i8, Operand::ofInt(300));
  EXPECT_EQ(c->definingOp()->operand(0)->type(), T(DType::I32, {8}));
}

TEST(BuilderArith, LogicalOpsCompareNonBoolsWithZero) {
  Fixture fx;
  Value *i = fx.val(T(DType::I32, {8})), *c = fx.val(T(DType::I1, {8}));
  Value *x = fx.val(S(DType::FP32));
  Value *r = fx.b.binary("logical_and", i, c);
  EXPECT_EQ(r->type(), T(DType::I1, {8}));
  EXPECT_EQ(fx.count("arith.cmpi"), 1);
  EXPECT_EQ(fx.count("arith.andi"), 1);
  Value *s = fx.b.binary("logical_or", x, c); // scalar f32 splats after != 0
  EXPECT_EQ(s->type(), T(DType::I1, {8}));
  EXPECT_EQ(fx.count("arith.cmpf"), 1);
  EXPECT_EQ(fx.count("arith.ori"), 1);
}

TEST(BuilderArith, UnaryOps) {
  Fixture fx;
  Value *x = fx.val(T(DType::FP32, {8})), *i = fx.val(T(DType::I32, {8}));
  EXPECT_EQ(fx.b.unary("neg", x)->definingOp()->name(),
            std::string("arith.subf"));
  EXPECT_EQ(fx.b.unary("invert", i)->definingOp()->name(),
            std::string("arith.xori"));
  Value *n = fx.b.unary("not", i);
  EXPECT_EQ(n->type(), T(DType::I1, {8}));
  EXPECT_EQ(fx.b.unary("pos", x), x);
  expectUserError([&] { fx.b.unary("invert", x); },
                  "unary invert (tensor<8xf32>)");
  Value *p = fx.val(P(DType::FP32));
  expectUserError([&] { fx.b.unary("neg", p); }, "unary minus");
}

// ---------------------------------------------------------------------------
// Pointers
// ---------------------------------------------------------------------------

TEST(BuilderPointers, Arithmetic) {
  Fixture fx({P(DType::FP32)});
  Value *offs = fx.b.arange(0, 128);
  Value *ptrs = fx.b.binary("add", fx.arg(0), offs);
  EXPECT_EQ(ptrs->type(), Type::tensor(P(DType::FP32), {128}));
  EXPECT_EQ(ptrs->definingOp()->name(), std::string("tt.addptr"));
  // int + ptr swaps.
  EXPECT_EQ(fx.b.binary("add", offs, fx.arg(0))->type(), ptrs->type());
  // ptr - int adds the negated offset.
  Value *back = fx.b.binary("sub", ptrs, Operand::ofInt(1));
  EXPECT_EQ(back->type(), ptrs->type());
  EXPECT_EQ(back->definingOp()->name(), std::string("tt.addptr"));
  EXPECT_EQ(back->definingOp()->operand(1)->definingOp()->name(),
            std::string("arith.subi"));
  // Unsigned offsets are zero-extended to i64.
  Value *u = fx.val(T(DType::U32, {128}));
  Value *q = fx.b.binary("add", fx.arg(0), u);
  EXPECT_EQ(q->definingOp()->operand(1)->type(), T(DType::I64, {128}));
  EXPECT_EQ(fx.count("arith.extui"), 1);

  expectUserError([&] { fx.b.binary("add", fx.arg(0), Operand::ofFloat(1.0)); },
                  "invalid operands");
  expectUserError([&] { fx.b.binary("add", fx.arg(0), fx.arg(0)); },
                  "pointers");
  expectUserError([&] { fx.b.binary("mul", fx.arg(0), Operand::ofInt(2)); },
                  "invalid operands");
  expectUserError([&] { fx.b.binary("sub", Operand::ofInt(2), fx.arg(0)); },
                  "invalid operands");
}

// ---------------------------------------------------------------------------
// Broadcasting
// ---------------------------------------------------------------------------

TEST(BuilderBroadcast, OuterSum) {
  Fixture fx;
  Value *rows = fx.b.expandDims(fx.b.arange(0, 4), 1); // 4x1
  Value *cols = fx.b.expandDims(fx.b.arange(0, 8), 0); // 1x8
  EXPECT_EQ(rows->type(), T(DType::I32, {4, 1}));
  EXPECT_EQ(cols->type(), T(DType::I32, {1, 8}));
  Value *r = fx.b.binary("add", rows, cols);
  EXPECT_EQ(r->type(), T(DType::I32, {4, 8}));
  EXPECT_EQ(fx.count("tt.broadcast"), 2);
}

TEST(BuilderBroadcast, RankExtensionAndScalars) {
  Fixture fx({S(DType::I32)});
  Value *v = fx.val(T(DType::FP32, {8}));
  Value *m = fx.val(T(DType::FP32, {4, 8}));
  Value *r = fx.b.binary("add", v, m);
  EXPECT_EQ(r->type(), T(DType::FP32, {4, 8}));
  EXPECT_EQ(fx.count("tt.expand_dims"), 1);
  EXPECT_EQ(fx.count("tt.broadcast"), 1);
  // A scalar splats.
  Value *s = fx.b.binary("add", fx.arg(0), fx.b.arange(0, 16));
  EXPECT_EQ(s->type(), T(DType::I32, {16}));
  EXPECT_EQ(fx.count("tt.splat"), 1);
  // broadcast_to with numpy rules.
  EXPECT_EQ(fx.b.broadcastTo(v, {2, 4, 8})->type(), T(DType::FP32, {2, 4, 8}));
  auto [a, b] = fx.b.broadcastPair(fx.b.expandDims(v, 0), m);
  EXPECT_EQ(a->type(), T(DType::FP32, {4, 8}));
  EXPECT_EQ(b, m);
}

TEST(BuilderBroadcast, MismatchNamesShapes) {
  Fixture fx;
  Value *a = fx.val(T(DType::FP32, {4, 8})),
        *b = fx.val(T(DType::FP32, {4, 16}));
  expectUserError(
      [&] { fx.b.binary("add", a, b); },
      "cannot broadcast tensor<4x8xf32> and tensor<4x16xf32>: shapes [4, 8] "
      "and [4, 16] differ at dimension 1 (8 vs 16)");
  expectUserError([&] { fx.b.broadcastTo(a, {8}); }, "fewer dimensions");
}

TEST(BuilderBroadcast, Where) {
  Fixture fx;
  Value *c = fx.val(T(DType::I32, {4, 1}));
  Value *h = fx.val(T(DType::FP16, {1, 8}));
  Value *r = fx.b.where(c, h, Operand::ofInt(0));
  EXPECT_EQ(r->type(), T(DType::FP16, {4, 8}));
  EXPECT_EQ(r->definingOp()->name(), std::string("arith.select"));
  EXPECT_EQ(r->definingOp()->operand(0)->type(), T(DType::I1, {4, 8}));
  Value *i = fx.val(T(DType::I32, {4, 8}));
  EXPECT_EQ(fx.b.where(Operand::ofBool(true), i, Operand::ofFloat(1.0))->type(),
            T(DType::FP32, {4, 8}));
}

// ---------------------------------------------------------------------------
// Casts
// ---------------------------------------------------------------------------

TEST(BuilderCast, EveryPairOfDtypes) {
  const DType all[] = {DType::I1,   DType::I8,      DType::I16,   DType::I32,
                       DType::I64,  DType::U8,      DType::U16,   DType::U32,
                       DType::U64,  DType::FP8E4NV, DType::FP8E5, DType::FP16,
                       DType::BF16, DType::FP32,    DType::FP64};
  for (DType from : all)
    for (DType to : all) {
      Fixture fx;
      Value *x = fx.val(T(from, {4}));
      Value *y = fx.val(S(from));
      Value *r = fx.b.cast(x, to);
      EXPECT_EQ(r->type(), T(to, {4}))
          << dtypeName(from) << " -> " << dtypeName(to);
      EXPECT_EQ(fx.b.cast(y, to)->type(), S(to));
      if (from == to) {
        EXPECT_EQ(r, x);
      }
    }
}

TEST(BuilderCast, OpsChosen) {
  Fixture fx;
  Value *x = fx.val(T(DType::FP32, {4})), *i = fx.val(T(DType::I32, {4}));
  Value *h = fx.val(T(DType::FP16, {4})), *u8 = fx.val(T(DType::U8, {4}));
  auto lastOp = [](Value *v) { return std::string(v->definingOp()->name()); };
  EXPECT_EQ(lastOp(fx.b.cast(x, DType::I1)), "arith.cmpf");
  EXPECT_EQ(fx.b.cast(x, DType::I1)->definingOp()->strAttr("predicate"), "une");
  EXPECT_EQ(lastOp(fx.b.cast(i, DType::I1)), "arith.cmpi");
  EXPECT_EQ(lastOp(fx.b.cast(i, DType::I64)), "arith.extsi");
  EXPECT_EQ(lastOp(fx.b.cast(u8, DType::I32)), "arith.extui");
  EXPECT_EQ(lastOp(fx.b.cast(i, DType::I8)), "arith.trunci");
  EXPECT_EQ(lastOp(fx.b.cast(i, DType::U32)), "tt.bitcast");
  EXPECT_EQ(lastOp(fx.b.cast(x, DType::I32)), "arith.fptosi");
  EXPECT_EQ(lastOp(fx.b.cast(x, DType::U32)), "arith.fptoui");
  EXPECT_EQ(lastOp(fx.b.cast(u8, DType::FP32)), "arith.uitofp");
  EXPECT_EQ(lastOp(fx.b.cast(x, DType::FP16)), "arith.truncf");
  // f16 -> bf16 goes through f32, as Triton does.
  Value *hb = fx.b.cast(h, DType::BF16);
  EXPECT_EQ(lastOp(hb), "arith.truncf");
  EXPECT_EQ(lastOp(hb->definingOp()->operand(0)), "arith.extf");
  // bitcast checks widths.
  EXPECT_EQ(fx.b.cast(x, DType::I32, /*bitcast=*/true)->definingOp()->name(),
            std::string("tt.bitcast"));
  expectUserError([&] { fx.b.cast(x, DType::I16, true); },
                  "bit widths differ (32 vs 16)");
}

TEST(BuilderCast, Pointers) {
  Fixture fx({P(DType::FP32), S(DType::I64)});
  Value *p = fx.b.castToPointer(fx.arg(0), P(DType::I8));
  EXPECT_EQ(p->type(), P(DType::I8));
  EXPECT_EQ(p->definingOp()->name(), std::string("tt.bitcast"));
  EXPECT_EQ(fx.b.castToPointer(fx.arg(1), P(DType::FP16))->definingOp()->name(),
            std::string("tt.int_to_ptr"));
  EXPECT_EQ(fx.b.cast(fx.arg(0), DType::I64)->definingOp()->name(),
            std::string("tt.ptr_to_int"));
  Value *x = fx.val(S(DType::FP32));
  expectUserError([&] { fx.b.castToPointer(x, P(DType::FP32)); },
                  "cannot cast f32");
}

// ---------------------------------------------------------------------------
// Math
// ---------------------------------------------------------------------------

TEST(BuilderMath, Types) {
  Fixture fx;
  Value *i = fx.val(T(DType::I32, {4})), *h = fx.val(T(DType::FP16, {4}));
  Value *d = fx.val(T(DType::FP64, {4})), *u = fx.val(T(DType::U32, {4}));
  EXPECT_EQ(fx.b.math("exp", i)->type(), T(DType::FP32, {4}));
  Value *e = fx.b.math("exp", h);
  EXPECT_EQ(e->type(), T(DType::FP16, {4}));
  EXPECT_EQ(e->definingOp()->name(), std::string("arith.truncf"));
  EXPECT_EQ(e->definingOp()->operand(0)->type(), T(DType::FP32, {4}));
  EXPECT_EQ(fx.b.math("sqrt", d)->definingOp()->name(),
            std::string("math.sqrt"));
  EXPECT_EQ(fx.b.math("abs", i)->definingOp()->name(),
            std::string("math.absi"));
  EXPECT_EQ(fx.b.math("abs", u), u);
  EXPECT_EQ(fx.b.math("abs", h)->type(), T(DType::FP16, {4}));
  Value *s = fx.b.math("sigmoid", fx.val(T(DType::FP32, {4})));
  EXPECT_EQ(s->type(), T(DType::FP32, {4}));
  EXPECT_EQ(s->definingOp()->name(), std::string("arith.divf"));
  EXPECT_EQ(fx.b.fma(h, h, h)->type(), T(DType::FP16, {4}));
  // tl.fma materialises literals with default types: f16 with 2.0 is f32.
  EXPECT_EQ(fx.b.fma(h, h, Operand::ofFloat(2.0))->type(), T(DType::FP32, {4}));
}

TEST(BuilderMath, MaximumMinimum) {
  Fixture fx;
  Value *x = fx.val(T(DType::FP32, {4})), *i = fx.val(T(DType::I32, {4}));
  Value *u = fx.val(T(DType::U32, {4})), *bf = fx.val(T(DType::BF16, {4}));
  EXPECT_EQ(fx.b.maximum(x, Operand::ofFloat(0.0))->definingOp()->name(),
            std::string("arith.maxnumf"));
  EXPECT_EQ(fx.b.maximum(x, x, true)->definingOp()->name(),
            std::string("arith.maximumf"));
  EXPECT_EQ(fx.b.minimum(i, Operand::ofInt(0))->definingOp()->name(),
            std::string("arith.minsi"));
  EXPECT_EQ(fx.b.minimum(u, u)->definingOp()->name(),
            std::string("arith.minui"));
  EXPECT_EQ(fx.b.maximum(bf, bf)->type(), T(DType::FP32, {4}));
}

// ---------------------------------------------------------------------------
// arange, full, shape ops
// ---------------------------------------------------------------------------

TEST(BuilderShape, Arange) {
  Fixture fx;
  Value *r = fx.b.arange(32, 64);
  EXPECT_EQ(r->type(), T(DType::I32, {32}));
  EXPECT_EQ(r->definingOp()->intAttr("start"), 32);
  EXPECT_EQ(r->definingOp()->intAttr("end"), 64);
  expectUserError([&] { fx.b.arange(0, 100); },
                  "arange's range must be a power of 2, got 100");
  expectUserError([&] { fx.b.arange(8, 8); }, "end argument must be greater");
  expectUserError([&] { fx.b.arange(0, int64_t(1) << 21); }, "at most 2^20");
}

TEST(BuilderShape, Full) {
  Fixture fx;
  Value *z = fx.b.full({4, 8}, Operand::ofInt(0), DType::FP16);
  EXPECT_EQ(z->type(), T(DType::FP16, {4, 8}));
  EXPECT_EQ(z->definingOp()->name(), std::string("arith.constant"));
  Value *s = fx.val(S(DType::I32));
  EXPECT_EQ(fx.b.full({16}, s, DType::FP32)->type(), T(DType::FP32, {16}));
  EXPECT_EQ(fx.b.full({}, Operand::ofInt(3), DType::I64)->type(),
            S(DType::I64));
  expectUserError([&] { fx.b.full({3}, Operand::ofInt(0), DType::FP32); },
                  "power of 2");
  expectUserError([&] { fx.b.full({4}, Operand::ofInt(300), DType::I8); },
                  "out of range");
}

TEST(BuilderShape, ExpandDimsReshapeTrans) {
  Fixture fx;
  Value *x = fx.val(T(DType::FP32, {8}));
  EXPECT_EQ(fx.b.expandDims(x, -1)->type(), T(DType::FP32, {8, 1}));
  EXPECT_EQ(fx.b.expandDims(x, -2)->type(), T(DType::FP32, {1, 8}));
  EXPECT_EQ(fx.b.expandDims(fx.val(S(DType::FP32)), 0)->type(),
            T(DType::FP32, {1}));
  expectUserError([&] { fx.b.expandDims(x, 2); }, "invalid axis 2");
  Value *m = fx.val(T(DType::FP32, {4, 8}));
  EXPECT_EQ(fx.b.reshape(m, {32})->type(), T(DType::FP32, {32}));
  expectUserError([&] { fx.b.reshape(m, {16}); },
                  "tensor<4x8xf32> has 32, shape [16] has 16");
  Value *t = fx.b.trans(m, {1, 0});
  EXPECT_EQ(t->type(), T(DType::FP32, {8, 4}));
  EXPECT_EQ(fx.b.trans(m, {})->type(), T(DType::FP32, {8, 4}));
  expectUserError([&] { fx.b.trans(m, {0, 0}); }, "permutation");
  expectUserError([&] { fx.b.splat(m, {4, 8}); }, "cannot splat a tensor");
}

// ---------------------------------------------------------------------------
// Loads and stores
// ---------------------------------------------------------------------------

TEST(BuilderMemory, LoadBroadcastsMaskAndCastsOther) {
  Fixture fx({P(DType::FP16), S(DType::I32)});
  Value *offs = fx.b.arange(0, 128);
  Value *ptrs = fx.b.binary("add", fx.arg(0), offs);
  Value *mask = fx.b.binary("lt", offs, fx.arg(1));
  Value *v = fx.b.load(ptrs, mask, Operand::ofFloat(0.0));
  EXPECT_EQ(v->type(), T(DType::FP16, {128}));
  Operation *ld = v->definingOp();
  ASSERT_EQ(ld->numOperands(), 3u);
  EXPECT_EQ(ld->operand(2)->type(), T(DType::FP16, {128}));
  // A scalar mask is splatted to the pointer's shape.
  Value *c = fx.val(S(DType::I1));
  Value *v2 = fx.b.load(ptrs, c, std::nullopt);
  EXPECT_EQ(v2->definingOp()->operand(1)->type(), T(DType::I1, {128}));
  // Scalar pointer load.
  EXPECT_EQ(fx.b.load(fx.arg(0), nullptr, std::nullopt)->type(),
            S(DType::FP16));
}

TEST(BuilderMemory, LoadErrors) {
  Fixture fx({P(DType::FP32)});
  Value *x = fx.val(T(DType::FP32, {128}));
  expectUserError([&] { fx.b.load(x, nullptr, std::nullopt); },
                  "tl.load expects a pointer, got tensor<128xf32>");
  Value *m = fx.val(T(DType::I32, {128}));
  Value *ptrs = fx.b.binary("add", fx.arg(0), fx.b.arange(0, 128));
  expectUserError([&] { fx.b.load(ptrs, m, std::nullopt); },
                  "the mask must be a boolean (i1), got tensor<128xi32>");
  expectUserError([&] { fx.b.load(ptrs, nullptr, Operand::ofFloat(1.0)); },
                  "`other` cannot be given without `mask`");
  Value *bm = fx.val(T(DType::I1, {64}));
  expectUserError([&] { fx.b.load(ptrs, bm, std::nullopt); },
                  "cannot broadcast");
}

TEST(BuilderMemory, StoreCastsAndBroadcastsValue) {
  Fixture fx({P(DType::FP16), S(DType::FP32)});
  Value *ptrs = fx.b.binary("add", fx.arg(0), fx.b.arange(0, 64));
  fx.b.store(ptrs, fx.arg(1), nullptr);
  Operation *st = nullptr;
  fx.f->walk([&](Operation *op) {
    if (op->code() == OpCode::Store)
      st = op;
  });
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->operand(1)->type(), T(DType::FP16, {64}));
  EXPECT_EQ(fx.count("arith.truncf"), 1);
  Value *big = fx.val(T(DType::FP16, {2, 64}));
  expectUserError([&] { fx.b.store(ptrs, big, nullptr); },
                  "must broadcast to the pointer's shape [64]");
  expectUserError(
      [&] { fx.b.store(fx.val(S(DType::I32)), Operand::ofInt(1), nullptr); },
      "tl.store expects a pointer, got i32");
}

TEST(BuilderMemory, BoolPointersGoThroughI8) {
  Fixture fx({P(DType::I1)});
  Value *v = fx.b.load(fx.arg(0), nullptr, std::nullopt);
  EXPECT_EQ(v->type(), S(DType::I1));
  EXPECT_EQ(v->definingOp()->name(), std::string("arith.cmpi"));
  EXPECT_EQ(v->definingOp()->operand(0)->definingOp()->name(),
            std::string("tt.load"));
  EXPECT_EQ(v->definingOp()->operand(0)->type(), S(DType::I8));
}

TEST(BuilderMemory, Atomics) {
  Fixture fx({P(DType::FP32), P(DType::FP16)});
  Value *ptrs = fx.b.binary("add", fx.arg(0), fx.b.arange(0, 32));
  Value *old = fx.b.atomicRMW("add", ptrs, Operand::ofInt(1), nullptr);
  EXPECT_EQ(old->type(), T(DType::FP32, {32}));
  EXPECT_EQ(old->definingOp()->strAttr("kind"), "add");
  expectUserError(
      [&] { fx.b.atomicRMW("max", fx.arg(1), Operand::ofFloat(1), nullptr); },
      "tl.atomic_max does not support f16");
}

// ---------------------------------------------------------------------------
// Reductions and dot
// ---------------------------------------------------------------------------

TEST(BuilderReduce, AxesAndTypes) {
  Fixture fx;
  Value *i8 = fx.val(T(DType::I8, {4, 8}));
  Value *r = fx.b.reduce(i8, 1, "sum", false);
  EXPECT_EQ(r->type(), T(DType::I32, {4}));
  EXPECT_EQ(r->definingOp()->intAttr("axis"), 1);
  EXPECT_EQ(fx.b.reduce(i8, -2, "sum", false)->type(), T(DType::I32, {8}));
  EXPECT_EQ(fx.b.reduce(i8, std::nullopt, "sum", false)->type(), S(DType::I32));
  EXPECT_EQ(fx.b.reduce(i8, std::nullopt, "sum", true)->type(),
            T(DType::I32, {1, 1}));
  EXPECT_EQ(fx.b.reduce(i8, 0, "sum", true)->type(), T(DType::I32, {1, 8}));
  // Triton counts i1 as unsigned: sum of bools is u32.
  Value *b1 = fx.val(T(DType::I1, {16}));
  EXPECT_EQ(fx.b.reduce(b1, 0, "sum", false)->type(), S(DType::U32));
  Value *u8 = fx.val(T(DType::U8, {16}));
  EXPECT_EQ(fx.b.reduce(u8, 0, "sum", false)->type(), S(DType::U32));
  Value *h = fx.val(T(DType::FP16, {16}));
  EXPECT_EQ(fx.b.reduce(h, 0, "sum", false)->type(), S(DType::FP16));
  EXPECT_EQ(fx.b.reduce(h, 0, "max", false)->type(), S(DType::FP32));
  EXPECT_EQ(fx.b.reduce(h, 0, "argmax", false)->type(), S(DType::I32));
  EXPECT_EQ(fx.b.reduce(i8, 0, "argmin", false)->type(), T(DType::I32, {8}));
  EXPECT_EQ(fx.b.reduce(i8, 0, "min", false)->type(), T(DType::I32, {8}));
  expectUserError(
      [&] { fx.b.reduce(i8, 2, "sum", false); },
      "invalid axis 2 for tl.sum of tensor<4x8xi8>: expected -2 <= axis < 2");
  expectUserError([&] { fx.b.reduce(h, 0, "xor_sum", false); },
                  "only supports integers");
}

TEST(BuilderDot, ShapesAndTypes) {
  Fixture fx;
  Value *a = fx.val(T(DType::FP16, {16, 32})),
        *b = fx.val(T(DType::FP16, {32, 64}));
  Value *d = fx.b.dot(a, b, nullptr, "tf32", DType::FP32);
  EXPECT_EQ(d->type(), T(DType::FP32, {16, 64}));
  EXPECT_EQ(d->definingOp()->strAttr("input_precision"), "tf32");
  EXPECT_EQ(fx.b.dot(a, b, nullptr, "ieee", DType::FP16)->type(),
            T(DType::FP16, {16, 64}));
  Value *a8 = fx.val(T(DType::I8, {32, 32}));
  EXPECT_EQ(fx.b.dot(a8, a8, nullptr, "tf32", DType::FP32)->type(),
            T(DType::I32, {32, 32}));
  Value *acc = fx.val(T(DType::FP32, {16, 64}));
  EXPECT_EQ(fx.b.dot(a, b, acc, "tf32", DType::FP32)->definingOp()->operand(2),
            acc);
  expectUserError(
      [&] { fx.b.dot(b, a, nullptr, "tf32", DType::FP32); },
      "second dimension (64) must equal the second operand's first (16)");
  Value *small = fx.val(T(DType::FP16, {8, 32}));
  // Any M, N and K, as Triton's interpreter takes them (the GPU runs a dot
  // too small for the tensor cores on FMAs).
  EXPECT_EQ(fx.b.dot(small, b, nullptr, "tf32", DType::FP32)->type(),
            T(DType::FP32, {8, 64}));
  Value *f = fx.val(T(DType::FP32, {32, 64}));
  expectUserError([&] { fx.b.dot(a, f, nullptr, "tf32", DType::FP32); },
                  "same dtype");
  Value *badAcc = fx.val(T(DType::FP16, {16, 64}));
  expectUserError(
      [&] { fx.b.dot(a, b, badAcc, "tf32", DType::FP32); },
      "accumulator must be tensor<16x64xf32>, got tensor<16x64xf16>");
  expectUserError(
      [&] {
        fx.b.dot(a, fx.val(T(DType::FP16, {32})), nullptr, "tf32", DType::FP32);
      },
      "two 2-D tensors");
}

TEST(BuilderDot, BatchedAndImpreciseAcc) {
  Fixture fx;
  Value *a = fx.val(T(DType::FP32, {2, 16, 32})),
        *b = fx.val(T(DType::FP32, {2, 32, 64}));
  Value *d = fx.b.dot(a, b, nullptr, "TF32x3", DType::FP32);
  EXPECT_EQ(d->type(), T(DType::FP32, {2, 16, 64}));
  EXPECT_EQ(d->definingOp()->strAttr("input_precision"), "tf32x3");
  EXPECT_EQ(d->definingOp()->operand(2)->type(), T(DType::FP32, {2, 16, 64}));
  expectUserError(
      [&] {
        fx.b.dot(a, fx.val(T(DType::FP32, {4, 32, 64})), nullptr, "tf32",
                 DType::FP32);
      },
      "incompatible batch dimensions of tensor<2x16x32xf32> and "
      "tensor<4x32x64xf32>: 2 and 4");
  expectUserError(
      [&] { fx.b.dot(a, a, nullptr, "tf32", DType::FP32); },
      "the first operand's third dimension (32) must equal the second "
      "operand's second (16)");
  expectUserError(
      [&] {
        fx.b.dot(a, fx.val(T(DType::FP32, {32, 64})), nullptr, "tf32",
                 DType::FP32);
      },
      "two 2-D tensors (or two 3-D tensors for a batched product), got "
      "tensor<2x16x32xf32> and tensor<32x64xf32>");
  expectUserError(
      [&] {
        fx.b.dot(a, b, fx.val(T(DType::FP32, {16, 64})), "tf32", DType::FP32);
      },
      "accumulator must be tensor<2x16x64xf32>");
  expectUserError([&] { fx.b.dot(a, b, nullptr, "bf16x3", DType::FP32); },
                  "input_precision must be one of tf32, tf32x3, ieee, got "
                  "'bf16x3'");
  // max_num_imprecise_acc: kept for fp8 operands (mixed kinds allowed), 0
  // for the others, never negative.
  Value *p = fx.val(T(DType::FP8E4NV, {16, 32})),
        *q = fx.val(T(DType::FP8E5, {32, 16}));
  Value *e = fx.b.dot(p, q, nullptr, "tf32", DType::FP32, 32);
  EXPECT_EQ(e->definingOp()->intAttr("max_num_imprecise_acc"), 32);
  EXPECT_EQ(fx.b.dot(a, b, nullptr, "tf32", DType::FP32, 32)
                ->definingOp()
                ->intAttr("max_num_imprecise_acc"),
            0);
  expectUserError([&] { fx.b.dot(p, q, nullptr, "tf32", DType::FP32, -1); },
                  "max_num_imprecise_acc must be >= 0, got -1");
  // An fp16 accumulator with the default out_dtype says how to get one.
  Value *h = fx.val(T(DType::FP16, {16, 32})),
        *g = fx.val(T(DType::FP16, {32, 16}));
  expectUserError(
      [&] {
        fx.b.dot(h, g, fx.val(T(DType::FP16, {16, 16})), "tf32", DType::FP32);
      },
      "(pass out_dtype=tl.float16 to accumulate in f16)");
  EXPECT_EQ(fx.b.dot(h, g, fx.val(T(DType::FP16, {16, 16})), "tf32",
                     DType::FP16)
                ->type(),
            T(DType::FP16, {16, 16}));
}

// ---------------------------------------------------------------------------
// Control flow and functions
// ---------------------------------------------------------------------------

TEST(BuilderControlFlow, ForLoopTypes) {
  Fixture fx({S(DType::I32), S(DType::I64)});
  Value *acc0 = fx.b.constFloat(0.0, DType::FP32);
  Operation *loop =
      fx.b.createFor(Operand::ofInt(0), fx.arg(0), Operand::ofInt(1), {acc0});
  Block &body = loop->region(0).front();
  EXPECT_EQ(body.argument(0)->type(), S(DType::I32));
  EXPECT_EQ(body.argument(1)->type(), S(DType::FP32));
  EXPECT_EQ(loop->result(0)->type(), S(DType::FP32));
  auto ip = fx.b.saveInsertionPoint();
  fx.b.setInsertionPointToEnd(&body);
  Value *next = fx.b.binary("add", body.argument(1), Operand::ofFloat(1.0));
  // Yielding another type than the carried one is a user error.
  Value *wrong = fx.b.cast(next, DType::FP16);
  expectUserError([&] { fx.b.yield({wrong}); },
                  "loop-carried values have types (f32)");
  fx.b.yield({next});
  fx.b.restoreInsertionPoint(ip);
  // An i64 bound makes the induction variable i64.
  Operation *l2 =
      fx.b.createFor(Operand::ofInt(0), fx.arg(1), Operand::ofInt(2), {});
  EXPECT_EQ(l2->region(0).front().argument(0)->type(), S(DType::I64));
  EXPECT_EQ(l2->operand(0)->type(), S(DType::I64));
  fx.b.setInsertionPointToEnd(&l2->region(0).front());
  fx.b.yield({});
  fx.b.restoreInsertionPoint(ip);
}

TEST(BuilderControlFlow, IfAndReturn) {
  Fixture fx({S(DType::I32)});
  Value *cond = fx.b.binary("gt", fx.arg(0), Operand::ofInt(0));
  auto ip = fx.b.saveInsertionPoint();
  Block *thenB = fx.b.newDetachedBlock();
  fx.b.setInsertionPointToEnd(thenB);
  fx.b.yield({fx.b.constInt(1, DType::I32)});
  Block *elseB = fx.b.newDetachedBlock();
  fx.b.setInsertionPointToEnd(elseB);
  fx.b.yield({fx.b.constInt(2, DType::I32)});
  fx.b.restoreInsertionPoint(ip);
  Operation *ifOp = fx.b.createIf(cond, thenB, elseB);
  EXPECT_EQ(ifOp->numResults(), 1u);
  EXPECT_EQ(ifOp->result(0)->type(), S(DType::I32));
  EXPECT_EQ(&ifOp->region(0).front(), thenB);
  Value *one = fx.b.constFloat(1.0, DType::FP32);
  fx.b.ret({ifOp->result(0)});
  EXPECT_EQ(fx.f->resultTypes(), std::vector<const Type *>{S(DType::I32)});
  expectUserError([&] { fx.b.ret({one}); },
                  "returns (f32) here but (i32) elsewhere");
}

TEST(BuilderControlFlow, IfBranchMismatch) {
  Fixture fx({S(DType::I1)});
  auto ip = fx.b.saveInsertionPoint();
  Block *thenB = fx.b.newDetachedBlock();
  fx.b.setInsertionPointToEnd(thenB);
  fx.b.yield({fx.b.constInt(1, DType::I32)});
  Block *elseB = fx.b.newDetachedBlock();
  fx.b.setInsertionPointToEnd(elseB);
  fx.b.yield({fx.b.constFloat(2, DType::FP32)});
  fx.b.restoreInsertionPoint(ip);
  expectUserError([&] { fx.b.createIf(fx.arg(0), thenB, elseB); },
                  "then branch yields (i32) but the else branch yields (f32)");
  fx.b.discardBlock(thenB);
  fx.b.discardBlock(elseB);
}

TEST(BuilderControlFlow, WhileLoop) {
  Fixture fx({S(DType::I32)});
  auto ip = fx.b.saveInsertionPoint();
  Block *before = fx.b.newDetachedBlock();
  Value *i = before->addArgument(S(DType::I32));
  fx.b.setInsertionPointToEnd(before);
  fx.b.condition(fx.b.binary("lt", i, fx.arg(0)), {i});
  Block *after = fx.b.newDetachedBlock();
  Value *j = after->addArgument(S(DType::I32));
  fx.b.setInsertionPointToEnd(after);
  fx.b.yield({fx.b.binary("add", j, Operand::ofInt(1))});
  fx.b.restoreInsertionPoint(ip);
  Operation *w =
      fx.b.createWhile({fx.b.constInt(0, DType::I32)}, before, after);
  EXPECT_EQ(w->numResults(), 1u);
  EXPECT_EQ(w->result(0)->type(), S(DType::I32));
}

TEST(BuilderControlFlow, CallChecksSignature) {
  Fixture fx;
  Builder &b = fx.b;
  auto ip = b.saveInsertionPoint();
  Function *g = b.createFunction("g", {S(DType::FP32)}, {"x"});
  EXPECT_EQ(g->arg(0)->nameHint, "x");
  b.ret({b.binary("mul", g->arg(0), Operand::ofInt(2))});
  b.restoreInsertionPoint(ip);
  auto rs = b.call(g, {b.constFloat(1.0, DType::FP32)});
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0]->type(), S(DType::FP32));
  expectUserError([&] { b.call(g, {b.constInt(1, DType::I32)}); },
                  "call to 'g' expects arguments (f32), got (i32)");
  expectUserError([&] { b.createFunction("g", {}, {}); }, "already defined");
}

TEST(BuilderLocations, EveryOpGetsTheCurrentLocation) {
  Fixture fx;
  fx.b.setLoc({"other.py", 42, 3});
  Value *r = fx.b.arange(0, 16);
  EXPECT_EQ(r->definingOp()->loc(), (Location{"other.py", 42, 3}));
  try {
    fx.b.arange(0, 100);
    FAIL();
  } catch (const UserError &e) {
    EXPECT_EQ(e.loc, (Location{"other.py", 42, 3}));
  }
}

} // namespace
