// Textual IR: print and parse. `parse(print(m))` prints to the same text.
#pragma once

#include "tritium/ir/ir.h"

#include <memory>
#include <string>

namespace tritium {

struct PrintOptions {
  /// Append `loc("file.py":line:col)` to every op and function.
  bool printLocations = true;
};

std::string print(const Module &m, const PrintOptions &opts = {});
std::string print(const Function &f, const PrintOptions &opts = {});
/// One op (and its regions), for error messages.
std::string print(const Operation &op, const PrintOptions &opts = {});

/// Parses a module; throws IRError with the line and column of `filename`
/// (the .tir file, not the Python source) on malformed text.
std::unique_ptr<Module> parseModule(const std::string &text,
                                    const std::string &filename = "<input>");

/// Turns the text of a tensor layout, as Layout::str() prints it (from `#` up
/// to the tensor type's closing `>`, e.g. `#ttg.blocked<{...}>`), for a
/// tensor of `shape`, into an interned Layout; throws (any std::exception)
/// when the text is not a layout. Set by the GPU library
/// (gpu::registerLayoutParser) so that GPU IR parses; without one, a layout
/// in the text is a parse error. Returns the previous parser.
using LayoutParser = const Layout *(*)(const std::string &text,
                                       const std::vector<int64_t> &shape);
LayoutParser setLayoutParser(LayoutParser parser);

} // namespace tritium
