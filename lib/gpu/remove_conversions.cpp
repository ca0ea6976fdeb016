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
// 3. Pure ops left without users are erased.
#include "tritium/gpu/passes.h"
#include "tritium/gpu/shared_memory.h"

#include <functional>
#include <map>

namespace tritium::gpu {

namespace {

constexpr int kMaxRematOps = 48;

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

struct Rematerializer {
  explicit Rematerializer(Operation *at) : insertBefore(at) {}
  Operation *insertBefore;
  int budget = kMaxRematOps;
  std::map<std::pair<Value *, const GPULayout *>, Value *> done;
  int created = 0;

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
    if (!def || --budget < 0)
      return nullptr;
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
    } else if (isCheapElementwise(*def)) {
      for (Value *o : def->operands()) {
        Value *s = remat(o, l, build);
        if (!s)
          return nullptr;
        newOperands.push_back(s);
      }
    } else {
      return nullptr;
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
      if (!op->hasTrait(PURE) || op->numRegions() || op->numResults() == 0)
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

} // namespace

void removeLayoutConversions(Module &m, const PipelineOptions &,
                             PassStats &stats) {
  for (auto &fn : m.functions()) {
    Function &f = *fn;
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
        if (dry.remat(src, want, false)) {
          Rematerializer real(c);
          replacement = real.remat(src, want, true);
          stats.add("gpu.ops-rematerialized", real.created);
        }
      }
      if (!replacement)
        continue;
      replaceAllUsesWith(f, c->result(0), replacement);
      stats.add("gpu.conversions-removed");
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
      {"pipeline",
       "Software-pipeline loops: loads into shared memory become "
       "multi-buffered async copies num_stages-1 iterations ahead",
       pipelineLoops},
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
