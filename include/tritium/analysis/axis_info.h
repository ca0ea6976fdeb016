// Axis info: what is known, per dimension, about the values of an integer or
// pointer tensor (or scalar). The GPU backend uses it to vectorise memory
// accesses: a load can read 16 bytes at once only where 4 consecutive
// pointers are contiguous, aligned, and masked alike.
//
// Per dim d (as Triton defines them):
//  - contiguity[d]: the tensor splits along d into runs of this many
//    elements whose values increase by 1 (pointers: by one element);
//  - divisibility[d]: the first value of each such run is a multiple of this
//    (a power of two; for pointers, in bytes);
//  - constancy[d]: the tensor splits along d into runs of this many equal
//    values.
// A scalar has rank 0 and one divisibility (contiguity = constancy = 1).
//
// Seeds: function arguments with `tt.divisibility = N`, integer constants,
// tt.make_range; rules for splat, broadcast, expand_dims, add/sub/mul,
// addptr, comparisons, select, shifts, casts and scf.for induction
// variables and loop-carried values (to a fixed point).
#pragma once

#include "tritium/ir/ir.h"
#include "tritium/ir/op_support.h"

#include <map>
#include <optional>
#include <vector>

namespace tritium {

struct AxisInfo {
  std::vector<int64_t> contiguity, divisibility, constancy;
  /// Known when every element has this value (integer constants, splats of
  /// them).
  std::optional<int64_t> constant;

  int rank() const { return (int)contiguity.size(); }
  /// Nothing known, for a value of `shape` (empty for a scalar).
  static AxisInfo unknown(const std::vector<int64_t> &shape);
  /// The divisibility of a scalar (dim 0 of a rank-0 info).
  int64_t scalarDivisibility() const {
    return divisibility.empty() ? 1 : divisibility[0];
  }
  bool operator==(const AxisInfo &o) const = default;
};

/// Whether the analysis has a rule for `code`: its own, or the general one
/// (unknown; elementwise ops keep shared constancy) chosen on purpose.
/// visitOp refuses an op without a decision; the op-coverage test asks here.
OpSupport axisInfoSupport(OpCode code);

/// The largest power of two dividing v, capped (0 is divisible by anything).
int64_t highestPowOf2Divisor(int64_t v);

class AxisInfoAnalysis {
public:
  /// Analyses every value of `f` (tile IR or GPU IR).
  explicit AxisInfoAnalysis(Function &f);
  /// The info of `v`; `unknown` for values it has not seen.
  AxisInfo get(Value *v) const;

private:
  void visitBlock(Block &b);
  void visitOp(Operation &op);
  void set(Value *v, AxisInfo info) { info_[v] = std::move(info); }
  std::map<Value *, AxisInfo> info_;
};

} // namespace tritium
