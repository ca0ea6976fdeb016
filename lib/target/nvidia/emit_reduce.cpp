// tt.reduce: sum, prod, max, min, argmax, argmin, xor_sum along one axis.
//
//  1. Within a thread: registers whose coordinates differ only along the
//     axis are combined, in register order.
//  2. Across lanes: each lane bit whose basis moves along the axis is one
//     butterfly step (shfl.sync.bfly), so every lane ends with the result.
//  3. Across warps (when warps split the axis), through shared memory: each
//     warp writes its partial per output element; the K partials of each
//     element are combined by K consecutive lanes with butterfly shuffles
//     (one thread per partial, as few registers as possible while the
//     operand is live); every thread then reads the results it holds. When
//     the K consecutive lanes of every warp hold the same elements (a row
//     reduced to a scalar), every warp runs that butterfly itself and keeps
//     the result in registers: one barrier fewer. Up to 4 warps, every
//     thread reads all K partials instead.
// The result's layout is the slice of the operand's along the axis, so each
// thread then holds exactly the outputs of the rows it took part in.
//
// Small types accumulate widened (fp16/bf16/fp8 in fp32, 8/16-bit ints in 32
// bits) and round once at the end. max/min ignore NaN (max.f32 does);
// argmax/argmin keep the first index of the extreme value, NaN ignored.
#include "emitter.h"

#include <algorithm>
#include <map>

namespace tritium::nvidia {

namespace {

struct Acc {
  std::string v, idx; // idx only for argmax/argmin
};

struct ReduceCtx {
  Emitter &e;
  const Operation &op;
  std::string kind;
  DType inT;  // the operand's element type
  DType accT; // what we combine in
  bool arg;

  RC accClass() const { return regClass(Type::scalar(accT)); }

  std::string widen(const std::string &r) {
    if (isFloat(inT))
      return inT == DType::FP64 ? r : toF32(e, op, inT, r);
    if (inT == DType::I1) {
      std::string w = e.reg(RC::B32);
      e.ins("selp.u32 " + w + ", 1, 0, " + r);
      return w;
    }
    if (bitWidth(inT) <= 16) {
      std::string w = e.reg(RC::B32);
      e.ins(std::string(isSigned(inT) ? "cvt.s32.s16 " : "cvt.u32.u16 ") + w +
            ", " + r);
      return w;
    }
    return r;
  }

  std::string narrow(const std::string &r, DType outT) {
    if (isFloat(outT))
      return outT == DType::FP64 ? r : fromF32(e, op, outT, r);
    if (outT == DType::I1) {
      std::string p = e.reg(RC::Pred);
      e.ins("setp.ne.u32 " + p + ", " + r + ", 0");
      return p;
    }
    if (bitWidth(outT) <= 16) {
      std::string h = e.reg(RC::B16);
      e.ins("cvt.u16.u32 " + h + ", " + r);
      return normalizeInt(e, outT, h);
    }
    return r;
  }

  Acc combine(const Acc &a, const Acc &b) {
    RC rc = accClass();
    bool f = isFloat(accT);
    std::string ft = accT == DType::FP64 ? "f64" : "f32";
    std::string it = intType(accT, isSigned(inT));
    std::string d = e.reg(rc);
    std::string ops = " " + d + ", " + a.v + ", " + b.v;
    if (!arg) {
      // As elementwise fp32 add/mul (emit_arith.cpp): no rounding modifier
      // when fp fusion is on, so ptxas may fuse the sum of products
      // (tl.sum(a * b)) into fma as LLVM does for Triton.
      std::string rn = e.opts.enableFpFusion ? "." : ".rn.";
      if (kind == "sum")
        e.ins(f ? "add" + rn + ft + ops : "add." + it + ops);
      else if (kind == "prod")
        e.ins(f ? "mul" + rn + ft + ops : "mul.lo." + it + ops);
      else if (kind == "max")
        e.ins(f ? "max." + ft + ops : "max." + it + ops);
      else if (kind == "min")
        e.ins(f ? "min." + ft + ops : "min." + it + ops);
      else if (kind == "xor_sum")
        e.ins("xor." + bitType(rc) + ops);
      else
        e.internalError(op, "has an unknown kind");
      return {d, ""};
    }
    // take b when it is strictly better, or equally good with a smaller
    // index; NaN never wins unless both are NaN (then the smaller index).
    const char *better = kind == "argmax" ? "gt" : "lt";
    std::string ty = f ? ft : it;
    std::string p = e.reg(RC::Pred), eq = e.reg(RC::Pred), li = e.reg(RC::Pred),
                t = e.reg(RC::Pred);
    e.ins(std::string("setp.") + better + "." + ty + " " + p + ", " + b.v +
          ", " + a.v);
    e.ins("setp.eq." + ty + " " + eq + ", " + b.v + ", " + a.v);
    e.ins("setp.lt.s32 " + li + ", " + b.idx + ", " + a.idx);
    e.ins("and.pred " + t + ", " + eq + ", " + li);
    e.ins("or.pred " + p + ", " + p + ", " + t);
    if (f) {
      std::string an = e.reg(RC::Pred), bn = e.reg(RC::Pred),
                  x = e.reg(RC::Pred), y = e.reg(RC::Pred);
      e.ins("setp.nan." + ft + " " + an + ", " + a.v + ", " + a.v);
      e.ins("setp.num." + ft + " " + bn + ", " + b.v + ", " + b.v);
      e.ins("and.pred " + x + ", " + an + ", " + bn); // a NaN, b a number
      e.ins("or.pred " + p + ", " + p + ", " + x);
      e.ins("not.pred " + y + ", " + bn);            // b NaN
      e.ins("and.pred " + y + ", " + y + ", " + an); // both NaN
      e.ins("and.pred " + y + ", " + y + ", " + li);
      e.ins("or.pred " + p + ", " + p + ", " + y);
    }
    std::string di = e.reg(RC::B32);
    e.ins(std::string("selp.") + (f ? ft : bitType(rc)) + " " + d + ", " + b.v +
          ", " + a.v + ", " + p);
    e.ins("selp.b32 " + di + ", " + b.idx + ", " + a.idx + ", " + p);
    return {d, di};
  }

  std::string shuffle(const std::string &v, RC rc, int mask) {
    std::string m = std::to_string(mask);
    if (rc == RC::B64 || rc == RC::F64) {
      std::string bits = v;
      if (rc == RC::F64) {
        bits = e.reg(RC::B64);
        e.ins("mov.b64 " + bits + ", " + v);
      }
      std::string lo = e.reg(RC::B32), hi = e.reg(RC::B32),
                  lo2 = e.reg(RC::B32), hi2 = e.reg(RC::B32),
                  out = e.reg(RC::B64);
      e.ins("mov.b64 {" + lo + ", " + hi + "}, " + bits);
      e.ins("shfl.sync.bfly.b32 " + lo2 + ", " + lo + ", " + m + ", 31, -1");
      e.ins("shfl.sync.bfly.b32 " + hi2 + ", " + hi + ", " + m + ", 31, -1");
      e.ins("mov.b64 " + out + ", {" + lo2 + ", " + hi2 + "}");
      if (rc == RC::F64) {
        std::string d = e.reg(RC::F64);
        e.ins("mov.b64 " + d + ", " + out);
        return d;
      }
      return out;
    }
    std::string d = e.reg(rc);
    e.ins("shfl.sync.bfly.b32 " + d + ", " + v + ", " + m + ", 31, -1");
    return d;
  }
};

} // namespace

// Up to this many warps along the axis, every thread reads all partials
// (stage B'); beyond, the butterfly (stage B). On the H200 the two measured
// alike for softmax at 4 warps; at 8 reading all raised softmax 4096's
// registers from 35 to 42 (occupancy 75% -> 62.5%).
constexpr int64_t kReadAllMaxWarps = 4;

/// Whether stage B'' applies: the lanes that differ in their low log2(K)
/// bits hold the same output elements (their bases run along the axis or
/// are copies), so K consecutive lanes can butterfly the K partials of an
/// element each of them holds; and no thread has more elements to combine
/// (`keys`) than B's rounds, so it shuffles no more than B does.
bool butterflyInEveryWarp(const gpu::LinearLayout &ll, int axis, int64_t K,
                          size_t keys, int64_t rounds) {
  if (K > 32 || (int64_t)keys > rounds)
    return false;
  for (int64_t i = 0; (int64_t(1) << i) < K; ++i) {
    if (i >= (int64_t)ll.lane().size())
      return false;
    const gpu::Basis &b = ll.lane()[i];
    for (size_t d = 0; d < b.size(); ++d)
      if ((int)d != axis && b[d] != 0)
        return false;
  }
  return true;
}

bool emitReduce(Emitter &e, Operation &op) {
  if (op.code() != OpCode::Reduce)
    return false;
  Value *x = op.operand(0);
  const Type *inTy = x->type(), *outTy = op.result(0)->type();
  int axis = (int)op.intAttr("axis");
  ReduceCtx c{e,          op,   op.strAttr("kind"), inTy->element()->dtype(),
              DType::I32, false};
  c.arg = c.kind == "argmax" || c.kind == "argmin";
  if (isFloat(c.inT))
    c.accT = c.inT == DType::FP64 ? DType::FP64 : DType::FP32;
  else if (bitWidth(c.inT) == 64)
    c.accT = isSigned(c.inT) ? DType::I64 : DType::U64;
  else
    c.accT = isSigned(c.inT) ? DType::I32 : DType::U32;
  if (c.kind == "xor_sum" && isFloat(c.inT))
    e.internalError(op, "xor_sum of floats");

  const gpu::LinearLayout &ll = gpu::linearOf(inTy);
  const Regs &in = e.regs(x);
  std::string thrAxis = c.arg ? e.threadCoord(inTy, axis) : "";

  // 1. Within the thread, grouped by the coordinate without the axis.
  std::map<gpu::Basis, Acc> groups;
  std::vector<gpu::Basis> keyOrder;
  for (int r = 0; r < ll.numRegs(); ++r) {
    gpu::Basis coord = ll.regCoord(r);
    int64_t along = coord[axis];
    coord.erase(coord.begin() + axis);
    Acc a{c.widen(in[r]), ""};
    if (c.arg) {
      a.idx = e.reg(RC::B32);
      std::vector<int64_t> unit(inTy->rank(), 0);
      unit[axis] = 1;
      auto [thr, part] = e.threadLinearAt(inTy, unit, along); // XOR layouts
      e.ins("add.s32 " + a.idx + ", " + thr + ", " + std::to_string(part));
    }
    auto it = groups.find(coord);
    if (it == groups.end()) {
      groups.emplace(coord, a);
      keyOrder.push_back(coord);
    } else {
      it->second = c.combine(it->second, a);
    }
  }

  // 2. Across the lanes that split the axis. Where all 32 lanes of a warp
  // hold one output element's partials, a 32-bit integer sum, max, min or
  // xor is one redux.sync (sm_80) instead of five butterfly steps (tl.sum of
  // a mask's int32, as Triton's REDUX.SUM).
  size_t axisLanes = 0;
  for (const gpu::Basis &b : ll.lane())
    axisLanes += b[axis] != 0;
  const char *redux = nullptr;
  if (!c.arg && axisLanes == ll.lane().size() && ll.lane().size() == 5 &&
      (c.accT == DType::I32 || c.accT == DType::U32) && bitWidth(c.inT) <= 32) {
    bool sgn = isSigned(c.inT);
    if (c.kind == "sum")
      redux = "redux.sync.add.s32 ";
    else if (c.kind == "max")
      redux = sgn ? "redux.sync.max.s32 " : "redux.sync.max.u32 ";
    else if (c.kind == "min")
      redux = sgn ? "redux.sync.min.s32 " : "redux.sync.min.u32 ";
    else if (c.kind == "xor_sum")
      redux = "redux.sync.xor.b32 ";
  }
  if (redux) {
    for (auto &key : keyOrder) {
      Acc &a = groups[key];
      std::string d = e.reg(RC::B32);
      e.ins(std::string(redux) + d + ", " + a.v + ", -1");
      a.v = d;
    }
  }
  for (size_t i = 0; i < ll.lane().size() && !redux; ++i) {
    const gpu::Basis &b = ll.lane()[i];
    if (b[axis] == 0)
      continue;
    for (size_t d = 0; d < b.size(); ++d)
      if ((int)d != axis && b[d] != 0)
        e.internalError(op, "has a lane basis across the axis and another dim");
    for (auto &key : keyOrder) {
      Acc &a = groups[key];
      Acc o{c.shuffle(a.v, c.accClass(), 1 << i), ""};
      if (c.arg)
        o.idx = c.shuffle(a.idx, RC::B32, 1 << i);
      a = c.combine(a, o);
    }
  }

  // 3. Across the warps that split the axis, through shared memory.
  std::vector<int> warpBits;
  for (size_t i = 0; i < ll.warp().size(); ++i)
    if (ll.warp()[i][axis] != 0)
      warpBits.push_back((int)i);
  std::vector<int64_t> outShape = inTy->shape();
  outShape.erase(outShape.begin() + axis);
  const Type *sliceTy = outTy->isTensor() ? outTy : nullptr;
  if (!warpBits.empty()) {
    int64_t K = int64_t(1) << warpBits.size();
    int64_t outElems = 1;
    for (int64_t s : outShape)
      outElems *= s;
    std::vector<int64_t> outStrides = gpu::rowMajorStrides(outShape);
    int64_t ab = c.accT == DType::FP64 || bitWidth(c.accT) == 64 ? 8 : 4;
    std::string base = e.scratch(op);
    // This warp's index among the warps along the axis.
    std::string widx = e.reg(RC::B32);
    e.ins("mov.u32 " + widx + ", 0");
    for (size_t j = 0; j < warpBits.size(); ++j) {
      std::string bit = e.reg(RC::B32), n = e.reg(RC::B32);
      e.ins("bfe.u32 " + bit + ", " + e.warp() + ", " +
            std::to_string(warpBits[j]) + ", 1");
      e.ins("bfi.b32 " + n + ", " + bit + ", " + widx + ", " +
            std::to_string(j) + ", 1");
      widx = n;
    }
    // The thread's part of the output's flat index: its coordinates along
    // the other dims (the same in operand and result).
    std::string thrOut;
    if (sliceTy) {
      thrOut = e.threadLinear(sliceTy, outStrides);
    } else {
      thrOut = e.reg(RC::B32);
      e.ins("mov.u32 " + thrOut + ", 0");
    }
    // Scratch: the partials, element-major (slot = element * K + warp, so
    // that the K partials of an element sit in K consecutive lanes in stage
    // B), their indices (arg), then the combined results and their indices.
    int64_t P = K * outElems;
    int64_t idxOff = P * ab, finalOff = P * (ab + (c.arg ? 4 : 0)),
            finalIdxOff = finalOff + outElems * ab;
    RC rc = c.accClass();
    std::string st = ab == 8 ? (rc == RC::F64 ? "f64" : "b64")
                             : (rc == RC::F32 ? "f32" : "b32");
    auto offsetOf = [&](const gpu::Basis &key) {
      int64_t off = 0;
      for (size_t d = 0; d < key.size(); ++d)
        off += key[d] * outStrides[d];
      return off;
    };
    // A. Each warp writes its partial of every element its threads hold.
    std::string slot = e.reg(RC::B32), addr = e.reg(RC::B32);
    e.ins("mad.lo.s32 " + slot + ", " + thrOut + ", " + std::to_string(K) + ", " + widx);
    e.ins("mad.lo.s32 " + addr + ", " + slot + ", " + std::to_string(ab) + ", " + base);
    std::string idxAddr = e.reg(RC::B32);
    if (c.arg)
      e.ins("mad.lo.s32 " + idxAddr + ", " + slot + ", 4, " + base);
    e.sharedWriteBegins(op);
    for (auto &key : keyOrder) {
      int64_t off = offsetOf(key) * K;
      if (sliceTy &&
          e.threadLinearAt(sliceTy, outStrides, offsetOf(key)).first != thrOut)
        e.internalError(op, "reduces across warps a layout whose registers "
                            "and threads share coordinate bits (XOR bases); "
                            "not supported yet");
      e.ins("st.shared." + st + " [" + addr + "+" + std::to_string(off * ab) + "], " +
            groups[key].v);
      if (c.arg)
        e.ins("st.shared.b32 [" + idxAddr + "+" + std::to_string(idxOff + off * 4) + "], " +
              groups[key].idx);
    }
    // Inside this op (its partials written -> read by other warps); the
    // barrier before its first write, if any, is a gpu.barrier op.
    e.barrier();
    if (K <= kReadAllMaxWarps) {
      // B'. Few warps: every thread reads the K partials of each element
      //     it holds (contiguous: vector loads) and combines them in warp
      //     order. One barrier fewer than the butterfly; K more registers.
      std::string rd = e.reg(RC::B32), ri = e.reg(RC::B32);
      e.ins("mad.lo.s32 " + rd + ", " + thrOut + ", " + std::to_string(K * ab) + ", " + base);
      if (c.arg)
        e.ins("mad.lo.s32 " + ri + ", " + thrOut + ", " + std::to_string(K * 4) + ", " + base);
      int64_t vec = ab == 4 ? std::min<int64_t>(K, 4) : 1;
      for (auto &key : keyOrder) {
        int64_t off = offsetOf(key) * K;
        std::vector<Acc> parts(K);
        for (int64_t k = 0; k < K; k += vec) {
          std::string dst;
          for (int64_t j = 0; j < vec; ++j) {
            parts[k + j].v = e.reg(rc);
            dst += (j ? ", " : "") + parts[k + j].v;
          }
          std::string at = "[" + rd + "+" + std::to_string((off + k) * ab) + "]";
          if (vec == 1)
            e.ins("ld.shared." + st + " " + dst + ", " + at);
          else
            e.ins("ld.shared.v" + std::to_string(vec) + "." + st + " {" + dst + "}, " + at);
        }
        if (c.arg)
          for (int64_t k = 0; k < K; ++k) {
            parts[k].idx = e.reg(RC::B32);
            e.ins("ld.shared.b32 " + parts[k].idx + ", [" + ri + "+" +
                  std::to_string(idxOff + (off + k) * 4) + "]");
          }
        Acc acc = parts[0];
        for (int64_t k = 1; k < K; ++k)
          acc = c.combine(acc, parts[k]);
        groups[key] = acc;
      }
    } else if (butterflyInEveryWarp(ll, axis, K, keyOrder.size(),
                                    (P + e.numWarps * 32 - 1) /
                                        (e.numWarps * 32))) {
      // B''. Lane l of every warp reads partial l % K of each element it
      //     holds and K-1 butterfly steps combine them, so every lane ends
      //     with the result: no second barrier and shared round trip. The
      //     bits are B's (the same partial in the same place of the same
      //     butterfly; each step is commutative).
      std::string lk = e.reg(RC::B32), sl = e.reg(RC::B32), rd = e.reg(RC::B32),
                  ri = e.reg(RC::B32);
      e.ins("and.b32 " + lk + ", " + e.lane() + ", " + std::to_string(K - 1));
      e.ins("mad.lo.s32 " + sl + ", " + thrOut + ", " + std::to_string(K) + ", " + lk);
      e.ins("mad.lo.s32 " + rd + ", " + sl + ", " + std::to_string(ab) + ", " + base);
      if (c.arg)
        e.ins("mad.lo.s32 " + ri + ", " + sl + ", 4, " + base);
      for (auto &key : keyOrder) {
        int64_t off = offsetOf(key) * K;
        Acc p{e.reg(rc), ""};
        e.ins("ld.shared." + st + " " + p.v + ", [" + rd + "+" + std::to_string(off * ab) + "]");
        if (c.arg) {
          p.idx = e.reg(RC::B32);
          e.ins("ld.shared.b32 " + p.idx + ", [" + ri + "+" +
                std::to_string(idxOff + off * 4) + "]");
        }
        for (int64_t m = 1; m < K; m <<= 1) {
          Acc o{c.shuffle(p.v, rc, (int)m), ""};
          if (c.arg)
            o.idx = c.shuffle(p.idx, RC::B32, (int)m);
          p = c.combine(p, o);
        }
        groups[key] = p;
      }
    } else {
      // B. Thread t combines the K partials of element t / K with K-1
      //    butterfly steps among K consecutive lanes (K <= 32 divides 32);
      //    lane t % K == 0 writes the result. Rounds of all threads while
      //    partials remain; a round's invalid lanes come in whole groups.
      int64_t T = int64_t(e.numWarps) * 32;
      int log2K = 0;
      while ((int64_t(1) << log2K) < K)
        ++log2K;
      for (int64_t r0 = 0; r0 < P; r0 += T) {
        std::string t = e.reg(RC::B32);
        e.ins("add.s32 " + t + ", " + e.tid() + ", " + std::to_string(r0));
        std::string valid;
        if (r0 + T > P) {
          valid = e.reg(RC::Pred);
          e.ins("setp.lt.u32 " + valid + ", " + t + ", " + std::to_string(P));
        }
        std::string pfx = valid.empty() ? "" : "@" + valid + " ";
        std::string a = e.reg(RC::B32);
        e.ins("mad.lo.s32 " + a + ", " + t + ", " + std::to_string(ab) + ", " + base);
        Acc p{e.reg(rc), ""};
        if (!valid.empty())
          e.ins("mov." + std::string(ab == 8 ? "b64 " : "b32 ") + p.v + ", 0");
        e.ins(pfx + "ld.shared." + st + " " + p.v + ", [" + a + "]");
        std::string ai;
        if (c.arg) {
          ai = e.reg(RC::B32);
          e.ins("mad.lo.s32 " + ai + ", " + t + ", 4, " + base);
          p.idx = e.reg(RC::B32);
          if (!valid.empty())
            e.ins("mov.b32 " + p.idx + ", 0");
          e.ins(pfx + "ld.shared.b32 " + p.idx + ", [" + ai + "+" + std::to_string(idxOff) + "]");
        }
        for (int64_t m = 1; m < K; m <<= 1) {
          Acc o{c.shuffle(p.v, rc, (int)m), ""};
          if (c.arg)
            o.idx = c.shuffle(p.idx, RC::B32, (int)m);
          p = c.combine(p, o);
        }
        std::string low = e.reg(RC::B32), first = e.reg(RC::Pred), elem = e.reg(RC::B32),
                    fa = e.reg(RC::B32);
        e.ins("and.b32 " + low + ", " + t + ", " + std::to_string(K - 1));
        e.ins("setp.eq.u32 " + first + ", " + low + ", 0");
        if (!valid.empty())
          e.ins("and.pred " + first + ", " + first + ", " + valid);
        e.ins("shr.u32 " + elem + ", " + t + ", " + std::to_string(log2K));
        e.ins("mad.lo.s32 " + fa + ", " + elem + ", " + std::to_string(ab) + ", " + base);
        e.ins("@" + first + " st.shared." + st + " [" + fa + "+" + std::to_string(finalOff) +
              "], " + p.v);
        if (c.arg) {
          std::string fi = e.reg(RC::B32);
          e.ins("mad.lo.s32 " + fi + ", " + elem + ", 4, " + base);
          e.ins("@" + first + " st.shared.b32 [" + fi + "+" + std::to_string(finalIdxOff) +
                "], " + p.idx);
        }
      }
      e.barrier(); // inside this op: its results written -> read
      // C. Every thread reads the results of the elements it holds.
      std::string rd = e.reg(RC::B32), ri = e.reg(RC::B32);
      e.ins("mad.lo.s32 " + rd + ", " + thrOut + ", " + std::to_string(ab) + ", " + base);
      if (c.arg)
        e.ins("mad.lo.s32 " + ri + ", " + thrOut + ", 4, " + base);
      for (auto &key : keyOrder) {
        int64_t off = offsetOf(key);
        Acc acc{e.reg(rc), ""};
        e.ins("ld.shared." + st + " " + acc.v + ", [" + rd + "+" +
              std::to_string(finalOff + off * ab) + "]");
        if (c.arg) {
          acc.idx = e.reg(RC::B32);
          e.ins("ld.shared.b32 " + acc.idx + ", [" + ri + "+" +
                std::to_string(finalIdxOff + off * 4) + "]");
        }
        groups[key] = acc;
      }
    }
  }

  // 4. The result registers, in the result's layout.
  DType outT = outTy->scalarType()->dtype();
  auto finish = [&](const Acc &a) {
    return c.arg ? a.idx : c.narrow(a.v, outT);
  };
  if (!sliceTy) {
    if (groups.size() != 1)
      e.internalError(op, "reduces to a scalar from several groups");
    e.bind(op.result(0), {finish(groups.begin()->second)});
    return true;
  }
  const gpu::LinearLayout &lo = gpu::linearOf(sliceTy);
  // The result must be held by the same threads, as the slice layout is.
  for (size_t i = 0; i < lo.lane().size(); ++i) {
    gpu::Basis b = ll.lane()[i];
    b.erase(b.begin() + axis);
    if (b != lo.lane()[i])
      e.internalError(
          op, "has a result layout that is not the slice of its operand's");
  }
  for (size_t i = 0; i < lo.warp().size(); ++i) {
    gpu::Basis b = ll.warp()[i];
    b.erase(b.begin() + axis);
    if (b != lo.warp()[i])
      e.internalError(
          op, "has a result layout that is not the slice of its operand's");
  }
  Regs out;
  std::map<gpu::Basis, std::string> done;
  for (int r = 0; r < lo.numRegs(); ++r) {
    gpu::Basis key = lo.regCoord(r);
    auto it = groups.find(key);
    if (it == groups.end())
      e.internalError(op, "lost an output element");
    if (!done.count(key))
      done[key] = finish(it->second);
    out.push_back(done[key]);
  }
  e.bind(op.result(0), std::move(out));
  return true;
}

} // namespace tritium::nvidia
