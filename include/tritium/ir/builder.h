// The builder: the one place that creates IR from the frontend.
//
// It has two layers:
//  - raw creation (`create`, constants, control-flow skeletons), which checks
//    nothing beyond what the verifier checks;
//  - semantic helpers (`binary`, `load`, `reduce`, ...) that implement
//    Triton's language rules: type promotion, broadcasting, implicit casts,
//    and user-facing checks. A user's mistake throws UserError at the current
//    location (see setLoc), never an assertion.
//
// Every op built gets the current location.
#pragma once

#include "tritium/ir/ir.h"

#include <optional>
#include <string>
#include <vector>

namespace tritium {

/// An operand of a semantic helper: an IR value, or a Python literal whose
/// type adapts to the other operand (Triton's weak typing of scalars: in
/// `x_fp16 * 2.0` the literal becomes fp16; in `i32_tensor + 1`, i32).
struct Operand {
  enum class Kind { Value, Bool, Int, Float };
  Kind kind = Kind::Value;
  Value *value = nullptr;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  bool u64 = false; // Kind::Int only: `i` is the bit pattern of a uint64

  Operand() = default;
  Operand(Value *v) : kind(Kind::Value), value(v) {}
  static Operand ofBool(bool v) {
    Operand o;
    o.kind = Kind::Bool;
    o.b = v;
    return o;
  }
  static Operand ofInt(int64_t v) {
    Operand o;
    o.kind = Kind::Int;
    o.i = v;
    return o;
  }
  /// A Python int in [2^63, 2^64): `i` holds its bits and `u64` is set
  /// (Triton types such a literal as uint64).
  static Operand ofUInt64(uint64_t v) {
    Operand o;
    o.kind = Kind::Int;
    o.i = (int64_t)v;
    o.u64 = v > (uint64_t)INT64_MAX;
    return o;
  }
  static Operand ofFloat(double v) {
    Operand o;
    o.kind = Kind::Float;
    o.f = v;
    return o;
  }
  bool isLiteral() const { return kind != Kind::Value; }
};

class Builder {
public:
  explicit Builder(Module &m) : module_(m) {}

  Module &module() { return module_; }

  // ---- location ----------------------------------------------------------
  void setLoc(Location loc) { loc_ = std::move(loc); }
  const Location &loc() const { return loc_; }
  /// Throws UserError(msg) at the current location.
  [[noreturn]] void error(const std::string &msg) const;

  // ---- functions and insertion point ---------------------------------------
  /// Adds a function to the module and moves the insertion point to the end of
  /// its entry block. Result types are filled in by `ret` if left empty.
  Function *createFunction(const std::string &name,
                           const std::vector<const Type *> &argTypes,
                           const std::vector<std::string> &argNames);
  struct InsertPoint {
    Block *block = nullptr;
    Block::iterator pos;
  };
  InsertPoint saveInsertionPoint() const { return ip_; }
  void restoreInsertionPoint(InsertPoint ip) { ip_ = ip; }
  void setInsertionPointToEnd(Block *b);
  void setInsertionPoint(Operation *before); // insert before this op
  Block *insertionBlock() const { return ip_.block; }

  /// A new block owned by the builder until it is given to an op
  /// (createIf/createFor/createWhile) or discarded with `discardBlock`.
  Block *newDetachedBlock();
  void discardBlock(Block *b);

  // ---- raw creation -------------------------------------------------------
  Operation *create(OpCode code, const std::vector<Value *> &operands,
                    const std::vector<const Type *> &resultTypes,
                    std::map<std::string, Attribute> attrs = {});
  Value *constInt(int64_t v, DType t);
  Value *constFloat(double v, DType t);
  Value *constBool(bool v);
  /// Tensor splat constant: `arith.constant {value = v} : tensor<shape x t>`.
  Value *constTensor(double v, DType t, const std::vector<int64_t> &shape);
  /// Materialises a literal operand with Triton's default types (bool -> i1;
  /// int -> i32, u32 in [2^31, 2^32), i64, or u64 beyond that; float ->
  /// fp32, or fp64 when the value is outside fp32's normal range).
  Value *materialize(const Operand &o);

  // ---- control flow skeletons -----------------------------------------------
  // The frontend builds a region's ops into a detached block (newDetachedBlock
  // + setInsertionPointToEnd), ends it with yield/condition, then hands the
  // blocks to one of these. Result types come from the terminators.

  /// Creates scf.for at the insertion point; returns the op. Its body block
  /// has arguments (iv, iters...) of the types of (lb, inits...). The caller
  /// then fills the body (op->region(0).front()) and ends it with `yield`.
  /// lb/ub/step are cast to a common integer type (i32, or i64 if any is
  /// i64).
  Operation *createFor(Operand lb, Operand ub, Operand step,
                       const std::vector<Value *> &inits);
  /// scf.if taking ownership of detached blocks; elseBlock may be null when
  /// the then block yields nothing.
  Operation *createIf(Value *cond, Block *thenBlock, Block *elseBlock);
  /// scf.while: `before` has args of the inits' types and ends with
  /// scf.condition; `after` has args of the condition's forwarded types and
  /// ends with scf.yield.
  Operation *createWhile(const std::vector<Value *> &inits, Block *before,
                         Block *after);
  void yield(const std::vector<Value *> &values);
  void condition(Value *cond, const std::vector<Value *> &forwarded);
  /// tt.return; sets the current function's result types on first use and
  /// checks later returns agree.
  void ret(const std::vector<Value *> &values);
  std::vector<Value *> call(Function *callee, const std::vector<Value *> &args);

  // ---- semantic helpers (Triton's language rules) ------------------------------
  /// op: "add" "sub" "mul" "truediv" "floordiv" "mod" "and" "or" "xor"
  /// "lshift" "rshift" "lt" "le" "gt" "ge" "eq" "ne" "logical_and"
  /// "logical_or". Promotes and broadcasts both sides (Triton's rules), then
  /// emits the right arith op (e.g. truediv of ints gives fp32; floordiv of
  /// ints gives divsi; mod of floats gives remf).
  Value *binary(const std::string &op, Operand a, Operand b);
  /// op: "neg" "pos" "invert" (bitwise ~) "not" (logical not).
  Value *unary(const std::string &op, Operand a);
  /// op: "exp" "exp2" "log" "log2" "sqrt" "sqrt_rn" "rsqrt" "abs" "sin"
  /// "cos" "floor" "ceil" "erf" "tanh" "sigmoid". Ints are converted to
  /// fp32 first (except abs); fp16/bf16 compute through fp32 and round back
  /// where Triton does.
  Value *math(const std::string &op, Operand x);
  Value *fma(Operand a, Operand b, Operand c);
  /// tl.maximum / tl.minimum; propagateNan selects maximumf over maxnumf.
  Value *maximum(Operand a, Operand b, bool propagateNan = false);
  Value *minimum(Operand a, Operand b, bool propagateNan = false);
  /// tl.where(cond, a, b).
  Value *where(Operand cond, Operand a, Operand b);
  /// x.to(dtype) / tl.cast; bitcast reinterprets (same bit width).
  /// `fpDowncastRounding`: "" (nearest even), "rtne" or "rtz"; only for a
  /// float conversion to fewer bits, as Triton allows it.
  Value *cast(Value *x, DType to, bool bitcast = false,
              const std::string &fpDowncastRounding = "");
  /// Cast to a pointer type (x.to(tl.pointer_type(dtype))).
  Value *castToPointer(Value *x, const Type *ptrType);

  Value *programId(int axis);
  Value *numPrograms(int axis);
  /// tl.arange(start, end): end > start, end - start a power of two, and
  /// at most 2^20 elements.
  Value *arange(int64_t start, int64_t end);
  /// tl.full(shape, value, dtype) / tl.zeros.
  Value *full(const std::vector<int64_t> &shape, Operand value, DType t);

  Value *splat(Value *x, const std::vector<int64_t> &shape);
  /// Broadcasts x to `shape` (numpy rules; x may be a scalar).
  Value *broadcastTo(Value *x, const std::vector<int64_t> &shape);
  /// Broadcasts a and b against each other (numpy rules).
  std::pair<Value *, Value *> broadcastPair(Value *a, Value *b);
  /// x[:, None] and friends; axis may be negative (counts from the end of
  /// the result).
  Value *expandDims(Value *x, int axis);
  Value *reshape(Value *x, const std::vector<int64_t> &shape);
  Value *trans(Value *x, const std::vector<int64_t> &order);

  /// tl.load(ptr, mask, other): ptr a pointer or tensor of pointers; mask
  /// and other broadcast to ptr's shape; other is cast to the element type.
  /// Hints: a cache modifier (".ca", ".cg", ".cv"), an eviction policy
  /// ("evict_first", "evict_last"; "evict_normal" is none) and volatile
  /// become the tt.load's attributes (cache, eviction, volatile); another
  /// value is a user error. They change how the GPU caches the access, not
  /// its result.
  Value *load(Value *ptr, Value *mask, std::optional<Operand> other,
              const std::string &cache = "", const std::string &eviction = "",
              bool isVolatile = false);
  /// desc.load of a tensor descriptor: a tt.descriptor_load of the
  /// `blockShape` block at `offsets` (i32 scalars) of the tensor at `base`
  /// (a scalar pointer) of `shape` (i32) and `strides` (i64) elements;
  /// padding "zero" or "nan" (see ops.def).
  Value *descriptorLoad(Value *base, const std::vector<Value *> &shape,
                        const std::vector<Value *> &strides,
                        const std::vector<Value *> &offsets,
                        const std::vector<int64_t> &blockShape, const std::string &padding);
  /// desc.store: a tt.descriptor_store of `value` (a tensor of the block's
  /// shape, cast to the base's element type) at `offsets` of the tensor that
  /// descriptorLoad describes; out-of-bounds elements are not written.
  void descriptorStore(Value *base, const std::vector<Value *> &shape,
                       const std::vector<Value *> &strides, const std::vector<Value *> &offsets,
                       Operand value);
  /// tl.store; cache modifiers ".wb", ".cg", ".cs", ".wt".
  void store(Value *ptr, Operand value, Value *mask,
             const std::string &cache = "", const std::string &eviction = "");
  /// tl.atomic_add and friends; kind as in tt.atomic_rmw. sem ("acquire",
  /// "release", "acq_rel", "relaxed") and scope ("gpu", "cta", "sys") become
  /// the op's attributes when not empty; other values are user errors.
  Value *atomicRMW(const std::string &kind, Value *ptr, Operand val,
                   Value *mask, const std::string &sem = "",
                   const std::string &scope = "");
  /// tl.atomic_cas(ptr, cmp, val): cmp and val broadcast to ptr's shape and
  /// are cast to its element type (16, 32 or 64 bits).
  Value *atomicCAS(Value *ptr, Operand cmp, Operand val,
                   const std::string &sem = "", const std::string &scope = "");

  /// tl.sum / max / min / argmax / argmin / xor_sum over `axis` (all axes,
  /// flattening first, when nullopt). keepDims re-inserts the reduced dim.
  /// sum widens ints narrower than 32 bits to (u)int32, as Triton does.
  Value *reduce(Value *x, std::optional<int> axis, const std::string &kind,
                bool keepDims);
  // ---- combine functions (combine_semantics.cpp) ------------------------------
  // tl.reduce / tl.associative_scan with a @jit combine: the frontend takes a
  // block from newCombineBlock, builds the combine's call into it, ends it
  // with combineReturn, then hands it to reduceCombine or scan.

  /// A detached block with two scalar args per input (the inputs' element
  /// types: first the accumulated values, then the next ones). `fn` names
  /// the caller in errors ("tl.reduce"). Checks the inputs: tensors of one
  /// shape, no pointers.
  Block *newCombineBlock(const std::vector<Value *> &inputs,
                         const std::string &fn);
  /// Ends the combine block at the insertion point with tt.combine.return:
  /// one value per input, of its element type (UserError otherwise).
  void combineReturn(const std::vector<Value *> &values);
  /// tl.associative_scan: axis may be negative.
  std::vector<Value *> scan(const std::vector<Value *> &inputs, int axis,
                            bool reverse, Block *combine);
  /// tl.reduce with a combine: all axes (flattening first) when nullopt.
  std::vector<Value *> reduceCombine(const std::vector<Value *> &inputs,
                                     std::optional<int> axis, bool keepDims,
                                     Block *combine);

  /// tl.dot(a, b, acc, input_precision, out_dtype, max_num_imprecise_acc):
  /// a MxK, b KxN (or batched: BxMxK and BxKxN) with M, N, K >= 16; acc (or
  /// zeros of out_dtype) MxN (BxMxN).
  Value *dot(Value *a, Value *b, Value *acc,
             const std::string &inputPrecision, DType outDType,
             int64_t maxNumImpreciseAcc = 0);

  /// tl.inline_asm_elementwise: args broadcast to one shape; one result of
  /// that shape per dtype. The constraints must fit the dtypes and pack
  /// (tritium/ir/inline_asm.h).
  std::vector<Value *> inlineAsmElementwise(
      const std::string &asmText, const std::string &constraints,
      std::vector<Value *> args, const std::vector<DType> &resultDTypes,
      bool pure, int64_t pack);

private:
  Module &module_;
  Location loc_;
  InsertPoint ip_;
  Function *currentFunction_ = nullptr;
  std::vector<std::unique_ptr<Block>> detached_;
};

} // namespace tritium
