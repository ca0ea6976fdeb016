// Whole-tensor ops of the CPU executor: constants and ranges, program ids,
// shape ops (splat, broadcast, expand_dims, reshape, trans, convert_layout:
// an alias of its operand, since values are row-major whatever their layout),
// reductions; tt.dot's arithmetic is in dot.cpp.
//
// Reductions: sum and prod of floats accumulate in double and round to the
// element type once at the end (at least as accurate as the GPU's tree of
// element-type adds); integer sums wrap at the result's width. max/min ignore
// NaN unless every element is NaN; argmax/argmin give the first index of the
// extreme (NaN ignored; index 0 when all are NaN).
//
#include "exec_internal.h"

#include <algorithm>
#include <cmath>

namespace tritium::exec {
namespace {

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// z[idx] = x[sum(idx[d] * strides[d])] over every index of `shape`
/// (row-major z); the innermost dim runs in a tight loop.
void stridedGather(const Slot *x, Slot *z, const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &strides) {
  int rank = int(shape.size());
  if (rank == 0) {
    z[0] = x[0];
    return;
  }
  int64_t inner = shape[rank - 1], is = strides[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t base = 0;
  while (true) {
    if (is == 0)
      std::fill(z, z + inner, x[base]);
    else if (is == 1)
      std::copy(x + base, x + base + inner, z);
    else
      for (int64_t i = 0; i < inner; ++i)
        z[i] = x[base + i * is];
    z += inner;
    int d = rank - 2;
    for (; d >= 0; --d) {
      base += strides[d];
      if (++idx[d] < shape[d])
        break;
      base -= strides[d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0)
      return;
  }
}

RValue broadcast(const RValue &a, const Type *rt) {
  RValue r = RValue::alloc(rt);
  if (a.size() == 1) {
    std::fill(r.mutableData(), r.mutableData() + r.size(), a[0]);
    return r;
  }
  const std::vector<int64_t> &as = a.type()->shape();
  std::vector<int64_t> st = rowMajorStrides(as);
  for (size_t d = 0; d < as.size(); ++d)
    if (as[d] == 1)
      st[d] = 0;
  stridedGather(a.data(), r.mutableData(), rt->shape(), st);
  return r;
}

RValue transpose(const RValue &a, const Type *rt,
                 const std::vector<int64_t> &order) {
  RValue r = RValue::alloc(rt);
  std::vector<int64_t> in = rowMajorStrides(a.type()->shape()), st;
  for (int64_t d : order)
    st.push_back(in[d]);
  stridedGather(a.data(), r.mutableData(), rt->shape(), st);
  return r;
}

/// Reduces x viewed as [outer, len, inner] over the middle dim into z
/// ([outer, inner]) with accumulator `R` (start/step/finish).
template <class R>
void reduceLoop(const Slot *x, Slot *z, int64_t outer, int64_t len,
                int64_t inner, R red) {
  using Acc = decltype(red.start(x[0]));
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const Slot *row = x + o * len;
      Acc acc = red.start(row[0]);
      for (int64_t k = 1; k < len; ++k)
        red.step(acc, row[k], k);
      z[o] = red.finish(acc);
    }
    return;
  }
  std::vector<Acc> acc(inner);
  for (int64_t o = 0; o < outer; ++o) {
    const Slot *blk = x + o * len * inner;
    for (int64_t i = 0; i < inner; ++i)
      acc[i] = red.start(blk[i]);
    for (int64_t k = 1; k < len; ++k)
      for (int64_t i = 0; i < inner; ++i)
        red.step(acc[i], blk[k * inner + i], k);
    for (int64_t i = 0; i < inner; ++i)
      z[o * inner + i] = red.finish(acc[i]);
  }
}

struct FloatSum {
  DType out;
  double start(Slot s) const { return s.f; }
  void step(double &a, Slot s, int64_t) const { a += s.f; }
  Slot finish(double a) const { return Slot{.f = roundF(a, out)}; }
};
struct FloatProd {
  DType out;
  double start(Slot s) const { return s.f; }
  void step(double &a, Slot s, int64_t) const { a *= s.f; }
  Slot finish(double a) const { return Slot{.f = roundF(a, out)}; }
};
struct IntSum {
  IntFmt out;
  uint64_t start(Slot s) const { return s.u; }
  void step(uint64_t &a, Slot s, int64_t) const { a += s.u; }
  Slot finish(uint64_t a) const { return Slot{.i = out.norm(int64_t(a))}; }
};
struct IntProd {
  IntFmt out;
  uint64_t start(Slot s) const { return s.u; }
  void step(uint64_t &a, Slot s, int64_t) const { a *= s.u; }
  Slot finish(uint64_t a) const { return Slot{.i = out.norm(int64_t(a))}; }
};
struct IntXor {
  IntFmt out;
  uint64_t start(Slot s) const { return s.u; }
  void step(uint64_t &a, Slot s, int64_t) const { a ^= s.u; }
  Slot finish(uint64_t a) const { return Slot{.i = out.norm(int64_t(a))}; }
};

/// "x is better than the best so far" for max (Max=true) or min.
template <bool Max> bool betterF(double x, double best) {
  if (std::isnan(x))
    return false;
  return std::isnan(best) || (Max ? x > best : x < best);
}
template <bool Max> bool betterI(Slot x, Slot best, bool sgn) {
  if (sgn)
    return Max ? x.i > best.i : x.i < best.i;
  return Max ? x.u > best.u : x.u < best.u;
}

template <bool Max> struct FloatExt {
  Slot start(Slot s) const { return s; }
  void step(Slot &a, Slot s, int64_t) const {
    if (betterF<Max>(s.f, a.f))
      a = s;
  }
  Slot finish(Slot a) const { return a; }
};
template <bool Max> struct IntExt {
  bool sgn;
  Slot start(Slot s) const { return s; }
  void step(Slot &a, Slot s, int64_t) const {
    if (betterI<Max>(s, a, sgn))
      a = s;
  }
  Slot finish(Slot a) const { return a; }
};

struct ArgAcc {
  Slot best;
  int64_t index;
};
template <bool Max> struct FloatArg {
  IntFmt out;
  ArgAcc start(Slot s) const { return {s, 0}; }
  void step(ArgAcc &a, Slot s, int64_t k) const {
    if (betterF<Max>(s.f, a.best.f))
      a = {s, k};
  }
  Slot finish(ArgAcc a) const { return Slot{.i = out.norm(a.index)}; }
};
template <bool Max> struct IntArg {
  IntFmt out;
  bool sgn;
  ArgAcc start(Slot s) const { return {s, 0}; }
  void step(ArgAcc &a, Slot s, int64_t k) const {
    if (betterI<Max>(s, a.best, sgn))
      a = {s, k};
  }
  Slot finish(ArgAcc a) const { return Slot{.i = out.norm(a.index)}; }
};

RValue reduce(const OpPlan &op, const RValue &a) {
  const Type *rt = op.op->result(0)->type();
  RValue r = RValue::alloc(rt);
  const std::vector<int64_t> &shape = a.type()->shape();
  int64_t outer = 1, inner = 1, len = shape[op.axis];
  for (int64_t d = 0; d < op.axis; ++d)
    outer *= shape[d];
  for (size_t d = op.axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  DType in = elemDType(a.type()), out = elemDType(rt);
  bool fl = isFloat(in), sgn = isSigned(in);
  IntFmt of = intFmt(out);
  const Slot *x = a.data();
  Slot *z = r.mutableData();
  switch (ReduceKind(op.kind)) {
  case ReduceKind::Sum:
    fl ? reduceLoop(x, z, outer, len, inner, FloatSum{out})
       : reduceLoop(x, z, outer, len, inner, IntSum{of});
    break;
  case ReduceKind::Prod:
    fl ? reduceLoop(x, z, outer, len, inner, FloatProd{out})
       : reduceLoop(x, z, outer, len, inner, IntProd{of});
    break;
  case ReduceKind::XorSum:
    reduceLoop(x, z, outer, len, inner, IntXor{of});
    break;
  case ReduceKind::Max:
    fl ? reduceLoop(x, z, outer, len, inner, FloatExt<true>{})
       : reduceLoop(x, z, outer, len, inner, IntExt<true>{sgn});
    break;
  case ReduceKind::Min:
    fl ? reduceLoop(x, z, outer, len, inner, FloatExt<false>{})
       : reduceLoop(x, z, outer, len, inner, IntExt<false>{sgn});
    break;
  case ReduceKind::ArgMax:
    fl ? reduceLoop(x, z, outer, len, inner, FloatArg<true>{of})
       : reduceLoop(x, z, outer, len, inner, IntArg<true>{of, sgn});
    break;
  case ReduceKind::ArgMin:
    fl ? reduceLoop(x, z, outer, len, inner, FloatArg<false>{of})
       : reduceLoop(x, z, outer, len, inner, IntArg<false>{of, sgn});
    break;
  }
  // Max/min of floats keep the element; a wider result dtype re-rounds
  // nothing, a narrower one must.
  if (fl && isFloat(out) && out != in)
    for (int64_t i = 0; i < r.size(); ++i)
      z[i].f = roundF(z[i].f, out);
  return r;
}

} // namespace

void evalTensorOp(const OpPlan &op, Frame &f, const ProgramCtx &ctx) {
  const Type *rt = op.op->result(0)->type();
  switch (op.code) {
  case OpCode::Constant:
  case OpCode::MakeRange:
    f[op.out[0]] = op.constant;
    return;
  case OpCode::GetProgramId:
  case OpCode::GetNumPrograms: {
    int64_t v = op.code == OpCode::GetProgramId ? ctx.pid[op.axis]
                                                : ctx.run->grid[op.axis];
    f[op.out[0]] = RValue::scalar(rt, Slot{.i = intFmt(elemDType(rt)).norm(v)});
    return;
  }
  case OpCode::Splat:
  case OpCode::Broadcast:
    f[op.out[0]] = broadcast(f[op.in[0]], rt);
    return;
  case OpCode::ExpandDims:
  case OpCode::Reshape:
  case OpCode::ConvertLayout:
    f[op.out[0]] = f[op.in[0]].withType(rt);
    return;
  case OpCode::Trans:
    f[op.out[0]] = transpose(f[op.in[0]], rt, op.order);
    return;
  case OpCode::Reduce:
    f[op.out[0]] = reduce(op, f[op.in[0]]);
    return;
  case OpCode::Dot:
    f[op.out[0]] = dot(op, f[op.in[0]], f[op.in[1]], f[op.in[2]]);
    return;
  default:
    return;
  }
}

} // namespace tritium::exec
