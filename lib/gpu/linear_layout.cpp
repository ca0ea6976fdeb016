#include "tritium/gpu/linear_layout.h"

#include <sstream>

namespace tritium::gpu {

namespace {

void xorInto(Basis &acc, const Basis &b) {
  for (size_t d = 0; d < acc.size(); ++d)
    acc[d] ^= b[d];
}

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

} // namespace

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = (int)shape.size() - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

Basis LinearLayout::regCoord(int r) const { return apply(r, 0, 0); }

Basis LinearLayout::apply(int r, int laneId, int warpId) const {
  Basis c(shape.size(), 0);
  for (size_t i = 0; i < reg.size(); ++i)
    if ((r >> i) & 1)
      xorInto(c, reg[i]);
  for (size_t i = 0; i < lane.size(); ++i)
    if ((laneId >> i) & 1)
      xorInto(c, lane[i]);
  for (size_t i = 0; i < warp.size(); ++i)
    if ((warpId >> i) & 1)
      xorInto(c, warp[i]);
  return c;
}

bool LinearLayout::isDisjoint() const {
  std::vector<int64_t> used(shape.size(), 0);
  for (const auto *set : {&reg, &lane, &warp})
    for (const Basis &b : *set) {
      int nonzero = 0;
      for (size_t d = 0; d < b.size(); ++d) {
        if (b[d] == 0)
          continue;
        ++nonzero;
        if (log2Exact(b[d]) < 0 || (used[d] & b[d]))
          return false;
        used[d] |= b[d];
      }
      if (nonzero > 1)
        return false;
    }
  return true;
}

int64_t LinearLayout::flatIndex(const Basis &c) const {
  auto strides = rowMajorStrides(shape);
  int64_t f = 0;
  for (size_t d = 0; d < c.size(); ++d)
    f += c[d] * strides[d];
  return f;
}

std::string LinearLayout::str() const {
  return "#ttg.linear<{register = " + basesStr(reg) +
         ", lane = " + basesStr(lane) + ", warp = " + basesStr(warp) +
         ", block = []}>";
}

} // namespace tritium::gpu
