// The builder's raw layer: locations, functions, insertion points, constants
// and the control-flow skeletons. The semantic helpers (Triton's typing rules)
// live in semantics.cpp and tensor_semantics.cpp.
#include "builder_internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace tritium {

namespace builder_detail {

const Type *shapedType(const Type *elem, const std::vector<int64_t> &shape) {
  return shape.empty() ? elem : Type::tensor(elem, shape);
}

const std::vector<int64_t> &shapeOf(const Value *v) {
  return v->type()->shape();
}

int dtypeKind(DType d) {
  if (d == DType::I1)
    return 0;
  return isInteger(d) ? 1 : 2;
}

__int128 intMin(DType d) {
  if (!isSigned(d))
    return 0;
  return -((__int128)1 << (bitWidth(d) - 1));
}

__int128 intMax(DType d) {
  if (!isSigned(d))
    return ((__int128)1 << bitWidth(d)) - 1;
  return ((__int128)1 << (bitWidth(d) - 1)) - 1;
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

static std::string int128Str(__int128 v) {
  if (v == 0)
    return "0";
  bool neg = v < 0;
  unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
  std::string s;
  while (u) {
    s += char('0' + (int)(u % 10));
    u /= 10;
  }
  if (neg)
    s += '-';
  std::reverse(s.begin(), s.end());
  return s;
}

std::string describe(const Operand &o) {
  switch (o.kind) {
  case Operand::Kind::Value:
    return o.value ? o.value->type()->str() : "<null value>";
  case Operand::Kind::Bool:
    return std::string("bool literal ") + (o.b ? "True" : "False");
  case Operand::Kind::Int:
    return "int literal " + int128Str(literalInt(o));
  case Operand::Kind::Float: {
    std::ostringstream os;
    os << "float literal " << o.f;
    return os.str();
  }
  }
  return "?";
}

DType literalDType(const Operand &o) {
  switch (o.kind) {
  case Operand::Kind::Bool:
    return DType::I1;
  case Operand::Kind::Int: {
    if (o.u64)
      return DType::U64;
    int64_t v = o.i;
    if (v >= -(int64_t(1) << 31) && v < (int64_t(1) << 31))
      return DType::I32;
    if (v >= (int64_t(1) << 31) && v < (int64_t(1) << 32))
      return DType::U32;
    return DType::I64;
  }
  case Operand::Kind::Float: {
    // Triton: fp32 unless the magnitude is outside fp32's normal range
    // (0, inf and nan stay fp32).
    double a = std::fabs(o.f);
    double minNormal = std::ldexp(1.0, -126);
    double maxF32 = (double)std::numeric_limits<float>::max();
    if (std::isinf(a) || a == 0.0 || std::isnan(o.f) ||
        (a >= minNormal && a <= maxF32))
      return DType::FP32;
    return DType::FP64;
  }
  case Operand::Kind::Value:
    break;
  }
  throw InternalError("builder: literalDType of a non-literal operand");
}

__int128 literalInt(const Operand &o) {
  switch (o.kind) {
  case Operand::Kind::Bool:
    return o.b ? 1 : 0;
  case Operand::Kind::Int:
    return o.u64 ? (__int128)(uint64_t)o.i : (__int128)o.i;
  default:
    throw InternalError("builder: literalInt of a non-integer operand");
  }
}

double literalDouble(const Operand &o) {
  switch (o.kind) {
  case Operand::Kind::Bool:
    return o.b ? 1.0 : 0.0;
  case Operand::Kind::Int:
    return o.u64 ? (double)(uint64_t)o.i : (double)o.i;
  case Operand::Kind::Float:
    return o.f;
  default:
    throw InternalError("builder: literalDouble of a value operand");
  }
}

bool literalNegative(const Operand &o) {
  if (o.kind == Operand::Kind::Int)
    return !o.u64 && o.i < 0;
  if (o.kind == Operand::Kind::Float)
    return o.f < 0;
  return false;
}

// The `value` attribute of arith.constant: bool for i1, int for integers (the
// bit pattern, as int64, for u64 values beyond INT64_MAX), double for floats.
static Attribute constantAttr(const Operand &o, DType t) {
  if (t == DType::I1) {
    if (o.kind == Operand::Kind::Float)
      return o.f != 0.0;
    return literalInt(o) != 0;
  }
  if (isInteger(t)) {
    if (o.kind == Operand::Kind::Float)
      return (int64_t)o.f;
    return (int64_t)literalInt(o);
  }
  return literalDouble(o);
}

Value *literalConstant(Builder &b, const Operand &o, DType t,
                       const std::vector<int64_t> &shape) {
  return b
      .create(OpCode::Constant, {}, {shapedType(scalarTy(t), shape)},
              {{"value", constantAttr(o, t)}})
      ->result(0);
}

Value *constantLike(Builder &b, double v, DType t, const Value *like) {
  return literalConstant(b, Operand::ofFloat(v), t, shapeOf(like));
}

} // namespace builder_detail

using namespace builder_detail;

// ---------------------------------------------------------------------------
// Locations, functions, insertion points
// ---------------------------------------------------------------------------

void Builder::error(const std::string &msg) const {
  throw UserError(msg, loc_);
}

namespace {

/// The function whose body (possibly nested in ops) holds `b`; null for a
/// block not yet attached to a function.
Function *enclosingFunction(Block *b) {
  while (b) {
    Region *r = b->parentRegion();
    if (!r)
      return nullptr;
    if (r->parentFunction())
      return r->parentFunction();
    Operation *op = r->parentOp();
    if (!op)
      return nullptr;
    b = op->parentBlock();
  }
  return nullptr;
}

std::string typeListStr(const std::vector<const Type *> &ts) {
  std::string s = "(";
  for (size_t i = 0; i < ts.size(); ++i)
    s += (i ? ", " : "") + ts[i]->str();
  return s + ")";
}

std::vector<const Type *> typesOf(const std::vector<Value *> &vs) {
  std::vector<const Type *> ts;
  for (Value *v : vs)
    ts.push_back(v->type());
  return ts;
}

unsigned numRegionsOf(OpCode code) {
  switch (code) {
  case OpCode::For:
    return 1;
  case OpCode::If:
  case OpCode::While:
    return 2;
  default:
    return (unsigned)opInfo(code).numRegions;
  }
}

} // namespace

Function *Builder::createFunction(const std::string &name,
                                  const std::vector<const Type *> &argTypes,
                                  const std::vector<std::string> &argNames) {
  if (module_.lookup(name))
    error("function '" + name + "' is already defined in this module");
  if (!argNames.empty() && argNames.size() != argTypes.size())
    throw InternalError(
        "builder: createFunction got " + std::to_string(argTypes.size()) +
        " argument types but " + std::to_string(argNames.size()) + " names");
  auto fn = std::make_unique<Function>(name, argTypes,
                                       std::vector<const Type *>{}, loc_);
  Function *f = module_.addFunction(std::move(fn));
  for (size_t i = 0; i < argNames.size(); ++i)
    f->arg((unsigned)i)->nameHint = argNames[i];
  currentFunction_ = f;
  setInsertionPointToEnd(&f->entry());
  return f;
}

void Builder::setInsertionPointToEnd(Block *b) {
  ip_.block = b;
  ip_.pos = b->ops().end();
}

void Builder::setInsertionPoint(Operation *before) {
  Block *b = before->parentBlock();
  if (!b)
    throw InternalError("builder: setInsertionPoint before a detached op");
  ip_.block = b;
  ip_.pos = b->find(before);
}

Block *Builder::newDetachedBlock() {
  detached_.push_back(std::make_unique<Block>(nullptr));
  return detached_.back().get();
}

void Builder::discardBlock(Block *b) {
  auto it = std::find_if(detached_.begin(), detached_.end(),
                         [&](const auto &p) { return p.get() == b; });
  if (it == detached_.end())
    throw InternalError(
        "builder: discardBlock of a block the builder does not own");
  if (ip_.block == b)
    ip_ = InsertPoint{};
  detached_.erase(it);
}

// ---------------------------------------------------------------------------
// Raw creation
// ---------------------------------------------------------------------------

Operation *Builder::create(OpCode code, const std::vector<Value *> &operands,
                           const std::vector<const Type *> &resultTypes,
                           std::map<std::string, Attribute> attrs) {
  if (!ip_.block)
    throw InternalError(std::string("builder: no insertion point to create ") +
                        opInfo(code).name);
  for (Value *v : operands)
    if (!v)
      throw InternalError(std::string("builder: null operand for ") +
                          opInfo(code).name);
  auto op = Operation::create(code, operands, resultTypes, std::move(attrs),
                              loc_, numRegionsOf(code));
  return ip_.block->insert(ip_.pos, std::move(op));
}

Value *Builder::constInt(int64_t v, DType t) {
  if (!isInteger(t))
    throw InternalError(std::string("builder: constInt of non-integer type ") +
                        dtypeName(t));
  return literalConstant(*this, Operand::ofInt(v), t, {});
}

Value *Builder::constFloat(double v, DType t) {
  if (!isFloat(t))
    throw InternalError(std::string("builder: constFloat of non-float type ") +
                        dtypeName(t));
  return literalConstant(*this, Operand::ofFloat(v), t, {});
}

Value *Builder::constBool(bool v) {
  return literalConstant(*this, Operand::ofBool(v), DType::I1, {});
}

Value *Builder::constTensor(double v, DType t,
                            const std::vector<int64_t> &shape) {
  return literalConstant(*this, Operand::ofFloat(v), t, shape);
}

Value *Builder::materialize(const Operand &o) {
  if (o.kind == Operand::Kind::Value) {
    if (!o.value)
      throw InternalError("builder: null value operand");
    return o.value;
  }
  return literalConstant(*this, o, literalDType(o), {});
}

// ---------------------------------------------------------------------------
// Control flow
// ---------------------------------------------------------------------------

namespace {

std::unique_ptr<Block> takeDetached(std::vector<std::unique_ptr<Block>> &owned,
                                    Block *b, const char *what) {
  auto it = std::find_if(owned.begin(), owned.end(),
                         [&](const auto &p) { return p.get() == b; });
  if (it == owned.end())
    throw InternalError(std::string("builder: ") + what +
                        " block was not created by newDetachedBlock (or was "
                        "already given to an op)");
  std::unique_ptr<Block> out = std::move(*it);
  owned.erase(it);
  return out;
}

/// Operand types of the block's terminator when it is `code`, else null.
const Operation *terminatorOf(const Block *b, OpCode code) {
  Operation *t = b->terminator();
  return t && t->code() == code ? t : nullptr;
}

} // namespace

Operation *Builder::createFor(Operand lb, Operand ub, Operand step,
                              const std::vector<Value *> &inits) {
  Value *bounds[3] = {materialize(lb), materialize(ub), materialize(step)};
  const char *names[3] = {"lower bound", "upper bound", "step"};
  for (int i = 0; i < 3; ++i) {
    const Type *t = bounds[i]->type();
    if (!t->isScalar() || !isInteger(t->dtype()) || t->dtype() == DType::I1)
      error(std::string("for loop ") + names[i] +
            " must be an integer scalar, got " + t->str());
  }
  // Triton: the induction variable takes the integer promotion of the three.
  auto promote = [](DType a, DType b) {
    bool as = isSigned(a), bs = isSigned(b);
    int aw = bitWidth(a), bw = bitWidth(b);
    if (as == bs)
      return aw > bw ? a : b;
    if (!as)
      return aw >= bw ? a : b;
    return bw >= aw ? b : a;
  };
  DType iv =
      promote(promote(bounds[0]->type()->dtype(), bounds[1]->type()->dtype()),
              bounds[2]->type()->dtype());
  for (Value *&v : bounds)
    v = castElem(*this, v, scalarTy(iv));
  std::vector<Value *> operands(bounds, bounds + 3);
  operands.insert(operands.end(), inits.begin(), inits.end());
  Operation *op = create(OpCode::For, operands, typesOf(inits));
  Block *body = op->region(0).addBlock();
  body->addArgument(scalarTy(iv));
  for (Value *v : inits)
    body->addArgument(v->type());
  return op;
}

Operation *Builder::createIf(Value *cond, Block *thenBlock, Block *elseBlock) {
  if (!cond || !thenBlock)
    throw InternalError("builder: createIf needs a condition and a then block");
  if (cond->type()->isTensor())
    error("if condition must be a scalar, got " + cond->type()->str());
  cond = toBool(*this, cond);
  // A branch left without a terminator yields nothing.
  for (Block *blk : {thenBlock, elseBlock}) {
    if (!blk || blk->terminator())
      continue;
    InsertPoint saved = ip_;
    setInsertionPointToEnd(blk);
    create(OpCode::Yield, {}, {});
    ip_ = saved;
  }

  std::vector<const Type *> results;
  if (const Operation *y = terminatorOf(thenBlock, OpCode::Yield))
    for (Value *v : y->operands())
      results.push_back(v->type());
  if (elseBlock) {
    std::vector<const Type *> elseTypes;
    if (const Operation *y = terminatorOf(elseBlock, OpCode::Yield))
      for (Value *v : y->operands())
        elseTypes.push_back(v->type());
    if (elseTypes != results)
      error("the then branch yields " + typeListStr(results) +
            " but the else branch yields " + typeListStr(elseTypes));
  } else if (!results.empty()) {
    error("an if without else cannot yield values, got " +
          typeListStr(results));
  }

  auto thenOwned = takeDetached(detached_, thenBlock, "then");
  std::unique_ptr<Block> elseOwned;
  if (elseBlock)
    elseOwned = takeDetached(detached_, elseBlock, "else");
  Operation *op = create(OpCode::If, {cond}, results);
  op->region(0).addBlock(std::move(thenOwned));
  if (elseOwned)
    op->region(1).addBlock(std::move(elseOwned));
  return op;
}

Operation *Builder::createWhile(const std::vector<Value *> &inits,
                                Block *before, Block *after) {
  if (!before || !after)
    throw InternalError("builder: createWhile needs both blocks");
  std::vector<const Type *> initTypes = typesOf(inits);
  std::vector<const Type *> beforeArgs;
  for (auto &a : before->arguments())
    beforeArgs.push_back(a->type());
  if (beforeArgs != initTypes)
    error("while loop: the condition block takes " + typeListStr(beforeArgs) +
          " but the loop starts with " + typeListStr(initTypes));
  const Operation *cond = terminatorOf(before, OpCode::Condition);
  if (!cond)
    throw InternalError(
        "builder: while's before block must end with scf.condition");
  std::vector<const Type *> forwarded;
  for (unsigned i = 1; i < cond->numOperands(); ++i)
    forwarded.push_back(cond->operand(i)->type());
  std::vector<const Type *> afterArgs;
  for (auto &a : after->arguments())
    afterArgs.push_back(a->type());
  if (afterArgs != forwarded)
    error("while loop: the body takes " + typeListStr(afterArgs) +
          " but the condition forwards " + typeListStr(forwarded));
  if (const Operation *y = terminatorOf(after, OpCode::Yield)) {
    std::vector<const Type *> yielded;
    for (Value *v : y->operands())
      yielded.push_back(v->type());
    if (yielded != initTypes)
      error("while loop: the body yields " + typeListStr(yielded) +
            " but the loop-carried values have types " +
            typeListStr(initTypes));
  } else {
    throw InternalError("builder: while's after block must end with scf.yield");
  }

  auto beforeOwned = takeDetached(detached_, before, "while before");
  auto afterOwned = takeDetached(detached_, after, "while after");
  Operation *op = create(OpCode::While, inits, forwarded);
  op->region(0).addBlock(std::move(beforeOwned));
  op->region(1).addBlock(std::move(afterOwned));
  return op;
}

void Builder::yield(const std::vector<Value *> &values) {
  // A for body's yield must keep the loop-carried types.
  if (ip_.block) {
    Operation *parent = ip_.block->parentOp();
    if (parent && parent->code() == OpCode::For) {
      std::vector<const Type *> carried;
      for (unsigned i = 1; i < ip_.block->numArguments(); ++i)
        carried.push_back(ip_.block->argument(i)->type());
      std::vector<const Type *> got = typesOf(values);
      if (got != carried)
        error("loop-carried values have types " + typeListStr(carried) +
              " at the start of the loop but " + typeListStr(got) +
              " at the end of an iteration");
    }
  }
  create(OpCode::Yield, values, {});
}

void Builder::condition(Value *cond, const std::vector<Value *> &forwarded) {
  if (cond->type()->isTensor())
    error("while condition must be a scalar, got " + cond->type()->str());
  cond = toBool(*this, cond);
  std::vector<Value *> ops{cond};
  ops.insert(ops.end(), forwarded.begin(), forwarded.end());
  create(OpCode::Condition, ops, {});
}

void Builder::ret(const std::vector<Value *> &values) {
  Function *f = enclosingFunction(ip_.block);
  if (!f)
    f = currentFunction_;
  if (!f)
    throw InternalError("builder: ret outside of a function");
  std::vector<const Type *> got = typesOf(values);
  bool seenReturn = false;
  f->walk([&](Operation *op) {
    if (op->code() == OpCode::Return)
      seenReturn = true;
  });
  if (!seenReturn && f->resultTypes().empty()) {
    f->resultTypes() = got;
  } else if (f->resultTypes() != got) {
    error("function '" + f->name() + "' returns " + typeListStr(got) +
          " here but " + typeListStr(f->resultTypes()) + " elsewhere");
  }
  create(OpCode::Return, values, {});
}

std::vector<Value *> Builder::call(Function *callee,
                                   const std::vector<Value *> &args) {
  std::vector<const Type *> params = callee->argTypes();
  std::vector<const Type *> got = typesOf(args);
  if (params != got)
    error("call to '" + callee->name() + "' expects arguments " +
          typeListStr(params) + ", got " + typeListStr(got));
  Operation *op = create(OpCode::Call, args, callee->resultTypes(),
                         {{"callee", callee->name()}});
  return op->results();
}

} // namespace tritium
