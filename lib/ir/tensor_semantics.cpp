// Triton's rules for tensor-shaped code: program ids, tl.arange / tl.full,
// broadcasting (numpy rules), shape ops, loads and stores, atomics,
// reductions and tl.dot. Mirrors Triton 3.x's semantic.py and the wrappers
// of core.py / standard.py (e.g. the dtype widening of tl.sum and tl.max).
#include "builder_internal.h"
#include "tritium/support/bits.h"

#include <algorithm>
#include <cctype>

namespace tritium {
using namespace builder_detail;

namespace {

constexpr int64_t kMaxTensorNumel = int64_t(1) << 20; // TRITON_MAX_TENSOR_NUMEL

Value *mk(Builder &b, OpCode code, std::vector<Value *> operands,
          const Type *type, std::map<std::string, Attribute> attrs = {}) {
  return b.create(code, operands, {type}, std::move(attrs))->result(0);
}


/// Triton's validate_block_shape: every dim a power of two, at most 2^20
/// elements.
void validateShape(Builder &b, const char *what,
                   const std::vector<int64_t> &shape) {
  int64_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!isPowerOf2(shape[i]))
      b.error(std::string(what) +
              ": every dimension of a tensor must be a power "
              "of 2, got shape " +
              shapeStr(shape) + " (dimension " + std::to_string(i) + " is " +
              std::to_string(shape[i]) + ")");
    numel *= shape[i];
    if (numel > kMaxTensorNumel)
      b.error(std::string(what) +
              ": a tensor has at most 2^20 = 1048576 "
              "elements, got shape " +
              shapeStr(shape));
  }
}

Value *requireValue(Value *v, const char *what) {
  if (!v)
    throw InternalError(std::string("builder: null ") + what);
  return v;
}

std::string lower(std::string s) {
  for (char &c : s)
    c = (char)std::tolower((unsigned char)c);
  return s;
}

} // namespace

// ---------------------------------------------------------------------------
// Broadcasting
// ---------------------------------------------------------------------------

namespace {
/// The numpy broadcast of shapes `sx` (of the thing named `nx`) and `sy`.
std::vector<int64_t> broadcastShape(Builder &b, const std::vector<int64_t> &sx,
                                    const std::string &nx,
                                    const std::vector<int64_t> &sy,
                                    const std::string &ny) {
  size_t rank = std::max(sx.size(), sy.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right, numpy style.
    int64_t dx = i < rank - sx.size() ? 1 : sx[i - (rank - sx.size())];
    int64_t dy = i < rank - sy.size() ? 1 : sy[i - (rank - sy.size())];
    if (dx != dy && dx != 1 && dy != 1)
      b.error("cannot broadcast " + nx + " and " + ny + ": shapes " +
              shapeStr(sx) + " and " + shapeStr(sy) + " differ at dimension " +
              std::to_string(i) + " (" + std::to_string(dx) + " vs " +
              std::to_string(dy) + ")");
    out[i] = dx == 1 ? dy : dx;
  }
  return out;
}
} // namespace

std::vector<int64_t> builder_detail::broadcastShapes(Builder &b, const Value *x,
                                                     const Value *y) {
  return broadcastShape(b, shapeOf(x), x->type()->str(), shapeOf(y),
                        y->type()->str());
}

void builder_detail::broadcastAll(Builder &b, std::vector<Value *> &vs) {
  if (vs.empty())
    return;
  std::vector<int64_t> shape = shapeOf(vs[0]);
  std::string name = vs[0]->type()->str();
  for (size_t i = 1; i < vs.size(); ++i) {
    shape =
        broadcastShape(b, shape, name, shapeOf(vs[i]), vs[i]->type()->str());
    name = "the broadcast shape " + shapeStr(shape);
  }
  for (Value *&v : vs)
    v = b.broadcastTo(v, shape);
}

Value *Builder::splat(Value *x, const std::vector<int64_t> &shape) {
  requireValue(x, "splat operand");
  if (x->type()->isTensor())
    error("cannot splat a tensor (" + x->type()->str() +
          "); splat takes a scalar");
  if (shape.empty())
    return x;
  return mk(*this, OpCode::Splat, {x}, Type::tensor(x->type(), shape));
}

Value *Builder::broadcastTo(Value *x, const std::vector<int64_t> &shape) {
  requireValue(x, "broadcast operand");
  const auto &src = shapeOf(x);
  if (src == shape)
    return x;
  if (!x->type()->isTensor())
    return splat(x, shape);
  if (src.size() > shape.size())
    error("cannot broadcast " + x->type()->str() + " to shape " +
          shapeStr(shape) + ": the target has fewer dimensions");
  size_t lead = shape.size() - src.size();
  for (size_t i = 0; i < src.size(); ++i)
    if (src[i] != 1 && src[i] != shape[lead + i])
      error("cannot broadcast " + x->type()->str() + " to shape " +
            shapeStr(shape) + ": dimension " + std::to_string(i) + " is " +
            std::to_string(src[i]) + " where " +
            std::to_string(shape[lead + i]) + " (or 1) is needed");
  // Rank extension: leading dims of 1, as Triton does with expand_dims(0).
  Value *v = x;
  for (size_t i = 0; i < lead; ++i) {
    std::vector<int64_t> s = shapeOf(v);
    s.insert(s.begin(), 1);
    v = mk(*this, OpCode::ExpandDims, {v},
           Type::tensor(x->type()->element(), s), {{"axis", int64_t(0)}});
  }
  if (shapeOf(v) == shape)
    return v;
  return mk(*this, OpCode::Broadcast, {v},
            Type::tensor(x->type()->element(), shape));
}

std::pair<Value *, Value *> Builder::broadcastPair(Value *a, Value *b) {
  requireValue(a, "broadcast operand");
  requireValue(b, "broadcast operand");
  std::vector<int64_t> shape = broadcastShapes(*this, a, b);
  return {broadcastTo(a, shape), broadcastTo(b, shape)};
}

// ---------------------------------------------------------------------------
// Program ids, ranges, constants, shape ops
// ---------------------------------------------------------------------------

Value *Builder::programId(int axis) {
  if (axis < 0 || axis > 2)
    error("program_id axis must be 0, 1, or 2 but got " + std::to_string(axis));
  return mk(*this, OpCode::GetProgramId, {}, scalarTy(DType::I32),
            {{"axis", int64_t(axis)}});
}

Value *Builder::numPrograms(int axis) {
  if (axis < 0 || axis > 2)
    error("num_programs axis must be 0, 1, or 2 but got " +
          std::to_string(axis));
  return mk(*this, OpCode::GetNumPrograms, {}, scalarTy(DType::I32),
            {{"axis", int64_t(axis)}});
}

Value *Builder::arange(int64_t start, int64_t end) {
  auto fits32 = [](int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; };
  if (!fits32(start) || !fits32(end))
    error("arange's start and end must fit in int32, got start=" +
          std::to_string(start) + ", end=" + std::to_string(end));
  if (end <= start)
    error("arange's end argument must be greater than the start argument, got "
          "start=" +
          std::to_string(start) + ", end=" + std::to_string(end));
  int64_t range = end - start;
  if (!isPowerOf2(range))
    error("arange's range must be a power of 2, got " + std::to_string(range));
  if (range > kMaxTensorNumel)
    error("arange's range must be at most 2^20 = 1048576 elements, got " +
          std::to_string(range));
  return mk(*this, OpCode::MakeRange, {},
            Type::tensor(scalarTy(DType::I32), {range}),
            {{"start", start}, {"end", end}});
}

Value *Builder::full(const std::vector<int64_t> &shape, Operand value,
                     DType t) {
  validateShape(*this, "tl.full", shape);
  if (value.isLiteral()) {
    if (isInteger(t) && t != DType::I1) {
      if (value.kind == Operand::Kind::Float)
        error(std::string("tl.full: cannot fill a tensor of ") + dtypeName(t) +
              " with the " + describe(value));
      __int128 v = literalInt(value);
      if (v < intMin(t) || v > intMax(t))
        error("tl.full: the " + describe(value) + " is out of range for " +
              dtypeName(t));
    }
    return literalConstant(*this, value, t, shape);
  }
  Value *v = requireValue(value.value, "tl.full value");
  if (v->type()->isTensor() && v->type()->numElements() != 1)
    error("tl.full expects a scalar value, got " + v->type()->str());
  if (isPtrLike(v))
    error("tl.full expects a numeric value, got " + v->type()->str());
  return broadcastTo(castElem(*this, v, scalarTy(t)), shape);
}

Value *Builder::expandDims(Value *x, int axis) {
  requireValue(x, "expand_dims operand");
  int newRank = x->type()->rank() + 1;
  if (axis < -newRank || axis >= newRank)
    error("invalid axis " + std::to_string(axis) + " for expand_dims of " +
          x->type()->str() + ": expected " + std::to_string(-newRank) +
          " <= axis < " + std::to_string(newRank));
  if (axis < 0)
    axis += newRank;
  std::vector<int64_t> shape = shapeOf(x);
  shape.insert(shape.begin() + axis, 1);
  if (!x->type()->isTensor())
    return splat(x, shape);
  return mk(*this, OpCode::ExpandDims, {x},
            Type::tensor(x->type()->element(), shape),
            {{"axis", int64_t(axis)}});
}

Value *Builder::reshape(Value *x, const std::vector<int64_t> &shape) {
  requireValue(x, "reshape operand");
  if (shape.empty())
    error("reshape to a 0-d shape is not supported (got " + x->type()->str() +
          ")");
  validateShape(*this, "reshape", shape);
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  int64_t have = x->type()->isTensor() ? x->type()->numElements() : 1;
  if (numel != have)
    error("reshape cannot change the number of elements: " + x->type()->str() +
          " has " + std::to_string(have) + ", shape " + shapeStr(shape) +
          " has " + std::to_string(numel));
  if (!x->type()->isTensor())
    return splat(x, shape);
  if (shapeOf(x) == shape)
    return x;
  return mk(*this, OpCode::Reshape, {x},
            Type::tensor(x->type()->element(), shape));
}

Value *Builder::trans(Value *x, const std::vector<int64_t> &orderIn) {
  requireValue(x, "trans operand");
  int rank = x->type()->rank();
  std::vector<int64_t> order = orderIn;
  if (order.empty()) {
    // tl.trans(x) with no dims swaps the last two.
    if (rank < 2)
      error(
          "tl.trans needs a tensor of rank >= 2 when no order is given, got " +
          x->type()->str());
    for (int i = 0; i < rank - 2; ++i)
      order.push_back(i);
    order.push_back(rank - 1);
    order.push_back(rank - 2);
  }
  if ((int)order.size() != rank)
    error("trans order " + shapeStr(order) +
          " must have one entry per dimension of " + x->type()->str());
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < rank; ++i)
    if (sorted[i] != i)
      error("trans order must be a permutation of 0.." +
            std::to_string(rank - 1) + ", got " + shapeStr(order));
  bool identity = true;
  std::vector<int64_t> shape(rank);
  for (int i = 0; i < rank; ++i) {
    shape[i] = shapeOf(x)[order[i]];
    identity &= order[i] == i;
  }
  if (identity)
    return x;
  return mk(*this, OpCode::Trans, {x},
            Type::tensor(x->type()->element(), shape), {{"order", order}});
}

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

namespace {

void requirePointer(Builder &b, const char *fn, Value *ptr) {
  if (!ptr->type()->isPointerLike())
    b.error(std::string(fn) + " expects a pointer, got " + ptr->type()->str());
}

Value *requireMask(Builder &b, const char *fn, Value *mask) {
  const Type *e = mask->type()->scalarType();
  if (e != scalarTy(DType::I1))
    b.error(std::string(fn) + ": the mask must be a boolean (i1), got " +
            mask->type()->str());
  return mask;
}

/// Pointers to i1 are accessed as i8 (as Triton does): the pointer is cast.
Value *boolPtrAsI8(Builder &b, Value *ptr) {
  const Type *p = ptr->type()->scalarType();
  if (p->pointee() != scalarTy(DType::I1))
    return ptr;
  return castElem(b, ptr,
                  Type::pointer(scalarTy(DType::I8), p->addressSpace()));
}

} // namespace

/// Sets the cache and eviction hints of a tt.load / tt.store (see
/// Builder::load); unknown values are the user's mistake.
static void setCacheHints(Builder &b, Operation *op, const char *what,
                          const std::string &cache,
                          const std::string &eviction,
                          std::initializer_list<const char *> caches) {
  if (!cache.empty()) {
    bool known = false;
    std::string names;
    for (const char *c : caches) {
      known |= cache == c;
      names += std::string(names.empty() ? "" : ", ") + "'" + c + "'";
    }
    if (!known)
      b.error(std::string(what) + ": cache_modifier '" + cache +
              "' is not one of " + names);
    op->attrs()["cache"] = cache;
  }
  if (eviction.empty() || eviction == "evict_normal")
    return;
  if (eviction != "evict_first" && eviction != "evict_last")
    b.error(std::string(what) + ": eviction_policy '" + eviction +
            "' is not one of 'evict_first', 'evict_last', 'evict_normal'");
  op->attrs()["eviction"] = eviction;
}

Value *Builder::load(Value *ptr, Value *mask, std::optional<Operand> other,
                     const std::string &cache, const std::string &eviction,
                     bool isVolatile) {
  requireValue(ptr, "load pointer");
  requirePointer(*this, "tl.load", ptr);
  if (!mask && other)
    error("tl.load: `other` cannot be given without `mask`");
  Value *oth = other ? materialize(*other) : nullptr;
  if (!ptr->type()->isTensor()) {
    if (mask && mask->type()->isTensor())
      error("tl.load: the mask cannot be a tensor (" + mask->type()->str() +
            ") when the pointer is a scalar (" + ptr->type()->str() + ")");
    if (oth && oth->type()->isTensor())
      error("tl.load: `other` cannot be a tensor (" + oth->type()->str() +
            ") when the pointer is a scalar (" + ptr->type()->str() + ")");
  }
  if (mask)
    requireMask(*this, "tl.load", mask);
  // Triton broadcasts ptr with mask and with other (both ways).
  std::vector<Value *> vs{ptr};
  if (mask)
    vs.push_back(mask);
  if (oth)
    vs.push_back(oth);
  broadcastAll(*this, vs);
  ptr = vs[0];
  if (mask)
    mask = vs[1];
  if (oth)
    oth = vs.back();

  const Type *origElt = ptr->type()->scalarType()->pointee();
  ptr = boolPtrAsI8(*this, ptr);
  const Type *elt = ptr->type()->scalarType()->pointee();
  if (oth)
    oth = castElem(*this, oth, elt);
  std::vector<Value *> operands{ptr};
  if (mask)
    operands.push_back(mask);
  if (oth)
    operands.push_back(oth);
  Value *r = mk(*this, OpCode::Load, operands, ptr->type()->withElement(elt));
  setCacheHints(*this, r->definingOp(), "tl.load", cache, eviction,
                {".ca", ".cg", ".cv"});
  if (isVolatile)
    r->definingOp()->attrs()["volatile"] = true;
  if (origElt != elt)
    r = castElem(*this, r, origElt);
  return r;
}

Value *Builder::descriptorLoad(Value *base, const std::vector<Value *> &shape,
                               const std::vector<Value *> &strides,
                               const std::vector<Value *> &offsets,
                               const std::vector<int64_t> &blockShape,
                               const std::string &padding) {
  requireValue(base, "descriptor base");
  size_t r = blockShape.size();
  if (shape.size() != r || strides.size() != r || offsets.size() != r)
    error("desc.load: a rank-" + std::to_string(r) + " descriptor needs " + std::to_string(r) +
          " dims, strides and offsets");
  validateShape(*this, "desc.load", blockShape);
  std::vector<Value *> operands{base};
  for (const auto *vs : {&shape, &strides, &offsets})
    operands.insert(operands.end(), vs->begin(), vs->end());
  return mk(*this, OpCode::DescriptorLoad, operands,
            Type::tensor(base->type()->pointee(), blockShape), {{"padding", padding}});
}

void Builder::descriptorStore(Value *base, const std::vector<Value *> &shape,
                              const std::vector<Value *> &strides,
                              const std::vector<Value *> &offsets, Operand value) {
  requireValue(base, "descriptor base");
  Value *val = materialize(value);
  if (!val->type()->isTensor())
    error("desc.store: the value must be a block, found " + val->type()->str());
  size_t r = shapeOf(val).size();
  if (shape.size() != r || strides.size() != r || offsets.size() != r)
    error("desc.store: a rank-" + std::to_string(r) + " block needs " + std::to_string(r) +
          " dims, strides and offsets");
  val = castElem(*this, val, base->type()->pointee());
  std::vector<Value *> operands{val, base};
  for (const auto *vs : {&shape, &strides, &offsets})
    operands.insert(operands.end(), vs->begin(), vs->end());
  create(OpCode::DescriptorStore, operands, {});
}

void Builder::store(Value *ptr, Operand value, Value *mask,
                    const std::string &cache, const std::string &eviction) {
  requireValue(ptr, "store pointer");
  requirePointer(*this, "tl.store", ptr);
  Value *val = materialize(value);
  if (!ptr->type()->isTensor()) {
    if (val->type()->isTensor())
      error("tl.store: the value cannot be a tensor (" + val->type()->str() +
            ") when the pointer is a scalar (" + ptr->type()->str() + ")");
    if (mask && mask->type()->isTensor())
      error("tl.store: the mask cannot be a tensor (" + mask->type()->str() +
            ") when the pointer is a scalar (" + ptr->type()->str() + ")");
  }
  if (mask)
    requireMask(*this, "tl.store", mask);
  std::vector<Value *> vs{ptr, val};
  if (mask)
    vs.push_back(mask);
  std::vector<int64_t> ptrShape = shapeOf(ptr);
  broadcastAll(*this, vs);
  if (shapeOf(vs[0]) != ptrShape)
    error("tl.store: the value " + val->type()->str() +
          (mask ? " and mask " + mask->type()->str() : std::string()) +
          " must broadcast to the pointer's shape " + shapeStr(ptrShape) +
          ", not to " + shapeStr(shapeOf(vs[0])));
  ptr = boolPtrAsI8(*this, vs[0]);
  val = vs[1];
  if (mask)
    mask = vs[2];
  const Type *elt = ptr->type()->scalarType()->pointee();
  val = castElem(*this, val, elt);
  std::vector<Value *> operands{ptr, val};
  if (mask)
    operands.push_back(mask);
  Operation *st = create(OpCode::Store, operands, {});
  setCacheHints(*this, st, "tl.store", cache, eviction,
                {".wb", ".cg", ".cs", ".wt"});
}

namespace {
/// The sem/scope attributes of an atomic, checked (Triton's wording).
std::map<std::string, Attribute> atomicOrdering(Builder &b,
                                                const std::string &sem,
                                                const std::string &scope) {
  std::map<std::string, Attribute> attrs;
  if (!sem.empty()) {
    if (sem != "acquire" && sem != "release" && sem != "acq_rel" &&
        sem != "relaxed")
      b.error("Memory semantic " + sem +
              " not supported (sem must be \"acquire\", \"release\", "
              "\"acq_rel\" or \"relaxed\")");
    attrs["sem"] = sem;
  }
  if (!scope.empty()) {
    if (scope != "gpu" && scope != "cta" && scope != "sys")
      b.error("Memory scope " + scope +
              " not supported (scope must be \"gpu\", \"cta\" or \"sys\")");
    attrs["scope"] = scope;
  }
  return attrs;
}
} // namespace

Value *Builder::atomicCAS(Value *ptr, Operand cmpOp, Operand valOp,
                          const std::string &sem, const std::string &scope) {
  requireValue(ptr, "atomic pointer");
  requirePointer(*this, "tl.atomic_cas", ptr);
  auto attrs = atomicOrdering(*this, sem, scope);
  const Type *elt = ptr->type()->scalarType()->pointee();
  if (elt->isPointer())
    error("tl.atomic_cas does not support pointers to pointers (" +
          ptr->type()->str() + ")");
  DType d = elt->dtype();
  int bits = bitWidth(d);
  if (bits != 16 && bits != 32 && bits != 64)
    error("atomic_cas only supports elements with width {16, 32, 64}, got " +
          std::string(dtypeName(d)));
  Value *cmp = materialize(cmpOp), *val = materialize(valOp);
  for (Value *v : {cmp, val})
    if (isPtrLike(v))
      error("tl.atomic_cas expects numeric values, got " + v->type()->str());
  std::vector<int64_t> shape = shapeOf(ptr);
  cmp = castElem(*this, broadcastTo(cmp, shape), elt);
  val = castElem(*this, broadcastTo(val, shape), elt);
  return mk(*this, OpCode::AtomicCAS, {ptr, cmp, val}, val->type(),
            std::move(attrs));
}

Value *Builder::atomicRMW(const std::string &kind, Value *ptr, Operand valOp,
                          Value *mask, const std::string &sem,
                          const std::string &scope) {
  static const char *kinds[] = {"add", "max", "min", "and",
                                "or",  "xor", "xchg"};
  if (std::find_if(std::begin(kinds), std::end(kinds),
                   [&](const char *k) { return kind == k; }) == std::end(kinds))
    throw InternalError("builder: unknown atomic kind '" + kind + "'");
  requireValue(ptr, "atomic pointer");
  requirePointer(*this, ("tl.atomic_" + kind).c_str(), ptr);
  std::string fn = "tl.atomic_" + kind;
  const Type *elt = ptr->type()->scalarType()->pointee();
  if (elt->isPointer())
    error(fn + " does not support pointers to pointers (" + ptr->type()->str() +
          ")");
  DType d = elt->dtype();
  if ((d == DType::FP16 || d == DType::BF16) && kind != "add")
    error(fn + " does not support " + dtypeName(d));
  if (bitWidth(d) < 16 || d == DType::I16 || d == DType::U16)
    error(fn + " does not support " + std::string(dtypeName(d)));
  if ((kind == "and" || kind == "or" || kind == "xor") && isFloat(d))
    error(fn + " does not support " + std::string(dtypeName(d)));
  if ((kind == "max" || kind == "min") && isFloat(d) && d != DType::FP32 &&
      d != DType::FP64)
    error(fn + " does not support " + std::string(dtypeName(d)));
  Value *val = materialize(valOp);
  if (isPtrLike(val))
    error(fn + " expects a numeric value, got " + val->type()->str());
  std::vector<int64_t> shape = shapeOf(ptr);
  val = broadcastTo(val, shape);
  if (mask) {
    requireMask(*this, fn.c_str(), mask);
    mask = broadcastTo(mask, shape);
  }
  val = castElem(*this, val, elt);
  std::vector<Value *> operands{ptr, val};
  if (mask)
    operands.push_back(mask);
  auto attrs = atomicOrdering(*this, sem, scope);
  attrs["kind"] = kind;
  return mk(*this, OpCode::AtomicRMW, operands, val->type(), std::move(attrs));
}

// ---------------------------------------------------------------------------
// Reductions and dot
// ---------------------------------------------------------------------------

Value *Builder::reduce(Value *x, std::optional<int> axisIn,
                       const std::string &kind, bool keepDims) {
  requireValue(x, "reduce operand");
  static const char *kinds[] = {"sum",    "prod",   "max",    "min",
                                "argmax", "argmin", "xor_sum"};
  if (std::find_if(std::begin(kinds), std::end(kinds),
                   [&](const char *k) { return kind == k; }) == std::end(kinds))
    throw InternalError("builder: unknown reduction '" + kind + "'");
  std::string fn = "tl." + kind;
  if (!x->type()->isTensor())
    error(fn + " expects a tensor, got the scalar " + x->type()->str());
  if (isPtrLike(x))
    error(fn + " cannot reduce a tensor of pointers (" + x->type()->str() +
          ")");
  int origRank = x->type()->rank();
  int axis = 0;
  if (axisIn) {
    axis = *axisIn;
    if (axis < -origRank || axis >= origRank)
      error("invalid axis " + std::to_string(axis) + " for " + fn + " of " +
            x->type()->str() + ": expected " + std::to_string(-origRank) +
            " <= axis < " + std::to_string(origRank));
    if (axis < 0)
      axis += origRank;
  } else if (origRank > 1) {
    x = mk(*this, OpCode::Reshape, {x},
           Type::tensor(x->type()->element(), {x->type()->numElements()}));
  }

  // The dtype widening of standard.py's wrappers.
  DType d = elemDType(x);
  if (kind == "sum") {
    if (isInteger(d) && bitWidth(d) < 32)
      x = castElem(*this, x, scalarTy(isSigned(d) ? DType::I32 : DType::U32));
  } else if (kind == "max" || kind == "min" || kind == "argmax" ||
             kind == "argmin") {
    if (d == DType::BF16)
      x = castElem(*this, x, scalarTy(DType::FP32));
    if ((kind == "max" || kind == "min") && bitWidth(elemDType(x)) < 32)
      x = castElem(*this, x,
                   scalarTy(isFloat(elemDType(x)) ? DType::FP32 : DType::I32));
  } else if (kind == "xor_sum") {
    if (!isInteger(d))
      error("tl.xor_sum only supports integers, got " + x->type()->str());
  }

  std::vector<int64_t> shape = shapeOf(x);
  shape.erase(shape.begin() + axis);
  const Type *elem = (kind == "argmax" || kind == "argmin")
                         ? scalarTy(DType::I32)
                         : x->type()->element();
  Value *r = mk(*this, OpCode::Reduce, {x}, shapedType(elem, shape),
                {{"axis", int64_t(axis)}, {"kind", kind}});
  if (keepDims) {
    if (axisIn)
      r = expandDims(r, axis);
    else
      for (int i = 0; i < origRank; ++i)
        r = expandDims(r, 0);
  }
  return r;
}

Value *Builder::dot(Value *a, Value *b, Value *acc,
                    const std::string &inputPrecision, DType outDType,
                    int64_t maxNumImpreciseAcc) {
  requireValue(a, "dot lhs");
  requireValue(b, "dot rhs");
  const std::string shapes = a->type()->str() + " and " + b->type()->str();
  int rank = a->type()->rank();
  if (rank != b->type()->rank() || (rank != 2 && rank != 3))
    error("tl.dot expects two 2-D tensors (or two 3-D tensors for a batched "
          "product), got " +
          shapes);
  if (isPtrLike(a) || isPtrLike(b))
    error("tl.dot expects numeric tensors, got " + shapes);
  DType da = elemDType(a), db = elemDType(b);
  // fp8 formats the tensor cores do not take (fp8e4b15, fp8e4b8, fp8e5b16)
  // hold only values fp16 represents exactly: the operands become fp16 (and
  // an fp8 partner with them), as Triton upcasts them.
  if ((isFp8(da) && !isNativeFp8(da)) || (isFp8(db) && !isNativeFp8(db))) {
    if (isFp8(da))
      a = cast(a, DType::FP16, false, "");
    if (isFp8(db))
      b = cast(b, DType::FP16, false, "");
    da = elemDType(a);
    db = elemDType(b);
  }
  // fp8 operands may mix e4m3 and e5m2 (the tensor cores take either kind on
  // each side); every other dtype must match.
  bool fp8 = isFp8(da) && isFp8(db);
  if (!fp8) {
    auto ok = [](DType d) {
      return d == DType::I8 || d == DType::U8 || d == DType::FP16 ||
             d == DType::BF16 || d == DType::FP32 || d == DType::FP64;
    };
    if (!ok(da) || !ok(db))
      error("tl.dot supports operands of i8, f16, bf16, f32, f64 or fp8, got " +
            shapes);
    if (da != db)
      error("tl.dot: both operands must have the same dtype, got " + shapes);
  }
  // Batched: [B, M, K] @ [B, K, N]; the batch dims must agree exactly (no
  // broadcasting, as in Triton).
  const std::vector<int64_t> &sa = shapeOf(a), &sb = shapeOf(b);
  int o = rank - 2;
  if (rank == 3 && sa[0] != sb[0])
    error("tl.dot: incompatible batch dimensions of " + shapes + ": " +
          std::to_string(sa[0]) + " and " + std::to_string(sb[0]));
  int64_t M = sa[o], K = sa[o + 1], K2 = sb[o], N = sb[o + 1];
  if (K != K2)
    error("tl.dot: incompatible shapes " + shapes +
          ": the first operand's " + (rank == 3 ? "third" : "second") +
          " dimension (" + std::to_string(K) + ") must equal the second "
          "operand's " + (rank == 3 ? "second" : "first") + " (" +
          std::to_string(K2) + ")");
  // Any M, N and K (powers of two, as every tile): Triton's interpreter
  // takes them all, and its NVIDIA backend M and N below 16. On the GPU a
  // dot too small for the tensor cores' instruction shapes runs on FMAs
  // (accelerate_matmul.cpp), as fp32 "ieee" does.
  std::string prec = lower(inputPrecision);
  if (prec != "tf32" && prec != "tf32x3" && prec != "ieee")
    error("tl.dot input_precision must be one of tf32, tf32x3, ieee, got '" +
          inputPrecision + "'");
  if (maxNumImpreciseAcc < 0)
    error("tl.dot: max_num_imprecise_acc must be >= 0, got " +
          std::to_string(maxNumImpreciseAcc));

  DType ret;
  if (isInteger(da)) {
    if (da != DType::I8)
      error(std::string("tl.dot on integers supports only i8 operands, got ") +
            dtypeName(da));
    ret = DType::I32;
  } else if (outDType == DType::BF16) {
    error("tl.dot: out_dtype=bf16 is unsupported; use f32 or f16 and cast the "
          "result");
  } else if (da == DType::FP32 || da == DType::BF16) {
    ret = DType::FP32;
  } else if (da == DType::FP64) {
    ret = DType::FP64;
  } else {
    if (outDType != DType::FP16 && outDType != DType::FP32)
      error(std::string("tl.dot: out_dtype must be f16 or f32 for ") +
            dtypeName(da) + " operands, got " + dtypeName(outDType));
    ret = outDType;
  }
  std::vector<int64_t> retShape = {M, N};
  if (rank == 3)
    retShape.insert(retShape.begin(), sa[0]);
  const Type *retTy = Type::tensor(scalarTy(ret), retShape);
  if (acc) {
    if (acc->type() != retTy) {
      std::string hint;
      if (ret == DType::FP32 && da == DType::FP16 && acc->type()->isTensor() &&
          elemDType(acc) == DType::FP16)
        hint = " (pass out_dtype=tl.float16 to accumulate in f16)";
      error("tl.dot: the accumulator must be " + retTy->str() + ", got " +
            acc->type()->str() + hint);
    }
  } else {
    acc = constTensor(0.0, ret, retShape);
  }
  // max_num_imprecise_acc only means something for fp8 operands (how many
  // k-products Hopper's fp8 wgmma may add at reduced precision before
  // promoting to fp32), so other dtypes store 0 whatever was asked. Neither
  // the executor nor our GPU lowering accumulates imprecisely, so the value
  // never changes a result.
  return mk(*this, OpCode::Dot, {a, b, acc}, retTy,
            {{"input_precision", prec},
             {"max_num_imprecise_acc", fp8 ? maxNumImpreciseAcc : int64_t(0)}});
}

} // namespace tritium
