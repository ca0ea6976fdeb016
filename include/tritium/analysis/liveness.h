// Live ranges over structured IR, as intervals of program points.
//
// Every op of a function gets two points, in program order: `begin` before
// it and `end` after it and everything nested in its regions, so that an op
// with regions spans the ops inside it. Regions are numbered in order (the
// then region before the else region, a while's "before" region before its
// "after" region); control flow is structured, so an interval is enough:
//  - an op's own range is [begin, end] (the scratch memory an op uses while
//    it runs is live there and nowhere else);
//  - a value is live from its definition to its last use; a use inside a
//    loop (scf.for, scf.while) that does not contain the definition keeps
//    the value live to the end of that loop, since the next iteration uses
//    it again.
// The shared-memory allocation (lib/gpu/allocate_shared_memory.cpp) gives
// buffers whose ranges intersect disjoint bytes.
#pragma once

#include "tritium/ir/ir.h"

#include <map>

namespace tritium {

struct LiveRange {
  int begin = 0, end = 0; // inclusive program points
  bool overlaps(const LiveRange &o) const {
    return begin <= o.end && o.begin <= end;
  }
};

class Liveness {
public:
  explicit Liveness(Function &f);

  /// The points an op runs in, its regions included.
  LiveRange opRange(const Operation &op) const;
  /// From the definition of `v` (its op, or the start of its block for a
  /// block argument) to its last use, extended to the end of every loop
  /// that holds a use but not the definition.
  LiveRange valueRange(Value *v) const;

private:
  void number(Block &b);
  std::map<const Operation *, LiveRange> ops_;
  std::map<const Block *, LiveRange> blocks_;
  std::map<Value *, std::vector<const Operation *>> users_;
  int next_ = 0;
};

} // namespace tritium
