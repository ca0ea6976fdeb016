// --check-const-pointers: a store or atomic through a pointer made from a
// kernel argument annotated `tl.const` (arg attribute tt.const) is the
// user's mistake, reported at the store with Triton's wording.
//
// Runs after --inline, so a pointer handed to a @jit helper is the
// kernel's own value by then. A pointer's sources are followed back
// through the ops that keep its base (addptr, splat, broadcast,
// expand_dims, reshape, trans, convert_layout, pointer casts), both arms of
// arith.select (tl.where, a ternary of pointers), and control flow: an
// scf.for iter arg or result derives from its init and its yielded value,
// an scf.if result from both branches' yields. Anything else (a pointer
// loaded from memory, made from an integer) is not followed: a write there
// is not the annotation's business.
#include "tritium/transforms/passes.h"

#include <map>
#include <set>

namespace tritium {
namespace {

class ConstSources {
public:
  explicit ConstSources(Function &fn) : fn_(fn) {}

  /// The name of the tl.const argument `v` is made from, or "".
  std::string of(Value *v) {
    if (auto it = memo_.find(v); it != memo_.end())
      return it->second;
    if (!visiting_.insert(v).second)
      return ""; // a loop's cycle: the other way in decides
    std::string r = compute(v);
    visiting_.erase(v);
    memo_[v] = r;
    return r;
  }

private:
  Function &fn_;
  std::map<Value *, std::string> memo_;
  std::set<Value *> visiting_;

  std::string anyOf(std::initializer_list<Value *> vs) {
    for (Value *v : vs)
      if (v)
        if (std::string s = of(v); !s.empty())
          return s;
    return "";
  }

  static Value *yielded(Block &b, unsigned k) {
    Operation *t = b.terminator();
    return t && t->code() == OpCode::Yield && k < t->numOperands() ? t->operand(k)
                                                                  : nullptr;
  }

  std::string compute(Value *v) {
    if (!v->type()->isPointerLike())
      return "";
    if (v->isBlockArg()) {
      Block *b = v->ownerBlock();
      if (b == &fn_.entry()) {
        const auto &attrs = fn_.argAttrs();
        unsigned i = v->index();
        if (i < attrs.size())
          if (auto it = attrs[i].find("tt.const"); it != attrs[i].end())
            if (const bool *c = std::get_if<bool>(&it->second); c && *c)
              return "%arg" + std::to_string(i);
        return "";
      }
      Operation *owner = b->parentOp();
      if (owner && owner->code() == OpCode::For && v->index() > 0) {
        unsigned k = v->index() - 1; // after the induction variable
        return anyOf({owner->operand(3 + k), yielded(*b, k)});
      }
      return "";
    }
    Operation *d = v->definingOp();
    if (!d)
      return "";
    switch (d->code()) {
    case OpCode::AddPtr:
    case OpCode::Splat:
      return of(d->operand(0));
    case OpCode::Select:
      return anyOf({d->operand(1), d->operand(2)});
    case OpCode::For: {
      unsigned k = 0;
      while (d->result(k) != v)
        ++k;
      return anyOf({d->operand(3 + k),
                    yielded(d->region(0).front(), k)});
    }
    case OpCode::If: {
      unsigned k = 0;
      while (d->result(k) != v)
        ++k;
      std::string s = "";
      for (unsigned r = 0; r < d->numRegions() && s.empty(); ++r)
        if (!d->region(r).empty())
          s = anyOf({yielded(d->region(r).front(), k)});
      return s;
    }
    default:
      // The MOVE ops (broadcast, expand_dims, reshape, trans,
      // convert_layout) repeat their operand's pointers; a pointer cast
      // keeps the base, int_to_ptr does not.
      if (d->hasTrait(MOVE) ||
          (d->hasTrait(CAST) && d->code() != OpCode::IntToPtr &&
           d->numOperands() == 1 && d->operand(0)->type()->isPointerLike()))
        return of(d->operand(0));
      return "";
    }
  }
};

} // namespace

void checkConstPointers(Module &m, const PipelineOptions &, PassStats &stats) {
  for (auto &fn : m.functions()) {
    ConstSources sources(*fn);
    std::vector<Operation *> writes;
    fn->walk([&](Operation *op) {
      if (op->code() == OpCode::Store || op->code() == OpCode::AtomicRMW ||
          op->code() == OpCode::AtomicCAS)
        writes.push_back(op);
    });
    for (Operation *op : writes) {
      std::string arg = sources.of(op->operand(0));
      if (arg.empty())
        continue;
      const char *what = op->code() == OpCode::Store ? "tl.store" : "an atomic";
      throw UserError(std::string("Cannot store to a constant pointer: ") + what +
                          " writes through a pointer made from an argument "
                          "annotated tl.const",
                      op->loc());
    }
    stats.add("check-const-pointers.writes", (int64_t)writes.size());
  }
}

} // namespace tritium
