// Data movement between layouts: which register a result element comes from,
// or how much shared memory the move needs.
#include "tritium/gpu/conversion.h"
#include "tritium/gpu/passes.h"

#include <algorithm>
#include <map>
#include <optional>

namespace tritium::gpu {

namespace {

int64_t dot(const Basis &c, const std::vector<int64_t> &w) {
  int64_t f = 0;
  for (size_t d = 0; d < c.size(); ++d)
    f += c[d] * w[d];
  return f;
}

} // namespace

std::vector<int64_t> movementWeights(const Operation &op) {
  const Type *src = op.operand(0)->type(), *dst = op.result(0)->type();
  std::vector<int64_t> srcStrides = rowMajorStrides(src->shape());
  const auto &dstShape = dst->shape();
  std::vector<int64_t> w(dstShape.size(), 0);
  switch (op.code()) {
  case OpCode::Broadcast:
    for (size_t d = 0; d < w.size(); ++d)
      w[d] = src->shape()[d] == 1 ? 0 : srcStrides[d];
    return w;
  case OpCode::ExpandDims: {
    int axis = (int)op.intAttr("axis");
    for (size_t d = 0, s = 0; d < w.size(); ++d)
      w[d] = (int)d == axis ? 0 : srcStrides[s++];
    return w;
  }
  case OpCode::Trans: {
    const auto &order = op.arrayAttr("order");
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = srcStrides[order[i]];
    return w;
  }
  case OpCode::Reshape:
  case OpCode::ConvertLayout:
    // Row-major reshape keeps the flat index; a conversion keeps the shape,
    // so every coordinate maps to itself.
    return rowMajorStrides(dstShape);
  default:
    throw InternalError(std::string("movementWeights: '") + op.name() +
                        "' does not move data");
  }
}

int64_t storageBytes(const Type *elem) {
  if (elem->isPointer())
    return 8;
  return std::max(1, bitWidth(elem->dtype()) / 8);
}

unsigned duplicateLaneMask(const LinearLayout &ll) {
  unsigned m = 0;
  for (size_t i = 0; i < ll.lane().size(); ++i)
    if (std::all_of(ll.lane()[i].begin(), ll.lane()[i].end(),
                    [](int64_t v) { return v == 0; }))
      m |= 1u << i;
  return m;
}

unsigned duplicateWarpMask(const LinearLayout &ll) {
  unsigned m = 0;
  for (size_t i = 0; i < ll.warp().size(); ++i)
    if (std::all_of(ll.warp()[i].begin(), ll.warp()[i].end(),
                    [](int64_t v) { return v == 0; }))
      m |= 1u << i;
  return m;
}

std::optional<LinearLayout> linearFunction(const LinearLayout &ll,
                                           const std::vector<int64_t> &w) {
  std::vector<int64_t> shape = ll.shape();
  if (w.size() != shape.size())
    throw InternalError("linearFunction: " + std::to_string(w.size()) +
                        " weights for a tensor of rank " +
                        std::to_string(shape.size()));
  // Each dim d with a weight covers bits [log2 w[d], log2 w[d] + log2
  // shape[d]) of the value; linear over GF(2) iff those ranges are disjoint.
  uint64_t used = 0;
  int top = 0;
  for (size_t d = 0; d < w.size(); ++d) {
    if (w[d] == 0 || shape[d] == 1)
      continue;
    int lo = log2Exact(w[d]), n = log2Exact(shape[d]);
    if (lo < 0 || n < 0 || lo + n > 62)
      return std::nullopt;
    uint64_t bits = ((uint64_t(1) << n) - 1) << lo;
    if (used & bits)
      return std::nullopt;
    used |= bits;
    top = std::max(top, lo + n);
  }
  std::vector<LinearLayout::InDim> ins;
  for (const LinearLayout::InDim &in : ll.ins()) {
    LinearLayout::InDim f{in.name, {}};
    for (const Basis &b : in.bases)
      f.bases.push_back({dot(b, w)});
    ins.push_back(std::move(f));
  }
  return LinearLayout(std::move(ins), {{kFlat, int64_t(1) << top}});
}

ScratchSwizzle scratchSwizzle(const Type *src, int64_t elemBytes) {
  ScratchSwizzle sw;
  const auto &shape = src->shape();
  if (shape.size() < 2 || elemBytes > 16)
    return sw;
  int64_t rowLen = shape.back(), rows = src->numElements() / rowLen;
  int lenBits = log2Exact(rowLen), ebBits = log2Exact(elemBytes);
  if (lenBits < 0 || ebBits < 0 || rows < 2)
    return sw;
  int chunkElemBits = 4 - ebBits;          // log2 elements per 16-byte chunk
  int chunkBits = lenBits - chunkElemBits; // log2 chunks per row
  if (chunkBits <= 0)
    return sw; // a row fits one chunk: 8 consecutive rows fill a line
  // Rows shorter than a 128-byte line share it: XOR with the row bits
  // above those that already pick a line's part.
  int rowsPerLineBits = std::max(0, 7 - (lenBits + ebBits));
  sw.bits = std::min(3, chunkBits);
  sw.chunkBit = chunkElemBits;
  sw.rowBit = lenBits + rowsPerLineBits;
  return sw;
}

MovementPlan planMovement(const Type *src, const Type *dst,
                          const std::vector<int64_t> &weights) {
  const LinearLayout &s = linearOf(src);
  const LinearLayout &d = linearOf(dst);
  MovementPlan plan;
  plan.scratchBytes = src->numElements() * storageBytes(src->element());

  // Both layouts as maps to the operand's row-major index: the operand's
  // through its strides, the result's through the weights.
  std::optional<LinearLayout> fs = linearFunction(s, rowMajorStrides(s.shape()));
  std::optional<LinearLayout> fd = linearFunction(d, weights);
  if (!fs || !fd)
    throw InternalError("planMovement: the movement " + src->str() + " -> " +
                        dst->str() + " is not linear over GF(2)");
  // A common out dim, as wide as the wider of the two.
  int64_t size = std::max(fs->outs()[0].size, fd->outs()[0].size);
  auto widen = [&](const LinearLayout &f) {
    return LinearLayout(f.ins(), {{kFlat, size}});
  };
  LinearLayout a = widen(*fs), b = widen(*fd);

  // Registers can be renamed, the same way in every thread, iff each
  // thread's part is the same in both (lane, warp and block bases agree)
  // and every result register's element is some operand register's:
  // then result(r, t) = operand(X(r), t) with X = invertAndCompose of the
  // register parts.
  for (const std::string &dim : {kLane, kWarp, kBlock})
    if (a.bases(dim) != b.bases(dim))
      return plan;
  LinearLayout x;
  try {
    x = b.sublayout({kRegister}).invertAndCompose(a.sublayout({kRegister}));
  } catch (const InternalError &) {
    return plan; // some result element is in no operand register
  }
  std::vector<int> map(d.numRegs());
  for (int r = 0; r < d.numRegs(); ++r)
    map[r] = (int)x.apply(std::vector<int64_t>{r})[0];
  plan.inRegisters = true;
  plan.srcReg = std::move(map);
  plan.scratchBytes = 0;
  return plan;
}

} // namespace tritium::gpu
