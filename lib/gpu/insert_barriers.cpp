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
// 4. Memory descriptors: ttg.local_store writes the bytes of its buffer,
//    ttg.local_load reads them, ttg.local_alloc with an initial value writes
//    the whole allocation. A buffer's bytes are those its ttg.local_alloc
//    was given; a ttg.memdesc_index picks one buffer of a multi-buffered
//    allocation when its index is a constant, and may be any buffer of it
//    otherwise (a pipelined loop's: the whole allocation for barriers, but
//    not "must" for step 5); a memdesc from anywhere else (a block argument)
//    may be any byte of shared memory.
// 5. Asynchronous copies (ttg.async_copy_global_to_local) write their
//    buffer while later ops run, in groups as cp.async does: the copies
//    since the last ttg.async_commit_group are uncommitted; a commit makes
//    them the newest committed group (age 0) and ages the older ones; a
//    ttg.async_wait {num = N} completes every committed group of age N or
//    more. A copy in flight is not ordered by a barrier, so an op touching
//    bytes one may still write is the producer's bug (a wait is missing): an
//    InternalError naming the op and the copy. A completed copy is this
//    thread's own write; other threads see it only after a barrier, so it
//    becomes an ordinary pending write.
// 6. TMA copies (ttng.async_tma_copy_global_to_local) write their buffer
//    as asynchronous copies do, but complete on an mbarrier that every
//    thread waits for (ttng.wait_barrier): the wait makes the bytes
//    visible to the thread that passes it, so a completed TMA copy leaves
//    nothing pending. Which copies a wait completes is not followed (a
//    pipelined loop's mbarrier is one of several): any wait completes every
//    TMA copy in flight, which only lets step 5 report less; so does
//    ttng.inval_barrier (a copy completing on an invalidated mbarrier would
//    be the producer's bug).
// 7. In a kernel of one warpgroup (4 warps), a TMA copy needs no barrier
//    after wgmma reads: every warp takes part in each wgmma (.sync.aligned),
//    so once the issuing thread's own wgmma.wait_group retired the wgmma
//    that read the bytes, no warp reads them any more (the pipeliner issues
//    a stage's copies after the wait that retires the previous reader;
//    with more warpgroups another one's wgmma may still be reading).
// 8. Nor a TMA copy with {warpgroup = W} (pipeline_loops.cpp's empty
//    barriers): every warp arrived on the buffer's empty mbarrier once its
//    own wgmma.wait_group retired the reads, and warpgroup W waited for all
//    of them before its first thread issues the copy.
#include "tritium/gpu/shared_memory.h"

#include "tritium/gpu/conversion.h"

#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace tritium::gpu {

namespace {

struct Access {
  int64_t lo, hi; // bytes [lo, hi)
  bool write;
  /// Touches these bytes for sure, not only some of them (step 5 reports
  /// only such accesses).
  bool exact = true;
  /// A wgmma's read of an operand (step 7).
  bool wgmma = false;
  bool operator<(const Access &o) const {
    return std::tie(lo, hi, write, exact, wgmma) <
           std::tie(o.lo, o.hi, o.write, o.exact, o.wgmma);
  }
  bool operator==(const Access &o) const = default;
  bool conflicts(const Access &o) const {
    return lo < o.hi && o.lo < hi && (write || o.write);
  }
};
/// A copy that may still be writing [lo, hi): uncommitted (age -1) or in the
/// committed group of `age` (groups older than kMaxAge count as kMaxAge, so
/// that loops reach a fixed point; a wait for more groups than that keeps
/// them pending, which can only report more).
struct AsyncWrite {
  int64_t lo, hi;
  int age;
  int copy; // the copy's index in program order (deterministic sets)
  bool exact = true; // as Access::exact
  bool operator<(const AsyncWrite &o) const {
    return std::tie(lo, hi, age, copy, exact) <
           std::tie(o.lo, o.hi, o.age, o.copy, o.exact);
  }
  bool operator==(const AsyncWrite &o) const = default;
};
constexpr int kMaxAge = 16;
/// The age of a TMA copy in flight: no commit group holds it (step 6).
constexpr int kTMA = -2;

/// What is unsynchronized at a program point.
struct Pending {
  std::set<Access> sync;        // cleared by a barrier
  std::set<AsyncWrite> inFlight; // cleared only by async waits
  bool operator==(const Pending &o) const = default;
};

/// The byte range of a memdesc value, and whether it is exact (a block
/// argument's may be anywhere: conservative for barriers, never reported as
/// a race with a copy).
struct Bytes {
  int64_t lo = 0, hi = 0;
  bool known = false;
  /// One of the buffers of [lo, hi), which one unknown (a ttg.memdesc_index
  /// by a value).
  bool someBuffer = false;
};

/// Step 1: what an op does to shared memory, in two parts around the
/// barrier inside its lowering (when it has one).
struct Effects {
  std::vector<Access> first; // before its own barrier
  bool barrierInside = false;
  std::vector<Access> last; // after it, left pending
};

/// Where each memdesc value lives (step 4), from the allocation's offsets.
class MemDescBytes {
public:
  explicit MemDescBytes(Function &f) {
    f.walk([&](Operation *op) {
      if (op->code() == OpCode::LocalAlloc) {
        int64_t offset = sharedOffset(*op);
        // IR given as text may come without a plan: the caller's pass
        // order, not a bug of ours.
        if (offset < 0)
          throw UserError("'" + std::string(op->name()) + "' has no '" +
                              kAllocationOffsetAttr +
                              "': run --allocate-shared-memory before "
                              "--insert-barriers",
                          op->loc());
        bytes_[op->result(0)] = {
            offset, offset + memdescBytes(op->result(0)->type()), true};
      } else if (op->code() == OpCode::MemDescIndex) {
        bytes_[op->result(0)] = indexed(*op);
      } else if (op->code() == OpCode::MemDescTrans) {
        bytes_[op->result(0)] = of(op->operand(0)); // a view: the same bytes
      }
    });
  }

  Bytes of(Value *v) const {
    auto it = bytes_.find(v);
    if (it != bytes_.end())
      return it->second;
    return {0, std::numeric_limits<int64_t>::max(), false};
  }

  static std::string at(const Operation &op) {
    return op.loc().known() ? " at " + op.loc().str() : "";
  }

private:
  std::map<Value *, Bytes> bytes_;

  Bytes indexed(const Operation &op) const {
    Bytes all = of(op.operand(0));
    const Type *t = op.operand(0)->type();
    Operation *def = op.operand(1)->definingOp();
    if (!all.known || !t->isMultiBuffered())
      return all;
    if (!def || def->code() != OpCode::Constant) {
      all.someBuffer = true;
      return all;
    }
    auto it = def->attrs().find("value");
    const int64_t *i = it == def->attrs().end()
                           ? nullptr
                           : std::get_if<int64_t>(&it->second);
    if (!i || *i < 0 || *i >= t->numBuffers())
      return all;
    int64_t per = t->numElements() / t->numBuffers() *
                  storageBytes(t->element());
    return {all.lo + *i * per, all.lo + (*i + 1) * per, true};
  }
};

Effects effectsOf(Function &f, const MemDescBytes &md, const Operation &op) {
  Effects e;
  auto touch = [&](Value *m, bool write) {
    Bytes b = md.of(m);
    e.first.push_back({b.lo, b.hi, write, !b.someBuffer});
  };
  switch (op.code()) {
  case OpCode::LocalAlloc:
    if (op.numOperands() > 0)
      touch(op.result(0), true);
    return e;
  case OpCode::LocalStore:
    touch(op.operand(1), true);
    return e;
  case OpCode::LocalLoad:
    touch(op.operand(0), false);
    return e;
  case OpCode::AsyncTMACopyLocalToGlobal:
    // Thread 0's copy has read the buffer when the op ends (its wait): a
    // read pending like a ttg.local_load's.
    touch(op.operand(0), false);
    return e;
  case OpCode::WarpGroupDot:
    if (!op.operand(0)->type()->isTensor()) // else A is in registers
      touch(op.operand(0), false);
    touch(op.operand(1), false);
    for (Access &a : e.first)
      a.wgmma = true;
    return e;
  default:
    break;
  }
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
  explicit BarrierInserter(Function &f) : f_(f), md_(f) {
    auto it = f.attrs().find("num_warps");
    if (it != f.attrs().end())
      if (const int64_t *n = std::get_if<int64_t>(&it->second))
        oneWarpgroup_ = *n == 4;
    f.walk([&](Operation *op) {
      if (op->code() == OpCode::AsyncCopyGlobalToLocal ||
          op->code() == OpCode::AsyncTMACopyGlobalToLocal) {
        copyIndex_[op] = (int)copies_.size();
        copies_.push_back(op);
      }
    });
  }

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
  MemDescBytes md_;
  bool oneWarpgroup_ = false; // step 7
  std::map<const Operation *, int> copyIndex_;
  std::vector<const Operation *> copies_;
  std::set<Operation *> before_; // ops that get a barrier before them

  static void join(Pending &into, const Pending &from) {
    into.sync.insert(from.sync.begin(), from.sync.end());
    into.inFlight.insert(from.inFlight.begin(), from.inFlight.end());
  }

  /// Step 5: touching bytes a copy may still write.
  void checkInFlight(const Operation &op, const Access &a,
                     const Pending &pending) {
    // Bytes not known exactly (see Bytes) may, not must, overlap: only
    // exact ranges are reported.
    // Likewise one buffer of several, which one unknown: the index
    // arithmetic (a pipelined loop's) is not followed.
    constexpr int64_t kUnknown = std::numeric_limits<int64_t>::max();
    if (a.hi == kUnknown || !a.exact)
      return;
    for (const AsyncWrite &w : pending.inFlight)
      if (w.hi != kUnknown && w.exact && a.lo < w.hi && w.lo < a.hi)
        throw InternalError(
            "insert-barriers: '" + std::string(op.name()) + "'" +
            MemDescBytes::at(op) + " " + (a.write ? "writes" : "reads") +
            " shared memory [" + std::to_string(a.lo) + ", " +
            std::to_string(a.hi) + ") that the asynchronous copy" +
            MemDescBytes::at(*copies_[w.copy]) +
            " may still be writing (no ttg.async_wait completes it first)");
  }

  /// Step 5: commits and waits change only the copies in flight.
  static Pending commit(Pending pending) {
    std::set<AsyncWrite> next;
    for (AsyncWrite w : pending.inFlight) {
      if (w.age != kTMA)
        w.age = std::min(w.age + 1, kMaxAge);
      next.insert(w);
    }
    pending.inFlight = std::move(next);
    return pending;
  }
  static Pending wait(Pending pending, int64_t num) {
    std::set<AsyncWrite> still;
    for (const AsyncWrite &w : pending.inFlight) {
      if (w.age != kTMA && w.age >= 0 && w.age >= num)
        pending.sync.insert({w.lo, w.hi, true});
      else
        still.insert(w);
    }
    pending.inFlight = std::move(still);
    return pending;
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
      // Copies in flight are not the barrier's to wait for.
      pending.sync.clear();
      return pending;
    case OpCode::AsyncCommitGroup:
      return commit(std::move(pending));
    case OpCode::WaitBarrier:
    case OpCode::InvalBarrier: {
      // Step 6 (no copy may still complete on an mbarrier being
      // invalidated: a pipelined loop's last copies are predicated off).
      std::set<AsyncWrite> still;
      for (const AsyncWrite &w : pending.inFlight)
        if (w.age != kTMA)
          still.insert(w);
      pending.inFlight = std::move(still);
      return pending;
    }
    case OpCode::AsyncWait: {
      auto it = op.attrs().find("num");
      const int64_t *num =
          it == op.attrs().end() ? nullptr : std::get_if<int64_t>(&it->second);
      if (!num || *num < 0)
        throw InternalError("insert-barriers: 'ttg.async_wait'" +
                            MemDescBytes::at(op) +
                            " needs a non-negative integer 'num'");
      return wait(std::move(pending), *num);
    }
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
    Effects e = effectsOf(f_, md_, op);
    // An asynchronous copy writes its buffer after every earlier access
    // (WAR, WAW: the same barrier as a write), but stays in flight.
    bool tma = op.code() == OpCode::AsyncTMACopyGlobalToLocal;
    bool async = op.code() == OpCode::AsyncCopyGlobalToLocal || tma;
    Bytes copied;
    if (async) {
      copied = md_.of(op.operand(tma ? 0 : 1));
      e.first.push_back({copied.lo, copied.hi, true, !copied.someBuffer});
    }
    // A TMA copy after wgmma reads needs no barrier in a kernel of one
    // warpgroup (step 7), nor when a warpgroup issues it after waiting on
    // the buffer's empty barrier, which every warp released (step 8).
    bool released = oneWarpgroup_ || (tma && op.hasAttr("warpgroup"));
    bool conflict = before_.count(&op) > 0;
    for (const Access &a : e.first) {
      checkInFlight(op, a, pending);
      for (const Access &p : pending.sync)
        conflict = conflict || (a.conflicts(p) && !(tma && released && p.wgmma));
    }
    for (const Access &a : e.last)
      checkInFlight(op, a, pending);
    if (conflict) {
      before_.insert(&op);
      pending.sync.clear();
    }
    if (async) {
      pending.inFlight.insert({copied.lo, copied.hi, tma ? kTMA : -1, copyIndex_.at(&op),
                               !copied.someBuffer});
      return pending;
    }
    if (e.barrierInside)
      pending.sync.clear();
    else
      pending.sync.insert(e.first.begin(), e.first.end());
    pending.sync.insert(e.last.begin(), e.last.end());
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
