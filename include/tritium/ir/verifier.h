// Structural and type checks of the IR.
#pragma once

#include "tritium/ir/ir.h"

namespace tritium {

/// Checks every op of `m`: operand counts and types, result types, attributes,
/// terminators, region shapes, SSA dominance (a value is used only after its
/// definition, in the same block or a nested region), calls matching their
/// callee's signature. Throws IRError naming the op (printed) and its
/// location on the first violation.
void verify(const Module &m);
void verify(const Function &f);

} // namespace tritium
