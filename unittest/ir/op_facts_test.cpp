// One home for each op fact: the arity and attribute columns of ops.def, the
// verifier as the only judge of well-formed IR (the executor relies on it),
// and every consumer either lowering each op or rejecting it on purpose.
#include "tritium/exec/executor.h"
#include "tritium/ir/ir.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace tritium;

namespace {

ExecArg ep(std::vector<uint32_t> &v) {
  return ExecPointer{uint64_t(v.data()), uint64_t(v.size() * sizeof(uint32_t))};
}
ExecArg ep(std::vector<float> &v) {
  return ExecPointer{uint64_t(v.data()), uint64_t(v.size() * sizeof(float))};
}

// ---------------------------------------------------------------------------
// The table itself
// ---------------------------------------------------------------------------

TEST(OpTable, ArityAndAttributeColumnsAreWellFormed) {
  for (size_t i = 0; i < size_t(OpCode::NumOps); ++i) {
    OpCode c = OpCode(i);
    const OpInfo &info = opInfo(c);
    SCOPED_TRACE(info.name);
    EXPECT_GE(info.minOperands, 0);
    EXPECT_TRUE(info.maxOperands == VARIADIC ||
                info.maxOperands >= info.minOperands);
    EXPECT_TRUE(info.numResults == VARIADIC || info.numResults >= 0);
    EXPECT_EQ(info.numRegions > 0, (info.traits & CF) != 0);
    EXPECT_NO_THROW(opAttrs(c)); // the schema text parses
    // The trait families promise an arity.
    if (info.traits & (IBIN | FBIN))
      EXPECT_TRUE(info.minOperands == 2 && info.maxOperands == 2);
    if (info.traits & (CAST | MATH1 | MOVE))
      EXPECT_TRUE(info.minOperands == 1 && info.maxOperands == 1);
    if (info.traits & (IBIN | FBIN | CAST | MATH1 | MOVE))
      EXPECT_EQ(info.numResults, 1);
  }
  const auto &reduce = opAttrs(OpCode::Reduce);
  ASSERT_EQ(reduce.size(), 2u);
  EXPECT_EQ(reduce[0].name, "axis");
  EXPECT_EQ(reduce[0].kind, AttrKind::Int);
  EXPECT_TRUE(reduce[0].required);
  const auto &load = opAttrs(OpCode::Load);
  ASSERT_FALSE(load.empty());
  EXPECT_FALSE(load[0].required);
}

TEST(OpTable, DataMovementTrait) {
  for (OpCode c : {OpCode::Broadcast, OpCode::ExpandDims, OpCode::Reshape,
                   OpCode::Trans, OpCode::ConvertLayout})
    EXPECT_TRUE(opInfo(c).traits & MOVE) << opInfo(c).name;
  // A splat makes a tensor from a scalar; a load reads memory: neither moves
  // the elements of a tensor.
  EXPECT_FALSE(opInfo(OpCode::Splat).traits & MOVE);
  EXPECT_FALSE(opInfo(OpCode::Load).traits & MOVE);
}

TEST(OpTable, VerifierChecksArityAndAttributesFromTheTable) {
  auto m = std::make_unique<Module>();
  auto fn = std::make_unique<Function>("k", std::vector<const Type *>{});
  Function *f = m->addFunction(std::move(fn));
  Block &b = f->entry();
  const Type *i32 = Type::scalar(DType::I32);
  // tt.get_program_id with a string axis: the schema says int.
  Operation *pid = b.push_back(Operation::create(
      OpCode::GetProgramId, {}, {i32}, {{"axis", std::string("x")}}));
  b.push_back(Operation::create(OpCode::Return, {}, {}));
  try {
    verify(*m);
    FAIL() << "verified";
  } catch (const IRError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "attribute 'axis' must be an integer, found a string"),
              std::string::npos)
        << e.what();
  }
  // Two results where the table says one.
  pid->setAttr("axis", int64_t(0));
  b.insert(b.ops().begin(), Operation::create(OpCode::GetNumPrograms, {},
                                               {i32, i32}, {{"axis", int64_t(0)}}));
  try {
    verify(*m);
    FAIL() << "verified";
  } catch (const IRError &e) {
    EXPECT_NE(std::string(e.what()).find("expects 1 result, found 2"),
              std::string::npos)
        << e.what();
  }
}

// ---------------------------------------------------------------------------
// Regression: the verifier and the executor disagreed on tt.atomic_rmw kinds
// (the executor accepted "fadd"/"umax"/"umin", which the verifier rejects, and
// rejected "and" on floats, which the verifier accepted). The language has
// add/max/min/and/or/xor/xchg, signedness from the element type, and bitwise
// kinds on integers only. Now the verifier decides and the executor runs
// exactly what it accepts.
// ---------------------------------------------------------------------------

const char *kAtomicText = R"(
tt.func @k(%p: !tt.ptr<u32>, %v: u32) attributes {kernel = true} {
  %old = tt.atomic_rmw %p, %v {kind = "KIND"} : u32
  tt.return
}
)";

std::string withKind(const char *text, const std::string &kind) {
  std::string s = text;
  s.replace(s.find("KIND"), 4, kind);
  return s;
}

TEST(AtomicKinds, VerifiedIRRunsWithTheLanguageSemantics) {
  // max on u32 compares unsigned: 0x80000000 is larger than 1.
  auto m = parseModule(withKind(kAtomicText, "max"), "atomic.tir");
  std::vector<uint32_t> mem{1};
  execute(*m, "k", {1, 1, 1}, {ep(mem), int64_t(0x80000000)});
  EXPECT_EQ(mem[0], 0x80000000u);
  m = parseModule(withKind(kAtomicText, "xor"), "atomic.tir");
  execute(*m, "k", {1, 1, 1}, {ep(mem), int64_t(0x80000001)});
  EXPECT_EQ(mem[0], 1u);
}

TEST(AtomicKinds, RejectedIRIsALocatedErrorBeforeExecution) {
  // Kinds outside the language (the executor's former extras): execute()
  // runs the verifier first, whose error points at the op's line.
  for (const char *kind : {"umax", "umin", "fadd"}) {
    auto m = parseModule(withKind(kAtomicText, kind), "atomic.tir");
    std::vector<uint32_t> mem{1};
    try {
      execute(*m, "k", {1, 1, 1}, {ep(mem), int64_t(2)});
      FAIL() << kind << " ran";
    } catch (const IRError &e) {
      EXPECT_EQ(e.loc.line, 3) << e.what();
      EXPECT_NE(std::string(e.what()).find("attribute 'kind' has invalid value"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(mem[0], 1u);
  }
  // A bitwise kind on floats (which the verifier used to accept and the
  // executor reject) is the verifier's located IRError.
  auto m = std::make_unique<Module>();
  const Type *f32 = Type::scalar(DType::FP32);
  const Type *pf32 = Type::pointer(f32);
  Function *f = m->addFunction(std::make_unique<Function>(
      "k", std::vector<const Type *>{pf32, f32}));
  f->attrs()["kernel"] = true;
  Block &b = f->entry();
  Location at{"k.py", 7, 5};
  b.push_back(Operation::create(OpCode::AtomicRMW,
                                {b.argument(0), b.argument(1)}, {f32},
                                {{"kind", std::string("and")}}, at));
  b.push_back(Operation::create(OpCode::Return, {}, {}));
  std::vector<float> mem{1.0f};
  try {
    execute(*m, "k", {1, 1, 1}, {ep(mem), 2.0});
    FAIL() << "ran";
  } catch (const IRError &e) {
    EXPECT_EQ(e.loc, at);
    EXPECT_NE(std::string(e.what()).find("kind \"and\" needs integers"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(mem[0], 1.0f);
}

} // namespace
