// The textual IR parser: reads what printer.cpp writes (see the format there)
// plus a few hand-writing conveniences: `%r:2 = ...` with uses `%r#0`,
// `// comments`, `loc(unknown)`, `-> (f32)`, and operand types after a
// result-less op (`tt.return %a : f32`), which must match the operands.
// Tensor layouts (`tensor<64xf32, #ttg.blocked<...>>`) go to the parser that
// the GPU library registers with setLayoutParser.
//
// It works directly on characters (recursive descent, no token stream) so
// that types like `tensor<128x64xf32>` need no lexer modes. It checks syntax
// and names (undefined values, redefinitions, unknown ops and types, result
// counts); everything else is the verifier's job, so invalid IR can be
// written in tests and rejected by the verifier.
#include "tritium/ir/printer.h"

#include "text_internal.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <limits>

namespace tritium {
namespace {

bool isIdentStart(char c) { return std::isalpha((unsigned char)c) || c == '_'; }
bool isIdentChar(char c) {
  return std::isalnum((unsigned char)c) || c == '_' || c == '.' || c == '$';
}
bool isValueNameChar(char c) {
  return std::isalnum((unsigned char)c) || c == '_' || c == '.';
}
bool isNumeric(const std::string &s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!std::isdigit((unsigned char)c))
      return false;
  return true;
}

std::atomic<LayoutParser> &layoutParserSlot() {
  static std::atomic<LayoutParser> slot{nullptr};
  return slot;
}
LayoutParser layoutParser() { return layoutParserSlot().load(); }

class Parser {
public:
  Parser(const std::string &text, const std::string &filename)
      : src_(text), file_(filename) {}

  std::unique_ptr<Module> parseModule() {
    auto m = std::make_unique<Module>();
    while (true) {
      skipWs();
      if (atEnd())
        break;
      parseFunction(*m);
    }
    return m;
  }

private:
  // ---- characters and errors ------------------------------------------------

  /// The file:line:col of a position in the text (1-based).
  Location locationOf(size_t at) {
    if (lineStarts_.empty()) {
      lineStarts_.push_back(0);
      for (size_t i = 0; i < src_.size(); ++i)
        if (src_[i] == '\n')
          lineStarts_.push_back(i + 1);
    }
    at = std::min(at, src_.size());
    size_t line = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), at) -
                  lineStarts_.begin();
    return Location{file_, (int)line, (int)(at - lineStarts_[line - 1]) + 1};
  }

  [[noreturn]] void errorAt(size_t at, const std::string &msg) {
    // The message is bare; the location travels in IRError::loc and the
    // reporter (tritium-opt, the Python layer) prints `file:line:col: error:`.
    throw IRError(msg, locationOf(at));
  }

  /// The location of an op or function written without `loc(...)`.
  Location implicitLocation(size_t at) {
    Location loc = locationOf(at);
    loc.implicit = true;
    return loc;
  }
  [[noreturn]] void error(const std::string &msg) {
    skipWs();
    errorAt(pos_, msg);
  }

  /// Types and regions are parsed by recursion; text nested deeper than any
  /// kernel needs is an error here rather than a stack overflow later.
  static constexpr int kMaxNesting = 256;
  class Nesting {
  public:
    Nesting(Parser &p, size_t at) : p_(p) {
      if (p_.nesting_ == kMaxNesting)
        p_.errorAt(at, "types or regions nested more than " +
                           std::to_string(kMaxNesting) + " deep");
      ++p_.nesting_;
    }
    ~Nesting() { --p_.nesting_; }
    Nesting(const Nesting &) = delete;
    Nesting &operator=(const Nesting &) = delete;

  private:
    Parser &p_;
  };

  bool atEnd() const { return pos_ >= src_.size(); }
  char cur() const { return atEnd() ? '\0' : src_[pos_]; }
  char charAt(size_t i) const { return i < src_.size() ? src_[i] : '\0'; }

  void skipWs() {
    while (!atEnd()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && charAt(pos_ + 1) == '/') {
        while (!atEnd() && src_[pos_] != '\n')
          ++pos_;
      } else {
        break;
      }
    }
  }
  /// Next significant character (skipping blanks and comments).
  char peek() {
    skipWs();
    return cur();
  }
  bool consumeIf(char c) {
    if (peek() != c)
      return false;
    ++pos_;
    return true;
  }
  /// Consumes `s` if it comes next (after blanks), as a whole word when it
  /// ends in an identifier character.
  bool consumeIf(const std::string &s) {
    skipWs();
    if (src_.compare(pos_, s.size(), s) != 0)
      return false;
    if (isIdentChar(s.back()) && isIdentChar(charAt(pos_ + s.size())))
      return false;
    pos_ += s.size();
    return true;
  }
  void expect(char c, const std::string &context) {
    if (!consumeIf(c))
      error(std::string("expected '") + c + "' " + context + ", found " +
            describeNext());
  }

  /// What comes next, for error messages.
  std::string describeNext() {
    skipWs();
    if (atEnd())
      return "end of input";
    char c = cur();
    size_t end = pos_;
    if (isIdentChar(c) || c == '%' || c == '@' || c == '^' || c == '-' ||
        c == '!') {
      end = pos_ + 1;
      while (end < src_.size() && isIdentChar(src_[end]))
        ++end;
    } else if ((unsigned char)c >= 0x80) {
      // The whole UTF-8 sequence: half a character is not text.
      end = pos_ + 1;
      while (end < src_.size() && ((unsigned char)src_[end] & 0xC0) == 0x80)
        ++end;
    } else {
      end = pos_ + 1;
    }
    if ((unsigned char)c < 0x20 || c == 0x7f)
      return "byte " + text::quote(std::string(1, c));
    return "'" + src_.substr(pos_, end - pos_) + "'";
  }

  std::string parseIdent(const std::string &what) {
    skipWs();
    if (!isIdentStart(cur()))
      error("expected " + what + ", found " + describeNext());
    size_t start = pos_;
    while (!atEnd() && isIdentChar(cur()))
      ++pos_;
    return src_.substr(start, pos_ - start);
  }

  std::string parseString() {
    skipWs();
    size_t start = pos_;
    if (cur() != '"')
      error("expected string, found " + describeNext());
    ++pos_;
    std::string out;
    while (true) {
      if (atEnd() || cur() == '\n')
        errorAt(start, "unterminated string");
      char c = src_[pos_++];
      if (c == '"')
        break;
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = cur();
      ++pos_;
      switch (e) {
      case '"':
      case '\\':
        out += e;
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      default:
        if (std::isxdigit((unsigned char)e) &&
            std::isxdigit((unsigned char)cur())) {
          out += (char)std::stoi(src_.substr(pos_ - 1, 2), nullptr, 16);
          ++pos_;
        } else {
          errorAt(pos_ - 2, "invalid escape in string");
        }
      }
    }
    return out;
  }

  int64_t parseInt(const std::string &what) {
    skipWs();
    size_t start = pos_;
    if (cur() == '-')
      ++pos_;
    if (!std::isdigit((unsigned char)cur())) {
      pos_ = start;
      error("expected " + what + ", found " + describeNext());
    }
    while (std::isdigit((unsigned char)cur()))
      ++pos_;
    int64_t v = 0;
    auto r = std::from_chars(src_.data() + start, src_.data() + pos_, v);
    if (r.ec != std::errc())
      errorAt(start,
              "integer out of range: " + src_.substr(start, pos_ - start));
    return v;
  }

  // ---- attributes -----------------------------------------------------------

  Attribute parseNumber() {
    skipWs();
    size_t start = pos_;
    if (consumeIf("inf"))
      return std::numeric_limits<double>::infinity();
    if (consumeIf("nan"))
      return std::numeric_limits<double>::quiet_NaN();
    if (cur() == '-') {
      ++pos_;
      if (consumeIf("inf"))
        return -std::numeric_limits<double>::infinity();
    }
    if (!std::isdigit((unsigned char)cur())) {
      pos_ = start;
      error("expected attribute value, found " + describeNext());
    }
    bool isFloat = false;
    while (std::isdigit((unsigned char)cur()))
      ++pos_;
    if (cur() == '.') {
      isFloat = true;
      ++pos_;
      while (std::isdigit((unsigned char)cur()))
        ++pos_;
    }
    if (cur() == 'e' || cur() == 'E') {
      isFloat = true;
      ++pos_;
      if (cur() == '+' || cur() == '-')
        ++pos_;
      if (!std::isdigit((unsigned char)cur()))
        errorAt(start, "malformed float literal");
      while (std::isdigit((unsigned char)cur()))
        ++pos_;
    }
    const char *b = src_.data() + start, *e = src_.data() + pos_;
    if (isFloat) {
      double d = 0;
      auto r = std::from_chars(b, e, d);
      if (r.ec != std::errc() || r.ptr != e)
        errorAt(start, "float literal out of range: " + std::string(b, e));
      return d;
    }
    int64_t v = 0;
    auto r = std::from_chars(b, e, v);
    if (r.ec != std::errc() || r.ptr != e)
      errorAt(start, "integer out of range: " + std::string(b, e));
    return v;
  }

  Attribute parseAttrValue() {
    char c = peek();
    if (c == '"')
      return parseString();
    if (c == '[') {
      ++pos_;
      std::vector<int64_t> v;
      if (!consumeIf(']')) {
        do
          v.push_back(parseInt("integer in array"));
        while (consumeIf(','));
        expect(']', "to end the array");
      }
      return v;
    }
    if (consumeIf("true"))
      return true;
    if (consumeIf("false"))
      return false;
    return parseNumber();
  }

  std::map<std::string, Attribute> parseAttrDict() {
    std::map<std::string, Attribute> attrs;
    expect('{', "to start an attribute dictionary");
    if (consumeIf('}'))
      return attrs;
    do {
      size_t keyPos = (skipWs(), pos_);
      std::string key =
          cur() == '"' ? parseString() : parseIdent("attribute name");
      expect('=', "after attribute name '" + key + "'");
      if (attrs.count(key))
        errorAt(keyPos, "duplicate attribute '" + key + "'");
      attrs[key] = parseAttrValue();
    } while (consumeIf(','));
    expect('}', "to end the attribute dictionary");
    return attrs;
  }

  /// True when a `{` ahead opens an attribute dictionary (`{ key =`) rather
  /// than a region.
  bool attrDictAhead() {
    size_t save = pos_;
    bool yes = false;
    if (consumeIf('{')) {
      skipWs();
      if (cur() == '"') {
        try {
          parseString();
          yes = peek() == '=';
        } catch (const IRError &) {
        }
      } else if (isIdentStart(cur())) {
        while (isIdentChar(cur()))
          ++pos_;
        yes = peek() == '=';
      }
    }
    pos_ = save;
    return yes;
  }

  Location parseLoc() {
    // `loc` has been consumed.
    expect('(', "after 'loc'");
    Location loc;
    if (consumeIf("unknown")) {
      expect(')', "to end the location");
      return loc;
    }
    loc.file = parseString();
    expect(':', "after the location's file name");
    size_t at = (skipWs(), pos_);
    int64_t line = parseInt("line number");
    expect(':', "after the location's line");
    int64_t col = parseInt("column number");
    if (line <= 0 || line > INT32_MAX || col < 0 || col > INT32_MAX)
      errorAt(at, "invalid location line or column");
    loc.line = (int)line;
    loc.col = (int)col;
    expect(')', "to end the location");
    return loc;
  }

  // ---- types ----------------------------------------------------------------

  const Type *parseType() {
    size_t start = (skipWs(), pos_);
    Nesting nested(*this, start);
    if (cur() == '!') {
      if (consumeIf("!ttg.async.token"))
        return Type::asyncToken();
      if (consumeIf("!ttg.memdesc"))
        return parseMemDescBody(start);
      if (!consumeIf("!tt.ptr"))
        error("expected type, found " + describeNext());
      expect('<', "after '!tt.ptr'");
      size_t pointeePos = (skipWs(), pos_);
      const Type *pointee = parseType();
      if (!pointee->isScalar())
        errorAt(pointeePos, "pointee of !tt.ptr must be a scalar type, not " +
                                text::typeText(pointee));
      int addrSpace = 1;
      if (consumeIf(',')) {
        int64_t as = parseInt("address space");
        if (as < 0 || as > 255)
          errorAt(start, "invalid address space");
        addrSpace = (int)as;
      }
      expect('>', "to end the pointer type");
      return Type::pointer(pointee, addrSpace);
    }
    if (!isIdentStart(cur()))
      error("expected type, found " + describeNext());
    std::string id = parseIdent("type");
    if (id == "tensor") {
      expect('<', "after 'tensor'");
      std::vector<int64_t> shape = parseDims("tensor");
      size_t elemPos = (skipWs(), pos_);
      const Type *elem = parseType();
      if (elem->isTensor())
        errorAt(elemPos, "tensor element type must be a scalar or pointer");
      const Layout *layout = nullptr;
      if (consumeIf(','))
        layout = parseLayout(shape);
      expect('>', "to end the tensor type");
      return Type::tensor(elem, shape, layout);
    }
    auto dt = parseDType(id);
    if (!dt)
      errorAt(start, "unknown type '" + id + "'");
    return Type::scalar(*dt);
  }

  /// The `4x8x` of a tensor or memdesc type (`what` names it in errors):
  /// at least one positive dim, each followed by 'x', at most 2^31 elements
  /// in all (so that element counts and byte sizes never overflow).
  std::vector<int64_t> parseDims(const std::string &what) {
    std::vector<int64_t> shape;
    int64_t elements = 1;
    while (std::isdigit((unsigned char)peek())) {
      size_t dimPos = pos_;
      int64_t d = parseInt("dimension");
      if (d <= 0)
        errorAt(dimPos, what + " dimensions must be positive");
      if (d > kMaxTensorElements / elements)
        errorAt(dimPos, "a " + what + " has at most 2^31 elements");
      elements *= d;
      shape.push_back(d);
      if (cur() != 'x')
        error("expected 'x' after " + what + " dimension, found " +
              describeNext());
      ++pos_;
    }
    skipWs();
    if (shape.empty())
      error("expected " + what + " dimension, found " + describeNext());
    return shape;
  }

  /// `<3x128x64xf16, #layout[, mutable]>` after `!ttg.memdesc`.
  const Type *parseMemDescBody(size_t start) {
    expect('<', "after '!ttg.memdesc'");
    std::vector<int64_t> shape = parseDims("memdesc");
    size_t elemPos = (skipWs(), pos_);
    const Type *elem = parseType();
    if (!elem->isScalar())
      errorAt(elemPos, "memdesc element type must be a scalar type, not " +
                           text::typeText(elem));
    expect(',', "before the memdesc's shared layout");
    const Layout *layout = parseLayout(shape, /*stopAtComma=*/true);
    bool isMutable = false;
    if (consumeIf(',')) {
      skipWs();
      if (!consumeIf("mutable"))
        error("expected 'mutable' after ',' in the memdesc type, found " +
              describeNext());
      isMutable = true;
    }
    expect('>', "to end the memdesc type");
    if (layout->rank() >= 0 && (int)shape.size() != layout->rank() &&
        (int)shape.size() != layout->rank() + 1)
      errorAt(start, "memdesc of rank " + std::to_string(shape.size()) +
                         " with a shared layout of rank " +
                         std::to_string(layout->rank()) +
                         " (expected the same rank, or one more for buffers)");
    return Type::memdesc(elem, shape, layout, isMutable);
  }

  /// The layout of a tensor (or memdesc) type: `#...` up to the `>` that
  /// closes the type (or a `,` at the outer level when `stopAtComma`), with
  /// brackets inside balanced.
  const Layout *parseLayout(const std::vector<int64_t> &shape,
                            bool stopAtComma = false) {
    size_t start = (skipWs(), pos_);
    if (cur() != '#')
      error("expected a layout ('#...') after ',' in the tensor type, found " +
            describeNext());
    int depth = 0;
    while (!atEnd()) {
      char c = cur();
      if (c == '"') {
        parseString();
        continue;
      }
      if (c == '-' && charAt(pos_ + 1) == '>') {
        pos_ += 2;
        continue;
      }
      if ((c == '>' || (c == ',' && stopAtComma)) && depth == 0)
        break;
      if (c == '<' || c == '(' || c == '[' || c == '{')
        ++depth;
      else if (c == '>' || c == ')' || c == ']' || c == '}')
        --depth;
      if (depth < 0 || c == '\n')
        break;
      ++pos_;
    }
    size_t end = pos_;
    while (end > start && std::isspace((unsigned char)src_[end - 1]))
      --end;
    std::string layoutText = src_.substr(start, end - start);
    LayoutParser parser = layoutParser();
    if (!parser)
      errorAt(start, "cannot parse tensor layout '" + layoutText +
                         "': no layout parser is registered");
    try {
      if (const Layout *l = parser(layoutText, shape))
        return l;
    } catch (const std::exception &e) {
      errorAt(start, "invalid tensor layout '" + layoutText + "': " + e.what());
    }
    errorAt(start, "invalid tensor layout '" + layoutText + "'");
  }

  std::vector<const Type *> parseTypeList() {
    std::vector<const Type *> types;
    do
      types.push_back(parseType());
    while (consumeIf(','));
    return types;
  }

  // ---- values and scopes ----------------------------------------------------

  struct Scope {
    // A name of a `%r:N` result pack maps to null; its parts are `r#i`.
    std::map<std::string, Value *> values;
  };

  std::string parseValueName() {
    skipWs();
    if (cur() != '%')
      error("expected value name, found " + describeNext());
    ++pos_;
    size_t start = pos_;
    while (isValueNameChar(cur()))
      ++pos_;
    if (pos_ == start)
      error("expected value name after '%'");
    return src_.substr(start, pos_ - start);
  }

  Value *lookup(const std::string &name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->values.find(name);
      if (f != it->values.end())
        return f->second;
    }
    return nullptr;
  }
  bool visible(const std::string &name) const {
    for (const auto &s : scopes_)
      if (s.values.count(name))
        return true;
    return false;
  }

  Value *parseValueUse() {
    size_t start = (skipWs(), pos_);
    std::string name = parseValueName();
    std::string key = name;
    if (cur() == '#') {
      ++pos_;
      if (!std::isdigit((unsigned char)cur()))
        error("expected result number after '#'");
      size_t numStart = pos_;
      while (std::isdigit((unsigned char)cur()))
        ++pos_;
      std::string num = src_.substr(numStart, pos_ - numStart);
      key = name + "#" + num;
      if (!visible(key) && num == "0" && lookup(name))
        key = name;
    }
    if (!visible(key))
      errorAt(start, "use of undefined value '%" + key + "'");
    Value *v = lookup(key);
    if (!v)
      errorAt(start,
              "'%" + name + "' names several results; use '%" + name + "#N'");
    return v;
  }

  void define(const std::string &name, size_t at, Value *v) {
    if (visible(name))
      errorAt(at, "redefinition of value '%" + name + "'");
    scopes_.back().values[name] = v;
    if (!isNumeric(name))
      v->nameHint = name;
  }

  /// At a `%`: true when `%a, %b =` or `%r:2 =` follows, i.e. the next op's
  /// results rather than more operands of the current op.
  bool resultListAhead() {
    size_t save = pos_;
    bool yes = false;
    while (peek() == '%') {
      ++pos_;
      while (isValueNameChar(cur()))
        ++pos_;
      if (cur() == ':' && std::isdigit((unsigned char)charAt(pos_ + 1))) {
        yes = true;
        break;
      }
      if (cur() == '#') {
        ++pos_;
        while (std::isdigit((unsigned char)cur()))
          ++pos_;
      }
      if (peek() == '=') {
        yes = true;
        break;
      }
      if (!consumeIf(','))
        break;
    }
    pos_ = save;
    return yes;
  }

  // ---- ops, blocks, regions -------------------------------------------------

  void parseOp(Block *block) {
    skipWs();
    // Results.
    std::vector<std::pair<std::string, size_t>> resNames;
    int64_t packSize = -1;
    if (cur() == '%') {
      do {
        size_t at = (skipWs(), pos_);
        resNames.push_back({parseValueName(), at});
        if (cur() == ':' && resNames.size() == 1 &&
            std::isdigit((unsigned char)charAt(pos_ + 1))) {
          ++pos_;
          packSize = parseInt("number of results");
          if (packSize < 1 || packSize > 100000)
            errorAt(at, "invalid number of results");
          break;
        }
      } while (consumeIf(','));
      expect('=', "after the op's result names");
    }
    size_t namePos = (skipWs(), pos_);
    std::string name = parseIdent("op name");
    OpCode code;
    if (!lookupOpCode(name, code))
      errorAt(namePos, "unknown op '" + name + "'");
    // Operands.
    std::vector<Value *> operands;
    if (peek() == '%' && !resultListAhead()) {
      do
        operands.push_back(parseValueUse());
      while (consumeIf(','));
    }
    std::map<std::string, Attribute> attrs;
    if (peek() == '{' && attrDictAhead())
      attrs = parseAttrDict();
    size_t numResults = packSize >= 0 ? (size_t)packSize : resNames.size();
    std::vector<const Type *> types;
    size_t typesPos = 0;
    if (consumeIf(':')) {
      typesPos = (skipWs(), pos_);
      types = parseTypeList();
    } else if (numResults > 0) {
      error("expected ':' and the result type" +
            std::string(numResults > 1 ? "s" : "") + " of '" + name +
            "', found " + describeNext());
    }
    if (numResults == 0 && !types.empty()) {
      // Operand types written after a result-less op: check them.
      if (types.size() != operands.size())
        errorAt(typesPos, "'" + name + "' has " +
                              std::to_string(operands.size()) +
                              " operands but " + std::to_string(types.size()) +
                              " types were written");
      for (size_t i = 0; i < types.size(); ++i)
        if (types[i] != operands[i]->type())
          errorAt(typesPos, "type mismatch: operand #" + std::to_string(i) +
                                " of '" + name + "' has type " +
                                text::typeText(operands[i]->type()) + ", but " +
                                text::typeText(types[i]) + " was written");
      types.clear();
    } else if (types.size() != numResults) {
      errorAt(typesPos, "'" + name + "' has " + std::to_string(numResults) +
                            " result(s) but " + std::to_string(types.size()) +
                            " result type(s)");
    }
    std::vector<std::unique_ptr<Region>> regions;
    while (peek() == '{') {
      regions.push_back(std::make_unique<Region>());
      parseRegion(*regions.back());
    }
    Location loc;
    if (consumeIf("loc"))
      loc = parseLoc();
    if (!loc.known())
      loc = implicitLocation(resNames.empty() ? namePos : resNames[0].second);

    auto op = Operation::create(code, operands, types, std::move(attrs), loc,
                                (unsigned)regions.size());
    for (size_t i = 0; i < regions.size(); ++i) {
      Region &dst = op->region((unsigned)i);
      for (auto &b : regions[i]->blocks()) {
        Block *nb = dst.addBlock(std::move(b));
        nb->setParentRegion(&dst);
      }
    }
    Operation *o = block->push_back(std::move(op));
    if (packSize >= 0) {
      const auto &[base, at] = resNames[0];
      if (visible(base))
        errorAt(at, "redefinition of value '%" + base + "'");
      scopes_.back().values[base] = nullptr;
      for (unsigned i = 0; i < o->numResults(); ++i) {
        scopes_.back().values[base + "#" + std::to_string(i)] = o->result(i);
        if (!isNumeric(base))
          o->result(i)->nameHint = base + "_" + std::to_string(i);
      }
    } else {
      for (unsigned i = 0; i < o->numResults(); ++i)
        define(resNames[i].first, resNames[i].second, o->result(i));
    }
  }

  /// `^name(%a: T, ...):` — the `^` is next.
  void parseBlockHeader(Block *b) {
    ++pos_;
    size_t start = pos_;
    while (isIdentChar(cur()))
      ++pos_;
    if (pos_ == start)
      error("expected block label after '^'");
    if (consumeIf('(')) {
      if (!consumeIf(')')) {
        do {
          size_t at = (skipWs(), pos_);
          std::string name = parseValueName();
          expect(':', "after block argument '%" + name + "'");
          const Type *t = parseType();
          define(name, at, b->addArgument(t));
        } while (consumeIf(','));
        expect(')', "to end the block arguments");
      }
    }
    expect(':', "after the block header");
  }

  /// Ops (and further `^bb` blocks) up to the closing `}`; `first` is the
  /// block that ops before any header go to (created on demand when null).
  void parseBlocks(Region &r, Block *first) {
    Block *cur = first;
    bool scoped = first != nullptr;
    if (scoped)
      scopes_.emplace_back();
    while (true) {
      char c = peek();
      if (c == '}') {
        ++pos_;
        break;
      }
      if (atEnd())
        error("expected '}' to end the region, found end of input");
      if (c == '^') {
        if (scoped)
          scopes_.pop_back();
        cur = r.addBlock();
        scopes_.emplace_back();
        scoped = true;
        parseBlockHeader(cur);
        continue;
      }
      if (!cur) {
        cur = r.addBlock();
        scopes_.emplace_back();
        scoped = true;
      }
      parseOp(cur);
    }
    if (scoped)
      scopes_.pop_back();
  }

  void parseRegion(Region &r) {
    Nesting nested(*this, (skipWs(), pos_));
    expect('{', "to start a region");
    if (consumeIf('}'))
      return;
    parseBlocks(r, nullptr);
  }

  // ---- functions ------------------------------------------------------------

  void parseFunction(Module &m) {
    size_t funcPos = (skipWs(), pos_);
    if (!consumeIf("tt.func"))
      error("expected 'tt.func', found " + describeNext());
    expect('@', "before the function name");
    size_t namePos = pos_;
    std::string name = cur() == '"' ? parseString() : [&] {
      size_t s = pos_;
      while (isIdentChar(cur()))
        ++pos_;
      if (pos_ == s)
        error("expected function name after '@'");
      return src_.substr(s, pos_ - s);
    }();
    if (m.lookup(name))
      errorAt(namePos, "redefinition of function @" + name);

    struct Arg {
      std::string name;
      size_t at;
      const Type *type;
      std::map<std::string, Attribute> attrs;
    };
    std::vector<Arg> args;
    expect('(', "to start the argument list");
    if (!consumeIf(')')) {
      do {
        Arg a;
        a.at = (skipWs(), pos_);
        a.name = parseValueName();
        expect(':', "after argument '%" + a.name + "'");
        a.type = parseType();
        if (peek() == '{')
          a.attrs = parseAttrDict();
        args.push_back(std::move(a));
      } while (consumeIf(','));
      expect(')', "to end the argument list");
    }
    std::vector<const Type *> results;
    if (consumeIf("->")) {
      if (consumeIf('(')) {
        if (!consumeIf(')')) {
          results = parseTypeList();
          expect(')', "to end the result types");
        }
      } else {
        results.push_back(parseType());
      }
    }
    std::map<std::string, Attribute> fattrs;
    if (consumeIf("attributes"))
      fattrs = parseAttrDict();

    std::vector<const Type *> argTypes;
    for (const auto &a : args)
      argTypes.push_back(a.type);
    Function *f =
        m.addFunction(std::make_unique<Function>(name, argTypes, results));
    if (f->body().empty())
      f->body().addBlock();
    Block &entry = f->entry();
    while (entry.numArguments() < args.size())
      entry.addArgument(args[entry.numArguments()].type);
    f->attrs() = std::move(fattrs);
    f->argAttrs().resize(args.size());

    scopes_.clear();
    scopes_.emplace_back();
    for (size_t i = 0; i < args.size(); ++i) {
      define(args[i].name, args[i].at, entry.argument((unsigned)i));
      f->argAttrs()[i] = std::move(args[i].attrs);
    }
    expect('{', "to start the function body");
    parseBlocks(f->body(), &entry);
    scopes_.clear();
    Location loc;
    if (consumeIf("loc"))
      loc = parseLoc();
    f->setLoc(loc.known() ? loc : implicitLocation(funcPos));
  }

  const std::string &src_;
  std::string file_;
  size_t pos_ = 0;
  std::vector<Scope> scopes_;
  std::vector<size_t> lineStarts_; // offsets of the lines, built on demand
  int nesting_ = 0;                 // types and regions open (Nesting)
};

} // namespace

LayoutParser setLayoutParser(LayoutParser parser) {
  return layoutParserSlot().exchange(parser);
}

std::unique_ptr<Module> parseModule(const std::string &text,
                                    const std::string &filename) {
  Parser p(text, filename);
  return p.parseModule();
}

} // namespace tritium
