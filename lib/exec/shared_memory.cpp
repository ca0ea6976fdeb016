// Shared memory, asynchronous copies and barriers in the CPU executor.
//
// The executor runs a program (a block) as one thread over whole tensors, so:
//  - a memdesc is a host buffer of the program (SharedArena), stored in the
//    order of its layout's offsets: local_store puts tile element c at the
//    offset the layout gives c, local_load reads it back from there;
//  - a ttg.memdesc_trans view is the same slot under another type;
//  - an asynchronous copy completes when it is issued, so commit groups and
//    waits have nothing to wait for;
//  - gpu.barrier synchronises one thread: nothing to do. An mbarrier holds
//    its arrival count once initialised; arriving at or waiting on one that
//    was never initialised is an error, as it would hang or misbehave on the
//    GPU.
#include "exec_internal.h"

#include "tritium/gpu/shared_layouts.h"

namespace tritium::exec {

namespace {

// The verifier has checked these ops (operand kinds, attributes, layouts);
// what is left to fail here is ours, not the user's.
[[noreturn]] void planError(const Operation &op, const std::string &msg) {
  throw InternalError(std::string("executor: '") + op.name() + "' " + msg);
}

int64_t allocIndex(uint64_t s) { return int64_t(s >> 32); }
int64_t elemBase(uint64_t s) { return int64_t(s & 0xffffffffu); }

/// The buffer offset of each tile element (row-major) of memdesc type `t`.
std::vector<int64_t> offsetsOf(const Operation &op, const Type *t) {
  if (!gpu::sharedLayoutOf(t))
    planError(op, "memdesc " + t->str() + " has no shared layout");
  const gpu::LinearLayout *ll;
  try {
    ll = &gpu::sharedLinearOf(t);
  } catch (const InternalError &e) {
    planError(op, e.what());
  }
  int64_t n = ll->inSize(gpu::kOffset);
  std::vector<int64_t> offsets(n, -1);
  for (int64_t o = 0; o < n; ++o) {
    int64_t flat = ll->flatIndex(ll->apply({{gpu::kOffset, o}}));
    if (flat >= n || offsets[flat] >= 0)
      planError(op, "shared layout of " + t->str() + " is not a bijection");
    offsets[flat] = o;
  }
  return offsets;
}

const Type *memdescOf(const Operation &op, unsigned i) {
  if (i >= op.numOperands() || !op.operand(i)->type()->isMemDesc())
    planError(op, "operand #" + std::to_string(i) + " must be a memdesc");
  return op.operand(i)->type();
}

/// The element storage of memdesc slot `s` (the whole allocation) and the
/// first element of its view; fails on a deallocated buffer.
std::vector<Slot> &storage(ProgramCtx &ctx, const OpPlan &op, uint64_t s,
                           int64_t need) {
  int64_t idx = allocIndex(s);
  if (idx >= (int64_t)ctx.shared.buffers.size() ||
      elemBase(s) + need > (int64_t)ctx.shared.buffers[idx].size())
    execError(ctx, op, "invalid shared-memory access",
              "the buffer was deallocated (or never allocated)");
  return ctx.shared.buffers[idx];
}

Slot &barrierWord(ProgramCtx &ctx, const OpPlan &op, Frame &f,
                  bool mustBeInitialised, unsigned operand = 0) {
  uint64_t s = f[op.in[operand]][0].u;
  Slot &w = storage(ctx, op, s, 1)[elemBase(s)];
  if (mustBeInitialised && w.i <= 0)
    execError(ctx, op, "uninitialised barrier",
              "the mbarrier was never initialised with ttng.init_barrier");
  return w;
}

} // namespace

void planSharedMemoryOp(const Operation &op, OpPlan &p) {
  switch (op.code()) {
  case OpCode::LocalAlloc: {
    if (op.numOperands() > 0)
      p.sharedOffsets = offsetsOf(op, op.result(0)->type());
    return;
  }
  case OpCode::LocalLoad:
    if (!op.operand(0)->type()->isTensor()) // else A is in registers
      p.sharedOffsets = offsetsOf(op, memdescOf(op, 0));
    return;
  case OpCode::LocalStore:
  case OpCode::AsyncCopyGlobalToLocal:
    p.sharedOffsets = offsetsOf(op, memdescOf(op, 1));
    return;
  case OpCode::AsyncTMACopyGlobalToLocal:
  case OpCode::AsyncTMACopyLocalToGlobal:
    p.sharedOffsets = offsetsOf(op, memdescOf(op, 0));
    return;
  case OpCode::MemDescIndex: {
    const Type *t = memdescOf(op, 0);
    p.axis = t->numElements() / t->numBuffers(); // elements per buffer
    return;
  }
  case OpCode::InitBarrier:
    p.axis = op.intAttr("count");
    return;
  case OpCode::WarpGroupDot: {
    if (!op.operand(0)->type()->isTensor()) // else A is in registers
      p.sharedOffsets = offsetsOf(op, memdescOf(op, 0));
    p.sharedOffsetsB = offsetsOf(op, memdescOf(op, 1));
    std::string prec = op.hasAttr("input_precision")
                           ? op.strAttr("input_precision")
                           : std::string("ieee");
    p.kind = int(prec == "tf32"     ? DotPrecision::TF32
                 : prec == "tf32x3" ? DotPrecision::TF32x3
                                    : DotPrecision::IEEE);
    return;
  }
  default:
    return;
  }
}

void evalSharedMemoryOp(const OpPlan &op, Frame &f, ProgramCtx &ctx) {
  const Type *token = Type::asyncToken();
  switch (op.code) {
  case OpCode::LocalAlloc: {
    const Type *t = op.op->result(0)->type();
    if (ctx.shared.buffers.size() >= (size_t(1) << 31))
      execError(ctx, op, "too many shared allocations", "2^31 or more");
    ctx.shared.buffers.emplace_back(t->numElements(), Slot{});
    std::vector<Slot> &buf = ctx.shared.buffers.back();
    if (!op.in.empty()) {
      const Slot *v = f[op.in[0]].data();
      for (size_t i = 0; i < op.sharedOffsets.size(); ++i)
        buf[op.sharedOffsets[i]] = v[i];
    }
    Slot s;
    s.u = uint64_t(ctx.shared.buffers.size() - 1) << 32;
    f[op.out[0]] = RValue::scalar(t, s);
    return;
  }
  case OpCode::LocalDealloc: {
    uint64_t s = f[op.in[0]][0].u;
    std::vector<Slot> &buf = storage(ctx, op, s, 0);
    buf.clear();
    buf.shrink_to_fit();
    return;
  }
  case OpCode::LocalLoad: {
    uint64_t s = f[op.in[0]][0].u;
    int64_t n = (int64_t)op.sharedOffsets.size();
    const std::vector<Slot> &buf = storage(ctx, op, s, n);
    RValue r = RValue::alloc(op.op->result(0)->type());
    Slot *z = r.mutableData();
    for (int64_t i = 0; i < n; ++i)
      z[i] = buf[elemBase(s) + op.sharedOffsets[i]];
    f[op.out[0]] = std::move(r);
    return;
  }
  case OpCode::LocalStore:
  case OpCode::AsyncCopyGlobalToLocal: {
    uint64_t s = f[op.in[1]][0].u;
    int64_t n = (int64_t)op.sharedOffsets.size();
    std::vector<Slot> &buf = storage(ctx, op, s, n);
    RValue copied;
    if (op.code == OpCode::AsyncCopyGlobalToLocal) {
      const Type *pt = op.op->operand(0)->type();
      copied = loadThrough(op, f[op.in[0]],
                           op.in.size() > 2 ? &f[op.in[2]] : nullptr,
                           op.in.size() > 3 ? &f[op.in[3]] : nullptr,
                           pt->withElement(pt->element()->pointee()), ctx);
      f[op.out[0]] = RValue::scalar(token, Slot{});
    }
    const RValue &v =
        op.code == OpCode::LocalStore ? f[op.in[0]] : copied;
    for (int64_t i = 0; i < n; ++i)
      buf[elemBase(s) + op.sharedOffsets[i]] = v[i];
    return;
  }
  case OpCode::MemDescIndex: {
    uint64_t s = f[op.in[0]][0].u;
    int64_t i = f[op.in[1]][0].i;
    int64_t buffers = op.op->operand(0)->type()->numBuffers();
    if (i < 0 || i >= buffers)
      execError(ctx, op, "buffer index out of range",
                "index " + std::to_string(i) + " of " +
                    std::to_string(buffers) + " buffers");
    Slot r;
    r.u = s + uint64_t(i * op.axis);
    f[op.out[0]] = RValue::scalar(op.op->result(0)->type(), r);
    return;
  }
  case OpCode::MemDescTrans:
    // The same bytes: the view's type maps its elements onto them.
    f[op.out[0]] = RValue::scalar(op.op->result(0)->type(), f[op.in[0]][0]);
    return;
  case OpCode::AsyncCommitGroup:
  case OpCode::AsyncWait:
    f[op.out[0]] = RValue::scalar(token, Slot{});
    return;
  case OpCode::InitBarrier:
    barrierWord(ctx, op, f, false).i = op.axis;
    return;
  case OpCode::InvalBarrier:
    barrierWord(ctx, op, f, true).i = 0;
    return;
  case OpCode::AsyncTMACopyGlobalToLocal: {
    // Done at once, as every copy here: the barrier's wait has nothing to
    // wait for. Predicated off: nothing.
    barrierWord(ctx, op, f, true, 1);
    if (!f[op.in[2]][0].i)
      return;
    uint64_t s = f[op.in[0]][0].u;
    int64_t n = (int64_t)op.sharedOffsets.size();
    std::vector<Slot> &buf = storage(ctx, op, s, n);
    const Type *m = op.op->operand(0)->type();
    RValue v = descriptorBlock(op, f, ctx, 3, Type::tensor(m->element(), m->shape()));
    for (int64_t i = 0; i < n; ++i)
      buf[elemBase(s) + op.sharedOffsets[i]] = v[i];
    return;
  }
  case OpCode::AsyncTMACopyLocalToGlobal: {
    // Done at once: the buffer read as a tile, then tt.descriptor_store's
    // semantics.
    uint64_t s = f[op.in[0]][0].u;
    int64_t n = (int64_t)op.sharedOffsets.size();
    const std::vector<Slot> &buf = storage(ctx, op, s, n);
    const Type *m = op.op->operand(0)->type();
    RValue v = RValue::alloc(Type::tensor(m->element(), m->bufferShape()));
    Slot *z = v.mutableData();
    for (int64_t i = 0; i < n; ++i)
      z[i] = buf[elemBase(s) + op.sharedOffsets[i]];
    descriptorWrite(op, f, ctx, 1, v);
    return;
  }
  case OpCode::WarpGroupDot: {
    // The operands as tensors (row-major tiles read through their layouts),
    // then tt.dot's semantics.
    auto tile = [&](unsigned i, const std::vector<int64_t> &offs) {
      uint64_t s = f[op.in[i]][0].u;
      const std::vector<Slot> &buf = storage(ctx, op, s, (int64_t)offs.size());
      const Type *m = op.op->operand(i)->type();
      RValue r = RValue::alloc(Type::tensor(m->element(), m->shape()));
      Slot *z = r.mutableData();
      for (size_t k = 0; k < offs.size(); ++k)
        z[k] = buf[elemBase(s) + offs[k]];
      return r;
    };
    RValue a = op.op->operand(0)->type()->isTensor()
                   ? f[op.in[0]]
                   : tile(0, op.sharedOffsets);
    RValue b = tile(1, op.sharedOffsetsB);
    f[op.out[0]] = dot(op, a, b, f[op.in[2]]);
    return;
  }
  case OpCode::BarrierExpect:
  case OpCode::ArriveBarrier:
  case OpCode::WaitBarrier:
    barrierWord(ctx, op, f, true);
    return;
  default: // gpu.barrier: one thread has nothing to wait for
    return;
  }
}

} // namespace tritium::exec
