// --lower-tma-stores: a tensor descriptor's block store that
// expand-descriptor-loads kept for TMA (sm_90a) becomes
//   %buf = ttg.local_alloc %value : !ttg.memdesc<RxC, #ttg.nvmma_shared<swz>>
//   ttng.async_tma_copy_local_to_global %buf, %base, %shape..., %strides...,
//                                       %offsets... {wait = "read"|"write"}
// so that thread 0 writes the block with one cp.async.bulk.tensor per box
// instead of every thread storing its registers.
//
// Why: a matmul's epilogue stores a 32-64 KB tile. As plain stores the
// accumulator goes through shared memory anyway (a layout conversion to a
// coalesced layout) and then every warp issues its part; with TMA the tile
// goes to shared memory once, in the layout the copy reads, and leaves as
// whole boxes while the program moves on (wait = "read": the buffer may be
// reused once the copy has read it, as Triton's TMA store waits).
//
// - The value is taken in the layout it has: a ttg.convert_layout feeding
//   only the store (the coalesced layout convert-to-gpu gave it) is skipped,
//   so that the accumulator's mma layout writes shared memory directly.
// - The buffer's layout: NVMMA with the widest swizzle (128, 64, 32 bytes)
//   a row of the block fills, or none for 16-byte rows; that is a tensor
//   map's box layout (tmaSwizzleBytes), one box per swizzle-wide column block.
// - wait = "write" where the kernel also reads the tensor (a load, atomic or
//   copy whose pointer may come from the store's base argument): such a read
//   after the store must see its data, which only the full wait guarantees.
// - The barriers (the writes of every thread before thread 0's copy; a later
//   write of the same bytes after it) come from insert-barriers, the fences
//   for the async proxy from the emitter's ttg.local_alloc of an NVMMA buffer.
// Counter: gpu.tma-stores.
#include "tritium/analysis/pointer_provenance.h"
#include "tritium/gpu/passes.h"
#include "tritium/gpu/shared_layouts.h"
#include "tritium/transforms/rewrite.h"

namespace tritium::gpu {

namespace {

/// The swizzle of the NVMMA buffer a TMA store of `block` writes from.
int64_t storeSwizzle(const Type *block) {
  int64_t rowBytes = block->shape().back() * (bitWidth(block->element()->dtype()) / 8);
  for (int64_t swz : {128, 64, 32})
    if (rowBytes >= swz)
      return swz;
  return 0;
}

/// Whether some op of `f` reads global memory through a pointer that may
/// come from argument `arg`.
bool readsArgument(Function &f, unsigned arg) {
  PointerProvenance prov(f);
  bool reads = false;
  f.walk([&](Operation *op) {
    Value *ptr = nullptr;
    switch (op->code()) {
    case OpCode::Load:
    case OpCode::AtomicRMW:
    case OpCode::AtomicCAS:
    case OpCode::DescriptorLoad:
    case OpCode::AsyncCopyGlobalToLocal:
      ptr = op->operand(0);
      break;
    case OpCode::AsyncTMACopyGlobalToLocal:
      ptr = op->operand(3);
      break;
    default:
      return;
    }
    PointerSources s = prov.of(ptr);
    reads = reads || s.unknown || s.args.count(arg);
  });
  return reads;
}

} // namespace

void lowerTMAStores(Module &m, const PipelineOptions &, PassStats &stats) {
  for (auto &fp : m.functions()) {
    Function &f = *fp;
    std::vector<Operation *> stores;
    f.walk([&](Operation *op) {
      if (op->code() == OpCode::DescriptorStore)
        stores.push_back(op);
    });
    if (stores.empty())
      continue;
    auto uses = useCounts(f);
    for (Operation *st : stores) {
      Value *v = st->operand(0);
      std::vector<Operation *> skipped;
      for (Operation *d = v->definingOp();
           d && d->code() == OpCode::ConvertLayout && uses[v] == 1 &&
           d->operand(0)->type()->isTensor() && layoutOf(d->operand(0)->type());
           d = v->definingOp()) {
        skipped.push_back(d);
        v = d->operand(0);
      }
      const Type *t = v->type();
      const Type *md = Type::memdesc(
          t->element(), t->shape(),
          NVMMASharedLayout::get(storeSwizzle(t), false, bitWidth(t->element()->dtype())),
          /*mutable=*/false);
      if (!tmaSwizzleBytes(md))
        throw InternalError("lower-tma-stores: no TMA box layout for the block of '" +
                            std::string(st->name()) + "'" +
                            (st->loc().known() ? " at " + st->loc().str() : ""));
      Block *b = st->parentBlock();
      auto alloc = Operation::create(OpCode::LocalAlloc, {v}, {md}, {}, st->loc());
      Value *buf = b->insert(b->find(st), std::move(alloc))->result(0);
      std::vector<Value *> operands{buf};
      for (unsigned i = 1; i < st->numOperands(); ++i)
        operands.push_back(st->operand(i));
      Value *base = st->operand(1);
      bool readBack = base->definingOp() || base->ownerBlock() != &f.entry() ||
                      readsArgument(f, base->index());
      std::map<std::string, Attribute> attrs{{"wait", std::string(readBack ? "write" : "read")}};
      b->insert(b->find(st), Operation::create(OpCode::AsyncTMACopyLocalToGlobal,
                                               std::move(operands), {}, attrs, st->loc()));
      st->erase();
      // The skipped conversions, now without users (the store's first).
      for (Operation *c : skipped)
        c->erase();
      stats.add("gpu.tma-stores");
    }
  }
}

} // namespace tritium::gpu
