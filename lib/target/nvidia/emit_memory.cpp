// Global memory: loads, stores and atomics.
//
// Loads and stores move as many consecutive elements per instruction as the
// layout, the axis info and the mask allow (up to 16 bytes:
// ld.global.v4.b32), predicated on the mask. A masked load first sets its
// destination registers to `other` (or zero), so masked-off lanes keep it.
// Stores and atomics run only in the thread that owns each element (layouts
// smaller than the CTA hold copies); an atomic whose result those copies
// need hands it over through shared memory. With bounds checks on
// (emit_bounds.cpp) every access instruction also runs under its check.
#include "emitter.h"
#include "tritium/transforms/rewrite.h"

#include <optional>

namespace tritium::nvidia {

/// Elements per access for a tensor of pointers. Any linear layout: with
/// every other basis a multiple of the vector along d0, XORing them keeps
/// the vector's elements consecutive and aligned.
int globalVectorWidth(Emitter &e, Value *ptr, Value *mask, int64_t eb) {
  const Type *pt = ptr->type();
  if (!pt->isTensor())
    return 1;
  const gpu::LinearLayout &ll = gpu::linearOf(pt);
  if (ll.reg().empty())
    return 1;
  int d0 = -1;
  for (int d = 0; d < ll.rank(); ++d)
    if (ll.reg()[0][d] == 1)
      d0 = d;
  if (d0 < 0)
    return 1;
  // Registers holding consecutive elements along d0: numConsecutive of the
  // register bases with d0 as the fastest dim, within d0's extent.
  std::vector<std::string> order;
  for (int d = 0; d < ll.rank(); ++d)
    if (d != d0)
      order.push_back(gpu::tensorDimName(d));
  order.push_back(gpu::tensorDimName(d0));
  int64_t consecutive = std::min<int64_t>(
      ll.sublayout({gpu::kRegister}).transposeOuts(order).numConsecutive(
          gpu::kRegister),
      ll.shape()[d0]);
  int run = log2Exact(consecutive);
  AxisInfo info = e.axis.get(ptr);
  int64_t v =
      std::min<int64_t>({int64_t(1) << run, info.contiguity[d0],
                         std::max<int64_t>(1, info.divisibility[d0] / eb),
                         std::max<int64_t>(1, 16 / eb)});
  if (mask && mask->type()->isTensor())
    v = std::min<int64_t>(v, e.axis.get(mask).constancy[d0]);
  int64_t p = 1;
  while (p * 2 <= v)
    p *= 2;
  v = p;
  // A vector must start at a coordinate that is a multiple of its length.
  auto aligned = [&](int64_t v) {
    int bits = log2Exact(v);
    for (size_t i = bits; i < ll.reg().size(); ++i)
      if (ll.reg()[i][d0] % v)
        return false;
    for (const auto *set : {&ll.lane(), &ll.warp()})
      for (const gpu::Basis &b : *set)
        if (b[d0] % v)
          return false;
    return true;
  };
  while (v > 1 && !aligned(v))
    v /= 2;
  if (eb < 4 && v * eb < 4)
    v = 1; // sub-word elements only in whole 32-bit words
  return (int)v;
}

/// Packs sub-word elements (in 16-bit registers) into one 32-bit word.
std::string packWord(Emitter &e, const Regs &elems, int64_t eb) {
  std::string w = e.reg(RC::B32);
  if (eb == 2) {
    e.ins("mov.b32 " + w + ", {" + elems[0] + ", " + elems[1] + "}");
    return w;
  }
  e.ins("mov.b32 " + w + ", 0");
  for (size_t k = 0; k < elems.size(); ++k) {
    std::string t = e.reg(RC::B32), n = e.reg(RC::B32);
    e.ins("cvt.u32.u16 " + t + ", " + elems[k]);
    e.ins("bfi.b32 " + n + ", " + t + ", " + w + ", " + std::to_string(8 * k) +
          ", 8");
    w = n;
  }
  return w;
}

Regs unpackWord(Emitter &e, const std::string &w, int64_t eb, bool signedByte) {
  Regs out;
  if (eb == 2) {
    std::string lo = e.reg(RC::B16), hi = e.reg(RC::B16);
    e.ins("mov.b32 {" + lo + ", " + hi + "}, " + w);
    return {lo, hi};
  }
  for (int k = 0; k < 4; ++k) {
    std::string t = e.reg(RC::B32), d = e.reg(RC::B16);
    e.ins(std::string(signedByte ? "bfe.s32 " : "bfe.u32 ") + t + ", " + w +
          ", " + std::to_string(8 * k) + ", 8");
    e.ins("cvt.u16.u32 " + d + ", " + t);
    out.push_back(d);
  }
  return out;
}

namespace {

std::string list(const Regs &r) {
  if (r.size() == 1)
    return r[0];
  std::string s = "{";
  for (size_t k = 0; k < r.size(); ++k)
    s += (k ? ", " : "") + r[k];
  return s + "}";
}

bool isBool(const Type *elem) {
  return elem->isScalar() && elem->dtype() == DType::I1;
}

std::string zeroOf(RC c) {
  switch (c) {
  case RC::F32:
    return "0f00000000";
  case RC::F64:
    return "0d0000000000000000";
  default:
    return "0";
  }
}

/// An element as its register in memory form (i1 -> 0/1 in 16 bits).
std::string memValue(Emitter &e, const Type *elem, const std::string &r) {
  if (!isBool(elem))
    return r;
  std::string b = e.reg(RC::B16);
  e.ins("selp.u16 " + b + ", 1, 0, " + r);
  return b;
}

std::string cacheSuffix(const Operation &op, bool isLoad) {
  std::string s;
  if (op.hasAttr("cache") &&
      std::holds_alternative<std::string>(op.attrs().at("cache"))) {
    std::string c = op.strAttr("cache");
    if (!c.empty() && c[0] == '.')
      c = c.substr(1);
    static const char *loads[] = {"ca", "cg", "cs", "lu", "cv"};
    static const char *stores[] = {"wb", "cg", "cs", "wt"};
    bool ok = false;
    if (isLoad)
      for (const char *x : loads)
        ok |= c == x;
    else
      for (const char *x : stores)
        ok |= c == x;
    if (ok)
      s = "." + c;
  }
  if (s.empty() && op.hasAttr("eviction") &&
      std::holds_alternative<std::string>(op.attrs().at("eviction"))) {
    const std::string &ev = op.strAttr("eviction");
    if (ev == "evict_first" || ev == "evict_last")
      s = ".L1::" + ev;
  }
  return s;
}

void emitLoad(Emitter &e, Operation &op) {
  Value *ptr = op.operand(0);
  Value *mask = op.numOperands() > 1 ? op.operand(1) : nullptr;
  Value *other = op.numOperands() > 2 ? op.operand(2) : nullptr;
  const Type *elem = op.result(0)->type()->scalarType();
  int64_t eb = gpu::storageBytes(elem);
  int v = globalVectorWidth(e, ptr, mask, eb);
  int n = Emitter::numRegs(op.result(0)->type());
  const Regs &pr = e.regs(ptr);
  const Regs *mr = mask ? &e.regs(mask) : nullptr;
  const Regs *orr = other ? &e.regs(other) : nullptr;
  bool vol = op.hasAttr("volatile") &&
             std::holds_alternative<bool>(op.attrs().at("volatile")) &&
             op.boolAttr("volatile");
  std::string mods =
      vol ? ".volatile.global" : ".global" + cacheSuffix(op, true);
  bool boolElem = isBool(elem);
  int site = e.accessSite(op, ptr, "load", (int)eb);
  e.noteAccess(op, "ld.global", eb, v, (n + v - 1) / v);
  Regs out;
  for (int g = 0; g < n; g += v) {
    // A mask every thread knows (Emitter::knownPreds): true guards nothing;
    // false leaves the registers at `other` and loads nothing.
    std::string m = mr ? (*mr)[g] : "";
    std::optional<bool> known = e.knownPred(m);
    if (known && *known)
      m = "";
    std::string pred = e.checkAccess(site, pr[g], (int)(v * eb), m);
    bool skip = known && !*known && pred == m;
    std::string guard = pred.empty() ? "" : "@" + pred + " ";
    Regs got;
    if (eb >= 4 || v == 1) {
      RC rc = boolElem ? RC::B16 : regClass(elem);
      for (int k = 0; k < v; ++k) {
        std::string d = e.reg(rc);
        if (!pred.empty()) {
          if (orr)
            e.ins(std::string(movFor(rc)) + " " + d + ", " +
                  memValue(e, elem, (*orr)[g + k]));
          else
            e.ins(std::string(movFor(rc)) + " " + d + ", " + zeroOf(rc));
        }
        got.push_back(d);
      }
      std::string ty = memType(elem, true);
      if (!skip)
        e.ins(guard + "ld" + mods + (v > 1 ? ".v" + std::to_string(v) : "") +
            "." + ty + " " + list(got) + ", [" + pr[g] + "]");
    } else {
      int words = (int)(v * eb / 4), per = (int)(4 / eb);
      Regs w;
      for (int j = 0; j < words; ++j) {
        std::string r = e.reg(RC::B32);
        if (!pred.empty()) {
          if (orr) {
            Regs parts;
            for (int k = 0; k < per; ++k)
              parts.push_back(memValue(e, elem, (*orr)[g + j * per + k]));
            e.ins("mov.b32 " + r + ", " + packWord(e, parts, eb));
          } else {
            e.ins("mov.b32 " + r + ", 0");
          }
        }
        w.push_back(r);
      }
      if (!skip)
        e.ins(guard + "ld" + mods +
            (words > 1 ? ".v" + std::to_string(words) : "") + ".b32 " +
            list(w) + ", [" + pr[g] + "]");
      bool signedByte = !elem->isPointer() && elem->dtype() == DType::I8;
      for (const std::string &word : w)
        for (const std::string &x : unpackWord(e, word, eb, signedByte))
          got.push_back(x);
    }
    for (std::string &d : got) {
      if (boolElem) {
        std::string p = e.reg(RC::Pred);
        e.ins("setp.ne.u16 " + p + ", " + d + ", 0");
        d = p;
      }
      out.push_back(d);
    }
  }
  e.bind(op.result(0), std::move(out));
}

/// `mask && owner` for element i ("" when neither applies).
std::string guardOf(Emitter &e, const Regs *mask, int i,
                    const std::string &owner) {
  std::string m = mask ? (*mask)[i] : "";
  if (m.empty())
    return owner;
  if (owner.empty())
    return m;
  std::string p = e.reg(RC::Pred);
  e.ins("and.pred " + p + ", " + m + ", " + owner);
  return p;
}

void emitStore(Emitter &e, Operation &op) {
  Value *ptr = op.operand(0), *val = op.operand(1);
  Value *mask = op.numOperands() > 2 ? op.operand(2) : nullptr;
  const Type *elem = val->type()->scalarType();
  int64_t eb = gpu::storageBytes(elem);
  int v = globalVectorWidth(e, ptr, mask, eb);
  int n = Emitter::numRegs(val->type());
  const Regs &pr = e.regs(ptr), &vr = e.regs(val);
  const Regs *mr = mask ? &e.regs(mask) : nullptr;
  std::string owner = e.ownerPred(ptr->type());
  std::string mods = ".global" + cacheSuffix(op, false);
  int site = e.accessSite(op, ptr, "store", (int)eb);
  e.noteAccess(op, "st.global", eb, v, (n + v - 1) / v);
  for (int g = 0; g < n; g += v) {
    // A mask every thread knows: false stores nothing, true guards nothing.
    std::optional<bool> known = e.knownPred(mr ? (*mr)[g] : "");
    if (known && !*known && site < 0)
      continue;
    std::string p = e.checkAccess(site, pr[g], (int)(v * eb),
                                  guardOf(e, known && *known ? nullptr : mr, g, owner));
    std::string guard = p.empty() ? "" : "@" + p + " ";
    Regs vals;
    for (int k = 0; k < v; ++k)
      vals.push_back(memValue(e, elem, vr[g + k]));
    if (eb >= 4 || v == 1) {
      e.ins(guard + "st" + mods + (v > 1 ? ".v" + std::to_string(v) : "") +
            "." + memType(elem, false) + " [" + pr[g] + "], " + list(vals));
    } else {
      int words = (int)(v * eb / 4), per = (int)(4 / eb);
      Regs w;
      for (int j = 0; j < words; ++j)
        w.push_back(packWord(
            e, Regs(vals.begin() + j * per, vals.begin() + (j + 1) * per), eb));
      e.ins(guard + "st" + mods +
            (words > 1 ? ".v" + std::to_string(words) : "") + ".b32 [" + pr[g] +
            "], " + list(w));
    }
  }
}

// ---- atomics
// ------------------------------------------------------------------

std::string semScope(const Operation &op) {
  std::string sem = "acq_rel", scope = "gpu";
  if (op.hasAttr("sem") &&
      std::holds_alternative<std::string>(op.attrs().at("sem")))
    sem = op.strAttr("sem");
  if (op.hasAttr("scope") &&
      std::holds_alternative<std::string>(op.attrs().at("scope")))
    scope = op.strAttr("scope");
  if (sem != "relaxed" && sem != "acquire" && sem != "release" &&
      sem != "acq_rel")
    sem = "acq_rel";
  if (scope != "gpu" && scope != "cta" && scope != "sys")
    scope = "gpu";
  return "." + sem + "." + scope;
}

/// The native `atom` operation for kind/elem, or "" when there is none.
std::string nativeAtom(Emitter &e, const std::string &kind, const Type *elem) {
  if (elem->isPointer())
    return kind == "xchg" ? "exch.b64" : "";
  DType t = elem->dtype();
  int bits = bitWidth(t);
  if (kind == "add") {
    switch (t) {
    case DType::FP32:
      return "add.f32";
    case DType::FP64:
      return "add.f64";
    case DType::FP16:
      return "add.noftz.f16";
    case DType::BF16:
      return e.opts.target.sm >= 90 ? "add.noftz.bf16" : "";
    case DType::I32:
    case DType::U32:
      return "add.u32";
    case DType::I64:
    case DType::U64:
      return "add.u64";
    default:
      return "";
    }
  }
  if ((kind == "max" || kind == "min") && !isFloat(t) && bits >= 32)
    return kind + "." + (isSigned(t) ? "s" : "u") + std::to_string(bits);
  if ((kind == "and" || kind == "or" || kind == "xor" || kind == "xchg") &&
      !isFloat(t) && bits >= 32)
    return (kind == "xchg" ? "exch" : kind) + ".b" + std::to_string(bits);
  if (kind == "xchg" && isFloat(t) && bits >= 32)
    return "exch.b" + std::to_string(bits);
  return "";
}

} // namespace

int atomicVectorWidth(Emitter &e, const Operation &op) {
  if (op.code() != OpCode::AtomicRMW || op.strAttr("kind") != "add" ||
      e.opts.target.sm < 90)
    return 1;
  Value *ptr = op.operand(0), *val = op.operand(1);
  Value *mask = op.numOperands() > 2 ? op.operand(2) : nullptr;
  if (!val->type()->isTensor())
    return 1;
  DType t = val->type()->scalarType()->dtype();
  if (t != DType::FP32 && t != DType::FP16 && t != DType::BF16)
    return 1;
  return globalVectorWidth(e, ptr, mask, gpu::storageBytes(Type::scalar(t)));
}

namespace {

OpCode combineOf(const std::string &kind, const Type *elem) {
  bool f = isFloat(elem->dtype());
  bool s = isSigned(elem->dtype());
  if (kind == "add")
    return f ? OpCode::AddF : OpCode::AddI;
  if (kind == "max")
    return f ? OpCode::MaxNumF : s ? OpCode::MaxSI : OpCode::MaxUI;
  if (kind == "min")
    return f ? OpCode::MinNumF : s ? OpCode::MinSI : OpCode::MinUI;
  if (kind == "and")
    return OpCode::AndI;
  if (kind == "or")
    return OpCode::OrI;
  return OpCode::XOrI;
}

/// Bits of a value for CAS (same register for 16-bit; mov for 32/64-bit
/// floats).
std::string toBits(Emitter &e, const Type *elem, const std::string &r) {
  RC c = regClass(elem);
  if (c == RC::F32 || c == RC::F64) {
    std::string b = e.reg(c == RC::F32 ? RC::B32 : RC::B64);
    e.ins((c == RC::F32 ? "mov.b32 " : "mov.b64 ") + b + ", " + r);
    return b;
  }
  return r;
}
std::string fromBits(Emitter &e, const Type *elem, const std::string &b) {
  RC c = regClass(elem);
  if (c == RC::F32 || c == RC::F64) {
    std::string r = e.reg(c);
    e.ins((c == RC::F32 ? "mov.b32 " : "mov.b64 ") + r + ", " + b);
    return r;
  }
  return b;
}

RC bitsClass(const Type *elem) {
  int64_t eb = gpu::storageBytes(elem);
  return eb == 2 ? RC::B16 : eb == 4 ? RC::B32 : RC::B64;
}

void checkAtomicType(Emitter &e, const Operation &op, const Type *elem) {
  if (gpu::storageBytes(elem) < 2)
    e.userError(op, "atomics on " + elem->str() +
                        " are not supported on the GPU (use 16 bits or wider)");
}

/// The result register(s) of an atomic for every thread that holds them.
void shareResult(Emitter &e, Operation &op, Regs res) {
  const Type *t = op.result(0)->type();
  if (gpu::sharedOffset(op) < 0) {
    e.bind(op.result(0), std::move(res));
    return;
  }
  if (t->isTensor()) {
    e.bind(op.result(0),
           moveThroughShared(e, op, t, res, t, gpu::rowMajorStrides(t->shape()),
                             true));
    return;
  }
  std::string base = e.scratch(op);
  std::string ty = memType(t, false), lt = memType(t, true);
  RC rc = isBool(t) ? RC::B16 : regClass(t);
  e.sharedWriteBegins(op);
  std::string v = memValue(e, t, res[0]);
  e.ins("@" + e.ownerPred(t) + " st.shared." + ty + " [" + base + "], " + v);
  e.barrier(); // this op's own write -> read of its scratch
  std::string d = e.reg(rc);
  e.ins("ld.shared." + lt + " " + d + ", [" + base + "]");
  if (isBool(t)) {
    std::string p = e.reg(RC::Pred);
    e.ins("setp.ne.u16 " + p + ", " + d + ", 0");
    d = p;
  }
  e.bind(op.result(0), {d});
}

/// sm_90's vector float adds (PTX 8.1): `atom.global.add.v4.f32` and
/// `.add.noftz.v8.bf16` add up to 16 bytes of consecutive elements in one
/// instruction (atomic per element, as Triton lowers them on Hopper). The
/// value's registers come in groups of `v` consecutive elements, each under
/// its first element's pointer and guard.
void emitVectorAtomicAdd(Emitter &e, Operation &op, int v) {
  Value *ptr = op.operand(0), *val = op.operand(1);
  Value *mask = op.numOperands() > 2 ? op.operand(2) : nullptr;
  const Type *elem = val->type()->scalarType();
  const Regs &pr = e.regs(ptr), &vr = e.regs(val);
  const Regs *mr = mask ? &e.regs(mask) : nullptr;
  std::string owner = e.ownerPred(ptr->type());
  std::string sem = semScope(op);
  std::string vec = ".v" + std::to_string(v);
  std::string add = elem->dtype() == DType::FP32   ? "add" + vec + ".f32"
                    : elem->dtype() == DType::FP16 ? "add.noftz" + vec + ".f16"
                                                   : "add.noftz" + vec + ".bf16";
  // No one reads the old values: `red` where PTX has it (relaxed and
  // release); an acquire must stay an atom.
  bool red = !hasUses(e.fn, op.result(0)) &&
             (sem.rfind(".relaxed", 0) == 0 || sem.rfind(".release", 0) == 0);
  RC rc = regClass(elem);
  int eb = (int)gpu::storageBytes(elem);
  int n = (int)pr.size();
  int site = e.accessSite(op, ptr, "atomic", eb);
  e.noteAccess(op, red ? "red.global" : "atom.global", eb, v, n / v);
  e.needPtxVersion(81);
  Regs res;
  for (int g = 0; g < n; g += v) {
    std::string p = e.checkAccess(site, pr[g], v * eb, guardOf(e, mr, g, owner));
    std::string guard = p.empty() ? "" : "@" + p + " ";
    Regs vals(vr.begin() + g, vr.begin() + g + v);
    std::string instr = ".global." + add;
    if (red) {
      e.ins(guard + "red" + sem + instr + " [" + pr[g] + "], " + list(vals));
      continue;
    }
    Regs d;
    for (int k = 0; k < v; ++k) {
      d.push_back(e.reg(rc));
      e.ins(std::string(movFor(rc)) + " " + d.back() + ", " + zeroOf(rc));
    }
    e.ins(guard + "atom" + sem + instr + " " + list(d) + ", [" + pr[g] +
          "], " + list(vals));
    res.insert(res.end(), d.begin(), d.end());
  }
  if (red)
    return; // the result is never read: nothing to bind
  shareResult(e, op, std::move(res));
}

void emitAtomicRMW(Emitter &e, Operation &op) {
  Value *ptr = op.operand(0), *val = op.operand(1);
  Value *mask = op.numOperands() > 2 ? op.operand(2) : nullptr;
  const Type *elem = val->type()->scalarType();
  checkAtomicType(e, op, elem);
  if (int v = atomicVectorWidth(e, op); v > 1) {
    emitVectorAtomicAdd(e, op, v);
    return;
  }
  const std::string &kind = op.strAttr("kind");
  const Regs &pr = e.regs(ptr), &vr = e.regs(val);
  const Regs *mr = mask ? &e.regs(mask) : nullptr;
  std::string owner = e.ownerPred(ptr->type());
  std::string ss = semScope(op);
  std::string native = nativeAtom(e, kind, elem);
  RC rc = regClass(elem);
  int eb = (int)gpu::storageBytes(elem);
  int site = e.accessSite(op, ptr, "atomic", eb);
  e.noteAccess(op, "atom.global", eb, 1, (int)pr.size());
  Regs res;
  for (size_t i = 0; i < pr.size(); ++i) {
    std::string p =
        e.checkAccess(site, pr[i], eb, guardOf(e, mr, (int)i, owner));
    std::string guard = p.empty() ? "" : "@" + p + " ";
    if (!native.empty()) {
      bool viaBits =
          native.rfind("exch", 0) == 0 && (rc == RC::F32 || rc == RC::F64);
      std::string d = e.reg(viaBits ? bitsClass(elem) : rc);
      e.ins(std::string(movFor(viaBits ? bitsClass(elem) : rc)) + " " + d +
            ", " + zeroOf(viaBits ? bitsClass(elem) : rc));
      std::string v = viaBits ? toBits(e, elem, vr[i]) : vr[i];
      e.ins(guard + "atom" + ss + ".global." + native + " " + d + ", [" +
            pr[i] + "], " + v);
      res.push_back(viaBits ? fromBits(e, elem, d) : d);
      continue;
    }
    // No native instruction: a compare-and-swap loop.
    RC bc = bitsClass(elem);
    std::string bt = bitType(bc);
    std::string old = e.reg(bc);
    e.ins(std::string(movFor(bc)) + " " + old + ", 0");
    std::string skip = e.newLabel("atom_skip"), loop = e.newLabel("atom_retry");
    if (!p.empty())
      e.ins("@!" + p + " bra " + skip);
    e.ins("ld.global." + bt + " " + old + ", [" + pr[i] + "]");
    e.label(loop);
    std::string cur = fromBits(e, elem, old);
    std::string nv =
        kind == "xchg"
            ? vr[i]
            : binaryElement(e, op, combineOf(kind, elem), elem, cur, vr[i]);
    std::string nb = toBits(e, elem, nv);
    std::string prev = e.reg(bc), q = e.reg(RC::Pred);
    e.ins("atom" + ss + ".global.cas." + bt + " " + prev + ", [" + pr[i] +
          "], " + old + ", " + nb);
    e.ins("setp.ne." + bt + " " + q + ", " + prev + ", " + old);
    e.ins(std::string(movFor(bc)) + " " + old + ", " + prev);
    e.ins("@" + q + " bra " + loop);
    e.label(skip);
    res.push_back(fromBits(e, elem, old));
  }
  shareResult(e, op, std::move(res));
}

void emitAtomicCAS(Emitter &e, Operation &op) {
  Value *ptr = op.operand(0);
  const Type *elem = op.operand(1)->type()->scalarType();
  checkAtomicType(e, op, elem);
  const Regs &pr = e.regs(ptr), &cr = e.regs(op.operand(1)),
             &vr = e.regs(op.operand(2));
  std::string owner = e.ownerPred(ptr->type());
  std::string ss = semScope(op);
  RC bc = bitsClass(elem);
  int eb = (int)gpu::storageBytes(elem);
  int site = e.accessSite(op, ptr, "atomic", eb);
  e.noteAccess(op, "atom.global.cas", eb, 1, (int)pr.size());
  Regs res;
  for (size_t i = 0; i < pr.size(); ++i) {
    std::string p = e.checkAccess(site, pr[i], eb, owner);
    std::string guard = p.empty() ? "" : "@" + p + " ";
    std::string d = e.reg(bc);
    e.ins(std::string(movFor(bc)) + " " + d + ", 0");
    e.ins(guard + "atom" + ss + ".global.cas." + bitType(bc) + " " + d + ", [" +
          pr[i] + "], " + toBits(e, elem, cr[i]) + ", " +
          toBits(e, elem, vr[i]));
    res.push_back(fromBits(e, elem, d));
  }
  shareResult(e, op, std::move(res));
}

/// `r *= eb` in place for a 64-bit register: a shift where eb is a power of
/// two (a multiply that ptxas cannot fuse into the adds that use r).
void scaleByShift(Emitter &e, const std::string &r, int64_t eb) {
  if ((eb & (eb - 1)) == 0) {
    int sh = 0;
    while ((int64_t(1) << sh) < eb)
      ++sh;
    e.ins("shl.b64 " + r + ", " + r + ", " + std::to_string(sh));
  } else {
    e.ins("mul.lo.s64 " + r + ", " + r + ", " + std::to_string(eb));
  }
}

/// offset * sizeof(*ptr) as a 64-bit byte offset; `cache` (per op) keeps
/// one per distinct offset register: a splatted offset (the K loop's
/// `ptrs += BLOCK_K * stride`) is scaled once, not once per pointer.
std::string scaledOffset(Emitter &e, const Type *ptrElem, const Type *offElem,
                         const std::string &off,
                         std::map<std::string, std::string> &cache,
                         bool shared = false) {
  std::string &cached = cache[off];
  if (!cached.empty())
    return cached;
  int64_t eb = gpu::storageBytes(ptrElem->pointee());
  DType t = offElem->dtype();
  std::string o = off;
  bool sgn = isSigned(t);
  auto inv = e.invariantScaled.find({off, eb, sgn});
  if (inv != e.invariantScaled.end() && bitWidth(t) == 32)
    return cached = inv->second;
  if (t == DType::I1) {
    o = e.reg(RC::B32);
    e.ins("selp.u32 " + o + ", 1, 0, " + off);
    t = DType::U32;
  } else if (bitWidth(t) <= 16) {
    std::string w = e.reg(RC::B32);
    e.ins(std::string(sgn ? "cvt.s32.s16 " : "cvt.u32.u16 ") + w + ", " + off);
    o = w;
    t = sgn ? DType::I32 : DType::U32;
  }
  std::string scaled = e.reg(RC::B64);
  if (bitWidth(t) == 32) {
    if (eb == 1)
      e.ins(std::string(sgn ? "cvt.s64.s32 " : "cvt.u64.u32 ") + scaled + ", " +
            o);
    else
      e.ins(std::string(sgn ? "mul.wide.s32 " : "mul.wide.u32 ") + scaled +
            ", " + o + ", " + std::to_string(eb));
  } else if (eb == 1) {
    scaled = o;
  } else if (shared) {
    // A 64-bit offset several pointers add (a descriptor's column offsets,
    // broadcast over its rows): a shift, which ptxas leaves as one value
    // for every add (IADD3 + IADD3.X each). A multiply it folds into each
    // add instead, an IMAD.WIDE per pointer plus the moves that keep the
    // pointer it overwrites: 12 IMAD.WIDE and 34 moves in the persistent
    // descriptor matmul's K loop at 128x256x64 (sm_90a, ptxas 13.0).
    e.ins("mov.b64 " + scaled + ", " + o);
    scaleByShift(e, scaled, eb);
  } else {
    e.ins("mul.lo.s64 " + scaled + ", " + o + ", " + std::to_string(eb));
  }
  cached = scaled;
  return scaled;
}

} // namespace

void hoistScaledOffsets(Emitter &e, Operation &loop) {
  // A loop's `ptrs += BLOCK_K * stride` adds a splat of a scalar defined
  // before the loop: its byte offset is widened and shifted here, once,
  // and each pointer of the body adds that register (IADD3 + IMAD.X). An
  // in-loop `mul.wide` by the element size is what ptxas fuses into one
  // IMAD.WIDE per pointer, on the multiply pipe, each waiting for the
  // cp.async that still reads the pointer it overwrites. Measured as PTX on
  // an H100 (twenty-first session, the tutorial matmul beside Triton in one
  // process): at 128x256x64 w8 s3, Triton's time over tritium's from 0.940 /
  // 0.945 / 0.974 (fp16 4096^3, bf16 4096^3, fp16 8192^3) to 1.002 / 0.996 /
  // 1.023; at 128x128x64 w4 s4 from 0.917 / 0.933 / 0.911 to 0.969 / 0.974 /
  // 0.933.
  for (auto &ptr : loop.region(0).front().ops()) {
    Operation *op = ptr.get();
    if (op->code() != OpCode::AddPtr)
      continue;
    Operation *splat = op->operand(1)->definingOp();
    if (!splat || splat->code() != OpCode::Splat || isDefinedInside(splat->operand(0), &loop))
      continue;
    const Type *oe = op->operand(1)->type()->scalarType();
    if (bitWidth(oe->dtype()) != 32)
      continue;
    const Type *pe = op->operand(0)->type()->scalarType();
    int64_t eb = gpu::storageBytes(pe->pointee());
    bool sgn = isSigned(oe->dtype());
    const std::string &r = e.regs(splat->operand(0))[0];
    std::string &scaled = e.invariantScaled[{r, eb, sgn}];
    if (!scaled.empty())
      continue;
    scaled = e.reg(RC::B64);
    e.ins(std::string(sgn ? "cvt.s64.s32 " : "cvt.u64.u32 ") + scaled + ", " + r);
    if (eb != 1)
      scaleByShift(e, scaled, eb);
  }
}

namespace {

void emitAddPtr(Emitter &e, Operation &op) {
  const Regs &pr = e.regs(op.operand(0)), &orr = e.regs(op.operand(1));
  const Type *pe = op.operand(0)->type()->scalarType();
  const Type *oe = op.operand(1)->type()->scalarType();
  Regs out;
  // Splatted operands repeat one register: compute each distinct pair once.
  std::map<std::pair<std::string, std::string>, std::string> seen;
  std::map<std::string, std::string> scaled;
  // Offsets straight from tl.arange (thread + constant, no overflow): the
  // thread's address once, then constant byte offsets.
  bool fromRange = oe->dtype() == DType::I32;
  int64_t eb = gpu::storageBytes(pe->pointee());
  // Offsets `s + tl.arange` (a row's or a block's start plus a range, the
  // offsets of nearly every row and elementwise kernel): s goes into the
  // base once, and the range's registers become constant byte offsets as
  // above, which ptxas folds into the accesses ([base + imm]) instead of a
  // register pair and a mul.wide per vector (Liger's cross-entropy at 32
  // warps: 16 of its 64 registers). The address is p + s + range where the
  // IR's is p + (s + range wrapped to i32): they differ only where that sum
  // wraps, an address outside any tensor of fewer than 2^31 elements either
  // way (larger ones get 64-bit offsets: widen-offsets).
  const Regs *rangePart = nullptr;
  std::string startReg;
  if (fromRange) {
    Operation *add = op.operand(1)->definingOp();
    if (add && add->code() == OpCode::AddI)
      for (unsigned k = 0; k < 2 && !rangePart; ++k) {
        const Regs &a = e.regs(add->operand(k)), &b = e.regs(add->operand(1 - k));
        bool uniform = !a.empty() && a[0] != Emitter::kUndemanded &&
                       std::all_of(a.begin(), a.end(),
                                   [&](const std::string &r) { return r == a[0]; });
        if (uniform && b.size() == orr.size() && e.rangeRegs.count(b[0])) {
          rangePart = &b;
          startReg = a[0];
        }
      }
  }
  std::map<std::string, std::string> started; // p -> p + s * eb
  // How many distinct pointers each offset register moves.
  std::map<std::string, int> uses;
  {
    std::set<std::pair<std::string, std::string>> pairs;
    for (size_t i = 0; i < pr.size(); ++i)
      if (e.demanded(op.result(0), (int)i) && pairs.insert({pr[i], orr[i]}).second)
        ++uses[orr[i]];
  }
  for (size_t i = 0; i < pr.size(); ++i) {
    if (!e.demanded(op.result(0), (int)i)) {
      out.push_back(Emitter::kUndemanded);
      continue;
    }
    auto key = std::make_pair(pr[i], orr[i]);
    auto it = seen.find(key);
    if (it != seen.end()) {
      out.push_back(it->second);
      continue;
    }
    auto range = fromRange ? e.rangeRegs.find(orr[i]) : e.rangeRegs.end();
    std::string p = pr[i];
    if (range == e.rangeRegs.end() && rangePart) {
      range = e.rangeRegs.find((*rangePart)[i]);
      if (range != e.rangeRegs.end()) {
        std::string &shifted = started[pr[i]];
        if (shifted.empty()) {
          shifted = e.reg(RC::B64);
          // fromRange: the offset is i32 (signed), one multiply-add
          e.ins("mad.wide.s32 " + shifted + ", " + startReg + ", " + std::to_string(eb) +
                ", " + pr[i]);
        }
        p = shifted;
      }
    }
    std::string d;
    if (range != e.rangeRegs.end()) {
      auto [thr, c] = range->second;
      auto base = seen.find({p, "range:" + thr});
      if (base == seen.end()) {
        std::string b = e.reg(RC::B64);
        e.ins("mad.wide.u32 " + b + ", " + thr + ", " + std::to_string(eb) + ", " + p);
        base = seen.emplace(std::make_pair(p, "range:" + thr), b).first;
      }
      d = base->second;
      if (c != 0) {
        d = e.reg(RC::B64);
        e.ins("add.s64 " + d + ", " + base->second + ", " + std::to_string(c * eb));
      }
    } else if (bitWidth(oe->dtype()) == 32 && uses[orr[i]] == 1 &&
               !e.invariantScaled.count({orr[i], eb, isSigned(oe->dtype())})) {
      // An offset of one pointer: one multiply-add, which ptxas makes LEA +
      // LEA.HI.X.SX32 on the integer pipe (for an element size of 2^k),
      // where mul.wide + add.s64 became an IMAD.WIDE on the multiply pipe
      // that a loop's floating-point work also needs. The attention
      // forward's K/V addresses (H100, twenty-first session, fp16 4x32x4096,
      // Triton's time over tritium's): d128 128x128 w8 0.877 -> 0.952, d128
      // 128x64 w4 0.869 -> 0.969, d64 128x64 w8 0.970 -> 0.992.
      d = e.reg(RC::B64);
      e.ins(std::string(isSigned(oe->dtype()) ? "mad.wide.s32 " : "mad.wide.u32 ") + d +
            ", " + orr[i] + ", " + std::to_string(eb) + ", " + pr[i]);
    } else {
      d = e.reg(RC::B64);
      e.ins("add.s64 " + d + ", " + pr[i] + ", " +
            scaledOffset(e, pe, oe, orr[i], scaled, uses[orr[i]] > 1));
    }
    seen.emplace(key, d);
    out.push_back(d);
  }
  e.bind(op.result(0), std::move(out));
}

} // namespace

bool emitMemory(Emitter &e, Operation &op) {
  switch (op.code()) {
  case OpCode::AddPtr:
    emitAddPtr(e, op);
    return true;
  case OpCode::Load:
    emitLoad(e, op);
    return true;
  case OpCode::Store:
    emitStore(e, op);
    return true;
  case OpCode::AtomicRMW:
    emitAtomicRMW(e, op);
    return true;
  case OpCode::AtomicCAS:
    emitAtomicCAS(e, op);
    return true;
  default:
    return false;
  }
}

} // namespace tritium::nvidia
