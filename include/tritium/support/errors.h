// Source locations and the error kinds every layer throws. Below the IR: a
// Location is plain data (a Python source position), and the runtime reports
// InternalError without knowing any compiler header.
#pragma once

#include <stdexcept>
#include <utility>
#include <string>

namespace tritium {

/// Where an op came from in the user's Python source. line/col are 1-based
/// (col as Python's ast gives it plus one); line 0 means unknown.
struct Location {
  std::string file;
  int line = 0;
  int col = 0;
  /// A position in the IR text an op was parsed from, given to ops written
  /// without `loc(...)` so that the verifier's and the passes' errors still
  /// point at a line; the printer omits it (the text round-trips).
  bool implicit = false;
  bool known() const { return line > 0; }
  /// `"file.py":12:5`, or `unknown`.
  std::string str() const;
  bool operator==(const Location &o) const = default;
};

/// A mistake in the user's kernel (shape mismatch, bad dtype, ...). The
/// Python layer turns it into tritium.CompilationError, quoting the source
/// line of `loc` with a caret.
class UserError : public std::runtime_error {
public:
  UserError(const std::string &msg, Location loc)
      : std::runtime_error(msg), loc(std::move(loc)) {}
  Location loc;
};

/// A bug in tritium itself: says which pass and which op.
class InternalError : public std::runtime_error {
public:
  explicit InternalError(const std::string &msg) : std::runtime_error(msg) {}
};

/// Malformed IR text (parser) or IR that fails the verifier.
class IRError : public std::runtime_error {
public:
  IRError(const std::string &msg, Location loc)
      : std::runtime_error(msg), loc(std::move(loc)) {}
  Location loc;
};

} // namespace tritium
