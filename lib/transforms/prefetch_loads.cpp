// --prefetch-loads: a row loop's loads issued one iteration ahead, in
// registers.
//
// Why: a loop like Liger's PolyNorm backward (one program per SM, a loop over
// its rows; each row loads dY and X, sums four products across the program,
// stores dX) waits for every row's loads in full. Its sums synchronize the
// program (bar.sync), and ptxas moves no load across a barrier, so nothing
// overlaps that wait. Loading row i+1 while row i is summed hides it. On the
// H200 the hand-written form of this (the same kernel source with dY and X
// carried one row ahead) ran the fp32 backward in 57.4 us against 88.2, and
// Triton's 81.5 for Liger's own source.
//
// What it does, per innermost scf.for whose body reduces (tt.reduce,
// tt.reduce_combine or tt.scan: the loops whose loads nothing else hides),
// has no tt.dot, a step that is positive where it is a constant, and no side
// effect but tt.store:
//   %v = tt.load %p(iv)[, %m(iv)[, %o]]        (directly in the body)
// becomes
//   %v0 = tt.load %p(lb), %m(lb) & (lb < ub)   -- before the loop
//   scf.for ... iter_args(..., %v = %v0) {
//     %n = tt.load %p(iv+step), %m(iv+step) & (iv+step < ub)
//     ... uses of %v ...
//     scf.yield ..., %n
//   }
// where p, m, o are computed by pure, regionless, speculatable body ops from
// the induction variable and values defined outside the loop (the "slice",
// cloned for lb and for iv+step). An iteration that does not run loads
// nothing (its lanes are masked off), so no address is touched that the
// loop would not touch. A volatile load stays.
//
// The slice may also read an integer or pointer iter arg that the body
// advances by pure ops of the induction variable, the arg itself and values
// from outside (`ptrs += stride`, `curr_m += BLOCK_M`, the form of Triton's
// attention tutorial): iteration lb reads its init, iteration i+1 the advance
// cloned at the top of the body from iteration i's value.
//
// Loops with a dot: the GPU compile runs the pass a second time, on the GPU
// IR after the layout passes and the pipeliner, and there it takes only loops
// with a tt.dot (or ttng.warp_group_dot): the attention backward's dK/dV
// loop loads the rows' statistics (M, Delta: vectors broadcast onto the
// dot's result) in every iteration, and each iteration's exp2 waited for
// them (ptxas issued them under the first wgmma, which is short). Where the
// loop is pipelined (num_stages > 1) the pipeliner has already staged those
// vectors through shared memory, a stage ahead as Triton copies them, and
// its async copies keep this pass away (see qualifies). Otherwise (one
// stage, a loop that stores), one iteration ahead in registers, in the
// slice layout their users read (in the tile IR they would be carried in a
// default layout and converted through shared memory every iteration). Only
// vectors and scalars that feed no dot operand: tiles are the GPU
// pipeliner's, or would add their registers to the accumulators'.
//
// Stores: the load of iteration i+1 now comes before the stores of
// iteration i. That is only allowed when no such store can write what it
// reads, which the pass cannot see at compile time (a kernel may be called
// in place, dX and dY one tensor). So where the body stores, the loop is
// versioned on a check computed before it:
//   scf.if %disjoint { prefetching loop } else { the loop as written }
// %disjoint: for every store and every prefetched load, either the address
// ranges they can touch over the whole loop do not overlap, or both move by
// the same bytes an iteration and the load of iteration i+1 misses the store
// it now precedes (rows a stride apart, e.g. Liger's rms_norm backward, which
// writes dX over dY): the store of iteration i when the store comes after the
// load in the body, the store of iteration i+1 when it comes before. Ranges
// come from interval arithmetic on the pointer's slice, affine in the
// induction variable (coef * iv + [lo, hi]; make_range, splat, broadcast,
// expand_dims, reshape, trans, extsi/extui, addi, subi, muli, addptr; a
// product of two iv-dependent values is ranged over all iterations; values
// defined outside the loop are points; masks are ignored, which only widens
// a range). Any narrower-than-64-bit op whose range leaves its type makes the
// check fail (the program's own arithmetic might wrap there); 64-bit
// arithmetic is assumed not to wrap. A store or load whose slice the
// arithmetic does not cover leaves the loop alone.
//
// Registers: each prefetched value lives across the loop. Loads are taken in
// body order while their bytes per thread (elements x bytes / threads) add up
// to at most kMaxBytesPerThread, and to at most an eighth of the registers a
// thread has when the program's threads fill the SM's 64K registers: at 1024
// threads a thread has 64, and Liger's cross-entropy forward (1024 threads,
// 32 fp32 a thread ahead) ran 11 % slower with them prefetched. What lives
// across the loop (carried tensors, tensors read from outside it) plus the
// prefetched values stay within half of a thread's registers. In a loop
// with a dot a vector counts a quarter of its bytes a thread (an mma tile's
// columns: each thread holds N/4 of them).
//
// The GPU compile runs it before convert-to-gpu and again after the layout
// passes (lib/target/nvidia/pipeline.cpp): the register budget needs
// num_warps, and the CPU executor has no latency to hide. Counters: prefetch-loads.loops, prefetch-loads.loads, prefetch-loads.versioned.
#include "tritium/transforms/fold.h"
#include "tritium/transforms/passes.h"
#include "tritium/transforms/rewrite.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

namespace tritium {
namespace {

constexpr int64_t kMaxBytesPerThread = 128;

const Type *i64Type() { return Type::scalar(DType::I64); }
const Type *i1Type() { return Type::scalar(DType::I1); }

int64_t elementBytes(const Type *t) {
  const Type *s = t->scalarType();
  if (s->isPointer())
    return 8;
  return std::max(1, bitWidth(s->dtype()) / 8);
}

// Inserts ops before a fixed position of a block.
struct Emitter {
  Block *block;
  Block::iterator pos;
  Location loc;

  Value *op(OpCode c, std::vector<Value *> ins, const Type *t,
            std::map<std::string, Attribute> attrs = {}) {
    auto o = Operation::create(c, std::move(ins), {t}, std::move(attrs), loc);
    return block->insert(pos, std::move(o))->result(0);
  }
  Value *i64(int64_t n) {
    return insertConstant(*block, pos, i64Type(),
                          ConstValue::ofInt(DType::I64, (uint64_t)n), loc);
  }
  Value *cmp(const char *pred, Value *a, Value *b) {
    return op(OpCode::CmpI, {a, b}, i1Type(), {{"predicate", std::string(pred)}});
  }
  Value *andI(Value *a, Value *b) {
    if (!a)
      return b;
    return op(OpCode::AndI, {a, b}, a->type());
  }
  // A scalar integer or pointer as i64 (its value, by its signedness).
  Value *toI64(Value *v) {
    const Type *t = v->type();
    if (t->isPointer())
      return op(OpCode::PtrToInt, {v}, i64Type());
    if (t->dtype() == DType::I64 || t->dtype() == DType::U64)
      return v;
    return op(isSigned(t->dtype()) ? OpCode::ExtSI : OpCode::ExtUI, {v},
              i64Type());
  }
};

// A value's range as an affine function of the induction variable:
// coef * iv + [lo, hi] for every element (coef null: 0). i64 scalars.
struct Affine {
  Value *coef = nullptr;
  Value *lo = nullptr, *hi = nullptr;
};

struct Interval {
  Value *lo, *hi; // i64 scalars
};

// Interval arithmetic over a pointer's or offset's computation, emitted as
// scalar ops before the loop, affine in the induction variable where the
// computation is (so that two rows a stride apart are told apart).
// `ok` collects the range checks of narrow ops.
class RangeBuilder {
public:
  RangeBuilder(Emitter &e, Operation *loop) : e_(e), loop_(loop) {
    Block &body = loop->region(0).front();
    iv_ = body.argument(0);
    lb_ = e_.toI64(loop->operand(0));
    Value *ub = e_.toI64(loop->operand(1));
    last_ = e_.op(OpCode::SubI, {ub, e_.i64(1)}, i64Type());
  }

  std::optional<Affine> of(Value *v) {
    auto it = memo_.find(v);
    if (it != memo_.end())
      return it->second;
    auto r = compute(v);
    memo_[v] = r;
    return r;
  }

  // The range over every iteration: iv in [lb, ub - 1].
  Interval fold(const Affine &a) {
    if (!a.coef)
      return {a.lo, a.hi};
    Value *e1 = mul(a.coef, lb_), *e2 = mul(a.coef, last_);
    return {add(a.lo, e_.op(OpCode::MinSI, {e1, e2}, i64Type())),
            add(a.hi, e_.op(OpCode::MaxSI, {e1, e2}, i64Type()))};
  }

  Value *coefOrZero(const Affine &a) { return a.coef ? a.coef : e_.i64(0); }
  Value *add(Value *a, Value *b) { return e_.op(OpCode::AddI, {a, b}, i64Type()); }
  Value *sub(Value *a, Value *b) { return e_.op(OpCode::SubI, {a, b}, i64Type()); }
  Value *mul(Value *a, Value *b) { return e_.op(OpCode::MulI, {a, b}, i64Type()); }

  Value *ok() const { return ok_; }

private:
  std::optional<Affine> point(Value *v) {
    const Type *t = v->type();
    if (t->isTensor())
      return std::nullopt;
    if (!t->isPointer() && !isInteger(t->dtype()))
      return std::nullopt;
    Value *x = e_.toI64(v);
    return Affine{nullptr, x, x};
  }

  // Checks that the value's range fits `t`'s integer type (narrower than 64
  // bits).
  void checkFits(const Affine &a, const Type *t) {
    DType d = t->scalarType()->isPointer() ? DType::I64 : t->scalarType()->dtype();
    int w = bitWidth(d);
    if (w >= 64)
      return;
    Interval r = fold(a);
    int64_t lo = isSigned(d) ? -(int64_t(1) << (w - 1)) : 0;
    int64_t hi = isSigned(d) ? (int64_t(1) << (w - 1)) - 1 : (int64_t(1) << w) - 1;
    ok_ = e_.andI(ok_, e_.cmp("sge", r.lo, e_.i64(lo)));
    ok_ = e_.andI(ok_, e_.cmp("sle", r.hi, e_.i64(hi)));
  }

  Value *addCoef(Value *a, Value *b, bool subtract) {
    if (!a && !b)
      return nullptr;
    if (!b)
      return a;
    if (!a)
      return subtract ? sub(e_.i64(0), b) : b;
    return subtract ? sub(a, b) : add(a, b);
  }

  // [lo, hi] * p for a point p of either sign.
  Affine scale(const Affine &a, Value *p) {
    Value *x = mul(a.lo, p), *y = mul(a.hi, p);
    return {a.coef ? mul(a.coef, p) : nullptr, e_.op(OpCode::MinSI, {x, y}, i64Type()),
            e_.op(OpCode::MaxSI, {x, y}, i64Type())};
  }

  std::optional<Affine> compute(Value *v) {
    if (v == iv_) {
      Value *z = e_.i64(0);
      return Affine{e_.i64(1), z, z};
    }
    if (!isDefinedInside(v, loop_)) {
      if (!v->type()->isTensor())
        return point(v);
      if (v->isBlockArg())
        return std::nullopt;
    } else if (v->isBlockArg()) {
      return std::nullopt; // an iter arg: not a function of the iv
    }
    Operation *d = v->definingOp();
    switch (d->code()) {
    case OpCode::Constant: {
      auto c = getConstant(v);
      if (!c || c->isFloat())
        return std::nullopt;
      Value *x = e_.i64(c->asInt());
      return Affine{nullptr, x, x};
    }
    case OpCode::MakeRange: {
      Value *lo = e_.i64(d->intAttr("start"));
      Value *hi = e_.i64(d->intAttr("end") - 1);
      return Affine{nullptr, lo, hi};
    }
    case OpCode::Splat:
    case OpCode::Broadcast:
    case OpCode::ExpandDims:
    case OpCode::Reshape:
    case OpCode::Trans:
    case OpCode::ConvertLayout:
      return of(d->operand(0));
    case OpCode::ExtSI:
    case OpCode::ExtUI: {
      DType src = d->operand(0)->type()->scalarType()->dtype();
      if ((d->code() == OpCode::ExtSI) != isSigned(src))
        return std::nullopt;
      return of(d->operand(0));
    }
    case OpCode::AddI:
    case OpCode::SubI:
    case OpCode::MulI: {
      auto a = of(d->operand(0));
      auto b = of(d->operand(1));
      if (!a || !b)
        return std::nullopt;
      Affine r;
      if (d->code() == OpCode::AddI) {
        r = {addCoef(a->coef, b->coef, false), add(a->lo, b->lo), add(a->hi, b->hi)};
      } else if (d->code() == OpCode::SubI) {
        r = {addCoef(a->coef, b->coef, true), sub(a->lo, b->hi), sub(a->hi, b->lo)};
      } else if (!b->coef && b->lo == b->hi) {
        r = scale(*a, b->lo); // e.g. iv * stride
      } else if (!a->coef && a->lo == a->hi) {
        r = scale(*b, a->lo);
      } else {
        // Not affine in the iv: the product of the whole ranges.
        Interval x = fold(*a), y = fold(*b);
        Value *p[4] = {mul(x.lo, y.lo), mul(x.lo, y.hi), mul(x.hi, y.lo), mul(x.hi, y.hi)};
        Value *lo = p[0], *hi = p[0];
        for (int k = 1; k < 4; ++k) {
          lo = e_.op(OpCode::MinSI, {lo, p[k]}, i64Type());
          hi = e_.op(OpCode::MaxSI, {hi, p[k]}, i64Type());
        }
        r = {nullptr, lo, hi};
      }
      checkFits(r, v->type());
      return r;
    }
    case OpCode::AddPtr: {
      auto p = of(d->operand(0));
      auto o = of(d->operand(1));
      if (!p || !o)
        return std::nullopt;
      Value *size = e_.i64(elementBytes(d->operand(0)->type()->scalarType()->pointee()));
      Affine so = scale(*o, size); // size > 0: the order stays
      return Affine{addCoef(p->coef, so.coef, false), add(p->lo, so.lo), add(p->hi, so.hi)};
    }
    default:
      return std::nullopt;
    }
  }

  Emitter &e_;
  Operation *loop_;
  Value *iv_;
  Value *lb_, *last_;
  Value *ok_ = nullptr;
  std::map<Value *, std::optional<Affine>> memo_;
};

// The body ops computing `v` from the iv, the iter args in `args` and values
// defined outside the loop, in program order; false when `v` depends on
// anything else.
bool collectSlice(Value *v, Operation *loop, Block &body, const std::set<Value *> &args,
                  std::set<Operation *> &seen, std::vector<Operation *> &out) {
  if (!isDefinedInside(v, loop))
    return true;
  if (v->isBlockArg())
    return v == body.argument(0) || args.count(v);
  Operation *d = v->definingOp();
  if (seen.count(d))
    return true;
  if (d->parentBlock() != &body || !d->hasTrait(PURE) || d->numRegions() != 0 ||
      !isSpeculatable(d))
    return false;
  for (Value *o : d->operands())
    if (!collectSlice(o, loop, body, args, seen, out))
      return false;
  seen.insert(d);
  out.push_back(d);
  return true;
}

// An iter arg whose next value the body computes from the iv, the arg itself
// and values defined outside (`curr_m += BLOCK_M`, `ptrs += step`): its value
// at iteration i+1 is that computation (`update`, program order) evaluated at
// iteration i, so a load whose address reads the arg can still be computed
// one iteration ahead.
struct Advance {
  Value *init;                     // the loop operand the arg starts from
  Value *next;                     // what the body yields for it
  std::vector<Operation *> update; // computing `next`, program order
};

std::map<Value *, Advance> advancingArgs(Operation *loop) {
  Block &body = loop->region(0).front();
  Operation *yield = body.terminator();
  std::map<Value *, Advance> out;
  for (unsigned k = 0; k + 1 < body.numArguments(); ++k) {
    Value *arg = body.argument(k + 1);
    const Type *e = arg->type()->scalarType();
    if (!e->isPointer() && !isInteger(e->dtype()))
      continue; // indices and pointers advance; a float is an accumulator
    Advance a{loop->operand(3 + k), yield->operand(k), {}};
    std::set<Operation *> seen;
    if (collectSlice(yield->operand(k), loop, body, {arg}, seen, a.update))
      out.emplace(arg, std::move(a));
  }
  return out;
}

struct Candidate {
  Operation *load;
  std::vector<Operation *> slice; // program order
  std::set<Value *> args;         // the advancing iter args it reads
};

int numWarpsOf(Function &f, const PipelineOptions &opts) {
  auto it = f.attrs().find("num_warps");
  if (it != f.attrs().end())
    if (auto *n = std::get_if<int64_t>(&it->second))
      return (int)*n;
  return opts.numWarps;
}

// Whether the loop qualifies (see the top of the file); collects its stores
// and says whether it has a tt.dot.
bool qualifies(Operation *loop, std::vector<Operation *> &stores, bool &hasDot) {
  if (loop->hasAttr("prefetched"))
    return false; // the tile-level run's loop, seen again in the GPU IR
  if (loop->hasAttr("unroll"))
    return false;
  Block &body = loop->region(0).front();
  const Type *ivType = body.argument(0)->type();
  if (!ivType->isScalar() || !isSigned(ivType->dtype()))
    return false;
  // A runtime step (a grid-stride loop's tl.num_programs) is taken as it
  // is: iteration i+1 runs when iv + step < ub, whatever the step.
  auto step = getConstant(loop->operand(2));
  if (step && step->asInt() <= 0)
    return false;
  bool reduces = false, ok = true;
  hasDot = false;
  for (auto &op : body.ops())
    op->walk([&](Operation *o) {
      switch (o->code()) {
      case OpCode::For:
      case OpCode::While:
      case OpCode::Call:
        ok = false;
        return;
      case OpCode::Dot:
      case OpCode::WarpGroupDot:
        hasDot = true;
        return;
      case OpCode::Reduce:
      case OpCode::ReduceCombine:
      case OpCode::Scan:
        reduces = true;
        return;
      case OpCode::Store:
        stores.push_back(o);
        return;
      case OpCode::LocalAlloc: // a dot operand's shared copy (GPU IR)
        return;
      default:
        if (o->hasTrait(WRITE))
          ok = false; // atomics, prints, asserts, barriers, side-effecting asm
        return;
      }
    });
  return ok && (reduces || hasDot);
}

// Whether `v` reaches a tt.dot operand through ops that only reshape or
// convert it (the GPU pipeliner's loads: copied into shared memory there).
bool feedsDot(Value *v, Function &f) {
  bool found = false;
  f.walk([&](Operation *o) {
    if (found)
      return;
    for (unsigned i = 0; i < o->numOperands(); ++i) {
      if (o->operand(i) != v)
        continue;
      switch (o->code()) {
      case OpCode::Dot:
      case OpCode::WarpGroupDot:
        found = found || i < 2;
        break;
      case OpCode::LocalAlloc:
      case OpCode::LocalLoad:
      case OpCode::Trans:
      case OpCode::Reshape:
      case OpCode::ExpandDims:
      case OpCode::Broadcast:
      case OpCode::ConvertLayout:
      case OpCode::ExtF:
      case OpCode::TruncF:
      case OpCode::Bitcast:
        found = found || feedsDot(o->result(0), f);
        break;
      default:
        break;
      }
    }
  });
  return found;
}

// Bytes a thread holds of a prefetched value. In a loop with a dot the
// vector usually meets an mma tile (`m[None, :]` on the accumulator), whose
// layout gives a thread a quarter of the columns, not numel / threads.
int64_t bytesPerThread(const Type *t, int64_t threads, bool dotLoop) {
  if (!t->isTensor())
    return elementBytes(t);
  int64_t total = t->numElements() * elementBytes(t);
  return std::max<int64_t>(1, dotLoop ? std::max(total / threads, total / 4) : total / threads);
}

// The loop's loads that go ahead; `advancing` receives its advancing iter
// args (advancingArgs), which prefetch() reads.
std::vector<Candidate> candidatesOf(Function &f, Operation *loop, int numWarps, bool dotLoop,
                                    std::map<Value *, Advance> &advancing) {
  Block &body = loop->region(0).front();
  std::vector<Candidate> out;
  int64_t bytes = 0;
  const int64_t threads = 32 * int64_t(numWarps);
  int64_t budget = std::min<int64_t>(kMaxBytesPerThread, 65536 / threads * 4 / 8);
  // What lives across the whole loop (its carried tensors, e.g. accumulators,
  // and the tensors it reads from outside, e.g. a weight row) and the
  // prefetched values stay within half of a thread's registers. At head dim
  // 128 with 128-row blocks the attention backward's dK and dV take 128 of
  // them and 32 more made ptxas spill; the layer-norm example's backward at
  // 8192 columns on 8 warps (two carried rows of sums and the weight row, 96
  // registers) spilled 320 bytes with its two rows prefetched.
  int64_t held = 0;
  for (unsigned k = 1; k < body.numArguments(); ++k) {
    const Type *t = body.argument(k)->type();
    if (t->isTensor())
      held += t->numElements() * elementBytes(t) / threads;
  }
  std::set<Value *> liveIn;
  for (auto &op : body.ops())
    op->walk([&](Operation *o) {
      for (Value *v : o->operands())
        if (v->type()->isTensor() && !isDefinedInside(v, loop) && liveIn.insert(v).second)
          held += v->type()->numElements() * elementBytes(v->type()) / threads;
    });
  int64_t regs = std::min<int64_t>(255, 65536 / threads);
  budget = std::min(budget, regs * 4 / 2 - held);
  advancing = advancingArgs(loop);
  std::set<Value *> args;
  for (auto &kv : advancing)
    args.insert(kv.first);
  for (auto &opp : body.ops()) {
    Operation *op = opp.get();
    if (op->code() != OpCode::Load)
      continue;
    if (op->hasAttr("volatile") && op->boolAttr("volatile"))
      continue;
    const Type *t = op->result()->type();
    // In a loop with a dot, the tiles feeding it are the GPU pipeliner's
    // (cp.async, num_stages ahead); a tile for anything else is left alone
    // too (its registers would join the accumulators'). Vectors and scalars
    // (a row's statistics, a scale) go ahead in registers.
    if (dotLoop && ((t->isTensor() && t->rank() > 1) || feedsDot(op->result(), f)))
      continue;
    int64_t b = bytesPerThread(t, threads, dotLoop);
    if (bytes + b > budget)
      continue;
    Candidate c{op, {}, {}};
    std::set<Operation *> seen;
    bool ok = true;
    for (Value *v : op->operands())
      ok = ok && collectSlice(v, loop, body, args, seen, c.slice);
    if (!ok)
      continue;
    for (Value *v : op->operands())
      if (args.count(v))
        c.args.insert(v);
    for (Operation *s : c.slice)
      for (Value *v : s->operands())
        if (args.count(v))
          c.args.insert(v);
    bytes += b;
    out.push_back(std::move(c));
  }
  return out;
}

// Clones `c`'s slice and load before `pos` with the iv and iter args
// replaced as `base` says, the mask and-ed with `inRange` (a scalar i1);
// returns the new load's result.
Value *cloneLoad(const Candidate &c, const std::map<Value *, Value *> &base, Value *inRange,
                 Block &block, Block::iterator pos) {
  std::map<Value *, Value *> map = base;
  for (Operation *s : c.slice)
    block.insert(pos, s->clone(map));
  Operation *ld = c.load;
  Emitter e{&block, pos, ld->loc()};
  const Type *ptrType = ld->operand(0)->type();
  Value *cond = inRange;
  if (ptrType->isTensor())
    cond = e.op(OpCode::Splat, {inRange}, ptrType->withElement(i1Type()));
  Value *mask = cond;
  if (ld->numOperands() > 1) {
    Value *m = ld->operand(1);
    auto it = map.find(m);
    mask = e.op(OpCode::AndI, {it == map.end() ? m : it->second, cond},
                cond->type());
  }
  std::vector<Value *> ins{map.count(ld->operand(0)) ? map[ld->operand(0)]
                                                     : ld->operand(0),
                           mask};
  if (ld->numOperands() > 2) {
    Value *o = ld->operand(2);
    ins.push_back(map.count(o) ? map[o] : o);
  }
  auto nl = Operation::create(OpCode::Load, ins, {ld->result()->type()},
                              ld->attrs(), ld->loc());
  nl->result()->nameHint = ld->result()->nameHint;
  return block.insert(pos, std::move(nl))->result(0);
}

// iv + step < ub, without the wrap of a narrow iv.
Value *inRangeAfter(Emitter &e, Value *iv, Value *step, Value *ub) {
  DType d = iv->type()->dtype();
  if (bitWidth(d) < 64) {
    Value *next = e.op(OpCode::AddI, {e.toI64(iv), e.toI64(step)}, i64Type());
    return e.cmp("slt", next, e.toI64(ub));
  }
  Value *next = e.op(OpCode::AddI, {iv, step}, iv->type());
  return e.cmp("slt", next, ub);
}

// Rewrites `loop` (which qualifies) to carry `cands` one iteration ahead.
void prefetch(Function &f, Operation *loop, const std::vector<Candidate> &cands,
              const std::map<Value *, Advance> &advancing) {
  Block &outer = *loop->parentBlock();
  Block &body = loop->region(0).front();
  Value *iv = body.argument(0);
  Value *lb = loop->operand(0), *ub = loop->operand(1), *step = loop->operand(2);
  Emitter pre{&outer, outer.find(loop), loop->loc()};
  Value *runs = pre.cmp("slt", lb, ub);
  Emitter top{&body, body.ops().begin(), loop->loc()};
  Value *next = top.op(OpCode::AddI, {iv, step}, iv->type());
  Value *nextInRange = inRangeAfter(top, iv, step, ub);
  // Iteration lb reads the iter args' inits; iteration i+1 their updates
  // computed from iteration i's values (cloned at the top of the body).
  std::map<Value *, Value *> first{{iv, lb}}, ahead{{iv, next}};
  std::set<Value *> used;
  for (const Candidate &c : cands)
    used.insert(c.args.begin(), c.args.end());
  for (Value *a : used) {
    const Advance &adv = advancing.at(a);
    std::map<Value *, Value *> map;
    for (Operation *s : adv.update)
      body.insert(top.pos, s->clone(map));
    first[a] = adv.init;
    ahead[a] = map.count(adv.next) ? map[adv.next] : adv.next;
  }
  Operation *yield = body.terminator();
  for (const Candidate &c : cands) {
    Value *firstVal = cloneLoad(c, first, runs, outer, outer.find(loop));
    loop->operands().push_back(firstVal);
    Value *carried = body.addArgument(c.load->result()->type());
    carried->nameHint = c.load->result()->nameHint;
    Value *aheadVal = cloneLoad(c, ahead, nextInRange, body, body.find(c.load));
    replaceAllUsesIn(loop->region(0), c.load->result(), carried);
    yield->operands().push_back(aheadVal);
    loop->addResult(c.load->result()->type());
    c.load->erase();
  }
  // The original slices, now read by nothing (last op first, so that an
  // op's users go before it).
  std::set<Operation *> sliceOps;
  for (const Candidate &c : cands)
    sliceOps.insert(c.slice.begin(), c.slice.end());
  std::vector<Operation *> order;
  for (auto &op : body.ops())
    if (sliceOps.count(op.get()))
      order.push_back(op.get());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    bool used = false;
    for (Value *r : (*it)->results())
      used = used || hasUses(f, r);
    if (!used)
      (*it)->erase();
  }
  loop->setAttr("prefetched", int64_t(cands.size()));
}

struct Counts {
  int64_t loops = 0, loads = 0, versioned = 0;
};

// Whether `f` is GPU IR: its tensors have layouts.
bool laidOut(Function &f) {
  bool found = false;
  f.walk([&](Operation *o) {
    for (Value *r : o->results())
      found = found || (r->type()->isTensor() && r->type()->layout());
  });
  return found;
}

void visitLoop(Function &f, Operation *loop, int numWarps, bool gpuIR, Counts &n) {
  std::vector<Operation *> stores;
  bool hasDot = false;
  if (!qualifies(loop, stores, hasDot))
    return;
  // Reducing loops in the tile IR; loops with a dot in the GPU IR, where the
  // vectors they load already have the layout their users read (carried in
  // a loop before layouts were chosen, the value would take a default layout
  // and be converted through shared memory every iteration).
  if (hasDot != gpuIR)
    return;
  std::map<Value *, Advance> advancing;
  auto cands = candidatesOf(f, loop, numWarps, hasDot, advancing);
  if (cands.empty())
    return;
  if (stores.empty()) {
    prefetch(f, loop, cands, advancing);
    n.loops += 1;
    n.loads += (int64_t)cands.size();
    return;
  }
  // The check, built in a scratch block and moved before the loop once
  // every range is known (a loop left alone keeps no trace of it).
  Block &outer = *loop->parentBlock();
  Block scratch;
  Emitter e{&scratch, scratch.ops().end(), loop->loc()};
  RangeBuilder ranges(e, loop);
  Block &body = loop->region(0).front();
  std::map<const Operation *, int> position;
  for (auto &op : body.ops())
    position[op.get()] = (int)position.size();
  Value *step = e.toI64(loop->operand(2));
  Value *disjoint = nullptr;
  // [aLo, aHi + aSize) and [bLo, bHi + bSize) do not overlap.
  auto apart = [&](Value *aLo, Value *aHi, int64_t aSize, Value *bLo, Value *bHi,
                   int64_t bSize) {
    Value *aEnd = ranges.add(aHi, e.i64(aSize)), *bEnd = ranges.add(bHi, e.i64(bSize));
    return e.op(OpCode::OrI, {e.cmp("sle", aEnd, bLo), e.cmp("sle", bEnd, aLo)}, i1Type());
  };
  for (Operation *s : stores) {
    auto as = ranges.of(s->operand(0));
    if (!as)
      return;
    int64_t ss = elementBytes(s->operand(0)->type()->scalarType()->pointee());
    const Operation *top = s;
    while (top->parentBlock() != &body)
      top = top->parentOp();
    for (const Candidate &c : cands) {
      auto al = ranges.of(c.load->operand(0));
      if (!al)
        return;
      int64_t ls = elementBytes(c.load->operand(0)->type()->scalarType()->pointee());
      // Apart over the whole loop...
      Interval fs = ranges.fold(*as), fl = ranges.fold(*al);
      Value *ok = apart(fs.lo, fs.hi, ss, fl.lo, fl.hi, ls);
      // ...or, both affine in the iv with one coefficient (rows a stride
      // apart, e.g. an in-place call), apart where the load moved past the
      // store: the load of iteration i+1 now precedes this store of
      // iteration i when the store comes after the load in the body, and of
      // iteration i+1 when it comes before.
      if (as->coef || al->coef) {
        Value *cs = ranges.coefOrZero(*as), *cl = ranges.coefOrZero(*al);
        Value *same = e.cmp("eq", cs, cl);
        Value *rowApart;
        if (position[top] < position[c.load]) {
          rowApart = apart(as->lo, as->hi, ss, al->lo, al->hi, ls);
        } else {
          Value *shift = ranges.mul(cl, step); // the load's bytes a step
          rowApart = apart(as->lo, as->hi, ss, ranges.add(al->lo, shift),
                           ranges.add(al->hi, shift), ls);
        }
        ok = e.op(OpCode::OrI, {ok, e.op(OpCode::AndI, {same, rowApart}, i1Type())},
                  i1Type());
      }
      disjoint = e.andI(disjoint, ok);
    }
  }
  if (Value *ok = ranges.ok())
    disjoint = e.andI(disjoint, ok);
  while (!scratch.empty())
    outer.insert(outer.find(loop), scratch.ops().front()->detach());

  // scf.if %disjoint { prefetching copy } else { the loop as written }.
  std::vector<const Type *> types;
  for (Value *r : loop->results())
    types.push_back(r->type());
  auto ifOwned = Operation::create(OpCode::If, {disjoint}, types, {}, loop->loc(), 2);
  Operation *ifOp = outer.insert(outer.find(loop), std::move(ifOwned));
  for (unsigned i = 0; i < loop->numResults(); ++i) {
    ifOp->result(i)->nameHint = loop->result(i)->nameHint;
    replaceAllUsesWith(f, loop->result(i), ifOp->result(i));
  }
  Block *thenB = ifOp->region(0).addBlock();
  Block *elseB = ifOp->region(1).addBlock();
  std::map<Value *, Value *> map;
  Operation *copy = thenB->push_back(loop->clone(map));
  Operation *orig = elseB->push_back(loop->detach());
  thenB->push_back(Operation::create(OpCode::Yield, copy->results(), {}, {}, loop->loc()));
  elseB->push_back(Operation::create(OpCode::Yield, orig->results(), {}, {}, loop->loc()));
  // The candidates, found again in the copy (same body order).
  std::map<Value *, Advance> copyAdvancing;
  auto copyCands = candidatesOf(f, copy, numWarps, hasDot, copyAdvancing);
  if (copyCands.size() != cands.size())
    throw InternalError("prefetch-loads: the copy of a loop has other candidates");
  prefetch(f, copy, copyCands, copyAdvancing);
  n.loops += 1;
  n.loads += (int64_t)cands.size();
  n.versioned += 1;
}

} // namespace

void prefetchLoads(Module &m, const PipelineOptions &opts, PassStats &stats) {
  Counts n;
  for (auto &f : m.functions()) {
    bool gpuIR = laidOut(*f);
    walkRegionOpsInnermostFirst(f->body(), [&](Operation *op) {
      if (op->code() == OpCode::For)
        visitLoop(*f, op, numWarpsOf(*f, opts), gpuIR, n);
    });
  }
  stats.add("prefetch-loads.loops", n.loops);
  stats.add("prefetch-loads.loads", n.loads);
  stats.add("prefetch-loads.versioned", n.versioned);
}

} // namespace tritium
