// The axis info of every integer and pointer value of a function, as text:
// what `tritium-opt --test-print-axis-info` prints, so that the analysis is
// tested as a lit file (test/analysis/axis-info.tir).
#pragma once

#include "tritium/ir/ir.h"

#include <string>

namespace tritium {

/// One line per integer or pointer value of `f`, in program order (the
/// function's arguments first):
///   @f %name: contiguity = [..], divisibility = [..], constancy = [..]
/// with `, constant = N` where every element is known. A value without a
/// name is called after its op and result index (`arith.addi#0`).
std::string axisInfoReport(Function &f);

} // namespace tritium
