// Tests of the IR core: type interning, the op table, op/block manipulation.
#include "tritium/ir/ir.h"

#include <gtest/gtest.h>

#include <thread>

using namespace tritium;

namespace {

const Type *f32() { return Type::scalar(DType::FP32); }
const Type *i32() { return Type::scalar(DType::I32); }

TEST(Types, InternedTypesCompareByPointer) {
  EXPECT_EQ(Type::scalar(DType::FP16), Type::scalar(DType::FP16));
  EXPECT_NE(Type::scalar(DType::FP16), Type::scalar(DType::BF16));
  EXPECT_EQ(Type::pointer(f32()), Type::pointer(f32()));
  EXPECT_NE(Type::pointer(f32()), Type::pointer(f32(), 3));
  EXPECT_EQ(Type::tensor(f32(), {128, 64}), Type::tensor(f32(), {128, 64}));
  EXPECT_NE(Type::tensor(f32(), {128, 64}), Type::tensor(f32(), {64, 128}));
}

TEST(Types, InterningIsThreadSafe) {
  std::vector<const Type *> seen(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      const Type *last = nullptr;
      for (int i = 0; i < 2000; ++i)
        last = Type::tensor(Type::pointer(f32()), {int64_t(1 + i % 7), 32});
      seen[t] = last;
    });
  for (auto &th : threads)
    th.join();
  for (int t = 1; t < 8; ++t)
    EXPECT_EQ(seen[t], seen[0]);
}

TEST(Types, TextForms) {
  EXPECT_EQ(Type::tensor(f32(), {128, 64})->str(), "tensor<128x64xf32>");
  EXPECT_EQ(Type::tensor(Type::pointer(Type::scalar(DType::BF16)), {8})->str(),
            "tensor<8x!tt.ptr<bf16>>");
  EXPECT_EQ(Type::scalar(DType::FP8E4NV)->str(), "f8e4nv");
  EXPECT_EQ(Type::tensor(f32(), {4, 8})->numElements(), 32);
}

TEST(Types, DTypeTables) {
  for (int i = 0; i <= static_cast<int>(DType::FP64); ++i) {
    auto t = static_cast<DType>(i);
    ASSERT_EQ(parseDType(dtypeName(t)), t) << dtypeName(t);
    ASSERT_EQ(parseTritonName(tritonName(t)), t) << tritonName(t);
  }
  EXPECT_EQ(bitWidth(DType::BF16), 16);
  EXPECT_TRUE(isSigned(DType::I8));
  EXPECT_FALSE(isSigned(DType::I1));
  EXPECT_TRUE(isUnsigned(DType::U32));
  EXPECT_TRUE(isFloat(DType::FP8E5));
  EXPECT_FALSE(isFloat(DType::U64));
  EXPECT_FALSE(parseDType("f128").has_value());
}

TEST(OpTable, NamesRoundTrip) {
  for (size_t i = 0; i < static_cast<size_t>(OpCode::NumOps); ++i) {
    auto code = static_cast<OpCode>(i);
    OpCode back;
    ASSERT_TRUE(lookupOpCode(opInfo(code).name, back));
    EXPECT_EQ(back, code);
  }
  OpCode dummy;
  EXPECT_FALSE(lookupOpCode("arith.nope", dummy));
  EXPECT_TRUE(opInfo(OpCode::AddF).traits & COMM);
  EXPECT_TRUE(opInfo(OpCode::Yield).traits & TERM);
  EXPECT_FALSE(opInfo(OpCode::Load).traits & PURE);
  // The arithmetic families the verifier, executor and PTX emitter dispatch on.
  for (size_t i = 0; i < static_cast<size_t>(OpCode::NumOps); ++i) {
    const OpInfo &info = opInfo(static_cast<OpCode>(i));
    if (info.traits & (IBIN | FBIN | CAST | MATH1))
      EXPECT_TRUE((info.traits & PURE) && (info.traits & ELEM)) << info.name;
    // At most one family per op: consumers dispatch on the first that matches.
    int families = !!(info.traits & IBIN) + !!(info.traits & FBIN) + !!(info.traits & CAST) +
                   !!(info.traits & MATH1);
    EXPECT_LE(families, 1) << info.name;
  }
  EXPECT_TRUE(opInfo(OpCode::PtrToInt).traits & CAST);
  EXPECT_TRUE(opInfo(OpCode::ExtSI).traits & CAST);
  EXPECT_TRUE(opInfo(OpCode::AbsI).traits & MATH1);
  EXPECT_TRUE(opInfo(OpCode::Tanh).traits & MATH1);
  EXPECT_FALSE(opInfo(OpCode::Fma).traits & MATH1); // three operands
  EXPECT_FALSE(opInfo(OpCode::NegF).traits & MATH1);
  EXPECT_TRUE(opInfo(OpCode::MinUI).traits & IBIN);
  EXPECT_TRUE(opInfo(OpCode::MinNumF).traits & FBIN);
  EXPECT_FALSE(opInfo(OpCode::CmpI).traits & IBIN);
  EXPECT_FALSE(opInfo(OpCode::NegF).traits & FBIN);
}

TEST(Attributes, FloatsPrintSoTheyReparseAsFloats) {
  EXPECT_EQ(attrStr(Attribute(1.0)), "1.0");
  EXPECT_EQ(attrStr(Attribute(0.1)), "0.1");
  EXPECT_EQ(attrStr(Attribute(-1.0 / 0.0)), "-inf");
  EXPECT_EQ(attrStr(Attribute(int64_t(3))), "3");
  EXPECT_EQ(attrStr(Attribute(std::vector<int64_t>{1, 0})), "[1, 0]");
  EXPECT_EQ(attrStr(Attribute(std::string("a\"b"))), "\"a\\\"b\"");
  EXPECT_EQ(attrStr(Attribute(true)), "true");
}

// f(a: f32, b: f32) { %c = addf a, b; %d = mulf %c, %c; return %d }
std::unique_ptr<Module> smallModule() {
  auto m = std::make_unique<Module>();
  Function *f = m->addFunction(std::make_unique<Function>(
      "f", std::vector<const Type *>{f32(), f32()},
      std::vector<const Type *>{f32()}));
  Block &b = f->entry();
  Value *c = b.push_back(Operation::create(OpCode::AddF, {f->arg(0), f->arg(1)},
                                           {f32()}))
                 ->result();
  Value *d = b.push_back(Operation::create(OpCode::MulF, {c, c}, {f32()}))
                 ->result();
  b.push_back(Operation::create(OpCode::Return, {d}, {}));
  return m;
}

TEST(Ops, CloneRemapsOperandsAndKeepsStructure) {
  auto m = smallModule();
  auto copy = m->clone();
  Function *f = copy->lookup("f");
  ASSERT_NE(f, nullptr);
  auto &ops = f->entry().ops();
  ASSERT_EQ(ops.size(), 3u);
  Operation *add = ops.front().get();
  Operation *mul = std::next(ops.begin())->get();
  EXPECT_EQ(add->operand(0), f->arg(0));
  EXPECT_EQ(mul->operand(0), add->result());
  EXPECT_NE(add, m->lookup("f")->entry().ops().front().get());
}

TEST(Ops, ReplaceUsesAndErase) {
  auto m = smallModule();
  Function *f = m->lookup("f");
  Operation *add = f->entry().ops().front().get();
  replaceAllUsesWith(*f, add->result(), f->arg(0));
  EXPECT_FALSE(hasUses(*f, add->result()));
  add->erase();
  EXPECT_EQ(f->entry().ops().size(), 2u);
  EXPECT_EQ(countUses(*f)[f->arg(0)], 2u);
}

TEST(Ops, RegionsAndParents) {
  Module m;
  Function *f = m.addFunction(std::make_unique<Function>(
      "g", std::vector<const Type *>{i32()}, std::vector<const Type *>{}));
  auto loop = Operation::create(OpCode::For, {f->arg(0), f->arg(0), f->arg(0)},
                                {}, {}, Location{"k.py", 3, 5}, 1);
  Block *body = loop->region(0).addBlock();
  Value *iv = body->addArgument(i32());
  Operation *inner =
      body->push_back(Operation::create(OpCode::AddI, {iv, iv}, {i32()}));
  body->push_back(Operation::create(OpCode::Yield, {}, {}));
  Operation *l = f->entry().push_back(std::move(loop));
  f->entry().push_back(Operation::create(OpCode::Return, {}, {}));
  EXPECT_EQ(inner->parentOp(), l);
  EXPECT_EQ(l->parentOp(), nullptr);
  EXPECT_EQ(l->loc().str(), "\"k.py\":3:5");
  int n = 0;
  f->walk([&](Operation *) { ++n; });
  EXPECT_EQ(n, 4);
  EXPECT_NE(body->terminator(), nullptr);
}

TEST(Ops, EraseArgumentRenumbersLaterArguments) {
  Block b;
  b.addArgument(i32());
  Value *second = b.addArgument(f32());
  second->nameHint = "x";
  b.eraseArgument(0);
  EXPECT_EQ(b.numArguments(), 1u);
  EXPECT_EQ(b.argument(0), second);
  EXPECT_EQ(second->index(), 0u);
  EXPECT_EQ(second->nameHint, "x");
}

TEST(Ops, MissingAttributeIsAnInternalErrorNamingTheOp) {
  auto op = Operation::create(OpCode::GetProgramId, {}, {i32()});
  try {
    op->intAttr("axis");
    FAIL() << "expected InternalError";
  } catch (const InternalError &e) {
    EXPECT_NE(std::string(e.what()).find("tt.get_program_id"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("axis"), std::string::npos);
  }
}

} // namespace
