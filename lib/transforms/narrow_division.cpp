// --narrow-division: 64-bit integer division and remainder of values that
// are 32-bit integers extended to 64 bits, done in 32 bits.
//
// Kernels write `pid = tl.program_id(0).to(tl.int64)` to keep their offset
// arithmetic from wrapping, and then `pid // seq_len` or `pid % seq_len`
// with an i32 argument: a 64-bit division. PTX's div.s64/rem.s64 become a
// subroutine of about 70 instructions each on the GPU (no hardware divider),
// where a 32-bit division is about 20 (Liger's llama4_rope kernel: 288 SASS
// instructions under tritium, 160 under Triton, whose LLVM narrows the
// division to div.s32). Outline:
//  1. For each arith.divsi / arith.remsi / arith.divui / arith.remui on a
//     64-bit integer type (scalar or tensor), find each operand's 32-bit
//     source: an arith.extsi (signed ops) or arith.extui (unsigned ops) of
//     an i32 value (u32 for extui), or a constant that fits in 32 bits.
//  2. Unsigned ops on zero-extended values always give the zero-extension
//     of the 32-bit result. Signed ops on sign-extended values give the
//     sign-extension of the 32-bit result except for INT32_MIN / -1 (whose
//     64-bit quotient 2^31 does not fit): narrowed only when that cannot
//     happen: the dividend is known non-negative (a program id, a grid
//     size, a tl.arange with a non-negative start, a non-negative constant)
//     or the divisor is a constant other than -1.
//  3. The op becomes the 32-bit op followed by the matching extension; its
//     uses read the extension. The old 64-bit op and unused extensions are
//     left to --dce.
// Division by zero stays division by zero (undefined in both widths).
// Counter: narrow-division.ops.
#include "tritium/transforms/fold.h"
#include "tritium/transforms/passes.h"

namespace tritium {
namespace {

bool isNarrowable(OpCode c) {
  return c == OpCode::DivSI || c == OpCode::RemSI || c == OpCode::DivUI ||
         c == OpCode::RemUI;
}

bool isSignedOp(OpCode c) { return c == OpCode::DivSI || c == OpCode::RemSI; }

DType dtypeOf(const Value *v) { return v->type()->scalarType()->dtype(); }

/// The 32-bit value whose extension `v` is (extsi of an i32 for signed ops,
/// extui of an i32/u32 for unsigned ones), or null. A constant that fits in
/// 32 bits is reported through `constant` (the caller builds its narrow
/// twin).
Value *narrowSource(Value *v, bool signedOp, std::optional<int64_t> &constant) {
  if (auto c = getConstant(v); c && !c->isFloat()) {
    int64_t x = c->sext();
    bool fits = signedOp ? (x >= INT32_MIN && x <= INT32_MAX)
                         : (c->zext() <= UINT32_MAX);
    if (fits)
      constant = x;
    return nullptr;
  }
  Operation *d = v->definingOp();
  if (!d)
    return nullptr;
  if (signedOp && d->code() == OpCode::ExtSI && dtypeOf(d->operand(0)) == DType::I32)
    return d->operand(0);
  if (!signedOp && d->code() == OpCode::ExtUI &&
      (dtypeOf(d->operand(0)) == DType::I32 || dtypeOf(d->operand(0)) == DType::U32))
    return d->operand(0);
  return nullptr;
}

/// Narrows `op` if it qualifies (outline 1-3); true when it did.
bool narrow(Function &f, Operation *op, PassStats &stats) {
  const Type *wide = op->result(0)->type();
  DType wd = wide->scalarType()->dtype();
  if (wd != DType::I64 && wd != DType::U64)
    return false;
  bool signedOp = isSignedOp(op->code());
  std::optional<int64_t> ca, cb;
  Value *a = narrowSource(op->operand(0), signedOp, ca);
  Value *b = narrowSource(op->operand(1), signedOp, cb);
  if ((!a && !ca) || (!b && !cb) || (ca && cb))
    return false; // both constant: --canonicalize folds it
  // The 32-bit type of the narrow operands (tensor shape kept).
  const Type *narrowT = a ? a->type() : b->type();
  DType nd = narrowT->scalarType()->dtype();
  if (a && b && a->type() != b->type())
    return false;
  if (signedOp) {
    bool safe = (a && knownNonNegative(a)) || (ca && *ca != INT32_MIN) ||
                (cb && *cb != -1);
    if (!safe)
      return false;
  }
  Block *blk = op->parentBlock();
  auto it = blk->find(op);
  auto constantOf = [&](int64_t x) {
    Operation *c = blk->insert(
        it, Operation::create(OpCode::Constant, {}, {narrowT},
                              {{"value", ConstValue::ofInt(nd, (uint64_t)x).toAttr()}},
                              op->loc()));
    return c->result(0);
  };
  if (!a)
    a = constantOf(*ca);
  if (!b)
    b = constantOf(*cb);
  Operation *n32 =
      blk->insert(it, Operation::create(op->code(), {a, b}, {narrowT}, op->attrs(), op->loc()));
  Operation *ext = blk->insert(
      it, Operation::create(signedOp ? OpCode::ExtSI : OpCode::ExtUI, {n32->result(0)},
                            {wide}, {}, op->loc()));
  replaceAllUsesWith(f, op->result(0), ext->result(0));
  stats.add("narrow-division.ops");
  return true;
}

} // namespace

void narrowDivision(Module &m, const PipelineOptions &, PassStats &stats) {
  for (auto &fn : m.functions()) {
    std::vector<Operation *> work;
    fn->walk([&](Operation *op) {
      if (isNarrowable(op->code()))
        work.push_back(op);
    });
    for (Operation *op : work)
      narrow(*fn, op, stats);
  }
}

} // namespace tritium
