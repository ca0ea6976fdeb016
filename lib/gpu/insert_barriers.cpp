// --insert-barriers: the one place where barriers between ops are placed
// (see shared_memory.h).
//
// The threads of a CTA run an op's shared-memory accesses in no order
// relative to another thread's, so an op that writes bytes another thread
// may still read (WAR), or reads or writes bytes another thread wrote (RAW,
// WAW), must wait at a barrier (bar.sync 0) first.
//
// 1. Each op's accesses: an op owning scratch (allocation.offset) writes
//    its bytes, synchronizes inside its own lowering (its two phases: write,
//    bar.sync, read), then reads them. So it needs every earlier access to
//    those bytes finished before it starts, and leaves its reads pending.
// 2. Walk the function in program order with the set of accesses made
//    since the last barrier ("pending"). Before an op whose first accesses
//    conflict with a pending one (overlapping bytes, one of them a write),
//    insert gpu.barrier: nothing is pending after it.
// 3. Structured control flow: scf.if joins the pending sets of its two
//    branches; a loop (scf.for, scf.while) starts its body with what is
//    pending before it joined with what is pending at the end of its body
//    (the back edge), iterated to a fixed point. Barriers, once decided,
//    stay, so the sets only grow and the iteration ends.
// An existing gpu.barrier clears the pending set: running the pass twice
// inserts nothing the second time.
#include "tritium/gpu/shared_memory.h"

#include <functional>
#include <set>
#include <tuple>

namespace tritium::gpu {

namespace {

struct Access {
  int64_t lo, hi; // bytes [lo, hi)
  bool write;
  bool operator<(const Access &o) const {
    return std::tie(lo, hi, write) < std::tie(o.lo, o.hi, o.write);
  }
  bool operator==(const Access &o) const = default;
  bool conflicts(const Access &o) const {
    return lo < o.hi && o.lo < hi && (write || o.write);
  }
};
using Pending = std::set<Access>;

/// Step 1: what an op does to shared memory, in two parts around the
/// barrier inside its lowering (when it has one).
struct Effects {
  std::vector<Access> first; // before its own barrier
  bool barrierInside = false;
  std::vector<Access> last; // after it, left pending
};

Effects effectsOf(Function &f, const Operation &op) {
  Effects e;
  int64_t offset = sharedOffset(op);
  if (offset < 0)
    return e;
  // Scratch: write, bar.sync, read, all inside the op's lowering.
  int64_t bytes = scratchBytes(f, op);
  if (bytes <= 0)
    throw UserError("'" + std::string(op.name()) + "' has '" +
                        kAllocationOffsetAttr +
                        "' but needs no shared memory (the offsets come from "
                        "--allocate-shared-memory)",
                    op.loc());
  e.first.push_back({offset, offset + bytes, true});
  e.barrierInside = true;
  e.last.push_back({offset, offset + bytes, false});
  return e;
}

class BarrierInserter {
public:
  explicit BarrierInserter(Function &f) : f_(f) {}

  /// Decides the barriers of the function (steps 2 and 3), then inserts
  /// them; returns how many.
  int run() {
    walkBlock(f_.entry(), {});
    for (Operation *op : before_) {
      Block *b = op->parentBlock();
      b->insert(b->find(op),
                Operation::create(OpCode::GPUBarrier, {}, {}, {}, op->loc()));
    }
    return (int)before_.size();
  }

private:
  Function &f_;
  std::set<Operation *> before_; // ops that get a barrier before them

  static void join(Pending &into, const Pending &from) {
    into.insert(from.begin(), from.end());
  }

  Pending walkBlock(Block &b, Pending pending) {
    for (auto &op : b.ops())
      pending = walkOp(*op, std::move(pending));
    return pending;
  }

  /// A loop body entered with `entry`, and its back edge.
  Pending loopFixedPoint(Pending entry,
                         const std::function<Pending(Pending)> &body) {
    for (;;) {
      Pending next = entry;
      join(next, body(entry));
      if (next == entry)
        return entry;
      entry = std::move(next);
    }
  }

  Pending walkOp(Operation &op, Pending pending) {
    switch (op.code()) {
    case OpCode::GPUBarrier:
      return {};
    case OpCode::If: {
      Pending out = walkRegion(op.region(0), pending);
      if (op.numRegions() > 1 && !op.region(1).empty())
        join(out, walkRegion(op.region(1), pending));
      else
        join(out, pending);
      return out;
    }
    case OpCode::For: {
      Pending entry = loopFixedPoint(std::move(pending), [&](Pending in) {
        return walkRegion(op.region(0), std::move(in));
      });
      // The loop may run no iteration: what was pending before it is in
      // `entry`, and so is the end of every iteration.
      return entry;
    }
    case OpCode::While: {
      // The "before" region runs first and after every iteration; the
      // loop leaves from its end.
      Pending entry = loopFixedPoint(std::move(pending), [&](Pending in) {
        return walkRegion(op.region(1), walkRegion(op.region(0), in));
      });
      return walkRegion(op.region(0), entry);
    }
    default:
      break;
    }
    Effects e = effectsOf(f_, op);
    bool conflict = before_.count(&op) > 0;
    for (const Access &a : e.first)
      for (const Access &p : pending)
        conflict = conflict || a.conflicts(p);
    if (conflict) {
      before_.insert(&op);
      pending.clear();
    }
    if (e.barrierInside)
      pending.clear();
    else
      pending.insert(e.first.begin(), e.first.end());
    pending.insert(e.last.begin(), e.last.end());
    return pending;
  }

  Pending walkRegion(Region &r, Pending pending) {
    for (auto &b : r.blocks())
      pending = walkBlock(*b, std::move(pending));
    return pending;
  }
};

} // namespace

void insertBarriers(Module &m, PassStats &stats) {
  for (auto &f : m.functions())
    stats.add("gpu.barriers-inserted", BarrierInserter(*f).run());
}

} // namespace tritium::gpu
