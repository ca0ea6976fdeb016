// --remove-layout-conversions: see passes.h.
//
// 1. A conversion to the layout its operand already has is dropped; a
//    conversion of a conversion converts the original value.
// 2. A conversion of a value that is cheap to compute (a tree of constants,
//    splats, make_range, elementwise integer/pointer arithmetic, broadcasts
//    and expand_dims, at most kMaxRematOps ops, no memory access, no block
//    argument) is replaced by a copy of that tree built in the wanted
//    layout, right before the conversion. Recomputing a few integer ops per
//    element is much cheaper than a round trip through shared memory with
//    two barriers.
// 3. A conversion is sunk below the elementwise ops that consume it: from
//    its users on, the pure elementwise ops of its block whose operands are
//    the converted value, results of ops already taken, or cheap to rebuild
//    (as in 2) are rebuilt in the conversion's source layout, as long as no
//    result is wider per element than the converted value. When exactly
//    one of their results is used by the ops left behind, that result is
//    converted instead, and the original conversion dies. So the matmul
//    epilogue truncates the accumulator in the mma layout and moves half
//    the bytes through shared memory; `where(x > 0, x, 0.01 * x)` (x used
//    three times) moves as a whole. New conversions are tried again, then
//    1 and 2 run over the result.
//    A tree whose leaves are not cheap (a loaded row vector m, broadcast
//    onto a tile as m[None, :]) may still be rebuilt when those leaves are
//    small: they are converted instead of the whole value, when the leaves
//    move at most a quarter of its elements (the attention backward's
//    exp2(s - m[None, :]) on an mma accumulator converts 64 values of m,
//    not the 128x64 tile).
// 4. Pure ops and non-volatile loads left without users are erased.
#include "tritium/gpu/conversion.h"
#include "tritium/gpu/passes.h"
#include "tritium/gpu/shared_memory.h"

#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>

namespace tritium::gpu {

namespace {

constexpr int kMaxRematOps = 48;
// Leaves converted instead of rebuilt: at most this many per tree.
constexpr int kMaxLeafConversions = 2;
// A conversion of a small loaded vector into a slice layout (a vector about
// to be broadcast onto a tile) is replaced by the load in that layout when
// the vector has at most this many elements and the slice gives each thread
// at most this many of them.
constexpr int64_t kMaxReloadElements = 256;
constexpr int64_t kMaxReloadRegs = 16;

int64_t elements(const Type *t) {
  int64_t n = 1;
  for (int64_t d : t->shape())
    n *= d;
  return n;
}

bool isCheapElementwise(const Operation &op) {
  if (!op.hasTrait(ELEM) || !op.hasTrait(PURE))
    return false;
  switch (op.code()) {
  case OpCode::DivSI:
  case OpCode::DivUI:
  case OpCode::RemSI:
  case OpCode::RemUI:
  case OpCode::DivF:
  case OpCode::RemF:
  case OpCode::Exp:
  case OpCode::Exp2:
  case OpCode::Log:
  case OpCode::Log2:
  case OpCode::Sqrt:
  case OpCode::Rsqrt:
  case OpCode::Sin:
  case OpCode::Cos:
  case OpCode::Erf:
  case OpCode::Tanh:
    return false;
  default:
    return true;
  }
}

/// An expensive pure elementwise op (a division, a transcendental) is
/// rebuilt too when `l` gives each thread no more of its elements than its
/// own layout does: the copy costs at most what the original did, and saves
/// the round trip through shared memory. The tutorial matmul's
/// `(pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M` is computed on a slice
/// of the B tile's layout (16 rows a thread) and converted to the A tile's
/// (4 rows a thread): rebuilt there, 4 remainders instead of 16, and no
/// conversion with its two barriers before the first copy.
bool noMoreWork(const Operation &def, Value *v, const GPULayout *l) {
  if (!def.hasTrait(ELEM) || !def.hasTrait(PURE))
    return false;
  return linearOf(withLayout(v->type(), l)).numRegs() <=
         linearOf(v->type()).numRegs();
}

struct Rematerializer {
  explicit Rematerializer(Operation *at) : insertBefore(at) {}
  Operation *insertBefore;
  int budget = kMaxRematOps;
  std::map<std::pair<Value *, const GPULayout *>, Value *> done;
  int created = 0;
  // Leaf conversions: allowed up to `leafLimit` elements in all (0: none);
  // the elements and count the tree's leaves move.
  int64_t leafLimit = 0, leafElements = 0;
  int leaves = 0;

  /// `v` converted to `l` as a leaf of the tree, or null when over the
  /// limits (a layout the conversion machinery cannot target included).
  Value *leaf(Value *v, const GPULayout *l, bool build) {
    if (!leafLimit || l->kind() == GPULayout::Kind::Linear ||
        ++leaves > kMaxLeafConversions ||
        (leafElements += elements(v->type())) > leafLimit)
      return nullptr;
    Value *r = reload(v, l, build);
    if (!r)
      r = build ? createLayoutConversion(insertBefore, v, l) : v;
    done[{v, l}] = r;
    return r;
  }

  /// A small loaded leaf is loaded again in `l`, where the load was (its
  /// latency stays hidden as before), when its pointers, mask and other
  /// are cheap to rebuild there: no trip through shared memory, and the
  /// elements come from L1.
  Value *reload(Value *v, const GPULayout *l, bool build) {
    Operation *def = v->definingOp();
    if (!def || def->code() != OpCode::Load || !def->attrs().empty())
      return nullptr;
    Rematerializer at(def);
    at.budget = budget;
    std::vector<Value *> operands;
    for (Value *o : def->operands()) {
      Value *r = at.remat(o, l, build);
      if (!r)
        return nullptr;
      operands.push_back(r);
    }
    budget = at.budget;
    if (!build)
      return v;
    auto copy = Operation::create(def->code(), operands,
                                  {withLayout(v->type(), l)}, def->attrs(),
                                  def->loc());
    Block *b = def->parentBlock();
    created += at.created + 1;
    return b->insert(b->find(def), std::move(copy))->result(0);
  }

  /// Can `v` be rebuilt in layout `l`? (Dry run when `build` is false.)
  Value *remat(Value *v, const GPULayout *l, bool build) {
    if (!v->type()->isTensor())
      return v;
    if (layoutOf(v->type()) == l)
      return v;
    auto key = std::make_pair(v, l);
    if (auto it = done.find(key); it != done.end())
      return it->second;
    Operation *def = v->definingOp();
    if (--budget < 0)
      return nullptr;
    if (!def)
      return leaf(v, l, build);
    std::vector<Value *> newOperands;
    if (isLayoutConversion(*def)) {
      return remat(def->operand(0), l, build);
    } else if (def->code() == OpCode::Constant ||
               def->code() == OpCode::MakeRange ||
               def->code() == OpCode::Splat) {
      newOperands = def->operands();
    } else if (def->code() == OpCode::Broadcast) {
      if (l->kind() == GPULayout::Kind::Linear)
        return nullptr;
      Value *s = remat(def->operand(0), l, build);
      if (!s)
        return nullptr;
      newOperands = {s};
    } else if (def->code() == OpCode::ExpandDims) {
      int axis = (int)def->intAttr("axis");
      Value *s = remat(def->operand(0), SliceLayout::get(axis, l), build);
      if (!s)
        return nullptr;
      newOperands = {s};
    } else if (isCheapElementwise(*def) || noMoreWork(*def, v, l)) {
      for (Value *o : def->operands()) {
        Value *s = remat(o, l, build);
        if (!s)
          return nullptr;
        newOperands.push_back(s);
      }
    } else {
      return leaf(v, l, build);
    }
    if (!build) {
      done[key] = v; // any non-null marks success of the dry run
      return v;
    }
    auto copy =
        Operation::create(def->code(), newOperands, {withLayout(v->type(), l)},
                          def->attrs(), def->loc());
    Block *b = insertBefore->parentBlock();
    Value *r = b->insert(b->find(insertBefore), std::move(copy))->result(0);
    done[key] = r;
    ++created;
    return r;
  }
};

/// Erases pure ops whose results are unused, until none is left.
int eraseDeadPureOps(Function &f) {
  int erased = 0;
  for (bool changed = true; changed;) {
    changed = false;
    auto uses = countUses(f);
    std::vector<Operation *> dead;
    f.walk([&](Operation *op) {
      // A load left without users (one loaded again in another layout) is
      // dead too, unless volatile.
      bool load = op->code() == OpCode::Load &&
                  !(op->hasAttr("volatile") && op->boolAttr("volatile"));
      if ((!op->hasTrait(PURE) && !load) || op->numRegions() ||
          op->numResults() == 0)
        return;
      for (Value *r : op->results())
        if (uses.count(r) && uses[r] > 0)
          return;
      dead.push_back(op);
    });
    // Users come after their operands: erase from the back.
    for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
      (*it)->erase();
      ++erased;
      changed = true;
    }
  }
  return erased;
}

/// Steps 1 and 2 over every conversion of `f`; whether any was replaced.
bool replaceConversions(Function &f, PassStats &stats) {
  std::vector<Operation *> convs;
  f.walk([&](Operation *op) {
    if (isLayoutConversion(*op) && layoutOf(op->result(0)->type()))
      convs.push_back(op);
  });
  bool any = false;
  for (Operation *c : convs) {
    Value *src = c->operand(0);
    while (src->definingOp() && isLayoutConversion(*src->definingOp()))
      src = src->definingOp()->operand(0);
    c->operands()[0] = src;
    const GPULayout *want = layoutOf(c->result(0)->type());
    Value *replacement = nullptr;
    if (src->type() == c->result(0)->type()) {
      replacement = src;
    } else {
      Rematerializer dry(c);
      dry.leafLimit = elements(c->result(0)->type()) / 4;
      if (dry.remat(src, want, false)) {
        Rematerializer real(c);
        real.leafLimit = dry.leafLimit;
        replacement = real.remat(src, want, true);
        stats.add("gpu.ops-rematerialized", real.created);
      } else if (src->definingOp() && src->definingOp()->code() == OpCode::Load &&
                 want->kind() == GPULayout::Kind::Slice &&
                 elements(src->type()) <= kMaxReloadElements &&
                 linearOf(withLayout(src->type(), want)).numRegs() <= kMaxReloadRegs) {
        // A small loaded vector broadcast onto a tile (Liger's mhc_pre:
        // h[:, None] * g, h loaded coalesced, one element a thread) is
        // loaded again in the tile's slice, as Triton's rematerialization
        // does: each thread reads its few elements (the same addresses across
        // a warp: one transaction, from L1 after the first warp) instead of a
        // round trip through shared memory and its barriers.
        Rematerializer again(c);
        if (again.reload(src, want, false)) {
          Rematerializer real(c);
          replacement = real.reload(src, want, true);
          stats.add("gpu.loads-reloaded");
        }
      }
    }
    if (!replacement)
      continue;
    replaceAllUsesWith(f, c->result(0), replacement);
    stats.add("gpu.conversions-removed");
    any = true;
  }
  return any;
}

/// What sinking conversion `c` (x in layout `from` -> y) would rebuild:
/// `ops`, the elementwise ops after c in its block that can run in `from`
/// (in block order), and `out`, the one value among their results that
/// ops outside the set use, which gets the new conversion.
struct SinkPlan {
  std::vector<Operation *> ops;
  Value *out = nullptr;
};

/// Whether `u` may run in layout `from` given the values already planned
/// there (`dry`'s cache): pure, elementwise, no regions (so no nested use
/// and the same values element by element in any layout), a result no
/// wider in memory than `bytes` (the conversion at the end moves no more
/// than c did) and on no more registers per thread in `from` (no extra
/// work where `from` holds copies), every operand planned or cheap to
/// rebuild in `from`.
bool canRunIn(Operation *u, const GPULayout *from, const GPULayout *to,
              int64_t bytes, Rematerializer &dry) {
  if (!u->hasTrait(ELEM) || !u->hasTrait(PURE) || u->numResults() != 1 ||
      u->numRegions())
    return false;
  // The result in the conversion's layout, as in any well-typed
  // elementwise use (IR rewired but not yet verified may differ).
  const Type *rt = u->result(0)->type();
  if (!rt->isTensor() || layoutOf(rt) != to ||
      storageBytes(rt->scalarType()) > bytes ||
      linearOf(withLayout(rt, from)).numRegs() > linearOf(rt).numRegs())
    return false;
  for (Value *o : u->operands())
    if (!dry.remat(o, from, false))
      return false;
  return true;
}

/// Grows the set of ops to rebuild from c's users, scanning c's block in
/// order: an op that uses a planned value joins when canRunIn says so;
/// otherwise the planned values it uses (or ops in its regions use) must
/// stay available in c's layout. Null when that is not exactly one value,
/// other than c's own result, of at most c's bytes per element (a second
/// conversion, e.g. for a store of the fp32 values beside a truncf, would
/// move more data than c alone).
std::optional<SinkPlan> planSink(Operation *c) {
  Value *x = c->operand(0);
  const GPULayout *from = layoutOf(x->type());
  if (!from || from->kind() == GPULayout::Kind::DotOperand)
    return std::nullopt;
  int64_t bytes = storageBytes(c->result(0)->type()->scalarType());
  Rematerializer dry(c);
  dry.done[{c->result(0), from}] = x;
  SinkPlan plan;
  std::set<Value *> planned = {c->result(0)}, needed;
  Block *b = c->parentBlock();
  for (auto it = std::next(b->find(c)); it != b->ops().end(); ++it) {
    Operation *u = it->get();
    std::set<Value *> uses;
    u->walk([&](Operation *op) {
      for (Value *o : op->operands())
        if (planned.count(o))
          uses.insert(o);
    });
    if (uses.empty())
      continue;
    if (canRunIn(u, from, layoutOf(c->result(0)->type()), bytes, dry)) {
      plan.ops.push_back(u);
      planned.insert(u->result(0));
      dry.done[{u->result(0), from}] = u->result(0);
    } else {
      needed.insert(uses.begin(), uses.end());
    }
  }
  if (plan.ops.empty() || needed.size() != 1 ||
      *needed.begin() == c->result(0))
    return std::nullopt;
  plan.out = *needed.begin();
  return plan;
}

/// Rebuilds the plan's ops in the layout of c's operand, each right before
/// its original (so the scalars the rebuilt splats read dominate them), and
/// converts the plan's output back; erases the originals. Returns the new
/// conversion.
Operation *sink(Function &f, Operation *c, const SinkPlan &plan,
                PassStats &stats) {
  const GPULayout *from = layoutOf(c->operand(0)->type());
  Rematerializer real(c);
  real.done[{c->result(0), from}] = c->operand(0);
  Operation *conversion = nullptr;
  for (Operation *u : plan.ops) {
    real.insertBefore = u;
    std::vector<Value *> operands;
    for (Value *o : u->operands())
      operands.push_back(real.remat(o, from, true));
    Value *old = u->result(0);
    auto copy = Operation::create(u->code(), operands,
                                  {withLayout(old->type(), from)}, u->attrs(),
                                  u->loc());
    Block *b = u->parentBlock();
    Value *rebuilt = b->insert(b->find(u), std::move(copy))->result(0);
    real.done[{old, from}] = rebuilt;
    if (old == plan.out) {
      Value *converted =
          createLayoutConversion(u, rebuilt, layoutOf(old->type()));
      converted->nameHint = old->nameHint;
      replaceAllUsesWith(f, old, converted);
      conversion = converted->definingOp();
    }
  }
  // Only planned ops use the other results: erase users first.
  for (auto it = plan.ops.rbegin(); it != plan.ops.rend(); ++it)
    (*it)->erase();
  stats.add("gpu.ops-rematerialized", real.created);
  stats.add("gpu.ops-sunk", (int64_t)plan.ops.size());
  stats.add("gpu.conversions-sunk");
  return conversion;
}

/// Step 3 over every conversion of `f`, and over the conversions it
/// creates; whether anything moved.
bool sinkConversions(Function &f, PassStats &stats) {
  std::vector<Operation *> work;
  f.walk([&](Operation *op) {
    if (isLayoutConversion(*op) && layoutOf(op->result(0)->type()))
      work.push_back(op);
  });
  bool any = false;
  // Conversions are never erased here (a dead one waits for step 4), so
  // the pointers stay valid. Each sink leaves one conversion further down
  // a chain of elementwise ops, which the next round may move again.
  for (size_t i = 0; i < work.size(); ++i) {
    Operation *c = work[i];
    auto plan = planSink(c);
    if (!plan)
      continue;
    work.push_back(sink(f, c, *plan, stats));
    any = true;
  }
  return any;
}

} // namespace

bool canRematerialize(Value *v, const GPULayout *l) {
  Rematerializer dry(nullptr);
  return dry.remat(v, l, false) != nullptr;
}

int64_t rematerializationCost(Value *v, const GPULayout *l) {
  if (!v->type()->isTensor())
    return 0;
  Rematerializer dry(nullptr);
  dry.leafLimit = elements(v->type()) / 4;
  return dry.remat(v, l, false) ? dry.leafElements : -1;
}

void removeLayoutConversions(Module &m, const PipelineOptions &,
                             PassStats &stats) {
  for (auto &fn : m.functions()) {
    Function &f = *fn;
    bool any = replaceConversions(f, stats);
    if (sinkConversions(f, stats)) {
      // A sunk conversion may now meet another one, or a value that is
      // cheap to rebuild (e.g. a splat multiplied after the cast).
      replaceConversions(f, stats);
      any = true;
    }
    if (any)
      eraseDeadPureOps(f);
  }
}

const PassTable &gpuPasses() {
  static const PassTable passes = {
      {"convert-to-gpu",
       "Give every tensor a GPU layout (coalesced blocked, slice), inserting "
       "layout conversions",
       convertToGPU},
      {"remove-layout-conversions",
       "Drop needless layout conversions; recompute cheap producers in the "
       "wanted layout",
       removeLayoutConversions},
      {"accelerate-matmul",
       "Give every tt.dot the layouts of its instruction (mma.sync "
       "accumulator and operands, or FMA operands)",
       accelerateMatmul},
      {"propagate-layouts",
       "Give the forward web of an mma accumulator (softmax, rescaling, "
       "loop-carried statistics) layouts derived from it when that removes "
       "conversions",
       propagateLayouts},
      {"pipeline",
       "Software-pipeline loops: loads into shared memory become "
       "multi-buffered async copies num_stages-1 iterations ahead",
       pipelineLoops},
      {"order-warpgroups",
       "Attention loops of two warpgroups: warpgroup 1 issues its QK^T after warpgroup 0 "
       "(FlashAttention-3's ping-pong)",
       orderWarpgroups},
      {"lower-tma-stores",
       "Tensor-descriptor stores kept for TMA (sm_90a): the value to shared "
       "memory, then one cp.async.bulk.tensor store per box",
       lowerTMAStores},
      {"fuse-multiply-add",
       "a * b + c as one math.fma (f32/f64, the mul used once), where "
       "enable_fp_fusion allows it",
       fuseMultiplyAdd},
      {"allocate-shared-memory",
       "Give every shared-memory buffer an offset (allocation.offset) by "
       "liveness; the total (shared) within the target's limit",
       [](Module &m, const PipelineOptions &o, PassStats &s) {
         allocateSharedMemory(m, o.target.maxSharedBytes(), o.target.str(), s);
       }},
      {"insert-barriers",
       "Insert gpu.barrier between ops whose shared-memory accesses may race",
       [](Module &m, const PipelineOptions &, PassStats &s) {
         insertBarriers(m, s);
       }},
  };
  return passes;
}

} // namespace tritium::gpu
