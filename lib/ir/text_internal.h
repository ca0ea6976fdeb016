// Helpers shared by the printer, parser and verifier of the textual IR.
// Private to lib/ir: the public surface is tritium/ir/printer.h.
#pragma once

#include "tritium/ir/ir.h"

#include <string>

namespace tritium::text {

/// Type text that also copes with a null type (for diagnostics).
std::string typeText(const Type *t);

/// Shortest text of `d` that parses back to the same double; always has a
/// `.`, an exponent, or is `inf` / `-inf` / `nan`, so it re-parses as a float.
std::string formatDouble(double d);

/// `"text"` with `"` `\` and control characters escaped.
std::string quote(const std::string &s);

/// One line naming `op` for an error message: its results, name, operands,
/// attributes and result types, with regions elided as `{...}`. Value names
/// match those of the printed enclosing function.
std::string opSummary(const Operation &op);

/// The printed name (`%x`, `%3`) of `v` as seen from `user`'s enclosing
/// function, or `%<<unknown>>` when `v` is not defined there.
std::string valueName(const Operation &user, const Value *v);

} // namespace tritium::text
