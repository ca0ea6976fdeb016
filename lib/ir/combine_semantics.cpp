// The builder's tl.reduce (with a combine function) and tl.associative_scan:
// checks of the user's inputs and combine, and the tt.reduce_combine /
// tt.scan ops with their combine region.
#include "builder_internal.h"

#include <algorithm>

namespace tritium {
using namespace builder_detail;

namespace {

std::string typeList(const std::vector<const Type *> &ts) {
  std::string s = "(";
  for (size_t i = 0; i < ts.size(); ++i)
    s += (i ? ", " : "") + ts[i]->str();
  return s + ")";
}

int normalizeAxis(Builder &b, int axis, int rank, const std::string &fn) {
  if (axis < -rank || axis >= rank)
    b.error("invalid axis " + std::to_string(axis) + " for " + fn +
            " of a " + std::to_string(rank) + "-D tensor: expected " +
            std::to_string(-rank) + " <= axis < " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

/// Takes `combine` back from the builder's detached blocks into `op`'s
/// region, checking that it was ended by combineReturn.
void adoptCombine(std::vector<std::unique_ptr<Block>> &detached, Block *combine,
                  Operation *op) {
  auto it = std::find_if(detached.begin(), detached.end(),
                         [&](const auto &p) { return p.get() == combine; });
  if (it == detached.end())
    throw InternalError("builder: a combine block the builder does not own");
  const Operation *t = combine->terminator();
  if (!t || t->code() != OpCode::CombineReturn)
    throw InternalError("builder: a combine block without tt.combine.return");
  std::unique_ptr<Block> owned = std::move(*it);
  detached.erase(it);
  op->region(0).addBlock(std::move(owned));
}

} // namespace

Block *Builder::newCombineBlock(const std::vector<Value *> &inputs,
                                const std::string &fn) {
  if (inputs.empty())
    error(fn + " expects at least one input tensor");
  for (Value *x : inputs) {
    if (!x)
      throw InternalError("builder: null input of " + fn);
    if (!x->type()->isTensor())
      error(fn + " expects tensors, got the scalar " + x->type()->str());
    if (isPtrLike(x))
      error(fn + " cannot combine a tensor of pointers (" + x->type()->str() +
            ")");
    if (x->type()->shape() != inputs[0]->type()->shape())
      error(fn + " expects inputs of one shape, got " +
            inputs[0]->type()->str() + " and " + x->type()->str());
  }
  Block *b = newDetachedBlock();
  for (int half = 0; half < 2; ++half)
    for (Value *x : inputs)
      b->addArgument(x->type()->element());
  return b;
}

void Builder::combineReturn(const std::vector<Value *> &values) {
  Block *b = ip_.block;
  if (!b || b->parentOp() || b->numArguments() % 2)
    throw InternalError("builder: combineReturn outside a combine block");
  std::vector<const Type *> want;
  for (unsigned i = 0; i < b->numArguments() / 2; ++i)
    want.push_back(b->argument(i)->type());
  std::vector<const Type *> got;
  for (Value *v : values)
    got.push_back(v->type());
  if (got.size() != want.size())
    error("the combine function must return " + std::to_string(want.size()) +
          (want.size() == 1 ? " value" : " values") + " " + typeList(want) +
          ", got " + std::to_string(got.size()) + " " + typeList(got));
  if (got != want)
    error("the combine function must return " + typeList(want) +
          " (the inputs' element types), got " + typeList(got));
  create(OpCode::CombineReturn, values, {});
}

std::vector<Value *> Builder::scan(const std::vector<Value *> &inputs,
                                   int axisIn, bool reverse, Block *combine) {
  int axis = normalizeAxis(*this, axisIn, inputs.at(0)->type()->rank(),
                           "tl.associative_scan");
  std::vector<const Type *> types;
  for (Value *x : inputs)
    types.push_back(x->type());
  Operation *op = create(OpCode::Scan, inputs, types,
                         {{"axis", int64_t(axis)}, {"reverse", reverse}});
  adoptCombine(detached_, combine, op);
  return op->results();
}

std::vector<Value *> Builder::reduceCombine(const std::vector<Value *> &inputsIn,
                                            std::optional<int> axisIn,
                                            bool keepDims, Block *combine) {
  std::vector<Value *> inputs = inputsIn;
  int origRank = inputs.at(0)->type()->rank();
  int axis = 0;
  if (axisIn) {
    axis = normalizeAxis(*this, *axisIn, origRank, "tl.reduce");
  } else if (origRank > 1) {
    for (Value *&x : inputs)
      x = reshape(x, {x->type()->numElements()});
  }
  std::vector<int64_t> shape = inputs[0]->type()->shape();
  shape.erase(shape.begin() + axis);
  std::vector<const Type *> types;
  for (Value *x : inputs)
    types.push_back(shapedType(x->type()->element(), shape));
  Operation *op = create(OpCode::ReduceCombine, inputs, types,
                         {{"axis", int64_t(axis)}});
  adoptCombine(detached_, combine, op);
  std::vector<Value *> rs = op->results();
  if (keepDims)
    for (Value *&r : rs) {
      if (axisIn)
        r = expandDims(r, axis);
      else
        for (int i = 0; i < origRank; ++i)
          r = expandDims(r, 0);
    }
  return rs;
}

} // namespace tritium
