// --fuse-multiply-add: a * b + c as one math.fma where Triton's
// enable_fp_fusion (on by default) allows it.
//
// Why: with fusion on, the emitter writes fp32/fp64 mul and add without a
// rounding modifier, which lets ptxas fuse them, but ptxas does it only as a
// local peephole. In Liger's DyT forward, y = tanh(a*x) * gamma + beta, the
// multiply sits before beta's load and the add after it, and ptxas kept
// them apart: 8 FMUL + 8 FADD a thread where Triton's PTX has 8 fma.rn
// (LLVM contracts across the load). Fusing in the IR makes it independent
// of where the operands arrive.
//
// What: an arith.addf or arith.subf of f32 or f64 elements with an operand
// defined by an arith.mulf of the same block that has no other use becomes
//   addf(mul(a, b), c)  ->  fma(a, b, c)      (either operand order)
//   subf(mul(a, b), c)  ->  fma(a, b, -c)
//   subf(c, mul(a, b))  ->  fma(-a, b, c)
// (negation is exact, and PTX folds it into the fma's operand). The mul and
// the add go. fp16/bf16 arithmetic is left as it is; with enable_fp_fusion
// off the pass does nothing (the emitter then rounds every op, .rn).
// The CPU executor runs the tile IR unfused, as Triton's interpreter does;
// a fused result differs from it by at most the one rounding the fma saves.
// Counter: gpu.fma-fused.
#include "tritium/gpu/passes.h"
#include "tritium/transforms/rewrite.h"

namespace tritium::gpu {
namespace {

bool isF32OrF64(const Type *t) {
  const Type *e = t->isTensor() ? t->element() : t;
  return e->isScalar() &&
         (e->dtype() == DType::FP32 || e->dtype() == DType::FP64);
}

/// The arith.mulf defining `v` when it is in `block` and `v` has no use but
/// one; null otherwise.
Operation *fusableMul(Value *v, Block *block,
                      const std::unordered_map<Value *, unsigned> &uses) {
  Operation *d = v->definingOp();
  if (!d || d->code() != OpCode::MulF || d->parentBlock() != block)
    return nullptr;
  auto it = uses.find(v);
  return it != uses.end() && it->second == 1 ? d : nullptr;
}

Value *insertBefore(Operation *at, OpCode code, std::vector<Value *> operands,
                    const Type *type) {
  Block *b = at->parentBlock();
  auto op = Operation::create(code, std::move(operands), {type}, {}, at->loc());
  return b->insert(b->find(at), std::move(op))->result(0);
}

int64_t fuse(Function &f) {
  auto uses = useCounts(f);
  ValueReplacer replacer;
  std::unordered_set<Operation *> dead;
  for (Operation *op : collectOps(f)) {
    if ((op->code() != OpCode::AddF && op->code() != OpCode::SubF) ||
        !isF32OrF64(op->result(0)->type()))
      continue;
    Block *block = op->parentBlock();
    const Type *type = op->result(0)->type();
    Operation *lhs = fusableMul(op->operand(0), block, uses);
    Operation *rhs = fusableMul(op->operand(1), block, uses);
    Value *fma = nullptr;
    Operation *mul = nullptr;
    if (lhs) { // mul(a, b) +- c
      mul = lhs;
      Value *c = op->operand(1);
      if (op->code() == OpCode::SubF)
        c = insertBefore(op, OpCode::NegF, {c}, type);
      fma = insertBefore(op, OpCode::Fma,
                         {mul->operand(0), mul->operand(1), c}, type);
    } else if (rhs) { // c + mul(a, b), c - mul(a, b)
      mul = rhs;
      Value *a = mul->operand(0);
      if (op->code() == OpCode::SubF)
        a = insertBefore(op, OpCode::NegF, {a}, type);
      fma = insertBefore(op, OpCode::Fma, {a, mul->operand(1), op->operand(0)},
                         type);
    } else {
      continue;
    }
    fma->nameHint = op->result(0)->nameHint; // the printed IR keeps `%y`
    replacer.replace(op->result(0), fma);
    dead.insert(op);
    dead.insert(mul);
  }
  if (dead.empty())
    return 0;
  replacer.applyTo(f);
  eraseOps(f, dead);
  return (int64_t)dead.size() / 2;
}

} // namespace

void fuseMultiplyAdd(Module &m, const PipelineOptions &opts,
                     PassStats &stats) {
  if (!opts.enableFpFusion)
    return;
  int64_t fused = 0;
  for (auto &f : m.functions())
    fused += fuse(*f);
  stats.add("gpu.fma-fused", fused);
}

} // namespace tritium::gpu
