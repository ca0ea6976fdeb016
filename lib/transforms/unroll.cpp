// --unroll: full unrolling of tl.static_range loops (scf.for {unroll = "full"}).
//
// Outline:
//  1. Walk each block in order. At a marked loop, evaluate lb/ub/step to
//     constants (folding through arithmetic on outer ivs that earlier
//     unrolling turned into constants); fail with a UserError at the loop
//     otherwise.
//  2. For each iteration, materialise the iv as a constant and clone the
//     body before the loop, mapping the iter args to the previous
//     iteration's yielded values; the last yielded values replace the loop's
//     results.
//  3. Continue the walk at the first cloned op, so loops nested in the body
//     are unrolled in their turn (outer loops first: an inner loop's bounds
//     may depend on the outer iv).
// The iteration count follows Python's range(lb, ub, step), so a negative
// step counts down, as tl.static_range does.
#include "tritium/transforms/fold.h"
#include "tritium/transforms/passes.h"
#include "tritium/transforms/rewrite.h"

namespace tritium {
namespace {

constexpr int64_t kMaxIterations = 4096;
// Guards against nested static_ranges multiplying into a huge kernel.
constexpr int64_t kMaxClonedOps = 1 << 21;

bool isFullUnroll(const Operation *op) {
  if (op->code() != OpCode::For)
    return false;
  auto it = op->attrs().find("unroll");
  if (it == op->attrs().end())
    return false;
  auto *s = std::get_if<std::string>(&it->second);
  return s && *s == "full";
}

class Unroller {
public:
  Unroller(Function &f, PassStats &stats) : f_(f), stats_(stats) {}

  void run() {
    visitRegion(f_.body());
    rep_.applyTo(f_);
    graveyard_.clear();
  }

private:
  void visitRegion(Region &r) {
    for (auto &b : r.blocks())
      visitBlock(*b);
  }

  void visitBlock(Block &block) {
    auto &ops = block.ops();
    for (auto it = ops.begin(); it != ops.end();) {
      Operation *op = it->get();
      rep_.remapOperands(op);
      if (!isFullUnroll(op)) {
        for (unsigned i = 0; i < op->numRegions(); ++i)
          visitRegion(op->region(i));
        ++it;
        continue;
      }
      // Resume at the first op inserted in place of the loop.
      bool atBegin = it == ops.begin();
      auto before = atBegin ? ops.end() : std::prev(it);
      unroll(block, it);
      it = atBegin ? ops.begin() : std::next(before);
    }
  }

  int64_t constantBound(Operation *loop, unsigned i) {
    auto c = evaluateConstant(loop->operand(i));
    if (!c || c->isFloat())
      throw UserError("tl.static_range bounds must be constexpr", loop->loc());
    return c->asInt();
  }

  void unroll(Block &block, Block::iterator it) {
    Operation *loop = it->get();
    if (loop->numOperands() < 3 ||
        loop->numOperands() != 3 + loop->numResults() ||
        loop->numRegions() != 1 || loop->region(0).empty())
      throw InternalError("unroll: malformed scf.for");
    int64_t lb = constantBound(loop, 0), ub = constantBound(loop, 1),
            step = constantBound(loop, 2);
    if (step == 0)
      throw UserError("tl.static_range step must not be zero", loop->loc());
    // Python's len(range(lb, ub, step)), without overflow.
    __int128 span = step > 0 ? (__int128)ub - lb : (__int128)lb - ub;
    __int128 mag = step > 0 ? (__int128)step : -(__int128)step;
    __int128 trips = span <= 0 ? 0 : (span + mag - 1) / mag;
    if (trips > kMaxIterations)
      throw UserError("tl.static_range of " + std::to_string((int64_t)trips) +
                          " iterations exceeds the unrolling limit of " +
                          std::to_string(kMaxIterations),
                      loop->loc());

    Block &body = loop->region(0).front();
    Operation *yield = body.terminator();
    if (!yield || yield->numOperands() != loop->numResults())
      throw InternalError("unroll: scf.for body does not end with scf.yield");
    clonedOps_ += (int64_t)trips * (int64_t)body.ops().size();
    if (clonedOps_ > kMaxClonedOps)
      throw UserError("unrolling tl.static_range loops creates more than " +
                          std::to_string(kMaxClonedOps) + " ops",
                      loop->loc());

    const Type *ivType = body.argument(0)->type();
    if (!ivType->isScalar() || !isInteger(ivType->dtype()))
      throw InternalError("unroll: scf.for with a non-integer iv");
    std::vector<Value *> iters;
    for (unsigned i = 0; i < loop->numResults(); ++i)
      iters.push_back(loop->operand(3 + i));
    for (int64_t k = 0; k < (int64_t)trips; ++k) {
      std::map<Value *, Value *> map;
      int64_t iv = lb + k * step; // in range: it lies between lb and ub
      map[body.argument(0)] = insertConstant(
          block, it, ivType, ConstValue::ofInt(ivType->dtype(), (uint64_t)iv),
          loop->loc());
      for (unsigned i = 0; i < iters.size(); ++i)
        map[body.argument(i + 1)] = iters[i];
      for (auto &op : body.ops()) {
        if (op.get() == yield)
          break;
        block.insert(it, op->clone(map));
      }
      for (unsigned i = 0; i < iters.size(); ++i) {
        auto found = map.find(yield->operand(i));
        iters[i] = found == map.end() ? yield->operand(i) : found->second;
      }
    }
    for (unsigned i = 0; i < loop->numResults(); ++i)
      rep_.replace(loop->result(i), iters[i]);
    graveyard_.push_back(loop->detach());
    stats_.add("unroll.loops");
    stats_.add("unroll.iterations", (int64_t)trips);
  }

  Function &f_;
  PassStats &stats_;
  ValueReplacer rep_;
  std::vector<std::unique_ptr<Operation>> graveyard_;
  int64_t clonedOps_ = 0;
};

} // namespace

void unrollLoops(Module &m, const PipelineOptions &, PassStats &stats) {
  for (auto &f : m.functions())
    Unroller(*f, stats).run();
}

} // namespace tritium
