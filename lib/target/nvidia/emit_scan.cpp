// tt.scan and tt.reduce_combine: the combine region, emitted inline at every
// combine step, over the elements of each line along the axis.
//
// The position of an element along the axis has one bit per basis of the
// operand's layout that moves along it (a register, lane or warp bit, in any
// order: the layout says which). The scan works bit by bit, lowest first,
// keeping for every element
//   S = the combine of its aligned block of 2^k positions up to itself
//       (the inclusive scan within the block), and
//   T = the combine of the whole block;
// at bit k each element meets the element whose position differs in bit k
// (its partner, holding the other half of the doubled block) and
//   the half later in scan order:   S = T' . S,  T = T' . T
//   the half earlier:               S = S,       T = T . T'
// (. the combine, left operand first: the function need not commute).
//  1. The lowest bits held by registers: a sequential scan within the thread.
//     Its run of elements (a group) then shares T, and the updates of S are
//     gathered per group into a prefix P (S = P . S, once per element, at
//     the end), so that the later bits cost per group, not per element.
//  2. A register bit: the partner is another register of the thread.
//  3. A lane bit: shfl.sync.bfly brings the partner's T; the lane's bit
//     says which half it is (a select).
//  4. A warp bit: every thread writes the T of its groups to shared memory
//     (at the row-major index of the group's first element), bar.sync, and
//     reads the partner's; two buffers alternate so that no stage waits for
//     the previous reads.
// A reverse scan flips every position bit. A reduction needs only T; its
// result (the slice layout) takes T from any element of the line.
// Combines are memoized on their operand registers, so registers holding
// one value (a reduction after its register stages, broadcast copies) are
// combined once.
#include "emitter.h"

#include "tritium/gpu/shared_memory.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace tritium::nvidia {

namespace {

using Vals = std::vector<std::string>; // one register per operand

class CombineEmitter {
public:
  CombineEmitter(Emitter &e, Operation &op)
      : e_(e), body_(op.region(0).front()), n_(op.numOperands()) {
    for (Value *v : op.operands())
      elems_.push_back(v->type()->element());
    // One commutative op on the two arguments (tl.cumsum's addf, a max):
    // combine(a, b) and combine(b, a) are one value, emitted once.
    Operation *ret = body_.terminator();
    std::vector<Operation *> ops;
    for (auto &o : body_.ops())
      if (o.get() != ret)
        ops.push_back(o.get());
    if (n_ == 1 && ops.size() == 1 && ops[0]->hasTrait(COMM) &&
        ops[0]->numOperands() == 2 && ops[0]->numResults() == 1 &&
        ret->numOperands() == 1 && ret->operand(0) == ops[0]->result(0)) {
      Value *x = ops[0]->operand(0), *y = ops[0]->operand(1);
      Value *a0 = body_.argument(0), *a1 = body_.argument(1);
      commutative_ = (x == a0 && y == a1) || (x == a1 && y == a0);
    }
  }

  /// One step: the region's ops on (a, b), inline.
  Vals combine(const Vals &a0, const Vals &b0) {
    bool swap = commutative_ && b0 < a0;
    const Vals &a = swap ? b0 : a0, &b = swap ? a0 : b0;
    Vals key = a;
    key.insert(key.end(), b.begin(), b.end());
    if (auto it = memo_.find(key); it != memo_.end())
      return it->second;
    for (unsigned i = 0; i < n_; ++i) {
      e_.bind(body_.argument(i), {a[i]});
      e_.bind(body_.argument(n_ + i), {b[i]});
    }
    Operation *ret = body_.terminator();
    for (auto &o : body_.ops())
      if (o.get() != ret)
        e_.emitOp(*o);
    Vals out;
    for (unsigned i = 0; i < n_; ++i)
      out.push_back(e_.regs(ret->operand(i))[0]);
    memo_[key] = out;
    return out;
  }

  /// p ? x : y, per operand.
  Vals select(const std::string &p, const Vals &x, const Vals &y) {
    Vals out;
    for (unsigned i = 0; i < n_; ++i) {
      if (x[i] == y[i]) {
        out.push_back(x[i]);
        continue;
      }
      auto key = std::make_tuple(p, x[i], y[i]);
      if (auto it = selected_.find(key); it != selected_.end()) {
        out.push_back(it->second);
        continue;
      }
      RC rc = regClass(elems_[i]);
      std::string d = e_.reg(rc);
      selected_[key] = d;
      if (rc == RC::Pred) {
        std::string t = e_.reg(RC::Pred), f = e_.reg(RC::Pred),
                    np = e_.reg(RC::Pred);
        e_.ins("and.pred " + t + ", " + p + ", " + x[i]);
        e_.ins("not.pred " + np + ", " + p);
        e_.ins("and.pred " + f + ", " + np + ", " + y[i]);
        e_.ins("or.pred " + d + ", " + t + ", " + f);
      } else {
        const char *ty = rc == RC::F32   ? "f32"
                         : rc == RC::F64 ? "f64"
                                         : nullptr;
        e_.ins(std::string("selp.") + (ty ? ty : bitType(rc)) + " " + d +
               ", " + x[i] + ", " + y[i] + ", " + p);
      }
      out.push_back(d);
    }
    return out;
  }

  /// The value of lane ^ mask (shfl.sync.bfly), per operand.
  Vals shuffle(const Vals &v, int mask) {
    Vals out;
    for (unsigned i = 0; i < n_; ++i) {
      auto key = std::make_pair(v[i], mask);
      if (auto it = shuffled_.find(key); it != shuffled_.end()) {
        out.push_back(it->second);
        continue;
      }
      RC rc = regClass(elems_[i]);
      std::string m = std::to_string(mask);
      auto shfl32 = [&](const std::string &x) {
        std::string d = e_.reg(RC::B32);
        e_.ins("shfl.sync.bfly.b32 " + d + ", " + x + ", " + m + ", 31, -1");
        return d;
      };
      std::string d;
      if (rc == RC::B64 || rc == RC::F64) {
        std::string lo = e_.reg(RC::B32), hi = e_.reg(RC::B32);
        e_.ins("mov.b64 {" + lo + ", " + hi + "}, " + v[i]);
        std::string lo2 = shfl32(lo), hi2 = shfl32(hi);
        d = e_.reg(rc);
        e_.ins("mov.b64 " + d + ", {" + lo2 + ", " + hi2 + "}");
      } else {
        std::string w = toWord(v[i], rc);
        d = fromWord(shfl32(w), rc);
      }
      shuffled_[key] = d;
      out.push_back(d);
    }
    return out;
  }

  /// A 32-bit register holding a value of class rc (i1 as 0/1, 16-bit
  /// values zero-extended), and back.
  std::string toWord(const std::string &v, RC rc) {
    if (rc == RC::B32 || rc == RC::F32)
      return v;
    std::string w = e_.reg(RC::B32);
    if (rc == RC::Pred)
      e_.ins("selp.u32 " + w + ", 1, 0, " + v);
    else
      e_.ins("cvt.u32.u16 " + w + ", " + v);
    return w;
  }
  std::string fromWord(const std::string &w, RC rc) {
    if (rc == RC::B32)
      return w;
    std::string d = e_.reg(rc);
    if (rc == RC::F32)
      e_.ins("mov.b32 " + d + ", " + w);
    else if (rc == RC::Pred)
      e_.ins("setp.ne.u32 " + d + ", " + w + ", 0");
    else
      e_.ins("cvt.u16.u32 " + d + ", " + w);
    return d;
  }

  /// Bytes of operand i's slot in the scratch (shared_memory.cpp agrees).
  int64_t slotBytes(unsigned i) const {
    return gpu::storageBytes(elems_[i]) == 8 ? 8 : 4;
  }
  void store(const std::string &addr, int64_t off, const std::string &v,
             unsigned i) {
    RC rc = regClass(elems_[i]);
    std::string at = " [" + addr + "+" + std::to_string(off) + "], ";
    if (rc == RC::B64 || rc == RC::F64)
      e_.ins(std::string("st.shared.") + (rc == RC::F64 ? "f64" : "b64") + at +
             v);
    else
      e_.ins(std::string("st.shared.") + (rc == RC::F32 ? "f32" : "b32") + at +
             toWord(v, rc));
  }
  std::string load(const std::string &addr, int64_t off, unsigned i) {
    RC rc = regClass(elems_[i]);
    std::string at = ", [" + addr + "+" + std::to_string(off) + "]";
    if (rc == RC::B64 || rc == RC::F64 || rc == RC::F32) {
      std::string d = e_.reg(rc);
      e_.ins(std::string("ld.shared.") +
             (rc == RC::F64 ? "f64" : rc == RC::F32 ? "f32" : "b64") + " " + d +
             at);
      return d;
    }
    std::string w = e_.reg(RC::B32);
    e_.ins("ld.shared.b32 " + w + at);
    return fromWord(w, rc);
  }

  /// A predicate: bit `bit` of `id` is set (clear when `flip`).
  std::string bitPred(const std::string &id, int bit, bool flip) {
    std::string t = e_.reg(RC::B32), p = e_.reg(RC::Pred);
    e_.ins("and.b32 " + t + ", " + id + ", " + std::to_string(1 << bit));
    e_.ins(std::string(flip ? "setp.eq.u32 " : "setp.ne.u32 ") + p + ", " + t +
           ", 0");
    return p;
  }

private:
  Emitter &e_;
  Block &body_;
  unsigned n_;
  bool commutative_ = false;
  std::vector<const Type *> elems_;
  std::map<Vals, Vals> memo_;
  std::map<std::pair<std::string, int>, std::string> shuffled_;
  std::map<std::tuple<std::string, std::string, std::string>, std::string>
      selected_;
};

/// Where bit k of the axis coordinate comes from.
struct AxisBit {
  enum Kind { Reg, Lane, Warp } kind;
  int index; // the bit of the register index, lane id or warp id
};

} // namespace

bool emitCombineOp(Emitter &e, Operation &op) {
  bool scan = op.code() == OpCode::Scan;
  if (!scan && op.code() != OpCode::ReduceCombine)
    return false;
  unsigned n = op.numOperands();
  const Type *inTy = op.operand(0)->type();
  int axis = (int)op.intAttr("axis");
  bool reverse = scan && op.boolAttr("reverse");
  const gpu::LinearLayout &ll = gpu::linearOf(inTy);
  for (unsigned i = 1; i < n; ++i)
    if (!(gpu::linearOf(op.operand(i)->type()) == ll))
      e.internalError(op, "has operands in different layouts");
  if (!ll.isDisjoint())
    e.internalError(op, "has a layout whose bases share coordinate bits (XOR "
                        "bases); not supported yet");

  // Which hardware bit gives each bit of the position along the axis.
  int64_t len = inTy->shape()[axis];
  std::vector<AxisBit> bits;
  for (int64_t k = 0; (int64_t(1) << k) < len; ++k) {
    std::optional<AxisBit> src;
    auto find = [&](const std::vector<gpu::Basis> &bases, AxisBit::Kind kind) {
      for (size_t j = 0; j < bases.size(); ++j)
        if (bases[j][axis] == (int64_t(1) << k))
          src = AxisBit{kind, (int)j};
    };
    find(ll.reg(), AxisBit::Reg);
    find(ll.lane(), AxisBit::Lane);
    find(ll.warp(), AxisBit::Warp);
    if (!src)
      e.internalError(op, "has a layout that holds no element at position " +
                              std::to_string(int64_t(1) << k) +
                              " along the axis");
    bits.push_back(*src);
  }

  CombineEmitter c(e, op);
  int R = ll.numRegs();
  std::vector<gpu::Basis> coord(R);
  std::vector<int> rep(R); // the first register holding the same element
  for (int r = 0; r < R; ++r) {
    coord[r] = ll.regCoord(r);
    rep[r] = r;
    for (int q = 0; q < r; ++q)
      if (coord[q] == coord[r]) {
        rep[r] = q;
        break;
      }
  }
  std::vector<Vals> S(R);
  for (int r = 0; r < R; ++r)
    for (unsigned i = 0; i < n; ++i)
      S[r].push_back(e.regs(op.operand(i))[r]);

  // 1. The lowest axis bits that registers hold: sequentially per group (a
  // group: the registers of one thread holding a run of 2^m positions of a
  // line). From here on a group's elements share T, and one prefix P.
  size_t m = 0;
  while (m < bits.size() && bits[m].kind == AxisBit::Reg)
    ++m;
  int64_t lowMask = (int64_t(1) << m) - 1;
  std::map<gpu::Basis, std::vector<int>> groups;
  for (int r = 0; r < R; ++r)
    if (rep[r] == r) {
      gpu::Basis key = coord[r];
      key[axis] &= ~lowMask;
      groups[key].push_back(r);
    }
  std::vector<std::vector<int>> G;
  std::vector<int> groupOf(R, -1);
  std::vector<int> lead; // the member at the lowest position: its flat index
                         // names the group in shared memory
  std::vector<Vals> T;   // per group
  for (auto &[key, members] : groups) {
    std::sort(members.begin(), members.end(), [&](int a, int b) {
      return reverse ? coord[a][axis] > coord[b][axis]
                     : coord[a][axis] < coord[b][axis];
    });
    Vals acc = S[members[0]];
    for (size_t j = 1; j < members.size(); ++j) {
      acc = c.combine(acc, S[members[j]]);
      if (scan)
        S[members[j]] = acc;
    }
    int g = (int)G.size();
    for (int r : members)
      groupOf[r] = g;
    lead.push_back(*std::min_element(
        members.begin(), members.end(),
        [&](int a, int b) { return coord[a][axis] < coord[b][axis]; }));
    G.push_back(members);
    T.push_back(acc);
  }
  for (int r = 0; r < R; ++r)
    groupOf[r] = groupOf[rep[r]];

  // 2.-4. The other bits, lowest first. A scan keeps per group, instead of
  // updating every element at every bit, the prefix P: the combine of the
  // positions before the group's run within the current aligned block, valid
  // once some bit put the group in a later half (`has`: never, always, or a
  // predicate of the lane and warp bits). Each element takes P . S once, at
  // the end, as Triton's scan adds a thread's exclusive prefix last.
  struct Prefix {
    enum { No, Yes, Pred } has = No;
    std::string pred;
    Vals P;
  };
  std::vector<Prefix> pre(G.size());
  auto orPred = [&](const std::string &a, const std::string &b) {
    std::string d = e.reg(RC::Pred);
    e.ins("or.pred " + d + ", " + a + ", " + b);
    return d;
  };
  // The prefix of a group after a bit that makes it later (`later` empty)
  // or later where the predicate `later` holds, the other half's total being
  // `other`.
  auto extend = [&](const Prefix &cur, const Vals &other,
                    const std::string &later) {
    Prefix out;
    Vals joined = other;
    if (cur.has == Prefix::Yes)
      joined = c.combine(other, cur.P);
    else if (cur.has == Prefix::Pred)
      joined = c.select(cur.pred, c.combine(other, cur.P), other);
    if (later.empty()) {
      out.has = Prefix::Yes;
      out.P = joined;
    } else if (cur.has == Prefix::No) {
      out.has = Prefix::Pred; // P is read only where `later` held
      out.pred = later;
      out.P = joined;
    } else {
      out.has = cur.has == Prefix::Yes ? Prefix::Yes : Prefix::Pred;
      out.pred = cur.has == Prefix::Yes ? "" : orPred(cur.pred, later);
      out.P = c.select(later, joined, cur.P);
    }
    return out;
  };
  std::string base;
  int64_t perElem = 0;
  for (unsigned i = 0; i < n; ++i)
    perElem += c.slotBytes(i);
  int64_t bufBytes = inTy->numElements() * perElem;
  int warpStage = 0;
  std::vector<int64_t> strides = gpu::rowMajorStrides(inTy->shape());
  for (size_t k = m; k < bits.size(); ++k) {
    const AxisBit &b = bits[k];
    int64_t bitVal = int64_t(1) << k;
    std::vector<Vals> T2 = T;
    std::vector<Prefix> pre2 = pre;
    if (b.kind == AxisBit::Reg) {
      for (size_t g = 0; g < G.size(); ++g) {
        int r = lead[g];
        int h = groupOf[r ^ (1 << b.index)];
        bool later = ((coord[r][axis] & bitVal) != 0) != reverse;
        T2[g] = later ? c.combine(T[h], T[g]) : c.combine(T[g], T[h]);
        if (scan && later)
          pre2[g] = extend(pre[g], T[h], "");
      }
    } else {
      std::vector<Vals> other(G.size());
      std::string later;
      if (b.kind == AxisBit::Lane) {
        later = c.bitPred(e.lane(), b.index, reverse);
        for (size_t g = 0; g < G.size(); ++g)
          other[g] = c.shuffle(T[g], 1 << b.index);
      } else {
        // Through shared memory: a group's T at its lead element's
        // row-major index; the partner group's lead is at that index with
        // the bit flipped.
        if (base.empty()) {
          base = e.scratch(op);
          e.sharedWriteBegins(op);
        }
        later = c.bitPred(e.warp(), b.index, reverse);
        int64_t buf = (warpStage++ % 2) * bufBytes;
        std::vector<std::string> flat(G.size());
        for (size_t g = 0; g < G.size(); ++g) {
          int r = lead[g];
          int64_t regPart = 0;
          for (size_t d = 0; d < strides.size(); ++d)
            regPart += coord[r][d] * strides[d];
          auto [thr, imm] = e.threadLinearAt(inTy, strides, regPart);
          flat[g] = e.reg(RC::B32);
          e.ins("add.s32 " + flat[g] + ", " + thr + ", " + std::to_string(imm));
          int64_t off = buf;
          for (unsigned i = 0; i < n; ++i) {
            std::string addr = e.reg(RC::B32);
            e.ins("mad.lo.s32 " + addr + ", " + flat[g] + ", " +
                  std::to_string(c.slotBytes(i)) + ", " + base);
            c.store(addr, off, T[g][i], i);
            off += inTy->numElements() * c.slotBytes(i);
          }
        }
        e.barrier(); // inside this op: the totals written -> read
        int64_t delta = bitVal * strides[axis];
        for (size_t g = 0; g < G.size(); ++g) {
          std::string pf = e.reg(RC::B32);
          e.ins("xor.b32 " + pf + ", " + flat[g] + ", " + std::to_string(delta));
          int64_t off = buf;
          for (unsigned i = 0; i < n; ++i) {
            std::string addr = e.reg(RC::B32);
            e.ins("mad.lo.s32 " + addr + ", " + pf + ", " +
                  std::to_string(c.slotBytes(i)) + ", " + base);
            other[g].push_back(c.load(addr, off, i));
            off += inTy->numElements() * c.slotBytes(i);
          }
        }
      }
      for (size_t g = 0; g < G.size(); ++g) {
        T2[g] = c.select(later, c.combine(other[g], T[g]),
                         c.combine(T[g], other[g]));
        if (scan)
          pre2[g] = extend(pre[g], other[g], later);
      }
    }
    T = std::move(T2);
    pre = std::move(pre2);
  }

  if (scan) {
    std::vector<Vals> out(R);
    for (int r = 0; r < R; ++r) {
      if (rep[r] != r)
        continue;
      const Prefix &p = pre[groupOf[r]];
      if (p.has == Prefix::No)
        out[r] = S[r];
      else if (p.has == Prefix::Yes)
        out[r] = c.combine(p.P, S[r]);
      else
        out[r] = c.select(p.pred, c.combine(p.P, S[r]), S[r]);
    }
    for (unsigned i = 0; i < n; ++i) {
      Regs res;
      for (int r = 0; r < R; ++r)
        res.push_back(out[rep[r]][i]);
      e.bind(op.result(i), std::move(res));
    }
    return true;
  }

  // The reduction's result: T of any element of the line.
  const Type *outTy = op.result(0)->type();
  if (!outTy->isTensor()) {
    for (unsigned i = 0; i < n; ++i)
      e.bind(op.result(i), {T[0][i]});
    return true;
  }
  const gpu::LinearLayout &lo = gpu::linearOf(outTy);
  auto sliced = [&](gpu::Basis b) {
    b.erase(b.begin() + axis);
    return b;
  };
  for (size_t j = 0; j < lo.lane().size(); ++j)
    if (sliced(ll.lane()[j]) != lo.lane()[j])
      e.internalError(op, "has a result layout that is not the slice of its "
                          "operand's");
  for (size_t j = 0; j < lo.warp().size(); ++j)
    if (sliced(ll.warp()[j]) != lo.warp()[j])
      e.internalError(op, "has a result layout that is not the slice of its "
                          "operand's");
  std::map<gpu::Basis, int> byKey;
  for (int r = 0; r < R; ++r)
    byKey.emplace(sliced(coord[r]), groupOf[r]);
  std::vector<Regs> outs(n);
  for (int ro = 0; ro < lo.numRegs(); ++ro) {
    auto it = byKey.find(lo.regCoord(ro));
    if (it == byKey.end())
      e.internalError(op, "lost an output element");
    for (unsigned i = 0; i < n; ++i)
      outs[i].push_back(T[it->second][i]);
  }
  for (unsigned i = 0; i < n; ++i)
    e.bind(op.result(i), std::move(outs[i]));
  return true;
}

} // namespace tritium::nvidia
