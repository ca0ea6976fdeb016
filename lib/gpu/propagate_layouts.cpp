// --propagate-layouts: see passes.h.
//
// accelerate-matmul gives a dot's result the mma layout and converts it back
// to the blocked layout convert-to-gpu chose for everything downstream. When
// that downstream is an online softmax (attention: scale, mask, row max,
// exp2, row sum, rescale the accumulator, the next dot), the conversions sit
// in the loop and the loop-carried row statistics and accumulator stay
// blocked, so every iteration pays several trips through shared memory.
//
// For a conversion c: x (layout L) -> y, this pass tries to give y's whole
// forward web layouts derived from L instead: elementwise ops keep the
// layout, a reduction along axis a takes slice(L, a), expand_dims of such a
// slice takes its parent again, broadcasts keep it, and a value yielded by a
// loop ties the loop's iter_arg and result to it (the init then arrives
// converted), as does a value a loop starts from (the yield then arrives
// converted). Where the web meets other code it converts: operands flowing
// in are rebuilt when cheap (the next remove-layout-conversions does that)
// or converted; uses outside the web (stores, reshapes...) get a conversion
// back to the layout they had; shared-memory stores (local_alloc) take any
// layout. The rewrite is kept only when it removes more conversion work
// than it adds, counted in elements moved, 16x per enclosing loop; a tie
// keeps the IR as it was (so the plain matmul epilogue is left to the
// sinking of remove-layout-conversions).
#include "tritium/gpu/conversion.h"
#include "tritium/gpu/linear_layout.h"
#include "tritium/gpu/passes.h"

#include <deque>
#include <map>
#include <set>

namespace tritium::gpu {

namespace {

constexpr size_t kMaxWebValues = 1024;

int64_t numel(const Type *t) {
  int64_t n = 1;
  if (t->isTensor())
    for (int64_t s : t->shape())
      n *= s;
  return n;
}

/// The cost of a conversion before `at` of a value of type `t`: elements
/// moved, 16x per loop around `at`. A conversion that only renames
/// registers costs nothing.
int64_t loopWeight(Operation *at, int64_t w) {
  for (Operation *p = at->parentOp(); p; p = p->parentOp())
    if (p->code() == OpCode::For || p->code() == OpCode::While)
      w *= 16;
  return w;
}

int64_t conversionCost(Operation *at, const Type *from, const GPULayout *to) {
  const Type *dst = withLayout(from, to);
  if (from == dst)
    return 0;
  if (planMovement(from, dst, rowMajorStrides(from->shape())).inRegisters)
    return 0;
  return loopWeight(at, numel(from));
}

/// Uses of every value of `f`, in walk order.
using UseMap = std::map<Value *, std::vector<std::pair<Operation *, unsigned>>>;

UseMap collectUses(Function &f) {
  UseMap uses;
  f.walk([&](Operation *op) {
    for (unsigned i = 0; i < op->numOperands(); ++i)
      uses[op->operand(i)].push_back({op, i});
  });
  return uses;
}

bool isElementwise(const Operation &op) {
  return op.hasTrait(ELEM) && op.hasTrait(PURE) && op.numResults() == 1 &&
         !op.numRegions() && op.result(0)->type()->isTensor();
}

/// Whether `l` is, or is a slice of, an mma or dot-operand layout.
bool hasMmaRoot(const GPULayout *l) {
  while (auto *s = dynamic_cast<const SliceLayout *>(l))
    l = s->parent;
  return l->kind() == GPULayout::Kind::NvidiaMma ||
         l->kind() == GPULayout::Kind::DotOperand;
}

/// The web of one conversion: each value's new layout, the operands that
/// flow into it from outside, the uses outside it.
struct Web {
  std::map<Value *, const GPULayout *> layout;
  std::vector<Value *> order; // insertion order, for a stable rewrite
  std::vector<std::pair<Operation *, unsigned>> ins, outs;
  std::vector<Operation *> freed; // conversions that become no-ops
  bool ok = true;

  void add(Value *v, const GPULayout *l, std::deque<Value *> &work) {
    if (!l || !layoutOf(v->type())) {
      ok = false;
      return;
    }
    auto [it, fresh] = layout.insert({v, l});
    if (!fresh) {
      if (it->second != l)
        ok = false; // two layouts meet: not a web of one layout
      return;
    }
    order.push_back(v);
    if (layout.size() > kMaxWebValues)
      ok = false;
    work.push_back(v);
  }

  void build(Operation *c, const UseMap &uses) {
    std::deque<Value *> work;
    freed.push_back(c);
    add(c->result(0), layoutOf(c->operand(0)->type()), work);
    while (ok && !work.empty()) {
      Value *v = work.front();
      work.pop_front();
      const GPULayout *l = layout.at(v);
      auto it = uses.find(v);
      if (it == uses.end())
        continue;
      for (auto [u, i] : it->second)
        visitUse(l, u, i, work);
    }
  }

  void visitUse(const GPULayout *l, Operation *u, unsigned i,
                std::deque<Value *> &work) {
    if (isLayoutConversion(*u)) {
      // A conversion between two layouts of convert-to-gpu's (blocked, or
      // slices of blocked) is looked through: its result joins the web and
      // the conversion goes. One to an instruction's layout (a dot operand,
      // another mma) stays, converting from the new layout.
      const GPULayout *to = layoutOf(u->result(0)->type());
      if (to == l || !hasMmaRoot(to)) {
        freed.push_back(u);
        add(u->result(0), l, work);
      }
      return;
    }
    if (u->code() == OpCode::LocalAlloc)
      return; // a shared-memory store takes any distributed layout
    if (isElementwise(*u)) {
      add(u->result(0), l, work);
      for (unsigned j = 0; j < u->numOperands(); ++j)
        if (j != i)
          ins.push_back({u, j});
      return;
    }
    switch (u->code()) {
    case OpCode::Reduce:
      if (u->numOperands() == 1 && u->numResults() == 1 &&
          u->result(0)->type()->isTensor()) {
        add(u->result(0), SliceLayout::get((int)u->intAttr("axis"), l), work);
        return;
      }
      break;
    case OpCode::ExpandDims:
      if (const GPULayout *p = expandDimsLayout(l, (int)u->intAttr("axis"))) {
        add(u->result(0), p, work);
        return;
      }
      break;
    case OpCode::Broadcast:
      add(u->result(0), l, work);
      return;
    case OpCode::Yield: {
      Operation *loop = u->parentOp();
      if (loop && loop->code() == OpCode::For) {
        Block &body = loop->region(0).front();
        add(body.argument(1 + i), l, work);
        add(loop->result(i), l, work);
        ins.push_back({loop, 3 + i});
        return;
      }
      break;
    }
    case OpCode::For:
      if (i >= 3) {
        // A loop's init: the mirror of a yield. The slot's iter_arg and
        // result take the layout, and the value the body yields for it
        // arrives in it. (Taken as a use outside the web, the init was
        // converted back while a yield in the web retyped the iter_arg:
        // a loop whose init and iter_arg disagreed.)
        Block &body = u->region(0).front();
        add(body.argument(1 + (i - 3)), l, work);
        add(u->result(i - 3), l, work);
        ins.push_back({body.terminator(), i - 3});
        return;
      }
      break;
    default:
      break;
    }
    outs.push_back({u, i});
  }

  /// The layout operand `i` of web op `op` must arrive in.
  const GPULayout *wanted(Operation *op, unsigned i) const {
    if (op->code() == OpCode::For)
      return layout.at(op->result(i - 3));
    if (op->code() == OpCode::Yield)
      return layout.at(op->parentOp()->result(i));
    return layout.at(op->result(0));
  }
};

/// Conversion work removed minus work added if `web` is applied.
int64_t gain(const Web &web) {
  int64_t g = 0;
  for (Operation *c : web.freed)
    g += conversionCost(c, c->operand(0)->type(),
                        layoutOf(c->result(0)->type()));
  for (auto [op, i] : web.ins) {
    Value *v = op->operand(i);
    const GPULayout *want = web.wanted(op, i);
    if (auto it = web.layout.find(v); it != web.layout.end()) {
      g -= conversionCost(op, withLayout(v->type(), it->second), want);
      continue;
    }
    // Rebuilt by remove-layout-conversions, perhaps from small converted
    // leaves (a loaded vector broadcast onto the tile).
    if (int64_t leaves = rematerializationCost(v, want); leaves >= 0) {
      g -= loopWeight(op, leaves);
      continue;
    }
    g -= conversionCost(op, v->type(), want);
  }
  for (auto [op, i] : web.outs) {
    Value *v = op->operand(i);
    g -= conversionCost(op, withLayout(v->type(), web.layout.at(v)),
                        layoutOf(v->type()));
  }
  return g;
}

void apply(const Web &web, PassStats &stats) {
  // Operands flowing in and uses flowing out, read before any retyping.
  std::vector<std::tuple<Operation *, unsigned, const GPULayout *>> convIn,
      convOut;
  for (auto [op, i] : web.ins) {
    Value *v = op->operand(i);
    const GPULayout *want = web.wanted(op, i);
    auto it = web.layout.find(v);
    const GPULayout *has = it != web.layout.end() ? it->second : layoutOf(v->type());
    if (v->type()->isTensor() && has != want)
      convIn.push_back({op, i, want});
  }
  for (auto [op, i] : web.outs)
    convOut.push_back({op, i, layoutOf(op->operand(i)->type())});
  for (Value *v : web.order)
    v->setType(withLayout(v->type(), web.layout.at(v)));
  for (auto [op, i, l] : convIn)
    op->operands()[i] = createLayoutConversion(op, op->operand(i), l);
  for (auto [op, i, l] : convOut)
    op->operands()[i] = createLayoutConversion(op, op->operand(i), l);
  stats.add("gpu.layout-webs");
  stats.add("gpu.layout-web-values", (int64_t)web.order.size());
  stats.add("gpu.conversions-inserted", (int64_t)(convIn.size() + convOut.size()));
}

} // namespace

void propagateLayouts(Module &m, const PipelineOptions &, PassStats &stats) {
  for (auto &fn : m.functions()) {
    Function &f = *fn;
    // One web can make another pay off (attention: once the second dot's
    // accumulator is carried in its mma layout, the row statistics of the
    // first dot's web meet it without a conversion), so rounds run until
    // none applies.
    for (int round = 0; round < 4; ++round) {
      std::vector<Operation *> roots;
      f.walk([&](Operation *op) {
        if (isLayoutConversion(*op) && layoutOf(op->operand(0)->type()) &&
            layoutOf(op->operand(0)->type())->kind() ==
                GPULayout::Kind::NvidiaMma)
          roots.push_back(op);
      });
      bool changed = false;
      for (Operation *c : roots) {
        // An earlier web may have retyped this conversion's result already.
        if (layoutOf(c->result(0)->type()) == layoutOf(c->operand(0)->type()))
          continue;
        Web web;
        web.build(c, collectUses(f));
        if (web.ok && gain(web) > 0) {
          apply(web, stats);
          changed = true;
        }
      }
      if (!changed)
        break;
    }
  }
}

} // namespace tritium::gpu
