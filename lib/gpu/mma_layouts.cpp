// NVIDIA mma accumulator and dot-operand layouts: construction, text form
// and their linear maps (see mma_layouts.h for the fragments).
#include "tritium/gpu/mma_layouts.h"

#include "layout_text.h"

#include <algorithm>
#include <memory>
#include <sstream>

namespace tritium::gpu {

namespace {

std::string listStr(const std::vector<int64_t> &v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

/// A basis of a tensor of `rank` (2, or 3 with a leading batch dim) moving
/// `row` along its M (or K) dim and `col` along the last.
Basis at(size_t rank, int64_t row, int64_t col) {
  Basis b(rank, 0);
  b[rank - 2] = row;
  b[rank - 1] = col;
  return b;
}

/// Bases of `bits` bits stepping `step` << i along `dim` of `shape`; a step
/// at or beyond the tensor's extent is a zero basis (a copy), as in blocked
/// layouts.
void steps(std::vector<Basis> &out, int dim, int64_t step, int64_t count,
           const std::vector<int64_t> &shape) {
  for (int64_t v = step; v < step * count; v *= 2) {
    Basis b(shape.size(), 0);
    if (v < shape[dim])
      b[dim] = v;
    out.push_back(b);
  }
}

/// Registers that wrap the CTA tile `cover` over the tensor along `dim`.
void wraps(std::vector<Basis> &reg, int dim, int64_t cover,
           const std::vector<int64_t> &shape) {
  for (int64_t v = cover; v < shape[dim]; v *= 2) {
    Basis b(shape.size(), 0);
    b[dim] = v;
    reg.push_back(b);
  }
}

/// A tensor smaller than the instruction tile along a dim (the 1 x N of
/// `cols[None, :]` next to an accumulator, the M x 1 of `m[:, None]`) keeps
/// the tile's hardware dims; the bases that step past its extent hold copies
/// (zero), as in blocked layouts, so broadcasts onto the tile need no
/// conversion.
void checkShape(const GPULayout &l, const std::vector<int64_t> &shape) {
  if ((int)shape.size() != l.rank())
    throw InternalError("layout " + l.str() + " applied to a tensor of rank " +
                        std::to_string(shape.size()));
  for (int64_t s : shape)
    if (log2Exact(s) < 0)
      throw InternalError("layout " + l.str() +
                          " applied to a tensor dim of size " +
                          std::to_string(s) + " (not a power of two)");
}

void clampToShape(std::vector<Basis> &bases, const std::vector<int64_t> &shape) {
  for (Basis &b : bases)
    for (size_t d = 0; d < b.size(); ++d)
      if (b[d] >= shape[d])
        b[d] = 0;
}

bool pow2(int64_t v) { return log2Exact(v) >= 0; }

} // namespace

// ---------------------------------------------------------------------------
// The accumulator
// ---------------------------------------------------------------------------

const NvidiaMmaLayout *NvidiaMmaLayout::get(int versionMajor, int versionMinor,
                                            std::vector<int64_t> warpsPerCTA,
                                            std::vector<int64_t> instrShape) {
  std::unique_ptr<NvidiaMmaLayout> l(new NvidiaMmaLayout());
  l->versionMajor = versionMajor;
  l->versionMinor = versionMinor;
  l->warpsPerCTA = std::move(warpsPerCTA);
  l->instrShape = std::move(instrShape);
  const auto &w = l->warpsPerCTA, &s = l->instrShape;
  std::string why;
  bool batched = w.size() == 3;
  if ((w.size() != 2 && !batched) ||
      !std::all_of(w.begin(), w.end(), [](int64_t v) { return pow2(v); }))
    why = "warpsPerCTA must be two (or, batched, three) powers of two";
  else if (versionMinor != 0)
    why = "versionMinor must be 0";
  else if (versionMajor == 2) {
    if (s != (batched ? std::vector<int64_t>{1, 16, 8}
                      : std::vector<int64_t>{16, 8}))
      why = "mma.sync's instrShape is [16, 8] ([1, 16, 8] batched)";
  } else if (versionMajor == 3) {
    if (batched)
      why = "a batched (rank-3) dot has no wgmma layout";
    else if (s.size() != 3 || s[0] != 16 || !pow2(s[1]) || s[1] < 8 ||
             s[1] > 256 || (s[2] != 8 && s[2] != 16 && s[2] != 32))
      why = "wgmma's instrShape is [16, N, K] with N a power of two in "
            "8..256 and K 8, 16 or 32";
    else if (w[0] % 4)
      why = "a wgmma warpgroup spans 4 warps along M: warpsPerCTA[0] must "
            "be a multiple of 4";
  } else {
    why = "versionMajor must be 2 (mma.sync) or 3 (wgmma)";
  }
  if (!why.empty())
    throw InternalError("nvidia_mma layout " + l->str() + ": " + why);
  return static_cast<const NvidiaMmaLayout *>(internLayout(std::move(l)));
}

std::vector<int64_t> NvidiaMmaLayout::warpTile() const {
  return {16, isHopper() ? instrShape[1] : 8};
}

LinearLayout NvidiaMmaLayout::toLinear(const std::vector<int64_t> &shape) const {
  int64_t tileN = warpTile()[1];
  // One instruction: mma.sync computes 16 x 8 per warp, wgmma 64 x N per
  // warpgroup. A batched layout adds a leading batch dim: each instruction
  // stays within one batch element, warps and register repeats step over
  // the batch after N and M.
  checkShape(*this, shape);
  size_t r = shape.size(), mDim = r - 2, nDim = r - 1;
  int64_t wM = warpsPerCTA[r - 2], wN = warpsPerCTA[r - 1];
  // The 16x8 fragment: register bit 0 the column pair, lanes (column pairs
  // by threadID_in_group, rows by groupID), register bit 1 the lower 8 rows.
  std::vector<Basis> reg = {at(r, 0, 1), at(r, 8, 0)};
  std::vector<Basis> lane = {at(r, 0, 2), at(r, 0, 4), at(r, 1, 0),
                             at(r, 2, 0), at(r, 4, 0)};
  // wgmma: the 8-column fragments of the warp's 16 x N in more registers.
  for (int64_t v = 8; v < tileN; v *= 2)
    reg.push_back(at(r, 0, v));
  std::vector<Basis> warp;
  if (isHopper()) {
    steps(warp, mDim, 16, wM, shape);
    steps(warp, nDim, tileN, wN, shape);
  } else {
    steps(warp, nDim, tileN, wN, shape);
    steps(warp, mDim, 16, wM, shape);
    if (r == 3)
      steps(warp, 0, 1, warpsPerCTA[0], shape);
  }
  wraps(reg, nDim, tileN * wN, shape);
  wraps(reg, mDim, 16 * wM, shape);
  if (r == 3)
    wraps(reg, 0, warpsPerCTA[0], shape);
  clampToShape(reg, shape);
  clampToShape(lane, shape);
  return LinearLayout::distributed(shape, std::move(reg), std::move(lane),
                                   std::move(warp));
}

std::string NvidiaMmaLayout::str() const {
  return "#ttg.nvidia_mma<{versionMajor = " + std::to_string(versionMajor) +
         ", versionMinor = " + std::to_string(versionMinor) +
         ", warpsPerCTA = " + listStr(warpsPerCTA) +
         ", instrShape = " + listStr(instrShape) + "}>";
}

// ---------------------------------------------------------------------------
// Dot operands
// ---------------------------------------------------------------------------

const DotOperandLayout *DotOperandLayout::get(int opIdx, const GPULayout *parent,
                                              int kWidth) {
  std::unique_ptr<DotOperandLayout> l(new DotOperandLayout());
  l->opIdx = opIdx;
  l->parent = dynamic_cast<const NvidiaMmaLayout *>(parent);
  l->kWidth = kWidth;
  std::string why;
  if (!l->parent)
    why = "the parent must be an nvidia_mma layout";
  else if (opIdx != 0 && opIdx != 1)
    why = "opIdx must be 0 (A) or 1 (B)";
  else if (kWidth != 1 && kWidth != 2 && kWidth != 4)
    why = "kWidth must be 1 (tf32), 2 (16-bit) or 4 (8-bit elements)";
  else if (opIdx == 1 && l->parent->isHopper())
    why = "wgmma reads its B operand from shared memory, not registers";
  if (!why.empty())
    throw InternalError("dot_op layout (opIdx " + std::to_string(opIdx) +
                        ", kWidth " + std::to_string(kWidth) + ", parent " +
                        (parent ? parent->str() : "null") + "): " + why);
  return static_cast<const DotOperandLayout *>(internLayout(std::move(l)));
}

LinearLayout
DotOperandLayout::toLinear(const std::vector<int64_t> &shape) const {
  checkShape(*this, shape);
  // Dims of the operand ([batch,] M, K for A; [batch,] K, N for B): K and
  // the other one (M for A, N for B).
  size_t r = shape.size();
  int kDim = int(r) - (opIdx == 0 ? 1 : 2);
  int oDim = int(r) - (opIdx == 0 ? 2 : 1);
  int64_t tileK = 8 * kWidth;
  // A: 16 rows per warp (a wgmma warpgroup's 64 in four warps); B: 8 columns.
  int64_t tileO = opIdx == 0 ? 16 : 8;
  auto along = [&](int dim, int64_t v) {
    Basis b(r, 0);
    b[dim] = v;
    return b;
  };
  // kWidth consecutive K elements in one 32-bit register, then the lanes:
  // threadID_in_group along K, groupID along M (A) or N (B).
  std::vector<Basis> reg, lane;
  for (int64_t v = 1; v < kWidth; v *= 2)
    reg.push_back(along(kDim, v));
  lane = {along(kDim, kWidth), along(kDim, 2 * kWidth), along(oDim, 1),
          along(oDim, 2), along(oDim, 4)};
  // A: the lower 8 rows, then the upper half of K; B: the upper half of K.
  if (opIdx == 0)
    reg.push_back(along(oDim, 8));
  reg.push_back(along(kDim, 4 * kWidth));
  // The parent's warps: those along this operand's other dim keep their
  // place; those along the other operand's dim hold copies; those along
  // the batch (last, in a batched parent) keep theirs.
  std::vector<Basis> warp;
  int parentO = int(r) - (opIdx == 0 ? 2 : 1); // the parent dim it shares
  int parentOther = int(r) - (opIdx == 0 ? 1 : 2);
  int64_t wO = parent->warpsPerCTA[parentO];
  int64_t wOther = parent->warpsPerCTA[parentOther];
  auto zeros = [&](int64_t count) {
    for (int64_t v = 1; v < count; v *= 2)
      warp.push_back(Basis(r, 0));
  };
  bool oFirst = parent->isHopper() ? opIdx == 0 : opIdx == 1;
  if (oFirst) {
    steps(warp, oDim, tileO, wO, shape);
    zeros(wOther);
  } else {
    zeros(wOther);
    steps(warp, oDim, tileO, wO, shape);
  }
  if (r == 3)
    steps(warp, 0, 1, parent->warpsPerCTA[0], shape);
  wraps(reg, kDim, tileK, shape);
  wraps(reg, oDim, tileO * wO, shape);
  if (r == 3)
    wraps(reg, 0, parent->warpsPerCTA[0], shape);
  clampToShape(reg, shape);
  clampToShape(lane, shape);
  return LinearLayout::distributed(shape, std::move(reg), std::move(lane),
                                   std::move(warp));
}

std::string DotOperandLayout::str() const {
  return "#ttg.dot_op<{opIdx = " + std::to_string(opIdx) +
         ", parent = " + parent->str() +
         ", kWidth = " + std::to_string(kWidth) + "}>";
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

namespace {

// `name = n` with n in [0, 2^31), and `name = [...]`.
bool intField(LayoutLexer &lx, const std::string &name, int64_t &v) {
  return lx.field(name) && lx.smallInt(v);
}
bool listField(LayoutLexer &lx, const std::string &name,
               std::vector<int64_t> &out) {
  return lx.field(name) && lx.list(out);
}

const NvidiaMmaLayout *parseMma(LayoutLexer &lx) {
  int64_t major, minor;
  std::vector<int64_t> warps, instr;
  if (!(lx.eat("#ttg.nvidia_mma<{") && intField(lx, "versionMajor", major) &&
        lx.eat(",") && intField(lx, "versionMinor", minor) && lx.eat(",") &&
        listField(lx, "warpsPerCTA", warps) && lx.eat(",") &&
        listField(lx, "instrShape", instr) && lx.eat("}>")))
    return nullptr;
  // A combination without an instruction is malformed text, not a crash.
  try {
    return NvidiaMmaLayout::get((int)major, (int)minor, warps, instr);
  } catch (const InternalError &) {
    return nullptr;
  }
}

} // namespace

const GPULayout *parseMmaLayout(const std::string &text, size_t &pos) {
  LayoutLexer lx{text, pos};
  const GPULayout *l = nullptr;
  if (lx.eat("#ttg.dot_op<{")) {
    int64_t opIdx, kWidth;
    const NvidiaMmaLayout *parent = nullptr;
    if (intField(lx, "opIdx", opIdx) && lx.eat(",") && lx.eat("parent") &&
        lx.eat("=") && (parent = parseMma(lx)) && lx.eat(",") &&
        intField(lx, "kWidth", kWidth) && lx.eat("}>")) {
      try {
        l = DotOperandLayout::get((int)opIdx, parent, (int)kWidth);
      } catch (const InternalError &) {
        l = nullptr;
      }
    }
  } else {
    l = parseMma(lx);
  }
  if (l)
    pos = lx.p;
  return l;
}

} // namespace tritium::gpu
