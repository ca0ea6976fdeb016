// Shared memory as values: memory descriptors, their loads and stores,
// asynchronous copies from global memory (cp.async) and mbarriers.
//
// A memdesc is one .b32 register, the shared address of its buffer: the
// kernel's shared base plus the `allocation.offset` of its ttg.local_alloc
// (--allocate-shared-memory), plus i * (bytes of one buffer) after
// ttg.memdesc_index. A token has no register.
//
// Where an element lives: the shared layout maps an element offset to tile
// coordinates and the tensor's layout maps (register, lane, warp) to them,
// so regLayout.invertAndCompose(sharedLayout) gives every (register, lane,
// warp) its offset, the XOR of the parts of their bits (OffsetMap). Each
// access is then the thread's part (a prologue register, Emitter::
// threadValue) XOR the register's part, the latter split into bits XORed
// into a register and an immediate (Emitter::xorSplit), times the element
// size, plus the buffer's base.
//
// Vectors: registers 0..v-1 whose offsets are 0..v-1 while every other
// basis is a multiple of v move as one access of up to 16 bytes (sub-word
// elements packed into 32-bit words). A ttg.local_load into an mma operand
// layout (16-bit elements) uses ldmatrix where each 8x8 matrix row is 16
// contiguous bytes (see ldmatrixLoad).
//
// Memory order: barriers between ops are gpu.barrier ops (--insert-barriers);
// cp.async writes are complete in the issuing thread after
// cp.async.wait_group, and visible to the others after the barrier the pass
// put after the wait.
#include "emitter.h"

#include "tritium/gpu/mma_layouts.h"
#include "tritium/gpu/shared_layouts.h"
#include "tritium/transforms/fold.h"

#include <algorithm>
#include <cmath>

namespace tritium::nvidia {

namespace {

/// The element offset of every bit of a tensor's (register, lane, warp) in
/// one buffer of a memdesc; offsets of several bits combine by XOR.
struct OffsetMap {
  std::vector<int64_t> reg, lane, warp;

  int64_t atRegister(int r) const {
    int64_t o = 0;
    for (size_t i = 0; i < reg.size(); ++i)
      if ((r >> i) & 1)
        o ^= reg[i];
    return o;
  }
  /// The register bits whose registers repeat another's element.
  int copyRegisterMask() const {
    int m = 0;
    for (size_t i = 0; i < reg.size(); ++i)
      if (reg[i] == 0)
        m |= 1 << i;
    return m;
  }
  std::string key() const {
    std::string k = "smem|";
    for (const auto *v : {&reg, &lane, &warp}) {
      for (int64_t x : *v)
        k += std::to_string(x) + ",";
      k += "|";
    }
    return k;
  }
};

OffsetMap offsetMap(Emitter &e, const Operation &op, const Type *tensor,
                    const Type *memdesc) {
  if (!tensor->isTensor() || !gpu::layoutOf(tensor))
    e.internalError(op, "needs a tensor with a layout, found " +
                            tensor->str());
  if (tensor->shape() != memdesc->bufferShape())
    e.internalError(op, "moves a " + tensor->str() + " through a buffer of " +
                            memdesc->str());
  gpu::LinearLayout x =
      gpu::linearOf(tensor).invertAndCompose(gpu::sharedLinearOf(memdesc));
  int o = x.outIndex(gpu::kOffset);
  OffsetMap m;
  for (const gpu::Basis &b : x.reg())
    m.reg.push_back(b[o]);
  for (const gpu::Basis &b : x.lane())
    m.lane.push_back(b[o]);
  for (const gpu::Basis &b : x.warp())
    m.warp.push_back(b[o]);
  return m;
}

bool isBool(const Type *elem) {
  return elem->isScalar() && elem->dtype() == DType::I1;
}

/// Elements per access: the registers whose offsets run 0, 1, ..., as long
/// as every other basis keeps the run aligned; at most 16 bytes, and whole
/// 32-bit words for sub-word elements.
int vectorWidth(const OffsetMap &m, int64_t eb, bool isPred) {
  if (isPred)
    return 1;
  int run = 0;
  while (run < (int)m.reg.size() && m.reg[run] == (int64_t(1) << run))
    ++run;
  int64_t v = std::min<int64_t>(int64_t(1) << run, 16 / eb);
  auto aligned = [&](int64_t v) {
    for (size_t i = log2Exact(v); i < m.reg.size(); ++i)
      if (m.reg[i] % v)
        return false;
    for (const auto *set : {&m.lane, &m.warp})
      for (int64_t b : *set)
        if (b % v)
          return false;
    return true;
  };
  while (v > 1 && !aligned(v))
    v /= 2;
  if (eb < 4 && v * eb < 4)
    v = 1;
  return (int)v;
}

/// The shared addresses of one op's accesses: {register, byte immediate}
/// for an element offset whose thread part is `thr` (bits `mask`).
class Addresses {
public:
  Addresses(Emitter &e, std::string base, int64_t eb, std::string thr,
            uint64_t mask)
      : e_(e), base_(std::move(base)), eb_(eb), thr_(std::move(thr)),
        mask_(mask) {}

  std::string operator()(int64_t regPart) {
    auto [t, imm] = e_.xorSplit(thr_, mask_, regPart);
    std::string &a = addrs_[t];
    if (a.empty()) {
      a = e_.reg(RC::B32);
      e_.ins("mad.lo.s32 " + a + ", " + t + ", " + std::to_string(eb_) + ", " +
             base_);
    }
    int64_t bytes = imm * eb_;
    return "[" + a + (bytes ? "+" + std::to_string(bytes) : "") + "]";
  }

private:
  Emitter &e_;
  std::string base_;
  int64_t eb_;
  std::string thr_;
  uint64_t mask_;
  std::map<std::string, std::string> addrs_;
};

uint64_t threadMask(const std::vector<int64_t> &lane,
                    const std::vector<int64_t> &warp) {
  uint64_t mask = 0;
  for (int64_t b : lane)
    mask |= uint64_t(b);
  for (int64_t b : warp)
    mask |= uint64_t(b);
  return mask;
}

Addresses addressesOf(Emitter &e, const OffsetMap &m, const std::string &base,
                      int64_t eb) {
  std::string thr = e.threadValue(m.key(), m.lane, m.warp, false);
  return Addresses(e, base, eb, thr, threadMask(m.lane, m.warp));
}

std::string list(const Regs &r) {
  if (r.size() == 1)
    return r[0];
  std::string s = "{";
  for (size_t k = 0; k < r.size(); ++k)
    s += (k ? ", " : "") + r[k];
  return s + "}";
}

/// Vectors of `v` registers among `n` that a thread writes itself: those
/// whose first register is no copy (copyRegisterMask) of another's.
int ownedVectors(size_t n, int v, int copies) {
  int count = 0;
  for (int r = 0; r < (int)n; r += v)
    count += (r & copies) == 0;
  return count;
}

std::string vec(size_t n) { return n > 1 ? ".v" + std::to_string(n) : ""; }

/// st.shared of `vals` (one vector of elements) at `addr`.
void storeVector(Emitter &e, const std::string &guard, const Type *elem,
                 const std::string &addr, const Regs &vals) {
  int64_t eb = gpu::storageBytes(elem);
  if (isBool(elem)) {
    std::string b = e.reg(RC::B16);
    e.ins("selp.u16 " + b + ", 1, 0, " + vals[0]);
    e.ins(guard + "st.shared.u8 " + addr + ", " + b);
    return;
  }
  if (eb >= 4 || vals.size() == 1) {
    e.ins(guard + "st.shared" + vec(vals.size()) + "." +
          memType(elem, false) + " " + addr + ", " + list(vals));
    return;
  }
  size_t per = size_t(4 / eb);
  Regs words;
  for (size_t j = 0; j < vals.size(); j += per)
    words.push_back(
        packWord(e, Regs(vals.begin() + j, vals.begin() + j + per), eb));
  e.ins(guard + "st.shared" + vec(words.size()) + ".b32 " + addr + ", " +
        list(words));
}

/// ld.shared of `n` elements at `addr`.
Regs loadVector(Emitter &e, const Type *elem, const std::string &addr,
                int n) {
  int64_t eb = gpu::storageBytes(elem);
  if (isBool(elem)) {
    std::string b = e.reg(RC::B16), p = e.reg(RC::Pred);
    e.ins("ld.shared.u8 " + b + ", " + addr);
    e.ins("setp.ne.u16 " + p + ", " + b + ", 0");
    return {p};
  }
  Regs got;
  if (eb >= 4 || n == 1) {
    for (int k = 0; k < n; ++k)
      got.push_back(e.regFor(elem));
    e.ins("ld.shared" + vec(n) + "." + memType(elem, true) + " " + list(got) +
          ", " + addr);
    return got;
  }
  Regs words;
  for (int64_t j = 0; j < n * eb / 4; ++j)
    words.push_back(e.reg(RC::B32));
  e.ins("ld.shared" + vec(words.size()) + ".b32 " + list(words) + ", " + addr);
  bool signedByte = elem->dtype() == DType::I8;
  for (const std::string &w : words)
    for (const std::string &x : unpackWord(e, w, eb, signedByte))
      got.push_back(x);
  return got;
}

/// Every element `value` holds in this thread, written to the buffer at
/// `base`; copies (threads or registers holding an element another one
/// owns) write nothing.
void storeTile(Emitter &e, Operation &op, Value *value, const Type *memdesc,
               const std::string &base) {
  const Type *t = value->type();
  const Type *elem = t->element();
  int64_t eb = gpu::storageBytes(elem);
  OffsetMap m = offsetMap(e, op, t, memdesc);
  int v = vectorWidth(m, eb, isBool(elem));
  std::string owner = e.ownerPred(t);
  std::string guard = owner.empty() ? "" : "@" + owner + " ";
  Addresses addr = addressesOf(e, m, base, eb);
  const Regs &vr = e.regs(value);
  int copies = m.copyRegisterMask();
  e.noteAccess(op, "st.shared", eb, v, ownedVectors(vr.size(), v, copies));
  e.sharedWriteBegins(op);
  for (int r = 0; r < (int)vr.size(); r += v) {
    if (r & copies)
      continue;
    storeVector(e, guard, elem, addr(m.atRegister(r)),
                Regs(vr.begin() + r, vr.begin() + r + v));
  }
  // An NVMMA buffer is read by wgmma through the async proxy: each writer
  // orders its generic-proxy stores before that (the barrier that follows
  // then orders them across threads).
  if (gpu::sharedLayoutOf(memdesc)->kind() == gpu::SharedLayout::Kind::NVMMA) {
    e.requireSM(op, 90, "an NVMMA shared layout (the async proxy)");
    e.ins("fence.proxy.async.shared::cta");
  }
}

// ---- ldmatrix ---------------------------------------------------------------

/// ttg.local_load into an mma operand layout of 16-bit elements with
/// ldmatrix.sync.aligned.m8n8.xN: one instruction loads N (1, 2, 4) 8x8
/// matrices whose rows are 16 contiguous bytes, lane L giving the address
/// of row L % 8 of matrix L / 8; thread l receives, of matrix j, in its
/// 32-bit register j, the pair (row l / 4, columns 2 (l % 4) + {0, 1})
/// (.trans: rows 2 (l % 4) + {0, 1} of column l / 4).
///
/// In terms of the offset map (16-bit register index bits, lanes):
///   - the three bits that walk one row (offsets 1, 2, 4 in order) are
///     register bit 0 and lane bits 0, 1 (plain), or lane bits 2, 3, 4
///     (.trans: the thread's pair lies across two rows);
///   - the three others of those pick the row; register bits 1..log2(N)
///     pick the matrix; every basis but the row's three is a multiple of 8
///     elements, so that rows start 16-byte aligned and XOR is addition
///     below them.
/// Then lane L's address is that of its row (bits 0-2: the row bits, bits
/// 3-4: the matrix bits) and the map says exactly which registers receive
/// which elements. Returns false (nothing emitted) when it does not hold.
bool ldmatrixLoad(Emitter &e, Operation &op, const std::string &base,
                  const OffsetMap &m) {
  const Type *rt = op.result(0)->type();
  const auto *dotOp =
      dynamic_cast<const gpu::DotOperandLayout *>(gpu::layoutOf(rt));
  if (!dotOp || gpu::storageBytes(rt->element()) != 2 || isBool(rt->element()))
    return false;
  int n = Emitter::numRegs(rt);
  if (n < 2 || m.lane.size() != 5)
    return false;
  int mats = std::min(4, n / 2), matBits = log2Exact(mats);
  for (bool trans : {false, true}) {
    std::vector<int64_t> inRow, row;
    if (!trans) {
      inRow = {m.reg[0], m.lane[0], m.lane[1]};
      row = {m.lane[2], m.lane[3], m.lane[4]};
    } else {
      inRow = {m.lane[2], m.lane[3], m.lane[4]};
      row = {m.reg[0], m.lane[0], m.lane[1]};
    }
    if (inRow != std::vector<int64_t>{1, 2, 4})
      continue;
    std::vector<int64_t> others = row;
    for (size_t i = 1; i < m.reg.size(); ++i)
      others.push_back(m.reg[i]);
    others.insert(others.end(), m.warp.begin(), m.warp.end());
    if (std::any_of(others.begin(), others.end(),
                    [](int64_t b) { return b % 8 != 0; }))
      continue;
    // The row address each lane supplies.
    std::vector<int64_t> supply = row;
    for (int j = 0; j < 2; ++j)
      supply.push_back(j < matBits ? m.reg[1 + j] : 0);
    std::string key = std::string(trans ? "ldmatrix.trans|" : "ldmatrix|") +
                      m.key();
    std::string thr = e.threadValue(key, supply, m.warp, false);
    Addresses addr(e, base, 2, thr, threadMask(supply, m.warp));
    std::string ins = "ldmatrix.sync.aligned.m8n8.x" + std::to_string(mats) +
                      (trans ? ".trans" : "") + ".shared.b16 ";
    int per = 2 * mats; // 16-bit registers one instruction fills
    e.noteAccess(op, trans ? "ldmatrix.trans" : "ldmatrix", 2, per,
                 (n + per - 1) / per);
    Regs out(n);
    for (int g = 0; g < n; g += per) {
      Regs d;
      for (int j = 0; j < mats; ++j)
        d.push_back(e.reg(RC::B32));
      e.ins(ins + list(d) + ", " + addr(m.atRegister(g)));
      for (int j = 0; j < mats; ++j) {
        std::string lo = e.reg(RC::B16), hi = e.reg(RC::B16);
        e.ins("mov.b32 {" + lo + ", " + hi + "}, " + d[j]);
        out[g + 2 * j] = lo;
        out[g + 2 * j + 1] = hi;
      }
    }
    e.bind(op.result(0), std::move(out));
    return true;
  }
  return false;
}

void emitLocalLoad(Emitter &e, Operation &op) {
  const Type *md = op.operand(0)->type(), *rt = op.result(0)->type();
  const Type *elem = rt->element();
  int64_t eb = gpu::storageBytes(elem);
  std::string base = e.regs(op.operand(0))[0];
  OffsetMap m = offsetMap(e, op, rt, md);
  if (ldmatrixLoad(e, op, base, m))
    return;
  int v = vectorWidth(m, eb, isBool(elem));
  Addresses addr = addressesOf(e, m, base, eb);
  int n = Emitter::numRegs(rt), copies = m.copyRegisterMask();
  e.noteAccess(op, "ld.shared", eb, v, ownedVectors(n, v, copies));
  Regs out(n);
  for (int r = 0; r < n; r += v) {
    if (r & copies)
      continue;
    Regs got = loadVector(e, elem, addr(m.atRegister(r)), v);
    std::copy(got.begin(), got.end(), out.begin() + r);
  }
  for (int r = 0; r < n; ++r)
    if (r & copies)
      out[r] = out[r & ~copies];
  e.bind(op.result(0), std::move(out));
}

// ---- asynchronous copies ----------------------------------------------------

/// True when `v` is a constant zero (or absent): cp.async fills masked-off
/// elements with zeros only.
bool isZeroOrAbsent(Value *v) { return !v || isConstantZero(v); }

/// The copy as ld.global + st.shared, element by element: for the copies
/// cp.async cannot make (fewer than 4 bytes per access, a non-zero
/// `other`). Its writes complete at once, which satisfies every later
/// wait.
void synchronousCopy(Emitter &e, Operation &op, const OffsetMap &m,
                     Addresses &addr, const std::string &owner, int site) {
  Value *ptr = op.operand(0);
  const Type *elem = op.operand(1)->type()->element();
  int64_t eb = gpu::storageBytes(elem);
  const Regs &pr = e.regs(ptr);
  const Regs *mr = op.numOperands() > 2 ? &e.regs(op.operand(2)) : nullptr;
  const Regs *orr = op.numOperands() > 3 ? &e.regs(op.operand(3)) : nullptr;
  RC rc = isBool(elem) ? RC::B16 : regClass(elem);
  std::string ownerGuard = owner.empty() ? "" : "@" + owner + " ";
  int copies = m.copyRegisterMask();
  for (int r = 0; r < (int)pr.size(); ++r) {
    if (r & copies)
      continue;
    std::string mask = mr ? (*mr)[mr->size() == 1 ? 0 : r] : "";
    std::string pred = e.checkAccess(site, pr[r], (int)eb, mask);
    std::string dst = addr(m.atRegister(r));
    std::string d = e.reg(rc);
    if (!pred.empty()) {
      std::string init = "0";
      if (orr) {
        init = (*orr)[orr->size() == 1 ? 0 : r];
        if (isBool(elem)) {
          std::string b = e.reg(RC::B16);
          e.ins("selp.u16 " + b + ", 1, 0, " + init);
          init = b;
        }
      } else if (rc == RC::F32) {
        init = "0f00000000";
      } else if (rc == RC::F64) {
        init = "0d0000000000000000";
      }
      e.ins(std::string(movFor(rc)) + " " + d + ", " + init);
    }
    std::string ty = isBool(elem) ? "u8" : memType(elem, true);
    e.ins((pred.empty() ? "" : "@" + pred + " ") + "ld.global." + ty + " " + d +
          ", [" + pr[r] + "]");
    e.ins(ownerGuard + "st.shared." +
          (isBool(elem) ? "u8" : memType(elem, false)) + " " + dst + ", " + d);
  }
}

/// ttg.async_copy_global_to_local: cp.async of 4, 8 or 16 bytes per access
/// (16: .cg, bypassing L1), as wide as the pointers' layout and axis info,
/// the mask's constancy and the shared layout allow. A masked-off access
/// reads 0 bytes (src-size 0) and zero-fills its shared bytes.
/// How ttg.async_copy_global_to_local moves its data: `width` elements per
/// cp.async, or element by element (synchronousCopy) where cp.async cannot.
/// One decision for the lowering and for the register demand (demand.cpp),
/// which must agree on the registers the copy reads.
struct CopyPlan {
  int width;
  bool synchronous;
};

CopyPlan copyPlan(Emitter &e, Operation &op, const OffsetMap &m) {
  Value *ptr = op.operand(0);
  Value *mask = op.numOperands() > 2 ? op.operand(2) : nullptr;
  Value *other = op.numOperands() > 3 ? op.operand(3) : nullptr;
  const Type *elem = op.operand(1)->type()->element();
  int64_t eb = gpu::storageBytes(elem);
  int v = std::min(vectorWidth(m, eb, isBool(elem)),
                   globalVectorWidth(e, ptr, mask, eb));
  if (v * eb < 4 || isBool(elem) || !isZeroOrAbsent(other))
    return {1, true};
  return {v, false};
}

void emitAsyncCopy(Emitter &e, Operation &op) {
  Value *ptr = op.operand(0);
  Value *mask = op.numOperands() > 2 ? op.operand(2) : nullptr;
  const Type *md = op.operand(1)->type();
  const Type *elem = md->element();
  int64_t eb = gpu::storageBytes(elem);
  OffsetMap m = offsetMap(e, op, ptr->type(), md);
  std::string base = e.regs(op.operand(1))[0];
  Addresses addr = addressesOf(e, m, base, eb);
  std::string owner = e.ownerPred(ptr->type());
  int site = e.accessSite(op, ptr, "load", (int)eb);
  CopyPlan plan = copyPlan(e, op, m);
  int v = plan.width;
  int64_t bytes = v * eb;
  int copies = m.copyRegisterMask();
  int count = ownedVectors(e.regs(ptr).size(), v, copies);
  if (plan.synchronous) {
    // Element by element: a ld.global then a st.shared each.
    e.noteAccess(op, "ld.global+st.shared", eb, 1, count);
    synchronousCopy(e, op, m, addr, owner, site);
    e.bind(op.result(0), {});
    return;
  }
  const Regs &pr = e.regs(ptr);
  const Regs *mr = mask ? &e.regs(mask) : nullptr;
  std::string guard = owner.empty() ? "" : "@" + owner + " ";
  std::string ins = std::string("cp.async.") + (bytes == 16 ? "cg" : "ca") +
                    ".shared.global ";
  e.noteAccess(op, "cp.async", eb, v, count);
  for (int g = 0; g < (int)pr.size(); g += v) {
    if (g & copies)
      continue;
    std::string pred = e.checkAccess(site, pr[g], (int)bytes,
                                     mr ? (*mr)[mr->size() == 1 ? 0 : g] : "");
    std::string dst = addr(m.atRegister(g)), srcSize;
    if (!pred.empty()) {
      srcSize = e.reg(RC::B32);
      e.ins("selp.u32 " + srcSize + ", " + std::to_string(bytes) + ", 0, " +
            pred);
    }
    e.ins(guard + ins + dst + ", [" + pr[g] + "], " +
          std::to_string(bytes) + (srcSize.empty() ? "" : ", " + srcSize));
  }
  e.bind(op.result(0), {});
}

// ---- mbarriers --------------------------------------------------------------

/// The one thread that issues a block-level mbarrier op or a TMA copy:
/// thread 0, or the first thread of the op's {warpgroup} (a pipelined loop's
/// copies issued by the last warpgroup: pipeline_loops.cpp).
std::string issuingThread(Emitter &e, Operation &op) {
  return op.hasAttr("warpgroup") ? e.inWarpgroup(op.intAttr("warpgroup"), true)
                                 : e.ownerPred(Type::scalar(DType::I32));
}

/// The predicate of a block-level mbarrier op: its issuing thread, and the
/// op's own predicate operand (operand `i`) when it has one.
std::string onceGuard(Emitter &e, Operation &op, unsigned i) {
  std::string p = issuingThread(e, op);
  if (op.numOperands() > i) {
    std::string q = e.reg(RC::Pred);
    e.ins("and.pred " + q + ", " + p + ", " + e.regs(op.operand(i))[0]);
    p = q;
  }
  return "@" + p + " ";
}

void emitWaitBarrier(Emitter &e, Operation &op) {
  std::string bar = e.regs(op.operand(0))[0];
  std::string phase = e.regs(op.operand(1))[0];
  std::string done = e.newLabel("mbar_done"), loop = e.newLabel("mbar_wait");
  if (op.numOperands() > 2)
    e.ins("@!" + e.regs(op.operand(2))[0] + " bra " + done);
  // {warpgroup}: the other warpgroups go on (a warp-uniform branch).
  if (op.hasAttr("warpgroup"))
    e.ins("@!" + e.inWarpgroup(op.intAttr("warpgroup")) + " bra.uni " + done);
  e.label(loop);
  std::string ok = e.reg(RC::Pred);
  // try_wait suspends the thread for a while (sm_90); test_wait polls.
  e.ins(std::string(e.opts.target.sm >= 90 ? "mbarrier.try_wait"
                                            : "mbarrier.test_wait") +
        ".parity.shared::cta.b64 " + ok + ", [" + bar + "], " + phase);
  e.ins("@!" + ok + " bra " + loop);
  e.label(done);
}

/// A dim or stride of a TMA copy as the launcher reads it: a constant, a
/// kernel argument or the sign extension of one (expand-descriptor-loads
/// keeps no other for TMA).
TensorMapSpec::Operand mapOperand(Emitter &e, Operation &op, Value *v) {
  if (std::optional<ConstValue> c = getConstant(v); c && !c->isFloat())
    return {-1, c->asInt()};
  Operation *d = v->definingOp();
  if (d && d->code() == OpCode::ExtSI)
    v = d->operand(0), d = v->definingOp();
  if (!d && v->ownerBlock() == &e.fn.entry())
    return {int(v->index()), 0};
  e.internalError(op, "a TMA copy's tensor must be kernel arguments or constants");
}

/// CUtensorMapDataType of an element: the float types by name (so that a
/// NaN fill is possible), everything else as unsigned integers of its size.
int tensorMapDataType(DType t) {
  switch (t) {
  case DType::FP16:
    return 6;
  case DType::BF16:
    return 9;
  case DType::FP32:
    return 7;
  case DType::FP64:
    return 8;
  default:
    switch (bitWidth(t)) {
    case 8:
      return 0;
    case 16:
      return 1;
    case 32:
      return 2;
    default:
      return 4;
    }
  }
}

/// The tensor map of a TMA copy between buffer type `md` (one box per
/// tmaSwizzleBytes-wide column block, all its rows) and the descriptor whose
/// base is op's operand `first` (shape and strides follow it); sets
/// `boxes`, `boxBytes` and `boxCols` (elements).
TensorMapSpec tmaSpec(Emitter &e, Operation &op, const Type *md, unsigned first,
                      int64_t &boxes, int64_t &boxBytes, int64_t &boxCols) {
  std::optional<int64_t> swz = gpu::tmaSwizzleBytes(md);
  if (!swz)
    e.internalError(op, "the buffer's layout is none a TMA copy moves");
  const std::vector<int64_t> &shape = md->bufferShape();
  size_t r = shape.size();
  int eb = int(bitWidth(md->element()->dtype()) / 8);
  int64_t rowBytes = *swz ? *swz : 16;
  boxCols = rowBytes / eb;
  TensorMapSpec spec;
  Value *base = op.operand(first);
  if (base->definingOp() || base->ownerBlock() != &e.fn.entry())
    e.internalError(op, "a TMA copy's base must be a kernel argument");
  spec.base = int(base->index());
  for (size_t d = 0; d < r; ++d) {
    spec.shape.push_back(mapOperand(e, op, op.operand(unsigned(first + 1 + d))));
    spec.strides.push_back(mapOperand(e, op, op.operand(unsigned(first + 1 + r + d))));
    spec.box.push_back(int(d + 1 == r ? boxCols : shape[d]));
  }
  spec.elemBytes = eb;
  spec.dataType = tensorMapDataType(md->element()->dtype());
  spec.swizzleBytes = int(*swz);
  boxes = shape[r - 1] / boxCols;
  boxBytes = rowBytes;
  for (size_t d = 0; d + 1 < r; ++d)
    boxBytes *= shape[d];
  return spec;
}

/// The coordinates (innermost first) of box k: operands from `first` (the
/// block's offsets), the last one advanced by k * boxCols.
std::string tmaCoords(Emitter &e, Operation &op, unsigned first, size_t r, int64_t k,
                      int64_t boxCols) {
  std::string coords;
  for (size_t d = r; d-- > 0;) {
    std::string c = e.regs(op.operand(unsigned(first + d)))[0];
    if (d + 1 == r && k > 0) {
      std::string ck = e.reg(RC::B32);
      e.ins("add.s32 " + ck + ", " + c + ", " + std::to_string(k * boxCols));
      c = ck;
    }
    coords += (coords.empty() ? "" : ", ") + c;
  }
  return coords;
}

/// The shared address of box k of the buffer at `buf`.
std::string tmaBox(Emitter &e, const std::string &buf, int64_t k, int64_t boxBytes) {
  if (k == 0)
    return buf;
  std::string dst = e.reg(RC::B32);
  e.ins("add.s32 " + dst + ", " + buf + ", " + std::to_string(k * boxBytes));
  return dst;
}

/// ttng.async_tma_copy_global_to_local: one lane of warp 0 (of the
/// {warpgroup}'s first warp; and %pred) issues one
/// cp.async.bulk.tensor per box of the buffer's layout (all its rows, swz
/// bytes of columns; tmaSwizzleBytes), each completing its bytes on %bar.
void emitTMACopy(Emitter &e, Operation &op) {
  e.requireSM(op, 90, "ttng.async_tma_copy_global_to_local (TMA)");
  const Type *md = op.operand(0)->type();
  size_t r = md->bufferShape().size();
  int64_t boxes, boxBytes, boxCols;
  TensorMapSpec spec = tmaSpec(e, op, md, 3, boxes, boxBytes, boxCols);
  spec.nanFill = op.strAttr("padding") == "nan";
  std::string tmap = e.tensorMapAddress(spec);
  // One lane of the issuing thread's warp (warp 0, or the {warpgroup}'s
  // first), picked by elect.sync where every lane of the warp runs the op:
  // ptxas then issues each copy once from the warp's uniform datapath. With
  // the thread's own predicate (tid == 0) it looped over the lanes' operand
  // values instead (R2UR, BRA.U.ANY), about 20 instructions a copy in the
  // issuing warp, which the next iteration's wgmma, taken by its whole
  // warpgroup, waited for.
  // TRITIUM_DISABLE_PASSES=tma-elect: the thread's own predicate.
  std::string p = issuingThread(e, op);
  if (!e.opts.skips("tma-elect")) {
    std::string w = e.inWarp(op.hasAttr("warpgroup") ? 4 * op.intAttr("warpgroup") : 0);
    std::string elected = e.reg(RC::Pred), lane = e.reg(RC::B32);
    e.ins("elect.sync " + lane + "|" + elected + ", -1");
    p = e.reg(RC::Pred);
    e.ins("and.pred " + p + ", " + w + ", " + elected);
  }
  std::string q = e.reg(RC::Pred);
  e.ins("and.pred " + q + ", " + p + ", " + e.regs(op.operand(2))[0]);
  std::string buf = e.regs(op.operand(0))[0], bar = e.regs(op.operand(1))[0];
  for (int64_t k = 0; k < boxes; ++k) {
    std::string coords = tmaCoords(e, op, unsigned(4 + 2 * r), r, k, boxCols);
    std::string dst = tmaBox(e, buf, k, boxBytes);
    e.ins("@" + q + " cp.async.bulk.tensor." + std::to_string(r) +
          "d.shared::cluster.global.mbarrier::complete_tx::bytes [" + dst + "], [" + tmap +
          ", {" + coords + "}], [" + bar + "]");
  }
  e.noteAccess(op, "cp.async.bulk.tensor", spec.elemBytes, int(boxBytes / spec.elemBytes),
               int(boxes));
}

/// ttng.async_tma_copy_local_to_global: thread 0 issues one
/// cp.async.bulk.tensor per box (as emitTMACopy), commits them as one bulk
/// group and waits until they have read the buffer (wait = "read") or
/// written global memory ("write"). The writers' fence.proxy.async and the
/// barrier before the op (insert-barriers) make the buffer the async
/// proxy's; the barrier after it that a later write of these bytes gets
/// orders that write after thread 0's wait.
void emitTMAStore(Emitter &e, Operation &op) {
  e.requireSM(op, 90, "ttng.async_tma_copy_local_to_global (TMA)");
  const Type *md = op.operand(0)->type();
  size_t r = md->bufferShape().size();
  int64_t boxes, boxBytes, boxCols;
  TensorMapSpec spec = tmaSpec(e, op, md, 1, boxes, boxBytes, boxCols);
  std::string tmap = e.tensorMapAddress(spec);
  // Thread 0, and only into a tensor with elements: the launcher maps one
  // without any onto the kernel's fill global (kTmaFillSymbol), which a
  // store must not write.
  std::string p = e.ownerPred(Type::scalar(DType::I32));
  for (size_t d = 0; d < r; ++d) {
    Value *dim = op.operand(unsigned(2 + d));
    if (std::optional<ConstValue> c = getConstant(dim); c && !c->isFloat() && c->asInt() > 0)
      continue;
    std::string q = e.reg(RC::Pred), pos = e.reg(RC::Pred);
    bool wide = bitWidth(dim->type()->dtype()) == 64;
    e.ins(std::string("setp.gt.s") + (wide ? "64 " : "32 ") + pos + ", " + e.regs(dim)[0] +
          ", 0");
    e.ins("and.pred " + q + ", " + p + ", " + pos);
    p = q;
  }
  std::string buf = e.regs(op.operand(0))[0];
  for (int64_t k = 0; k < boxes; ++k) {
    std::string coords = tmaCoords(e, op, unsigned(2 + 2 * r), r, k, boxCols);
    std::string src = tmaBox(e, buf, k, boxBytes);
    e.ins("@" + p + " cp.async.bulk.tensor." + std::to_string(r) +
          "d.global.shared::cta.bulk_group [" + tmap + ", {" + coords + "}], [" + src + "]");
  }
  e.ins("@" + p + " cp.async.bulk.commit_group");
  bool readOnly = op.strAttr("wait") == "read";
  e.ins("@" + p + " cp.async.bulk.wait_group" + (readOnly ? ".read" : "") + " 0");
  // "write": the block is in global memory for every thread of the program
  // (a later load of it by any of them), not only for thread 0.
  if (!readOnly)
    e.ins("bar.sync 0");
  e.noteAccess(op, "cp.async.bulk.tensor", spec.elemBytes, int(boxBytes / spec.elemBytes),
               int(boxes));
}

} // namespace

bool emitShared(Emitter &e, Operation &op) {
  switch (op.code()) {
  case OpCode::LocalAlloc: {
    std::string base = e.scratch(op);
    if (op.numOperands() > 0)
      storeTile(e, op, op.operand(0), op.result(0)->type(), base);
    else
      e.sharedWriteBegins(op); // a gpu.barrier before it: print it here
    e.bind(op.result(0), {base});
    return true;
  }
  case OpCode::LocalDealloc:
    return true; // the allocation pass already ended the buffer's life
  case OpCode::LocalStore:
    storeTile(e, op, op.operand(0), op.operand(1)->type(),
              e.regs(op.operand(1))[0]);
    return true;
  case OpCode::LocalLoad:
    emitLocalLoad(e, op);
    return true;
  case OpCode::MemDescIndex: {
    const Type *md = op.operand(0)->type();
    int64_t bufferBytes =
        md->numElements() / md->numBuffers() * gpu::storageBytes(md->element());
    std::string base = e.regs(op.operand(0))[0];
    std::string r = e.reg(RC::B32);
    Operation *def = op.operand(1)->definingOp();
    if (def && def->code() == OpCode::Constant &&
        std::holds_alternative<int64_t>(def->attrs().at("value")))
      e.ins("add.s32 " + r + ", " + base + ", " +
            std::to_string(std::get<int64_t>(def->attrs().at("value")) *
                           bufferBytes));
    else
      e.ins("mad.lo.s32 " + r + ", " + e.regs(op.operand(1))[0] + ", " +
            std::to_string(bufferBytes) + ", " + base);
    e.bind(op.result(0), {r});
    return true;
  }
  case OpCode::MemDescTrans: // a view: the same address, another layout
    e.bind(op.result(0), e.regs(op.operand(0)));
    return true;
  case OpCode::AsyncCopyGlobalToLocal:
    emitAsyncCopy(e, op);
    return true;
  case OpCode::AsyncCommitGroup:
    e.ins("cp.async.commit_group");
    e.bind(op.result(0), {});
    return true;
  case OpCode::AsyncWait:
    e.ins("cp.async.wait_group " + std::to_string(op.intAttr("num")));
    e.bind(op.result(0), {});
    return true;
  // mbarrier ops other than the wait act for the whole block, as the
  // executor's one thread does: thread 0 initialises, expects and arrives.
  case OpCode::InitBarrier:
    e.ins(onceGuard(e, op, 1) + "mbarrier.init.shared::cta.b64 [" +
          e.regs(op.operand(0))[0] + "], " +
          std::to_string(op.intAttr("count")));
    return true;
  case OpCode::InvalBarrier:
    e.ins(onceGuard(e, op, 1) + "mbarrier.inval.shared::cta.b64 [" +
          e.regs(op.operand(0))[0] + "]");
    return true;
  case OpCode::AsyncTMACopyGlobalToLocal:
    emitTMACopy(e, op);
    return true;
  case OpCode::AsyncTMACopyLocalToGlobal:
    emitTMAStore(e, op);
    return true;
  case OpCode::FenceAsyncShared:
    e.requireSM(op, 90, "ttng.fence_async_shared");
    e.ins("fence.proxy.async.shared::cta");
    return true;
  case OpCode::BarrierExpect:
    // One arrival that also expects `bytes` of transactions (TMA).
    e.requireSM(op, 90, "ttng.barrier_expect (mbarrier transaction counts)");
    e.ins(onceGuard(e, op, 1) + "mbarrier.arrive.expect_tx.shared::cta.b64 _, [" +
          e.regs(op.operand(0))[0] + "], " +
          std::to_string(op.intAttr("bytes")));
    return true;
  case OpCode::ArriveBarrier: {
    int64_t count = op.hasAttr("count") ? op.intAttr("count") : 1;
    if (count != 1)
      e.requireSM(op, 90, "ttng.arrive_barrier with a count");
    std::string state = e.reg(RC::B64);
    std::string guard = onceGuard(e, op, 1);
    if (op.hasAttr("per_warp") && op.boolAttr("per_warp")) {
      // Each warp's first lane, once the warp's earlier work is done (its
      // wgmma.wait_group retired the reads of the buffer it releases).
      guard = "@" + e.firstLane() + " ";
      if (op.numOperands() > 1) {
        std::string q = e.reg(RC::Pred);
        e.ins("and.pred " + q + ", " + e.firstLane() + ", " + e.regs(op.operand(1))[0]);
        guard = "@" + q + " ";
      }
    }
    e.ins(guard + "mbarrier.arrive.shared::cta.b64 " + state +
          ", [" + e.regs(op.operand(0))[0] + "]" +
          (count != 1 ? ", " + std::to_string(count) : ""));
    return true;
  }
  case OpCode::WaitBarrier:
    emitWaitBarrier(e, op);
    return true;
  default:
    return false;
  }
}

int asyncCopyWidth(Emitter &e, Operation &op) {
  const Type *ptr = op.operand(0)->type(), *md = op.operand(1)->type();
  return copyPlan(e, op, offsetMap(e, op, ptr, md)).width;
}

} // namespace tritium::nvidia
