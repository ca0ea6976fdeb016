#include "tritium/ir/ir.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

namespace tritium {

// ---------------------------------------------------------------------------
// Locations and attributes
// ---------------------------------------------------------------------------

namespace {

std::string floatStr(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[64];
  // 17 significant digits round-trip any double.
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  // Keep the shortest form that still reads back exactly.
  for (int prec = 1; prec < 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) {
      s = buf;
      break;
    }
  }
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return s;
}

std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

} // namespace

std::string attrStr(const Attribute &a) {
  return std::visit(
      [](const auto &v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>)
          return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, int64_t>)
          return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>)
          return floatStr(v);
        else if constexpr (std::is_same_v<T, std::string>)
          return quoted(v);
        else {
          std::string s = "[";
          for (size_t i = 0; i < v.size(); ++i)
            s += (i ? ", " : "") + std::to_string(v[i]);
          return s + "]";
        }
      },
      a);
}

// ---------------------------------------------------------------------------
// Op table
// ---------------------------------------------------------------------------

namespace {
const OpInfo kOpInfos[] = {
#define OP(Id, Name, Traits, MinIn, MaxIn, Results, Regions, Attrs)           \
  {Name, static_cast<unsigned>(Traits), MinIn, MaxIn, Results, Regions, Attrs},
#include "tritium/ir/ops.def"
#undef OP
};

/// `"axis:int ?hex:bool"` -> specs. A malformed row is a bug in ops.def, so
/// it throws InternalError (the unit test walking the table catches it).
std::vector<AttrSpec> parseAttrSchema(const char *op, const std::string &text) {
  static const std::pair<const char *, AttrKind> kinds[] = {
      {"bool", AttrKind::Bool}, {"int", AttrKind::Int},
      {"float", AttrKind::Float}, {"str", AttrKind::Str},
      {"array", AttrKind::Array}, {"any", AttrKind::Any}};
  std::vector<AttrSpec> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find(' ', i);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(i, end - i);
    i = end + 1;
    if (item.empty())
      continue;
    AttrSpec spec{"", AttrKind::Any, true};
    if (item[0] == '?') {
      spec.required = false;
      item.erase(0, 1);
    }
    size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0)
      throw InternalError(std::string("ops.def: bad attribute '") + item +
                          "' in the row of " + op);
    spec.name = item.substr(0, colon);
    std::string kind = item.substr(colon + 1);
    bool found = false;
    for (auto &[k, v] : kinds)
      if (kind == k) {
        spec.kind = v;
        found = true;
      }
    if (!found)
      throw InternalError("ops.def: unknown attribute kind '" + kind +
                          "' in the row of " + op);
    out.push_back(std::move(spec));
  }
  return out;
}
} // namespace

const std::vector<AttrSpec> &opAttrs(OpCode code) {
  static const std::vector<std::vector<AttrSpec>> schemas = [] {
    std::vector<std::vector<AttrSpec>> s;
    for (const OpInfo &info : kOpInfos)
      s.push_back(parseAttrSchema(info.name, info.attrText));
    return s;
  }();
  return schemas.at(size_t(code));
}

const char *attrKindText(AttrKind k) {
  switch (k) {
  case AttrKind::Bool:
    return "a bool";
  case AttrKind::Int:
    return "an integer";
  case AttrKind::Float:
    return "a float";
  case AttrKind::Str:
    return "a string";
  case AttrKind::Array:
    return "an array";
  case AttrKind::Any:
    break;
  }
  return "";
}

const OpInfo &opInfo(OpCode code) {
  return kOpInfos[static_cast<size_t>(code)];
}

bool lookupOpCode(const std::string &name, OpCode &out) {
  static const std::unordered_map<std::string, OpCode> table = [] {
    std::unordered_map<std::string, OpCode> t;
    for (size_t i = 0; i < static_cast<size_t>(OpCode::NumOps); ++i)
      t[kOpInfos[i].name] = static_cast<OpCode>(i);
    return t;
  }();
  auto it = table.find(name);
  if (it == table.end())
    return false;
  out = it->second;
  return true;
}

// ---------------------------------------------------------------------------
// Operation
// ---------------------------------------------------------------------------

std::unique_ptr<Operation>
Operation::create(OpCode code, std::vector<Value *> operands,
                  const std::vector<const Type *> &resultTypes,
                  std::map<std::string, Attribute> attrs, Location loc,
                  unsigned numRegions) {
  std::unique_ptr<Operation> op(new Operation());
  op->code_ = code;
  op->operands_ = std::move(operands);
  for (unsigned i = 0; i < resultTypes.size(); ++i)
    op->results_.push_back(std::make_unique<Value>(resultTypes[i], op.get(), i));
  op->attrs_ = std::move(attrs);
  op->loc_ = std::move(loc);
  for (unsigned i = 0; i < numRegions; ++i)
    op->regions_.push_back(std::make_unique<Region>(op.get()));
  return op;
}

std::vector<Value *> Operation::results() const {
  std::vector<Value *> out;
  for (const auto &r : results_)
    out.push_back(r.get());
  return out;
}

Value *Operation::addResult(const Type *type) {
  results_.push_back(
      std::make_unique<Value>(type, this, (unsigned)results_.size()));
  return results_.back().get();
}

namespace {
[[noreturn]] void badAttr(const Operation &op, const std::string &name,
                          const char *kind) {
  throw InternalError(std::string("op '") + op.name() + "' at " +
                      op.loc().str() + ": attribute '" + name +
                      "' is missing or not " + kind);
}
} // namespace

int64_t Operation::intAttr(const std::string &name) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end() || !std::holds_alternative<int64_t>(it->second))
    badAttr(*this, name, "an integer");
  return std::get<int64_t>(it->second);
}

double Operation::floatAttr(const std::string &name) const {
  auto it = attrs_.find(name);
  if (it != attrs_.end() && std::holds_alternative<int64_t>(it->second))
    return (double)std::get<int64_t>(it->second);
  if (it == attrs_.end() || !std::holds_alternative<double>(it->second))
    badAttr(*this, name, "a float");
  return std::get<double>(it->second);
}

bool Operation::boolAttr(const std::string &name) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end() || !std::holds_alternative<bool>(it->second))
    badAttr(*this, name, "a bool");
  return std::get<bool>(it->second);
}

unsigned Operation::inlineAsmTraits() const {
  unsigned t = info().traits;
  auto it = attrs_.find("pure");
  // Not yet verified: anything but a true bool keeps the row's effects.
  if (it != attrs_.end() && std::holds_alternative<bool>(it->second) &&
      std::get<bool>(it->second))
    t = (t & ~(WRITE | GLOBAL)) | PURE;
  return t;
}

const std::string &Operation::strAttr(const std::string &name) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end() || !std::holds_alternative<std::string>(it->second))
    badAttr(*this, name, "a string");
  return std::get<std::string>(it->second);
}

const std::vector<int64_t> &
Operation::arrayAttr(const std::string &name) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end() ||
      !std::holds_alternative<std::vector<int64_t>>(it->second))
    badAttr(*this, name, "an integer array");
  return std::get<std::vector<int64_t>>(it->second);
}

Operation *Operation::parentOp() const {
  return parent_ ? parent_->parentOp() : nullptr;
}

void Operation::erase() { detach().reset(); }

std::unique_ptr<Operation> Operation::detach() {
  if (!parent_)
    throw InternalError(std::string("detach of an op with no block: ") +
                        name());
  Block *b = parent_;
  auto it = b->find(this);
  std::unique_ptr<Operation> self = std::move(*it);
  b->ops().erase(it);
  parent_ = nullptr;
  return self;
}

std::unique_ptr<Operation>
Operation::clone(std::map<Value *, Value *> &map) const {
  std::vector<Value *> ops;
  for (Value *v : operands_) {
    auto it = map.find(v);
    ops.push_back(it == map.end() ? v : it->second);
  }
  std::vector<const Type *> types;
  for (const auto &r : results_)
    types.push_back(r->type());
  auto op = create(code_, ops, types, attrs_, loc_, (unsigned)regions_.size());
  for (size_t i = 0; i < results_.size(); ++i) {
    op->results_[i]->nameHint = results_[i]->nameHint;
    map[results_[i].get()] = op->results_[i].get();
  }
  for (size_t r = 0; r < regions_.size(); ++r) {
    for (const auto &blk : regions_[r]->blocks()) {
      Block *nb = op->regions_[r]->addBlock();
      for (const auto &a : blk->arguments()) {
        Value *na = nb->addArgument(a->type());
        na->nameHint = a->nameHint;
        map[a.get()] = na;
      }
      for (const auto &inner : blk->ops())
        nb->push_back(inner->clone(map));
    }
  }
  return op;
}

void Operation::walk(const std::function<void(Operation *)> &fn) {
  fn(this);
  for (auto &r : regions_)
    for (auto &b : r->blocks()) {
      // Advance before visiting so `fn` may erase the op it is given.
      for (auto it = b->ops().begin(); it != b->ops().end();) {
        Operation *op = it->get();
        ++it;
        op->walk(fn);
      }
    }
}

// ---------------------------------------------------------------------------
// Block and Region
// ---------------------------------------------------------------------------

Value *Block::addArgument(const Type *type) {
  args_.push_back(std::make_unique<Value>(type, this, (unsigned)args_.size()));
  return args_.back().get();
}

void Block::eraseArgument(unsigned i) {
  args_.erase(args_.begin() + i);
  // Later arguments keep their identity (uses point at them); only their
  // index changes.
  for (unsigned j = i; j < args_.size(); ++j) {
    Value *v = args_[j].get();
    std::string hint = v->nameHint;
    *v = Value(v->type(), this, j);
    v->nameHint = hint;
  }
}

Operation *Block::terminator() const {
  if (ops_.empty())
    return nullptr;
  Operation *last = ops_.back().get();
  return last->hasTrait(TERM) ? last : nullptr;
}

Operation *Block::insert(iterator pos, std::unique_ptr<Operation> op) {
  op->parent_ = this;
  return ops_.insert(pos, std::move(op))->get();
}

Block::iterator Block::find(Operation *op) {
  for (auto it = ops_.begin(); it != ops_.end(); ++it)
    if (it->get() == op)
      return it;
  throw InternalError(std::string("op '") + op->name() +
                      "' is not in the block it claims");
}

Operation *Block::parentOp() const {
  return parent_ ? parent_->parentOp() : nullptr;
}

Block *Region::addBlock() {
  blocks_.push_back(std::make_unique<Block>(this));
  return blocks_.back().get();
}

Block *Region::addBlock(std::unique_ptr<Block> b) {
  b->setParentRegion(this);
  blocks_.push_back(std::move(b));
  return blocks_.back().get();
}

// ---------------------------------------------------------------------------
// Function and Module
// ---------------------------------------------------------------------------

Function::Function(std::string name, const std::vector<const Type *> &argTypes,
                   std::vector<const Type *> resultTypes, Location loc)
    : name_(std::move(name)), body_(std::make_unique<Region>(nullptr)),
      resultTypes_(std::move(resultTypes)), argAttrs_(argTypes.size()),
      loc_(std::move(loc)) {
  body_->setParentFunction(this);
  Block *entry = body_->addBlock();
  for (const Type *t : argTypes)
    entry->addArgument(t);
}

std::vector<const Type *> Function::argTypes() const {
  std::vector<const Type *> out;
  for (const auto &a : entry().arguments())
    out.push_back(a->type());
  return out;
}

void Function::walk(const std::function<void(Operation *)> &fn) {
  for (auto &b : body_->blocks())
    for (auto it = b->ops().begin(); it != b->ops().end();) {
      Operation *op = it->get();
      ++it;
      op->walk(fn);
    }
}

Function *Module::addFunction(std::unique_ptr<Function> f) {
  f->module_ = this;
  functions_.push_back(std::move(f));
  return functions_.back().get();
}

Function *Module::lookup(const std::string &name) const {
  for (const auto &f : functions_)
    if (f->name() == name)
      return f.get();
  return nullptr;
}

void Module::erase(Function *f) {
  functions_.erase(std::remove_if(functions_.begin(), functions_.end(),
                                  [&](const auto &p) { return p.get() == f; }),
                   functions_.end());
}

void Module::walk(const std::function<void(Operation *)> &fn) {
  for (auto &f : functions_)
    f->walk(fn);
}

std::unique_ptr<Module> Module::clone() const {
  auto m = std::make_unique<Module>();
  for (const auto &f : functions_) {
    auto nf = std::make_unique<Function>(f->name(), f->argTypes(),
                                         f->resultTypes(), f->loc());
    nf->argAttrs() = f->argAttrs();
    nf->attrs() = f->attrs();
    std::map<Value *, Value *> map;
    for (unsigned i = 0; i < f->numArgs(); ++i) {
      nf->arg(i)->nameHint = f->arg(i)->nameHint;
      map[f->arg(i)] = nf->arg(i);
    }
    for (const auto &op : f->entry().ops())
      nf->entry().push_back(op->clone(map));
    m->addFunction(std::move(nf));
  }
  return m;
}

// ---------------------------------------------------------------------------
// Uses
// ---------------------------------------------------------------------------

void replaceAllUsesIn(Region &region, Value *from, Value *to) {
  for (auto &b : region.blocks())
    for (auto &op : b->ops())
      op->walk([&](Operation *o) {
        for (Value *&v : o->operands())
          if (v == from)
            v = to;
      });
}

void replaceAllUsesWith(Function &scope, Value *from, Value *to) {
  replaceAllUsesIn(scope.body(), from, to);
}

bool hasUses(Function &scope, Value *v) {
  bool used = false;
  scope.walk([&](Operation *o) {
    for (Value *x : o->operands())
      if (x == v)
        used = true;
  });
  return used;
}

std::map<Value *, unsigned> countUses(Function &scope) {
  std::map<Value *, unsigned> n;
  scope.walk([&](Operation *o) {
    for (Value *x : o->operands())
      ++n[x];
  });
  return n;
}

} // namespace tritium
