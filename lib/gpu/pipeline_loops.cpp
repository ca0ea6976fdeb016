// --pipeline: software pipelining of the loads that feed shared memory (see
// passes.h).
//
// The input, in an scf.for body (accelerate-matmul leaves every tt.dot
// operand so):
//   %x = tt.load %ptr[, %mask[, %other]]    -- its only user is
//   %m = ttg.local_alloc %x                 -- read only by ttg.local_load
//                                              or ttng.warp_group_dot
// or, for a tile the kernel transposes (tl.dot(a, b.T)), a tt.trans between
// the two: the buffers then hold the tile as loaded (the alloc's layout
// with its dims permuted back) and the reads take a ttg.memdesc_trans view
// of the buffer, so the copy is the same cp.async as for any other tile.
// With S = num_stages buffers and a lookahead of D = S-1 iterations the
// loop becomes
//   %bufs = ttg.local_alloc : !ttg.memdesc<S x tile, mutable>   (per load)
//   copies of iterations 0..D-1 into buffers 0..D-1, one commit group each
//   scf.for ... (iter args ..., %read = 0, %write = D) {
//     ttg.async_wait {num = D-1}      -- the group of this iteration is done
//     copies of iteration i+D into buffer %write; one commit group
//     ... ttg.local_load (ttg.memdesc_index %bufs, %read), %wait ...
//     scf.yield ..., (%read + 1) mod S, %read
//   }
//   ttg.async_wait {num = 0}; ttg.local_dealloc %bufs
// Every buffer but the one being read is being filled. Where a
// ttng.warp_group_dot reads the buffers and carries its accumulator to the
// next iteration, it becomes {async = true}: the emitter leaves its group in
// flight (wgmma.wait_group 1), so the wgmma of iteration i-1 may still read
// buffer (i-1) mod S = (i+D) mod S when iteration i starts. The copies of
// iteration i+D then go after the last such dot, whose wait_group 1 retired
// the wgmma of iteration i-1 (insert-barriers puts a barrier between them,
// so that every warp's retired too): the order Triton uses, with the same
// S buffers, so a config takes the shared memory it takes there.
//
// A tensor descriptor's block (tt.descriptor_load, which expand-descriptor-
// loads keeps on sm_90a where TMA can copy it) is a candidate too, copied
// with TMA instead: S mbarriers beside the S buffers (initialised by one
// thread before the prologue, then a barrier), and in place of a commit
// group a stage's thread-0 arrival expecting the bytes of all its TMA
// copies (ttng.barrier_expect) and one ttng.async_tma_copy_global_to_local
// a tile, both predicated on the iteration running; in place of the
// async_wait, a wait for %read's mbarrier at the phase parity the loop
// carries (flipped each time %read wraps). The buffer's layout must be one
// a tensor map's swizzle writes (tmaSwizzleBytes). After the loop a barrier
// (no thread may still wait) and the mbarriers are invalidated. In a
// 2-stage loop, tiles read first by different ops of the body get
// mbarriers of their own, and a later one's wait goes just before its
// reader (groupTMACopies: attention's V completes during q @ k^T and the
// softmax).
// Empty barriers: in a kernel of several warpgroups whose pipelined copies
// are all TMA, the copies into the buffer the previous iteration read would
// otherwise need a barrier of the whole block first (another warpgroup's
// wgmma may still read it), where the leading warpgroup waits for the
// other's softmax each iteration (5-8 % of the attention forward at
// 128x128 on 8 warps, H100, twenty-seventh session). Instead S more
// mbarriers, one arrival a warp: at the copy point every warp arrives on
// %write's (its wait_group has retired its reads of that buffer), the last
// warpgroup waits for the phase, and its first thread issues the copies
// ({warpgroup = W} on the expect and the copies; insert-barriers then puts
// no barrier before them). The phase of %write's empty barrier at
// iteration i is floor(i / S) mod 2, that of %read's full barrier. No
// warpgroup can arrive twice on one before the issuer waited: its next
// arrival there is S iterations later, past a full-barrier wait for copies
// the issuer makes only after this wait.
//
// Outline:
//  0. In a loop that qualifies (1, 2), the vectors its other ops read are
//     first rewritten into that form (load, local_alloc, local_load): see
//     "step 0" below. Kept only where the kernel still fits shared memory.
//  1. The loop qualifies when it is innermost, its step is a positive
//     constant, its induction variable a signed integer, and its body
//     neither writes global memory nor calls (the loads move ahead of the
//     body's other accesses by D iterations).
//  2. Candidates: tt.load ops directly in the body whose only user is a
//     ttg.local_alloc read only by ttg.local_load and ttng.warp_group_dot
//     ops (as an A or B operand). Each one's "slice":
//     the body ops computing its pointer, mask and other, closed over the
//     loop-carried values they read (an iter arg read brings in the ops of
//     its yielded value). Every slice op must be pure, regionless and
//     cheap to run for an iteration that does not exist (no division, which
//     might trap in the executor); a candidate whose slice is not is left
//     as it was (a pointer loaded in the body, or produced by an scf.if).
//     Then the lookahead D (above), and which wgmmas may be async: those
//     whose A and B are pipelined buffers or defined outside the loop; none
//     in a 2-stage loop of several wgmmas in a kernel of several
//     warpgroups (syncTwoStageLoop: the copies then go at the top).
//  3. Values of iteration i+D: the slice is cloned with the induction
//     variable iv + D*step and "ahead" iter args that hold the
//     loop-carried values of iteration i+D. Carried, not recomputed:
//     recomputing p(i+D) from p(i) needs to know the update is p + an
//     invariant, while carrying works for any pure update chain. An iter arg
//     that only the slice reads (the usual pointer) is itself moved ahead
//     (its init becomes its value at iteration D, its yield the ahead
//     update) and costs nothing more; one read elsewhere, or whose loop
//     result is used, keeps its value and gets an ahead copy.
//  4. Prologue, before the loop: the multi-buffered allocations; for
//     j = 0..D-1 the slice cloned for iteration j (iv = lb + j*step, iter
//     args through j clones of their update) and its copies into buffer j,
//     masked off where iteration j does not run, one commit group per j.
//  5. Body: the wait, the slice for i+D and its copies into buffer
//     %write (= (i+D) mod S = (i-1) mod S, read by iteration i-1), masked
//     off past the end: at the top of the body, where every thread's reads
//     of iteration i-1 are done once it passed the barrier insert-barriers
//     puts after the wait; after the last async wgmma, whose wait_group 1
//     retired the wgmma of iteration i-1 (and a barrier follows it).
//     The local_alloc's result is replaced by buffer %read; the local_loads
//     take the wait's token; the wgmmas are ordered after the wait by
//     program order. The original tt.load and local_alloc are erased, and
//     so are the slice ops left without users. The buffer indices: %read is
//     i mod S, advanced by an increment and a wrap; %write is the %read of
//     the iteration before, carried through an iter arg. Carrying costs a
//     register move where computing (%read + D) mod S would cost an add, a
//     compare and a select per iteration.
//  6. After the loop: wait for every group, deallocate the buffers. (The
//     wgmma of the last iteration may still be in flight when the loop
//     exits: the emitter retires it, wait_group 0, before the ops after
//     the loop, which may reuse the buffers' bytes.)
// "Iteration k runs" is decided without overflow: in the body iv < ub, so
// ub - iv fits the unsigned type of the IV, and iteration i+k runs exactly
// when (ub - iv) >u k*step; in the prologue, lb < ub and (ub - lb) >u j*step.
#include "tritium/gpu/passes.h"

#include "tritium/gpu/conversion.h"
#include "tritium/gpu/layouts.h"
#include "tritium/gpu/shared_layouts.h"
#include "tritium/gpu/shared_memory.h"

#include "tritium/transforms/rewrite.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace tritium::gpu {

namespace {

constexpr int64_t kMaxStages = 32;

/// Registers a thread may hold across a pipelined loop for the invariant
/// address arithmetic the pipeliner moves in front of it (see
/// hoistInvariantSlice). The persistent descriptor matmul holds 48 at
/// 128x256x64 (8 warps: 12 row pointers and their 12 row bounds; K loop 205
/// -> 115 SASS instructions, 196 -> 204 registers) and 64 at 128x128x64 (4
/// warps: 289 -> 150, 190 -> 217); a block pointer with a runtime last
/// stride would hold 132-260, and stays as it was (ptxas 13.0, sm_90a).
constexpr int64_t kHoistBudget = 64;

std::optional<int64_t> intConstant(Value *v) {
  Operation *def = v->definingOp();
  if (!def || def->code() != OpCode::Constant ||
      !def->result(0)->type()->isScalar())
    return std::nullopt;
  auto it = def->attrs().find("value");
  if (it == def->attrs().end())
    return std::nullopt;
  if (const int64_t *i = std::get_if<int64_t>(&it->second))
    return *i;
  return std::nullopt;
}

/// One ttg.local_alloc of a candidate's loaded tile, and what reads it.
struct AllocUse {
  // A tt.trans between the load and the alloc (tl.dot(a, b.T) where b is
  // loaded N x K): the reads then see the buffer through a memdesc_trans.
  Operation *trans = nullptr;
  Operation *alloc = nullptr;
  std::vector<Operation *> reads; // local_loads and wgmmas of the alloc
};

struct Candidate {
  Operation *load;
  // Usually one; a tile used both as loaded and transposed (the attention
  // backward's tl.dot(k, qT) and tl.dot(dsT, tl.trans(qT))) has two, which
  // share the buffers when their layouts agree on the bytes.
  std::vector<AllocUse> uses;
  // One buffer as the copies write it: the loaded tile's shape, each use's
  // layout seen through the inverse of its permutation.
  const Type *bufType = nullptr;
  // A tt.descriptor_load: copied with TMA (ttng.async_tma_copy_global_to_local,
  // completing on the stage's mbarrier) instead of cp.async.
  bool tma = false;
};

/// The buffer type through which `use` reads a tile of `loaded` type, in
/// the loaded tile's dims (mutable); null when the alloc's layout has no
/// form with the permutation undone.
const Type *bufferTypeOf(const AllocUse &use, const Type *loaded) {
  const Type *md = use.alloc->result(0)->type();
  if (!use.trans)
    return Type::memdesc(md->element(), md->shape(), md->layout(), true);
  const auto &order = use.trans->arrayAttr("order");
  std::vector<int64_t> inv(order.size());
  for (size_t k = 0; k < order.size(); ++k)
    inv[order[k]] = (int64_t)k;
  const Layout *l = md->layout()->permuted(inv);
  if (!l || l->checkMemDesc(loaded->element(), loaded->shape()) != "")
    return nullptr;
  return Type::memdesc(md->element(), loaded->shape(), l, true);
}

/// What step 1-3 decided for one loop.
struct Plan {
  Operation *loop = nullptr;
  int stages = 0;
  std::vector<Operation *> asyncDots; // the wgmmas to mark {async = true}
  int64_t step = 0;
  std::vector<Candidate> loads;
  std::vector<size_t> issueOrder; // indices into loads: the copies' order
  std::set<Operation *> slice;
  std::set<unsigned> ahead;   // iter args (0-based) the slice reads
  std::set<unsigned> shifted; // those of `ahead` moved ahead in place
};

Block &bodyOf(Operation *loop) { return loop->region(0).front(); }

/// Whether `v` is defined by an op nested in `loop` or is one of the block
/// arguments of its regions.
bool definedInside(Operation *loop, Value *v) {
  Operation *op = v->isBlockArg() ? v->ownerBlock()->parentOp()
                                  : v->definingOp();
  for (; op; op = op->parentOp())
    if (op == loop)
      return true;
  return false;
}

/// Ops that may run for an iteration that does not exist, and are worth
/// running twice.
bool sliceable(const Operation &op) {
  if (!op.hasTrait(PURE) || op.numRegions() != 0)
    return false;
  switch (op.code()) {
  case OpCode::DivSI:
  case OpCode::DivUI:
  case OpCode::RemSI:
  case OpCode::RemUI:
  case OpCode::Dot:
  case OpCode::Reduce:
    return false;
  default:
    return true;
  }
}

/// Step 2 for one value: adds what computing `v` at the top of the body
/// needs to `ops` and `iters`; false when some of it cannot run ahead.
bool collectSlice(Operation *loop, Value *v, std::set<Operation *> &ops,
                  std::set<unsigned> &iters) {
  Block &body = bodyOf(loop);
  Operation *yield = body.terminator();
  std::vector<Value *> work{v};
  while (!work.empty()) {
    Value *x = work.back();
    work.pop_back();
    if (x->isBlockArg()) {
      if (x->ownerBlock() != &body || x->index() == 0)
        continue; // defined outside the loop, or the induction variable
      if (iters.insert(x->index() - 1).second)
        work.push_back(yield->operand(x->index() - 1));
      continue;
    }
    Operation *def = x->definingOp();
    if (def->parentBlock() != &body)
      continue; // loop-invariant (a top-level body op sees no nested value)
    if (!sliceable(*def))
      return false;
    if (ops.insert(def).second)
      for (Value *o : def->operands())
        work.push_back(o);
  }
  return true;
}

/// Step 1 and the candidates of step 2.
std::optional<Plan> analyze(Function &f, Operation *loop, int stages) {
  Plan p;
  p.loop = loop;
  p.stages = stages;
  Block &body = bodyOf(loop);
  bool innermostPure = true;
  for (auto &op : body.ops())
    op->walk([&](Operation *o) {
      if (o->code() == OpCode::For || o->code() == OpCode::While ||
          o->code() == OpCode::Call ||
          (o->hasTrait(WRITE) && o->hasTrait(GLOBAL)))
        innermostPure = false;
    });
  if (!innermostPure)
    return std::nullopt;
  const Type *ivType = loop->operand(0)->type();
  if (!ivType->isScalar() || (ivType->dtype() != DType::I32 &&
                              ivType->dtype() != DType::I64))
    return std::nullopt;
  std::optional<int64_t> step = intConstant(loop->operand(2));
  int64_t ivMax = ivType->dtype() == DType::I32
                      ? std::numeric_limits<int32_t>::max()
                      : std::numeric_limits<int64_t>::max();
  // D*step (D <= S-1) must be a positive value of the IV's type.
  if (!step || *step <= 0 || *step > ivMax / (stages - 1))
    return std::nullopt;
  p.step = *step;

  // Users of every value, by walking the function once.
  std::map<Value *, std::vector<Operation *>> users;
  f.walk([&](Operation *o) {
    for (Value *v : o->operands())
      users[v].push_back(o);
  });
  for (auto &opPtr : body.ops()) {
    Operation *ld = opPtr.get();
    bool tma = ld->code() == OpCode::DescriptorLoad;
    if (!tma && (ld->code() != OpCode::Load || ld->hasAttr("volatile")))
      continue;
    const Type *ptrType = ld->operand(0)->type();
    if (!tma && !ptrType->isTensor())
      continue;
    // Every user of the load is an alloc in the body, directly or through
    // one tt.trans, and every alloc is only read; all see the same bytes.
    Candidate c{ld, {}, nullptr, tma};
    bool onlyReads = !users[ld->result(0)].empty();
    for (Operation *u : users[ld->result(0)]) {
      AllocUse use;
      use.alloc = u;
      if (u->code() == OpCode::Trans && u->parentBlock() == &body) {
        const auto &tu = users[u->result(0)];
        use.trans = u;
        use.alloc = tu.size() == 1 ? tu[0] : nullptr;
      }
      Operation *alloc = use.alloc;
      if (!alloc || alloc->code() != OpCode::LocalAlloc ||
          alloc->parentBlock() != &body || alloc->numOperands() != 1 ||
          alloc->result(0)->type()->isMultiBuffered()) {
        onlyReads = false;
        break;
      }
      const Type *buf = bufferTypeOf(use, ld->result(0)->type());
      if (!buf || (c.bufType && buf != c.bufType)) {
        onlyReads = false;
        break;
      }
      c.bufType = buf;
      for (Operation *r : users[alloc->result(0)]) {
        // A local_load, or a wgmma reading the buffer as one of its operands.
        onlyReads = onlyReads &&
                    ((r->code() == OpCode::LocalLoad && r->numOperands() == 1 &&
                      r->operand(0) == alloc->result(0)) ||
                     (r->code() == OpCode::WarpGroupDot &&
                      r->operand(2) != alloc->result(0)));
        use.reads.push_back(r);
      }
      c.uses.push_back(std::move(use));
    }
    if (!onlyReads)
      continue;
    // TMA writes its boxes in a tensor map's swizzle: the buffer's layout
    // must be one of those (a tile copied for wgmma is).
    if (tma && !tmaSwizzleBytes(c.bufType))
      continue;
    // The copy takes the load's mask and other as they are.
    if (!tma) {
      const Type *val = ptrType->withElement(ptrType->element()->pointee());
      if (ld->result(0)->type() != val ||
          (ld->numOperands() > 1 &&
           ld->operand(1)->type() != ptrType->withElement(Type::scalar(DType::I1))) ||
          (ld->numOperands() > 2 && ld->operand(2)->type() != val))
        continue;
    }
    std::set<Operation *> ops = p.slice;
    std::set<unsigned> iters = p.ahead;
    bool ok = true;
    for (Value *o : ld->operands())
      ok = ok && collectSlice(loop, o, ops, iters);
    if (!ok)
      continue;
    p.slice = std::move(ops);
    p.ahead = std::move(iters);
    p.loads.push_back(std::move(c));
  }
  if (p.loads.empty())
    return std::nullopt;
  // The copies of a wgmma's B operand issue first, then the rest in program
  // order. Measured on the H200 (the tutorial matmul, 128x256x64, 8 warps,
  // fp16/bf16 4096 and 8192, copies reordered in the PTX): 7 of 8 cases
  // 0.4-2.1 % faster. ptxas keeps the A tile's 64-bit pointers in unpaired
  // registers and copies each into one scratch pair before its cp.async,
  // which waits for the previous cp.async to read it; issued last, that
  // chain no longer holds up the B copies.
  for (bool wantB : {true, false})
    for (size_t i = 0; i < p.loads.size(); ++i) {
      bool isB = false;
      for (const AllocUse &u : p.loads[i].uses)
        for (Operation *r : u.reads)
          isB = isB || (r->code() == OpCode::WarpGroupDot &&
                        r->operand(1) == u.alloc->result(0));
      if (isB == wantB)
        p.issueOrder.push_back(i);
    }

  // The lookahead (see the top of the file). A wgmma may run asynchronously
  // when each of its shared operands is a pipelined buffer (left alone for
  // an iteration after its read) or defined outside the loop (never
  // written in it); another shared value made in the body would be
  // overwritten by the next iteration's local_alloc while being read.
  {
    std::set<Value *> pipelined;
    std::vector<Operation *> reads;
    for (const Candidate &c : p.loads)
      for (const AllocUse &u : c.uses) {
        pipelined.insert(u.alloc->result(0));
        reads.insert(reads.end(), u.reads.begin(), u.reads.end());
      }
    std::set<Operation *> seen;
    for (Operation *r : reads) {
      if (r->code() != OpCode::WarpGroupDot || !seen.insert(r).second)
        continue;
      bool safe = true;
      // A in registers (attention's p) is not a buffer: wgmma reads it
      // before the registers can change (ptxas keeps them until the wait).
      for (unsigned k = 0; k < 2; ++k)
        safe = safe && (r->operand(k)->type()->isTensor() ||
                        pipelined.count(r->operand(k)) ||
                        !definedInside(loop, r->operand(k)));
      // Only a dot that carries its accumulator to the next iteration
      // leaves its group in flight; one whose result the iteration reads
      // (attention's q @ k^T) waits for it at once.
      if (safe && carriedAccumulatorLoop(*r) == loop)
        p.asyncDots.push_back(r);
    }
  }

  // Step 3: which ahead iter args move ahead in place. Everything that
  // reads one must be a slice op (cloned for the ahead values, the original
  // then dead), a candidate load (erased) or the yield of an iter arg moved
  // too; its loop result must be unused (it would hold a later value).
  std::set<Operation *> candidateLoads;
  for (const Candidate &c : p.loads)
    candidateLoads.insert(c.load);
  for (unsigned k : p.ahead)
    if (users[loop->result(k)].empty())
      p.shifted.insert(k);
  Operation *yield = body.terminator();
  for (bool changed = true; changed;) {
    changed = false;
    for (unsigned k : std::set<unsigned>(p.shifted)) {
      std::set<Value *> tainted{body.argument(k + 1)};
      bool ok = true;
      for (auto &opPtr : body.ops()) {
        Operation *op = opPtr.get();
        bool uses = false;
        op->walk([&](Operation *o) {
          for (Value *v : o->operands())
            uses = uses || tainted.count(v);
        });
        if (!uses)
          continue;
        if (op == yield) {
          for (unsigned m = 0; m < op->numOperands(); ++m)
            if (tainted.count(op->operand(m)) && !p.shifted.count(m))
              ok = false;
        } else if (candidateLoads.count(op)) {
          continue;
        } else if (p.slice.count(op)) {
          for (Value *r : op->results())
            tainted.insert(r);
        } else {
          ok = false;
        }
      }
      if (!ok) {
        p.shifted.erase(k);
        changed = true;
      }
    }
  }
  return p;
}

/// Inserts new ops before a fixed position.
struct Emitter {
  Block *block;
  Block::iterator pos;
  Location loc;

  Operation *raw(OpCode code, std::vector<Value *> in,
                 std::vector<const Type *> types,
                 std::map<std::string, Attribute> attrs = {}) {
    return block->insert(pos, Operation::create(code, std::move(in), types,
                                                std::move(attrs), loc));
  }
  Value *op(OpCode code, std::vector<Value *> in, const Type *type,
            std::map<std::string, Attribute> attrs = {}) {
    return raw(code, std::move(in), {type}, std::move(attrs))->result(0);
  }
  Value *constant(int64_t v, const Type *type) {
    return op(OpCode::Constant, {}, type, {{"value", v}});
  }
  Value *cmp(const char *predicate, Value *a, Value *b) {
    return op(OpCode::CmpI, {a, b}, Type::scalar(DType::I1),
              {{"predicate", std::string(predicate)}});
  }
};

Value *mapped(const std::map<Value *, Value *> &map, Value *v) {
  auto it = map.find(v);
  return it == map.end() ? v : it->second;
}

// ---- step 0: a dot loop's other loads, staged through shared memory --------
//
// In a loop whose dot operands are pipelined, a load that the body's other
// ops read (the attention backward's row statistics M and Delta: vectors
// broadcast onto a dot's result) would still be issued in its own
// iteration, and the first op that needs it waits for the whole latency
// (in the dK/dV loop the exp2 after the first wgmma, which is short).
// Triton's pipeliner copies such loads a stage ahead too. Here the load
//   %x = tt.load %p, %m, %o
// becomes
//   %l = tt.load %p', %m'                  -- a compact copy layout
//   %a = ttg.local_alloc %l                -- a plain shared vector
//   %y = ttg.local_load %a                 -- the layout %x had
//   %x = arith.select %m, %y, %o           -- when %o is not zero
// which the pipeliner below then takes as it takes a dot operand: S
// buffers, cp.async S-1 iterations ahead, the read after the wait. Only
// vectors of 4-byte or wider elements (cp.async moves 4, 8 or 16 bytes) of at
// most kMaxStagedBytes. Their layout, a slice of an mma accumulator, holds
// each element in many threads; the copy runs in a blocked layout of 16-byte
// pieces instead (p' and m' are the pointer's and mask's elementwise ops
// rebuilt in it), so a handful of lanes issue one cp.async each. Where those
// ops read a tensor the loop does not compute, the copy keeps the load's
// layout (each element copied by its owner thread).
constexpr int64_t kMaxStagedBytes = 4096;

/// The ops computing `roots` (tensors), definitions first, when each can be
/// rebuilt in another layout: constants, splats of scalars, make_range and
/// elementwise ops of such values, in the body or before the loop (clones
/// of those go into the body, where the pipeliner clones them ahead as it
/// clones every slice op; they cost a few register moves). Empty when one
/// cannot.
std::vector<Operation *> relayoutable(std::vector<Value *> roots) {
  std::set<Operation *> seen;
  std::vector<Operation *> order; // post-order: definitions first
  std::function<bool(Value *)> visit = [&](Value *v) {
    Operation *def = v->definingOp();
    if (!def)
      return false; // an iter arg or a kernel argument
    if (!seen.insert(def).second)
      return true;
    switch (def->code()) {
    case OpCode::Constant:
    case OpCode::MakeRange:
      break;
    case OpCode::Splat:
      if (def->operand(0)->type()->isTensor())
        return false;
      break;
    default:
      if (!def->hasTrait(ELEM) || !sliceable(*def) || def->numResults() != 1)
        return false;
      for (Value *o : def->operands())
        if (o->type()->isTensor() && !visit(o))
          return false;
    }
    order.push_back(def);
    return true;
  };
  for (Value *r : roots)
    if (!visit(r))
      return {};
  return order;
}

/// Step 0's loads of one loop (the loop qualified for the pipeliner).
std::vector<Operation *> stageableLoads(Function &f, Operation *loop) {
  Block &body = bodyOf(loop);
  std::map<Value *, std::vector<Operation *>> users;
  f.walk([&](Operation *o) {
    for (Value *v : o->operands())
      users[v].push_back(o);
  });
  std::vector<Operation *> loads;
  for (auto &opPtr : body.ops()) {
    Operation *ld = opPtr.get();
    if (ld->code() != OpCode::Load || ld->hasAttr("volatile"))
      continue;
    const Type *t = ld->result(0)->type();
    if (!t->isTensor() || t->rank() != 1 || !layoutOf(t))
      continue;
    int64_t eb = storageBytes(t->element());
    int64_t bytes = t->numElements() * eb;
    if (eb < 4 || t->element()->dtype() == DType::I1 || bytes > kMaxStagedBytes)
      continue;
    bool feedsAlloc = false;
    for (Operation *u : users[ld->result(0)])
      feedsAlloc = feedsAlloc || u->code() == OpCode::LocalAlloc;
    if (feedsAlloc)
      continue;
    std::set<Operation *> ops;
    std::set<unsigned> iters;
    bool ok = true;
    for (Value *o : ld->operands())
      ok = ok && collectSlice(loop, o, ops, iters);
    if (ok)
      loads.push_back(ld);
  }
  return loads;
}

/// Step 0: stages `loads` (stageableLoads) of `loop`.
void stageLoads(Function &f, Operation *loop, const std::vector<Operation *> &loads,
                int numWarps) {
  Block &body = bodyOf(loop);
  for (Operation *ld : loads) {
    const Type *t = ld->result(0)->type();
    Value *ptr = ld->operand(0);
    Value *mask = ld->numOperands() > 1 ? ld->operand(1) : nullptr;
    Value *other = ld->numOperands() > 2 ? ld->operand(2) : nullptr;
    Emitter at{&body, body.find(ld), ld->loc()};
    // The copy layout: 16-byte pieces (or the whole vector), lanes then
    // warps along it.
    int64_t n = t->numElements(), eb = storageBytes(t->element());
    int64_t per = std::min<int64_t>(n, std::max<int64_t>(1, 16 / eb));
    const GPULayout *copy =
        BlockedLayout::get({per}, {32}, {int64_t(numWarps)}, {0});
    std::vector<Value *> roots{ptr};
    if (mask)
      roots.push_back(mask);
    std::vector<Operation *> rebuild = relayoutable(roots);
    std::map<Value *, Value *> map;
    if (!rebuild.empty() && layoutOf(t) != copy) {
      for (Operation *op : rebuild) {
        Operation *c = body.insert(body.find(ld), op->clone(map));
        c->result(0)->setType(withLayout(op->result(0)->type(), copy));
        map[op->result(0)] = c->result(0);
      }
    }
    std::vector<Value *> in{mapped(map, ptr)};
    if (mask)
      in.push_back(mapped(map, mask));
    const Type *loaded = withLayout(t, layoutOf(in[0]->type()));
    Operation *nl = at.raw(OpCode::Load, in, {loaded}, ld->attrs());
    const Type *md = Type::memdesc(
        t->element(), t->shape(), SwizzledSharedLayout::get(1, 1, 1, {0}), false);
    Value *alloc = at.op(OpCode::LocalAlloc, {nl->result(0)}, md);
    Value *v = at.op(OpCode::LocalLoad, {alloc}, t);
    if (mask && other && !isZeroConstant(other))
      v = at.op(OpCode::Select, {mask, v, other}, t);
    replaceAllUsesWith(f, ld->result(0), v);
    ld->erase();
  }
  if (!loads.empty())
    eraseDeadPureOps(f);
}

class Pipeliner {
public:
  Pipeliner(Function &f, Plan &p, bool hoist, int numWarps, bool empty, bool split)
      : f_(f), p_(p), body_(bodyOf(p.loop)), hoist_(hoist), numWarps_(numWarps),
        empty_(empty), split_(split) {}

  /// Returns how many slice ops hoistInvariantSlice moved.
  int64_t run() {
    Operation *loop = p_.loop;
    Block *outer = loop->parentBlock();
    int64_t hoisted = hoist_ ? hoistInvariantSlice() : 0;
    Emitter pre{outer, outer->find(loop), loop->loc()};
    const Type *ivType = loop->operand(0)->type();
    const Type *i32 = Type::scalar(DType::I32);
    Value *lb = loop->operand(0), *ub = loop->operand(1);
    Operation *yield = body_.terminator();
    std::vector<Value *> yielded = yield->operands();

    // Step 4: the buffers and the prologue.
    for (const Candidate &c : p_.loads) {
      const Type *one = c.bufType;
      std::vector<int64_t> shape{p_.stages};
      shape.insert(shape.end(), one->shape().begin(), one->shape().end());
      Emitter at{pre.block, pre.pos, c.uses.front().alloc->loc()};
      Value *bufs = at.op(OpCode::LocalAlloc, {},
                          Type::memdesc(one->element(), shape, one->layout(),
                                        true));
      bufs->nameHint = "bufs";
      bufs_.push_back(bufs);
      bufType_.push_back(one);
      if (!c.tma)
        cpAsync_ = true;
    }
    groupTMACopies();
    // TMA: one mbarrier a buffer index, which the stage's TMA copies all
    // complete (their bytes, expected by thread 0's arrival). The fence
    // orders this thread's earlier ordinary shared-memory writes (bytes the
    // buffers may reuse) before the copies; the inits, by thread 0, reach
    // every thread through the barrier after them.
    if (!groups_.empty()) {
      const Type *i64 = Type::scalar(DType::I64);
      const Layout *bl = SwizzledSharedLayout::get(1, 1, 1, {0});
      barType_ = Type::memdesc(i64, {1}, bl, true);
      for (TMAGroup &g : groups_) {
        g.bars = pre.op(OpCode::LocalAlloc, {},
                        Type::memdesc(i64, {p_.stages, 1}, bl, true));
        g.bars->nameHint = "bars";
      }
      pre.raw(OpCode::FenceAsyncShared, {}, {});
      for (const TMAGroup &g : groups_)
        for (int j = 0; j < p_.stages; ++j)
          pre.raw(OpCode::InitBarrier,
                  {pre.op(OpCode::MemDescIndex, {g.bars, pre.constant(j, i32)}, barType_)}, {},
                  {{"count", int64_t(1)}});
      // Empty barriers (see the top of the file): one arrival a warp.
      if (empty_) {
        empties_ = pre.op(OpCode::LocalAlloc, {},
                          Type::memdesc(i64, {p_.stages, 1}, bl, true));
        empties_->nameHint = "empties";
        for (int j = 0; j < p_.stages; ++j)
          pre.raw(OpCode::InitBarrier,
                  {pre.op(OpCode::MemDescIndex, {empties_, pre.constant(j, i32)}, barType_)},
                  {}, {{"count", int64_t(numWarps_)}});
      }
      pre.raw(OpCode::GPUBarrier, {}, {});
    }
    std::map<unsigned, Value *> cur;
    for (unsigned k : p_.ahead)
      cur[k] = loop->operand(3 + k);
    Value *nonEmpty = pre.cmp("slt", lb, ub);
    const int D = p_.stages - 1; // the lookahead (see the top of the file)
    Value *span = D > 1 ? pre.op(OpCode::SubI, {ub, lb}, ivType) : nullptr;
    for (int j = 0; j < D; ++j) {
      Value *iv = lb, *runs = nonEmpty;
      if (j > 0) {
        Value *offset = pre.constant(j * p_.step, ivType);
        iv = pre.op(OpCode::AddI, {lb, offset}, ivType);
        runs = pre.op(OpCode::AndI, {nonEmpty, pre.cmp("ugt", span, offset)},
                      Type::scalar(DType::I1));
      }
      std::map<Value *, Value *> map{{body_.argument(0), iv}};
      for (unsigned k : p_.ahead)
        map[body_.argument(k + 1)] = cur[k];
      cloneSlice(pre, map);
      Value *index = pre.constant(j, i32);
      issueCopies(pre, map, runs, index);
      for (unsigned k : p_.ahead)
        cur[k] = mapped(map, yielded[k]);
      if (iv != lb)
        unused_.push_back(iv->definingOp());
    }

    // Step 5: the loop's new iter args.
    std::map<unsigned, Value *> aheadArg;
    for (unsigned k : p_.ahead) {
      if (p_.shifted.count(k)) {
        loop->operands()[3 + k] = cur[k];
        aheadArg[k] = body_.argument(k + 1);
        continue;
      }
      aheadArg[k] = addIter(cur[k]);
    }
    // %read = i mod S and %write = (i-1) mod S = (i+D) mod S.
    Value *read = addIter(pre.constant(0, i32));
    read->nameHint = "read_idx";
    Value *write = addIter(pre.constant(p_.stages - 1, i32));
    write->nameHint = "write_idx";
    // TMA: the parity of the phase of %read's mbarrier that this iteration
    // waits for (it flips each time %read wraps).
    Value *phase = nullptr;
    if (!groups_.empty()) {
      phase = addIter(pre.constant(0, i32));
      phase->nameHint = "phase";
    }

    // The top of the body: the wait; then the copies of iteration i+D,
    // there too, or after the last async wgmma (whose wait_group 1 retired
    // the wgmma of iteration i-1 that read the buffer they overwrite).
    Emitter top{&body_, body_.ops().begin(), loop->loc()};
    Value *wait = cpAsync_ ? top.op(OpCode::AsyncWait, {}, Type::asyncToken(),
                                    {{"num", int64_t(D - 1)}})
                           : nullptr;
    // TMA: each group's wait; the first group's at the top, a later one's
    // just before its first reader (groupTMACopies).
    for (const TMAGroup &g : groups_) {
      Emitter at = top;
      if (g.reader)
        at = Emitter{&body_, body_.find(g.reader), g.reader->loc()};
      at.raw(OpCode::WaitBarrier,
             {at.op(OpCode::MemDescIndex, {g.bars, read}, barType_), phase}, {});
    }
    Emitter copies = top;
    if (!p_.asyncDots.empty()) {
      Operation *last = nullptr;
      for (auto &op : body_.ops())
        if (std::find(p_.asyncDots.begin(), p_.asyncDots.end(), op.get()) !=
            p_.asyncDots.end())
          last = op.get();
      copies = Emitter{&body_, std::next(body_.find(last)), loop->loc()};
    }
    Value *distance = copies.constant(D * p_.step, ivType);
    Value *iv = body_.argument(0);
    Value *ivAhead = copies.op(OpCode::AddI, {iv, distance}, ivType);
    ivAhead->nameHint = "iv_ahead";
    Value *runs = copies.cmp(
        "ugt", copies.op(OpCode::SubI, {ub, iv}, ivType), distance);
    std::map<Value *, Value *> map{{iv, ivAhead}};
    for (unsigned k : p_.ahead)
      map[body_.argument(k + 1)] = aheadArg[k];
    cloneSlice(copies, map);
    if (empty_) {
      // Every warp releases buffer %write (its reads of iteration i-1 are
      // retired here); the last warpgroup waits until all have, and its
      // first thread issues the copies. The phase: %write's k-th release
      // is iteration k*S + (%write + 1) mod S's, so at iteration i the
      // parity is floor(i / S) mod 2, that of %read's wait above.
      Value *e = copies.op(OpCode::MemDescIndex, {empties_, write}, barType_);
      copies.raw(OpCode::ArriveBarrier, {e}, {}, {{"per_warp", true}});
      copies.raw(OpCode::WaitBarrier, {e, phase}, {}, {{"warpgroup", issuer()}});
      issuerWG_ = issuer();
    }
    issueCopies(copies, map, runs, write);
    issuerWG_ = -1;

    // This iteration reads buffer %read.
    for (size_t i = 0; i < p_.loads.size(); ++i) {
      const Candidate &c = p_.loads[i];
      for (const AllocUse &u : c.uses) {
        Emitter at{&body_, body_.find(u.alloc), u.alloc->loc()};
        Value *buf =
            at.op(OpCode::MemDescIndex, {bufs_[i], read}, bufType_[i]);
        if (u.trans) {
          const Type *md = u.alloc->result(0)->type();
          buf = at.op(OpCode::MemDescTrans, {buf},
                      Type::memdesc(md->element(), md->shape(), md->layout(),
                                    true),
                      {{"order", u.trans->arrayAttr("order")}});
        }
        for (Operation *r : u.reads) {
          if (r->code() == OpCode::WarpGroupDot) {
            // Ordered after the wait by program order (it takes no token).
            for (Value *&o : r->operands())
              if (o == u.alloc->result(0))
                o = buf;
            continue;
          }
          r->operands()[0] = buf;
          if (wait)
            r->operands().push_back(wait);
        }
        u.alloc->erase();
        if (u.trans)
          u.trans->erase();
      }
      c.load->erase();
    }

    // The yields: ahead values, then the buffer indices.
    for (unsigned k : p_.ahead) {
      Value *next = mapped(map, yielded[k]);
      if (p_.shifted.count(k))
        yield->operands()[k] = next;
      else
        yield->operands().push_back(next);
    }
    Emitter end{&body_, body_.find(yield), loop->loc()};
    Value *inc = end.op(OpCode::AddI, {read, end.constant(1, i32)}, i32);
    Value *wrap = end.cmp("eq", inc, end.constant(p_.stages, i32));
    Value *nextRead =
        end.op(OpCode::Select, {wrap, end.constant(0, i32), inc}, i32);
    yield->operands().push_back(nextRead);
    yield->operands().push_back(read);
    if (phase) {
      Value *flipped = end.op(OpCode::XOrI, {phase, end.constant(1, i32)}, i32);
      yield->operands().push_back(end.op(OpCode::Select, {wrap, flipped, phase}, i32));
    }
    for (Operation *dot : p_.asyncDots)
      dot->setAttr("async", true);

    // Step 6.
    unused_.push_back(ivAhead->definingOp());
    Emitter post{outer, std::next(outer->find(loop)), loop->loc()};
    if (cpAsync_)
      post.op(OpCode::AsyncWait, {}, Type::asyncToken(), {{"num", int64_t(0)}});
    if (!groups_.empty()) {
      // Every TMA copy the loop waited for is done (those past the end did
      // not issue). The mbarriers' bytes may be reused once no thread
      // still waits on one.
      post.raw(OpCode::GPUBarrier, {}, {});
      std::vector<Value *> all{empties_};
      for (const TMAGroup &g : groups_)
        all.push_back(g.bars);
      for (Value *bars : all) {
        if (!bars)
          continue;
        for (int j = 0; j < p_.stages; ++j)
          post.raw(OpCode::InvalBarrier,
                   {post.op(OpCode::MemDescIndex, {bars, post.constant(j, i32)}, barType_)},
                   {});
        post.raw(OpCode::LocalDealloc, {bars}, {});
      }
    }
    for (Value *bufs : bufs_)
      post.raw(OpCode::LocalDealloc, {bufs}, {});

    eraseDeadSliceOps();
    // The induction variable of an iteration ahead, when no slice op read
    // it.
    for (Operation *op : unused_)
      if (!hasUses(f_, op->result(0)))
        op->erase();
    sinkYieldOnlyOps();
    return hoisted;
  }

private:
  Function &f_;
  Plan &p_;
  Block &body_;
  bool hoist_;
  int numWarps_; // of the function: a tile's elements a thread
  std::vector<Value *> bufs_;
  std::vector<const Type *> bufType_;
  bool cpAsync_ = false;  // some candidate is copied with cp.async
  // TMA copies complete on mbarriers, one a buffer index, in groups: the
  // copies of tiles whose first reader is the same op of the body share
  // theirs (groupTMACopies).
  struct TMAGroup {
    int64_t bytes = 0;           // of a stage's copies
    Operation *reader = nullptr; // the wait goes before it (null: at the top)
    Value *bars = nullptr;
  };
  std::vector<TMAGroup> groups_;
  std::vector<int> groupOf_; // a load's group, -1 for cp.async
  // Empty barriers (empty_): a buffer's release by every warp, which the
  // issuing warpgroup waits for before copying into it again.
  bool empty_;
  bool split_; // TMA copies in groups by their first reader (groupTMACopies)
  Value *empties_ = nullptr;
  int64_t issuerWG_ = -1; // the warpgroup issuing the copies being made (-1: thread 0)
  int64_t issuer() const { return numWarps_ / 4 - 1; }
  const Type *barType_ = nullptr;
  std::vector<Operation *> unused_; // erased at the end when unused

  /// Step 3's slice, less what every iteration computes alike: a slice op
  /// that does arithmetic (not a range, splat, broadcast, reshape or
  /// constant, which cost nothing to recompute) and whose operands are all
  /// defined outside the loop, or are such free ops of values defined
  /// outside it, moves in front of the loop where its result is a scalar
  /// or a thin tensor (one dim above 1, e.g. [128, 1]); the free ops it
  /// reads are cloned there for it. A descriptor's or block pointer's row
  /// pointers (base + rows * stride, 64-bit) and row bounds are such ops:
  /// cloned for every iteration ahead, they were 24 IMAD.WIDE and 25 IMAD
  /// of the persistent matmul's K loop (205 SASS instructions at 128x256x64;
  /// the tutorial's pointer loop has 109). A thin result holds a register
  /// or two a thread across the loop, as the tutorial's carried pointers
  /// do; a full tile would hold one an element, so those stay. The values
  /// the loop then reads from before it must fit kHoistBudget registers a
  /// thread, or nothing moves: a block pointer with a runtime last stride
  /// has an address an element, 32 rows a thread at 128x128x64 (4 warps),
  /// and moving its row offsets spilled 960 bytes.
  /// TRITIUM_DISABLE_PASSES=hoist-slice leaves the slice whole.
  int64_t hoistInvariantSlice() {
    Operation *loop = p_.loop;
    Block *outer = loop->parentBlock();
    auto pos = outer->find(loop);
    auto isFree = [](const Operation *op) {
      switch (op->code()) {
      case OpCode::MakeRange:
      case OpCode::ExpandDims:
      case OpCode::Splat:
      case OpCode::Broadcast:
      case OpCode::Reshape:
      case OpCode::Constant:
        return true;
      default:
        return false;
      }
    };
    // The ops that move (chosen below, in program order), and whether `v`
    // can be had before the loop: defined there or by a chosen op, or a
    // free op of the body whose operands can.
    std::set<Operation *> chosen;
    std::function<bool(Value *)> available = [&](Value *v) {
      if (!definedInside(loop, v))
        return true;
      Operation *def = v->definingOp();
      if (def && chosen.count(def))
        return true;
      if (!def || def->parentBlock() != &body_ || !isFree(def) ||
          def->numRegions() != 0)
        return false;
      for (Value *o : def->operands())
        if (!available(o))
          return false;
      return true;
    };
    std::map<Value *, Value *> outside; // a free body value -> its clone
    std::function<Value *(Value *)> before = [&](Value *v) -> Value * {
      if (!definedInside(loop, v))
        return v;
      auto it = outside.find(v);
      if (it != outside.end())
        return it->second;
      Operation *def = v->definingOp();
      std::map<Value *, Value *> map;
      for (Value *o : def->operands())
        map[o] = before(o);
      Operation *c = outer->insert(pos, def->clone(map));
      return outside[v] = c->result(0);
    };
    std::vector<Operation *> order;
    for (auto &op : body_.ops())
      if (p_.slice.count(op.get()))
        order.push_back(op.get());
    // Which ops move: in program order, so an op reading one that moves
    // may move too (`available` sees the ops chosen so far as outside).
    for (Operation *op : order) {
      if (isFree(op) || op->numResults() != 1)
        continue;
      const Type *t = op->result(0)->type();
      if (t->isTensor()) {
        int wide = 0;
        for (int64_t d : t->shape())
          wide += d > 1;
        if (wide > 1 || !layoutOf(t))
          continue;
      }
      bool invariant = true;
      for (Value *v : op->operands())
        invariant = invariant && available(v);
      if (invariant)
        chosen.insert(op);
    }
    if (chosen.empty())
      return 0;
    // Their cost: the registers a thread holds across the loop, for each
    // chosen value that an op left in the loop reads.
    std::set<Operation *> readInLoop;
    for (auto &top : body_.ops())
      top->walk([&](Operation *u) {
        if (chosen.count(u))
          return;
        for (Value *v : u->operands())
          if (Operation *def = v->definingOp(); def && chosen.count(def))
            readInLoop.insert(def);
      });
    int64_t cost = 0;
    for (Operation *op : readInLoop) {
      const Type *t = op->result(0)->type();
      const Type *e = t->isTensor() ? t->element() : t;
      int64_t words = e->isPointer() || bitWidth(e->dtype()) > 32 ? 2 : 1;
      // Distinct elements a thread holds: a register basis that maps to no
      // element repeats one (a thin tensor in its full tile's layout).
      int64_t regs = 1;
      if (t->isTensor())
        for (const Basis &b : linearOf(t).reg())
          if (std::any_of(b.begin(), b.end(), [](int64_t x) { return x != 0; }))
            regs *= 2;
      cost += words * regs;
    }
    if (cost > kHoistBudget)
      return 0;
    int64_t hoisted = 0;
    for (Operation *op : order) {
      if (!chosen.count(op))
        continue;
      for (Value *&v : op->operands())
        v = before(v);
      outer->insert(pos, op->detach());
      p_.slice.erase(op);
      ++hoisted;
    }
    return hoisted;
  }

  /// The TMA groups: the copies of tiles first read by the same op of the
  /// body (directly or inside an scf.if) complete on one mbarrier a buffer
  /// index. The group read first waits at the top of the body; a later one
  /// waits just before its reader, so the first dot waits only for its own
  /// tiles and a later tile's copy completes during the ops before its dot.
  /// Attention's loop: q @ k^T waits for K alone, the copy of V completes
  /// during that dot and the softmax (Triton's loop waits so too). A
  /// matmul's A and B, both read by its one wgmma, keep one mbarrier.
  /// Only with 2 stages: the copies of iteration i+1 then issue at the end
  /// of iteration i, just before their wait, and V's latency was exposed
  /// there; with more stages they are an iteration or more ahead, and the
  /// second wait only cost (H100, descriptor attention forward, every
  /// variant in turn each rep: d128 128x64 on 4 warps, 2 stages, fp16
  /// 470.7 -> 495.9 TFLOP/s, bf16 478.7 -> 500.6; 3 stages: d64 128x64 on 4
  /// warps 410.0 -> 393.2, 8 warps d128 causal 462.1 -> 446.1).
  /// TRITIUM_DISABLE_PASSES=split-tma-barriers: one group, one wait at the
  /// top.
  void groupTMACopies() {
    groupOf_.assign(p_.loads.size(), -1);
    std::map<const Operation *, size_t> position;
    for (auto &op : body_.ops())
      position.emplace(op.get(), position.size());
    auto topLevel = [&](Operation *op) {
      while (op->parentBlock() != &body_)
        op = op->parentOp();
      return op;
    };
    // (position of the first reader, reader) -> group, in reading order.
    std::map<std::pair<size_t, Operation *>, std::vector<size_t>> byReader;
    for (size_t i = 0; i < p_.loads.size(); ++i) {
      const Candidate &c = p_.loads[i];
      if (!c.tma)
        continue;
      Operation *first = nullptr;
      for (const AllocUse &u : c.uses)
        for (Operation *r : u.reads) {
          Operation *t = topLevel(r);
          if (!first || position.at(t) < position.at(first))
            first = t;
        }
      if (!split_ || p_.stages != 2)
        first = nullptr;
      byReader[{first ? position.at(first) : 0, first}].push_back(i);
    }
    for (auto &[key, loads] : byReader) {
      TMAGroup g;
      g.reader = groups_.empty() ? nullptr : key.second;
      for (size_t i : loads) {
        const Type *one = bufType_[i];
        g.bytes += one->numElements() * storageBytes(one->element());
        groupOf_[i] = (int)groups_.size();
      }
      groups_.push_back(std::move(g));
    }
  }

  /// A new loop-carried value starting at `init`; returns its block arg.
  Value *addIter(Value *init) {
    p_.loop->operands().push_back(init);
    p_.loop->addResult(init->type());
    return body_.addArgument(init->type());
  }

  void cloneSlice(Emitter &e, std::map<Value *, Value *> &map) {
    for (auto &op : body_.ops())
      if (p_.slice.count(op.get()))
        e.block->insert(e.pos, op->clone(map));
  }

  /// One async copy per candidate into its buffer `index`, for the
  /// iteration the slice was cloned for (`map`), masked off unless `runs`;
  /// then one commit group.
  void issueCopies(Emitter &e, const std::map<Value *, Value *> &map,
                   Value *runs, Value *index) {
    std::vector<Value *> tokens;
    std::vector<Value *> bar(groups_.size(), nullptr);
    for (size_t i : p_.issueOrder) {
      Operation *ld = p_.loads[i].load;
      Emitter at{e.block, e.pos, ld->loc()};
      if (p_.loads[i].tma) {
        std::map<std::string, Attribute> by;
        if (issuerWG_ >= 0)
          by["warpgroup"] = issuerWG_;
        const TMAGroup &g = groups_[groupOf_[i]];
        Value *&b = bar[groupOf_[i]];
        if (!b) {
          b = at.op(OpCode::MemDescIndex, {g.bars, index}, barType_);
          std::map<std::string, Attribute> attrs = by;
          attrs["bytes"] = g.bytes;
          at.raw(OpCode::BarrierExpect, {b, runs}, {}, attrs);
        }
        Value *buf = at.op(OpCode::MemDescIndex, {bufs_[i], index}, bufType_[i]);
        std::vector<Value *> in{buf, b, runs};
        for (Value *o : ld->operands())
          in.push_back(mapped(map, o));
        std::map<std::string, Attribute> attrs = by;
        attrs["padding"] = ld->strAttr("padding");
        at.raw(OpCode::AsyncTMACopyGlobalToLocal, in, {}, attrs);
        continue;
      }
      Value *ptr = mapped(map, ld->operand(0));
      const Type *maskType =
          ptr->type()->withElement(Type::scalar(DType::I1));
      Value *mask = at.op(OpCode::Splat, {runs}, maskType);
      if (ld->numOperands() > 1)
        mask = at.op(OpCode::AndI, {mapped(map, ld->operand(1)), mask},
                     maskType);
      Value *buf = at.op(OpCode::MemDescIndex, {bufs_[i], index}, bufType_[i]);
      std::vector<Value *> in{ptr, buf, mask};
      if (ld->numOperands() > 2)
        in.push_back(mapped(map, ld->operand(2)));
      std::map<std::string, Attribute> attrs;
      for (const char *key : {"cache", "eviction"})
        if (auto it = ld->attrs().find(key); it != ld->attrs().end())
          attrs[key] = it->second;
      tokens.push_back(at.op(OpCode::AsyncCopyGlobalToLocal, in,
                             Type::asyncToken(), attrs));
    }
    if (cpAsync_)
      e.op(OpCode::AsyncCommitGroup, tokens, Type::asyncToken());
  }

  /// Step 7: the pure ops whose results only the yield reads (the ahead
  /// pointers' advance, p + BLOCK_K * stride) move below the body's copies,
  /// to just before the yield. The copies read the old pointers; computed
  /// before them, the new ones live beside the old, and ptxas keeps the
  /// loop-carried values apart from the copies' address registers: it moves
  /// each new pointer into place at the back edge, and each move waits for
  /// the cp.async that reads the register to leave the LSU's queue (ncu on
  /// the tutorial matmul, 128x256x64 w8 s3: 5481 of 17880 K-loop stall
  /// samples were such moves, long scoreboard). Below the copies, the
  /// advance updates the pointer in place, as in Triton's loop.
  void sinkYieldOnlyOps() {
    Operation *yield = body_.terminator();
    Operation *lastCommit = nullptr;
    for (auto &op : body_.ops())
      if (op->code() == OpCode::AsyncCommitGroup)
        lastCommit = op.get();
    if (!lastCommit)
      return;
    std::map<Value *, std::vector<Operation *>> users;
    f_.walk([&](Operation *o) {
      for (Value *v : o->operands())
        users[v].push_back(o);
    });
    // Backwards from the yield: an op joins when it is pure, has no
    // regions, and everything reading its results is the yield or a member.
    std::set<Operation *> sink;
    std::vector<Operation *> ops;
    for (auto &op : body_.ops())
      ops.push_back(op.get());
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      Operation *op = *it;
      // A tt.dot (the mma.sync path) is pure too, but it is the loop's
      // work, not bookkeeping: it stays where the program put it. So does
      // a reduction of a tile of 64 or more elements a thread: below the
      // copies it would keep that tile alive across the async wgmma and
      // the copies' addresses. An attention loop's row sum of p (l = l *
      // alpha + sum(p, 1)) at d128, 128x64 on 4 warps spilled 84-184
      // bytes there and ran 10-32 % slower (H100, in one process). A
      // smaller tile's sum still moves: its shuffles then overlap the wgmma.
      if (op == yield || op->numRegions() || !op->hasTrait(PURE) ||
          op->numResults() == 0 || op->code() == OpCode::Dot)
        continue;
      if (op->code() == OpCode::Reduce && op->operand(0)->type()->isTensor() &&
          op->operand(0)->type()->numElements() >= 64 * 32 * (int64_t)numWarps_)
        continue;
      bool only = true;
      for (Value *r : op->results())
        for (Operation *u : users[r])
          only = only && (u == yield || sink.count(u));
      if (only)
        sink.insert(op);
    }
    // Move those above the last commit group, in their order.
    bool before = true;
    std::vector<Operation *> move;
    for (Operation *op : ops) {
      if (op == lastCommit)
        before = false;
      if (before && sink.count(op))
        move.push_back(op);
    }
    for (Operation *op : move)
      body_.insert(body_.find(yield), op->detach());
  }

  /// The original slice ops nothing reads any more (those of the erased
  /// loads and of the iter args moved ahead), users first.
  void eraseDeadSliceOps() {
    std::unordered_map<Value *, unsigned> uses = useCounts(f_);
    std::vector<Operation *> order;
    for (auto &op : body_.ops())
      if (p_.slice.count(op.get()))
        order.push_back(op.get());
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Operation *op = *it;
      bool dead = true;
      for (Value *r : op->results())
        dead = dead && uses[r] == 0;
      if (!dead)
        continue;
      for (Value *o : op->operands())
        --uses[o];
      op->erase();
    }
  }
};

} // namespace

Value *carriedAccumulator(const Operation &dot) {
  if (dot.code() != OpCode::WarpGroupDot ||
      dot.result(0)->type()->element()->dtype() == DType::FP16)
    return nullptr;
  Value *c = dot.operand(2);
  // The rescaled form, acc = tl.dot(p, v, acc * alpha[:, None]): the
  // multiplication reads the iter arg once and feeds only this dot.
  Value *arg = c;
  Operation *rescale = c->definingOp();
  if (rescale && rescale->code() == OpCode::MulF) {
    arg = nullptr;
    for (Value *o : rescale->operands())
      if (o->isBlockArg() && o->ownerBlock() == dot.parentBlock() &&
          o->index() > 0 && o->type() == c->type())
        arg = o;
    if (!arg)
      return nullptr;
  } else {
    rescale = nullptr;
  }
  Block *b = arg->ownerBlock();
  if (!b || b != dot.parentBlock() || arg->index() == 0)
    return nullptr;
  Operation *loop = b->parentOp();
  if (!loop || loop->code() != OpCode::For)
    return nullptr;
  Operation *yield = b->terminator();
  unsigned slot = arg->index() - 1;
  int usesArg = 0, usesC = 0, usesD = 0;
  bool yielded = false;
  loop->walk([&](Operation *u) {
    for (unsigned i = 0; i < u->numOperands(); ++i) {
      usesArg += u->operand(i) == arg;
      usesC += rescale && u->operand(i) == c;
      if (u->operand(i) == dot.result(0)) {
        ++usesD;
        yielded |= u == yield && i == slot;
      }
    }
  });
  if (usesArg != 1 || (rescale && usesC != 1) || usesD != 1 || !yielded)
    return nullptr;
  if (rescale) {
    // The multiplication of iteration i+1 reads the registers the wgmma of
    // iteration i writes: a wgmma before it in the same block that waits
    // for every group (it carries nothing, so it is never async) must have
    // retired that group by then. Attention's q @ k^T is that wgmma: alpha
    // needs its result.
    bool retired = false;
    for (auto &o : b->ops()) {
      if (o.get() == rescale)
        break;
      if (o->code() == OpCode::WarpGroupDot && !carriedAccumulator(*o))
        retired = true;
    }
    if (!retired)
      return nullptr;
  }
  return arg;
}

Operation *carriedAccumulatorLoop(const Operation &dot) {
  Value *arg = carriedAccumulator(dot);
  return arg ? arg->ownerBlock()->parentOp() : nullptr;
}

namespace {

int numWarpsOf(Function &f, const PipelineOptions &opts) {
  auto it = f.attrs().find("num_warps");
  if (it != f.attrs().end())
    if (const int64_t *n = std::get_if<int64_t>(&it->second))
      return (int)*n;
  return opts.numWarps;
}

int64_t stagesOf(Operation *loop, const PipelineOptions &opts) {
  return loop->hasAttr("num_stages") ? loop->intAttr("num_stages") : opts.numStages;
}

/// Whether a loop's wgmmas all retire in their own iteration instead of
/// the accumulating ones staying in flight into the next: with 2 stages, in
/// a kernel of several warpgroups, in a loop of several wgmmas (the
/// attention backward's; a matmul's one wgmma keeps its overlap) whose
/// copies are cp.async (TMA copies were not measured so).
/// Why: an async wgmma puts the copies after it (they overwrite the buffer
/// the previous iteration's wgmma read), and with 2 stages those copies of
/// iteration i+1 are then issued at the end of iteration i, just before
/// iteration i+1 waits for them; with every wgmma retired, they go at the
/// top of iteration i, a whole iteration ahead, and the barrier between
/// the wgmma and the copies goes. The other wgmmas of such a loop wait for
/// their results anyway, so little overlap is lost. Measured on an H100
/// (twenty-seventh session): the backward's 8-warp 2-stage configs 5-35 %
/// faster, the forward's 128x128 on 8 warps 1 %; with 3 stages, or on 4
/// warps, async stays faster. TRITIUM_DISABLE_PASSES=sync-two-stage-dots
/// keeps them async.
bool syncTwoStageLoop(Operation *loop, int stages, int numWarps, const PipelineOptions &opts) {
  if (stages != 2 || numWarps < 8 || opts.skips("sync-two-stage-dots"))
    return false;
  int dots = 0;
  loop->walk([&](Operation *op) { dots += op->code() == OpCode::WarpGroupDot; });
  return dots >= 2;
}

/// The pass over one function; `stage`: run step 0 too. Returns how many
/// loads step 0 staged.
int pipelineFunction(Function &f, const PipelineOptions &opts, PassStats &stats, bool stage) {
  std::vector<Operation *> loops;
  f.walk([&](Operation *op) {
    if (op->code() == OpCode::For)
      loops.push_back(op);
  });
  int staged = 0;
  for (Operation *loop : loops) {
    int64_t stages = stagesOf(loop, opts);
    if (stages <= 1)
      continue;
    int s = (int)std::min<int64_t>(stages, kMaxStages);
    std::optional<Plan> plan = analyze(f, loop, s);
    if (!plan)
      continue;
    // The prologue grows with S, and S tiles would not fit shared memory
    // anyway: a located error now rather than a slow compile first.
    if (stages > kMaxStages)
      throw UserError("num_stages = " + std::to_string(stages) +
                          " is too many for a pipelined loop (at most " +
                          std::to_string(kMaxStages) + ")",
                      loop->loc());
    if (stage) {
      std::vector<Operation *> loads = stageableLoads(f, loop);
      if (!loads.empty()) {
        stageLoads(f, loop, loads, numWarpsOf(f, opts));
        staged += (int)loads.size();
        stats.add("gpu.loads-staged", (int64_t)loads.size());
        plan = analyze(f, loop, s);
        if (!plan)
          throw InternalError("pipeline: the loop at " + loop->loc().str() +
                              " no longer qualifies after its loads were staged");
      }
    }
    int warps = numWarpsOf(f, opts);
    bool tma = std::any_of(plan->loads.begin(), plan->loads.end(),
                           [](const Candidate &c) { return c.tma; });
    if (!plan->asyncDots.empty() && !tma && syncTwoStageLoop(loop, s, warps, opts)) {
      plan->asyncDots.clear();
      stats.add("gpu.loops-dots-sync");
    }
    // Empty barriers instead of a barrier of the whole block before the
    // copies (see the top of the file): TMA copies only, several warpgroups.
    bool empty = warps >= 8 && warps % 4 == 0 && !opts.skips("tma-empty-barriers") &&
                 std::all_of(plan->loads.begin(), plan->loads.end(),
                             [](const Candidate &c) { return c.tma; });
    if (empty)
      stats.add("gpu.loops-empty-barriers");
    if (int64_t hoisted = Pipeliner(f, *plan, !opts.skips("hoist-slice"), warps, empty,
                                    !opts.skips("split-tma-barriers"))
                              .run())
      stats.add("gpu.slice-ops-hoisted", hoisted);
    stats.add("gpu.loops-pipelined");
    stats.add("gpu.loads-pipelined", (int64_t)plan->loads.size());
  }
  return staged;
}

/// Whether step 0 would stage a load anywhere in `m` (read only).
bool anythingToStage(Module &m, const PipelineOptions &opts) {
  for (auto &f : m.functions()) {
    bool found = false;
    f->walk([&](Operation *loop) {
      if (found || loop->code() != OpCode::For || stagesOf(loop, opts) <= 1)
        return;
      int s = (int)std::min<int64_t>(stagesOf(loop, opts), kMaxStages);
      found = analyze(*f, loop, s) && !stageableLoads(*f, loop).empty();
    });
    if (found)
      return true;
  }
  return false;
}

} // namespace

void pipelineLoops(Module &m, const PipelineOptions &opts, PassStats &stats) {
  // Step 0 adds S buffers a staged vector. It is kept only where the kernel
  // then still fits the target's shared memory: tried on a copy first (the
  // bytes depend on liveness, e.g. two loops' buffers may share them).
  bool stage = !opts.skips("stage-vectors") &&
               anythingToStage(m, opts);
  if (stage) {
    std::unique_ptr<Module> trial = m.clone();
    PassStats scratch;
    for (auto &f : trial->functions())
      pipelineFunction(*f, opts, scratch, true);
    try {
      for (auto &f : trial->functions())
        allocateSharedMemory(*f, opts.target.maxSharedBytes(), opts.target.str());
    } catch (const UserError &) {
      stage = false;
      stats.add("gpu.loads-staged-no-room");
    }
  }
  for (auto &f : m.functions())
    pipelineFunction(*f, opts, stats, stage);
}

} // namespace tritium::gpu
