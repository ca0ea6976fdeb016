// --split-masked-loops: a dot loop that masks with a condition true on a
// prefix of its iterations runs that prefix as a loop of its own, without
// the mask.
//
// Why: the attention forward a user writes first masks every key block,
//   keep = cols[None, :] < N_CTX            (the ragged end)
//   keep = keep & (offs_m[:, None] >= cols[None, :])   (causal)
//   qk = tl.where(keep, qk, float("-inf"))
// with cols = start_n + tl.arange(0, BLOCK_N), so every iteration compares
// and selects each element of the score tile (64 a thread at 128x128 on
// 256 threads), where only the last block (and, causal, the blocks on the
// diagonal) can have a false element. Triton's tutorial splits its loop by
// hand for that; here the compiler does it for the kernel as written.
//
// What it does, per scf.for with a tt.dot in its body, an i32 induction
// variable and a positive constant step: an "atom" is an arith.cmpi of the
// body
//   V < I, V <= I (slt, sle), or I > V, I >= V (sgt, sge)
// where V = iv + r elementwise, r within constants [rlo, rhi] (splat of the
// iv plus make_range and constant splats, through expand_dims and
// broadcast), and I = b + s, b a scalar defined before the loop (or none)
// and s within constants [slo, shi] likewise. Every element of an atom is
// true exactly when iv < b + slo - rhi (+1 for <=): a threshold, true on a
// prefix of the iterations. A condition is an atom, or an andi of
// conditions, through expand_dims and broadcast. The loop is split where
// some arith.select of the body takes a condition made of atoms only:
//   T = min over those atoms' thresholds (in i64: no wrap)
//   split = min(lb + max(0, ceil((T - lb) / step)) * step, ub)
//   loop 1: lb .. split, every atom of the body whose threshold is at least
//           one of those (same b, no smaller constant) replaced by true
//   loop 2: split .. ub, the loop as it was, its inits loop 1's results
// canonicalize then folds the selects and the all-true load masks. Loop 2
// runs the same iterations the loop would have from `split` on, so the
// results are those of the loop as written, bit for bit.
//
// Only dot loops: the attention kernels' are where the mask is per element
// of a large tile; row loops (softmax, layer norm) mask their loads, which a
// split would duplicate for little. And only where the loop carries at most
// kMaxCarriedPerThread elements a thread: two loops cost registers (ptxas
// 13.0, sm_90a, the attention forward: d128 128x128 on 8 warps, 64
// accumulator elements a thread, 230 -> 255 registers without a spill, and
// 618 instructions an iteration in the unmasked loop instead of 743; d128
// 128x64 on 4 warps, 128 a thread, spilled 232 bytes instead of 84, with
// 75 local-memory accesses an iteration instead of 17, so it stays whole).
#include "tritium/transforms/fold.h"
#include "tritium/transforms/passes.h"
#include "tritium/transforms/rewrite.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

namespace tritium {
namespace {

/// An integer constant (a scalar or a splat tensor) as a number.
std::optional<int64_t> intConstantOf(const Value *v) {
  auto c = getConstant(v);
  if (!c || c->isFloat())
    return std::nullopt;
  return c->asInt();
}

/// The values of a tensor (or scalar) as base + [lo, hi]: base a scalar
/// value (null: none), lo and hi constants.
struct Range {
  Value *base = nullptr;
  int64_t lo = 0, hi = 0;
};

/// Range of an i32 tensor or scalar built from splats, make_range, integer
/// constants, addi, expand_dims and broadcast; nullopt otherwise. A base may
/// appear once in a sum.
std::optional<Range> rangeOf(Value *v, int depth = 0) {
  if (depth > 16)
    return std::nullopt;
  const Type *t = v->type();
  const Type *e = t->isTensor() ? t->element() : t;
  if (!e->isScalar() || e->dtype() != DType::I32)
    return std::nullopt;
  if (!t->isTensor())
    return Range{v, 0, 0};
  Operation *def = v->definingOp();
  if (!def)
    return std::nullopt;
  switch (def->code()) {
  case OpCode::Splat:
    if (auto c = intConstantOf(def->operand(0)))
      return Range{nullptr, *c, *c};
    return Range{def->operand(0), 0, 0};
  case OpCode::Constant:
    if (auto c = intConstantOf(v))
      return Range{nullptr, *c, *c};
    return std::nullopt;
  case OpCode::MakeRange:
    return Range{nullptr, def->intAttr("start"), def->intAttr("end") - 1};
  case OpCode::ExpandDims:
  case OpCode::Broadcast:
    return rangeOf(def->operand(0), depth + 1);
  case OpCode::AddI: {
    auto a = rangeOf(def->operand(0), depth + 1);
    auto b = rangeOf(def->operand(1), depth + 1);
    if (!a || !b || (a->base && b->base))
      return std::nullopt;
    // No wrap: the program's own i32 sum must not wrap for the bound to
    // hold; ranges of a few thousand around a base keep far from it, and
    // an add of two wide constant ranges is refused.
    if (std::abs(a->lo) > (1 << 20) || std::abs(a->hi) > (1 << 20) ||
        std::abs(b->lo) > (1 << 20) || std::abs(b->hi) > (1 << 20))
      return std::nullopt;
    return Range{a->base ? a->base : b->base, a->lo + b->lo, a->hi + b->hi};
  }
  default:
    return std::nullopt;
  }
}

/// An atom: every element true exactly when iv < base + c.
struct Atom {
  Operation *cmp;
  Value *base; // defined before the loop, or null
  int64_t c;
};

std::optional<Atom> atomOf(Operation *cmp, Operation *loop) {
  if (cmp->code() != OpCode::CmpI || !cmp->result(0)->type()->isTensor())
    return std::nullopt;
  std::string pred = cmp->strAttr("predicate");
  Value *x = cmp->operand(0), *y = cmp->operand(1);
  // Normalise to V < I or V <= I.
  bool le;
  Value *vv, *ii;
  if (pred == "slt" || pred == "sle") {
    vv = x, ii = y, le = pred == "sle";
  } else if (pred == "sgt" || pred == "sge") {
    vv = y, ii = x, le = pred == "sge";
  } else {
    return std::nullopt;
  }
  Value *iv = loop->region(0).front().argument(0);
  auto v = rangeOf(vv), i = rangeOf(ii);
  if (!v || !i || v->base != iv || i->base == iv)
    return std::nullopt;
  if (i->base && isDefinedInside(i->base, loop))
    return std::nullopt;
  // iv + v.hi < i.base + i.lo   (or <=)
  return Atom{cmp, i->base, i->lo - v->hi + (le ? 1 : 0)};
}

/// The atoms a condition is made of; nullopt when some part is not one.
bool collectAtoms(Value *cond, Operation *loop, std::vector<Atom> &out,
                  int depth = 0) {
  Operation *def = cond->definingOp();
  if (!def || depth > 16 || !isDefinedInside(cond, loop))
    return false;
  switch (def->code()) {
  case OpCode::AndI:
    return collectAtoms(def->operand(0), loop, out, depth + 1) &&
           collectAtoms(def->operand(1), loop, out, depth + 1);
  case OpCode::ExpandDims:
  case OpCode::Broadcast:
    return collectAtoms(def->operand(0), loop, out, depth + 1);
  default:
    if (auto a = atomOf(def, loop)) {
      out.push_back(*a);
      return true;
    }
    return false;
  }
}

bool hasDot(Operation *loop) {
  bool found = false;
  loop->walk([&](Operation *op) { found |= op->code() == OpCode::Dot; });
  return found;
}

struct At {
  Block *block;
  Block::iterator pos;
  Location loc;
  Value *op(OpCode code, std::vector<Value *> in, const Type *type,
            std::map<std::string, Attribute> attrs = {}) {
    return block
        ->insert(pos, Operation::create(code, std::move(in), {type},
                                        std::move(attrs), loc))
        ->result(0);
  }
  Value *i64(int64_t v) {
    return op(OpCode::Constant, {}, Type::scalar(DType::I64), {{"value", v}});
  }
};

constexpr int64_t kMaxCarriedPerThread = 96;

/// Elements a thread holds of the loop's carried values (tensors spread
/// over the program's threads; a scalar is one).
int64_t carriedPerThread(Operation *loop, int64_t threads) {
  int64_t n = 0;
  for (Value *r : loop->results())
    n += r->type()->isTensor() ? (r->type()->numElements() + threads - 1) / threads : 1;
  return n;
}

/// Splits `loop` if it qualifies; true when it did.
bool splitLoop(Operation *loop, int64_t threads) {
  const Type *ivType = loop->operand(0)->type();
  if (!ivType->isScalar() || ivType->dtype() != DType::I32 || !hasDot(loop))
    return false;
  if (carriedPerThread(loop, threads) > kMaxCarriedPerThread)
    return false;
  auto step = intConstantOf(loop->operand(2));
  if (!step || *step <= 0)
    return false;
  Block &body = loop->region(0).front();
  // The atoms of the selects' conditions, and every atom of the body.
  std::vector<Atom> chosen, all;
  for (auto &opPtr : body.ops()) {
    Operation *op = opPtr.get();
    if (auto a = atomOf(op, loop))
      all.push_back(*a);
    if (op->code() != OpCode::Select || !op->operand(0)->type()->isTensor())
      continue;
    std::vector<Atom> atoms;
    if (collectAtoms(op->operand(0), loop, atoms))
      chosen.insert(chosen.end(), atoms.begin(), atoms.end());
  }
  if (chosen.empty())
    return false;

  // T = min over the chosen thresholds, the split point, in i64.
  Block *outer = loop->parentBlock();
  At at{outer, outer->find(loop), loop->loc()};
  const Type *i64 = Type::scalar(DType::I64);
  auto wide = [&](Value *v) { return at.op(OpCode::ExtSI, {v}, i64); };
  Value *t = nullptr;
  std::map<std::pair<Value *, int64_t>, bool> seen;
  for (const Atom &a : chosen) {
    if (!seen.emplace(std::make_pair(a.base, a.c), true).second)
      continue;
    Value *ta = a.base ? at.op(OpCode::AddI, {wide(a.base), at.i64(a.c)}, i64)
                       : at.i64(a.c);
    t = t ? at.op(OpCode::MinSI, {t, ta}, i64) : ta;
  }
  Value *lb = wide(loop->operand(0)), *ub = wide(loop->operand(1));
  Value *s = at.i64(*step);
  // n1 = max(0, T - lb + step - 1) / step: the iterations below T.
  Value *span = at.op(OpCode::SubI, {t, lb}, i64);
  Value *up = at.op(OpCode::AddI, {span, at.i64(*step - 1)}, i64);
  Value *n1 = at.op(OpCode::DivSI, {at.op(OpCode::MaxSI, {up, at.i64(0)}, i64), s}, i64);
  Value *split = at.op(OpCode::AddI, {lb, at.op(OpCode::MulI, {n1, s}, i64)}, i64);
  split = at.op(OpCode::MinSI, {split, ub}, i64);
  split = at.op(OpCode::TruncI, {split}, ivType);
  split->nameHint = "split";

  // Loop 1: a clone over lb .. split with the atoms true.
  std::map<Value *, Value *> map;
  Operation *first = outer->insert(outer->find(loop), loop->clone(map));
  first->operands()[1] = split;
  ValueReplacer trueAtoms;
  Block &body1 = first->region(0).front();
  for (const Atom &a : all) {
    bool implied = false;
    for (const Atom &c : chosen)
      implied |= a.base == c.base && a.c >= c.c;
    if (!implied)
      continue;
    Value *r = map.at(a.cmp->result(0));
    Operation *cmp1 = r->definingOp();
    Value *one = body1
                     .insert(body1.find(cmp1),
                             Operation::create(OpCode::Constant, {}, {r->type()},
                                               {{"value", true}}, cmp1->loc()))
                     ->result(0);
    trueAtoms.replace(r, one);
  }
  walkOps(first->region(0), [&](Operation *op) { trueAtoms.remapOperands(op); });
  // Loop 2: the loop as it was, from split on, from loop 1's values.
  loop->operands()[0] = split;
  for (unsigned k = 0; k < first->numResults(); ++k)
    loop->operands()[3 + k] = first->result(k);
  return true;
}

} // namespace

void splitMaskedLoops(Module &m, const PipelineOptions &opts, PassStats &stats) {
  for (auto &f : m.functions()) {
    int64_t warps = opts.numWarps;
    auto it = f->attrs().find("num_warps");
    if (it != f->attrs().end())
      if (const int64_t *n = std::get_if<int64_t>(&it->second))
        warps = *n;
    std::vector<Operation *> loops;
    f->walk([&](Operation *op) {
      if (op->code() == OpCode::For)
        loops.push_back(op);
    });
    int64_t split = 0;
    for (Operation *loop : loops)
      split += splitLoop(loop, warps * 32);
    if (split) {
      eraseDeadPureOps(*f);
      stats.add("split-masked-loops.split", split);
    }
  }
}

} // namespace tritium
