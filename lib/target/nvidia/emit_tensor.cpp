// Constants, program ids, make_range, splat, and the ops that move elements
// between layouts (broadcast, expand_dims, reshape, trans, convert_layout):
// register renaming when each thread already holds what it needs, else a
// round trip through shared memory.
#include "emitter.h"

#include "tritium/gpu/passes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace tritium::nvidia {

namespace {

int64_t dot(const gpu::Basis &c, const std::vector<int64_t> &w) {
  int64_t f = 0;
  for (size_t d = 0; d < c.size(); ++d)
    f += c[d] * w[d];
  return f;
}

/// Elements per shared-memory access: consecutive registers whose indices
/// are consecutive (and whose thread offsets keep the vector aligned), up
/// to 16 bytes and 4 elements, or 8 for 16-bit types (packed in pairs into
/// 32-bit words: PTX vectors have at most 4 members). With XOR bases too:
/// when every other basis steps by a multiple of the vector, XORing them
/// leaves its low bits alone.
int sharedVector(const gpu::LinearLayout &ll, const std::vector<int64_t> &w,
                 int64_t eb, bool isPred) {
  if (isPred)
    return 1;
  int64_t consecutive;
  if (std::optional<gpu::LinearLayout> f = gpu::linearFunction(ll, w)) {
    consecutive = f->numConsecutive(gpu::kRegister);
  } else { // a disjoint layout under weights that are not GF(2)-linear
    int run = 0;
    while (run < (int)ll.reg().size() &&
           dot(ll.reg()[run], w) == (int64_t(1) << run))
      ++run;
    consecutive = int64_t(1) << run;
  }
  int64_t v = std::min<int64_t>({consecutive, eb == 2 ? 8 : 4, 16 / eb});
  // Every vector must start at a multiple of its length: all other bases
  // (the register bits above the vector, lanes, warps) step by multiples.
  auto aligned = [&](int64_t v) {
    int bits = log2Exact(v);
    for (size_t i = bits; i < ll.reg().size(); ++i)
      if (dot(ll.reg()[i], w) % v != 0)
        return false;
    for (const auto *set : {&ll.lane(), &ll.warp()})
      for (const gpu::Basis &b : *set)
        if (dot(b, w) % v != 0)
          return false;
    return true;
  };
  while (v > 1 && !aligned(v))
    v /= 2;
  return (int)std::max<int64_t>(v, 1);
}

std::string sharedType(const Type *elem, bool forLoad) {
  if (elem->isPointer())
    return "b64";
  switch (elem->dtype()) {
  case DType::I1:
  case DType::U8:
  case DType::FP8E4NV:
  case DType::FP8E5:
  case DType::FP8E4B15:
  case DType::FP8E4B8:
  case DType::FP8E5B16:
    return "u8";
  case DType::I8:
    return forLoad ? "s8" : "u8";
  case DType::FP32:
    return "f32";
  case DType::FP64:
    return "f64";
  default:
    return "b" + std::to_string(std::max(16, bitWidth(elem->dtype())));
  }
}

std::string vecList(const Regs &r, size_t from, int v) {
  if (v == 1)
    return r[from];
  std::string s = "{";
  for (int k = 0; k < v; ++k)
    s += (k ? ", " : "") + r[from + k];
  return s + "}";
}

/// The write half of a conversion out of an mma fragment (16-bit elements,
/// sm_90+) with stmatrix.sync.aligned.m8n8.x4: the inverse of ldmatrix.
/// Lane L gives the address of row L % 8 of matrix L / 8, and thread l's
/// 32-bit register j is, of matrix j, the pair (row l / 4, columns
/// 2 (l % 4) + {0, 1}). That is an mma accumulator's own distribution, so
/// one instruction stores 8 registers where st.shared.b32 would take four
/// (an accumulator tile's epilogue went 64 STS.32 -> 16 STSM per thread).
///
/// In terms of `off` (the scratch offset, swizzle applied, of each bit of
/// register, lane, warp): register bit 0 and lane bits 0, 1 must walk one
/// 16-byte row (offsets 1, 2, 4); every other basis a multiple of 8 so
/// that rows stay whole 16-byte chunks (the scratch swizzle moves whole
/// chunks). Lane bits 2-4 then pick the row, register bits 1-2 the matrix.
/// Returns false (nothing emitted) when that does not hold.
bool stmatrixStore(Emitter &e, const Operation &op, const gpu::LinearLayout &ls,
                   const std::vector<int64_t> &strides,
                   const gpu::ScratchSwizzle &sw, const std::string &base,
                   const Regs &srcRegs) {
  std::optional<gpu::LinearLayout> f = gpu::linearFunction(ls, strides);
  int n = ls.numRegs();
  if (!f || n < 8 || f->lane().size() != 5)
    return false;
  auto offsets = [&](const std::vector<gpu::Basis> &bases) {
    std::vector<int64_t> o;
    for (const gpu::Basis &b : bases)
      o.push_back(sw.apply(b[0]));
    return o;
  };
  std::vector<int64_t> reg = offsets(f->reg()), lane = offsets(f->lane()),
                       warp = offsets(f->warp());
  if (std::vector<int64_t>{reg[0], lane[0], lane[1]} !=
      std::vector<int64_t>{1, 2, 4})
    return false;
  std::vector<int64_t> others = {lane[2], lane[3], lane[4]};
  others.insert(others.end(), reg.begin() + 1, reg.end());
  others.insert(others.end(), warp.begin(), warp.end());
  // A zero basis is a copy (two threads or registers holding one element):
  // the generic path, which stores owners only, handles those.
  if (std::any_of(others.begin(), others.end(),
                  [](int64_t b) { return b == 0 || b % 8 != 0; }))
    return false;
  std::vector<int64_t> supply = {lane[2], lane[3], lane[4], reg[1], reg[2]};
  std::string key = "stmatrix|";
  for (const auto *v : {&supply, &warp}) {
    for (int64_t x : *v)
      key += std::to_string(x) + ",";
    key += "|";
  }
  std::string thr = e.threadValue(key, supply, warp, false);
  uint64_t mask = 0;
  for (const auto *v : {&supply, &warp})
    for (int64_t b : *v)
      mask |= uint64_t(b);
  const int64_t eb = 2;
  std::map<std::string, std::string> addrs;
  e.noteAccess(op, "stmatrix", eb, 8, n / 8);
  for (int g = 0; g < n; g += 8) {
    int64_t regPart = 0;
    for (size_t i = 3; i < reg.size(); ++i)
      if ((g >> i) & 1)
        regPart ^= reg[i];
    auto [t, imm] = e.xorSplit(thr, mask, regPart);
    std::string &a = addrs[t];
    if (a.empty()) {
      a = e.reg(RC::B32);
      e.ins("mad.lo.s32 " + a + ", " + t + ", " + std::to_string(eb) + ", " +
            base);
    }
    Regs words;
    for (int j = 0; j < 4; ++j) {
      words.push_back(e.reg(RC::B32));
      e.ins("mov.b32 " + words.back() + ", {" + srcRegs[g + 2 * j] + ", " +
            srcRegs[g + 2 * j + 1] + "}");
    }
    e.ins("stmatrix.sync.aligned.m8n8.x4.shared.b16 [" + a + "+" +
          std::to_string(imm * eb) + "], " + vecList(words, 0, 4));
  }
  return true;
}

} // namespace

std::string memType(const Type *elem, bool forLoad) {
  return sharedType(elem, forLoad);
}

Regs moveThroughShared(Emitter &e, const Operation &op, const Type *src,
                       const Regs &srcRegs, const Type *dst,
                       const std::vector<int64_t> &weights, bool ownersOnly) {
  const Type *elem = src->element();
  bool isPred = !elem->isPointer() && elem->dtype() == DType::I1;
  int64_t eb = gpu::storageBytes(elem);
  std::string base = e.scratch(op);
  const gpu::LinearLayout &ls = gpu::linearOf(src), &ld = gpu::linearOf(dst);
  std::vector<int64_t> strides = gpu::rowMajorStrides(src->shape());
  const gpu::ScratchSwizzle sw = gpu::scratchSwizzle(src, eb);
  // 16-bit elements move in pairs packed into 32-bit words.
  const bool packed = eb == 2 && !isPred && !elem->isPointer();

  // The address of the element a register of layout t holds: a register
  // with the thread's part of S(dot(coord, w)) (S the swizzle), XORed with
  // the register's overlapping bits, and an immediate byte offset with the
  // rest; one mad per distinct thread part (`addrs` caches them).
  auto addressOf = [&](const Type *t, const std::vector<int64_t> &w,
                       std::map<std::string, std::string> &addrs,
                       const gpu::Basis &regCoord) {
    auto [thr, imm] = e.threadLinearAt(t, w, dot(regCoord, w), &sw);
    std::string &a = addrs[thr];
    if (a.empty()) {
      a = e.reg(RC::B32);
      e.ins("mad.lo.s32 " + a + ", " + thr + ", " + std::to_string(eb) +
            ", " + base);
    }
    return std::make_pair(a, imm * eb);
  };
  auto access = [&](const char *what, int v, bool forLoad) {
    if (packed && v >= 2)
      return std::string(what) + (v > 2 ? ".v" + std::to_string(v / 2) : "") +
             ".b32";
    return std::string(what) + (v > 1 ? ".v" + std::to_string(v) : "") + "." +
           sharedType(elem, forLoad);
  };

  e.sharedWriteBegins(op);
  std::map<std::string, std::string> addrsS, addrsD;
  std::string owner = ownersOnly ? e.ownerPred(src) : "";
  std::string guard = owner.empty() ? "" : "@" + owner + " ";
  int vs = sharedVector(ls, strides, eb, isPred);
  std::string st = access("st.shared", vs, false);
  bool viaStmatrix = packed && guard.empty() && e.opts.target.sm >= 90 &&
                     stmatrixStore(e, op, ls, strides, sw, base, srcRegs);
  for (int r = 0; r < ls.numRegs() && !viaStmatrix; r += vs) {
    auto [addr, off] = addressOf(src, strides, addrsS, ls.regCoord(r));
    Regs vals;
    for (int k = 0; k < vs; ++k) {
      std::string v = srcRegs[r + k];
      if (isPred) {
        std::string b = e.reg(RC::B16);
        e.ins("selp.u16 " + b + ", 1, 0, " + v);
        v = b;
      }
      vals.push_back(v);
    }
    if (packed && vs >= 2) {
      Regs words;
      for (int k = 0; k < vs; k += 2) {
        words.push_back(e.reg(RC::B32));
        e.ins("mov.b32 " + words.back() + ", {" + vals[k] + ", " +
              vals[k + 1] + "}");
      }
      vals = std::move(words);
    }
    e.ins(guard + st + " [" + addr + "+" + std::to_string(off) + "], " +
          vecList(vals, 0, (int)vals.size()));
  }
  // Inside this op: its writes -> its reads. The barrier before its first
  // write, if any, is a gpu.barrier op (--insert-barriers).
  e.barrier();
  int vd = sharedVector(ld, weights, eb, isPred);
  std::string ldi = access("ld.shared", vd, true);
  RC rc = isPred ? RC::B16 : regClass(elem);
  Regs out(ld.numRegs());
  for (int r = 0; r < ld.numRegs(); r += vd) {
    auto [addr, off] = addressOf(dst, weights, addrsD, ld.regCoord(r));
    Regs got;
    for (int k = 0; k < vd; ++k)
      got.push_back(e.reg(rc));
    if (packed && vd >= 2) {
      Regs words;
      for (int k = 0; k < vd; k += 2)
        words.push_back(e.reg(RC::B32));
      e.ins(ldi + " " + vecList(words, 0, (int)words.size()) + ", [" + addr +
            "+" + std::to_string(off) + "]");
      for (int k = 0; k < vd; k += 2)
        e.ins("mov.b32 {" + got[k] + ", " + got[k + 1] + "}, " + words[k / 2]);
    } else {
      e.ins(ldi + " " + vecList(got, 0, vd) + ", [" + addr + "+" +
            std::to_string(off) + "]");
    }
    for (int k = 0; k < vd; ++k) {
      if (isPred) {
        std::string p = e.reg(RC::Pred);
        e.ins("setp.ne.u16 " + p + ", " + got[k] + ", 0");
        got[k] = p;
      }
      out[r + k] = got[k];
    }
  }
  return out;
}

/// Data movement (the MOVE trait): in registers when the layouts allow it,
/// through shared memory otherwise.
static void emitMovement(Emitter &e, Operation &op) {
  const Type *st = op.operand(0)->type(), *rt = op.result(0)->type();
  std::vector<int64_t> w = gpu::movementWeights(op);
  gpu::MovementPlan plan = gpu::planMovement(st, rt, w);
  const Regs &in = e.regs(op.operand(0));
  if (plan.inRegisters) {
    Regs out;
    for (int s : plan.srcReg)
      out.push_back(in[s]);
    e.bind(op.result(0), std::move(out));
  } else {
    e.bind(op.result(0), moveThroughShared(e, op, st, in, rt, w));
  }
}

bool emitTensorOp(Emitter &e, Operation &op) {
  const Type *rt = op.numResults() ? op.result(0)->type() : nullptr;
  if (op.hasTrait(MOVE)) {
    emitMovement(e, op);
    return true;
  }
  switch (op.code()) {
  case OpCode::Constant: {
    std::string r = materialize(e, rt->scalarType(), op.attrs().at("value"));
    e.bind(op.result(0), Regs(Emitter::numRegs(rt), r));
    return true;
  }
  case OpCode::GetProgramId:
  case OpCode::GetNumPrograms: {
    static const char *axes[] = {"x", "y", "z"};
    int64_t axis = op.intAttr("axis");
    std::string r = e.reg(RC::B32);
    e.ins(std::string("mov.u32 ") + r + ", " +
          (op.code() == OpCode::GetProgramId ? "%ctaid." : "%nctaid.") +
          axes[axis]);
    e.bind(op.result(0), {r});
    return true;
  }
  case OpCode::MakeRange: {
    const gpu::LinearLayout &ll = gpu::linearOf(rt);
    e.threadCoord(rt, 0); // the prologue's registers come first
    int64_t start = op.intAttr("start");
    int64_t threadMax = 0;
    for (const auto *bases : {&ll.lane(), &ll.warp(), &ll.block()})
      for (const gpu::Basis &b : *bases)
        threadMax |= b[0];
    Regs out;
    for (int r = 0; r < ll.numRegs(); ++r) {
      std::string d = e.reg(RC::B32);
      // thread ^ register coordinate, as a register plus a constant.
      auto [thr, part] = e.threadLinearAt(rt, {1}, ll.regCoord(r)[0]);
      int64_t c = part + start;
      e.ins("add.s32 " + d + ", " + thr + ", " + std::to_string(c));
      if (start >= 0)
        e.rangeRegs[d] = {thr, c};
      e.rangeBounds[d] = {c, c + threadMax};
      out.push_back(d);
    }
    e.bind(op.result(0), std::move(out));
    return true;
  }
  case OpCode::Splat:
    e.bind(op.result(0), Regs(Emitter::numRegs(rt), e.regs(op.operand(0))[0]));
    return true;
  default:
    return false;
  }
}

bool isConstantZero(Value *v) {
  Operation *def = v->definingOp();
  while (def && (gpu::isLayoutConversion(*def) || def->code() == OpCode::TruncF ||
                 def->code() == OpCode::ExtF))
    def = def->operand(0)->definingOp();
  if (!def || def->code() != OpCode::Constant)
    return false;
  const Attribute &a = def->attrs().at("value");
  if (const auto *i = std::get_if<int64_t>(&a))
    return *i == 0;
  if (const auto *f = std::get_if<double>(&a))
    return *f == 0.0 && !std::signbit(*f);
  if (const auto *b = std::get_if<bool>(&a))
    return !*b;
  return false;
}

} // namespace tritium::nvidia
