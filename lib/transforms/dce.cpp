// --dce: dead-code elimination.
//
// Outline:
//  1. Functions: keep kernels (`kernel = true`) and whatever they reach
//     through tt.call; erase the rest (unless the module has no kernel at
//     all).
//  2. Per function, mark live values and ops with a worklist, starting from
//     the ops that have effects (stores, loads, calls, prints, tt.return,
//     scf.while). A live op makes its operands live, and the op holding its
//     region live. Loop-carried values are tracked one by one: iter i of an
//     scf.for is live when its result or its block argument is, and only
//     then are its init and its yielded value live; result i of an scf.if
//     makes the i-th yielded value of both branches live. tt.scan and
//     tt.reduce_combine live or die whole, with their combine region.
//  3. Sweep: drop the dead iter values and results of live scf.for/scf.if,
//     then erase dead pure ops and dead scf.for/scf.if (users first), then
//     the block arguments of the dropped iter values.
#include "tritium/transforms/passes.h"
#include "tritium/transforms/rewrite.h"

#include <set>
#include <unordered_set>

namespace tritium {
namespace {

bool isKernel(const Function &f) {
  auto it = f.attrs().find("kernel");
  if (it == f.attrs().end())
    return false;
  auto *b = std::get_if<bool>(&it->second);
  return b && *b;
}

const std::string *calleeOf(const Operation *op) {
  auto it = op->attrs().find("callee");
  if (it == op->attrs().end())
    return nullptr;
  return std::get_if<std::string>(&it->second);
}

int64_t removeUnreachableFunctions(Module &m) {
  std::set<Function *> reached;
  std::vector<Function *> work;
  for (auto &f : m.functions())
    if (isKernel(*f) && reached.insert(f.get()).second)
      work.push_back(f.get());
  // Without a kernel nothing says which functions are entry points (a
  // module built by a test or a library of helpers): keep them all.
  if (work.empty())
    return 0;
  while (!work.empty()) {
    Function *f = work.back();
    work.pop_back();
    walkOps(f->body(), [&](Operation *op) {
      if (op->code() != OpCode::Call)
        return;
      if (const std::string *name = calleeOf(op))
        if (Function *g = m.lookup(*name); g && reached.insert(g).second)
          work.push_back(g);
    });
  }
  std::vector<Function *> dead;
  for (auto &f : m.functions())
    if (!reached.count(f.get()))
      dead.push_back(f.get());
  for (Function *f : dead)
    m.erase(f);
  return (int64_t)dead.size();
}

/// Ops the sweep may erase when they are not live.
bool isRemovable(const Operation *op) {
  if (op->code() == OpCode::For || op->code() == OpCode::If ||
      op->code() == OpCode::ReduceCombine || op->code() == OpCode::Scan)
    return true;
  return op->hasTrait(PURE) && op->numRegions() == 0;
}

bool isRoot(const Operation *op) {
  if (op->code() == OpCode::Yield || op->code() == OpCode::Condition ||
      op->code() == OpCode::CombineReturn)
    return false; // live through their parent's results
  return !isRemovable(op);
}

class Liveness {
public:
  void compute(Function &f) {
    walkOps(f.body(), [&](Operation *op) {
      if (isRoot(op))
        markOp(op);
    });
    while (!work_.empty()) {
      auto item = work_.back();
      work_.pop_back();
      item();
    }
  }

  bool isLive(Operation *op) const { return liveOps_.count(op); }
  bool isIterLive(Operation *forOp, unsigned i) const {
    return liveIters_.count({forOp, i});
  }
  bool isResultLive(Operation *op, unsigned i) const {
    return liveValues_.count(op->result(i));
  }

private:
  // Marking is deferred through a worklist so deep IR cannot overflow the
  // stack.
  void markOp(Operation *op) {
    if (!liveOps_.insert(op).second)
      return;
    work_.push_back([this, op] {
      switch (op->code()) {
      case OpCode::For:
        for (unsigned i = 0; i < 3 && i < op->numOperands(); ++i)
          markValue(op->operand(i));
        break;
      case OpCode::If:
        markValue(op->operand(0));
        break;
      case OpCode::While:
        for (Value *v : op->operands())
          markValue(v);
        for (unsigned r = 0; r < op->numRegions(); ++r)
          for (auto &b : op->region(r).blocks())
            if (Operation *t = b->terminator())
              markOp(t);
        break;
      case OpCode::ReduceCombine:
      case OpCode::Scan:
        // Whole or not at all: the combine computes every result together.
        for (Value *v : op->operands())
          markValue(v);
        markOp(op->region(0).front().terminator());
        break;
      default:
        for (Value *v : op->operands())
          markValue(v);
      }
      if (Operation *parent = op->parentOp())
        markOp(parent);
    });
  }

  void markValue(Value *v) {
    if (!liveValues_.insert(v).second)
      return;
    if (Operation *def = v->definingOp()) {
      if (def->code() == OpCode::For)
        markIter(def, v->index());
      else if (def->code() == OpCode::If)
        markIfResult(def, v->index());
      else
        markOp(def);
      return;
    }
    Operation *parent = v->ownerBlock()->parentOp();
    if (!parent)
      return; // a function argument
    if (parent->code() == OpCode::For && v->index() > 0)
      markIter(parent, v->index() - 1);
    else
      markOp(parent);
  }

  void markIter(Operation *forOp, unsigned i) {
    if (!liveIters_.insert({forOp, i}).second)
      return;
    markOp(forOp);
    if (3 + i < forOp->numOperands())
      markValue(forOp->operand(3 + i));
    if (forOp->numRegions() != 1 || forOp->region(0).empty())
      throw InternalError("dce: scf.for without a body");
    Block &body = forOp->region(0).front();
    if (Operation *yield = body.terminator(); yield && i < yield->numOperands())
      markValue(yield->operand(i));
    // Keep the loop-carried value and its result consistent.
    if (i + 1 < body.numArguments())
      markValueNoIter(body.argument(i + 1));
    if (i < forOp->numResults())
      markValueNoIter(forOp->result(i));
  }

  void markIfResult(Operation *ifOp, unsigned i) {
    markOp(ifOp);
    for (unsigned r = 0; r < ifOp->numRegions(); ++r)
      for (auto &b : ifOp->region(r).blocks())
        if (Operation *yield = b->terminator(); yield && i < yield->numOperands())
          markValue(yield->operand(i));
  }

  void markValueNoIter(Value *v) { liveValues_.insert(v); }

  std::unordered_set<Operation *> liveOps_;
  std::unordered_set<Value *> liveValues_;
  std::set<std::pair<Operation *, unsigned>> liveIters_;
  std::vector<std::function<void()>> work_;
};

/// Builds a copy of scf.for/scf.if `op` keeping only the results in `keep`,
/// moving its regions over, and replaces the kept results. Returns the new
/// op; `op` itself is detached into `graveyard`.
Operation *rebuildWithResults(Function &f, Operation *op,
                              const std::vector<unsigned> &keep,
                              std::vector<std::unique_ptr<Operation>> &graveyard) {
  bool isFor = op->code() == OpCode::For;
  std::vector<Value *> operands;
  if (isFor) {
    operands = {op->operand(0), op->operand(1), op->operand(2)};
    for (unsigned i : keep)
      operands.push_back(op->operand(3 + i));
  } else {
    operands = op->operands();
  }
  std::vector<const Type *> types;
  for (unsigned i : keep)
    types.push_back(op->result(i)->type());
  auto fresh = Operation::create(op->code(), operands, types, op->attrs(),
                                 op->loc(), op->numRegions());
  for (unsigned r = 0; r < op->numRegions(); ++r) {
    Region &to = fresh->region(r);
    for (auto &b : op->region(r).blocks()) {
      b->setParentRegion(&to);
      to.blocks().push_back(std::move(b));
    }
    op->region(r).blocks().clear();
    // Drop the yielded values of the removed results.
    for (auto &b : to.blocks()) {
      Operation *yield = b->terminator();
      if (!yield)
        continue;
      std::vector<Value *> kept;
      for (unsigned i : keep)
        kept.push_back(yield->operand(i));
      yield->operands() = kept;
    }
  }
  Block *block = op->parentBlock();
  Operation *created = block->insert(block->find(op), std::move(fresh));
  for (unsigned j = 0; j < keep.size(); ++j) {
    created->result(j)->nameHint = op->result(keep[j])->nameHint;
    replaceAllUsesWith(f, op->result(keep[j]), created->result(j));
  }
  graveyard.push_back(op->detach());
  return created;
}

/// One mark-and-sweep over `f`; true when something was removed.
bool sweepFunction(Function &f, PassStats &stats) {
  Liveness live;
  live.compute(f);
  std::vector<Operation *> ops = collectOps(f);

  std::vector<Operation *> dead;
  std::vector<std::pair<Operation *, std::vector<unsigned>>> shrink;
  for (Operation *op : ops) {
    if (!isRemovable(op))
      continue;
    if (!live.isLive(op)) {
      dead.push_back(op);
      continue;
    }
    if (op->code() != OpCode::For && op->code() != OpCode::If)
      continue;
    std::vector<unsigned> keep;
    for (unsigned i = 0; i < op->numResults(); ++i)
      if (op->code() == OpCode::For ? live.isIterLive(op, i)
                                    : live.isResultLive(op, i))
        keep.push_back(i);
    if (keep.size() != op->numResults())
      shrink.push_back({op, std::move(keep)});
  }
  if (dead.empty() && shrink.empty())
    return false;

  std::vector<std::unique_ptr<Operation>> graveyard;
  std::vector<std::pair<Block *, std::vector<unsigned>>> argsToErase;
  for (auto &[op, keep] : shrink) {
    if (op->code() == OpCode::For) {
      Block &body = op->region(0).front();
      std::vector<unsigned> drop;
      for (unsigned i = 0, k = 0; i < op->numResults(); ++i) {
        if (k < keep.size() && keep[k] == i)
          ++k;
        else
          drop.push_back(i + 1);
      }
      argsToErase.push_back({&body, drop});
      stats.add("dce.iter-args-removed", (int64_t)drop.size());
    } else {
      stats.add("dce.results-removed",
                (int64_t)(op->numResults() - keep.size()));
    }
    rebuildWithResults(f, op, keep, graveyard);
  }

  // Dead ops nested in a dead scf.for/if go with it (and are not counted).
  std::unordered_set<Operation *> deadSet(dead.begin(), dead.end());
  int64_t removed = 0;
  for (Operation *op : dead) {
    bool nested = false;
    for (Operation *p = op->parentOp(); p && !nested; p = p->parentOp())
      nested = deadSet.count(p) != 0;
    removed += nested ? 0 : 1;
  }
  eraseOps(f, deadSet);
  stats.add("dce.removed", removed);

  for (auto &[block, drop] : argsToErase)
    for (auto it = drop.rbegin(); it != drop.rend(); ++it)
      block->eraseArgument(*it);
  return true;
}

} // namespace

void dce(Module &m, const PipelineOptions &, PassStats &stats) {
  stats.add("dce.functions-removed", removeUnreachableFunctions(m));
  for (auto &f : m.functions()) {
    // One sweep removes everything dead; a second finds nothing unless a
    // shrunk loop exposes more, so the bound is generous.
    for (int i = 0; i < 8 && sweepFunction(*f, stats); ++i) {
    }
  }
}

} // namespace tritium
