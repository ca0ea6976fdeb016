// LinearLayout: GF(2) linear maps between named dims (see linear_layout.h).
//
// Internally a layout is a bit matrix: one column per input bit (in dims in
// order, low bits first), each column the packed output coordinate (out dim 0
// in the low bits). Compose, invert and invertAndCompose are Gaussian
// elimination over those columns; sizes stay small (at most 64 bits a side).
#include "tritium/gpu/linear_layout.h"

#include "tritium/ir/ir.h"

#include <algorithm>
#include <sstream>

namespace tritium::gpu {

namespace {

int bitsOf(int64_t size) { return log2Exact(size); }

std::string basesStr(const std::vector<Basis> &bases) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < bases.size(); ++i) {
    os << (i ? ", " : "") << "[";
    for (size_t d = 0; d < bases[i].size(); ++d)
      os << (d ? ", " : "") << bases[i][d];
    os << "]";
  }
  os << "]";
  return os.str();
}

// A basis of the column space of a bit matrix, kept reduced: each pivot row
// has its highest set bit `lead` that no other pivot contains, and `combo`
// records which input bits XOR to it.
struct Eliminator {
  struct Pivot {
    uint64_t vec, combo;
    int lead;
  };
  std::vector<Pivot> pivots;

  static int highBit(uint64_t v) { return 63 - __builtin_clzll(v); }

  // Reduces `v` by the pivots; `combo` accumulates the input bits used.
  void reduce(uint64_t &v, uint64_t &combo) const {
    for (const Pivot &p : pivots)
      if ((v >> p.lead) & 1) {
        v ^= p.vec;
        combo ^= p.combo;
      }
  }
  // Adds column `v` made of input bits `combo`; false when it is dependent.
  bool add(uint64_t v, uint64_t combo) {
    reduce(v, combo);
    if (!v)
      return false;
    int lead = highBit(v);
    for (Pivot &p : pivots)
      if ((p.vec >> lead) & 1) {
        p.vec ^= v;
        p.combo ^= combo;
      }
    pivots.push_back({v, combo, lead});
    return true;
  }
};

} // namespace

std::string tensorDimName(int d) { return "dim" + std::to_string(d); }

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = (int)shape.size() - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

// ---------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------

LinearLayout::LinearLayout(std::vector<InDim> ins, std::vector<OutDim> outs)
    : ins_(std::move(ins)), outs_(std::move(outs)) {
  int outBits = 0;
  for (size_t i = 0; i < outs_.size(); ++i) {
    if (bitsOf(outs_[i].size) < 0)
      throw InternalError("LinearLayout: out dim '" + outs_[i].name +
                          "' has size " + std::to_string(outs_[i].size) +
                          ", not a power of two");
    outBits += bitsOf(outs_[i].size);
    for (size_t j = 0; j < i; ++j)
      if (outs_[j].name == outs_[i].name)
        throw InternalError("LinearLayout: out dim '" + outs_[i].name +
                            "' appears twice");
  }
  int inBits = 0;
  for (size_t i = 0; i < ins_.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (ins_[j].name == ins_[i].name)
        throw InternalError("LinearLayout: in dim '" + ins_[i].name +
                            "' appears twice");
    for (const Basis &b : ins_[i].bases) {
      if (b.size() != outs_.size())
        throw InternalError("LinearLayout: a basis of '" + ins_[i].name +
                            "' has " + std::to_string(b.size()) +
                            " coordinates for " +
                            std::to_string(outs_.size()) + " out dims");
      for (size_t d = 0; d < b.size(); ++d)
        if (b[d] < 0 || b[d] >= outs_[d].size)
          throw InternalError("LinearLayout: a basis of '" + ins_[i].name +
                              "' leaves out dim '" + outs_[d].name + "'");
    }
    inBits += (int)ins_[i].bases.size();
  }
  if (outBits > 64 || inBits > 64)
    throw InternalError("LinearLayout: more than 64 bits on a side");
}

static std::vector<LinearLayout::OutDim>
tensorOuts(const std::vector<int64_t> &shape) {
  std::vector<LinearLayout::OutDim> outs;
  for (size_t d = 0; d < shape.size(); ++d)
    outs.push_back({tensorDimName((int)d), shape[d]});
  return outs;
}

LinearLayout LinearLayout::distributed(const std::vector<int64_t> &shape,
                                       std::vector<Basis> reg,
                                       std::vector<Basis> lane,
                                       std::vector<Basis> warp,
                                       std::vector<Basis> block) {
  return LinearLayout({{kRegister, std::move(reg)},
                       {kLane, std::move(lane)},
                       {kWarp, std::move(warp)},
                       {kBlock, std::move(block)}},
                      tensorOuts(shape));
}

LinearLayout LinearLayout::shared(const std::vector<int64_t> &shape,
                                  std::vector<Basis> offset,
                                  std::vector<Basis> block) {
  return LinearLayout({{kOffset, std::move(offset)}, {kBlock, std::move(block)}},
                      tensorOuts(shape));
}

LinearLayout LinearLayout::identity1D(int64_t size, const std::string &in,
                                      const std::string &out) {
  std::vector<Basis> b;
  for (int i = 0; i < bitsOf(size); ++i)
    b.push_back({int64_t(1) << i});
  return LinearLayout({{in, b}}, {{out, size}});
}

// ---------------------------------------------------------------------------
// Dims
// ---------------------------------------------------------------------------

int LinearLayout::inIndex(const std::string &name) const {
  for (size_t i = 0; i < ins_.size(); ++i)
    if (ins_[i].name == name)
      return (int)i;
  return -1;
}

int LinearLayout::outIndex(const std::string &name) const {
  for (size_t i = 0; i < outs_.size(); ++i)
    if (outs_[i].name == name)
      return (int)i;
  return -1;
}

int LinearLayout::inBits(const std::string &name) const {
  int i = inIndex(name);
  return i < 0 ? 0 : (int)ins_[i].bases.size();
}

const std::vector<Basis> &LinearLayout::bases(const std::string &name) const {
  static const std::vector<Basis> none;
  int i = inIndex(name);
  return i < 0 ? none : ins_[i].bases;
}

std::vector<int64_t> LinearLayout::outSizes() const {
  std::vector<int64_t> s;
  for (const OutDim &o : outs_)
    s.push_back(o.size);
  return s;
}

int LinearLayout::totalInBits() const {
  int n = 0;
  for (const InDim &d : ins_)
    n += (int)d.bases.size();
  return n;
}

int LinearLayout::totalOutBits() const {
  int n = 0;
  for (const OutDim &o : outs_)
    n += bitsOf(o.size);
  return n;
}

// ---------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------

Basis LinearLayout::apply(const std::vector<int64_t> &index) const {
  if (index.size() != ins_.size())
    throw InternalError("LinearLayout::apply: " + std::to_string(index.size()) +
                        " indices for " + std::to_string(ins_.size()) +
                        " in dims");
  Basis c(outs_.size(), 0);
  for (size_t i = 0; i < ins_.size(); ++i)
    for (size_t b = 0; b < ins_[i].bases.size(); ++b)
      if ((index[i] >> b) & 1)
        for (size_t d = 0; d < c.size(); ++d)
          c[d] ^= ins_[i].bases[b][d];
  return c;
}

Basis LinearLayout::apply(
    const std::vector<std::pair<std::string, int64_t>> &index) const {
  std::vector<int64_t> v(ins_.size(), 0);
  for (const auto &[name, value] : index) {
    int i = inIndex(name);
    if (i >= 0)
      v[i] = value;
    else if (value != 0)
      throw InternalError("LinearLayout::apply: no in dim '" + name + "'");
  }
  return apply(v);
}

Basis LinearLayout::apply(int r, int laneId, int warpId) const {
  return apply({{kRegister, r}, {kLane, laneId}, {kWarp, warpId}});
}

uint64_t LinearLayout::pack(const Basis &c) const {
  uint64_t v = 0;
  int shift = 0;
  for (size_t d = 0; d < outs_.size(); ++d) {
    v |= uint64_t(c[d]) << shift;
    shift += bitsOf(outs_[d].size);
  }
  return v;
}

Basis LinearLayout::unpack(uint64_t bits) const {
  Basis c(outs_.size(), 0);
  int shift = 0;
  for (size_t d = 0; d < outs_.size(); ++d) {
    int n = bitsOf(outs_[d].size);
    c[d] = int64_t((bits >> shift) & ((uint64_t(1) << n) - 1));
    shift += n;
  }
  return c;
}

std::vector<uint64_t> LinearLayout::columns() const {
  std::vector<uint64_t> cols;
  for (const InDim &d : ins_)
    for (const Basis &b : d.bases)
      cols.push_back(pack(b));
  return cols;
}

// ---------------------------------------------------------------------------
// Algebra
// ---------------------------------------------------------------------------

LinearLayout LinearLayout::compose(const LinearLayout &outer) const {
  // Where each of our out dims lands among outer's in dims.
  std::vector<int> at(outs_.size());
  for (size_t d = 0; d < outs_.size(); ++d) {
    at[d] = outer.inIndex(outs_[d].name);
    if (at[d] < 0 || outs_[d].size > outer.inSize(outs_[d].name))
      throw InternalError("LinearLayout::compose: out dim '" + outs_[d].name +
                          "' (size " + std::to_string(outs_[d].size) +
                          ") is not an in dim of the outer layout");
  }
  std::vector<InDim> ins;
  for (const InDim &in : ins_) {
    InDim r{in.name, {}};
    for (const Basis &b : in.bases) {
      Basis c(outer.outs_.size(), 0);
      for (size_t d = 0; d < b.size(); ++d)
        for (int k = 0; (b[d] >> k) != 0; ++k)
          if ((b[d] >> k) & 1)
            for (size_t e = 0; e < c.size(); ++e)
              c[e] ^= outer.ins_[at[d]].bases[k][e];
      r.bases.push_back(std::move(c));
    }
    ins.push_back(std::move(r));
  }
  return LinearLayout(std::move(ins), outer.outs_);
}

LinearLayout LinearLayout::invertAndCompose(const LinearLayout &outer) const {
  if (outs_ != outer.outs_)
    throw InternalError("LinearLayout::invertAndCompose: the layouts have "
                        "different out dims (" +
                        str() + " vs " + outer.str() + ")");
  Eliminator el;
  std::vector<uint64_t> cols = outer.columns();
  for (size_t i = 0; i < cols.size(); ++i)
    el.add(cols[i], uint64_t(1) << i);

  // The in-bit combination of outer, split back into its in dims.
  std::vector<OutDim> outs;
  for (const InDim &d : outer.ins_)
    outs.push_back({d.name, int64_t(1) << d.bases.size()});
  auto split = [&](uint64_t combo) {
    Basis c;
    int shift = 0;
    for (const InDim &d : outer.ins_) {
      int n = (int)d.bases.size();
      c.push_back(int64_t((combo >> shift) & ((uint64_t(1) << n) - 1)));
      shift += n;
    }
    return c;
  };

  std::vector<InDim> ins;
  for (const InDim &in : ins_) {
    InDim r{in.name, {}};
    for (const Basis &b : in.bases) {
      uint64_t v = pack(b), combo = 0;
      el.reduce(v, combo);
      if (v)
        throw InternalError("LinearLayout::invertAndCompose: an element of " +
                            str() + " is not held by " + outer.str());
      r.bases.push_back(split(combo));
    }
    ins.push_back(std::move(r));
  }
  return LinearLayout(std::move(ins), std::move(outs));
}

LinearLayout LinearLayout::invert() const {
  if (totalInBits() != totalOutBits() || !isInjective())
    throw InternalError("LinearLayout::invert: " + str() +
                        " is not bijective");
  std::vector<InDim> ins;
  for (size_t d = 0; d < outs_.size(); ++d) {
    InDim r{outs_[d].name, {}};
    for (int k = 0; k < bitsOf(outs_[d].size); ++k) {
      Basis b(outs_.size(), 0);
      b[d] = int64_t(1) << k;
      r.bases.push_back(b);
    }
    ins.push_back(std::move(r));
  }
  return LinearLayout(std::move(ins), outs_).invertAndCompose(*this);
}

int LinearLayout::rankGF2() const {
  Eliminator el;
  int r = 0;
  for (uint64_t c : columns())
    r += el.add(c, 0);
  return r;
}

uint64_t LinearLayout::zeroBasesMask(const std::string &name) const {
  uint64_t m = 0;
  const std::vector<Basis> &bs = bases(name);
  for (size_t i = 0; i < bs.size(); ++i)
    if (std::all_of(bs[i].begin(), bs[i].end(),
                    [](int64_t x) { return x == 0; }))
      m |= uint64_t(1) << i;
  return m;
}

int64_t LinearLayout::numConsecutive(const std::string &in) const {
  const std::vector<Basis> &bs = bases(in);
  int k = 0;
  while (k < (int)bs.size() && flatIndex(bs[k]) == (int64_t(1) << k))
    ++k;
  return int64_t(1) << k;
}

bool LinearLayout::disjointBits(const std::vector<std::string> &a,
                                const std::vector<std::string> &b) const {
  auto used = [&](const std::vector<std::string> &names) {
    uint64_t m = 0;
    for (const std::string &n : names)
      for (const Basis &bs : bases(n))
        m |= pack(bs);
    return m;
  };
  return (used(a) & used(b)) == 0;
}

bool LinearLayout::isDisjoint() const {
  uint64_t used = 0;
  for (uint64_t c : columns()) {
    if (!c)
      continue;
    if ((c & (c - 1)) != 0 || (used & c))
      return false;
    used |= c;
  }
  return true;
}

LinearLayout
LinearLayout::transposeOuts(const std::vector<std::string> &order) const {
  if (order.size() != outs_.size())
    throw InternalError("LinearLayout::transposeOuts: wrong number of dims");
  std::vector<int> from;
  std::vector<OutDim> outs;
  for (const std::string &n : order) {
    int i = outIndex(n);
    if (i < 0 || std::find(from.begin(), from.end(), i) != from.end())
      throw InternalError("LinearLayout::transposeOuts: bad dim '" + n + "'");
    from.push_back(i);
    outs.push_back(outs_[i]);
  }
  std::vector<InDim> ins = ins_;
  for (InDim &d : ins)
    for (Basis &b : d.bases) {
      Basis nb;
      for (int i : from)
        nb.push_back(b[i]);
      b = std::move(nb);
    }
  return LinearLayout(std::move(ins), std::move(outs));
}

LinearLayout LinearLayout::reshapeOuts(const std::vector<OutDim> &outs) const {
  int64_t a = 1, b = 1;
  for (const OutDim &o : outs_)
    a *= o.size;
  for (const OutDim &o : outs)
    b *= o.size;
  if (a != b)
    throw InternalError("LinearLayout::reshapeOuts: sizes differ");
  LinearLayout target({}, outs);
  std::vector<int64_t> strides = rowMajorStrides(target.outSizes());
  std::vector<InDim> ins = ins_;
  for (InDim &d : ins)
    for (Basis &bs : d.bases) {
      int64_t flat = flatIndex(bs);
      Basis nb(outs.size());
      for (size_t k = 0; k < outs.size(); ++k)
        nb[k] = (flat / strides[k]) % outs[k].size;
      bs = std::move(nb);
    }
  return LinearLayout(std::move(ins), outs);
}

LinearLayout
LinearLayout::sublayout(const std::vector<std::string> &names) const {
  std::vector<InDim> ins;
  for (const std::string &n : names) {
    int i = inIndex(n);
    if (i >= 0)
      ins.push_back(ins_[i]);
  }
  return LinearLayout(std::move(ins), outs_);
}

int64_t LinearLayout::flatIndex(const Basis &c) const {
  auto strides = rowMajorStrides(outSizes());
  int64_t f = 0;
  for (size_t d = 0; d < c.size(); ++d)
    f += c[d] * strides[d];
  return f;
}

std::string LinearLayout::str() const {
  auto names = [&] {
    std::vector<std::string> n;
    for (const InDim &d : ins_)
      n.push_back(d.name);
    return n;
  }();
  bool tensorOuts = true;
  for (size_t d = 0; d < outs_.size(); ++d)
    tensorOuts &= outs_[d].name == tensorDimName((int)d);
  if (tensorOuts &&
      names == std::vector<std::string>{kRegister, kLane, kWarp, kBlock})
    return "#ttg.linear<{register = " + basesStr(reg()) +
           ", lane = " + basesStr(lane()) + ", warp = " + basesStr(warp()) +
           ", block = " + basesStr(block()) + "}>";
  if (tensorOuts && names == std::vector<std::string>{kOffset, kBlock})
    return "#ttg.shared_linear<{offset = " + basesStr(offset()) +
           ", block = " + basesStr(block()) + "}>";
  std::ostringstream os;
  os << "#tritium.ll<{";
  for (size_t i = 0; i < ins_.size(); ++i)
    os << (i ? ", " : "") << ins_[i].name << " = " << basesStr(ins_[i].bases);
  os << " -> ";
  for (size_t d = 0; d < outs_.size(); ++d)
    os << (d ? ", " : "") << outs_[d].name << " = " << outs_[d].size;
  os << "}>";
  return os.str();
}

} // namespace tritium::gpu
