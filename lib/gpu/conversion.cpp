// Data movement between layouts: which register a result element comes from,
// or how much shared memory the move needs.
#include "tritium/gpu/conversion.h"
#include "tritium/gpu/passes.h"

#include <algorithm>
#include <map>

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

MovementPlan planMovement(const Type *src, const Type *dst,
                          const std::vector<int64_t> &weights) {
  const LinearLayout &s = linearOf(src);
  const LinearLayout &d = linearOf(dst);
  if (!s.isDisjoint() || !d.isDisjoint())
    throw InternalError("planMovement: layouts whose bases overlap are not "
                        "supported: " +
                        src->str() + " -> " + dst->str());
  std::vector<int64_t> srcStrides = rowMajorStrides(s.shape());
  MovementPlan plan;
  plan.scratchBytes = src->numElements() * storageBytes(src->element());

  // A thread holds what it needs iff its lane and warp bits select the same
  // operand elements in both layouts, and each result register's element is
  // among the operand's registers.
  bool same = s.lane().size() == d.lane().size() && s.warp().size() == d.warp().size();
  for (size_t i = 0; same && i < d.lane().size(); ++i)
    same = dot(d.lane()[i], weights) == dot(s.lane()[i], srcStrides);
  for (size_t i = 0; same && i < d.warp().size(); ++i)
    same = dot(d.warp()[i], weights) == dot(s.warp()[i], srcStrides);
  if (!same)
    return plan;
  std::map<int64_t, int> regOfFlat;
  for (int r = 0; r < s.numRegs(); ++r)
    regOfFlat.emplace(dot(s.regCoord(r), srcStrides), r);
  std::vector<int> map(d.numRegs());
  for (int r = 0; r < d.numRegs(); ++r) {
    auto it = regOfFlat.find(dot(d.regCoord(r), weights));
    if (it == regOfFlat.end())
      return plan;
    map[r] = it->second;
  }
  plan.inRegisters = true;
  plan.srcReg = std::move(map);
  plan.scratchBytes = 0;
  return plan;
}

} // namespace tritium::gpu
