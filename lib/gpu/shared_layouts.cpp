// Swizzled and NVMMA shared layouts: construction, interning, text form and
// their linear maps (see shared_layouts.h for what each stores where).
#include "tritium/gpu/shared_layouts.h"

#include "layout_text.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace tritium::gpu {

namespace {

Basis unit(int rank, int d, int64_t v) {
  Basis b(rank, 0);
  b[d] = v;
  return b;
}

void checkShape(const SharedLayout &l, const std::vector<int64_t> &shape) {
  if ((int)shape.size() != l.rank())
    throw InternalError("shared layout " + l.str() +
                        " applied to a tile of rank " +
                        std::to_string(shape.size()));
  for (int64_t s : shape)
    if (log2Exact(s) < 0)
      throw InternalError("shared layout applied to a tile dim of size " +
                          std::to_string(s) + " (not a power of two)");
}

/// Layout::checkMemDesc for both kinds: the buffer shape must be one the
/// layout can map (and, for NVMMA, the element of the layout's width).
std::string checkBuffer(const SharedLayout &l, const Type *element,
                        const std::vector<int64_t> &shape) {
  try {
    l.toLinear(shape);
  } catch (const InternalError &e) {
    return e.what();
  }
  return "";
}

} // namespace

// ---------------------------------------------------------------------------
// Swizzled
// ---------------------------------------------------------------------------

const SwizzledSharedLayout *
SwizzledSharedLayout::get(int64_t vec, int64_t perPhase, int64_t maxPhase,
                          std::vector<int64_t> order) {
  if (log2Exact(vec) < 0 || log2Exact(perPhase) < 0 || log2Exact(maxPhase) < 0)
    throw InternalError("swizzled_shared: vec, perPhase and maxPhase must be "
                        "powers of two");
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != (int64_t)i)
      throw InternalError("swizzled_shared: order must be a permutation");
  if (order.empty())
    throw InternalError("swizzled_shared: order must not be empty");
  std::unique_ptr<SwizzledSharedLayout> l(new SwizzledSharedLayout());
  l->vec = vec;
  l->perPhase = perPhase;
  l->maxPhase = maxPhase;
  l->order = std::move(order);
  return InternTable<SharedLayout>::get().intern(std::move(l));
}

LinearLayout
SwizzledSharedLayout::toLinear(const std::vector<int64_t> &shape) const {
  checkShape(*this, shape);
  int rank = (int)shape.size();
  std::vector<Basis> offset;
  int colDim = (int)order[0];
  int64_t numCols = shape[colDim];
  for (int64_t v = 1; v < numCols; v *= 2)
    offset.push_back(unit(rank, colDim, v));
  if (rank >= 2) {
    // Row bit v moves the row by v and the column group by phase(v); the
    // phase is a bit field of the row, so the map stays linear. A phase past
    // the row's groups wraps (XOR within the row), as when numCols < vec *
    // maxPhase.
    int rowDim = (int)order[1];
    for (int64_t v = 1; v < shape[rowDim]; v *= 2) {
      Basis b = unit(rank, rowDim, v);
      b[colDim] = (vec * ((v / perPhase) % maxPhase)) % numCols;
      offset.push_back(b);
    }
  }
  for (int k = 2; k < rank; ++k)
    for (int64_t v = 1; v < shape[order[k]]; v *= 2)
      offset.push_back(unit(rank, (int)order[k], v));
  return LinearLayout::shared(shape, std::move(offset));
}

std::string SwizzledSharedLayout::str() const {
  std::string s = "#ttg.swizzled_shared<{vec = " + std::to_string(vec) +
                  ", perPhase = " + std::to_string(perPhase) +
                  ", maxPhase = " + std::to_string(maxPhase) + ", order = [";
  for (size_t i = 0; i < order.size(); ++i)
    s += (i ? ", " : "") + std::to_string(order[i]);
  return s + "]}>";
}

std::string
SwizzledSharedLayout::checkMemDesc(const Type *element,
                                   const std::vector<int64_t> &shape) const {
  return checkBuffer(*this, element, shape);
}

const Layout *
SwizzledSharedLayout::permuted(const std::vector<int64_t> &perm) const {
  // Dim d of this layout is dim inv[d] of the permuted view; the swizzle
  // names dims only through `order`.
  std::vector<int64_t> inv(perm.size(), -1);
  if (perm.size() != order.size())
    return nullptr;
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= (int64_t)perm.size() || inv[perm[i]] >= 0)
      return nullptr;
    inv[perm[i]] = (int64_t)i;
  }
  std::vector<int64_t> viewOrder;
  for (int64_t d : order)
    viewOrder.push_back(inv[d]);
  return get(vec, perPhase, maxPhase, std::move(viewOrder));
}

// ---------------------------------------------------------------------------
// NVMMA
// ---------------------------------------------------------------------------

const NVMMASharedLayout *NVMMASharedLayout::get(int64_t swizzlingByteWidth,
                                                bool transposed,
                                                int64_t elementBitWidth) {
  if (swizzlingByteWidth != 0 && swizzlingByteWidth != 32 &&
      swizzlingByteWidth != 64 && swizzlingByteWidth != 128)
    throw InternalError("nvmma_shared: swizzlingByteWidth must be 0, 32, 64 "
                        "or 128");
  if (elementBitWidth != 8 && elementBitWidth != 16 && elementBitWidth != 32 &&
      elementBitWidth != 64)
    throw InternalError("nvmma_shared: elementBitWidth must be 8, 16, 32 or "
                        "64");
  std::unique_ptr<NVMMASharedLayout> l(new NVMMASharedLayout());
  l->swizzlingByteWidth = swizzlingByteWidth;
  l->transposed = transposed;
  l->elementBitWidth = elementBitWidth;
  return InternTable<SharedLayout>::get().intern(std::move(l));
}

LinearLayout
NVMMASharedLayout::toLinear(const std::vector<int64_t> &shape) const {
  checkShape(*this, shape);
  int colDim = transposed ? 0 : 1, rowDim = 1 - colDim;
  int64_t rowBytes = swizzlingByteWidth ? swizzlingByteWidth : 16;
  int64_t colsPerBlock = rowBytes * 8 / elementBitWidth;
  int64_t elemsPerChunk = 128 / elementBitWidth; // 16 bytes
  if (shape[colDim] < colsPerBlock)
    throw InternalError("nvmma_shared with " + std::to_string(rowBytes) +
                        "-byte rows needs at least " +
                        std::to_string(colsPerBlock) +
                        " elements along dim " + std::to_string(colDim) +
                        ", found " + std::to_string(shape[colDim]));
  std::vector<Basis> offset;
  for (int64_t v = 1; v < colsPerBlock; v *= 2)
    offset.push_back(unit(2, colDim, v));
  // Row v starts at byte v * rowBytes; address bits 7 and up (within the
  // swizzle width's chunk count) pick the chunk XOR.
  int64_t chunkMask = swizzlingByteWidth ? swizzlingByteWidth / 16 - 1 : 0;
  for (int64_t v = 1; v < shape[rowDim]; v *= 2) {
    Basis b = unit(2, rowDim, v);
    b[colDim] = elemsPerChunk * (((v * rowBytes) >> 7) & chunkMask);
    offset.push_back(b);
  }
  for (int64_t v = colsPerBlock; v < shape[colDim]; v *= 2)
    offset.push_back(unit(2, colDim, v));
  return LinearLayout::shared(shape, std::move(offset));
}

const Layout *
NVMMASharedLayout::permuted(const std::vector<int64_t> &perm) const {
  if (perm == std::vector<int64_t>{0, 1})
    return this;
  if (perm == std::vector<int64_t>{1, 0})
    return get(swizzlingByteWidth, !transposed, elementBitWidth);
  return nullptr;
}

std::string NVMMASharedLayout::str() const {
  return "#ttg.nvmma_shared<{swizzlingByteWidth = " +
         std::to_string(swizzlingByteWidth) +
         ", transposed = " + (transposed ? "true" : "false") +
         ", elementBitWidth = " + std::to_string(elementBitWidth) + "}>";
}

std::string
NVMMASharedLayout::checkMemDesc(const Type *element,
                                const std::vector<int64_t> &shape) const {
  if (!element->isScalar() || bitWidth(element->dtype()) != elementBitWidth)
    return "nvmma_shared layout of " + std::to_string(elementBitWidth) +
           "-bit elements holds " + element->str();
  return checkBuffer(*this, element, shape);
}

// ---------------------------------------------------------------------------
// Text and types
// ---------------------------------------------------------------------------

namespace {

const SharedLayout *parseAt(LayoutLexer &lx) {
  if (lx.eat("#ttg.swizzled_shared<{")) {
    int64_t vec, perPhase, maxPhase;
    std::vector<int64_t> order;
    if (!(lx.field("vec") && lx.smallInt(vec) && lx.eat(",") &&
          lx.field("perPhase") && lx.smallInt(perPhase) && lx.eat(",") &&
          lx.field("maxPhase") && lx.smallInt(maxPhase) && lx.eat(",") &&
          lx.field("order") && lx.eat("[")))
      return nullptr;
    if (!lx.eat("]")) {
      do {
        int64_t v;
        if (!lx.integer(v))
          return nullptr;
        order.push_back(v);
      } while (lx.eat(","));
      if (!lx.eat("]"))
        return nullptr;
    }
    if (!lx.eat("}>"))
      return nullptr;
    try {
      return SwizzledSharedLayout::get(vec, perPhase, maxPhase, order);
    } catch (const InternalError &) {
      return nullptr;
    }
  }
  if (lx.eat("#ttg.nvmma_shared<{")) {
    int64_t width, bits;
    bool transposed;
    if (!(lx.field("swizzlingByteWidth") && lx.smallInt(width) && lx.eat(",") &&
          lx.field("transposed") && lx.boolean(transposed) && lx.eat(",") &&
          lx.field("elementBitWidth") && lx.smallInt(bits) && lx.eat("}>")))
      return nullptr;
    try {
      return NVMMASharedLayout::get(width, transposed, bits);
    } catch (const InternalError &) {
      return nullptr;
    }
  }
  return nullptr;
}

} // namespace

const SharedLayout *parseSharedLayout(const std::string &text, size_t &pos) {
  LayoutLexer lx{text, pos};
  const SharedLayout *l = parseAt(lx);
  if (l)
    pos = lx.p;
  return l;
}

const SharedLayout *sharedLayoutOf(const Type *t) {
  if (!t->isMemDesc() || !t->layout())
    return nullptr;
  return dynamic_cast<const SharedLayout *>(t->layout());
}

const LinearLayout &sharedLinearOf(const Type *t) {
  const SharedLayout *l = sharedLayoutOf(t);
  if (!l)
    throw InternalError("type " + t->str() + " has no shared layout");
  static std::mutex mu;
  static auto *cache =
      new std::map<std::pair<const SharedLayout *, std::vector<int64_t>>,
                   LinearLayout>();
  std::lock_guard<std::mutex> g(mu);
  auto key = std::make_pair(l, t->bufferShape());
  auto it = cache->find(key);
  if (it == cache->end())
    it = cache->emplace(key, l->toLinear(key.second)).first;
  return it->second;
}

std::optional<int64_t> tmaSwizzleBytes(const Type *t) {
  const SharedLayout *l = sharedLayoutOf(t);
  const std::vector<int64_t> &shape = t->bufferShape();
  if (!l || shape.size() != 2 || t->element()->isPointer())
    return std::nullopt;
  int64_t eb = bitWidth(t->element()->dtype()) / 8;
  if (eb < 1 || shape[1] * eb % 16 != 0)
    return std::nullopt;
  const LinearLayout &ll = sharedLinearOf(t);
  int64_t rows = shape[0], cols = shape[1];
  for (int64_t swz : {128, 64, 32, 0}) {
    // A box row: swz bytes (16 without a swizzle), w elements.
    int64_t rowBytes = swz ? swz : 16;
    int64_t w = rowBytes / eb;
    if (w < 1 || cols % w != 0 || (swz && cols * eb < swz))
      continue;
    int64_t mask = swz ? swz / 16 - 1 : 0;
    bool ok = true;
    for (int64_t o = 0; ok && o < rows * cols; ++o) {
      Basis c = ll.apply({{"offset", o}});
      int64_t r = c[0], k = c[1] / w, cc = c[1] % w;
      int64_t a = r * rowBytes + cc * eb;
      a ^= ((a >> 7) & mask) << 4;
      ok = k * rows * rowBytes + a == o * eb;
    }
    if (ok)
      return swz;
  }
  return std::nullopt;
}

} // namespace tritium::gpu
