// The core of the tritium IR: values, ops, blocks, regions, functions and
// modules. SSA with structured control flow, MLIR-like.
//
// Ownership: a Module owns Functions; a Function owns its body Region; a
// Region owns Blocks; a Block owns its argument Values and its Operations; an
// Operation owns its result Values and its Regions. Operands are plain
// pointers to Values owned elsewhere.
#pragma once

#include "tritium/ir/types.h"
#include "tritium/support/errors.h"

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace tritium {

class Operation;
class Block;
class Region;
class Function;
class Module;

// ---------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------

/// An attribute value. Text forms: `true`, `42`, `1.5` / `inf` / `nan`
/// (a float always prints with a `.`, an exponent, or as inf/nan so it
/// re-parses as a float), `"text"`, `[1, 2, 3]`.
using Attribute =
    std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;
std::string attrStr(const Attribute &a);

// ---------------------------------------------------------------------------
// Op table
// ---------------------------------------------------------------------------

enum OpTrait : unsigned {
  PURE = 1u << 0,
  READ = 1u << 1,
  WRITE = 1u << 2,
  TERM = 1u << 3,
  COMM = 1u << 4,
  ELEM = 1u << 5,
  CF = 1u << 6,
  IBIN = 1u << 7,
  FBIN = 1u << 8,
  CAST = 1u << 9,
  MATH1 = 1u << 10,
  MOVE = 1u << 11,
  GLOBAL = 1u << 12, // reads or writes global memory
  SHARED = 1u << 13, // reads or writes shared memory
};

/// An arity of ops.def meaning "any number".
constexpr int VARIADIC = -1;

enum class OpCode : uint16_t {
#define OP(Id, Name, Traits, MinIn, MaxIn, Results, Regions, Attrs) Id,
#include "tritium/ir/ops.def"
#undef OP
  NumOps
};

/// The kind of an attribute in an op's schema: the Attribute variant's
/// alternatives in order, then Any (present, of any kind).
enum class AttrKind { Bool, Int, Float, Str, Array, Any };

/// One attribute of an op's schema (the last column of ops.def).
struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool required;
};

struct OpInfo {
  const char *name;
  unsigned traits;
  int minOperands; // >= 0
  int maxOperands; // VARIADIC: no upper bound
  int numResults;  // VARIADIC: any number
  int numRegions;
  const char *attrText; // the row's schema as written; see opAttrs
};
const OpInfo &opInfo(OpCode code);
/// The attribute schema of an op, parsed from its row once.
const std::vector<AttrSpec> &opAttrs(OpCode code);
/// "an integer", "a string", ... (as the verifier's messages say it).
const char *attrKindText(AttrKind k);
/// Looks up "arith.addf" -> OpCode::AddF.
bool lookupOpCode(const std::string &name, OpCode &out);

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------

/// An SSA value: an op's result or a block's argument.
class Value {
public:
  Value(const Type *type, Operation *def, unsigned index)
      : type_(type), def_(def), index_(index) {}
  Value(const Type *type, Block *owner, unsigned index)
      : type_(type), block_(owner), index_(index) {}

  const Type *type() const { return type_; }
  void setType(const Type *t) { type_ = t; }
  /// The op that defines this value; null for a block argument.
  Operation *definingOp() const { return def_; }
  /// The block whose argument this is; null for an op result.
  Block *ownerBlock() const { return block_; }
  bool isBlockArg() const { return block_ != nullptr; }
  /// Result number, or argument number.
  unsigned index() const { return index_; }
  /// Optional name the printer prefers (e.g. a kernel argument's Python name).
  std::string nameHint;

private:
  const Type *type_;
  Operation *def_ = nullptr;
  Block *block_ = nullptr;
  unsigned index_;
};

// ---------------------------------------------------------------------------
// Operations, blocks, regions
// ---------------------------------------------------------------------------

class Operation {
public:
  /// Creates a detached op with fresh result values of the given types.
  static std::unique_ptr<Operation>
  create(OpCode code, std::vector<Value *> operands,
         const std::vector<const Type *> &resultTypes,
         std::map<std::string, Attribute> attrs = {}, Location loc = {},
         unsigned numRegions = 0);

  OpCode code() const { return code_; }
  const OpInfo &info() const { return opInfo(code_); }
  const char *name() const { return info().name; }
  /// The row's traits; a tt.elementwise_inline_asm with {pure = true} has
  /// PURE instead of WRITE | GLOBAL (the one op whose effects an attribute
  /// decides; see ops.def).
  unsigned traits() const {
    return code_ == OpCode::InlineAsm ? inlineAsmTraits() : info().traits;
  }
  bool hasTrait(OpTrait t) const { return (traits() & t) != 0; }

  std::vector<Value *> &operands() { return operands_; }
  const std::vector<Value *> &operands() const { return operands_; }
  Value *operand(unsigned i) const { return operands_.at(i); }
  unsigned numOperands() const { return (unsigned)operands_.size(); }

  unsigned numResults() const { return (unsigned)results_.size(); }
  Value *result(unsigned i = 0) const { return results_.at(i).get(); }
  std::vector<Value *> results() const;
  /// Appends a new result (used by passes that grow loop-carried values).
  Value *addResult(const Type *type);

  std::map<std::string, Attribute> &attrs() { return attrs_; }
  const std::map<std::string, Attribute> &attrs() const { return attrs_; }
  bool hasAttr(const std::string &name) const { return attrs_.count(name); }
  /// Typed attribute getters; throw InternalError naming the op when the
  /// attribute is missing or of another kind.
  int64_t intAttr(const std::string &name) const;
  double floatAttr(const std::string &name) const;
  bool boolAttr(const std::string &name) const;
  const std::string &strAttr(const std::string &name) const;
  const std::vector<int64_t> &arrayAttr(const std::string &name) const;
  void setAttr(const std::string &name, Attribute value) {
    attrs_[name] = std::move(value);
  }

  unsigned numRegions() const { return (unsigned)regions_.size(); }
  Region &region(unsigned i) const { return *regions_.at(i); }

  const Location &loc() const { return loc_; }
  void setLoc(Location l) { loc_ = std::move(l); }

  /// The block holding this op (null when detached).
  Block *parentBlock() const { return parent_; }
  /// The op whose region holds this op's block (null at function level).
  Operation *parentOp() const;

  /// Removes this op from its block and destroys it. Its results must have
  /// no remaining uses.
  void erase();
  /// Unlinks this op from its block, returning ownership.
  std::unique_ptr<Operation> detach();

  /// Deep copy; operands are remapped through `map` (values not in the map
  /// are kept), and every copied result/block argument is added to `map`.
  std::unique_ptr<Operation> clone(std::map<Value *, Value *> &map) const;

  /// Visits this op and every op nested in its regions, parents first.
  void walk(const std::function<void(Operation *)> &fn);

private:
  friend class Block;
  Operation() = default;
  unsigned inlineAsmTraits() const;
  OpCode code_ = OpCode::Constant;
  std::vector<Value *> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  std::map<std::string, Attribute> attrs_;
  std::vector<std::unique_ptr<Region>> regions_;
  Location loc_;
  Block *parent_ = nullptr;
};

class Block {
public:
  using OpList = std::list<std::unique_ptr<Operation>>;
  using iterator = OpList::iterator;

  explicit Block(Region *parent = nullptr) : parent_(parent) {}

  Value *addArgument(const Type *type);
  std::vector<std::unique_ptr<Value>> &arguments() { return args_; }
  Value *argument(unsigned i) const { return args_.at(i).get(); }
  unsigned numArguments() const { return (unsigned)args_.size(); }
  /// Removes argument i (it must have no uses); renumbers the later ones.
  void eraseArgument(unsigned i);

  OpList &ops() { return ops_; }
  const OpList &ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  /// The last op, when it is a terminator; null otherwise.
  Operation *terminator() const;

  /// Inserts `op` before `pos` and returns it.
  Operation *insert(iterator pos, std::unique_ptr<Operation> op);
  Operation *push_back(std::unique_ptr<Operation> op) {
    return insert(ops_.end(), std::move(op));
  }
  /// Position of `op` in this block.
  iterator find(Operation *op);

  Region *parentRegion() const { return parent_; }
  void setParentRegion(Region *r) { parent_ = r; }
  /// The op owning the region of this block (null for a function body).
  Operation *parentOp() const;

private:
  Region *parent_;
  std::vector<std::unique_ptr<Value>> args_;
  OpList ops_;
};

class Region {
public:
  explicit Region(Operation *parentOp = nullptr) : parentOp_(parentOp) {}

  std::vector<std::unique_ptr<Block>> &blocks() { return blocks_; }
  bool empty() const { return blocks_.empty(); }
  Block &front() const { return *blocks_.front(); }
  /// Appends a new empty block.
  Block *addBlock();
  /// Appends an existing (detached) block, taking ownership.
  Block *addBlock(std::unique_ptr<Block> b);

  /// The op owning this region; null for a function body.
  Operation *parentOp() const { return parentOp_; }
  /// The function owning this region when it is a function body.
  Function *parentFunction() const { return parentFunction_; }
  void setParentFunction(Function *f) { parentFunction_ = f; }

private:
  Operation *parentOp_;
  Function *parentFunction_ = nullptr;
  std::vector<std::unique_ptr<Block>> blocks_;
};

// ---------------------------------------------------------------------------
// Functions and modules
// ---------------------------------------------------------------------------

/// `tt.func @name(%a: i32, ...) -> (f32) attributes {...} { body }`.
/// The body is one block whose arguments are the function's parameters.
class Function {
public:
  Function(std::string name, const std::vector<const Type *> &argTypes,
           std::vector<const Type *> resultTypes = {}, Location loc = {});

  const std::string &name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }
  Region &body() { return *body_; }
  const Region &body() const { return *body_; }
  Block &entry() const { return body_->front(); }
  Value *arg(unsigned i) const { return entry().argument(i); }
  unsigned numArgs() const { return entry().numArguments(); }
  std::vector<const Type *> argTypes() const;

  std::vector<const Type *> &resultTypes() { return resultTypes_; }
  const std::vector<const Type *> &resultTypes() const { return resultTypes_; }

  /// Per-argument attributes, e.g. {"tt.divisibility" = 16}; printed after
  /// the argument's type as `%x: i32 {tt.divisibility = 16}`.
  std::vector<std::map<std::string, Attribute>> &argAttrs() { return argAttrs_; }
  const std::vector<std::map<std::string, Attribute>> &argAttrs() const {
    return argAttrs_;
  }
  /// Function attributes, e.g. {kernel = true, noinline = false}.
  std::map<std::string, Attribute> &attrs() { return attrs_; }
  const std::map<std::string, Attribute> &attrs() const { return attrs_; }

  const Location &loc() const { return loc_; }
  void setLoc(Location l) { loc_ = std::move(l); }

  void walk(const std::function<void(Operation *)> &fn);

  Module *parentModule() const { return module_; }

private:
  friend class Module;
  std::string name_;
  std::unique_ptr<Region> body_;
  std::vector<const Type *> resultTypes_;
  std::vector<std::map<std::string, Attribute>> argAttrs_;
  std::map<std::string, Attribute> attrs_;
  Location loc_;
  Module *module_ = nullptr;
};

class Module {
public:
  Function *addFunction(std::unique_ptr<Function> f);
  Function *lookup(const std::string &name) const;
  void erase(Function *f);
  std::vector<std::unique_ptr<Function>> &functions() { return functions_; }
  const std::vector<std::unique_ptr<Function>> &functions() const {
    return functions_;
  }
  void walk(const std::function<void(Operation *)> &fn);
  std::unique_ptr<Module> clone() const;

private:
  std::vector<std::unique_ptr<Function>> functions_;
};

// ---------------------------------------------------------------------------
// Use queries (by walking; kernels are small)
// ---------------------------------------------------------------------------

/// Replaces every use of `from` by `to` inside `scope` (a function).
void replaceAllUsesWith(Function &scope, Value *from, Value *to);
/// Replaces uses of `from` by `to` only within ops nested in `region`.
void replaceAllUsesIn(Region &region, Value *from, Value *to);
/// True when some op in `scope` uses `v`.
bool hasUses(Function &scope, Value *v);
/// Counts uses of every value in `scope` (op operands only).
std::map<Value *, unsigned> countUses(Function &scope);

} // namespace tritium
