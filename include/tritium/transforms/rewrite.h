// Small rewriting utilities shared by the passes of lib/transforms/.
//
// The IR keeps no use lists, so a pass that replaces values records the
// replacements in a ValueReplacer while it walks the IR in program order
// (definitions always come before their uses in structured SSA, so each use
// is visited after its replacement is known) and applies them to every
// remaining operand at the end of the walk.
#pragma once

#include "tritium/ir/ir.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tritium {

class ValueReplacer {
public:
  /// Records that uses of `from` must use `to` instead.
  void replace(Value *from, Value *to);
  /// Follows recorded replacements from `v`.
  Value *lookup(Value *v) const;
  /// Rewrites `op`'s own operands (not those of ops in its regions).
  void remapOperands(Operation *op) const;
  /// Rewrites the operands of every op in `f`.
  void applyTo(Function &f) const;
  bool empty() const { return map_.empty(); }
  void clear() { map_.clear(); }

private:
  std::unordered_map<Value *, Value *> map_;
};

/// Visits every op of `region` (nested ones too), parents before children,
/// in program order. `fn` must not erase or move ops.
void walkOps(Region &region, const std::function<void(Operation *)> &fn);
/// Every op of `f` in that order.
std::vector<Operation *> collectOps(Function &f);

/// Number of uses of each value as an operand anywhere in `f`.
std::unordered_map<Value *, unsigned> useCounts(Function &f);

/// Erases PURE ops without regions whose results are unused (also those
/// that become unused as their users go). Returns how many were erased.
int64_t eraseDeadPureOps(Function &f);

/// Erases the ops of `f` that are in `ops`, users before definitions
/// (reverse program order), in one walk: Operation::erase searches its block,
/// which is quadratic over the thousands of ops of an unrolled loop. An op
/// nested in an erased one goes with it. Returns how many were erased.
int64_t eraseOps(Function &f, const std::unordered_set<Operation *> &ops);

/// True when `op` is nested (at any depth) in `region`.
bool isInside(const Operation *op, const Region &region);

/// Calls `fn` on every op of `region` that has regions (loops, ifs), the ops
/// nested in it first. Each block is walked from a snapshot of its ops, so
/// `fn` may insert ops into the block or move the op it is given.
void walkRegionOpsInnermostFirst(Region &region,
                                 const std::function<void(Operation *)> &fn);

/// True when `v` is defined inside `op`'s regions: a block argument of one of
/// their blocks, or a result of an op nested in them (at any depth).
bool isDefinedInside(const Value *v, const Operation *op);

/// Whether `op` may run where the program would not have run it (hoisted
/// out of a loop that may run zero times, or run for an iteration that does
/// not exist): every op but an integer division or remainder whose divisor
/// is not a constant that cannot trap (zero, or -1 for a signed one).
bool isSpeculatable(const Operation *op);

} // namespace tritium
