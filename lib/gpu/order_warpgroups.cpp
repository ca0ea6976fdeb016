// --order-warpgroups: in a kernel of two warpgroups (8 warps, sm_90a), the
// loop of an attention forward -- a product whose result the iteration
// consumes (qk = q @ k), then one that accumulates into a carried value from
// registers (acc += p @ v) -- has its first product marked {pingpong = true}:
// each iteration, warpgroup 1 issues that product's wgmmas only after
// warpgroup 0 issued its own (the emitter: named barrier 1, warpgroup 0
// bar.arrive after its commit, warpgroup 1 bar.sync before its fence).
//
// Why: the two warpgroups (64 rows each) otherwise run in step, both issuing
// their QK^T together, both waiting for it, and both computing the softmax
// while the tensor cores idle. With warpgroup 1 starting its product once
// warpgroup 0's is queued, warpgroup 0's softmax runs while the tensor cores
// do warpgroup 1's product, and warpgroup 1's softmax while they do
// warpgroup 0's P @ V: FlashAttention-3's ping-pong within the one barrier
// a pipelined iteration already has. Measured on an H100 (hand-edited PTX,
// fp16 4x32x4096 d128, 128x128): 369 -> 420 TFLOP/s at 2 stages, 391 -> 419
// at 3 (benchmarks/RESULTS.md, twenty-sixth session).
//
// Only loops whose scores are not masked (a select on them): the loops
// split-masked-loops leaves for a causal diagonal or a ragged end run one or
// two iterations, with nothing to overlap. Measured with the pass (H100,
// one process, six rounds; devrun/ab64.py, ab65.py): 128x128 on 8 warps, 3
// stages, d128 fp16 426 -> 446 and 417 -> 462 TFLOP/s, bf16 422 -> 472,
// d64 337 -> 356, 1x32x16384 435 -> 458; causal within +-4 % either way.
//
// Each iteration has one arrival of warpgroup 0 and one wait of warpgroup 1
// on barrier 1 (the loop's trip count is the same for both). Only a loop
// whose body has a barrier of the whole block (gpu.barrier, directly in it:
// a pipelined loop's, placed by insert-barriers, so this pass runs after it)
// is ordered: that barrier keeps warpgroup 0 from arriving for iteration
// j + 1 before warpgroup 1 waited for iteration j, so that the barrier's
// phases match one for one (two arrivals of warpgroup 0 would complete a
// phase alone, and warpgroup 1 would then wait for one that never comes).
// A loop without such a barrier, whose TMA copies the last warpgroup issues
// after the buffers' empty mbarriers (pipeline_loops.cpp), is ordered both
// ways: the loop gets {pingpong} too, and warpgroup 0 then waits on named
// barrier 2 before its product until warpgroup 1 has issued its own of the
// iteration before (warpgroup 1 arrives once before the loop, warpgroup 0
// waits once after it). The turn passes strictly back and forth, so
// neither barrier can take two arrivals of one side in a row.
// Loops with other products (the attention backward's four, a matmul's
// one) are left alone.
// Counter: gpu.warpgroups-ordered.
#include "tritium/gpu/passes.h"

#include <map>

namespace tritium::gpu {

namespace {

/// Whether `v` reaches an arith.select through the pure elementwise ops of
/// its block (the loop of a masked block: the causal diagonal, a ragged end).
bool reachesSelect(Value *v, const std::map<Value *, std::vector<Operation *>> &users, int depth = 0) {
  auto it = users.find(v);
  if (it == users.end() || depth > 8)
    return false;
  for (Operation *u : it->second) {
    if (u->code() == OpCode::Select)
      return true;
    if (u->hasTrait(ELEM) && u->hasTrait(PURE) && u->numResults() == 1 &&
        reachesSelect(u->result(0), users, depth + 1))
      return true;
  }
  return false;
}

/// The two warp_group_dots directly in `loop`'s body, in order, or nulls;
/// nulls too when the body has neither a gpu.barrier of its own nor TMA
/// copies issued after an empty barrier (`bothWays` then: the turn must go
/// back explicitly).
std::pair<Operation *, Operation *> twoProducts(Operation &loop, bool &bothWays) {
  std::vector<Operation *> dots;
  bool barrier = false, released = false;
  for (auto &op : loop.region(0).front().ops())
    if (op->code() == OpCode::GPUBarrier)
      barrier = true;
    else if (op->code() == OpCode::AsyncTMACopyGlobalToLocal && op->hasAttr("warpgroup"))
      released = true;
    else if (op->code() == OpCode::WarpGroupDot)
      dots.push_back(op.get());
    else if (op->numRegions() > 0) {
      bool nested = false;
      op->walk([&](Operation *o) { nested |= o->code() == OpCode::WarpGroupDot; });
      if (nested)
        return {nullptr, nullptr};
    }
  bothWays = !barrier;
  if (dots.size() != 2 || !(barrier || released))
    return {nullptr, nullptr};
  return {dots[0], dots[1]};
}

} // namespace

void orderWarpgroups(Module &m, const PipelineOptions &opts, PassStats &stats) {
  if (opts.target.sm < 90 || !opts.target.archA)
    return;
  for (auto &fp : m.functions()) {
    Function &f = *fp;
    auto it = f.attrs().find("num_warps");
    const int64_t *warps = it == f.attrs().end() ? nullptr : std::get_if<int64_t>(&it->second);
    if (!warps || *warps != 8)
      continue;
    std::vector<Operation *> loops;
    f.walk([&](Operation *op) {
      if (op->code() == OpCode::For)
        loops.push_back(op);
    });
    for (Operation *loop : loops) {
      bool bothWays = false;
      auto [qk, pv] = twoProducts(*loop, bothWays);
      if (!qk)
        continue;
      // qk: a fresh product (its accumulator not carried); pv: accumulating
      // into the loop's carried value, A from registers (p).
      if (carriedAccumulatorLoop(*qk) || carriedAccumulatorLoop(*pv) != loop ||
          !pv->operand(0)->type()->isTensor())
        continue;
      // A masked block's loop (the causal diagonal, a ragged end: a select
      // on the scores) runs one or two iterations: nothing to overlap.
      std::map<Value *, std::vector<Operation *>> users;
      loop->walk([&](Operation *o) {
        for (Value *x : o->operands())
          users[x].push_back(o);
      });
      if (reachesSelect(qk->result(0), users))
        continue;
      qk->setAttr("pingpong", true);
      if (bothWays) {
        loop->setAttr("pingpong", true);
        stats.add("gpu.warpgroups-ordered-both-ways");
      }
      stats.add("gpu.warpgroups-ordered");
    }
  }
}

} // namespace tritium::gpu
