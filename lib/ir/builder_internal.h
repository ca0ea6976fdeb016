// Helpers shared by the builder's source files (builder.cpp: raw creation and
// control flow; semantics.cpp: Triton's typing rules for arithmetic, casts and
// math; tensor_semantics.cpp: shapes, memory, reductions and dot). Not a
// public header.
#pragma once

#include "tritium/ir/builder.h"

#include <string>
#include <vector>

namespace tritium::builder_detail {

// ---- types ---------------------------------------------------------------

inline const Type *scalarTy(DType d) { return Type::scalar(d); }
/// `elem` with `shape`, or `elem` itself for an empty shape (a 0-d result is a
/// scalar in the IR).
const Type *shapedType(const Type *elem, const std::vector<int64_t> &shape);
/// The shape of a value's type; empty for scalars and pointers.
const std::vector<int64_t> &shapeOf(const Value *v);
inline bool isTensorValue(const Value *v) { return v->type()->isTensor(); }
/// The element's dtype; only for values whose element is a scalar (not a
/// pointer).
inline DType elemDType(const Value *v) {
  return v->type()->scalarType()->dtype();
}
inline bool isPtrLike(const Value *v) { return v->type()->isPointerLike(); }
/// Triton's kinds of dtypes, ordered: bool < integer < floating.
int dtypeKind(DType d);
/// Smallest and largest value of an integer dtype (i1 is 0..1, as in Triton).
__int128 intMin(DType d);
__int128 intMax(DType d);

std::string shapeStr(const std::vector<int64_t> &shape);
std::string describe(const Operand &o);

// ---- literals ------------------------------------------------------------

/// Triton's type of a bare Python literal (`to_tensor_type`).
DType literalDType(const Operand &o);
/// The literal's value as a 128-bit integer (bools are 0/1; floats are not
/// allowed).
__int128 literalInt(const Operand &o);
double literalDouble(const Operand &o);
/// True for a negative int/float literal.
bool literalNegative(const Operand &o);

/// `arith.constant` of dtype `t` holding the literal, shaped like `shape`
/// (scalar when empty). Checks nothing.
Value *literalConstant(Builder &b, const Operand &o, DType t,
                       const std::vector<int64_t> &shape);
/// A splat constant of `t` (i1 from v != 0) with the shape of `like`.
Value *constantLike(Builder &b, double v, DType t, const Value *like);

// ---- casts and shapes (semantics.cpp / tensor_semantics.cpp) --------------

/// Element-type conversion following Triton's `semantic.cast`: `dstElem` is
/// a scalar or pointer type; the shape is kept. A non-empty `rounding`
/// ("rtz") is put on the arith.truncf ops the conversion makes.
Value *castElem(Builder &b, Value *x, const Type *dstElem,
                const std::string &rounding = "");
/// Broadcasts every value of `vs` to their common shape (numpy rules).
void broadcastAll(Builder &b, std::vector<Value *> &vs);
/// The numpy broadcast of two shapes; throws UserError naming both types.
std::vector<int64_t> broadcastShapes(Builder &b, const Value *x,
                                     const Value *y);
/// Converts any int/float/pointer value to i1 (`x != 0`).
Value *toBool(Builder &b, Value *x);

} // namespace tritium::builder_detail
