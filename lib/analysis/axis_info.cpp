// Axis info (contiguity, divisibility, constancy) of integer and pointer
// values, after Triton's AxisInfo analysis.
//
// 1. Function arguments are seeded from `tt.divisibility` (pointers without
//    it are assumed aligned to their element size).
// 2. Ops are visited in program order; each rule below maps operand infos
//    to the result's. Anything without a rule is `unknown` (all ones), which
//    is always sound.
// 3. Loop-carried values of scf.for / scf.while start from their inits and
//    are re-derived from the yielded values until nothing changes (the
//    infos only shrink, by gcd, so this ends quickly; after a few rounds we
//    give up and call them unknown).
#include "tritium/analysis/axis_info.h"

#include <algorithm>
#include <numeric>

namespace tritium {

namespace {

constexpr int64_t kMaxDivisor = int64_t(1) << 30;

int64_t gcd(int64_t a, int64_t b) { return std::gcd(a, b); }

std::vector<int64_t> shapeOf(const Value *v) {
  const Type *t = v->type();
  return t->isTensor() ? t->shape() : std::vector<int64_t>{};
}

int64_t elemBytes(const Type *ptrLike) {
  const Type *p = ptrLike->scalarType();
  if (!p->isPointer())
    return 1;
  const Type *e = p->pointee();
  if (!e->isScalar())
    return 8;
  return std::max(1, bitWidth(e->dtype()) / 8);
}

bool isLtOrGe(const std::string &p) {
  return p == "slt" || p == "ult" || p == "sge" || p == "uge";
}
bool isLeOrGt(const std::string &p) {
  return p == "sle" || p == "ule" || p == "sgt" || p == "ugt";
}

/// Joins two infos of the same value (from two control-flow paths).
AxisInfo join(const AxisInfo &a, const AxisInfo &b) {
  AxisInfo r = a;
  for (size_t d = 0; d < r.contiguity.size() && d < b.contiguity.size(); ++d) {
    r.contiguity[d] = gcd(a.contiguity[d], b.contiguity[d]);
    r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
  }
  for (size_t d = 0; d < r.divisibility.size() && d < b.divisibility.size();
       ++d)
    r.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d]);
  if (a.constant != b.constant)
    r.constant.reset();
  return r;
}

/// The divisibility every element has along any dim: within a contiguous run
/// only the first element is known to be aligned.
int64_t elementDivisibility(const AxisInfo &a) {
  if (a.rank() == 0)
    return a.scalarDivisibility();
  int64_t g = kMaxDivisor;
  for (int d = 0; d < a.rank(); ++d)
    g = gcd(g, a.contiguity[d] > 1 ? 1 : a.divisibility[d]);
  return g;
}

} // namespace

int64_t highestPowOf2Divisor(int64_t v) {
  if (v == 0)
    return kMaxDivisor;
  uint64_t u = (uint64_t)v;
  uint64_t p = u & (~u + 1);
  return p > (uint64_t)kMaxDivisor ? kMaxDivisor : (int64_t)p;
}

AxisInfo AxisInfo::unknown(const std::vector<int64_t> &shape) {
  AxisInfo i;
  i.contiguity.assign(shape.size(), 1);
  i.constancy.assign(shape.size(), 1);
  i.divisibility.assign(std::max<size_t>(shape.size(), 1), 1);
  return i;
}

OpSupport axisInfoSupport(OpCode c) {
  switch (c) {
  // Ops with a rule of their own in visitOp.
  case OpCode::Constant:
  case OpCode::MakeRange:
  case OpCode::Splat:
  case OpCode::Broadcast:
  case OpCode::ExpandDims:
  case OpCode::Trans:
  case OpCode::ConvertLayout:
  case OpCode::Reshape:
  case OpCode::ExtSI:
  case OpCode::ExtUI:
  case OpCode::TruncI:
  case OpCode::Bitcast:
  case OpCode::IntToPtr:
  case OpCode::PtrToInt:
  case OpCode::AddI:
  case OpCode::SubI:
  case OpCode::AddPtr:
  case OpCode::MulI:
  case OpCode::ShLI:
  case OpCode::ShRUI:
  case OpCode::ShRSI:
  case OpCode::RemSI:
  case OpCode::RemUI:
  case OpCode::CmpI:
  case OpCode::Select:
  case OpCode::For:
  case OpCode::If:
  case OpCode::While:
  case OpCode::InlineAsm:
    return OpSupport::Handled;
  // Ops left to the general rule on purpose: elementwise ops keep the
  // constancy their operands share, everything else is unknown. Float
  // values, loaded or reduced values, program ids and the rest of the
  // integer arithmetic say nothing the memory accesses could use.
  case OpCode::DivSI:
  case OpCode::DivUI:
  case OpCode::AndI:
  case OpCode::OrI:
  case OpCode::XOrI:
  case OpCode::MaxSI:
  case OpCode::MinSI:
  case OpCode::MaxUI:
  case OpCode::MinUI:
  case OpCode::MulHiUI:
  case OpCode::CmpF:
  case OpCode::NegF:
  case OpCode::Fma:
  case OpCode::SIToFP:
  case OpCode::UIToFP:
  case OpCode::FPToSI:
  case OpCode::FPToUI:
  case OpCode::ExtF:
  case OpCode::TruncF:
  case OpCode::GetProgramId:
  case OpCode::GetNumPrograms:
  case OpCode::Load:
  case OpCode::DescriptorLoad:
  case OpCode::DescriptorStore:
  case OpCode::Store:
  case OpCode::AtomicRMW:
  case OpCode::AtomicCAS:
  case OpCode::Reduce:
  case OpCode::ReduceCombine:
  case OpCode::Scan:
  case OpCode::CombineReturn:
  case OpCode::Dot:
  case OpCode::Call:
  case OpCode::Return:
  case OpCode::Condition:
  case OpCode::Yield:
  case OpCode::Print:
  case OpCode::Assert:
  case OpCode::MemDescIndex: // a memdesc: nothing to say
  case OpCode::MemDescTrans:
    return OpSupport::Handled;
  default:
    // Float binary ops and one-operand math: the general rule, by family.
    // Shared-memory ops too: what a local_load returns, or a memdesc or
    // token, says nothing the global accesses could use.
    if (opInfo(c).traits & (FBIN | MATH1 | SHARED))
      return OpSupport::Handled;
    return OpSupport::Missing;
  }
}

AxisInfoAnalysis::AxisInfoAnalysis(Function &f) {
  Block &entry = f.entry();
  for (unsigned i = 0; i < entry.numArguments(); ++i) {
    Value *a = entry.argument(i);
    AxisInfo info = AxisInfo::unknown(shapeOf(a));
    int64_t div = a->type()->isPointerLike() ? elemBytes(a->type()) : 1;
    if (i < f.argAttrs().size()) {
      auto it = f.argAttrs()[i].find("tt.divisibility");
      if (it != f.argAttrs()[i].end() &&
          std::holds_alternative<int64_t>(it->second))
        div = std::max<int64_t>(div, std::get<int64_t>(it->second));
    }
    std::fill(info.divisibility.begin(), info.divisibility.end(), div);
    set(a, info);
  }
  visitBlock(entry);
}

AxisInfo AxisInfoAnalysis::get(Value *v) const {
  auto it = info_.find(v);
  if (it != info_.end())
    return it->second;
  return AxisInfo::unknown(shapeOf(v));
}

void AxisInfoAnalysis::visitBlock(Block &b) {
  for (auto &op : b.ops())
    visitOp(*op);
}

void AxisInfoAnalysis::visitOp(Operation &op) {
  auto in = [&](unsigned i) { return get(op.operand(i)); };
  auto resultShape = [&]() { return shapeOf(op.result(0)); };
  auto unknownResults = [&]() {
    for (Value *r : op.results())
      set(r, AxisInfo::unknown(shapeOf(r)));
  };

  switch (op.code()) {
  case OpCode::Constant: {
    AxisInfo info = AxisInfo::unknown(resultShape());
    const Attribute &v = op.attrs().at("value");
    std::optional<int64_t> c;
    if (auto *i = std::get_if<int64_t>(&v))
      c = *i;
    else if (auto *bv = std::get_if<bool>(&v))
      c = *bv ? 1 : 0;
    info.constancy = resultShape();
    if (c) {
      std::fill(info.divisibility.begin(), info.divisibility.end(),
                highestPowOf2Divisor(*c));
      info.constant = c;
    }
    set(op.result(0), info);
    return;
  }
  case OpCode::MakeRange: {
    AxisInfo info = AxisInfo::unknown(resultShape());
    int64_t start = op.intAttr("start"), end = op.intAttr("end");
    info.contiguity[0] = end - start;
    info.divisibility[0] = highestPowOf2Divisor(start);
    set(op.result(0), info);
    return;
  }
  case OpCode::Splat: {
    AxisInfo s = in(0);
    AxisInfo info = AxisInfo::unknown(resultShape());
    info.constancy = resultShape();
    std::fill(info.divisibility.begin(), info.divisibility.end(),
              s.scalarDivisibility());
    info.constant = s.constant;
    set(op.result(0), info);
    return;
  }
  case OpCode::Broadcast: {
    AxisInfo s = in(0);
    auto srcShape = shapeOf(op.operand(0)), dstShape = resultShape();
    AxisInfo info = s;
    for (size_t d = 0; d < dstShape.size(); ++d)
      if (srcShape[d] == 1 && dstShape[d] != 1) {
        info.contiguity[d] = 1;
        info.constancy[d] = dstShape[d];
      }
    set(op.result(0), info);
    return;
  }
  case OpCode::ExpandDims: {
    AxisInfo s = in(0);
    int axis = (int)op.intAttr("axis");
    AxisInfo info = s;
    info.contiguity.insert(info.contiguity.begin() + axis, 1);
    info.constancy.insert(info.constancy.begin() + axis, 1);
    info.divisibility.insert(info.divisibility.begin() + axis,
                             elementDivisibility(s));
    set(op.result(0), info);
    return;
  }
  case OpCode::Trans: {
    AxisInfo s = in(0);
    AxisInfo info = s;
    const auto &order = op.arrayAttr("order");
    for (size_t i = 0; i < order.size(); ++i) {
      info.contiguity[i] = s.contiguity[order[i]];
      info.divisibility[i] = s.divisibility[order[i]];
      info.constancy[i] = s.constancy[order[i]];
    }
    set(op.result(0), info);
    return;
  }
  case OpCode::InlineAsm:
    // The text may compute anything (a clock, a lane id): nothing is known,
    // not even that equal inputs give equal results.
    unknownResults();
    return;
  case OpCode::ConvertLayout:
    // Same elements at the same coordinates; only the threads holding them
    // change.
    set(op.result(0), in(0));
    return;
  case OpCode::Reshape:
    // A reshape to the same shape keeps every coordinate.
    if (shapeOf(op.operand(0)) == resultShape())
      set(op.result(0), in(0));
    else
      unknownResults();
    return;
  case OpCode::ExtSI:
  case OpCode::ExtUI:
  case OpCode::TruncI:
  case OpCode::Bitcast:
  case OpCode::IntToPtr:
  case OpCode::PtrToInt:
    set(op.result(0), in(0));
    return;
  case OpCode::AddI:
  case OpCode::SubI:
  case OpCode::AddPtr: {
    AxisInfo a = in(0), b = in(1);
    int64_t scale =
        op.code() == OpCode::AddPtr ? elemBytes(op.operand(0)->type()) : 1;
    AxisInfo info = AxisInfo::unknown(resultShape());
    for (int d = 0; d < info.rank(); ++d) {
      int64_t c = gcd(a.contiguity[d], b.constancy[d]);
      if (op.code() != OpCode::SubI)
        c = std::max(c, gcd(a.constancy[d], b.contiguity[d]));
      info.contiguity[d] = c;
      info.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
    }
    for (size_t d = 0; d < info.divisibility.size(); ++d)
      info.divisibility[d] = gcd(
          a.divisibility[d], std::min(kMaxDivisor, b.divisibility[d] * scale));
    if (a.constant && b.constant && op.code() != OpCode::AddPtr)
      info.constant = op.code() == OpCode::AddI ? *a.constant + *b.constant
                                                : *a.constant - *b.constant;
    set(op.result(0), info);
    return;
  }
  case OpCode::MulI: {
    AxisInfo a = in(0), b = in(1);
    AxisInfo info = AxisInfo::unknown(resultShape());
    for (int d = 0; d < info.rank(); ++d) {
      if (b.constant == 1)
        info.contiguity[d] = a.contiguity[d];
      else if (a.constant == 1)
        info.contiguity[d] = b.contiguity[d];
      info.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
    }
    for (size_t d = 0; d < info.divisibility.size(); ++d) {
      // Only the first element of [2^n, 2^n + 1, ...] is divisible by 2^n.
      bool aRun = d < a.contiguity.size() && a.contiguity[d] > 1;
      bool bRun = d < b.contiguity.size() && b.contiguity[d] > 1;
      int64_t da = aRun && b.constant != 1 ? 1 : a.divisibility[d];
      int64_t db = bRun && a.constant != 1 ? 1 : b.divisibility[d];
      info.divisibility[d] = std::min(kMaxDivisor, da * db);
    }
    if (a.constant && b.constant)
      info.constant = *a.constant * *b.constant;
    set(op.result(0), info);
    return;
  }
  case OpCode::ShLI:
  case OpCode::ShRUI:
  case OpCode::ShRSI: {
    AxisInfo a = in(0), b = in(1);
    AxisInfo info = AxisInfo::unknown(resultShape());
    for (int d = 0; d < info.rank(); ++d)
      info.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
    if (b.constant && *b.constant >= 0 && *b.constant < 31) {
      int64_t sh = *b.constant;
      int64_t ad = elementDivisibility(a);
      int64_t div = op.code() == OpCode::ShLI ? std::min(kMaxDivisor, ad << sh)
                                              : std::max<int64_t>(1, ad >> sh);
      std::fill(info.divisibility.begin(), info.divisibility.end(), div);
      if (sh == 0)
        info.contiguity = a.contiguity;
    }
    set(op.result(0), info);
    return;
  }
  case OpCode::RemSI:
  case OpCode::RemUI: {
    AxisInfo a = in(0), b = in(1);
    AxisInfo info = AxisInfo::unknown(resultShape());
    for (int d = 0; d < info.rank(); ++d)
      info.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
    if (b.constant && *b.constant > 0) {
      int64_t m = highestPowOf2Divisor(*b.constant);
      for (int d = 0; d < info.rank(); ++d)
        info.contiguity[d] = gcd(a.contiguity[d], m);
      for (size_t d = 0; d < info.divisibility.size(); ++d)
        info.divisibility[d] = gcd(a.divisibility[d], m);
    } else {
      // One divisor for the whole tensor (a splat of a scalar argument
      // specialised as divisible by 16, the tutorial's `% M`): a run of
      // contiguous values no longer than its divisibility starts at a
      // multiple of it, so no multiple of the divisor falls inside the run.
      bool uniform = true;
      auto shape = resultShape();
      for (int d = 0; d < info.rank(); ++d)
        uniform = uniform && b.constancy[d] >= shape[d];
      for (int d = 0; uniform && d < info.rank(); ++d) {
        info.contiguity[d] = gcd(a.contiguity[d], b.divisibility[d]);
        info.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d]);
      }
    }
    set(op.result(0), info);
    return;
  }
  case OpCode::CmpI: {
    AxisInfo a = in(0), b = in(1);
    AxisInfo info = AxisInfo::unknown(resultShape());
    const std::string &pred = op.strAttr("predicate");
    for (int d = 0; d < info.rank(); ++d) {
      int64_t c = gcd(a.constancy[d], b.constancy[d]);
      // x + i < n is the same for an aligned run of i when x and n are
      // both multiples of the run length (likewise >=, and n > x + i ...).
      if (isLtOrGe(pred) && a.contiguity[d] > 1 && b.constancy[d] > 1)
        c = std::max(c, gcd(gcd(a.contiguity[d], a.divisibility[d]),
                            gcd(b.divisibility[d], b.constancy[d])));
      if (isLeOrGt(pred) && b.contiguity[d] > 1 && a.constancy[d] > 1)
        c = std::max(c, gcd(gcd(b.contiguity[d], b.divisibility[d]),
                            gcd(a.divisibility[d], a.constancy[d])));
      info.constancy[d] = c;
    }
    set(op.result(0), info);
    return;
  }
  case OpCode::Select: {
    AxisInfo c = in(0), a = in(1), b = in(2);
    AxisInfo info = AxisInfo::unknown(resultShape());
    for (int d = 0; d < info.rank(); ++d) {
      info.constancy[d] =
          gcd(c.constancy[d], gcd(a.constancy[d], b.constancy[d]));
      info.contiguity[d] =
          gcd(c.constancy[d], gcd(a.contiguity[d], b.contiguity[d]));
    }
    for (size_t d = 0; d < info.divisibility.size(); ++d)
      info.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d]);
    if (a.constant && a.constant == b.constant)
      info.constant = a.constant;
    set(op.result(0), info);
    return;
  }
  case OpCode::For: {
    Block &body = op.region(0).front();
    AxisInfo lb = in(0), step = in(2);
    AxisInfo iv = AxisInfo::unknown({});
    iv.divisibility[0] =
        gcd(lb.scalarDivisibility(), step.scalarDivisibility());
    set(body.argument(0), iv);
    std::vector<AxisInfo> carried;
    for (unsigned i = 3; i < op.numOperands(); ++i)
      carried.push_back(in(i));
    for (int round = 0;; ++round) {
      for (size_t i = 0; i < carried.size(); ++i)
        set(body.argument(i + 1), carried[i]);
      visitBlock(body);
      Operation *y = body.terminator();
      bool changed = false;
      for (size_t i = 0; i < carried.size() && y && i < y->numOperands(); ++i) {
        AxisInfo j = join(carried[i], get(y->operand(i)));
        if (!(j == carried[i])) {
          carried[i] = j;
          changed = true;
        }
      }
      if (!changed)
        break;
      if (round == 4) {
        for (size_t i = 0; i < carried.size(); ++i)
          carried[i] = AxisInfo::unknown(shapeOf(body.argument(i + 1)));
        for (size_t i = 0; i < carried.size(); ++i)
          set(body.argument(i + 1), carried[i]);
        visitBlock(body);
        break;
      }
    }
    for (size_t i = 0; i < carried.size(); ++i)
      set(op.result(i), carried[i]);
    return;
  }
  case OpCode::If: {
    std::vector<AxisInfo> res;
    for (unsigned r = 0; r < op.numRegions(); ++r) {
      if (op.region(r).empty())
        continue;
      Block &b = op.region(r).front();
      visitBlock(b);
      Operation *y = b.terminator();
      for (unsigned i = 0; y && i < op.numResults() && i < y->numOperands();
           ++i) {
        AxisInfo v = get(y->operand(i));
        if (res.size() <= i)
          res.push_back(v);
        else
          res[i] = join(res[i], v);
      }
    }
    for (unsigned i = 0; i < op.numResults(); ++i)
      set(op.result(i),
          i < res.size() ? res[i] : AxisInfo::unknown(shapeOf(op.result(i))));
    return;
  }
  case OpCode::While: {
    Block &before = op.region(0).front();
    Block &after = op.region(1).front();
    std::vector<AxisInfo> carried;
    for (unsigned i = 0; i < op.numOperands(); ++i)
      carried.push_back(in(i));
    for (int round = 0;; ++round) {
      for (size_t i = 0; i < carried.size(); ++i)
        set(before.argument(i),
            round > 4 ? AxisInfo::unknown(shapeOf(before.argument(i)))
                      : carried[i]);
      visitBlock(before);
      Operation *cond = before.terminator();
      for (unsigned i = 0; i < after.numArguments(); ++i)
        set(after.argument(i),
            cond && i + 1 < cond->numOperands()
                ? get(cond->operand(i + 1))
                : AxisInfo::unknown(shapeOf(after.argument(i))));
      visitBlock(after);
      if (round > 4)
        break;
      Operation *y = after.terminator();
      bool changed = false;
      for (size_t i = 0; i < carried.size() && y && i < y->numOperands(); ++i) {
        AxisInfo j = join(carried[i], get(y->operand(i)));
        if (!(j == carried[i])) {
          carried[i] = j;
          changed = true;
        }
      }
      if (!changed)
        break;
    }
    for (unsigned i = 0; i < op.numResults(); ++i)
      set(op.result(i), get(after.argument(i)));
    return;
  }
  default:
    if (axisInfoSupport(op.code()) == OpSupport::Missing)
      throw InternalError(std::string("axis info: no rule for '") + op.name() +
                          "' (decide one in axisInfoSupport)");
    break;
  }

  // Everything else: elementwise ops keep the constancy their operands share.
  for (unsigned r = 0; r < op.numRegions(); ++r)
    for (auto &b : op.region(r).blocks())
      visitBlock(*b);
  if (op.hasTrait(ELEM) && op.numResults() == 1 &&
      op.result(0)->type()->isTensor()) {
    AxisInfo info = AxisInfo::unknown(resultShape());
    for (int d = 0; d < info.rank(); ++d) {
      int64_t c = op.result(0)->type()->shape()[d];
      for (Value *v : op.operands())
        c = gcd(c,
                get(v).constancy.size() > (size_t)d ? get(v).constancy[d] : 1);
      info.constancy[d] = c;
    }
    set(op.result(0), info);
    return;
  }
  unknownResults();
}

} // namespace tritium
