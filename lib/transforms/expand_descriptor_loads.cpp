// --expand-descriptor-loads: a tensor descriptor's block load (tt.descriptor_load,
// what `desc.load(...)` builds) becomes the masked tt.load of its block, the
// form every other pass and the emitter know:
//   ptrs = base + (offsets[0] + arange(B0))[:, None] * strides[0]
//               + (offsets[1] + arange(B1))[None, :] * strides[1]
//   mask = every 0 <= offsets[d] + arange(Bd) < shape[d]
//   tt.load ptrs, mask, padding (0, or NaN for padding_option="nan")
// The pointer advances a dim at a time: base + rows * strides[0] is then a
// thin tensor a K loop's pipeliner computes once (hoist-slice), and each
// iteration adds its contiguous columns.
//
// Left as they are, on a target with TMA (sm_90a, "tma" not disabled, no
// bounds checking): the loads that TMA can copy into a dot's shared-memory
// operand (keptForTMA): in a pipelined loop's body, feeding tt.dot's A or B (directly or
// through tt.trans), 2-D, the tensor named by kernel arguments or constants
// the launcher can read (base 16-byte aligned, strides multiples of 16
// bytes, the last one 1). The pipeliner copies those with
// cp.async.bulk.tensor (lib/gpu/pipeline_loops.cpp); a kept load it does not
// copy sends the compile back with TMA off (nvidia/pipeline.cpp).
//
// Stores (tt.descriptor_store) are expanded the same way into the masked
// tt.store, except on sm_90a ("tma" and "tma-store" not disabled, no bounds
// checking) where a store TMA can write (keptForTMAStore: 2-D, the tensor
// as for loads, a box of at most 256 rows whose rows fill 16-byte multiples)
// stays for lower-tma-stores (lib/gpu/lower_tma_stores.cpp), which writes
// the block through shared memory with one cp.async.bulk.tensor per box: the
// program does not wait for the global writes, and the stores leave the SM
// as whole boxes (the matmul epilogue of Triton's persistent TMA kernel).
#include "tritium/ir/builder.h"
#include "tritium/transforms/fold.h"
#include "tritium/transforms/passes.h"

#include <algorithm>
#include <limits>
#include <map>

namespace tritium {

namespace {

std::optional<int64_t> argDivisibility(const Function &f, Value *v) {
  if (v->definingOp() || v->ownerBlock() != &f.entry())
    return std::nullopt;
  const auto &attrs = f.argAttrs()[v->index()];
  auto it = attrs.find("tt.divisibility");
  if (it == attrs.end() || !std::holds_alternative<int64_t>(it->second))
    return int64_t(1);
  return std::get<int64_t>(it->second);
}

std::optional<int64_t> constantInt(Value *v) {
  std::optional<ConstValue> c = getConstant(v);
  if (!c || c->isFloat() || v->type()->isTensor())
    return std::nullopt;
  return c->asInt();
}

/// Whether the launcher can read `v` (a dim or stride): a constant, a kernel
/// argument, or a sign extension of one. `multiple`: a multiple of that
/// (an argument: by its tt.divisibility).
bool launcherReadable(const Function &f, Value *v, int64_t multiple = 1) {
  if (auto c = constantInt(v))
    return *c % multiple == 0;
  Operation *d = v->definingOp();
  if (d && d->code() == OpCode::ExtSI)
    v = d->operand(0);
  auto div = argDivisibility(f, v);
  return div && *div % multiple == 0;
}

using Users = std::map<Value *, std::vector<std::pair<Operation *, unsigned>>>;

/// A tt.dot operand A or B, directly or through one tt.trans (its only use).
bool feedsDotOperand(const Users &users, Value *v) {
  auto it = users.find(v);
  if (it == users.end() || it->second.size() != 1)
    return false;
  auto [user, index] = it->second.front();
  if (user->code() == OpCode::Trans)
    return feedsDotOperand(users, user->result(0));
  return user->code() == OpCode::Dot && index < 2;
}

/// Whether a TMA tensor map can describe the tensor of descriptor op `op`
/// whose base is operand `first` (shape and strides follow): base 16-byte
/// aligned, strides multiples of 16 bytes but the last, which is 1, every
/// dim and stride readable by the launcher; the block (its shape) a box of
/// 2 dims, at most 256 elements each, whose rows are 16-byte multiples.
bool tmaDescribable(const Function &f, Operation &op, unsigned first, const Type *block) {
  const std::vector<int64_t> &shape = block->shape();
  size_t r = shape.size();
  DType dt = block->element()->dtype();
  int64_t eb = bitWidth(dt) / 8;
  if (r != 2 || dt == DType::I1 || !(eb == 1 || eb == 2 || eb == 4 || eb == 8))
    return false;
  for (int64_t b : shape)
    if (b > 256)
      return false;
  if (shape[r - 1] * eb % 16 != 0)
    return false;
  auto baseDiv = argDivisibility(f, op.operand(first));
  if (!baseDiv || *baseDiv % 16 != 0)
    return false;
  for (size_t d = 0; d < r; ++d) {
    Value *stride = op.operand(unsigned(first + 1 + r + d));
    bool last = d + 1 == r;
    if (last ? constantInt(stride) != int64_t(1)
             : !launcherReadable(f, stride, 16 / std::min<int64_t>(eb, 16)))
      return false;
    if (!launcherReadable(f, op.operand(unsigned(first + 1 + d))))
      return false;
  }
  return true;
}

bool tmaTarget(const PipelineOptions &opts) {
  return opts.target.sm >= 90 && opts.target.archA && !opts.boundsCheck &&
         !opts.skips("tma");
}

/// Whether `op` (a tt.descriptor_store of `f`) stays for a TMA store (see
/// the top of the file).
bool keptForTMAStore(const Function &f, Operation &op, const PipelineOptions &opts) {
  if (!tmaTarget(opts) ||
      opts.skips("tma-store"))
    return false;
  return tmaDescribable(f, op, 1, op.operand(0)->type());
}

/// Whether `op` (a tt.descriptor_load of `f`) stays for a TMA copy (see the
/// top of the file).
bool keptForTMA(const Function &f, const Users &users, Operation &op,
                const PipelineOptions &opts) {
  if (!tmaTarget(opts))
    return false;
  const Type *t = op.result(0)->type();
  if (!tmaDescribable(f, op, 0, t))
    return false;
  // Out-of-bounds NaN: TMA's fill for floating-point maps of 2+ bytes.
  if (op.strAttr("padding") == "nan" &&
      (bitWidth(t->element()->dtype()) == 8 || !isFloat(t->element()->dtype())))
    return false;
  // In a loop the pipeliner takes (num_stages > 1), feeding a dot.
  Operation *parent = op.parentOp();
  if (!parent || parent->code() != OpCode::For || !feedsDotOperand(users, op.result(0)))
    return false;
  int64_t stages = parent->hasAttr("num_stages") ? parent->intAttr("num_stages") : opts.numStages;
  return stages > 1;
}

/// The pointers and the in-bounds mask of a descriptor block whose base is
/// operand `first` of `op` (shape, strides and offsets follow it), built at
/// b's insertion point.
std::pair<Value *, Value *> blockPointers(Builder &b, Operation &op, unsigned first,
                                          const std::vector<int64_t> &block) {
  size_t r = block.size();
  Value *ptrs = op.operand(first), *mask = nullptr;
  for (size_t d = 0; d < r; ++d) {
    Value *idx =
        b.binary("add", b.arange(0, block[d]), op.operand(unsigned(first + 1 + 2 * r + d)));
    for (size_t k = 0; k < d; ++k)
      idx = b.expandDims(idx, 0);
    for (size_t k = d + 1; k < r; ++k)
      idx = b.expandDims(idx, int(k));
    Value *term =
        b.binary("mul", b.cast(idx, DType::I64), op.operand(unsigned(first + 1 + r + d)));
    ptrs = b.binary("add", ptrs, term);
    Value *inside = b.binary("logical_and", b.binary("ge", idx, Operand::ofInt(0)),
                             b.binary("lt", idx, op.operand(unsigned(first + 1 + d))));
    mask = mask ? b.binary("logical_and", mask, inside) : inside;
  }
  return {ptrs, b.broadcastTo(mask, block)};
}

/// The masked tt.load of `op`'s block, built at b's insertion point.
Value *expandDescriptorLoad(Builder &b, Operation &op) {
  const std::vector<int64_t> &block = op.result(0)->type()->shape();
  auto [ptrs, mask] = blockPointers(b, op, 0, block);
  bool isF = isFloat(op.result(0)->type()->element()->dtype());
  Operand pad = op.strAttr("padding") == "nan"
                    ? Operand::ofFloat(std::numeric_limits<double>::quiet_NaN())
                : isF ? Operand::ofFloat(0.0)
                      : Operand::ofInt(0);
  return b.load(ptrs, mask, pad);
}

/// The masked tt.store of `op`'s value, built at b's insertion point.
void expandDescriptorStore(Builder &b, Operation &op) {
  auto [ptrs, mask] = blockPointers(b, op, 1, op.operand(0)->type()->shape());
  b.store(ptrs, op.operand(0), mask);
}

} // namespace

void expandDescriptorLoads(Module &m, const PipelineOptions &opts, PassStats &stats) {
  for (auto &fp : m.functions()) {
    Function &f = *fp;
    std::vector<Operation *> loads;
    Operation *first = nullptr; // the first descriptor op
    bool laidOut = false;       // GPU IR: its tensors have layouts
    Users users; // every value's, with the operand index
    f.walk([&](Operation *op) {
      if (op->code() == OpCode::DescriptorLoad)
        loads.push_back(op);
      if (!first && (op->code() == OpCode::DescriptorLoad || op->code() == OpCode::DescriptorStore))
        first = op;
      for (Value *r : op->results())
        laidOut = laidOut || (r->type()->isTensor() && r->type()->layout());
      for (unsigned i = 0; i < op->numOperands(); ++i)
        users[op->operand(i)].push_back({op, i});
    });
    // The expansion builds tile IR (tensors without layouts): on GPU IR it
    // would mix the two (a pass order of the caller's, as in tritium-opt).
    if (first && laidOut)
      throw UserError("'" + std::string(first->name()) + "' in '" + f.name() +
                          "', which already has layouts: --expand-descriptor-loads runs on "
                          "tile IR, before --convert-to-gpu",
                      first->loc());
    for (Operation *op : loads) {
      if (keptForTMA(f, users, *op, opts)) {
        stats.add("expand-descriptor-loads.kept-for-tma");
        continue;
      }
      Builder b(m);
      b.setInsertionPoint(op);
      b.setLoc(op->loc());
      Value *v = expandDescriptorLoad(b, *op);
      replaceAllUsesWith(f, op->result(0), v);
      op->erase();
      stats.add("expand-descriptor-loads.expanded");
    }
    // Stores: expanded, but for those TMA can write (sm_90a).
    std::vector<Operation *> stores;
    f.walk([&](Operation *op) {
      if (op->code() == OpCode::DescriptorStore)
        stores.push_back(op);
    });
    for (Operation *op : stores) {
      if (keptForTMAStore(f, *op, opts)) {
        stats.add("expand-descriptor-loads.stores-kept-for-tma");
        continue;
      }
      Builder b(m);
      b.setInsertionPoint(op);
      b.setLoc(op->loc());
      expandDescriptorStore(b, *op);
      op->erase();
      stats.add("expand-descriptor-loads.stores-expanded");
    }
  }
}

} // namespace tritium
