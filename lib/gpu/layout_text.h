// What the layout kinds' files share (internal to lib/gpu): interning by
// text and the small lexer their text forms are read with.
#pragma once

#include "tritium/gpu/linear_layout.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tritium::gpu {

/// Interned layouts of one family (GPULayout, SharedLayout), keyed by their
/// text, which says everything about them. Never freed: types hold raw
/// pointers to them for the life of the process.
template <class Base> class InternTable {
public:
  static InternTable &get() {
    static InternTable *t = new InternTable();
    return *t;
  }
  template <class T> const T *intern(std::unique_ptr<T> l) {
    std::string key = l->str();
    std::lock_guard<std::mutex> g(mu_);
    auto &slot = byText_[key];
    if (!slot)
      slot = std::move(l);
    return static_cast<const T *>(slot.get());
  }

private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Base>> byText_;
};

/// Reads layout text at `s[p]`; every method skips blanks first and leaves
/// `p` past what it read (callers keep a copy to undo a failed parse).
struct LayoutLexer {
  const std::string &s;
  size_t p;

  void ws() {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\n' || s[p] == '\t'))
      ++p;
  }
  bool eat(const std::string &t) {
    ws();
    if (s.compare(p, t.size(), t) != 0)
      return false;
    p += t.size();
    return true;
  }
  /// An optionally negative integer of at most 18 digits (so that it fits
  /// in int64; a longer one is malformed text, not an exception).
  bool integer(int64_t &v) {
    ws();
    size_t q = p;
    if (q < s.size() && s[q] == '-')
      ++q;
    size_t digits = q;
    while (q < s.size() && s[q] >= '0' && s[q] <= '9' && q - digits < 18)
      ++q;
    if (q == digits)
      return false;
    v = std::stoll(s.substr(p, q - p));
    p = q;
    return true;
  }
  /// An integer in [0, 2^31): the parameters a layout keeps as int.
  bool smallInt(int64_t &v) {
    size_t save = p;
    if (integer(v) && v >= 0 && v < (int64_t(1) << 31))
      return true;
    p = save;
    return false;
  }
  bool boolean(bool &v) {
    if (eat("true"))
      return v = true, true;
    if (eat("false"))
      return v = false, true;
    return false;
  }
  bool list(std::vector<int64_t> &out) {
    out.clear();
    if (!eat("["))
      return false;
    if (eat("]"))
      return true;
    do {
      int64_t v;
      if (!integer(v))
        return false;
      out.push_back(v);
    } while (eat(","));
    return eat("]");
  }
  bool listOfLists(std::vector<Basis> &out) {
    out.clear();
    if (!eat("["))
      return false;
    if (eat("]"))
      return true;
    do {
      Basis b;
      if (!list(b))
        return false;
      out.push_back(b);
    } while (eat(","));
    return eat("]");
  }
  /// `name =`.
  bool field(const std::string &name) { return eat(name) && eat("="); }
};

} // namespace tritium::gpu
