// The textual IR printer.
//
// Text form (the parser in parser.cpp reads exactly this, and more):
//
//   tt.func @k(%x: !tt.ptr<f32> {tt.divisibility = 16}, %n: i32) -> f32
//   attributes {kernel = true} {
//     %0 = tt.get_program_id {axis = 0} : i32 loc("k.py":3:9)
//     %acc, %i = scf.for %lb, %ub, %st, %a, %b : f32, i32 {
//     ^bb0(%iv: i32, %x: f32, %y: i32):
//       scf.yield %x, %y
//     }
//     tt.return %acc
//   } loc("k.py":1:1)
//
// - Generic op syntax: `[%r0, %r1 =] name [operands] [{attrs}] [: result
//   types] [{region}...] [loc(...)]`. Multiple results print as a list of
//   names (each keeps its own name hint), never as `%r:2`.
// - Value names: a value's nameHint (sanitised to letters, digits, `_`, `.`)
//   when it is not numeric and no value visible at that point (same block or
//   an enclosing one) already took it; every other value gets the next fresh
//   number of the function (`%0`, `%1`, ...) in text order. The parser turns
//   non-numeric names back into hints, so print(parse(print(x))) == print(x).
// - A block header `^bbN(args):` is printed when the block has arguments, is
//   not the region's first block, or is an empty first block (so that a region
//   with one empty block differs from a region without blocks, `{}`).
#include "tritium/ir/printer.h"

#include "text_internal.h"

#include <charconv>
#include <cmath>
#include <set>

namespace tritium {
namespace text {

std::string typeText(const Type *t) {
  if (!t)
    return "<<null type>>";
  switch (t->kind()) {
  case Type::Kind::Scalar:
    return dtypeName(t->dtype());
  case Type::Kind::Pointer: {
    std::string s = "!tt.ptr<" + typeText(t->pointee());
    if (t->addressSpace() != 1)
      s += ", " + std::to_string(t->addressSpace());
    return s + ">";
  }
  case Type::Kind::Tensor: {
    std::string s = "tensor<";
    for (int64_t d : t->shape())
      s += std::to_string(d) + "x";
    s += typeText(t->element());
    if (t->layout())
      s += ", " + t->layout()->str();
    return s + ">";
  }
  case Type::Kind::MemDesc: {
    std::string s = "!ttg.memdesc<";
    for (int64_t d : t->shape())
      s += std::to_string(d) + "x";
    s += typeText(t->element());
    if (t->layout())
      s += ", " + t->layout()->str();
    return s + (t->isMutable() ? ", mutable>" : ">");
  }
  case Type::Kind::Token:
    return "!ttg.async.token";
  }
  return "<<bad type>>";
}

std::string formatDouble(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d > 0 ? "inf" : "-inf";
  char buf[64];
  // to_chars without a precision gives the shortest text that round-trips.
  auto res = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return s;
}

std::string quote(const std::string &s) {
  static const char *hex = "0123456789ABCDEF";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += '\\';
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += (char)c;
    }
  }
  return out + "\"";
}

} // namespace text

namespace {

using text::formatDouble;
using text::quote;
using text::typeText;

bool isNameChar(char c) {
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

bool isBareKey(const std::string &s) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!isNameChar(c))
      return false;
  return true;
}

bool isBareSymbol(const std::string &s) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!isNameChar(c) && c != '$')
      return false;
  return true;
}

// Region has no const accessor for its blocks; printing never mutates them.
const std::vector<std::unique_ptr<Block>> &blocksOf(const Region &r) {
  return const_cast<Region &>(r).blocks();
}

std::string sanitizeHint(const std::string &h) {
  std::string out;
  for (char c : h)
    out += isNameChar(c) ? c : '_';
  return out;
}

std::string attrText(const Attribute &a) {
  struct V {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return formatDouble(d); }
    std::string operator()(const std::string &s) const { return quote(s); }
    std::string operator()(const std::vector<int64_t> &v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    }
  };
  return std::visit(V{}, a);
}

std::string attrDictText(const std::map<std::string, Attribute> &attrs) {
  std::string s = "{";
  bool first = true;
  for (const auto &[k, v] : attrs) {
    if (!first)
      s += ", ";
    first = false;
    s += (isBareKey(k) ? k : quote(k)) + " = " + attrText(v);
  }
  return s + "}";
}

std::string locText(const Location &loc) {
  return "loc(" + quote(loc.file) + ":" + std::to_string(loc.line) + ":" +
         std::to_string(loc.col) + ")";
}

/// Assigns the printed name of every value of a function (or of a detached
/// op tree). See the file comment for the rules; the two passes keep hint
/// claims and numbering independent so that reparsing reproduces both.
class Namer {
public:
  explicit Namer(const Function &f) {
    scopes_.emplace_back();
    if (f.body().empty()) // invalid, but printable for diagnostics
      return;
    const Block &entry = f.entry();
    for (unsigned i = 0; i < entry.numArguments(); ++i)
      claim(entry.argument(i));
    claimRegionRest(f.body(), /*skipEntryArgs=*/true);
    for (unsigned i = 0; i < entry.numArguments(); ++i)
      number(entry.argument(i));
    numberRegion(f.body(), true);
  }
  explicit Namer(const Operation &root) {
    scopes_.emplace_back();
    claimOp(root);
    numberOp(root);
  }

  std::string name(const Value *v) const {
    if (!v)
      return "%<<null>>";
    auto it = names_.find(v);
    if (it == names_.end())
      return "%<<unknown>>";
    return "%" + it->second;
  }

private:
  void claim(const Value *v) {
    if (v->nameHint.empty())
      return;
    std::string h = sanitizeHint(v->nameHint);
    if (isNumeric(h))
      return;
    for (const auto &s : scopes_)
      if (s.count(h))
        return;
    scopes_.back().insert(h);
    names_[v] = h;
  }
  void claimBlock(const Block &b, bool skipArgs) {
    scopes_.emplace_back();
    if (!skipArgs)
      for (unsigned i = 0; i < b.numArguments(); ++i)
        claim(b.argument(i));
    for (const auto &op : b.ops())
      claimOp(*op);
    scopes_.pop_back();
  }
  void claimRegionRest(const Region &r, bool skipEntryArgs) {
    const auto &blocks = blocksOf(r);
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (i == 0 && skipEntryArgs) {
        // The entry's arguments live in the function's own scope.
        for (const auto &op : blocks[0]->ops())
          claimOp(*op);
      } else {
        claimBlock(*blocks[i], false);
      }
    }
  }
  void claimOp(const Operation &op) {
    // Results are defined after the op's regions, as the parser sees them.
    for (unsigned i = 0; i < op.numRegions(); ++i)
      claimRegionRest(op.region(i), false);
    for (unsigned i = 0; i < op.numResults(); ++i)
      claim(op.result(i));
  }

  void number(const Value *v) {
    if (!names_.count(v))
      names_[v] = std::to_string(next_++);
  }
  void numberRegion(const Region &r, bool skipEntryArgs) {
    const auto &blocks = blocksOf(r);
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (!(i == 0 && skipEntryArgs))
        for (unsigned j = 0; j < blocks[i]->numArguments(); ++j)
          number(blocks[i]->argument(j));
      for (const auto &op : blocks[i]->ops())
        numberOp(*op);
    }
  }
  void numberOp(const Operation &op) {
    for (unsigned i = 0; i < op.numResults(); ++i)
      number(op.result(i));
    for (unsigned i = 0; i < op.numRegions(); ++i)
      numberRegion(op.region(i), false);
  }

  std::vector<std::set<std::string>> scopes_;
  std::map<const Value *, std::string> names_;
  unsigned next_ = 0;
};

class Printer {
public:
  Printer(const Namer &namer, const PrintOptions &opts, bool elideRegions)
      : namer_(namer), opts_(opts), elide_(elideRegions) {}

  void printFunction(const Function &f) {
    out_ += "tt.func @";
    out_ += isBareSymbol(f.name()) ? f.name() : quote(f.name());
    out_ += "(";
    static const Block noBlock;
    const Block &entry = f.body().empty() ? noBlock : f.entry();
    for (unsigned i = 0; i < entry.numArguments(); ++i) {
      if (i)
        out_ += ", ";
      const Value *a = entry.argument(i);
      out_ += namer_.name(a) + ": " + typeText(a->type());
      if (i < f.argAttrs().size() && !f.argAttrs()[i].empty())
        out_ += " " + attrDictText(f.argAttrs()[i]);
    }
    out_ += ")";
    const auto &res = f.resultTypes();
    if (res.size() == 1) {
      out_ += " -> " + typeText(res[0]);
    } else if (res.size() > 1) {
      out_ += " -> (";
      for (size_t i = 0; i < res.size(); ++i)
        out_ += (i ? ", " : "") + typeText(res[i]);
      out_ += ")";
    }
    if (!f.attrs().empty())
      out_ += " attributes " + attrDictText(f.attrs());
    out_ += " {\n";
    printBlocks(f.body(), 0, /*entryArgsInSignature=*/true);
    out_ += "}";
    if (opts_.printLocations && f.loc().known() && !f.loc().implicit)
      out_ += " " + locText(f.loc());
    out_ += "\n";
  }

  void printOp(const Operation &op, int indent) {
    out_ += std::string(indent, ' ');
    if (op.numResults()) {
      for (unsigned i = 0; i < op.numResults(); ++i)
        out_ += (i ? ", " : "") + namer_.name(op.result(i));
      out_ += " = ";
    }
    out_ += op.name();
    for (unsigned i = 0; i < op.numOperands(); ++i)
      out_ += (i ? ", " : " ") + namer_.name(op.operand(i));
    if (!op.attrs().empty())
      out_ += " " + attrDictText(op.attrs());
    if (op.numResults()) {
      out_ += " :";
      for (unsigned i = 0; i < op.numResults(); ++i)
        out_ += (i ? ", " : " ") + typeText(op.result(i)->type());
    }
    for (unsigned i = 0; i < op.numRegions(); ++i) {
      const Region &r = op.region(i);
      if (blocksOf(r).empty()) {
        out_ += " {}";
      } else if (elide_) {
        out_ += " {...}";
      } else {
        out_ += " {\n";
        printBlocks(r, indent, false);
        out_ += std::string(indent, ' ') + "}";
      }
    }
    if (opts_.printLocations && op.loc().known() && !op.loc().implicit)
      out_ += " " + locText(op.loc());
    if (!elide_)
      out_ += "\n";
  }

  std::string take() { return std::move(out_); }

private:
  // Blocks of a region; headers at `indent`, ops at `indent + 2`.
  void printBlocks(const Region &r, int indent, bool entryArgsInSignature) {
    const auto &blocks = blocksOf(r);
    for (size_t i = 0; i < blocks.size(); ++i) {
      const Block &b = *blocks[i];
      bool header;
      if (i == 0 && entryArgsInSignature)
        header = false;
      else
        header = i > 0 || b.numArguments() > 0 || b.empty();
      if (header) {
        out_ += std::string(indent, ' ') + "^bb" + std::to_string(i);
        if (b.numArguments()) {
          out_ += "(";
          for (unsigned j = 0; j < b.numArguments(); ++j) {
            const Value *a = b.argument(j);
            out_ +=
                (j ? ", " : "") + namer_.name(a) + ": " + typeText(a->type());
          }
          out_ += ")";
        }
        out_ += ":\n";
      }
      for (const auto &op : b.ops())
        printOp(*op, indent + 2);
    }
  }

  const Namer &namer_;
  const PrintOptions &opts_;
  bool elide_;
  std::string out_;
};

/// The function whose body (transitively) holds `op`, or null when the op
/// is detached; `root` is set to the outermost op.
const Function *enclosingFunction(const Operation &op, const Operation *&root) {
  root = &op;
  while (true) {
    const Block *b = root->parentBlock();
    if (!b)
      return nullptr;
    const Region *r = b->parentRegion();
    if (!r)
      return nullptr;
    if (r->parentFunction())
      return r->parentFunction();
    if (!r->parentOp())
      return nullptr;
    root = r->parentOp();
  }
}

std::string printOne(const Operation &op, const PrintOptions &opts,
                     bool elide) {
  const Operation *root = nullptr;
  const Function *f = enclosingFunction(op, root);
  if (f) {
    Namer namer(*f);
    Printer p(namer, opts, elide);
    p.printOp(op, 0);
    return p.take();
  }
  Namer namer(*root);
  Printer p(namer, opts, elide);
  p.printOp(op, 0);
  return p.take();
}

} // namespace

std::string text::opSummary(const Operation &op) {
  PrintOptions opts;
  opts.printLocations = false;
  return printOne(op, opts, /*elide=*/true);
}

std::string text::valueName(const Operation &user, const Value *v) {
  const Operation *root = nullptr;
  const Function *f = enclosingFunction(user, root);
  if (f)
    return Namer(*f).name(v);
  return Namer(*root).name(v);
}

std::string print(const Function &f, const PrintOptions &opts) {
  Namer namer(f);
  Printer p(namer, opts, false);
  p.printFunction(f);
  return p.take();
}

std::string print(const Module &m, const PrintOptions &opts) {
  std::string out;
  for (size_t i = 0; i < m.functions().size(); ++i) {
    if (i)
      out += "\n";
    out += print(*m.functions()[i], opts);
  }
  return out;
}

std::string print(const Operation &op, const PrintOptions &opts) {
  return printOne(op, opts, false);
}

} // namespace tritium
