// --convert-to-gpu: tile IR -> GPU IR (a layout on every tensor). The
// algorithm is outlined in passes.h.
#include "tritium/analysis/axis_info.h"
#include "tritium/gpu/conversion.h"
#include "tritium/gpu/passes.h"
#include "tritium/ir/printer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <tuple>

namespace tritium::gpu {

namespace {

/// Union-find over the tensor values of a function.
struct Groups {
  std::map<Value *, Value *> parent;
  Value *find(Value *v) {
    auto it = parent.find(v);
    if (it == parent.end()) {
      parent[v] = v;
      return v;
    }
    if (it->second == v)
      return v;
    Value *r = find(it->second);
    parent[v] = r;
    return r;
  }
  void unite(Value *a, Value *b) {
    if (!a || !b || !a->type()->isTensor() || !b->type()->isTensor())
      return;
    Value *ra = find(a), *rb = find(b);
    if (ra != rb)
      parent[rb] = ra;
  }
};

enum class EdgeKind { Broadcast, ExpandDims, Reduce, Trans };

/// An op across which the layouts of its operand and result are related
/// (but not equal).
struct Edge {
  EdgeKind kind;
  Operation *op;
  Value *src, *dst;
};

struct Group {
  std::vector<Value *> members;
  std::vector<Operation *> anchors; // memory ops on tensors of pointers
  int64_t numElements = 0;
  int firstSeen = 0;
  const GPULayout *layout = nullptr;
};

struct Assigner {
  Function &f;
  int numWarps;
  PassStats &stats;
  AxisInfoAnalysis axis;
  Groups uf;
  std::vector<Value *> values; // every tensor value, in program order
  std::vector<Edge> edges;
  std::map<Value *, Group> groups; // by root
  std::map<Value *, unsigned> uses;
  /// Masks and `other`s not tied to their access (see collect).
  /// Each with the value whose layout it takes (a memory op's pointer, an
  /// elementwise op's result).
  std::vector<std::tuple<Operation *, unsigned, Value *>> loose;

  Assigner(Function &f, int numWarps, PassStats &stats)
      : f(f), numWarps(numWarps), stats(stats), axis(f) {}

  void note(Value *v) {
    if (!v->type()->isTensor())
      return;
    for (int64_t d : v->type()->shape())
      if (log2Exact(d) < 0) {
        Operation *def = v->definingOp();
        throw UserError("tensor shapes on the GPU must be powers of two, "
                        "found " +
                            v->type()->str(),
                        def ? def->loc() : f.loc());
      }
    uf.find(v);
    values.push_back(v);
  }

  void uniteAll(const std::vector<Value *> &vs) {
    for (size_t i = 1; i < vs.size(); ++i)
      uf.unite(vs[0], vs[i]);
  }

  /// Step 1: groups and edges.
  void collect(Block &b) {
    for (auto &a : b.arguments())
      note(a.get());
    for (auto &opPtr : b.ops()) {
      Operation &op = *opPtr;
      for (Value *r : op.results())
        note(r);
      for (unsigned i = 0; i < op.numRegions(); ++i)
        for (auto &blk : op.region(i).blocks())
          collect(*blk);
      std::vector<Value *> all = op.operands();
      for (Value *r : op.results())
        all.push_back(r);
      switch (op.code()) {
      case OpCode::Load:
      case OpCode::Store:
      case OpCode::AtomicRMW:
      case OpCode::AtomicCAS: {
        // The access's pointer, value and result share its layout. A mask
        // or `other` that another op uses too (the zero `other` CSE shares
        // between two loads of one shape) is not tied to this access: two
        // loads of different contiguity (attention's K^T and V) would
        // otherwise get one layout and one of them scalar accesses; the
        // shared operand is converted or rebuilt instead.
        std::vector<Value *> tied;
        for (size_t i = 0; i < all.size(); ++i) {
          bool maskOrOther = op.code() == OpCode::Load ? i == 1 || i == 2
                             : op.code() == OpCode::Store ? i == 2
                                                          : false;
          if (i < op.numOperands() && maskOrOther && uses[all[i]] > 1 &&
              all[i]->type()->isTensor()) {
            loose.push_back({&op, (unsigned)i, op.operand(0)});
            continue;
          }
          tied.push_back(all[i]);
        }
        uniteAll(tied);
        break;
      }
      case OpCode::Broadcast:
        edges.push_back(
            {EdgeKind::Broadcast, &op, op.operand(0), op.result(0)});
        break;
      case OpCode::ExpandDims:
        edges.push_back(
            {EdgeKind::ExpandDims, &op, op.operand(0), op.result(0)});
        break;
      case OpCode::Reduce:
        if (op.result(0)->type()->isTensor())
          edges.push_back({EdgeKind::Reduce, &op, op.operand(0), op.result(0)});
        break;
      case OpCode::Scan: // the results keep the operands' layout
        uniteAll(all);
        break;
      case OpCode::ReduceCombine: // one slice layout for all results
        uniteAll(op.operands());
        if (op.result(0)->type()->isTensor()) {
          uniteAll(op.results());
          edges.push_back({EdgeKind::Reduce, &op, op.operand(0), op.result(0)});
        }
        break;
      case OpCode::Trans:
        edges.push_back({EdgeKind::Trans, &op, op.operand(0), op.result(0)});
        break;
      case OpCode::Dot:
        // The accumulator and the result are one tile (the verifier wants one
        // type); the operands a and b are free.
        if (op.numOperands() > 2)
          uf.unite(op.operand(2), op.result(0));
        break;
      case OpCode::For: {
        Block &body = op.region(0).front();
        Operation *y = body.terminator();
        for (unsigned i = 0; i < op.numResults(); ++i)
          uniteAll({op.operand(3 + i), body.argument(1 + i), y->operand(i),
                    op.result(i)});
        break;
      }
      case OpCode::If:
        for (unsigned r = 0; r < 2; ++r) {
          if (op.region(r).empty())
            continue;
          Operation *y = op.region(r).front().terminator();
          for (unsigned i = 0; y && i < op.numResults(); ++i)
            uf.unite(op.result(i), y->operand(i));
        }
        break;
      case OpCode::While: {
        Block &before = op.region(0).front(), &after = op.region(1).front();
        Operation *cond = before.terminator(), *y = after.terminator();
        for (unsigned i = 0; i < op.numOperands(); ++i)
          uniteAll({op.operand(i), before.argument(i), y->operand(i)});
        for (unsigned i = 0; i < op.numResults(); ++i)
          uniteAll({cond->operand(i + 1), after.argument(i), op.result(i)});
        break;
      }
      default:
        if (layoutSupport(op.code()) != OpSupport::Handled)
          throw InternalError(std::string("convert-to-gpu: no layout rule "
                                          "for '") +
                              op.name() + "'");
        if (op.hasTrait(ELEM)) {
          // A splat or constant that other ops read too (CSE shares
          // `splat(Q)` between the pointers of q and of its transpose
          // q^T) is not tied to this op: it would give both accesses one
          // layout, and the one contiguous along the other dim scalar
          // accesses. It is converted, which remove-layout-conversions
          // turns into a splat or constant in the wanted layout.
          std::vector<Value *> tied;
          for (size_t i = 0; i < all.size(); ++i) {
            Operation *def =
                i < op.numOperands() ? all[i]->definingOp() : nullptr;
            if (def && all[i]->type()->isTensor() && uses[all[i]] > 1 &&
                (def->code() == OpCode::Splat ||
                 def->code() == OpCode::Constant)) {
              loose.push_back({&op, (unsigned)i, op.result(0)});
              continue;
            }
            tied.push_back(all[i]);
          }
          uniteAll(tied);
        }
        break;
      }
    }
  }

  void buildGroups() {
    int seen = 0;
    for (Value *v : values) {
      Group &g = groups[uf.find(v)];
      if (g.members.empty()) {
        g.firstSeen = seen++;
        g.numElements = v->type()->numElements();
      }
      g.members.push_back(v);
    }
    f.walk([&](Operation *op) {
      switch (op->code()) {
      case OpCode::Load:
      case OpCode::Store:
      case OpCode::AtomicRMW:
      case OpCode::AtomicCAS:
        if (op->operand(0)->type()->isTensor())
          groups[uf.find(op->operand(0))].anchors.push_back(op);
        break;
      case OpCode::DescriptorLoad:
        groups[uf.find(op->result(0))].anchors.push_back(op);
        break;
      default:
        break;
      }
    });
  }

  static bool isAtomic(const Operation *op) {
    return op->code() == OpCode::AtomicRMW || op->code() == OpCode::AtomicCAS;
  }

  /// The loops (scf.for, scf.while) around op.
  static int loopDepth(const Operation *op) {
    int n = 0;
    for (Operation *p = op->parentOp(); p; p = p->parentOp())
      n += p->code() == OpCode::For || p->code() == OpCode::While;
    return n;
  }

  /// Step 2: the blocked layout that coalesces a group's memory accesses.
  const GPULayout *coalesced(const Group &g) {
    const Type *t = g.members.front()->type();
    const auto &shape = t->shape();
    int rank = (int)shape.size();
    int64_t bestPerThread = 0;
    // A write's lanes must cover consecutive 16-byte pieces in one
    // instruction: L2 applies atomics and stores per 32-byte sector, and 32
    // bytes a lane (8 fp32 taken from a bf16 tile's layout) split over two
    // instructions leave each sector half written by both, twice the L2
    // traffic (there is no L1 to merge them, as there is for loads). Liger's
    // modulated_rms_norm backward (atomics): 149 us against Triton's 92,
    // then 88.6 against 87.8 with the cap; mhc_pre's bf16 backward (fp32
    // stores beside bf16 loads): 167 us against Triton's 131, then 128.9
    // against 130.1. The whole group takes the narrower width (its loads
    // stay coalesced, at 8 bytes a lane) when the write runs as often as
    // its loads do (as deep in loops): one atomic after a loop of loads
    // (attn_res's dW) does not narrow the loop.
    int64_t writeCap = INT64_MAX;
    int accessDepth = 0;
    for (Operation *op : g.anchors)
      if (op->code() == OpCode::Load || op->code() == OpCode::Store)
        accessDepth = std::max(accessDepth, loopDepth(op));
    std::vector<int64_t> bestOrder;
    for (Operation *op : g.anchors) {
      if (op->code() == OpCode::DescriptorLoad) {
        // A descriptor's block: its last dim is contiguous (stride 1) and
        // the block starts 16-byte aligned where the pipeliner copies it
        // with TMA (the layout is the copy's only where it does not).
        int64_t eb = storageBytes(op->result(0)->type()->element());
        int64_t perThread = std::min<int64_t>(shape[rank - 1], std::max<int64_t>(16 / eb, 1));
        if (perThread > bestPerThread) {
          bestPerThread = perThread;
          bestOrder.clear();
          for (int i = rank - 1; i >= 0; --i)
            bestOrder.push_back(i);
        }
        continue;
      }
      Value *ptr = op->operand(0);
      AxisInfo info = axis.get(ptr);
      // Most contiguous dim first; ties keep row-major order.
      std::vector<int64_t> order(rank);
      for (int i = 0; i < rank; ++i)
        order[i] = rank - 1 - i;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return info.contiguity[a] > info.contiguity[b];
      });
      int64_t d0 = order[0];
      int64_t eb = storageBytes(ptr->type()->element()->pointee());
      int64_t maxMultiple = std::max<int64_t>(info.divisibility[d0] / eb, 1);
      int64_t maxContig = std::min(info.contiguity[d0], shape[d0]);
      int64_t alignment = std::min(maxMultiple, maxContig);
      int64_t perThread =
          std::min<int64_t>(alignment, std::max<int64_t>(16 / eb, 1));
      if ((isAtomic(op) || op->code() == OpCode::Store) &&
          loopDepth(op) >= accessDepth)
        writeCap = std::min(writeCap, std::max<int64_t>(16 / eb, 1));
      if (perThread > bestPerThread) {
        bestPerThread = perThread;
        bestOrder = order;
      }
    }
    bestPerThread = std::min(bestPerThread, writeCap);
    int64_t threads = (int64_t)numWarps * kThreadsPerWarp;
    bestPerThread = std::min(bestPerThread,
                             std::max<int64_t>(t->numElements() / threads, 1));
    bestPerThread = int64_t(1)
                    << log2Floor(std::max<int64_t>(bestPerThread, 1));
    std::vector<int64_t> spt(rank, 1);
    spt[bestOrder[0]] = bestPerThread;
    return BlockedLayout::forShape(shape, spt, bestOrder, numWarps);
  }

  /// Elements per thread contiguous along dim d of `l` on `shape`: the
  /// register bases 1, 2, 4... along d.
  static int64_t perThreadAlong(const GPULayout *l,
                                const std::vector<int64_t> &shape, int d) {
    LinearLayout ll = l->toLinear(shape);
    int64_t n = 1;
    for (const Basis &b : ll.reg()) {
      bool unit = b[d] == n;
      for (size_t k = 0; k < b.size(); ++k)
        if ((int)k != d && b[k] != 0)
          unit = false;
      if (!unit)
        break;
      n *= 2;
    }
    return n;
  }

  /// Would layout l give group g's memory accesses fewer elements per thread
  /// along their contiguous dim than its own coalesced layout?
  bool narrower(const Group &g, const GPULayout *l) {
    const GPULayout *own = coalesced(g);
    const auto &shape = g.members.front()->type()->shape();
    auto *b = dynamic_cast<const BlockedLayout *>(own);
    if (!b || shape.empty())
      return false;
    int d = (int)b->order[0];
    return perThreadAlong(l, shape, d) < b->sizePerThread[d];
  }

  /// Would layout l make threads of group g hold copies of each other's
  /// elements where its own coalesced layout does not? A matmul's A tile
  /// (128 x 64) derived from C's 128-wide layout through the row offsets
  /// leaves half the lanes holding copies, and each copy is one more
  /// global load (24 cp.async per thread instead of 16).
  bool copies(const Group &g, const GPULayout *l) {
    const auto &shape = g.members.front()->type()->shape();
    auto dup = [&](const GPULayout *x) {
      LinearLayout ll = x->toLinear(shape);
      return ll.zeroBasesMask(kLane) != 0 || ll.zeroBasesMask(kWarp) != 0;
    };
    return dup(l) && !dup(coalesced(g));
  }

  /// Would layout l make a thread of group g issue more atomics than its
  /// own coalesced layout? A row sum's slice layout (tl.sum(x, 1) of a
  /// 32x128 tile) gives each owning thread 8 rows: 8 atomic instructions
  /// with one lane active, each behind its own fence for the default
  /// acq_rel, where spreading the 32 rows over the lanes takes one (one
  /// shared-memory conversion; Liger's mhc_pre backward: 254 us against
  /// Triton's 154).
  bool moreAtomics(const Group &g, const GPULayout *l) {
    if (std::none_of(g.anchors.begin(), g.anchors.end(), isAtomic))
      return false;
    const auto &shape = g.members.front()->type()->shape();
    return l->toLinear(shape).numRegs() >
           coalesced(g)->toLinear(shape).numRegs();
  }

  static int log2Floor(int64_t v) {
    int n = 0;
    while ((int64_t(2) << n) <= v)
      ++n;
    return n;
  }

  /// The layout `to` (an end of `e`) gets from the other end's layout
  /// `from`; null when nothing follows.
  static const GPULayout *derive(const Edge &e, bool toDst,
                                 const GPULayout *from) {
    switch (e.kind) {
    case EdgeKind::Broadcast:
      return from->kind() == GPULayout::Kind::Linear ? nullptr : from;
    case EdgeKind::ExpandDims: {
      int axis = (int)e.op->intAttr("axis");
      return toDst ? expandDimsLayout(from, axis)
                   : SliceLayout::get(axis, from);
    }
    case EdgeKind::Reduce: {
      int axis = (int)e.op->intAttr("axis");
      return toDst ? SliceLayout::get(axis, from)
                   : expandDimsLayout(from, axis);
    }
    case EdgeKind::Trans: {
      std::vector<int64_t> order = e.op->arrayAttr("order");
      if (!toDst) {
        std::vector<int64_t> inv(order.size());
        for (size_t i = 0; i < order.size(); ++i)
          inv[order[i]] = (int64_t)i;
        order = inv;
      }
      return permuteLayout(from, order);
    }
    }
    return nullptr;
  }

  /// Step 3: largest groups first; each one's layout flows to neighbours
  /// that have no memory access of their own, or a smaller one.
  void assign() {
    std::vector<Group *> order;
    for (auto &[root, g] : groups)
      order.push_back(&g);
    std::stable_sort(order.begin(), order.end(), [](Group *a, Group *b) {
      if (a->numElements != b->numElements)
        return a->numElements > b->numElements;
      if (a->anchors.empty() != b->anchors.empty())
        return !a->anchors.empty();
      return a->firstSeen < b->firstSeen;
    });
    std::map<Group *, std::vector<std::pair<const Edge *, bool>>> adj;
    for (const Edge &e : edges) {
      Group *s = &groups[uf.find(e.src)], *d = &groups[uf.find(e.dst)];
      adj[s].push_back({&e, true});  // from src, towards dst
      adj[d].push_back({&e, false}); // from dst, towards src
    }
    for (Group *g : order) {
      if (g->layout)
        continue;
      g->layout = g->anchors.empty()
                      ? BlockedLayout::defaultFor(
                            g->members.front()->type()->shape(), numWarps)
                      : coalesced(*g);
      int64_t originSize = g->numElements;
      std::deque<Group *> queue{g};
      while (!queue.empty()) {
        Group *cur = queue.front();
        queue.pop_front();
        for (auto [e, towardsDst] : adj[cur]) {
          Group *next = &groups[uf.find(towardsDst ? e->dst : e->src)];
          if (next->layout)
            continue;
          if (!next->anchors.empty() && next->numElements >= originSize)
            continue;
          const GPULayout *l = derive(*e, towardsDst, cur->layout);
          if (!l)
            continue;
          // A smaller group with memory accesses of its own takes the
          // neighbour's layout only if its accesses stay as wide (a matmul's
          // A tile must not inherit the 128-wide store layout of C through
          // the row offsets they share).
          if (!next->anchors.empty() &&
              (narrower(*next, l) || copies(*next, l) ||
               moreAtomics(*next, l)))
            continue;
          next->layout = l;
          queue.push_back(next);
        }
      }
    }
  }

  void apply() {
    for (auto &[root, g] : groups)
      for (Value *v : g.members) {
        v->setType(withLayout(v->type(), g.layout));
        stats.add("gpu.layouts-assigned");
      }
  }

  /// Step 4: conversions where the layouts across an edge disagree, and
  /// for loose operands (masks, `other`s, shared splats and constants).
  void reconcile() {
    for (auto [op, i, anchor] : loose) {
      const GPULayout *want = layoutOf(anchor->type());
      if (layoutOf(op->operand(i)->type()) != want) {
        op->operands()[i] = createLayoutConversion(op, op->operand(i), want);
        stats.add("gpu.conversions-inserted");
      }
    }
    for (const Edge &e : edges) {
      const GPULayout *src = layoutOf(e.src->type());
      const GPULayout *dst = layoutOf(e.dst->type());
      switch (e.kind) {
      case EdgeKind::Broadcast:
      case EdgeKind::ExpandDims:
      case EdgeKind::Trans: {
        const GPULayout *want = derive(e, false, dst);
        if (!want && e.kind == EdgeKind::Trans)
          continue; // moves through shared memory
        if (!want)
          want = BlockedLayout::defaultFor(e.src->type()->shape(), numWarps);
        if (want != src) {
          Value *c = createLayoutConversion(e.op, e.op->operand(0), want);
          e.op->operands()[0] = c;
          stats.add("gpu.conversions-inserted");
        }
        break;
      }
      case EdgeKind::Reduce: {
        const GPULayout *want = derive(e, true, src);
        if (want == dst)
          break;
        // The reduction produces its natural slice layout; a conversion
        // gives the users the layout their group agreed on.
        Operation *op = e.op;
        Block *b = op->parentBlock();
        auto next = std::next(b->find(op));
        if (next == b->ops().end())
          throw InternalError("convert-to-gpu: a reduce ends a block");
        // tt.reduce_combine: every result (one group) alike.
        for (Value *res : op->results()) {
          res->setType(withLayout(res->type(), want));
          Value *c = createLayoutConversion(next->get(), res, dst);
          Operation *conv = c->definingOp();
          // Every use but the conversion itself now reads the converted
          // value.
          f.walk([&](Operation *user) {
            if (user == conv)
              return;
            for (Value *&o : user->operands())
              if (o == res)
                o = c;
          });
          stats.add("gpu.conversions-inserted");
        }
        break;
      }
      }
    }
  }
};

bool hasGPULayouts(Function &f) {
  bool any = false;
  f.walk([&](Operation *op) {
    for (Value *r : op->results())
      any |= layoutOf(r->type()) != nullptr;
  });
  return any;
}

} // namespace

OpSupport layoutSupport(OpCode c) {
  unsigned traits = opInfo(c).traits;
  // Elementwise ops: operands and results share one layout.
  if (traits & ELEM)
    return OpSupport::Handled;
  switch (c) {
  // Rules of their own in Assigner::collect (a descriptor's block: an
  // anchor of its group, coalesced along its last dim).
  case OpCode::DescriptorLoad:
  case OpCode::Load:
  case OpCode::Store:
  // A descriptor store kept for TMA (sm_90a) takes its value in any layout
  // (lower-tma-stores writes it to shared memory): no anchor.
  case OpCode::DescriptorStore:
  case OpCode::AtomicRMW:
  case OpCode::AtomicCAS:
  case OpCode::Broadcast:
  case OpCode::ExpandDims:
  case OpCode::Reduce:
  case OpCode::ReduceCombine:
  case OpCode::Scan:
  case OpCode::Trans:
  case OpCode::Dot:
  case OpCode::For:
  case OpCode::If:
  case OpCode::While:
  // Free on purpose: a result whose layout nothing ties to its operand
  // (created values, a reshape, an existing conversion) gets its group's
  // layout, and a conversion joins it to its users; scalars and terminators
  // have no layout (their parent op ties the values).
  case OpCode::Constant:
  case OpCode::MakeRange:
  case OpCode::Splat:
  case OpCode::Reshape:
  case OpCode::ConvertLayout:

  case OpCode::GetProgramId:
  case OpCode::GetNumPrograms:
  case OpCode::Return:
  case OpCode::Yield:
  case OpCode::Condition:
  case OpCode::CombineReturn:
  case OpCode::Print:
  case OpCode::Assert:
  // tl.debug_barrier: no operands, no results, nothing to lay out.
  case OpCode::GPUBarrier:
    return OpSupport::Handled;
  // Layouts are chosen per function; the pipeline inlines calls first.
  case OpCode::Call:
  case OpCode::MemDescIndex: // GPU IR only, like the ops below
  case OpCode::MemDescTrans:
    return OpSupport::Rejected;
  default:
    // Shared memory, async copies and barriers exist only in GPU IR, made
    // by GPU passes after layouts are assigned; convert-to-gpu leaves a
    // function that already has layouts alone.
    if (opInfo(c).traits & SHARED)
      return OpSupport::Rejected;
    return OpSupport::Missing;
  }
}

bool isLayoutConversion(const Operation &op) {
  return op.code() == OpCode::ConvertLayout;
}

bool isZeroConstant(Value *v) {
  Operation *d = v->definingOp();
  while (d && isLayoutConversion(*d))
    d = d->operand(0)->definingOp();
  if (!d || d->code() != OpCode::Constant)
    return false;
  const Attribute &a = d->attrs().at("value");
  if (auto *i = std::get_if<int64_t>(&a))
    return *i == 0;
  if (auto *x = std::get_if<double>(&a))
    return *x == 0.0 && !std::signbit(*x);
  return false;
}

Value *createLayoutConversion(Operation *before, Value *v, const GPULayout *l) {
  auto op = Operation::create(OpCode::ConvertLayout, {v},
                              {withLayout(v->type(), l)}, {}, before->loc());
  Block *b = before->parentBlock();
  return b->insert(b->find(before), std::move(op))->result(0);
}

void convertToGPU(Module &m, const PipelineOptions &opts, PassStats &stats) {
  for (auto &fn : m.functions()) {
    Function &f = *fn;
    if (hasGPULayouts(f))
      continue;
    int nw = opts.numWarps;
    auto it = f.attrs().find("num_warps");
    if (it != f.attrs().end() && std::holds_alternative<int64_t>(it->second))
      nw = (int)std::get<int64_t>(it->second);
    if (nw < 1 || nw > 32 || log2Exact(nw) < 0)
      throw UserError("num_warps must be a power of two from 1 to 32, found " +
                          std::to_string(nw),
                      f.loc());
    // Layouts are chosen per function: a call would pass tensors across with
    // layouts nobody agreed on. The pipeline inlines every call first.
    f.walk([&](Operation *op) {
      if (layoutSupport(op->code()) == OpSupport::Rejected)
        throw UserError("convert-to-gpu needs every call inlined first (run "
                        "the inline pass): found '" +
                            std::string(op->name()) + "'",
                        op->loc());
    });
    f.attrs()["num_warps"] = int64_t(nw);
    Assigner a(f, nw, stats);
    a.uses = countUses(f);
    a.collect(f.entry());
    a.buildGroups();
    a.assign();
    a.apply();
    a.reconcile();
    // A function that returns tensors returns them in the layouts they got.
    Block &entry = f.entry();
    if (!entry.ops().empty() && entry.ops().back()->code() == OpCode::Return) {
      Operation *ret = entry.ops().back().get();
      for (size_t i = 0; i < ret->numOperands() && i < f.resultTypes().size(); ++i)
        f.resultTypes()[i] = ret->operand((unsigned)i)->type();
    }
  }
}

} // namespace tritium::gpu
