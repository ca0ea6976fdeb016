// Integer division by a constant as a multiply-high and shifts (Hacker's
// Delight, chapter 10; Granlund and Montgomery, PLDI 1994).
//
// ptxas turns div/rem by a register or by an immediate into the generic
// sequence (a float reciprocal and two corrections, about 20 instructions);
// LLVM, under Triton, strength-reduces a constant divisor before PTX. Index
// arithmetic is full of them (`x // BLOCK`, `idx % 128` in every Inductor
// kernel, the matmul's `tl.cdiv(M, BLOCK_M)`), so the PTX emitter lowers a
// constant divisor with the plan below. `applyDivision` evaluates the plan
// step by step, as the emitted PTX does, for the unit tests.
#pragma once

#include <cstdint>

namespace tritium {

struct DivisionPlan {
  enum class Kind {
    Generic,  // no plan: d is 0, or signed -1 or the most negative value
    Identity, // d == 1: q = n
    Shift,    // d = +-2^k, k >= 1
    Magic,    // q from mul.hi by `magic`
  };
  Kind kind = Kind::Generic;
  int bits = 32;
  bool isSigned = false;
  int64_t divisor = 0;
  int shift = 0;        // Shift: k; Magic: the post shift
  uint64_t magic = 0;   // Magic: the multiplier (bits wide)
  bool add = false;     // Magic, unsigned: the 33/65-bit multiplier form
  /// Magic, signed: add the dividend after mul.hi (+1) or subtract it (-1).
  int correction = 0;
};

/// The plan for n / d with n of `bits` (32 or 64) bits, signed or not (an
/// unsigned d is given by its bits). A signed division whose dividend is
/// known to be >= 0 and whose divisor is > 0 may use the unsigned plan,
/// which needs no sign fix-up.
DivisionPlan planDivision(int bits, bool isSigned, int64_t d);

/// n / d (truncating toward zero, as PTX's div) by following `p`'s steps
/// in `p.bits`-bit two's-complement arithmetic. n is given in the low bits.
uint64_t applyDivision(const DivisionPlan &p, uint64_t n);

} // namespace tritium
