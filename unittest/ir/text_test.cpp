// Tests of the textual IR: printer, parser and verifier.
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

using namespace tritium;

namespace {

std::unique_ptr<Module> parse(const std::string &text) {
  return parseModule(text, "test.tir");
}

/// An IRError as tritium-opt reports it: `file:line:col: error: message`
/// (the message itself carries no location).
std::string diag(const IRError &e) {
  std::string where;
  if (e.loc.known())
    where = e.loc.file + ":" + std::to_string(e.loc.line) + ":" +
            std::to_string(e.loc.col) + ": ";
  return where + "error: " + e.what();
}

/// The diagnostic of the IRError that parsing `text` throws ("" if none).
std::string parseError(const std::string &text) {
  try {
    parse(text);
  } catch (const IRError &e) {
    return diag(e);
  }
  return "";
}

/// The diagnostic of the IRError that verifying `text` throws ("" if none).
std::string verifyError(const Module &m) {
  try {
    verify(m);
  } catch (const IRError &e) {
    return diag(e);
  }
  return "";
}
std::string verifyError(const std::string &text) {
  return verifyError(*parse(text));
}

#define EXPECT_CONTAINS(haystack, needle)                                      \
  do {                                                                         \
    std::string h_ = (haystack);                                               \
    EXPECT_NE(h_.find(needle), std::string::npos)                              \
        << "expected to find: " << (needle) << "\n in: " << h_;                \
  } while (0)

Operation *findOp(Module &m, const std::string &name, int nth = 0) {
  Operation *found = nullptr;
  m.walk([&](Operation *op) {
    if (!found && op->name() == name && nth-- == 0)
      found = op;
  });
  return found;
}

/// A stand-in for the GPU library's layouts: any `#test<...>` text.
/// `#test<shared2>` stands for a shared layout of 2-D tiles.
class TextLayout : public Layout {
public:
  explicit TextLayout(std::string t) : text(std::move(t)) {}
  std::string str() const override { return text; }
  int rank() const override { return text == "#test<shared2>" ? 2 : -1; }
  std::string checkMemDesc(const Type *,
                           const std::vector<int64_t> &) const override {
    return rank() == 2 ? "" : "not a shared layout";
  }
  // The stand-in is its own transpose (ttg.memdesc_trans).
  const Layout *permuted(const std::vector<int64_t> &order) const override {
    return rank() == 2 && order.size() == 2 ? this : nullptr;
  }
  std::string text;
};

const Layout *parseTestLayout(const std::string &text,
                              const std::vector<int64_t> &) {
  static std::map<std::string, std::unique_ptr<TextLayout>> interned;
  if (text.rfind("#test<", 0) != 0)
    throw std::runtime_error("not a test layout");
  auto &slot = interned[text];
  if (!slot)
    slot = std::make_unique<TextLayout>(text);
  return slot.get();
}

/// Parses `#test<...>` layouts while in scope (GPU IR text without the GPU
/// library's layout parser).
struct WithTestLayouts {
  LayoutParser previous = setLayoutParser(&parseTestLayout);
  ~WithTestLayouts() { setLayoutParser(previous); }
};

// ---------------------------------------------------------------------------
// Hand-written modules that together use every op and every type.
// ---------------------------------------------------------------------------

const char *kArith = R"(
// Integer, float, cast and math ops on every scalar type.
tt.func @arith(%i8: i8, %i16: i16, %i32: i32, %i64: i64, %u8: u8, %u16: u16, %u32: u32, %u64: u64, %b: i1, %h: f16, %bh: bf16, %f: f32, %d: f64, %q: f8e4nv, %q5: f8e5) -> (i32, f32) {
  %0 = arith.addi %i32, %i32 : i32
  %1 = arith.subi %0, %i32 : i32
  %2 = arith.muli %1, %0 : i32
  %3 = arith.divsi %2, %1 : i32
  %4 = arith.divui %u32, %u32 : u32
  %5 = arith.remsi %3, %2 : i32
  %6 = arith.remui %4, %4 : u32
  %7 = arith.andi %i8, %i8 : i8
  %8 = arith.ori %i16, %i16 : i16
  %9 = arith.xori %i64, %i64 : i64
  %10 = arith.shli %5, %0 : i32
  %11 = arith.shrsi %10, %0 : i32
  %12 = arith.shrui %u16, %u16 : u16
  %13 = arith.maxsi %11, %0 : i32
  %14 = arith.minsi %13, %0 : i32
  %15 = arith.maxui %u8, %u8 : u8
  %16 = arith.minui %u64, %u64 : u64
  %17 = arith.cmpi %14, %13 {predicate = "sle"} : i1
  %18 = arith.addf %f, %f : f32
  %19 = arith.subf %18, %f : f32
  %20 = arith.mulf %19, %18 : f32
  %21 = arith.divf %20, %19 : f32
  %22 = arith.remf %21, %20 : f32
  %23 = arith.negf %22 : f32
  %24 = arith.maximumf %23, %22 : f32
  %25 = arith.minimumf %24, %23 : f32
  %26 = arith.maxnumf %25, %24 : f32
  %27 = arith.minnumf %26, %25 : f32
  %28 = arith.cmpf %27, %26 {predicate = "olt"} : i1
  %29 = arith.select %28, %27, %26 : f32
  %30 = arith.extsi %i8 : i32
  %31 = arith.extui %b : i32
  %32 = arith.trunci %i64 : i16
  %33 = arith.sitofp %30 : f32
  %34 = arith.uitofp %u32 : f64
  %35 = arith.fptosi %h : i32
  %36 = arith.fptoui %bh : u8
  %37 = arith.extf %q : f16
  %38 = arith.extf %q5 : f32
  %39 = arith.truncf %d : bf16
  %40 = tt.bitcast %f : i32
  %41 = tt.int_to_ptr %i64 : !tt.ptr<f16>
  %42 = tt.ptr_to_int %41 : i64
  %43 = tt.bitcast %41 : !tt.ptr<i8, 3>
  %44 = math.exp %f : f32
  %45 = math.exp2 %44 : f32
  %46 = math.log %45 : f32
  %47 = math.log2 %46 : f32
  %48 = math.sqrt %47 : f32
  %49 = math.rsqrt %48 : f32
  %50 = math.absf %49 : f32
  %51 = math.absi %i32 : i32
  %52 = math.sin %50 : f32
  %53 = math.cos %52 : f32
  %54 = math.floor %53 : f32
  %55 = math.ceil %54 : f32
  %56 = math.erf %55 : f32
  %57 = math.tanh %h : f16
  %58 = math.fma %56, %56, %f : f32
  %59 = arith.mulhiui %u64, %u64 : u64
  %60 = math.trunc %58 : f32
  %61 = math.roundeven %60 : f32
  tt.return %14, %29 loc("arith.py":99:5)
} loc("arith.py":1:1)
)";

const char *kMemory = R"(
tt.func @memory(%x: !tt.ptr<f16> {tt.divisibility = 16}, %y: !tt.ptr<f32>, %n: i32 {tt.divisibility = 16, tt.equal_to_1 = false}) attributes {kernel = true, noinline = false} {
  %pid = tt.get_program_id {axis = 0} : i32 loc("mem.py":3:11)
  %np = tt.get_num_programs {axis = 2} : i32
  %r = tt.make_range {end = 64, start = 0} : tensor<64xi32>
  %s = tt.splat %n : tensor<64xi32>
  %m = arith.cmpi %r, %s {predicate = "slt"} : tensor<64xi1>
  %e0 = tt.expand_dims %r {axis = 1} : tensor<64x1xi32>
  %e1 = tt.expand_dims %r {axis = 0} : tensor<1x64xi32>
  %b0 = tt.broadcast %e0 : tensor<64x64xi32>
  %b1 = tt.broadcast %e1 : tensor<64x64xi32>
  %off = arith.addi %b0, %b1 : tensor<64x64xi32>
  %xs = tt.splat %x : tensor<64x64x!tt.ptr<f16>>
  %xp = tt.addptr %xs, %off : tensor<64x64x!tt.ptr<f16>>
  %a = tt.load %xp : tensor<64x64xf16>
  %t = tt.trans %a {order = [1, 0]} : tensor<64x64xf16>
  %zero = arith.constant {value = 0.0} : tensor<64x64xf32>
  %d = tt.dot %a, %t, %zero {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32>
  %flat = tt.reshape %d : tensor<4096xf32>
  %cube = tt.reshape %flat : tensor<16x16x16xf32>
  %sum = tt.reduce %d {axis = 1, kind = "sum"} : tensor<64xf32>
  %am = tt.reduce %sum {axis = 0, kind = "argmax"} : i32
  %ys = tt.splat %y : tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>
  %other = arith.constant {value = -inf} : tensor<64xf32>
  %l = tt.load %yp, %m, %other {cache = "ca", eviction = "evict_last", volatile = true} : tensor<64xf32>
  tt.store %yp, %sum, %m
  %old = tt.atomic_rmw %yp, %l, %m {kind = "add"} : tensor<64xf32>
  %cmp = arith.constant {value = 1.5} : f32
  %cas = tt.atomic_cas %y, %cmp, %cmp : f32
  tt.print %sum, %am {prefix = "sum: "}
  tt.assert %m {message = "out of \"range\"\n"}
  %asm0, %asm1 = tt.elementwise_inline_asm %l, %m {asm = "mov.b32 $0, $2;\n\tselp.f32 $1, $2, $2, $3;", constraints = "=r,=f,f,b", pack = 1, pure = true} : tensor<64xi32>, tensor<64xf32>
  %c3 = arith.constant {value = 3} : i64
  %yp2 = tt.addptr %y, %c3 : !tt.ptr<f32>
  %v = tt.load %yp2 : f32
  tt.store %yp2, %v
  %yes = arith.constant {value = true} : i1
  tt.return
}
)";

const char *kControl = R"(
tt.func @helper(%a: f32, %b: f32) -> f32 attributes {noinline = true} {
  %s = arith.addf %a, %b : f32
  tt.return %s
}

tt.func @control(%n: i32, %p: !tt.ptr<f32>) -> f32 {
  %lb = arith.constant {value = 0} : i32
  %st = arith.constant {value = 1} : i32
  %z = arith.constant {value = 0.0} : f32
  %acc = scf.for %lb, %n, %st, %z {num_stages = 3} : f32 {
  ^bb0(%i: i32, %x: f32):
    %f = arith.sitofp %i : f32
    %y = tt.call %x, %f {callee = "helper"} : f32
    scf.yield %y
  } loc("ctl.py":10:4)
  scf.for %lb, %n, %st {unroll = "full"} {
  ^bb0(%j: i32):
    scf.yield
  }
  %c = arith.cmpi %n, %lb {predicate = "sgt"} : i1
  %r = scf.if %c : f32 {
    scf.yield %acc
  } {
    scf.yield %z
  }
  scf.if %c {
    tt.store %p, %r
    scf.yield
  } {}
  %w0, %w1 = scf.while %lb, %z : i32, f32 {
  ^bb0(%k: i32, %v: f32):
    %go = arith.cmpi %k, %n {predicate = "slt"} : i1
    scf.condition %go, %k, %v
  } {
  ^bb0(%k2: i32, %v2: f32):
    %k3 = arith.addi %k2, %st : i32
    %v3 = arith.addf %v2, %r : f32
    scf.yield %k3, %v3
  }
  tt.return %w1
}
)";

// GPU IR only: parse it under WithTestLayouts.
const char *kGPU = R"(
tt.func @gpu(%x: tensor<64x32xf32, #test<rows>>) -> tensor<64x32xf32, #test<cols>> {
  %y = ttg.convert_layout %x : tensor<64x32xf32, #test<cols>> loc("gpu.py":4:8)
  gpu.barrier
  %z = ttg.convert_layout %y : tensor<64x32xf32, #test<rows>>
  %w = arith.addf %x, %z : tensor<64x32xf32, #test<rows>>
  %v = ttg.convert_layout %w : tensor<64x32xf32, #test<cols>>
  tt.return %v
}
)";

// Shared memory, async copies and barriers (GPU IR).
const char *kShared = R"(
tt.func @smem(%p: tensor<64x32x!tt.ptr<f16>>, %m: tensor<64x32xi1>, %o: tensor<64x32xf16>, %i: i32, %ph: i32, %c: i1) {
  %a = ttg.local_alloc {allocation.offset = 0} : !ttg.memdesc<2x64x32xf16, #test<shared2>, mutable>
  %b = ttg.memdesc_index %a, %i : !ttg.memdesc<64x32xf16, #test<shared2>, mutable>
  %bt = ttg.memdesc_trans %b {order = [1, 0]} : !ttg.memdesc<32x64xf16, #test<shared2>, mutable>
  %t = ttg.async_copy_global_to_local %p, %b, %m, %o : !ttg.async.token
  %g = ttg.async_commit_group %t : !ttg.async.token
  %w = ttg.async_wait %g {num = 1} : !ttg.async.token
  %x = ttg.local_load %b, %w : tensor<64x32xf16>
  ttg.local_store %x, %b
  %r = ttg.local_alloc %x : !ttg.memdesc<64x32xf16, #test<shared2>>
  %rt = ttg.local_alloc : !ttg.memdesc<32x64xf16, #test<shared2>, mutable>
  %acc = arith.constant {value = 0.0} : tensor<64x64xf32>
  %d = ttng.warp_group_dot %r, %rt, %acc {input_precision = "tf32", max_num_imprecise_acc = 0} : tensor<64x64xf32>
  %bar = ttg.local_alloc : !ttg.memdesc<1x1xi64, #test<shared2>, mutable>
  ttng.init_barrier %bar {count = 1}
  ttng.barrier_expect %bar, %c {bytes = 4096}
  ttng.arrive_barrier %bar {count = 1}
  ttng.wait_barrier %bar, %ph, %c
  %q = ttg.local_alloc : !ttg.memdesc<64x32xf16, #test<shared2>, mutable>
  %n = arith.extsi %i : i64
  %base = tt.int_to_ptr %n : !tt.ptr<f16>
  ttng.fence_async_shared
  ttng.async_tma_copy_global_to_local %q, %bar, %c, %base, %i, %i, %n, %n, %i, %i {padding = "zero"}
  %v = tt.descriptor_load %base, %i, %i, %n, %n, %i, %i {padding = "nan"} : tensor<64x32xf16>
  tt.descriptor_store %v, %base, %i, %i, %n, %n, %i, %i
  ttng.async_tma_copy_local_to_global %r, %base, %i, %i, %n, %n, %i, %i {wait = "read"}
  ttng.inval_barrier %bar
  gpu.barrier
  ttg.local_dealloc %a
  tt.return
}
)";

// Ops with a combine region (tl.associative_scan, tl.reduce).
const char *kCombine = R"(
tt.func @combine(%x: tensor<4x8xf32>, %i: tensor<4x8xi32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xi32>) {
  %s = tt.scan %x {axis = 1, reverse = true} : tensor<4x8xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.combine.return %c
  }
  %m, %mi = tt.reduce_combine %x, %i {axis = 0} : tensor<8xf32>, tensor<8xi32> {
  ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
    %gt = arith.cmpf %b, %a {predicate = "ogt"} : i1
    %r = arith.select %gt, %b, %a : f32
    %ri = arith.select %gt, %bi, %ai : i32
    tt.combine.return %r, %ri
  }
  tt.return %s, %m, %mi
}
)";

const std::vector<const char *> kModules = {kArith, kMemory, kControl, kGPU,
                                            kShared, kCombine};

void collectDTypes(const Type *t, std::set<DType> &out) {
  if (t->isScalar())
    out.insert(t->dtype());
  else if (t->isPointer())
    collectDTypes(t->pointee(), out);
  else if (!t->isToken())
    collectDTypes(t->element(), out);
}

// ---------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------

TEST(TextRoundTrip, ModulesCoverEveryOpAndDType) {
  WithTestLayouts layouts;
  std::set<OpCode> ops;
  std::set<DType> dtypes;
  bool sawTensorOfPtr = false, sawAddrSpace = false, saw3d = false;
  for (const char *text : kModules) {
    auto m = parse(text);
    for (auto &f : m->functions())
      for (const Type *t : f->argTypes())
        collectDTypes(t, dtypes);
    m->walk([&](Operation *op) {
      ops.insert(op->code());
      for (Value *r : op->results()) {
        const Type *t = r->type();
        collectDTypes(t, dtypes);
        sawTensorOfPtr |= t->isTensor() && t->element()->isPointer();
        sawAddrSpace |= t->isPointer() && t->addressSpace() == 3;
        saw3d |= t->isTensor() && t->rank() == 3;
      }
    });
  }
  for (unsigned i = 0; i < (unsigned)OpCode::NumOps; ++i)
    EXPECT_TRUE(ops.count((OpCode)i))
        << "no test uses " << opInfo((OpCode)i).name;
  EXPECT_EQ(dtypes.size(), 15u);
  EXPECT_TRUE(sawTensorOfPtr);
  EXPECT_TRUE(sawAddrSpace);
  EXPECT_TRUE(saw3d);
}

TEST(TextRoundTrip, PrintParsePrintIsStable) {
  WithTestLayouts layouts;
  for (const char *text : kModules) {
    std::string once = print(*parse(text));
    std::string twice = print(*parse(once));
    EXPECT_EQ(once, twice);
  }
}

TEST(TextRoundTrip, HandWrittenModulesVerify) {
  WithTestLayouts layouts;
  for (const char *text : kModules)
    EXPECT_EQ(verifyError(text), "");
}

TEST(TextRoundTrip, PrintsTheHandWrittenTextBack) {
  // The hand-written text is already in canonical form (minus comments and
  // blank lines), so printing gives it back verbatim.
  auto strip = [](std::string s) {
    std::string out;
    size_t pos = 0;
    while (pos < s.size()) {
      size_t nl = s.find('\n', pos);
      std::string line = s.substr(pos, nl - pos);
      pos = nl == std::string::npos ? s.size() : nl + 1;
      if (line.empty() || line.rfind("//", 0) == 0)
        continue;
      out += line + "\n";
    }
    return out;
  };
  EXPECT_EQ(print(*parse(kMemory)), strip(kMemory));
  EXPECT_EQ(print(*parse(kArith)), strip(kArith));
  WithTestLayouts layouts;
  EXPECT_EQ(print(*parse(kGPU)), strip(kGPU));
}

TEST(TextRoundTrip, ControlFlowText) {
  std::string text = print(*parse(kControl));
  EXPECT_CONTAINS(text, "  %acc = scf.for %lb, %n, %st, %z {num_stages = 3} : "
                        "f32 {\n  ^bb0(%i: i32, %x: f32):\n    %f = "
                        "arith.sitofp %i : f32\n");
  EXPECT_CONTAINS(text, "    scf.yield %y\n  } loc(\"ctl.py\":10:4)\n");
  EXPECT_CONTAINS(text, "  %r = scf.if %c : f32 {\n    scf.yield %acc\n  } {\n"
                        "    scf.yield %z\n  }\n");
  EXPECT_CONTAINS(text, "    scf.yield\n  } {}\n");
  EXPECT_CONTAINS(text, "  %w0, %w1 = scf.while %lb, %z : i32, f32 {\n");
  EXPECT_CONTAINS(text,
                  "\n\ntt.func @control(%n: i32, %p: !tt.ptr<f32>) -> f32 {\n");
}

TEST(TextRoundTrip, LocationsCanBeLeftOut) {
  auto m = parse(kArith);
  PrintOptions opts;
  opts.printLocations = false;
  std::string text = print(*m, opts);
  EXPECT_EQ(text.find("loc("), std::string::npos);
  EXPECT_NE(print(*m).find("loc(\"arith.py\":99:5)"), std::string::npos);
  auto f = m->lookup("arith");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->loc(), (Location{"arith.py", 1, 1}));
}

TEST(TextRoundTrip, LocationFileNamesAreEscaped) {
  auto m = parse("tt.func @k() {\n  tt.return\n}\n");
  Function *f = m->functions()[0].get();
  std::string weird = "my dir/\"quoted\"\\back\ttab\nnl\x01.py";
  f->entry().ops().front()->setLoc({weird, 12, 5});
  f->setLoc({"plain.py", 1, 1});
  std::string text = print(*m);
  EXPECT_CONTAINS(
      text, "loc(\"my dir/\\\"quoted\\\"\\\\back\\ttab\\nnl\\01.py\":12:5)");
  auto m2 = parse(text);
  EXPECT_EQ(m2->functions()[0]->entry().ops().front()->loc(),
            (Location{weird, 12, 5}));
  EXPECT_EQ(print(*m2), text);
}

TEST(TextRoundTrip, AttributeKindsAndQuotedKeysAndNames) {
  auto m = parse("tt.func @k() {\n  tt.return\n}\n");
  Function *f = m->functions()[0].get();
  f->setName("k$weird name");
  f->attrs()["a key"] = std::string("v\"");
  f->attrs()["list"] = std::vector<int64_t>{-1, 0, 9000000000};
  f->attrs()["empty"] = std::vector<int64_t>{};
  f->attrs()["flag"] = false;
  f->attrs()["big"] = int64_t(INT64_MIN);
  f->attrs()["x"] = 2.0;
  std::string text = print(*m);
  EXPECT_CONTAINS(text, "tt.func @\"k$weird name\"() attributes {\"a key\" = "
                        "\"v\\\"\", big = -9223372036854775808, empty = [], "
                        "flag = false, list = [-1, 0, 9000000000], x = 2.0} {");
  auto m2 = parse(text);
  EXPECT_EQ(m2->functions()[0]->attrs(), f->attrs());
  EXPECT_EQ(print(*m2), text);
}

TEST(TextRoundTrip, EmptyRegionDiffersFromEmptyBlock) {
  // Unverified IR: the printer must still keep "no block" and "one empty
  // block" apart.
  const char *text = "tt.func @k(%c: i1) {\n"
                     "  scf.if %c {\n"
                     "  ^bb0:\n"
                     "  } {}\n"
                     "  tt.return\n"
                     "}\n";
  auto m = parse(text);
  Operation *ifOp = findOp(*m, "scf.if");
  ASSERT_NE(ifOp, nullptr);
  EXPECT_EQ(ifOp->region(0).blocks().size(), 1u);
  EXPECT_TRUE(ifOp->region(0).front().empty());
  EXPECT_TRUE(ifOp->region(1).empty());
  EXPECT_EQ(print(*m), text);
}

TEST(TextRoundTrip, ResultPacksAndTrailingOperandTypes) {
  auto m = parse(R"(
tt.func @k(%a: f32) -> f32 {
  %r:2 = scf.while %a, %a : f32, f32 {
  ^bb0(%x: f32, %y: f32):
    %c = arith.cmpf %x, %y {predicate = "olt"} : i1
    scf.condition %c, %x, %y
  } {
  ^bb1(%x: f32, %y: f32):
    scf.yield %y, %x
  }
  %s = arith.addf %r#0, %r#1 : f32
  tt.return %s : f32
})");
  EXPECT_EQ(verifyError(*m), "");
  std::string text = print(*m);
  // Sibling regions may reuse names; packs print as a list of names.
  EXPECT_CONTAINS(text, "  %r_0, %r_1 = scf.while %a, %a : f32, f32 {\n"
                        "  ^bb0(%x: f32, %y: f32):\n");
  EXPECT_CONTAINS(text,
                  "  } {\n  ^bb0(%x: f32, %y: f32):\n    scf.yield %y, %x\n");
  EXPECT_CONTAINS(text, "%s = arith.addf %r_0, %r_1 : f32\n  tt.return %s\n}");
  EXPECT_EQ(print(*parse(text)), text);
}

TEST(TextRoundTrip, LayoutsGoThroughTheRegisteredParser) {
  const char *text =
      "tt.func @k(%x: tensor<64xf32, #test<{a = [1, 2], b = \"->\"}>>) {\n"
      "  %y = arith.negf %x : tensor<64xf32, #test<{a = [1, 2], b = \"->\"}>>\n"
      "  tt.return\n"
      "}\n";
  LayoutParser previous = setLayoutParser(nullptr);
  EXPECT_EQ(parseError(text),
            "test.tir:1:31: error: cannot parse tensor layout '#test<{a = [1, "
            "2], b = \"->\"}>': no layout parser is registered");
  setLayoutParser(&parseTestLayout);
  auto m = parse(text);
  const Type *t = m->functions()[0]->arg(0)->type();
  ASSERT_NE(t->layout(), nullptr);
  EXPECT_EQ(t->layout()->str(), "#test<{a = [1, 2], b = \"->\"}>");
  EXPECT_EQ(findOp(*m, "arith.negf")->result()->type(), t);
  EXPECT_EQ(print(*m), text);
  EXPECT_CONTAINS(parseError("tt.func @k(%x: tensor<64xf32, #blocked>) {\n}\n"),
                  "test.tir:1:31: error: invalid tensor layout '#blocked': not "
                  "a test layout");
  setLayoutParser(previous);
}

// ---------------------------------------------------------------------------
// Value names
// ---------------------------------------------------------------------------

TEST(TextNames, HintsNumbersAndCollisions) {
  Module m;
  const Type *f32 = Type::scalar(DType::FP32);
  Function *f = m.addFunction(
      std::make_unique<Function>("k", std::vector<const Type *>{f32, f32}));
  f->arg(0)->nameHint = "x";
  f->arg(1)->nameHint = "x"; // a duplicate: gets a number
  Block &b = f->entry();
  auto add = [&](Value *a, Value *c, const std::string &hint) {
    Operation *op = b.push_back(Operation::create(OpCode::AddF, {a, c}, {f32}));
    op->result()->nameHint = hint;
    return op->result();
  };
  Value *v0 = add(f->arg(0), f->arg(1), ""); // %1
  Value *v1 = add(v0, v0, "7");              // numeric: %2
  Value *v2 = add(v1, v1, "a-b c");          // sanitised: %a_b_c
  Value *v3 = add(v2, v2, "a_b_c");          // taken: %3
  Value *v4 = add(v3, v3, "sum.1");          // dots are fine
  b.push_back(Operation::create(OpCode::Return, {}, {}));
  (void)v4;
  std::string text = print(m);
  EXPECT_EQ(text, "tt.func @k(%x: f32, %0: f32) {\n"
                  "  %1 = arith.addf %x, %0 : f32\n"
                  "  %2 = arith.addf %1, %1 : f32\n"
                  "  %a_b_c = arith.addf %2, %2 : f32\n"
                  "  %3 = arith.addf %a_b_c, %a_b_c : f32\n"
                  "  %sum.1 = arith.addf %3, %3 : f32\n"
                  "  tt.return\n"
                  "}\n");
  auto m2 = parse(text);
  EXPECT_EQ(print(*m2), text);
  EXPECT_EQ(m2->functions()[0]->arg(0)->nameHint, "x");
  EXPECT_EQ(m2->functions()[0]->arg(1)->nameHint, "");
}

TEST(TextNames, InnerNamesDoNotShadowOuterOnes) {
  auto m = parse(kControl);
  // Give the loop body's block argument the name of an outer value: it must
  // not print as %n inside the loop, where the outer %n is visible.
  Operation *forOp = findOp(*m, "scf.for");
  forOp->region(0).front().argument(1)->nameHint = "n";
  std::string text = print(*m);
  EXPECT_EQ(text.find("^bb0(%i: i32, %n: f32)"), std::string::npos);
  EXPECT_EQ(print(*parse(text)), text);
}

TEST(TextNames, PrintOneOpUsesTheFunctionsNames) {
  auto m = parse(kControl);
  Operation *call = findOp(*m, "tt.call");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(print(*call), "%y = tt.call %x, %f {callee = \"helper\"} : f32\n");
  Operation *ifOp = findOp(*m, "scf.if");
  EXPECT_EQ(print(*ifOp), "%r = scf.if %c : f32 {\n  scf.yield %acc\n} {\n"
                          "  scf.yield %z\n}\n");
}

TEST(TextNames, DetachedOpPrints) {
  const Type *i32 = Type::scalar(DType::I32);
  auto op = Operation::create(OpCode::GetProgramId, {}, {i32},
                              {{"axis", int64_t(1)}}, Location{"a.py", 2, 3});
  EXPECT_EQ(print(*op),
            "%0 = tt.get_program_id {axis = 1} : i32 loc(\"a.py\":2:3)\n");
}

// ---------------------------------------------------------------------------
// Floats
// ---------------------------------------------------------------------------

std::string printConst(double v) {
  Module m;
  const Type *f64 = Type::scalar(DType::FP64);
  Function *f = m.addFunction(
      std::make_unique<Function>("k", std::vector<const Type *>{}));
  f->entry().push_back(
      Operation::create(OpCode::Constant, {}, {f64}, {{"value", v}}));
  f->entry().push_back(Operation::create(OpCode::Return, {}, {}));
  return print(m);
}

double reparseConst(const std::string &text) {
  auto m = parse(text);
  return findOp(*m, "arith.constant")->floatAttr("value");
}

TEST(TextFloats, EdgeCasesRoundTripExactly) {
  const double cases[] = {0.0,
                          -0.0,
                          1.0,
                          -2.5,
                          0.1,
                          1.0 / 3.0,
                          100.0,
                          1e20,
                          1e-7,
                          123456789012345678.0,
                          std::numeric_limits<double>::max(),
                          std::numeric_limits<double>::lowest(),
                          std::numeric_limits<double>::min(),
                          std::numeric_limits<double>::denorm_min(),
                          std::numeric_limits<double>::epsilon(),
                          std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity(),
                          (double)std::numeric_limits<float>::max(),
                          65504.0};
  for (double v : cases) {
    std::string text = printConst(v);
    double back = reparseConst(text);
    EXPECT_EQ(std::bit_cast<uint64_t>(back), std::bit_cast<uint64_t>(v))
        << text;
    EXPECT_EQ(printConst(back), text);
  }
  EXPECT_TRUE(std::isnan(reparseConst(printConst(std::nan("")))));
}

TEST(TextFloats, TextAlwaysReadsAsAFloat) {
  EXPECT_CONTAINS(printConst(1.0), "{value = 1.0}");
  EXPECT_CONTAINS(printConst(-0.0), "{value = -0.0}");
  EXPECT_CONTAINS(printConst(100.0), "{value = 100.0}");
  EXPECT_CONTAINS(printConst(0.1), "{value = 0.1}");
  EXPECT_CONTAINS(printConst(1e20), "{value = 1e+20}");
  EXPECT_CONTAINS(printConst(5e-324), "{value = 5e-324}");
  EXPECT_CONTAINS(printConst(std::numeric_limits<double>::infinity()),
                  "{value = inf}");
  EXPECT_CONTAINS(printConst(-std::numeric_limits<double>::infinity()),
                  "{value = -inf}");
  EXPECT_CONTAINS(printConst(std::nan("")), "{value = nan}");
  EXPECT_CONTAINS(printConst(-std::nan("")), "{value = nan}");
}

TEST(TextFloats, RandomBitPatternsRoundTrip) {
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 2000; ++i) {
    double v = std::bit_cast<double>(rng());
    if (std::isnan(v))
      continue;
    double back = reparseConst(printConst(v));
    ASSERT_EQ(std::bit_cast<uint64_t>(back), std::bit_cast<uint64_t>(v))
        << printConst(v);
  }
}

TEST(TextFloats, IntegersStayIntegers) {
  auto m = parse("tt.func @k() {\n"
                 "  %a = arith.constant {value = 3} : f32\n"
                 "  %b = arith.constant {value = 3.0} : f32\n"
                 "  %c = arith.constant {value = -9223372036854775808} : i64\n"
                 "  %d = arith.constant {value = 2E3} : f32\n"
                 "  tt.return\n}\n");
  EXPECT_TRUE(std::holds_alternative<int64_t>(
      findOp(*m, "arith.constant", 0)->attrs().at("value")));
  EXPECT_TRUE(std::holds_alternative<double>(
      findOp(*m, "arith.constant", 1)->attrs().at("value")));
  EXPECT_EQ(findOp(*m, "arith.constant", 2)->intAttr("value"), INT64_MIN);
  EXPECT_EQ(findOp(*m, "arith.constant", 3)->floatAttr("value"), 2000.0);
}

// ---------------------------------------------------------------------------
// Parse errors
// ---------------------------------------------------------------------------

TEST(TextParseErrors, UnknownOp) {
  EXPECT_EQ(parseError("tt.func @k() {\n  %0 = arith.adf : i32\n}\n"),
            "test.tir:2:8: error: unknown op 'arith.adf'");
}

TEST(TextParseErrors, UndefinedValue) {
  EXPECT_EQ(parseError("tt.func @k(%a: f32) {\n"
                       "  // a comment line\n"
                       "  %0 = arith.addf %a, %b : f32\n}\n"),
            "test.tir:3:23: error: use of undefined value '%b'");
}

TEST(TextParseErrors, ErrorCarriesLocation) {
  try {
    parseModule("tt.func @k() {\n  foo\n}\n", "file.tir");
    FAIL() << "no error";
  } catch (const IRError &e) {
    EXPECT_EQ(e.loc, (Location{"file.tir", 2, 3}));
    // The message is bare: reporters put the location in front.
    EXPECT_EQ(std::string(e.what()), "unknown op 'foo'");
  }
}

TEST(TextParseErrors, ValueOfAClosedRegionIsNotVisible) {
  EXPECT_CONTAINS(parseError("tt.func @k(%c: i1, %a: f32) {\n"
                             "  scf.if %c {\n"
                             "    %x = arith.addf %a, %a : f32\n"
                             "    scf.yield\n"
                             "  } {}\n"
                             "  %y = arith.addf %x, %a : f32\n"
                             "  tt.return\n}\n"),
                  "test.tir:6:19: error: use of undefined value '%x'");
}

TEST(TextParseErrors, Redefinition) {
  EXPECT_EQ(
      parseError("tt.func @k(%a: f32) {\n  %a = arith.addf %a, %a : f32\n}\n"),
      "test.tir:2:3: error: redefinition of value '%a'");
  EXPECT_EQ(
      parseError(
          "tt.func @k() {\n  tt.return\n}\ntt.func @k() {\n  tt.return\n}\n"),
      "test.tir:4:10: error: redefinition of function @k");
}

TEST(TextParseErrors, UnknownType) {
  EXPECT_EQ(parseError("tt.func @k(%a: i33) {\n}\n"),
            "test.tir:1:16: error: unknown type 'i33'");
  EXPECT_EQ(parseError("tt.func @k(%a: tensor<4x0xf32>) {\n}\n"),
            "test.tir:1:25: error: tensor dimensions must be positive");
  EXPECT_EQ(parseError("tt.func @k(%a: !tt.ptr<tensor<4xf32>>) {\n}\n"),
            "test.tir:1:24: error: pointee of !tt.ptr must be a scalar type, "
            "not tensor<4xf32>");
}

TEST(TextParseErrors, ResultTypeCountMismatch) {
  EXPECT_EQ(
      parseError(
          "tt.func @k(%a: f32) {\n  %0, %1 = arith.addf %a, %a : f32\n}\n"),
      "test.tir:2:32: error: 'arith.addf' has 2 result(s) but 1 result "
      "type(s)");
  EXPECT_EQ(parseError("tt.func @k(%a: f32) {\n  %0 = arith.addf %a, %a\n}\n"),
            "test.tir:3:1: error: expected ':' and the result type of "
            "'arith.addf', found '}'");
}

TEST(TextParseErrors, WrittenOperandTypeMismatch) {
  EXPECT_EQ(
      parseError("tt.func @k(%a: f32) -> f32 {\n  tt.return %a : f16\n}\n"),
      "test.tir:2:18: error: type mismatch: operand #0 of 'tt.return' "
      "has type f32, but f16 was written");
}

TEST(TextParseErrors, UnexpectedTokens) {
  EXPECT_EQ(parseError("tt.func @k(%a f32) {\n}\n"),
            "test.tir:1:15: error: expected ':' after argument '%a', found "
            "'f32'");
  EXPECT_EQ(parseError("tt.func @k() {\n  tt.return\n"),
            "test.tir:3:1: error: expected '}' to end the region, found end "
            "of input");
  EXPECT_EQ(parseError("module {\n}\n"),
            "test.tir:1:1: error: expected 'tt.func', found 'module'");
  EXPECT_EQ(parseError("tt.func @k() {\n  %0 = arith.constant {value = \"ab\n"),
            "test.tir:2:32: error: unterminated string");
  EXPECT_EQ(parseError("tt.func @k() {\n  %0 = arith.constant {value = "
                       "99999999999999999999} : i64\n}\n"),
            "test.tir:2:32: error: integer out of range: 99999999999999999999");
  EXPECT_EQ(parseError("tt.func @k() {\n  %0 = arith.constant {value = 1, "
                       "value = 2} : i64\n}\n"),
            "test.tir:2:35: error: duplicate attribute 'value'");
}

TEST(TextParseErrors, PackNeedsAnIndex) {
  EXPECT_EQ(parseError("tt.func @k(%a: i32) {\n"
                       "  %r:2 = scf.while %a, %a : i32, i32 {} {}\n"
                       "  %s = arith.addi %r, %r : i32\n}\n"),
            "test.tir:3:19: error: '%r' names several results; use '%r#N'");
}

// ---------------------------------------------------------------------------
// Verifier: rejections, one per rule
// ---------------------------------------------------------------------------

/// A function around `body` with a few arguments of handy types.
std::string fn(const std::string &body) {
  return "tt.func @k(%f: f32, %h: f16, %i: i32, %l: i64, %b: i1, "
         "%p: !tt.ptr<f32>, %tf: tensor<4xf32>, %ti: tensor<4xi32>, "
         "%tb: tensor<4xi1>, %tp: tensor<4x!tt.ptr<f32>>, "
         "%m: tensor<4x8xf32>, %n: tensor<8x2xf32>) {\n" +
         body + "\n  tt.return\n}\n";
}

TEST(TextVerify, MessageNamesOpLocationAndText) {
  std::string e =
      verifyError(fn("  %x = arith.addf %f, %h : f32 loc(\"k.py\":3:7)"));
  EXPECT_EQ(
      e, "k.py:3:7: error: 'arith.addf' op operand types differ: f32 vs f16\n"
         "  %x = arith.addf %f, %h : f32\n"
         "  in tt.func @k");
  auto m = parse(fn("  %x = arith.addf %f, %h : f32 loc(\"k.py\":3:7)"));
  try {
    verify(*m);
    FAIL();
  } catch (const IRError &err) {
    EXPECT_EQ(err.loc, (Location{"k.py", 3, 7}));
    EXPECT_EQ(std::string(err.what())
                  .rfind("'arith.addf' op operand types differ", 0),
              0u);
  }
}

TEST(TextVerify, OperandCounts) {
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.load %p, %b, %f, %f : f32")),
                  "'tt.load' op expects 1 to 3 operands, found 4");
  EXPECT_CONTAINS(verifyError(fn("  tt.store %p")),
                  "'tt.store' op expects 2 to 3 operands, found 1");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.select %b, %f : f32")),
                  "'arith.select' op expects 3 operands, found 2");
  EXPECT_CONTAINS(verifyError(fn("  %x = math.fma %f, %f : f32")),
                  "'math.fma' op expects 3 operands, found 2");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.extf %h, %h : f32")),
                  "'arith.extf' op expects 1 operand, found 2");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.subi %i, %i, %i : i32")),
                  "'arith.subi' op expects 2 operands, found 3");
  EXPECT_CONTAINS(verifyError(fn("  %x, %y = arith.subi %i, %i : i32, i32")),
                  "'arith.subi' op expects 1 result, found 2");
}

TEST(TextVerify, ElementwiseShapes) {
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.addf %tf, %f : tensor<4xf32>")),
                  "'arith.addf' op operand types differ: tensor<4xf32> vs f32");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.addf %f, %f : tensor<4xf32>")),
                  "'arith.addf' op result type tensor<4xf32> differs from "
                  "operand type f32");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = arith.cmpf %tf, %tf {predicate = \"olt\"} : i1")),
      "'arith.cmpf' op result type must be tensor<4xi1>, found i1");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = arith.select %b, %tf, %tf : tensor<4xf32>")),
      "'arith.select' op condition must be tensor<4xi1>, found i1");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = arith.select %ti, %tf, %tf : tensor<4xf32>")),
      "'arith.select' op condition must be tensor<4xi1>, found tensor<4xi32>");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.sitofp %ti : f32")),
                  "'arith.sitofp' op result shape differs from operand shape: "
                  "tensor<4xi32> -> f32");
}

TEST(TextVerify, IntAndFloatOps) {
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.addi %f, %f : f32")),
                  "'arith.addi' op operands must be integers, found f32");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.mulf %i, %i : i32")),
                  "'arith.mulf' op operands must be floats, found i32");
  EXPECT_CONTAINS(verifyError(fn("  %x = math.exp %i : i32")),
                  "'math.exp' op operands must be floats, found i32");
  EXPECT_CONTAINS(verifyError(fn("  %x = math.absi %f : f32")),
                  "'math.absi' op operands must be integers, found f32");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = arith.cmpi %f, %f {predicate = \"eq\"} : i1")),
      "'arith.cmpi' op operands must be integers or pointers, found f32");
}

TEST(TextVerify, CastDirections) {
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.extsi %l : i32")),
                  "'arith.extsi' op must widen, but i64 -> i32 does not");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.extui %i : i32")),
                  "'arith.extui' op must widen, but i32 -> i32 does not");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.trunci %i : i64")),
                  "'arith.trunci' op must narrow, but i32 -> i64 does not");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.truncf %h : f32")),
                  "'arith.truncf' op must narrow, but f16 -> f32 does not");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.extf %f : bf16")),
                  "'arith.extf' op must widen, but f32 -> bf16 does not");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.sitofp %f : f32")),
                  "'arith.sitofp' op operand must be an integer, found f32");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.fptosi %f : f16")),
                  "'arith.fptosi' op result must be an integer, found f16");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.bitcast %l : f32")),
                  "'tt.bitcast' op bit widths differ: i64 -> f32");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.bitcast %p : i64")),
      "'tt.bitcast' op cannot bitcast between a pointer and a non-pointer");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.int_to_ptr %i : !tt.ptr<f32>")),
      "'tt.int_to_ptr' op operand must be a 64-bit integer, found i32");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.ptr_to_int %p : i32")),
      "'tt.ptr_to_int' op result must be a 64-bit integer, found i32");
}

TEST(TextVerify, PointersLoadsAndStores) {
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.addptr %p, %f : !tt.ptr<f32>")),
                  "'tt.addptr' op offset must be an integer, found f32");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.addptr %i, %i : i32")),
                  "'tt.addptr' op operand #0 must be a pointer or a tensor of "
                  "pointers, found i32");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.addptr %tp, %i : tensor<4x!tt.ptr<f32>>")),
      "'tt.addptr' op pointer and offset shapes differ");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.load %tp : tensor<4xf16>")),
      "'tt.load' op result must be tensor<4xf32>, found tensor<4xf16>");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.load %tp, %b : tensor<4xf32>")),
                  "'tt.load' op mask must be tensor<4xi1> (i1 of the pointer's "
                  "shape), found i1");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.load %tp, %ti : tensor<4xf32>")),
                  "'tt.load' op mask must be tensor<4xi1>");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.load %tp, %tb, %f : tensor<4xf32>")),
      "'tt.load' op other must be tensor<4xf32>, found f32");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.load %f : f32")),
                  "'tt.load' op operand #0 must be a pointer");
  EXPECT_CONTAINS(verifyError(fn("  tt.store %p, %h")),
                  "'tt.store' op stored value must be f32, found f16");
  EXPECT_CONTAINS(verifyError(fn("  tt.store %tp, %tf, %b")),
                  "'tt.store' op mask must be tensor<4xi1>");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.atomic_rmw %p, %f {kind = \"nand\"} : f32")),
      "'tt.atomic_rmw' op attribute 'kind' has invalid value \"nand\"");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.atomic_cas %p, %f, %h : f32")),
                  "'tt.atomic_cas' op new value must be f32, found f16");
}

TEST(TextVerify, MakeRange) {
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = tt.make_range {end = 12, start = 0} : tensor<12xi32>")),
      "'tt.make_range' op end - start must be a power of two, found 12");
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = tt.make_range {end = 0, start = 0} : tensor<1xi32>")),
      "'tt.make_range' op end (0) must be greater than start (0)");
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = tt.make_range {end = 24, start = 8} : tensor<16xi64>")),
      "'tt.make_range' op result must be tensor<16xi32>, found tensor<16xi64>");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.make_range {end = 16} : tensor<16xi32>")),
      "'tt.make_range' op requires an integer attribute 'start'");
}

TEST(TextVerify, ShapeOps) {
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.splat %tf : tensor<4xf32>")),
      "'tt.splat' op operand must be a scalar or pointer, found tensor<4xf32>");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.splat %f : tensor<4xf16>")),
                  "'tt.splat' op result element type f16 differs from operand "
                  "element type f32");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.broadcast %m : tensor<8x8xf32>")),
      "'tt.broadcast' op dimension 0 of size 4 cannot broadcast to 8");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.broadcast %tf : tensor<4x4xf32>")),
                  "'tt.broadcast' op operand and result ranks differ");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.expand_dims %tf {axis = 2} : tensor<4x1xf32>")),
      "'tt.expand_dims' op axis 2 out of range [0, 1]");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.expand_dims %tf {axis = 0} : tensor<4x1xf32>")),
      "'tt.expand_dims' op result shape must be tensor<1x4xf32>, found "
      "tensor<4x1xf32>");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.reshape %m : tensor<30xf32>")),
                  "'tt.reshape' op element counts differ: tensor<4x8xf32> -> "
                  "tensor<30xf32>");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.trans %m {order = [0, 0]} : tensor<8x4xf32>")),
      "'tt.trans' op order must be a permutation of the operand's 2 "
      "dimensions");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.trans %m {order = [1, 0]} : tensor<4x8xf32>")),
      "'tt.trans' op result shape must be tensor<8x4xf32>, found "
      "tensor<4x8xf32>");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.trans %m : tensor<8x4xf32>")),
                  "'tt.trans' op requires an array attribute 'order'");
}

TEST(TextVerify, ConvertLayout) {
  WithTestLayouts layouts;
  auto gpuFn = [](const std::string &body) {
    return "tt.func @k(%x: tensor<4x8xf32, #test<a>>, %t: tensor<4x8xf32>) "
           "{\n" +
           body + "\n  tt.return\n}\n";
  };
  std::string ok =
      gpuFn("  %y = ttg.convert_layout %x : tensor<4x8xf32, #test<b>>");
  EXPECT_EQ(verifyError(ok), "");
  EXPECT_EQ(print(*parse(ok)), ok);
  auto m = parse(ok);
  Operation *c = findOp(*m, "ttg.convert_layout");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->code(), OpCode::ConvertLayout);
  EXPECT_TRUE(c->hasTrait(PURE));
  EXPECT_EQ(c->result(0)->type()->layout()->str(), "#test<b>");
  // Converting to the layout the operand already has is valid (and folds).
  EXPECT_EQ(verifyError(gpuFn(
                "  %y = ttg.convert_layout %x : tensor<4x8xf32, #test<a>>")),
            "");

  EXPECT_CONTAINS(
      verifyError(
          gpuFn("  %y = ttg.convert_layout %x : tensor<8x4xf32, #test<b>>")),
      "'ttg.convert_layout' op operand and result shapes differ: "
      "tensor<4x8xf32, #test<a>> -> tensor<8x4xf32, #test<b>>");
  EXPECT_CONTAINS(
      verifyError(
          gpuFn("  %y = ttg.convert_layout %x : tensor<32xf32, #test<b>>")),
      "'ttg.convert_layout' op operand and result shapes differ");
  EXPECT_CONTAINS(
      verifyError(
          gpuFn("  %y = ttg.convert_layout %x : tensor<4x8xf16, #test<b>>")),
      "'ttg.convert_layout' op result element type f16 differs from operand "
      "element type f32");
  EXPECT_CONTAINS(
      verifyError(gpuFn("  %y = ttg.convert_layout %x, %x : tensor<4x8xf32, "
                        "#test<b>>")),
      "'ttg.convert_layout' op expects 1 operand, found 2");
  EXPECT_CONTAINS(
      verifyError(gpuFn("  %f = arith.constant {value = 1.0} : f32\n"
                        "  %y = ttg.convert_layout %f : f32")),
      "'ttg.convert_layout' op operand must be a tensor, found f32");
  // Tile IR has no layouts to convert between.
  EXPECT_CONTAINS(
      verifyError(
          gpuFn("  %y = ttg.convert_layout %t : tensor<4x8xf32, #test<b>>")),
      "'ttg.convert_layout' op operand and result must carry layouts (GPU IR "
      "only): tensor<4x8xf32> -> tensor<4x8xf32, #test<b>>");
  EXPECT_CONTAINS(
      verifyError(gpuFn("  %y = ttg.convert_layout %x : tensor<4x8xf32>")),
      "'ttg.convert_layout' op operand and result must carry layouts");
}

TEST(TextVerify, Reduce) {
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = tt.reduce %m {axis = 2, kind = \"sum\"} : tensor<4xf32>")),
      "'tt.reduce' op axis 2 out of range [0, 2)");
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = tt.reduce %m {axis = 1, kind = \"sum\"} : tensor<8xf32>")),
      "'tt.reduce' op result must be tensor<4xf32>, found tensor<8xf32>");
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = tt.reduce %tf {axis = 0, kind = \"argmax\"} : f32")),
      "'tt.reduce' op result must be i32, found f32");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.reduce %tf {axis = 0, kind = \"mean\"} : f32")),
      "'tt.reduce' op attribute 'kind' has invalid value \"mean\"");
  EXPECT_EQ(
      verifyError(fn("  %x = tt.reduce %tf {axis = 0, kind = \"max\"} : f32")),
      "");
}

TEST(TextVerify, DotShapes) {
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.dot %m, %m, %m : tensor<4x8xf32>")),
                  "'tt.dot' op inner dimensions differ: tensor<4x8xf32> and "
                  "tensor<4x8xf32>");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.dot %m, %n, %m : tensor<4x8xf32>")),
                  "'tt.dot' op accumulator must be 4x2, found tensor<4x8xf32>");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.dot %tf, %n, %m : tensor<4x8xf32>")),
      "'tt.dot' op operand #0 must be a 2-D or 3-D tensor, found "
      "tensor<4xf32>");
  EXPECT_CONTAINS(verifyError(fn("  %c = tt.reshape %m : tensor<4x8xf32>\n"
                                 "  %x = tt.dot %m, %n, %c {input_precision = "
                                 "\"fp64\"} : tensor<4x8xf32>")),
                  "'tt.dot' op accumulator must be 4x2");
  EXPECT_CONTAINS(
      verifyError("tt.func @k(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, "
                  "%c: tensor<4x2xf32>) {\n"
                  "  %x = tt.dot %a, %b, %c {max_num_imprecise_acc = -4} : "
                  "tensor<4x2xf32>\n"
                  "  tt.return\n}\n"),
      "'tt.dot' op attribute 'max_num_imprecise_acc' must be >= 0, found -4");
  // Batched: the accumulator's batch dimension is checked too.
  EXPECT_CONTAINS(
      verifyError("tt.func @k(%a: tensor<2x4x8xf32>, %b: tensor<2x8x2xf32>, "
                  "%c: tensor<2x4x4xf32>) {\n"
                  "  %x = tt.dot %a, %b, %c : tensor<2x4x4xf32>\n"
                  "  tt.return\n}\n"),
      "'tt.dot' op accumulator must be 2x4x2, found tensor<2x4x4xf32>");
}

TEST(TextVerify, RequiredAttributes) {
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.get_program_id : i32")),
      "'tt.get_program_id' op requires an integer attribute 'axis'");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.get_program_id {axis = \"x\"} : i32")),
      "'tt.get_program_id' op attribute 'axis' must be an integer, found a "
      "string");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.get_num_programs {axis = 3} : i32")),
      "'tt.get_num_programs' op axis must be 0, 1 or 2, found 3");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.cmpi %i, %i : i1")),
                  "'arith.cmpi' op requires a string attribute 'predicate'");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = arith.cmpi %i, %i {predicate = \"olt\"} : i1")),
      "'arith.cmpi' op attribute 'predicate' has invalid value \"olt\"");
  EXPECT_CONTAINS(verifyError(fn("  %x = arith.constant : f32")),
                  "'arith.constant' op requires attribute 'value'");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = arith.constant {value = \"1\"} : f32")),
      "'arith.constant' op attribute 'value' must be a float for f32, found a "
      "string");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = arith.constant {value = 1.5} : tensor<4xi32>")),
      "'arith.constant' op attribute 'value' must be an integer for i32, found "
      "a float");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.atomic_rmw %p, %f : f32")),
                  "'tt.atomic_rmw' op requires a string attribute 'kind'");
  EXPECT_CONTAINS(verifyError(fn("  %x = tt.call %f : f32")),
                  "'tt.call' op requires a string attribute 'callee'");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = tt.load %p {volatile = 1} : f32")),
      "'tt.load' op attribute 'volatile' must be a bool, found an integer");
}

TEST(TextVerify, Terminators) {
  EXPECT_CONTAINS(
      verifyError("tt.func @k() {\n}\n"),
      "error: 'tt.func' @k body must end with 'tt.return' (it is empty)");
  EXPECT_CONTAINS(
      verifyError(
          "tt.func @k(%p: !tt.ptr<f32>, %f: f32) {\n  tt.store %p, %f\n}\n"),
      "error: 'tt.func' @k body must end with 'tt.return', found 'tt.store'");
  EXPECT_CONTAINS(verifyError("tt.func @k(%f: f32) -> f32 {\n  tt.return\n}\n"),
                  "'tt.return' op operand types () do not match the function's "
                  "result types (f32)");
  EXPECT_CONTAINS(
      verifyError("tt.func @k(%f: f32) {\n  tt.return\n  tt.return\n}\n"),
      "'tt.return' op is a terminator but is not the last op of its block");
  EXPECT_CONTAINS(
      verifyError(fn("  scf.for %i, %i, %i {\n  ^bb0(%iv: i32):\n  }")),
      "'scf.for' op region #0 must end with 'scf.yield' (it is empty)");
  EXPECT_CONTAINS(
      verifyError(
          fn("  scf.for %i, %i, %i {\n  ^bb0(%iv: i32):\n    tt.return\n  }")),
      "'tt.return' op must be in a function body, not in 'scf.for'");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = scf.for %i, %i, %i, %f : f32 {\n  ^bb0(%iv: i32, "
                     "%a: f32):\n    scf.yield %h\n  }")),
      "'scf.yield' op operand types (f16) do not match the scf.for types "
      "(f32)");
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = scf.while %f : f32 {\n  ^bb0(%a: f32):\n    scf.yield "
             "%a\n  } {\n  ^bb0(%c: f32):\n    scf.yield %c\n  }")),
      "'scf.yield' op must end a region of 'scf.for', 'scf.if' or the 'after' "
      "region of 'scf.while'");
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = scf.while %f : f32 {\n  ^bb0(%a: f32):\n    scf.condition "
             "%b, %a\n  } {\n  ^bb0(%c: f32):\n    scf.condition %b, %c\n  }")),
      "'scf.condition' op must end the 'before' region of 'scf.while'");
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = scf.while %f : f32 {\n  ^bb0(%a: f32):\n    scf.condition "
             "%b, %i\n  } {\n  ^bb0(%c: f32):\n    scf.yield %c\n  }")),
      "'scf.while' op scf.condition forwards (i32) but the op's result types "
      "are (f32)");
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = scf.while %f : f32 {\n  ^bb0(%a: f32):\n    scf.condition "
             "%i, %a\n  } {\n  ^bb0(%c: f32):\n    scf.yield %c\n  }")),
      "'scf.condition' op condition must be i1, found i32");
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = scf.while %f : f32 {\n  ^bb0(%a: f32):\n    scf.condition "
             "%b, %a\n  } {\n  ^bb0(%c: f32):\n    scf.yield %i\n  }")),
      "'scf.yield' op operand types (i32) do not match the scf.while types "
      "(f32)");
  EXPECT_CONTAINS(
      verifyError(
          fn("  %x = scf.while %f : f32 {\n  ^bb0(%a: f16):\n    scf.condition "
             "%b, %f\n  } {\n  ^bb0(%c: f32):\n    scf.yield %c\n  }")),
      "'scf.while' op 'before' block arguments (f16) must match the init types "
      "(f32)");
}

TEST(TextVerify, ForBodyArguments) {
  EXPECT_CONTAINS(
      verifyError(fn("  %x = scf.for %i, %i, %i, %f : f32 {\n  ^bb0(%iv: i64, "
                     "%a: f32):\n    scf.yield %a\n  }")),
      "'scf.for' op body arguments (i64, f32) must be the induction variable "
      "and one per init: (i32, f32)");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = scf.for %i, %i, %i, %f : f32 {\n  ^bb0(%iv: "
                     "i32):\n    scf.yield %f\n  }")),
      "'scf.for' op body arguments (i32) must be the induction variable");
  EXPECT_CONTAINS(
      verifyError(
          fn("  scf.for %i, %l, %i {\n  ^bb0(%iv: i32):\n    scf.yield\n  }")),
      "'scf.for' op bounds and step must have one type, found i32, i64, i32");
  EXPECT_CONTAINS(
      verifyError(
          fn("  scf.for %f, %f, %f {\n  ^bb0(%iv: f32):\n    scf.yield\n  }")),
      "'scf.for' op lower bound must be a scalar integer, found f32");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = scf.for %i, %i, %i, %f : f16 {\n  ^bb0(%iv: i32, "
                     "%a: f32):\n    scf.yield %a\n  }")),
      "'scf.for' op result types (f16) do not match the init types (f32)");
  EXPECT_CONTAINS(
      verifyError(
          fn("  scf.for %i, %i {\n  ^bb0(%iv: i32):\n    scf.yield\n  }")),
      "'scf.for' op expects at least 3 operands, found 2");
  EXPECT_CONTAINS(
      verifyError(fn("  scf.for %i, %i, %i {}")),
      "'scf.for' op region #0 must have exactly one block, found 0");
}

TEST(TextVerify, IfRules) {
  EXPECT_CONTAINS(verifyError(fn("  scf.if %i {\n    scf.yield\n  } {}")),
                  "'scf.if' op condition must be i1, found i32");
  EXPECT_CONTAINS(verifyError(fn("  scf.if %tb {\n    scf.yield\n  } {}")),
                  "'scf.if' op condition must be i1, found tensor<4xi1>");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = scf.if %b : f32 {\n    scf.yield %f\n  } {}")),
      "'scf.if' op has results, so it needs an else region");
  EXPECT_CONTAINS(
      verifyError(fn("  %x = scf.if %b : f32 {\n    scf.yield %f\n  } {\n    "
                     "scf.yield %h\n  }")),
      "'scf.yield' op operand types (f16) do not match the scf.if types (f32)");
  EXPECT_CONTAINS(verifyError(fn("  scf.if %b {\n    scf.yield\n  }")),
                  "'scf.if' op expects 2 regions, found 1");
  EXPECT_EQ(verifyError(fn("  scf.if %b {\n    scf.yield\n  } {}")), "");
}

TEST(TextVerify, Calls) {
  const char *callee = "tt.func @g(%a: f32) -> f32 {\n  tt.return %a\n}\n";
  EXPECT_CONTAINS(
      verifyError(std::string(callee) +
                  fn("  %x = tt.call %f {callee = \"nope\"} : f32")),
      "'tt.call' op callee @nope is not defined in the module");
  EXPECT_CONTAINS(verifyError(std::string(callee) +
                              fn("  %x = tt.call %h {callee = \"g\"} : f32")),
                  "'tt.call' op operand types (f16) do not match @g's argument "
                  "types (f32)");
  EXPECT_CONTAINS(
      verifyError(std::string(callee) +
                  fn("  %x = tt.call %f {callee = \"g\"} : i32")),
      "'tt.call' op result types (i32) do not match @g's result types (f32)");
  EXPECT_EQ(verifyError(std::string(callee) +
                        fn("  %x = tt.call %f {callee = \"g\"} : f32")),
            "");
}

TEST(TextVerify, DominanceUseBeforeDefinition) {
  auto m = parse("tt.func @k(%a: f32) {\n"
                 "  %b = arith.addf %a, %a : f32\n"
                 "  %c = arith.mulf %b, %b : f32\n"
                 "  tt.return\n}\n");
  EXPECT_EQ(verifyError(*m), "");
  Block &entry = m->functions()[0]->entry();
  Operation *bOp = findOp(*m, "arith.addf");
  Operation *cOp = findOp(*m, "arith.mulf");
  auto detached = cOp->detach();
  entry.insert(entry.find(bOp), std::move(detached));
  EXPECT_CONTAINS(verifyError(*m),
                  "'arith.mulf' op operand #0 (%b) does not dominate this use");
}

TEST(TextVerify, DominanceOwnResultAndSiblingRegion) {
  auto m = parse("tt.func @k(%c: i1, %a: f32) {\n"
                 "  scf.if %c {\n"
                 "    %x = arith.addf %a, %a : f32\n"
                 "    scf.yield\n"
                 "  } {\n"
                 "    %y = arith.mulf %a, %a : f32\n"
                 "    scf.yield\n"
                 "  }\n"
                 "  %z = arith.subf %a, %a : f32\n"
                 "  tt.return\n}\n");
  EXPECT_EQ(verifyError(*m), "");
  Operation *x = findOp(*m, "arith.addf");
  Operation *y = findOp(*m, "arith.mulf");
  Operation *z = findOp(*m, "arith.subf");
  y->operands()[1] = x->result();
  EXPECT_CONTAINS(verifyError(*m),
                  "'arith.mulf' op operand #1 (%x) does not dominate this use");
  y->operands()[1] = y->operands()[0];
  z->operands()[0] = z->result();
  EXPECT_CONTAINS(verifyError(*m),
                  "'arith.subf' op operand #0 (%z) does not dominate this use");
}

TEST(TextVerify, DominanceValueFromAnotherFunction) {
  auto m = parse("tt.func @g(%q: f32) {\n  tt.return\n}\n"
                 "tt.func @k(%a: f32) {\n"
                 "  %b = arith.addf %a, %a : f32\n"
                 "  tt.return\n}\n");
  Operation *add = findOp(*m, "arith.addf");
  add->operands()[1] = m->functions()[0]->arg(0);
  EXPECT_CONTAINS(
      verifyError(*m),
      "'arith.addf' op operand #1 is a value defined outside the function");
}

TEST(TextVerify, NestedUsesOfOuterValuesAreFine) {
  EXPECT_EQ(verifyError(fn("  %x = arith.addf %f, %f : f32\n"
                           "  %r = scf.for %i, %i, %i, %x : f32 {\n"
                           "  ^bb0(%iv: i32, %a: f32):\n"
                           "    %y = scf.if %b : f32 {\n"
                           "      %s = arith.addf %a, %x : f32\n"
                           "      scf.yield %s\n"
                           "    } {\n"
                           "      scf.yield %x\n"
                           "    }\n"
                           "    scf.yield %y\n"
                           "  }")),
            "");
}

TEST(TextVerify, DuplicateFunctionNames) {
  auto m = parse("tt.func @g() {\n  tt.return\n}\n");
  m->addFunction(std::make_unique<Function>("g", std::vector<const Type *>{}))
      ->entry()
      .push_back(Operation::create(OpCode::Return, {}, {}));
  EXPECT_CONTAINS(verifyError(*m), "'tt.func' @g is defined twice");
}

TEST(TextVerify, AssertAndPrint) {
  EXPECT_CONTAINS(verifyError(fn("  tt.assert %ti")),
                  "'tt.assert' op condition must be i1 (or a tensor of i1), "
                  "found tensor<4xi32>");
  EXPECT_CONTAINS(
      verifyError(fn("  tt.print %f {prefix = 3}")),
      "'tt.print' op attribute 'prefix' must be a string, found an integer");
  EXPECT_EQ(
      verifyError(fn("  tt.assert %tb {message = \"m\"}\n  tt.print %f, %tb")),
      "");
}

// Deeply nested text used to overflow the parser's stack (found by
// tools/fuzz/parse_fuzzer.cpp): it is a parse error at the level that goes
// past the limit, and nesting below the limit still parses.

/// `depth` scf.if ops, each inside the region of the one before.
std::string nestedIfs(int depth) {
  std::string text = "tt.func @k(%c: i1) {\n";
  for (int i = 0; i < depth; ++i)
    text += "  scf.if %c {\n";
  for (int i = 0; i < depth; ++i)
    text += "  }\n";
  return text + "  tt.return\n}\n";
}

TEST(TextParse, DeeplyNestedPointerTypeIsAnErrorNotAStackOverflow) {
  const int depth = 100000;
  std::string type;
  for (int i = 0; i < depth; ++i)
    type += "!tt.ptr<";
  type += "f32" + std::string(depth, '>');
  // The 257th `!tt.ptr<` starts at column 16 + 256 * 8.
  EXPECT_EQ(parseError("tt.func @k(%a: " + type + ") {\n  tt.return\n}\n"),
            "test.tir:1:" + std::to_string(16 + 256 * 8) +
                ": error: types or regions nested more than 256 deep");
}

TEST(TextParse, DeeplyNestedRegionsAreAnErrorNotAStackOverflow) {
  // The region of the 257th scf.if, on line 258, is one too many.
  EXPECT_EQ(parseError(nestedIfs(100000)),
            "test.tir:258:13: error: types or regions nested more than 256 deep");
  EXPECT_EQ(parseError(nestedIfs(256)), "");
}

} // namespace
