// Constants of the tile IR and the evaluation of pure elementwise ops on
// them, shared by the passes (canonicalize, unroll, licm, ...).
//
// A constant is `arith.constant {value = ...} : T`; a tensor constant is a
// splat of one scalar, so every constant is one ConstValue plus its type.
#pragma once

#include "tritium/ir/ir.h"

#include <optional>
#include <vector>

namespace tritium {

/// One scalar value of a given dtype, normalised to that dtype: integers keep
/// only their low bitWidth(dtype) bits, floats are rounded to the dtype's
/// precision (fp8 values are kept as given: nothing folds fp8 arithmetic).
struct ConstValue {
  DType dtype = DType::I32;
  uint64_t bits = 0; // integer dtypes: the two's-complement bits
  double f = 0;      // float dtypes

  static ConstValue ofInt(DType t, uint64_t bits);
  static ConstValue ofFloat(DType t, double v);
  static ConstValue ofBool(bool b) { return ofInt(DType::I1, b ? 1 : 0); }

  bool isFloat() const { return tritium::isFloat(dtype); }
  /// The bits read as a signed / unsigned number of the dtype's width.
  int64_t sext() const;
  uint64_t zext() const;
  /// The value as the dtype's Python-level number (signed dtypes
  /// sign-extend, unsigned ones zero-extend).
  int64_t asInt() const { return isSigned(dtype) ? sext() : (int64_t)zext(); }
  bool isZero() const { return isFloat() ? f == 0 : bits == 0; }
  /// The attribute `arith.constant` stores: bool for i1, int64 for other
  /// integers (u64 values above INT64_MAX keep their bits), double for
  /// floats.
  Attribute toAttr() const;
  /// Identical values (floats compared bit for bit: -0.0 != 0.0, NaN == NaN).
  bool operator==(const ConstValue &o) const;
};

/// Rounds `x` to the nearest value of float dtype `t` (ties to even;
/// overflow gives +-inf). fp8 dtypes are returned unchanged.
double roundToDType(double x, DType t);

/// The value of `v` when it is the result of an arith.constant of a scalar
/// or tensor-of-scalar type.
std::optional<ConstValue> getConstant(const Value *v);
/// True when `v` is a constant integer (or float) equal to `n`.
bool isConstantInt(const Value *v, int64_t n);
bool isConstantFloat(const Value *v, double x);

/// Evaluates a PURE|ELEM op (arith.*, math.*, casts; not addptr and the
/// pointer casts) on constant operands, giving a value of `resultType`'s
/// dtype. nullopt when the result is not defined or not exactly known at
/// compile time: integer division by zero, signed overflow of division,
/// shifts by the width or more, float->int conversions out of range, fp8
/// arithmetic, unknown predicates, ...
std::optional<ConstValue>
foldElementwise(OpCode code, const std::map<std::string, Attribute> &attrs,
                const std::vector<ConstValue> &operands, DType resultType);

/// Whether the integer value v is never negative: a program id or grid
/// size, a tl.arange starting at 0 or above, a non-negative constant, one
/// of those passed through the shape ops or extended, and sums, products,
/// quotients, remainders, ands, mins and maxes of them that cannot wrap in
/// v's type (bounded from program ids < 2^31 and the ranges' ends).
bool knownNonNegative(const Value *v);

/// Like getConstant, but also folds through chains of pure elementwise ops
/// and splat/broadcast/reshape/expand_dims of constants, up to `depth` ops
/// deep (unroll uses it for loop bounds computed from an outer iv).
std::optional<ConstValue> evaluateConstant(const Value *v, int depth = 16);

/// A detached `arith.constant {value = c} : type` (type is c's scalar dtype
/// or a tensor of it).
std::unique_ptr<Operation> makeConstant(const Type *type, const ConstValue &c,
                                        Location loc);
/// Inserts `makeConstant(...)` into `block` before `pos`; returns its result.
Value *insertConstant(Block &block, Block::iterator pos, const Type *type,
                      const ConstValue &c, Location loc);

} // namespace tritium
