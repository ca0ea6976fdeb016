// --widen-offsets: 64-bit offsets for pointers into tensors of 2^31
// elements or more.
//
// Triton computes `ptr + offs` with the int32 offsets the kernel wrote, so
// `pid * BLOCK + tl.arange(...)` or `row * stride` wraps around past 2^31
// elements and the kernel reads or writes the wrong memory (a long-standing
// complaint of its users). The launcher marks a pointer argument whose
// tensor reaches 2^31 elements or more from its address with
// `tt.int64_offsets = true` (a specialisation of its own); for pointers
// derived from such an argument, this pass recomputes in 64 bits:
//  1. every i32 offset of a tt.addptr: the integer expression that produced
//     it is rebuilt in i64, from its leaves (program ids, ranges, constants,
//     scalar arguments, loop variables) sign-extended, so no intermediate
//     product or sum wraps;
//  2. the masks of the loads, stores and atomics through those pointers: an
//     i32 comparison in the mask (`offs < n`) compares the rebuilt i64
//     values, so the bounds check sees the same offsets as the address.
// Values that were in range compute the same as before; only the wrapped
// ones change, to what the kernel meant. Ops the rebuild does not go through
// (unsigned division, shifts right, bitcasts, anything else) are its leaves
// and are extended as they are. Pointers into smaller tensors, and kernels
// without such an argument, are left untouched (no 64-bit arithmetic where
// 32 bits cannot overflow the tensor). The original i32 ops, if no longer
// used, are erased by --dce. An i32 offset carried around an scf.for gets
// an i64 twin carried beside it. Counters: widen-offsets.addptrs,
// widen-offsets.masks, widen-offsets.ops, widen-offsets.iter-args.
#include "tritium/transforms/passes.h"

#include <map>
#include <set>

namespace tritium {
namespace {

bool isI1(const Type *t) { return t->scalarType()->dtype() == DType::I1; }

bool isNarrowInt(const Type *t) {
  const Type *s = t->scalarType();
  if (s->isPointer())
    return false;
  DType d = s->dtype();
  return d == DType::I32 || d == DType::I16 || d == DType::I8 ||
         d == DType::U32 || d == DType::U16 || d == DType::U8;
}

bool isUnsignedInt(const Type *t) {
  DType d = t->scalarType()->dtype();
  return d == DType::U32 || d == DType::U16 || d == DType::U8;
}

class Widener {
public:
  Widener(Function &f, PassStats &stats) : f_(f), stats_(stats) {}

  /// The pointers derived from a `tt.int64_offsets` argument: found
  /// forward, through every op whose result is a pointer computed from one
  /// (splat, broadcast, addptr, select, loop-carried values, ...), to a
  /// fixpoint.
  bool findLargePointers() {
    for (unsigned i = 0; i < f_.numArgs() && i < f_.argAttrs().size(); ++i) {
      auto &attrs = f_.argAttrs()[i];
      auto it = attrs.find("tt.int64_offsets");
      if (it != attrs.end() && std::holds_alternative<bool>(it->second) &&
          std::get<bool>(it->second))
        large_.insert(f_.arg(i));
    }
    if (large_.empty())
      return false;
    bool changed = true;
    while (changed) {
      changed = false;
      f_.walk([&](Operation *op) {
        auto mark = [&](Value *v) {
          if (v->type()->isPointerLike() && large_.insert(v).second)
            changed = true;
        };
        bool any = false;
        for (Value *o : op->operands())
          any |= large_.count(o) != 0;
        if (any)
          for (unsigned r = 0; r < op->numResults(); ++r)
            mark(op->result(r));
        // Loop-carried and branch values: a yield's operand flows into the
        // parent's results and (for loops) the body's block arguments.
        if (op->code() == OpCode::Yield || op->code() == OpCode::Condition) {
          Operation *parent = op->parentBlock()->parentOp();
          if (!parent)
            return;
          unsigned skip = op->code() == OpCode::Condition ? 1 : 0;
          for (unsigned i = skip; i < op->numOperands(); ++i) {
            if (!large_.count(op->operand(i)))
              continue;
            unsigned k = i - skip;
            if (k < parent->numResults())
              mark(parent->result(k));
            for (unsigned r = 0; r < parent->numRegions(); ++r)
              for (auto &b : parent->region(r).blocks()) {
                // scf.for's body block: the induction variable first.
                unsigned base = parent->code() == OpCode::For ? 1 : 0;
                if (base + k < b->numArguments())
                  mark(b->argument(base + k));
              }
          }
        }
        // scf.for / scf.while init values flow into the body's arguments.
        if (op->code() == OpCode::For || op->code() == OpCode::While) {
          unsigned first = op->code() == OpCode::For ? 3 : 0;
          for (unsigned i = first; i < op->numOperands(); ++i) {
            if (!large_.count(op->operand(i)))
              continue;
            unsigned k = i - first;
            for (unsigned r = 0; r < op->numRegions(); ++r)
              for (auto &b : op->region(r).blocks()) {
                unsigned base = op->code() == OpCode::For ? 1 : 0;
                if (base + k < b->numArguments())
                  mark(b->argument(base + k));
              }
          }
        }
      });
    }
    return true;
  }

  void run() {
    std::vector<Operation *> work;
    f_.walk([&](Operation *op) { work.push_back(op); });
    for (Operation *op : work) {
      switch (op->code()) {
      case OpCode::AddPtr:
        if (large_.count(op->operand(0)) && isNarrowInt(op->operand(1)->type())) {
          op->operands()[1] = widen(op->operand(1));
          stats_.add("widen-offsets.addptrs");
        }
        break;
      case OpCode::Load:
        widenMaskOperand(op, 1);
        break;
      case OpCode::Store:
      case OpCode::AtomicRMW:
        widenMaskOperand(op, 2);
        break;
      case OpCode::AtomicCAS:
        widenMaskOperand(op, 3);
        break;
      default:
        break;
      }
    }
  }

private:
  void widenMaskOperand(Operation *op, unsigned idx) {
    if (op->numOperands() <= idx || !large_.count(op->operand(0)))
      return;
    Value *m = op->operand(idx);
    if (!isI1(m->type()))
      return;
    Value *w = widenMask(m);
    if (w != m) {
      op->operands()[idx] = w;
      stats_.add("widen-offsets.masks");
    }
  }

  /// Where a value's replacement goes: right after its definition (the
  /// start of its block for a block argument), so that it dominates every
  /// use of the original.
  std::pair<Block *, Block::iterator> insertionPoint(Value *v) {
    if (v->isBlockArg()) {
      Block *b = v->ownerBlock();
      return {b, b->ops().begin()};
    }
    Operation *d = v->definingOp();
    Block *b = d->parentBlock();
    auto it = b->find(d);
    return {b, ++it};
  }

  Value *insertAfter(Value *anchor, OpCode code, std::vector<Value *> operands,
                     const Type *type, std::map<std::string, Attribute> attrs,
                     Location loc) {
    auto [b, it] = insertionPoint(anchor);
    Operation *op = b->insert(
        it, Operation::create(code, std::move(operands), {type}, std::move(attrs), loc));
    stats_.add("widen-offsets.ops");
    return op->result(0);
  }

  Location locOf(Value *v) {
    if (Operation *d = v->definingOp())
      return d->loc();
    Operation *p = v->ownerBlock()->parentOp();
    return p ? p->loc() : Location{};
  }

  /// v (an integer of at most 32 bits) as i64, rebuilt so no step wraps;
  /// an i64 extended from one, that one rebuilt; any other value itself.
  Value *widen(Value *v) {
    const Type *t = v->type();
    if (t->scalarType()->dtype() == DType::I64) {
      // An i32 value the kernel extended (`offs < n` with an i64 n, or
      // `offs.to(tl.int64)`): rebuilt from before the extension.
      Operation *d = v->definingOp();
      if (d && d->code() == OpCode::ExtSI && isNarrowInt(d->operand(0)->type()))
        return widen(d->operand(0));
      return v;
    }
    if (!isNarrowInt(t))
      return v;
    if (auto it = wide_.find(v); it != wide_.end())
      return it->second;
    const Type *wt = t->withElement(Type::scalar(DType::I64));
    Operation *d = v->definingOp();
    Value *out = nullptr;
    auto same = [&](std::vector<Value *> ops) {
      // The op again on the widened operands, placed after the latest of
      // them and the original (which follows all of its operands).
      return insertAfter(v, d->code(), std::move(ops), wt, d->attrs(), d->loc());
    };
    bool signedValue = !isUnsignedInt(t);
    if (!d && signedValue) {
      if (Value *carried = widenLoopCarried(v, wt)) {
        wide_[v] = carried;
        return carried;
      }
    }
    if (d && signedValue) {
      switch (d->code()) {
      case OpCode::Constant:
        if (std::holds_alternative<int64_t>(d->attrs().at("value")))
          out = same({});
        break;
      case OpCode::AddI:
      case OpCode::SubI:
      case OpCode::MulI:
      case OpCode::DivSI:
      case OpCode::RemSI:
      case OpCode::MaxSI:
      case OpCode::MinSI:
      case OpCode::AndI:
      case OpCode::OrI:
      case OpCode::XOrI:
      case OpCode::ShLI:
        out = same({widen(d->operand(0)), widen(d->operand(1))});
        break;
      case OpCode::Splat:
      case OpCode::Broadcast:
      case OpCode::ExpandDims:
      case OpCode::Reshape:
      case OpCode::Trans:
        out = same({widen(d->operand(0))});
        break;
      case OpCode::Select:
        out = same({d->operand(0), widen(d->operand(1)), widen(d->operand(2))});
        break;
      case OpCode::ExtSI:
        out = insertAfter(v, OpCode::ExtSI, {d->operand(0)}, wt, {}, d->loc());
        break;
      default:
        break;
      }
    }
    if (!out) // a leaf: extended as it is
      out = insertAfter(v, signedValue ? OpCode::ExtSI : OpCode::ExtUI, {v}, wt, {},
                        locOf(v));
    wide_[v] = out;
    return out;
  }

  /// An i32 value carried around an scf.for (`offs += BLOCK` in the body)
  /// gets an i64 twin carried beside it: its init and its yielded value
  /// widened, so the sum does not wrap on the way. Null for anything else
  /// (the induction variable, other block arguments: leaves).
  Value *widenLoopCarried(Value *v, const Type *wt) {
    Block *body = v->ownerBlock();
    Operation *loop = body ? body->parentOp() : nullptr;
    if (!loop || loop->code() != OpCode::For || v->index() == 0)
      return nullptr;
    Operation *yield = body->terminator();
    unsigned k = v->index() - 1; // iter_arg k: operand 3 + k, yield operand k
    if (!yield || yield->code() != OpCode::Yield || k >= yield->numOperands() ||
        3 + k >= loop->numOperands())
      return nullptr;
    Value *init = widen(loop->operand(3 + k));
    loop->operands().push_back(init);
    loop->addResult(wt);
    Value *arg = body->addArgument(wt);
    wide_[v] = arg; // before the yielded value, which may be built from v
    Value *next = widen(yield->operand(k));
    yield->operands().push_back(next);
    stats_.add("widen-offsets.iter-args");
    return arg;
  }

  /// A mask with its i32 comparisons made on widened operands.
  Value *widenMask(Value *m) {
    if (auto it = masks_.find(m); it != masks_.end())
      return it->second;
    Operation *d = m->definingOp();
    Value *out = m;
    if (d) {
      switch (d->code()) {
      case OpCode::CmpI: {
        Value *a = widen(d->operand(0)), *b = widen(d->operand(1));
        if (a != d->operand(0) || b != d->operand(1))
          out = insertAfter(m, OpCode::CmpI, {a, b}, m->type(), d->attrs(), d->loc());
        break;
      }
      case OpCode::AndI:
      case OpCode::OrI:
      case OpCode::XOrI: {
        Value *a = widenMask(d->operand(0)), *b = widenMask(d->operand(1));
        if (a != d->operand(0) || b != d->operand(1))
          out = insertAfter(m, d->code(), {a, b}, m->type(), d->attrs(), d->loc());
        break;
      }
      case OpCode::Splat:
      case OpCode::Broadcast:
      case OpCode::ExpandDims:
      case OpCode::Reshape:
      case OpCode::Trans: {
        Value *a = widenMask(d->operand(0));
        if (a != d->operand(0))
          out = insertAfter(m, d->code(), {a}, m->type(), d->attrs(), d->loc());
        break;
      }
      default:
        break;
      }
    }
    masks_[m] = out;
    return out;
  }

  Function &f_;
  PassStats &stats_;
  std::set<Value *> large_;
  std::map<Value *, Value *> wide_, masks_;
};

} // namespace

void widenOffsets(Module &m, const PipelineOptions &, PassStats &stats) {
  for (auto &fn : m.functions()) {
    Widener w(*fn, stats);
    if (w.findLargePointers())
      w.run();
  }
}

} // namespace tritium
