// The PTX emitter's core: registers, thread indices, the kernel's frame. The
// path from tile IR to PTX around it is compileKernel (pipeline.cpp).
#include "emitter.h"
#include "register_cap.h"

#include "tritium/ir/printer.h"
#include "tritium/target/nvidia/op_support.h"

#include <algorithm>
#include <set>

namespace tritium {

namespace nvidia {

namespace {

const char *kPrefix[kNumRC] = {"%p", "%rs", "%r", "%rd", "%f", "%fd"};
const char *kDecl[kNumRC] = {".pred", ".b16", ".b32", ".b64", ".f32", ".f64"};

} // namespace

RC regClass(const Type *t) {
  if (t->isPointer())
    return RC::B64;
  if (t->isMemDesc())
    return RC::B32; // a shared-memory address
  switch (t->dtype()) {
  case DType::I1:
    return RC::Pred;
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
  case DType::FP8E4NV:
  case DType::FP8E5:
  case DType::FP8E4B15:
  case DType::FP8E4B8:
  case DType::FP8E5B16:
  case DType::FP16:
  case DType::BF16:
    return RC::B16;
  case DType::I32:
  case DType::U32:
    return RC::B32;
  case DType::I64:
  case DType::U64:
    return RC::B64;
  case DType::FP32:
    return RC::F32;
  case DType::FP64:
    return RC::F64;
  }
  return RC::B32;
}

const char *movFor(RC c) {
  static const char *m[kNumRC] = {"mov.pred", "mov.b16", "mov.b32",
                                  "mov.b64",  "mov.f32", "mov.f64"};
  return m[(int)c];
}

Emitter::Emitter(Function &f, const GPUOptions &opts)
    : fn(f), opts(opts), axis(f), numWarps(opts.numWarps) {}

std::string Emitter::newLabel(const std::string &hint) {
  return "$L_" + hint + "_" + std::to_string(labelCount_++);
}

std::string Emitter::reg(RC c) {
  return kPrefix[(int)c] + std::to_string(++regCount_[(int)c]);
}

const Regs &Emitter::regs(Value *v) {
  auto it = values_.find(v);
  if (it == values_.end()) {
    Operation *def = v->definingOp();
    throw InternalError(
        "ptx emission: a value of type " + v->type()->str() +
        " is used before it is emitted" +
        (def ? std::string(" (defined by '") + def->name() + "')"
             : std::string()));
  }
  return it->second;
}

void Emitter::bind(Value *v, Regs r) {
  if ((int)r.size() != numRegs(v->type()))
    throw InternalError("ptx emission: " + std::to_string(r.size()) +
                        " registers for a value of type " + v->type()->str());
  values_[v] = std::move(r);
}

int Emitter::numRegs(const Type *t) {
  if (t->isToken())
    return 0;
  if (!t->isTensor())
    return 1;
  return gpu::linearOf(t).numRegs();
}

std::string Emitter::tid() {
  if (tid_.empty()) {
    tid_ = reg(RC::B32);
    pro("mov.u32 " + tid_ + ", %tid.x");
  }
  return tid_;
}

std::string Emitter::lane() {
  if (lane_.empty()) {
    std::string t = tid();
    lane_ = reg(RC::B32);
    pro("and.b32 " + lane_ + ", " + t + ", 31");
  }
  return lane_;
}

std::string Emitter::warp() {
  if (warp_.empty()) {
    std::string t = tid();
    std::string w = reg(RC::B32);
    pro("shr.u32 " + w + ", " + t + ", 5");
    // Broadcast from lane 0 (every thread runs the prologue): ptxas then
    // knows the value is warp-uniform and keeps what is computed from it
    // (wgmma descriptors, warp offsets) in uniform registers.
    warp_ = reg(RC::B32);
    pro("shfl.sync.idx.b32 " + warp_ + ", " + w + ", 0, 31, -1");
  }
  return warp_;
}

std::string Emitter::inWarpgroup(int64_t w, bool firstThread) {
  std::string key = "wg" + std::to_string(w) + (firstThread ? "t0" : "");
  if (auto it = ownerCache_.find(key); it != ownerCache_.end())
    return it->second;
  std::string p = reg(RC::Pred);
  if (firstThread) {
    pro("setp.eq.u32 " + p + ", " + tid() + ", " + std::to_string(128 * w));
  } else {
    std::string g = reg(RC::B32);
    pro("shr.u32 " + g + ", " + warp() + ", 2");
    pro("setp.eq.u32 " + p + ", " + g + ", " + std::to_string(w));
  }
  return ownerCache_[key] = p;
}

std::string Emitter::inWarp(int64_t k) {
  std::string key = "warp" + std::to_string(k);
  if (auto it = ownerCache_.find(key); it != ownerCache_.end())
    return it->second;
  std::string p = reg(RC::Pred);
  pro("setp.eq.u32 " + p + ", " + warp() + ", " + std::to_string(k));
  return ownerCache_[key] = p;
}

std::string Emitter::firstLane() {
  if (auto it = ownerCache_.find("lane0"); it != ownerCache_.end())
    return it->second;
  std::string p = reg(RC::Pred);
  pro("setp.eq.u32 " + p + ", " + lane() + ", 0");
  return ownerCache_["lane0"] = p;
}

std::string Emitter::threadLinear(const Type *t, const std::vector<int64_t> &w,
                                  const gpu::ScratchSwizzle *sw) {
  if (sw && sw->bits == 0)
    sw = nullptr;
  const gpu::LinearLayout &ll = gpu::linearOf(t);
  std::string key = gpu::layoutOf(t)->str();
  for (int64_t d : t->shape())
    key += "x" + std::to_string(d);
  key += "|";
  for (int64_t x : w)
    key += std::to_string(x) + ",";
  if (sw)
    key += "|swizzle " + std::to_string(sw->chunkBit) + "," +
           std::to_string(sw->rowBit) + "," + std::to_string(sw->bits);
  if (auto it = threadLinearCache_.find(key); it != threadLinearCache_.end())
    return it->second;
  // In a disjoint layout every coordinate is the sum of its bases, so any
  // weights add up. Otherwise (and under a swizzle, a map over GF(2)) the
  // function must be GF(2)-linear: its value is the XOR of the values of
  // the thread's bits.
  bool additive = ll.isDisjoint() && !sw;
  if (!additive && !gpu::linearFunction(ll, w))
    throw InternalError("ptx emission: the function with weights " + key +
                        " is not GF(2)-linear on layout " + ll.str());
  auto values = [&](const std::vector<gpu::Basis> &bases) {
    std::vector<int64_t> f;
    for (const gpu::Basis &b : bases) {
      int64_t v = 0;
      for (size_t d = 0; d < b.size(); ++d)
        v += b[d] * w[d];
      f.push_back(sw ? sw->apply(v) : v);
    }
    return f;
  };
  return threadValue(key, values(ll.lane()), values(ll.warp()), additive);
}

std::string Emitter::threadValue(const std::string &key,
                                 std::vector<int64_t> fl,
                                 std::vector<int64_t> fw, bool additive) {
  if (auto it = threadLinearCache_.find(key); it != threadLinearCache_.end())
    return it->second;
  // The bits whose values overlap an earlier one's are XORed in afterwards;
  // the others add (sum == XOR where no two share a bit).
  std::vector<int64_t> xl(fl.size(), 0), xw(fw.size(), 0);
  if (!additive) {
    uint64_t used = 0;
    for (auto p : {std::make_pair(&fl, &xl), std::make_pair(&fw, &xw)})
      for (size_t i = 0; i < p.first->size(); ++i) {
        int64_t &v = (*p.first)[i];
        if (uint64_t(v) & used) {
          (*p.second)[i] = v;
          v = 0;
        }
        used |= uint64_t(v);
      }
  }
  // A value with lane bits differs between the threads of a warp anyway, so
  // it reads its bit fields from %tid.x itself (lane = tid bits 0-4, warp =
  // bits 5 on), a field may run across the lane/warp boundary, and the
  // shuffled warp id (which only tells ptxas what is warp-uniform) stays off
  // its dependence chain: the first loads of a kernel wait for one shr/shfl
  // fewer. Values of the warp bits alone keep the shuffled id.
  constexpr size_t kLaneBits = 5;  // 32 lanes
  bool fromTid = fl.size() <= kLaneBits &&
                 (std::any_of(fl.begin(), fl.end(), [](int64_t v) { return v != 0; }) ||
                  std::any_of(xl.begin(), xl.end(), [](int64_t v) { return v != 0; }));
  // The values per bit of %tid.x: the lane's five, then the warp's.
  auto overTid = [&](std::vector<int64_t> lanePart, const std::vector<int64_t> &warpPart) {
    lanePart.resize(kLaneBits, 0);
    lanePart.insert(lanePart.end(), warpPart.begin(), warpPart.end());
    return lanePart;
  };
  std::string acc = reg(RC::B32);
  pro("mov.u32 " + acc + ", 0");
  auto addBits = [&](const std::vector<int64_t> &f, const std::string &src) {
    // Consecutive bits whose values double form one bit field: one bfe and
    // one mad per field instead of per bit.
    for (size_t i = 0; i < f.size();) {
      if (f[i] == 0) {
        ++i;
        continue;
      }
      size_t k = 1;
      while (i + k < f.size() && f[i + k] == f[i] << k)
        ++k;
      std::string bits = reg(RC::B32);
      pro("bfe.u32 " + bits + ", " + src + ", " + std::to_string(i) + ", " +
          std::to_string(k));
      pro("mad.lo.s32 " + acc + ", " + bits + ", " + std::to_string(f[i]) +
          ", " + acc);
      i += k;
    }
  };
  auto xorBits = [&](const std::vector<int64_t> &f, const std::string &src) {
    // bfe.s32 of one bit is 0 or all ones: a mask selecting the value.
    for (size_t i = 0; i < f.size(); ++i) {
      if (f[i] == 0)
        continue;
      std::string m = reg(RC::B32), v = reg(RC::B32);
      pro("bfe.s32 " + m + ", " + src + ", " + std::to_string(i) + ", 1");
      pro("and.b32 " + v + ", " + m + ", " + std::to_string(f[i]));
      pro("xor.b32 " + acc + ", " + acc + ", " + v);
    }
  };
  if (fromTid) {
    addBits(overTid(fl, fw), tid());
    xorBits(overTid(xl, xw), tid());
  } else {
    addBits(fl, lane());
    addBits(fw, warp());
    xorBits(xl, lane());
    xorBits(xw, warp());
  }
  threadLinearCache_[key] = acc;
  return acc;
}

std::pair<std::string, int64_t>
Emitter::threadLinearAt(const Type *t, const std::vector<int64_t> &w,
                        int64_t regPart, const gpu::ScratchSwizzle *sw) {
  if (sw && sw->bits == 0)
    sw = nullptr;
  std::string thr = threadLinear(t, w, sw);
  const gpu::LinearLayout &ll = gpu::linearOf(t);
  if (ll.isDisjoint() && !sw)
    return {thr, regPart};
  // threadLinear checked that the function is linear.
  gpu::LinearLayout f = *gpu::linearFunction(ll, w);
  if (!sw && f.disjointBits({gpu::kLane, gpu::kWarp}, {gpu::kRegister}))
    return {thr, regPart};
  uint64_t mask = 0;
  for (const std::string &dim : {gpu::kLane, gpu::kWarp})
    for (const gpu::Basis &b : f.bases(dim))
      mask |= uint64_t(sw ? sw->apply(b[0]) : b[0]);
  return xorSplit(thr, mask, sw ? sw->apply(regPart) : regPart);
}

std::pair<std::string, int64_t>
Emitter::xorSplit(const std::string &thr, uint64_t mask, int64_t regPart) {
  // value = thread ^ regPart = (thread ^ (regPart & mask)) + (regPart &
  // ~mask): the first part has only mask bits, the second none.
  int64_t overlap = regPart & int64_t(mask);
  if (overlap == 0)
    return {thr, regPart};
  std::string key = thr + "^" + std::to_string(overlap);
  auto it = threadLinearCache_.find(key);
  if (it == threadLinearCache_.end()) {
    std::string r = reg(RC::B32);
    pro("xor.b32 " + r + ", " + thr + ", " + std::to_string(overlap));
    it = threadLinearCache_.emplace(key, r).first;
  }
  return {it->second, regPart & ~int64_t(mask)};
}

std::string Emitter::constPred(bool v) {
  std::string &p = constPred_[v];
  if (p.empty()) {
    p = reg(RC::Pred);
    pro(std::string("setp.") + (v ? "eq" : "ne") + ".u32 " + p + ", " + tid() +
        ", " + tid());
    knownPreds[p] = v;
  }
  return p;
}

std::string Emitter::threadCoord(const Type *t, int dim) {
  std::vector<int64_t> w(t->rank(), 0);
  w[dim] = 1;
  return threadLinear(t, w);
}

std::string Emitter::ownerPred(const Type *t) {
  std::string key = "scalar";
  if (t->isTensor()) {
    key = gpu::layoutOf(t)->str();
    for (int64_t d : t->shape())
      key += "x" + std::to_string(d);
  }
  if (auto it = ownerCache_.find(key); it != ownerCache_.end())
    return it->second;
  std::string p;
  if (!t->isTensor()) {
    p = reg(RC::Pred);
    pro("setp.eq.u32 " + p + ", " + tid() + ", 0");
  } else {
    const gpu::LinearLayout &ll = gpu::linearOf(t);
    // Whole zero lane/warp bases are the copies a thread predicate can
    // skip; copies made by dependent nonzero bases (XOR layouts) would need
    // an owner per register.
    std::vector<gpu::Basis> nonzero;
    for (const auto &in : ll.ins())
      for (const gpu::Basis &b : in.bases)
        if (std::any_of(b.begin(), b.end(), [](int64_t x) { return x != 0; }))
          nonzero.push_back(b);
    if (!gpu::LinearLayout({{"nonzero", nonzero}}, ll.outs()).isInjective())
      throw InternalError("ptx emission: layout " + ll.str() +
                          " holds copies that are not whole lanes or warps; "
                          "stores and atomics on it are not supported");
    unsigned lm = gpu::duplicateLaneMask(ll), wm = gpu::duplicateWarpMask(ll);
    if (lm || wm) {
      std::string a = reg(RC::B32), b = reg(RC::B32), c = reg(RC::B32);
      pro("and.b32 " + a + ", " + lane() + ", " + std::to_string(lm));
      pro("and.b32 " + b + ", " + warp() + ", " + std::to_string(wm));
      pro("or.b32 " + c + ", " + a + ", " + b);
      p = reg(RC::Pred);
      pro("setp.eq.u32 " + p + ", " + c + ", 0");
    }
  }
  ownerCache_[key] = p;
  return p;
}

std::vector<int> Emitter::equalRegisters(Value *v) {
  const Type *t = v->type();
  int n = numRegs(t);
  std::vector<int> rep(n);
  for (int i = 0; i < n; ++i)
    rep[i] = i;
  if (!t->isTensor())
    return rep;
  const gpu::LinearLayout &ll = gpu::linearOf(t);
  AxisInfo info = axis.get(v);
  int sameMask = 0;
  if (ll.isDisjoint()) {
    // A register bit that moves less than the constancy along its dim keeps
    // the element inside its aligned block of equal values: in a disjoint
    // layout the coordinate is the OR of the bits, so clearing such bits
    // changes only the bits below the block size.
    for (size_t b = 0; b < ll.reg().size(); ++b)
      for (int d = 0; d < ll.rank(); ++d)
        if (ll.reg()[b][d] != 0 && d < info.rank() &&
            ll.reg()[b][d] < info.constancy[d])
          sameMask |= 1 << b;
  } else {
    // With XOR bases a register bit may move several dims, and clearing
    // bits XORs the coordinate: it stays in its aligned block of equal
    // values when every dim it moves moves by less than a power of two
    // that divides the constancy there.
    for (size_t b = 0; b < ll.reg().size(); ++b) {
      const gpu::Basis &basis = ll.reg()[b];
      bool inside = std::any_of(basis.begin(), basis.end(),
                                [](int64_t x) { return x != 0; });
      for (int d = 0; d < ll.rank() && inside; ++d) {
        if (basis[d] == 0)
          continue;
        int64_t c = d < info.rank() ? info.constancy[d] : 1;
        inside = c > 0 && basis[d] < (c & -c);
      }
      if (inside)
        sameMask |= 1 << b;
    }
  }
  for (int i = 0; i < n; ++i)
    rep[i] = i & ~sameMask;
  return rep;
}

std::string Emitter::scratch(const Operation &op) {
  int64_t offset = gpu::sharedOffset(op);
  if (offset < 0)
    internalError(op, "needs shared memory the allocation did not plan");
  if (smemBase_.empty()) {
    smemBase_ = reg(RC::B32);
    pro("mov.u32 " + smemBase_ + ", global_smem");
  }
  if (offset == 0)
    return smemBase_;
  std::string r = reg(RC::B32);
  ins("add.s32 " + r + ", " + smemBase_ + ", " + std::to_string(offset));
  return r;
}

void Emitter::sharedWriteBegins(const Operation &op) {
  if (barrierFor_ != &op)
    return;
  barrier();
  barrierFor_ = nullptr;
}

void Emitter::noteAccess(const Operation &op, const std::string &instruction,
                         int64_t elemBytes, int elems, int count) {
  accesses.push_back({std::string(op.name()), instruction, (int)elemBytes,
                      elems, count, op.loc()});
}

void Emitter::userError(const Operation &op, const std::string &msg) {
  throw UserError(msg, op.loc());
}

void Emitter::internalError(const Operation &op, const std::string &msg) {
  throw InternalError("ptx emission: '" + std::string(op.name()) + "' " + msg +
                      ": " + print(op));
}

void Emitter::requireSM(const Operation &op, int sm, const std::string &what) {
  if (opts.target.sm < sm)
    userError(op, what + " needs sm_" + std::to_string(sm) +
                      " or newer; the target is " + opts.target.str());
}

void Emitter::parallelCopy(const std::vector<Regs> &to,
                           const std::vector<Regs> &from,
                           const std::vector<const Type *> &types) {
  // A register copied onto itself is left alone: no write can clobber it
  // (the destinations are distinct), and not reading it matters for an
  // accumulator an asynchronous wgmma still owns.
  //
  // Only a source that is also a destination is saved in a temporary first
  // (a loop's pair of buffer indices, say); the others move straight to
  // their destinations: half the moves at a loop's back edge.
  std::set<std::string> dests;
  for (size_t i = 0; i < to.size(); ++i)
    for (size_t k = 0; k < to[i].size(); ++k)
      if (from[i][k] != to[i][k])
        dests.insert(to[i][k]);
  std::vector<Regs> src = from;
  for (size_t i = 0; i < to.size(); ++i) {
    RC c = regClass(types[i]->scalarType());
    for (size_t k = 0; k < from[i].size(); ++k) {
      const std::string &r = from[i][k];
      if (r == to[i][k] || !dests.count(r))
        continue;
      std::string t = reg(c);
      ins(std::string(movFor(c)) + " " + t + ", " + r);
      src[i][k] = t;
    }
  }
  for (size_t i = 0; i < to.size(); ++i) {
    RC c = regClass(types[i]->scalarType());
    for (size_t k = 0; k < to[i].size(); ++k)
      if (src[i][k] != to[i][k])
        ins(std::string(movFor(c)) + " " + to[i][k] + ", " + src[i][k]);
  }
}

void Emitter::emitBlock(Block &b) {
  for (auto it = b.ops().begin(); it != b.ops().end(); ++it) {
    Operation &op = **it;
    if (op.code() == OpCode::Yield || op.code() == OpCode::Condition)
      continue; // the parent op copies its operands
    if (op.code() == OpCode::GPUBarrier) {
      // Before an op owning scratch, printed at its first shared-memory
      // write (sharedWriteBegins); elsewhere, here.
      auto next = std::next(it);
      if (next != b.ops().end() && gpu::sharedOffset(**next) >= 0)
        barrierFor_ = next->get();
      else
        barrier();
      continue;
    }
    emitOp(op);
    if (barrierFor_)
      internalError(op, "has a gpu.barrier before it that its lowering never "
                        "printed (it must call sharedWriteBegins)");
  }
}

namespace {

/// The file (family of ops) that lowers each op; emitOp dispatches on it and
/// ptxSupport reads it.
enum class PtxFamily {
  Arith,
  Cast,
  Memory,
  Reduce,
  Combine, // tt.reduce_combine, tt.scan (emit_scan.cpp)
  ControlFlow,
  Tensor,
  Shared, // memdescs, async copies, mbarriers (emit_shared.cpp)
  Return,
  Terminator, // scf.yield, scf.condition: the parent op copies the operands
  Barrier,    // gpu.barrier: emitBlock prints it (it looks at the next op)
  Dot,
  Debug, // tt.print, tt.assert, inline asm (emit_debug.cpp)
  Rejected,
  None,
};

PtxFamily ptxFamily(OpCode c) {
  unsigned traits = opInfo(c).traits;
  if (traits & (IBIN | FBIN | MATH1))
    return PtxFamily::Arith;
  if (traits & CAST)
    return PtxFamily::Cast;
  if (traits & MOVE)
    return PtxFamily::Tensor;
  switch (c) {
  case OpCode::CmpI:
  case OpCode::CmpF:
  case OpCode::Select:
  case OpCode::NegF:
  case OpCode::Fma:
    return PtxFamily::Arith;
  case OpCode::AddPtr:
  case OpCode::Load:
  case OpCode::Store:
  case OpCode::AtomicRMW:
  case OpCode::AtomicCAS:
    return PtxFamily::Memory;
  case OpCode::Reduce:
    return PtxFamily::Reduce;
  case OpCode::ReduceCombine:
  case OpCode::Scan:
    return PtxFamily::Combine;
  case OpCode::For:
  case OpCode::If:
  case OpCode::While:
    return PtxFamily::ControlFlow;
  case OpCode::Constant:
  case OpCode::GetProgramId:
  case OpCode::GetNumPrograms:
  case OpCode::MakeRange:
  case OpCode::Splat:
    return PtxFamily::Tensor;
  case OpCode::Return:
    return PtxFamily::Return;
  case OpCode::Yield:
  case OpCode::Condition:
  case OpCode::CombineReturn:
    return PtxFamily::Terminator;
  case OpCode::GPUBarrier:
    return PtxFamily::Barrier;
  case OpCode::Dot:
  case OpCode::WarpGroupDot:
    return PtxFamily::Dot;
  case OpCode::Print:
  case OpCode::Assert:
  case OpCode::InlineAsm:
    return PtxFamily::Debug;
  case OpCode::Call:
  case OpCode::DescriptorLoad:
  case OpCode::DescriptorStore:
    return PtxFamily::Rejected;
  default:
    if ((traits & SHARED) || c == OpCode::MemDescIndex ||
        c == OpCode::MemDescTrans)
      return PtxFamily::Shared;
    return PtxFamily::None;
  }
}

/// The ops the GPU path refuses, each with the error a user (or we) sees.
[[noreturn]] void rejectOp(Emitter &e, Operation &op) {
  switch (op.code()) {
  case OpCode::Call:
    e.internalError(op, "survived inlining");
  case OpCode::DescriptorLoad:
    e.internalError(op, "was neither expanded (expand-descriptor-loads) nor copied with TMA "
                        "(pipeline)");
  case OpCode::DescriptorStore:
    e.internalError(op, "was neither expanded (expand-descriptor-loads) nor stored with TMA "
                        "(lower-tma-stores)");
  default:
    e.internalError(op, "is refused by the PTX emitter without a reason");
  }
}

} // namespace

OpSupport ptxSupport(OpCode code) {
  switch (ptxFamily(code)) {
  case PtxFamily::None:
    return OpSupport::Missing;
  case PtxFamily::Rejected:
    return OpSupport::Rejected;
  default:
    return OpSupport::Handled;
  }
}

void Emitter::emitOp(Operation &op) {
  bool done = false;
  switch (ptxFamily(op.code())) {
  case PtxFamily::Arith:
    done = emitArithmetic(*this, op);
    break;
  case PtxFamily::Cast:
    done = emitCast(*this, op);
    break;
  case PtxFamily::Memory:
    done = emitMemory(*this, op);
    break;
  case PtxFamily::Reduce:
    done = emitReduce(*this, op);
    break;
  case PtxFamily::Combine:
    done = emitCombineOp(*this, op);
    break;
  case PtxFamily::ControlFlow: {
    // A loop whose warpgroups pass the ping-pong's turn both ways
    // (order-warpgroups): warpgroup 1 gives warpgroup 0 its first turn, and
    // warpgroup 0 takes warpgroup 1's last one after the loop, so that
    // named barrier 2's arrivals and waits pair up.
    bool bothWays = op.code() == OpCode::For && op.hasAttr("pingpong") &&
                    op.boolAttr("pingpong");
    if (bothWays)
      ins("@" + inWarpgroup(1) + " bar.arrive 2, 256");
    done = emitControlFlow(*this, op);
    if (bothWays)
      ins("@" + inWarpgroup(0) + " bar.sync 2, 256");
    // A loop whose wgmma kept a group in flight: its results are read from
    // here on.
    if (done && asyncWgmmaLoops.count(&op))
      ins("wgmma.wait_group.sync.aligned 0");
    break;
  }
  case PtxFamily::Tensor:
    done = emitTensorOp(*this, op);
    break;
  case PtxFamily::Shared:
    done = emitShared(*this, op);
    break;
  case PtxFamily::Dot:
    done = emitDot(*this, op);
    break;
  case PtxFamily::Debug:
    done = emitDebugOp(*this, op);
    break;
  case PtxFamily::Return:
    ins("ret");
    return;
  case PtxFamily::Terminator:
    return;
  case PtxFamily::Barrier:
    internalError(op, "is printed by emitBlock, not emitOp");
  case PtxFamily::Rejected:
    rejectOp(*this, op);
  case PtxFamily::None:
    break;
  }
  if (!done)
    internalError(op, "has no PTX lowering");
}

std::string Emitter::tensorMapParam(const TensorMapSpec &spec) {
  size_t k = 0;
  while (k < tensorMaps.size() && tensorMaps[k].flatten() != spec.flatten())
    ++k;
  if (k == tensorMaps.size())
    tensorMaps.push_back(spec);
  return fn.name() + "_tmap_" + std::to_string(k);
}

std::string Emitter::tensorMapAddress(const TensorMapSpec &spec) {
  std::string name = tensorMapParam(spec);
  auto it = tensorMapAddr_.find(name);
  if (it != tensorMapAddr_.end())
    return it->second;
  std::string r = reg(RC::B64);
  pro("mov.u64 " + r + ", " + name);
  pro("cvta.param.u64 " + r + ", " + r);
  return tensorMapAddr_[name] = r;
}

std::string Emitter::emitKernel(std::vector<KernelParam> &params) {
  const std::string &name = fn.name();
  std::ostringstream head;
  Block &entry = fn.entry();
  std::ostringstream sig;
  for (unsigned i = 0; i < entry.numArguments(); ++i) {
    Value *a = entry.argument(i);
    const Type *t = a->type();
    std::string pname = name + "_param_" + std::to_string(i);
    std::string ptxTy;
    KernelParam::Kind kind;
    std::string r;
    if (t->isPointer()) {
      ptxTy = ".u64";
      kind = KernelParam::Kind::Pointer;
      r = reg(RC::B64);
      ins("ld.param.u64 " + r + ", [" + pname + "]");
    } else if (t->isScalar()) {
      DType d = t->dtype();
      switch (d) {
      case DType::I1: {
        ptxTy = ".u8";
        kind = KernelParam::Kind::Bool;
        std::string b = reg(RC::B16);
        ins("ld.param.u8 " + b + ", [" + pname + "]");
        r = reg(RC::Pred);
        ins("setp.ne.u16 " + r + ", " + b + ", 0");
        break;
      }
      case DType::I32:
      case DType::U32:
        ptxTy = ".u32";
        kind = d == DType::I32 ? KernelParam::Kind::Int32
                               : KernelParam::Kind::UInt32;
        r = reg(RC::B32);
        ins("ld.param.u32 " + r + ", [" + pname + "]");
        break;
      case DType::I64:
      case DType::U64:
        ptxTy = ".u64";
        kind = d == DType::I64 ? KernelParam::Kind::Int64
                               : KernelParam::Kind::UInt64;
        r = reg(RC::B64);
        ins("ld.param.u64 " + r + ", [" + pname + "]");
        break;
      case DType::I8:
      case DType::I16:
      case DType::U8:
      case DType::U16: {
        // Passed as 32-bit ints (the launcher has no narrower kinds).
        ptxTy = ".u32";
        kind =
            isSigned(d) ? KernelParam::Kind::Int32 : KernelParam::Kind::UInt32;
        std::string w = reg(RC::B32);
        ins("ld.param.u32 " + w + ", [" + pname + "]");
        std::string h = reg(RC::B16);
        ins("cvt.u16.u32 " + h + ", " + w);
        r = normalizeInt(*this, d, h);
        break;
      }
      case DType::FP32:
        ptxTy = ".f32";
        kind = KernelParam::Kind::Float32;
        r = reg(RC::F32);
        ins("ld.param.f32 " + r + ", [" + pname + "]");
        break;
      case DType::FP64:
        ptxTy = ".f64";
        kind = KernelParam::Kind::Float64;
        r = reg(RC::F64);
        ins("ld.param.f64 " + r + ", [" + pname + "]");
        break;
      default: {
        // fp16/bf16/fp8 scalars are passed as fp32 and rounded here.
        ptxTy = ".f32";
        kind = KernelParam::Kind::Float32;
        std::string f = reg(RC::F32);
        ins("ld.param.f32 " + f + ", [" + pname + "]");
        Operation *first =
            entry.ops().empty() ? nullptr : entry.ops().front().get();
        if (!first)
          throw InternalError("ptx emission: empty kernel body");
        r = fromF32(*this, *first, d, f);
        break;
      }
      }
    } else {
      throw UserError("kernel argument #" + std::to_string(i) + " of type " +
                          t->str() + " cannot be passed to a GPU kernel",
                      fn.loc());
    }
    bind(a, {r});
    params.push_back(
        {kind, a->nameHint.empty() ? "arg" + std::to_string(i) : a->nameHint});
    sig << (i ? ",\n" : "") << "\t.param " << ptxTy << " " << pname;
  }
  if (opts.boundsCheck)
    boundsParams(hiddenParams, sig);
  std::string paramLoads = body_.str();
  body_.str("");
  computeDemand();
  emitBlock(entry);
  // The tensor maps the body's TMA copies read (the launcher passes them
  // after the kernel's arguments: CompiledKernel::tensorMaps).
  for (size_t k = 0; k < tensorMaps.size(); ++k)
    sig << (entry.numArguments() + k ? ",\n" : "") << "\t.param .align 64 .b8 " << name
        << "_tmap_" << k << "[128]";
  if (entry.empty() || entry.ops().back()->code() != OpCode::Return)
    ins("ret");

  head << "//\n// Generated by tritium (" << name << ", " << opts.target.str()
       << ", num_warps=" << numWarps
       << (opts.boundsCheck ? ", bounds checks" : "") << ")\n//\n\n";
  int version = std::max(opts.target.ptxVersion, ptxVersion_);
  head << ".version " << version / 10 << "." << version % 10 << "\n";
  head << ".target " << opts.target.str() << "\n";
  head << ".address_size 64\n\n";
  head << debugModuleDecls(*this);
  if (gpu::sharedBytes(fn) > 0)
    head << ".extern .shared .align 16 .b8 global_smem[];\n\n";
  if (!tensorMaps.empty()) {
    // The launcher maps a tensor without elements onto this (kernel_abi.h).
    head << ".visible .global .align 16 .b8 " << kTmaFillSymbol << "[" << kTmaFillBytes
         << "] = {";
    for (int i = 0; i < kTmaFillBytes; ++i)
      head << (i ? ", " : "") << (i < kTmaFillNanOffset ? 0 : 255);
    head << "};\n\n";
  }
  head << ".visible .entry " << name << "(\n" << sig.str() << "\n)\n";
  head << ".maxntid " << numWarps * gpu::kThreadsPerWarp << ", 1, 1\n";
  // With .maxntid alone, ptxas aims at full occupancy (2048 threads per SM:
  // 32 registers a thread at 4 warps) and spills an mma accumulator rather
  // than use more. A kernel with a dot gets what one program may use.
  bool hasDot = false;
  fn.walk([&](Operation *op) {
    hasDot |= op->code() == OpCode::Dot || op->code() == OpCode::WarpGroupDot;
  });
  if (hasDot)
    head << ".maxnreg " << registerCap(numWarps * gpu::kThreadsPerWarp)
         << "\n";
  head << "{\n";
  for (int c = 0; c < kNumRC; ++c)
    if (regCount_[c])
      head << "\t.reg " << kDecl[c] << " " << kPrefix[c] << "<"
           << regCount_[c] + 1 << ">;\n";
  head << debugFrameDecls(*this);
  head << "\n" << paramLoads << prologue_.str() << body_.str() << "}\n";
  return head.str();
}

} // namespace nvidia

} // namespace tritium
