// --accelerate-matmul: gives every tt.dot of the GPU IR the layouts of the
// instruction that will compute it (see passes.h).
//
// Runs after convert-to-gpu, which laid the dot's accumulator out like any
// tensor (blocked). Here:
//  1. `x + dot(a, b, 0)` becomes `dot(a, b, x)`: the loop then carries the
//     accumulator itself, and it can stay in the mma layout across
//     iterations (otherwise every iteration converts it twice).
//  2. A dot the tensor cores can compute (16-bit floats, fp8, int8, fp32 as
//     tf32/tf32x3, on sm_80 and newer) gets an mma.sync accumulator layout
//     (#ttg.nvidia_mma version 2, m16n8) and its operands dot_op layouts.
//     A batched (rank-3) dot gets the batched form of those layouts (a
//     leading batch dim, warps on the batch first), on sm_90a too: wgmma
//     tiles a single matrix.
//     The accumulator's layout is not a local property: the value is
//     carried through scf.for / scf.if, so the whole web of values tied to
//     it (iter_args, yields, loop results) changes layout together, and
//     conversions go only where the web meets other code (the zero init,
//     the epilogue after the loop).
//  3. Any other dot (fp32 "ieee", fp64) keeps its blocked accumulator and
//     is computed with FMAs: each thread needs, for the rows (columns) of
//     the accumulator it holds, all of K of A (of B); its operands get
//     linear layouts derived from the accumulator's that say exactly that.
// remove-layout-conversions, run next, rebuilds a constant zero init in the
// new layout instead of converting it.
#include "tritium/gpu/conversion.h"
#include "tritium/gpu/mma_layouts.h"
#include "tritium/gpu/passes.h"
#include "tritium/gpu/shared_layouts.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

namespace tritium::gpu {

namespace {

int countUses(Function &f, Value *v) {
  int n = 0;
  f.walk([&](Operation *op) {
    for (Value *o : op->operands())
      n += o == v;
  });
  return n;
}

/// Step 1: `add(x, dot(a, b, 0))` -> `dot(a, b, x)` where the dot's result
/// has no other use. Integer adds are exact; a float add is reassociated
/// (x + (0 + sum) vs ((x + p0) + p1) ...), the rewrite every Triton user
/// relies on to keep the accumulator in registers.
void foldAccumulate(Function &f, PassStats &stats) {
  std::vector<Operation *> dots;
  f.walk([&](Operation *op) {
    if (op->code() == OpCode::Dot)
      dots.push_back(op);
  });
  for (Operation *dot : dots) {
    if (!isZeroConstant(dot->operand(2)))
      continue;
    Value *d = dot->result(0);
    if (countUses(f, d) != 1)
      continue;
    Operation *add = nullptr;
    f.walk([&](Operation *op) {
      if ((op->code() == OpCode::AddF || op->code() == OpCode::AddI) &&
          (op->operand(0) == d || op->operand(1) == d))
        add = op;
    });
    if (!add || add->parentBlock() != dot->parentBlock() ||
        add->result(0)->type() != d->type())
      continue;
    Value *x = add->operand(0) == d ? add->operand(1) : add->operand(0);
    if (x == d)
      continue;
    // x must be defined before the dot (it is, unless computed between the
    // dot and the add: then move nothing and skip).
    bool before = x->isBlockArg() || x->definingOp()->parentBlock() !=
                                         dot->parentBlock();
    if (!before) {
      Block *b = dot->parentBlock();
      for (auto it = b->ops().begin(); it != b->ops().end(); ++it) {
        if (it->get() == x->definingOp()) {
          before = true;
          break;
        }
        if (it->get() == dot)
          break;
      }
    }
    if (!before)
      continue;
    dot->operands()[2] = x;
    replaceAllUsesWith(f, add->result(0), d);
    add->erase();
    stats.add("gpu.dot-accumulators-folded");
  }
}

/// Warps along M and N for an mma.sync tile: split the dim with more
/// instruction tiles left per warp (N tiles counted 16 wide, so that a
/// warp's tile stays roughly square), M first on ties.
std::vector<int64_t> warpsForMma(int64_t M, int64_t N, int numWarps) {
  int64_t wm = 1, wn = 1;
  while (wm * wn < numWarps) {
    int64_t tilesM = M / (16 * wm), tilesN = N / (16 * wn);
    if (tilesM >= tilesN && tilesM > 1)
      wm *= 2;
    else if (tilesN > 1)
      wn *= 2;
    else
      wm *= 2; // more warps than tiles: copies
  }
  return {wm, wn};
}

/// Warps along batch, M and N for a batched mma.sync tile: one batch element
/// per warp as far as the batch goes (a warp then shares no operand with
/// another), the rest along M and N as for a 2-D tile.
std::vector<int64_t> warpsForBatchedMma(int64_t B, int64_t M, int64_t N,
                                        int numWarps) {
  int64_t wb = 1;
  while (wb * 2 <= B && wb * 2 <= numWarps)
    wb *= 2;
  std::vector<int64_t> mn = warpsForMma(M, N, numWarps / (int)wb);
  return {wb, mn[0], mn[1]};
}

/// The k-width (K elements per 32-bit register) of mma.sync for operands of
/// dtype `t` (after fp8 is widened); 0 when there is no instruction.
int mmaKWidth(DType t) {
  switch (t) {
  case DType::FP16:
  case DType::BF16:
    return 2;
  case DType::FP32:
    return 1; // tf32
  case DType::I8:
    return 4;
  default:
    return 0;
  }
}

/// Step 2's web: the values that must share the accumulator's layout.
struct AccumulatorWeb {
  std::set<Value *> owned;                          // retyped in place
  std::vector<std::pair<Operation *, unsigned>> in; // operands flowing in
  std::vector<std::pair<Operation *, unsigned>> out; // other uses

  void build(Function &f, Operation *dot) {
    std::deque<Value *> work;
    auto addInput = [&](Operation *op, unsigned i) {
      in.push_back({op, i});
      Value *v = op->operand(i);
      if (owns(v))
        work.push_back(v);
    };
    std::set<std::pair<Operation *, unsigned>> inSet;
    owned.insert(dot->result(0));
    addInput(dot, 2);
    while (!work.empty()) {
      Value *v = work.front();
      work.pop_front();
      if (!owned.insert(v).second)
        continue;
      if (Block *b = v->ownerBlock()) {
        Operation *fo = b->parentOp();
        unsigned i = v->index() - 1;
        work.push_back(fo->result(i));
        addInput(fo, 3 + i);
        addInput(b->terminator(), i);
      } else {
        Operation *d = v->definingOp();
        unsigned i = v->index();
        if (d->code() == OpCode::For) {
          Block &body = d->region(0).front();
          work.push_back(body.argument(1 + i));
        } else { // scf.if
          for (unsigned r = 0; r < 2; ++r)
            if (!d->region(r).empty())
              addInput(d->region(r).front().terminator(), i);
        }
      }
    }
    for (auto &p : in)
      inSet.insert(p);
    f.walk([&](Operation *op) {
      for (unsigned i = 0; i < op->numOperands(); ++i)
        if (owned.count(op->operand(i)) && !inSet.count({op, i}))
          out.push_back({op, i});
    });
  }

  /// Values the web may retype: loop-carried values and if results (their
  /// op defines no data of its own), and the dot's own result.
  static bool owns(Value *v) {
    if (Block *b = v->ownerBlock()) {
      Operation *p = b->parentOp();
      return p && p->code() == OpCode::For && v->index() >= 1;
    }
    Operation *d = v->definingOp();
    return d && (d->code() == OpCode::For || d->code() == OpCode::If);
  }
};

void retypeAccumulator(Function &f, Operation *dot, const GPULayout *acc,
                       PassStats &stats) {
  AccumulatorWeb web;
  web.build(f, dot);
  std::map<Value *, const Type *> oldType;
  for (Value *v : web.owned) {
    oldType[v] = v->type();
    v->setType(withLayout(v->type(), acc));
  }
  for (auto [op, i] : web.in) {
    Value *v = op->operand(i);
    if (web.owned.count(v))
      continue;
    op->operands()[i] = createLayoutConversion(op, v, acc);
    stats.add("gpu.conversions-inserted");
  }
  for (auto [op, i] : web.out) {
    Value *v = op->operand(i);
    op->operands()[i] =
        createLayoutConversion(op, v, layoutOf(oldType.at(v)));
    stats.add("gpu.conversions-inserted");
  }
}

/// Operand layouts for an FMA dot whose accumulator has layout `accLL`
/// (shape [batch..., M, N]; rank 2 or 3): A ([batch..., M, K]) keeps the
/// accumulator's batch and M placement and holds all of K in registers; B
/// ([batch..., K, N]) likewise with N. Where the accumulator's threads
/// spread along the dim the operand lacks (N for A, M for B), the operand is
/// broadcast to them. Null when a basis of the accumulator mixes that dim
/// with the others (no such operand layout).
const GPULayout *fmaOperandLayout(const LinearLayout &accLL, int opIdx,
                                  int64_t K) {
  size_t rank = accLL.shape().size();
  size_t mDim = rank - 2, nDim = rank - 1;
  size_t dropped = opIdx == 0 ? nDim : mDim; // the acc dim the operand lacks
  size_t kDim = opIdx == 0 ? nDim : mDim;    // the operand's K dim
  bool ok = true;
  // An accumulator basis as an operand basis: the shared dims in place, the
  // dropped one gone (the operand's K dim sits where it was, and is 0).
  auto project = [&](const Basis &b, bool dropOther, std::vector<Basis> &to) {
    bool other = b[dropped] != 0, shared = false;
    for (size_t d = 0; d < rank; ++d)
      shared |= d != dropped && b[d] != 0;
    if (other && shared) {
      ok = false;
      return;
    }
    if (other && dropOther)
      return;
    Basis nb(rank, 0);
    for (size_t d = 0; d < rank; ++d)
      if (d != dropped)
        nb[d] = b[d];
    to.push_back(nb);
  };
  std::vector<Basis> reg, lane, warp;
  for (const Basis &b : accLL.reg())
    project(b, true, reg);
  for (int64_t k = 1; k < K; k *= 2) {
    Basis nb(rank, 0);
    nb[kDim] = k;
    reg.push_back(nb);
  }
  for (const Basis &b : accLL.lane())
    project(b, false, lane);
  for (const Basis &b : accLL.warp())
    project(b, false, warp);
  if (!ok)
    return nullptr;
  std::vector<int64_t> shape = accLL.shape();
  shape[kDim] = K;
  return LinearEncoding::get(LinearLayout::distributed(
      shape, std::move(reg), std::move(lane), std::move(warp)));
}

Value *convertOperand(Operation *dot, unsigned i, const GPULayout *l,
                      PassStats &stats) {
  Value *v = dot->operand(i);
  if (layoutOf(v->type()) == l)
    return v;
  stats.add("gpu.conversions-inserted");
  return createLayoutConversion(dot, v, l);
}

/// The contiguous dim (0 or 1) of the registers of a 2-D tensor type, or of
/// the matrix dims of a batched one (0: the second to last): the dim its
/// first register (else lane) basis walks.
int contiguousDim(const Type *t) {
  const LinearLayout &ll = linearOf(t);
  size_t last = t->shape().size() - 1;
  for (const Basis &b : ll.reg())
    return b[last] != 0 ? 1 : 0;
  for (const Basis &b : ll.lane())
    return b[last] != 0 ? 1 : 0;
  return 1;
}

/// Where the shared-memory copy of dot operand `v` is written: before the
/// dot, or before the outermost loop around it that `v` does not depend on.
/// A loop-invariant operand (attention's Q) is then stored once, and does
/// not stay in registers across the loop.
Operation *allocPoint(Operation *dot, Value *v) {
  auto inside = [&](Operation *loop) {
    Operation *d = v->definingOp();
    if (!d)
      d = v->ownerBlock()->parentOp();
    for (; d; d = d->parentOp())
      if (d == loop)
        return true;
    return false;
  };
  Operation *at = dot;
  for (Operation *p = dot->parentOp(); p && p->code() == OpCode::For;
       p = p->parentOp()) {
    if (inside(p))
      break;
    at = p;
  }
  return at;
}

/// The shared copy of `v` of type `m` (immutable) made before `at`, in its
/// block or an enclosing one, which a dot at `at` reads instead of making a
/// second one. The attention backward's causal dK/dV kernel reads K and V
/// in two loops: with a copy before each, their registers (64 a thread at
/// d128) stayed live across the first loop to be stored again before the
/// second, and ptxas spilled them (212 bytes at d128, 64x128 blocks).
Value *existingCopy(Operation *at, Value *v, const Type *m) {
  for (Operation *pos = at; pos; pos = pos->parentOp()) {
    Block *b = pos->parentBlock();
    if (!b)
      break;
    for (auto &op : b->ops()) {
      if (op.get() == pos)
        break;
      if (op->code() == OpCode::LocalAlloc && op->numOperands() == 1 &&
          op->operand(0) == v && op->result(0)->type() == m)
        return op->result(0);
    }
  }
  return nullptr;
}

/// Whether wgmma should read A from registers: a 16-bit operand that is
/// computed (not loaded from memory).
bool fromRegisters(Value *a, bool sixteenBit) {
  if (!sixteenBit)
    return false;
  Operation *d = a->definingOp();
  while (d && isLayoutConversion(*d))
    d = d->operand(0)->definingOp();
  return d && d->code() != OpCode::Load && d->code() != OpCode::LocalLoad &&
         d->code() != OpCode::DescriptorLoad;
}

/// An mma.sync operand goes to its dot_op layout through shared memory as
/// Triton's does: ttg.local_alloc (a swizzled layout, rows of 16-byte
/// vectors along the registers' contiguous dim, the XOR phase changing
/// every 128 bytes so that the 8 rows an ldmatrix reads fall in distinct
/// banks) then ttg.local_load (ldmatrix where it applies). The pipelining
/// pass turns a tt.load feeding the alloc into asynchronous copies.
Value *throughShared(Operation *dot, unsigned i, const GPULayout *l,
                     PassStats &stats) {
  Value *v = dot->operand(i);
  const Type *t = v->type();
  // A batched operand stores its matrices one after the other (the batch
  // dim slowest), each swizzled as a 2-D operand is.
  int64_t off = int64_t(t->shape().size()) - 2;
  int c = contiguousDim(t);
  int64_t eb = storageBytes(t->element());
  int64_t rowBytes = t->shape()[off + c] * eb;
  int64_t vec = std::max<int64_t>(
      1, std::min<int64_t>(16 / eb, t->shape()[off + c]));
  int64_t perPhase = std::max<int64_t>(1, 128 / rowBytes);
  int64_t maxPhase = std::clamp<int64_t>(rowBytes / 16, 1, 8);
  std::vector<int64_t> order = {off + c, off + 1 - c};
  if (off)
    order.push_back(0);
  const SwizzledSharedLayout *sl =
      SwizzledSharedLayout::get(vec, perPhase, maxPhase, order);
  const Type *m = Type::memdesc(t->element(), t->shape(), sl, false);
  Operation *at = allocPoint(dot, v);
  Value *mem = existingCopy(at, v, m);
  if (!mem)
    mem = at->parentBlock()
              ->insert(at->parentBlock()->find(at),
                       Operation::create(OpCode::LocalAlloc, {v}, {m}, {},
                                         dot->loc()))
              ->result(0);
  stats.add("gpu.operands-through-shared");
  Block *b = dot->parentBlock();
  return b
      ->insert(b->find(dot),
               Operation::create(OpCode::LocalLoad, {mem},
                                 {withLayout(t, l)}, {}, dot->loc()))
      ->result(0);
}

/// fp8 operands of mma.sync: widened to fp16 (exactly) in their own layout.
Value *widenFp8(Operation *dot, Value *v) {
  const Type *t = v->type();
  const Type *h = Type::tensor(Type::scalar(DType::FP16), t->shape(),
                               t->layout());
  auto ext =
      Operation::create(OpCode::ExtF, {v}, {h}, {}, dot->loc());
  Block *b = dot->parentBlock();
  return b->insert(b->find(dot), std::move(ext))->result(0);
}

/// The NVMMA layout (wgmma's) of a dot operand of `shape` whose contiguous
/// dim is `contig` (0 or 1): the widest swizzle the contiguous extent fills
/// (at most 128 bytes, at least 32: narrower tiles have no swizzle mode
/// wgmma reads here), or null. `unit` bounds the swizzle width so that each
/// instruction's tile along the contiguous dim starts at a whole column
/// block (MN-major B: the instruction's N).
const NVMMASharedLayout *wgmmaShared(const std::vector<int64_t> &shape,
                                     int contig, int64_t elemBits,
                                     int64_t unit) {
  int64_t bytes = std::min(shape[contig], unit) * elemBits / 8;
  int64_t w = std::min<int64_t>(128, bytes);
  if (w < 32)
    return nullptr;
  return NVMMASharedLayout::get(w, contig == 0, elemBits);
}

/// Step 2 on sm_90a: wgmma when the tile has whole warpgroups (M a multiple
/// of 64, num_warps a multiple of 4) and the operands are 16-bit floats,
/// fp8 or int8 (fp32 keeps mma.sync, which rounds to tf32 the way the
/// executor does). The operands go to shared memory (ttg.local_alloc in an
/// NVMMA layout) and the dot becomes ttng.warp_group_dot. Returns false
/// when the dot does not qualify.
bool useWgmma(Function &f, Operation *&dot, int numWarps, PassStats &stats) {
  const Type *rt = dot->result(0)->type();
  const Type *at = dot->operand(0)->type(), *bt = dot->operand(1)->type();
  int64_t M = rt->shape()[0], N = rt->shape()[1], K = at->shape()[1];
  DType da = at->element()->dtype(), db = bt->element()->dtype();
  DType dc = rt->element()->dtype();
  bool f16 = (da == DType::FP16 || da == DType::BF16) && da == db &&
             (dc == DType::FP32 || (dc == DType::FP16 && da == DType::FP16));
  bool f8 = isFp8(da) && isFp8(db) && dc == DType::FP32;
  bool i8 = da == DType::I8 && db == DType::I8 && dc == DType::I32;
  if (!(f16 || f8 || i8) || numWarps % 4 != 0 || M % 64 != 0 || N < 8)
    return false;
  int64_t elemBits = f16 ? 16 : 8;
  int64_t instrK = 256 / elemBits; // 32 bytes of K per instruction
  if (K % instrK != 0)
    return false;
  int64_t groups = numWarps / 4;
  int64_t wgM = std::min<int64_t>(groups, M / 64);
  int64_t wgN = groups / wgM;
  if (N / wgN < 8)
    return false;
  int64_t instrN = std::min<int64_t>(256, N / wgN);
  // A is K-major (contiguous K). B is read N-major (transposed by the
  // instruction, 16-bit types only) when its registers run along N, else
  // stored K-major.
  int bContig = f16 && contiguousDim(bt) == 1 ? 1 : 0;
  const NVMMASharedLayout *la =
      wgmmaShared(at->shape(), 1, elemBits, at->shape()[1]);
  const NVMMASharedLayout *lb = wgmmaShared(
      bt->shape(), bContig, elemBits, bContig == 1 ? instrN : bt->shape()[0]);
  if (!la || !lb)
    return false;
  const NvidiaMmaLayout *acc = NvidiaMmaLayout::get(
      3, 0, {4 * wgM, wgN}, {16, instrN, instrK});
  retypeAccumulator(f, dot, acc, stats);
  auto toShared = [&](unsigned i, const NVMMASharedLayout *l) {
    Value *v = dot->operand(i);
    const Type *m = Type::memdesc(v->type()->element(), v->type()->shape(), l,
                                  /*mutable=*/false);
    Operation *at = allocPoint(dot, v);
    if (Value *mem = existingCopy(at, v, m))
      return mem;
    auto alloc = Operation::create(OpCode::LocalAlloc, {v}, {m}, {},
                                   dot->loc());
    Block *b = at->parentBlock();
    return b->insert(b->find(at), std::move(alloc))->result(0);
  };
  // A computed in registers (attention's p = softmax(...).to(fp16)) feeds
  // the instruction from registers in the dot_op layout, which for 16-bit
  // types is the accumulator layout's own register order: no trip through
  // shared memory. A loaded operand goes to shared memory, where the
  // pipelining pass can fill it asynchronously.
  Value *sa = fromRegisters(dot->operand(0), f16)
                  ? createLayoutConversion(dot, dot->operand(0),
                                           DotOperandLayout::get(0, acc, 2))
                  : toShared(0, la);
  Value *sb = toShared(1, lb);
  auto wg = Operation::create(OpCode::WarpGroupDot,
                              {sa, sb, dot->operand(2)},
                              {dot->result(0)->type()}, dot->attrs(),
                              dot->loc());
  Block *b = dot->parentBlock();
  Operation *w = b->insert(b->find(dot), std::move(wg));
  replaceAllUsesWith(f, dot->result(0), w->result(0));
  dot->erase();
  dot = w;
  stats.add("gpu.dots-wgmma");
  return true;
}

void accelerate(Function &f, Operation *dot, const PipelineOptions &opts,
                int numWarps, PassStats &stats) {
  const Type *rt = dot->result(0)->type();
  const GPULayout *cur = layoutOf(rt);
  if (!cur || cur->kind() == GPULayout::Kind::NvidiaMma)
    return;
  size_t rank = rt->shape().size();
  int64_t M = rt->shape()[rank - 2], N = rt->shape()[rank - 1];
  int64_t K = dot->operand(0)->type()->shape()[rank - 1];
  DType da = dot->operand(0)->type()->element()->dtype();
  DType db = dot->operand(1)->type()->element()->dtype();
  DType dc = rt->element()->dtype();
  std::string prec = dot->hasAttr("input_precision")
                         ? dot->strAttr("input_precision")
                         : std::string("ieee");
  // A batched (rank-3) dot uses mma.sync also on sm_90a: wgmma's
  // warpgroups tile one matrix of 64-row multiples.
  if (rank == 2 && opts.target.sm >= 90 && opts.target.archA &&
      useWgmma(f, dot, numWarps, stats))
    return;
  bool fp8 = isFp8(da) && isFp8(db);
  DType opType = fp8 ? DType::FP16 : da;
  int kWidth = mmaKWidth(opType);
  bool mma = opts.target.sm >= 80 && kWidth && (fp8 || da == db) &&
             !(opType == DType::FP32 && prec == "ieee") &&
             (dc == DType::FP32 || dc == DType::I32 ||
              (dc == DType::FP16 && opType == DType::FP16)) &&
             M % 16 == 0 && N % 8 == 0 && K % (8 * kWidth) == 0;
  if (mma) {
    const NvidiaMmaLayout *acc =
        rank == 2
            ? NvidiaMmaLayout::get(2, 0, warpsForMma(M, N, numWarps), {16, 8})
            : NvidiaMmaLayout::get(2, 0,
                                   warpsForBatchedMma(rt->shape()[0], M, N,
                                                      numWarps),
                                   {1, 16, 8});
    retypeAccumulator(f, dot, acc, stats);
    for (unsigned i = 0; i < 2; ++i) {
      if (fp8)
        dot->operands()[i] = widenFp8(dot, dot->operand(i));
      dot->operands()[i] = throughShared(
          dot, i, DotOperandLayout::get((int)i, acc, kWidth), stats);
    }
    stats.add("gpu.dots-mma-v2");
    return;
  }
  const LinearLayout &accLL = linearOf(rt);
  for (unsigned i = 0; i < 2; ++i) {
    const GPULayout *l = fmaOperandLayout(accLL, (int)i, K);
    if (!l)
      throw InternalError("accelerate-matmul: the accumulator layout " +
                          cur->str() + " mixes M and N in one basis");
    dot->operands()[i] = convertOperand(dot, i, l, stats);
  }
  stats.add("gpu.dots-fma");
}

} // namespace

void accelerateMatmul(Module &m, const PipelineOptions &opts,
                      PassStats &stats) {
  for (auto &fn : m.functions()) {
    Function &f = *fn;
    int nw = opts.numWarps;
    auto it = f.attrs().find("num_warps");
    if (it != f.attrs().end() && std::holds_alternative<int64_t>(it->second))
      nw = (int)std::get<int64_t>(it->second);
    foldAccumulate(f, stats);
    std::vector<Operation *> dots;
    f.walk([&](Operation *op) {
      if (op->code() == OpCode::Dot)
        dots.push_back(op);
    });
    for (Operation *dot : dots)
      accelerate(f, dot, opts, nw, stats);
  }
}

} // namespace tritium::gpu
