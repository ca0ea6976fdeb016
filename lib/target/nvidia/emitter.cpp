// The PTX emitter's core: registers, thread indices, the kernel's frame, and
// compileToPTX (the whole path from tile IR to PTX text).
#include "emitter.h"

#include "tritium/gpu/passes.h"
#include "tritium/ir/printer.h"

#include <algorithm>

namespace tritium {

// ---------------------------------------------------------------------------
// GPUTarget
// ---------------------------------------------------------------------------

std::string GPUTarget::str() const {
  return "sm_" + std::to_string(sm) + (archA ? "a" : "");
}

GPUTarget GPUTarget::parse(const std::string &s) {
  std::string t = s;
  if (t.rfind("sm_", 0) == 0)
    t = t.substr(3);
  else if (t.rfind("cuda:", 0) == 0)
    t = t.substr(5);
  GPUTarget g;
  g.archA = !t.empty() && t.back() == 'a';
  if (g.archA)
    t.pop_back();
  bool digits = !t.empty() && t.size() <= 3 &&
                std::all_of(t.begin(), t.end(),
                            [](char c) { return c >= '0' && c <= '9'; });
  if (!digits)
    throw UserError("unknown GPU target '" + s +
                        "' (expected a form like sm_80, sm_90 or sm_90a)",
                    {});
  g.sm = std::stoi(t);
  if (g.archA && g.sm != 90)
    throw UserError("GPU target '" + s + "': only sm_90 has an 'a' variant",
                    {});
  g.ptxVersion = 80;
  return g;
}

namespace nvidia {

namespace {

const char *kPrefix[kNumRC] = {"%p", "%rs", "%r", "%rd", "%f", "%fd"};
const char *kDecl[kNumRC] = {".pred", ".b16", ".b32", ".b64", ".f32", ".f64"};

} // namespace

int64_t maxSharedBytes(int sm) {
  if (sm >= 90)
    return 227 * 1024;
  if (sm == 80 || sm == 87)
    return 163 * 1024;
  return 99 * 1024;
}

RC regClass(const Type *t) {
  if (t->isPointer())
    return RC::B64;
  switch (t->dtype()) {
  case DType::I1:
    return RC::Pred;
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
  case DType::FP8E4NV:
  case DType::FP8E5:
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
    warp_ = reg(RC::B32);
    pro("shr.u32 " + warp_ + ", " + t + ", 5");
  }
  return warp_;
}

std::string Emitter::threadLinear(const Type *t,
                                  const std::vector<int64_t> &w) {
  const gpu::LinearLayout &ll = gpu::linearOf(t);
  std::string key = gpu::layoutOf(t)->str();
  for (int64_t d : t->shape())
    key += "x" + std::to_string(d);
  key += "|";
  for (int64_t x : w)
    key += std::to_string(x) + ",";
  if (auto it = threadLinearCache_.find(key); it != threadLinearCache_.end())
    return it->second;
  std::string acc = reg(RC::B32);
  pro("mov.u32 " + acc + ", 0");
  auto addBits = [&](const std::vector<gpu::Basis> &bases, bool isLane) {
    std::vector<int64_t> f;
    for (const gpu::Basis &b : bases) {
      int64_t v = 0;
      for (size_t d = 0; d < b.size(); ++d)
        v += b[d] * w[d];
      f.push_back(v);
    }
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
      std::string src = isLane ? lane() : warp();
      std::string bits = reg(RC::B32);
      pro("bfe.u32 " + bits + ", " + src + ", " + std::to_string(i) + ", " +
          std::to_string(k));
      pro("mad.lo.s32 " + acc + ", " + bits + ", " + std::to_string(f[i]) +
          ", " + acc);
      i += k;
    }
  };
  addBits(ll.lane(), true);
  addBits(ll.warp(), false);
  threadLinearCache_[key] = acc;
  return acc;
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
  if (!ll.isDisjoint())
    return rep;
  AxisInfo info = axis.get(v);
  // A register bit that moves less than the constancy along its dim keeps
  // the element inside its aligned block of equal values: in a disjoint
  // layout the coordinate is the OR of the bits, so clearing such bits
  // changes only the bits below the block size.
  int sameMask = 0;
  for (size_t b = 0; b < ll.reg().size(); ++b)
    for (int d = 0; d < ll.rank(); ++d)
      if (ll.reg()[b][d] != 0 && d < info.rank() &&
          ll.reg()[b][d] < info.constancy[d])
        sameMask |= 1 << b;
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
  std::vector<Regs> tmp(to.size());
  for (size_t i = 0; i < to.size(); ++i) {
    RC c = regClass(types[i]->scalarType());
    for (const std::string &r : from[i]) {
      std::string t = reg(c);
      ins(std::string(movFor(c)) + " " + t + ", " + r);
      tmp[i].push_back(t);
    }
  }
  for (size_t i = 0; i < to.size(); ++i) {
    RC c = regClass(types[i]->scalarType());
    for (size_t k = 0; k < to[i].size(); ++k)
      ins(std::string(movFor(c)) + " " + to[i][k] + ", " + tmp[i][k]);
  }
}

void Emitter::emitBlock(Block &b) {
  for (auto it = b.ops().begin(); it != b.ops().end(); ++it) {
    Operation &op = **it;
    if (op.code() == OpCode::Yield || op.code() == OpCode::Condition)
      continue; // the parent op copies its operands
    if (op.code() == OpCode::GpuBarrier) {
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

void Emitter::emitOp(Operation &op) {
  if (op.code() == OpCode::Return) {
    ins("ret");
    return;
  }
  if (emitArithmetic(*this, op) || emitCast(*this, op) ||
      emitMemory(*this, op) || emitReduce(*this, op) ||
      emitControlFlow(*this, op) || emitTensorOp(*this, op))
    return;
  internalError(op, "has no PTX lowering");
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
  emitBlock(entry);
  if (entry.empty() || entry.ops().back()->code() != OpCode::Return)
    ins("ret");

  head << "//\n// Generated by tritium (" << name << ", " << opts.target.str()
       << ", num_warps=" << numWarps
       << (opts.boundsCheck ? ", bounds checks" : "") << ")\n//\n\n";
  head << ".version " << opts.target.ptxVersion / 10 << "."
       << opts.target.ptxVersion % 10 << "\n";
  head << ".target " << opts.target.str() << "\n";
  head << ".address_size 64\n\n";
  if (gpu::sharedBytes(fn) > 0)
    head << ".extern .shared .align 16 .b8 global_smem[];\n\n";
  head << ".visible .entry " << name << "(\n" << sig.str() << "\n)\n";
  head << ".maxntid " << numWarps * gpu::kThreadsPerWarp << ", 1, 1\n{\n";
  for (int c = 0; c < kNumRC; ++c)
    if (regCount_[c])
      head << "\t.reg " << kDecl[c] << " " << kPrefix[c] << "<"
           << regCount_[c] + 1 << ">;\n";
  head << "\n" << paramLoads << prologue_.str() << body_.str() << "}\n";
  return head.str();
}

} // namespace nvidia

// ---------------------------------------------------------------------------
// compileToPTX
// ---------------------------------------------------------------------------

CompiledKernel compileToPTX(Module &m, const std::string &kernel,
                            const GPUOptions &opts) {
  const GPUTarget &t = opts.target;
  if (t.sm < 80)
    throw UserError("GPU target " + t.str() +
                        " is not supported (tritium needs sm_80 or newer)",
                    {});
  if (t.archA && t.sm != 90)
    throw UserError("GPU target " + t.str() + ": only sm_90 has an 'a' variant",
                    {});
  if (opts.numWarps < 1 || opts.numWarps > 32 ||
      gpu::log2Exact(opts.numWarps) < 0)
    throw UserError("num_warps must be a power of two from 1 to 32, found " +
                        std::to_string(opts.numWarps),
                    {});

  std::unique_ptr<Module> gm = m.clone();
  Function *f = gm->lookup(kernel);
  if (!f)
    throw UserError("no kernel named '" + kernel + "' in the module", {});
  // Other functions were inlined into the kernel; they are not compiled.
  std::vector<Function *> others;
  for (auto &fn : gm->functions())
    if (fn.get() != f)
      others.push_back(fn.get());
  for (Function *o : others)
    gm->erase(o);
  f->walk([&](Operation *op) {
    if (op->code() == OpCode::Dot)
      throw UserError("tl.dot on the GPU is not implemented yet", op->loc());
    if (op->code() == OpCode::Call)
      throw InternalError("compileToPTX: '" + kernel +
                          "' still has calls; run the tile pipeline (inline) "
                          "first");
  });
  f->attrs()["num_warps"] = int64_t(opts.numWarps);

  PassStats stats;
  gpu::convertToGPU(*gm, opts.numWarps, stats);
  gpu::removeLayoutConversions(*gm, stats);

  gpu::allocateSharedMemory(*gm, nvidia::maxSharedBytes(t.sm), t.str(),
                             stats);
  gpu::insertBarriers(*gm, stats);

  CompiledKernel ck;
  ck.name = kernel;
  ck.numWarps = opts.numWarps;
  ck.sharedBytes = (int)gpu::sharedBytes(*f);
  ck.gir = print(*f);
  nvidia::Emitter e(*f, opts);
  ck.ptx = e.emitKernel(ck.params);
  ck.hiddenParams = std::move(e.hiddenParams);
  ck.accessSites = std::move(e.accessSites);
  ck.uncheckedAccesses = e.uncheckedAccesses;
  return ck;
}

} // namespace tritium
