// Which function arguments a pointer value is made from.
//
// A pointer is followed back through the ops that keep its base (tt.addptr,
// tt.splat, tt.bitcast, the MOVE ops), both arms of arith.select, and
// control flow: an scf.for iter arg or result derives from its init and its
// yielded value, an scf.if result from every branch's yield, scf.while's
// values from their inits, the after-region's yield and the condition's
// forwarded values. Anything else (a pointer loaded from memory, made by
// tt.int_to_ptr, a region without a yield) makes the answer `unknown` too.
// Users: the bounds checks of the PTX emitter (emit_bounds.cpp: one
// parameter or none) and --check-const-pointers (any tl.const argument).
#pragma once

#include "tritium/ir/ir.h"

#include <map>
#include <set>

namespace tritium {

struct PointerSources {
  std::set<unsigned> args; // indices of the function's entry arguments
  bool unknown = false;    // some path leads somewhere else
  /// The one argument every path leads to, or -1.
  int single() const { return !unknown && args.size() == 1 ? (int)*args.begin() : -1; }
};

class PointerProvenance {
public:
  explicit PointerProvenance(Function &f) : fn_(f) {}
  PointerSources of(Value *v);

private:
  Function &fn_;
  std::set<Value *> visiting_;
  std::map<Value *, PointerSources> memo_;
  int cuts_ = 0; // cycles cut short: a result computed across one is not memoized

  PointerSources resolve(Value *v);
  PointerSources blockArgument(Value *v);
};

} // namespace tritium
