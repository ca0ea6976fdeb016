// Blocked, slice and linear layouts: construction, interning, text form and
// their linear maps.
#include "tritium/gpu/layouts.h"

#include "layout_text.h"
#include "tritium/gpu/mma_layouts.h"
#include "tritium/gpu/shared_layouts.h"
#include "tritium/ir/printer.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
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

Basis unit(int rank, int d, int64_t v) {
  Basis b(rank, 0);
  b[d] = v;
  return b;
}

void checkShape(const GPULayout &l, const std::vector<int64_t> &shape) {
  if ((int)shape.size() != l.rank())
    throw InternalError("layout " + l.str() + " applied to a tensor of rank " +
                        std::to_string(shape.size()));
  for (int64_t s : shape)
    if (log2Exact(s) < 0)
      throw InternalError("layout applied to a tensor dim of size " +
                          std::to_string(s) + " (not a power of two)");
}

} // namespace

const GPULayout *internLayout(std::unique_ptr<GPULayout> l) {
  return InternTable<GPULayout>::get().intern(std::move(l));
}

// ---------------------------------------------------------------------------
// Blocked
// ---------------------------------------------------------------------------

const BlockedLayout *BlockedLayout::get(std::vector<int64_t> sizePerThread,
                                        std::vector<int64_t> threadsPerWarp,
                                        std::vector<int64_t> warpsPerCTA,
                                        std::vector<int64_t> order) {
  std::unique_ptr<BlockedLayout> l(new BlockedLayout());
  l->sizePerThread = std::move(sizePerThread);
  l->threadsPerWarp = std::move(threadsPerWarp);
  l->warpsPerCTA = std::move(warpsPerCTA);
  l->order = std::move(order);
  return InternTable<GPULayout>::get().intern(std::move(l));
}

const BlockedLayout *BlockedLayout::forShape(const std::vector<int64_t> &shape,
                                             std::vector<int64_t> sizePerThread,
                                             std::vector<int64_t> order,
                                             int numWarps) {
  int rank = (int)shape.size();
  std::vector<int64_t> tpw(rank, 1), wpc(rank, 1);
  int64_t remainingLanes = kThreadsPerWarp;
  int64_t remainingThreads = (int64_t)numWarps * kThreadsPerWarp;
  int64_t remainingWarps = numWarps;
  int64_t prevLanes = 1, prevWarps = 1;
  // Fastest dim first: give it as many threads as it has blocks.
  for (int k = 0; k < rank - 1; ++k) {
    int i = (int)order[k];
    int64_t blocks = std::max<int64_t>(1, shape[i] / sizePerThread[i]);
    int64_t threadsPerCTA = std::clamp<int64_t>(remainingThreads, 1, blocks);
    tpw[i] = std::clamp<int64_t>(threadsPerCTA, 1, remainingLanes);
    wpc[i] = std::clamp<int64_t>(threadsPerCTA / tpw[i], 1, remainingWarps);
    remainingWarps /= wpc[i];
    remainingLanes /= tpw[i];
    remainingThreads /= threadsPerCTA;
    prevLanes *= tpw[i];
    prevWarps *= wpc[i];
  }
  // The slowest dim takes whatever lanes and warps are left.
  int last = (int)order[rank - 1];
  tpw[last] = kThreadsPerWarp / prevLanes;
  wpc[last] = numWarps / prevWarps;
  return get(std::move(sizePerThread), tpw, wpc, std::move(order));
}

const BlockedLayout *
BlockedLayout::defaultFor(const std::vector<int64_t> &shape, int numWarps) {
  int rank = (int)shape.size();
  std::vector<int64_t> order(rank);
  for (int i = 0; i < rank; ++i)
    order[i] = rank - 1 - i;
  return forShape(shape, std::vector<int64_t>(rank, 1), order, numWarps);
}

int BlockedLayout::numWarps() const {
  int64_t n = 1;
  for (int64_t w : warpsPerCTA)
    n *= w;
  return (int)n;
}

LinearLayout BlockedLayout::toLinear(const std::vector<int64_t> &shape) const {
  checkShape(*this, shape);
  int rank = (int)shape.size();
  std::vector<Basis> reg, lane, warp;
  // A basis beyond the tensor's extent would address nothing: registers are
  // dropped, lanes and warps hold copies (zero basis).
  for (int64_t d : order)
    for (int64_t v = 1; v < sizePerThread[d]; v *= 2)
      if (v < shape[d])
        reg.push_back(unit(rank, (int)d, v));
  for (int64_t d : order)
    for (int64_t v = sizePerThread[d]; v < sizePerThread[d] * threadsPerWarp[d];
         v *= 2)
      lane.push_back(v < shape[d] ? unit(rank, (int)d, v) : Basis(rank, 0));
  for (int64_t d : order) {
    int64_t base = sizePerThread[d] * threadsPerWarp[d];
    for (int64_t v = base; v < base * warpsPerCTA[d]; v *= 2)
      warp.push_back(v < shape[d] ? unit(rank, (int)d, v) : Basis(rank, 0));
  }
  // A tensor larger than the CTA tile wraps around in more registers.
  for (int64_t d : order) {
    int64_t cover = sizePerThread[d] * threadsPerWarp[d] * warpsPerCTA[d];
    for (int64_t v = cover; v < shape[d]; v *= 2)
      reg.push_back(unit(rank, (int)d, v));
  }
  return LinearLayout::distributed(shape, std::move(reg), std::move(lane),
                                   std::move(warp));
}

std::string BlockedLayout::str() const {
  return "#ttg.blocked<{sizePerThread = " + listStr(sizePerThread) +
         ", threadsPerWarp = " + listStr(threadsPerWarp) +
         ", warpsPerCTA = " + listStr(warpsPerCTA) +
         ", order = " + listStr(order) + "}>";
}

// ---------------------------------------------------------------------------
// Slice
// ---------------------------------------------------------------------------

const SliceLayout *SliceLayout::get(int dim, const GPULayout *parent) {
  std::unique_ptr<SliceLayout> l(new SliceLayout());
  l->dim = dim;
  l->parent = parent;
  return InternTable<GPULayout>::get().intern(std::move(l));
}

LinearLayout SliceLayout::toLinear(const std::vector<int64_t> &shape) const {
  checkShape(*this, shape);
  std::vector<int64_t> parentShape = shape;
  parentShape.insert(parentShape.begin() + dim, 1);
  LinearLayout p = parent->toLinear(parentShape);
  auto drop = [&](std::vector<Basis> &bases, bool removeZero) {
    std::vector<Basis> out;
    for (Basis b : bases) {
      b.erase(b.begin() + dim);
      bool zero = std::all_of(b.begin(), b.end(), [](int64_t v) { return !v; });
      if (!(removeZero && zero))
        out.push_back(std::move(b));
    }
    bases = std::move(out);
  };
  std::vector<Basis> reg = p.reg(), lane = p.lane(), warp = p.warp(),
                     block = p.block();
  drop(reg, true);
  drop(lane, false);
  drop(warp, false);
  drop(block, false);
  return LinearLayout::distributed(shape, std::move(reg), std::move(lane),
                                   std::move(warp), std::move(block));
}

std::string SliceLayout::str() const {
  return "#ttg.slice<{dim = " + std::to_string(dim) +
         ", parent = " + parent->str() + "}>";
}

// ---------------------------------------------------------------------------
// Linear
// ---------------------------------------------------------------------------

const LinearEncoding *LinearEncoding::get(const LinearLayout &ll) {
  std::unique_ptr<LinearEncoding> l(new LinearEncoding());
  l->ll = ll;
  return InternTable<GPULayout>::get().intern(std::move(l));
}

LinearLayout LinearEncoding::toLinear(const std::vector<int64_t> &shape) const {
  if (shape != ll.shape())
    throw InternalError("linear layout " + ll.str() +
                        " applied to a tensor of another shape");
  return ll;
}

// ---------------------------------------------------------------------------
// Helpers on types
// ---------------------------------------------------------------------------

const GPULayout *layoutOf(const Type *t) {
  if (!t->isTensor() || !t->layout())
    return nullptr;
  return dynamic_cast<const GPULayout *>(t->layout());
}

const LinearLayout &linearOf(const Type *t) {
  const GPULayout *l = layoutOf(t);
  if (!l)
    throw InternalError("tensor type " + t->str() + " has no GPU layout");
  static std::mutex mu;
  static auto *cache =
      new std::map<std::pair<const GPULayout *, std::vector<int64_t>>,
                   LinearLayout>();
  std::lock_guard<std::mutex> g(mu);
  auto key = std::make_pair(l, t->shape());
  auto it = cache->find(key);
  if (it == cache->end())
    it = cache->emplace(key, l->toLinear(t->shape())).first;
  return it->second;
}

const Type *withLayout(const Type *t, const GPULayout *l) {
  return Type::tensor(t->element(), t->shape(), l);
}

const GPULayout *expandDimsLayout(const GPULayout *l, int axis) {
  if (auto *s = dynamic_cast<const SliceLayout *>(l))
    if (s->dim == axis)
      return s->parent;
  return nullptr;
}

const GPULayout *permuteLayout(const GPULayout *l,
                               const std::vector<int64_t> &order) {
  auto *b = dynamic_cast<const BlockedLayout *>(l);
  if (!b)
    return nullptr;
  int rank = b->rank();
  std::vector<int64_t> spt(rank), tpw(rank), wpc(rank), ord(rank), inv(rank);
  for (int i = 0; i < rank; ++i) {
    spt[i] = b->sizePerThread[order[i]];
    tpw[i] = b->threadsPerWarp[order[i]];
    wpc[i] = b->warpsPerCTA[order[i]];
    inv[order[i]] = i;
  }
  for (int k = 0; k < rank; ++k)
    ord[k] = inv[b->order[k]];
  return BlockedLayout::get(spt, tpw, wpc, ord);
}

} // namespace tritium::gpu

// ---------------------------------------------------------------------------
// Parsing the text form
// ---------------------------------------------------------------------------

namespace tritium::gpu {

namespace {

const GPULayout *parseAt(LayoutLexer &lx, const std::vector<int64_t> &shape,
                         int depth) {
  if (depth > 8)
    return nullptr;
  if (const GPULayout *l = parseMmaLayout(lx.s, lx.p))
    return l;
  if (lx.eat("#ttg.blocked<{")) {
    std::vector<int64_t> spt, tpw, wpc, order;
    if (!(lx.field("sizePerThread") && lx.list(spt) && lx.eat(",") &&
          lx.field("threadsPerWarp") && lx.list(tpw) && lx.eat(",") &&
          lx.field("warpsPerCTA") && lx.list(wpc) && lx.eat(",") &&
          lx.field("order") && lx.list(order) && lx.eat("}>")))
      return nullptr;
    size_t r = spt.size();
    if (tpw.size() != r || wpc.size() != r || order.size() != r || r == 0)
      return nullptr;
    return BlockedLayout::get(spt, tpw, wpc, order);
  }
  if (lx.eat("#ttg.slice<{")) {
    int64_t dim;
    if (!(lx.field("dim") && lx.integer(dim) && lx.eat(",") &&
          lx.field("parent")))
      return nullptr;
    std::vector<int64_t> parentShape = shape;
    if (dim < 0 || dim > (int64_t)parentShape.size())
      return nullptr;
    parentShape.insert(parentShape.begin() + dim, 1);
    const GPULayout *parent = parseAt(lx, parentShape, depth + 1);
    if (!parent || !lx.eat("}>"))
      return nullptr;
    return SliceLayout::get((int)dim, parent);
  }
  if (lx.eat("#ttg.linear<{")) {
    std::vector<Basis> reg, lane, warp, block;
    if (!(lx.field("register") && lx.listOfLists(reg) && lx.eat(",") &&
          lx.field("lane") && lx.listOfLists(lane) && lx.eat(",") &&
          lx.field("warp") && lx.listOfLists(warp) && lx.eat(",") &&
          lx.field("block") && lx.listOfLists(block) && lx.eat("}>")))
      return nullptr;
    // Out-of-range or ill-sized bases are a malformed layout, not a crash.
    try {
      return LinearEncoding::get(LinearLayout::distributed(
          shape, std::move(reg), std::move(lane), std::move(warp),
          std::move(block)));
    } catch (const InternalError &) {
      return nullptr;
    }
  }
  return nullptr;
}

} // namespace

const GPULayout *parseLayout(const std::string &text, size_t &pos,
                             const std::vector<int64_t> &shape) {
  LayoutLexer lx{text, pos};
  const GPULayout *l = parseAt(lx, shape, 0);
  if (l)
    pos = lx.p;
  return l;
}

namespace {
const Layout *parseWholeLayout(const std::string &text,
                               const std::vector<int64_t> &shape) {
  size_t pos = 0;
  const Layout *l = parseLayout(text, pos, shape);
  if (!l) // a memdesc's layout
    l = parseSharedLayout(text, pos);
  if (!l || pos != text.size())
    throw std::runtime_error("not a GPU layout");
  return l;
}
} // namespace

void registerLayoutParser() { setLayoutParser(&parseWholeLayout); }

} // namespace tritium::gpu
