// Internals of the CPU executor shared by lib/exec/*.cpp.
//
// Values: a runtime value (RValue) is a type plus a flat row-major array of
// 64-bit slots, one per element:
//  - integers: int64, sign-extended (signed dtypes) or zero-extended (unsigned
//    dtypes and i1) from the dtype's width, so every slot is the dtype's value;
//  - floats: double, already rounded to the dtype after every op;
//  - pointers: a provenance (which kernel argument it derives from) and a
//    64-bit byte offset from that argument's base, which wraps as the GPU's
//    64-bit address arithmetic does. A pointer not derived from an argument
//    (int_to_ptr of an unknown address, a constant) has provenance
//    kNoProvenance and its address as the offset; any access through it
//    fails. The slot holds the provenance in its top 16 bits and the offset,
//    when it fits in a signed 48-bit field (every real access does), below;
//    any other pointer is "wide": tag kWidePtr and the index of its
//    (provenance, offset) in the run's PointerTable, so no bit of an address
//    is ever lost (a 64-bit integer cast to a pointer and back is itself).
// Buffers are shared (values are immutable once built), so reshape-like ops
// and copies between frame slots cost a reference count.
//
// Plans: before running, each function is turned into a FunctionPlan: every
// value gets a frame slot, attributes are decoded into enums, constants and
// ranges are precomputed, and each op lists the slots that die after it.
#pragma once

#include "tritium/exec/executor.h"
#include "tritium/support/float_formats.h"
#include "tritium/ir/ir.h"

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tritium::exec {

union Slot {
  int64_t i;
  uint64_t u;
  double f;
};

// ---------------------------------------------------------------------------
// Pointer slots
// ---------------------------------------------------------------------------

constexpr uint64_t kNoProvenance = 0xffff;
constexpr uint64_t kWidePtr = 0xfffe; // provenances are below it
constexpr uint64_t kLow48 = (uint64_t(1) << 48) - 1;

/// A pointer's provenance and byte offset (modulo 2^64) from that argument's
/// base (from 0 for kNoProvenance).
struct PtrParts {
  uint64_t prov;
  uint64_t off;
  int64_t signedOff() const { return int64_t(off); }
};

/// The (provenance, offset) pairs of a run's wide pointers, interned so that
/// a value computed again (a loop, another program) takes no new entry.
/// Thread-safe: the programs of a run share it.
class PointerTable {
public:
  /// The most wide pointers one run may create (bounds the memory).
  static constexpr size_t kMaxEntries = size_t(1) << 24;
  /// Index of (prov, off); throws ExecutionError past kMaxEntries.
  uint64_t intern(uint64_t prov, uint64_t off);
  PtrParts get(uint64_t index) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return entries_[index];
  }

private:
  struct Hash {
    size_t operator()(const std::pair<uint64_t, uint64_t> &k) const {
      return std::hash<uint64_t>()(k.first * 0x9e3779b97f4a7c15ull ^ k.second);
    }
  };
  mutable std::shared_mutex mu_;
  std::vector<PtrParts> entries_;
  std::unordered_map<std::pair<uint64_t, uint64_t>, uint64_t, Hash> index_;
};

inline uint64_t makePtr(PointerTable &table, uint64_t prov, uint64_t off) {
  int64_t s = int64_t(off);
  if (s >= -(int64_t(1) << 47) && s < (int64_t(1) << 47))
    return (prov << 48) | (off & kLow48);
  return (kWidePtr << 48) | table.intern(prov, off);
}
inline PtrParts ptrParts(const PointerTable &table, uint64_t s) {
  uint64_t tag = s >> 48;
  if (tag == kWidePtr)
    return table.get(s & kLow48);
  return {tag, uint64_t(int64_t(s << 16) >> 16)};
}

// ---------------------------------------------------------------------------
// Integer and float helpers
// ---------------------------------------------------------------------------

/// Sign-/zero-extends the low `w` bits of v (1 <= w <= 64).
inline int64_t sext(int64_t v, int w) {
  int s = 64 - w;
  return int64_t(uint64_t(v) << s) >> s;
}
inline uint64_t zext(int64_t v, int w) {
  int s = 64 - w;
  return (uint64_t(v) << s) >> s;
}

/// How an integer dtype is stored: its width and whether it is sign-extended.
struct IntFmt {
  int width = 64;
  bool sgn = true;
  int64_t norm(int64_t v) const {
    return sgn ? sext(v, width) : int64_t(zext(v, width));
  }
};
IntFmt intFmt(DType t);

inline double roundF(double x, DType t) {
  if (t == DType::FP64)
    return x;
  if (t == DType::FP32)
    return double(float(x));
  return roundToFloatDType(x, t);
}

/// Float -> integer of `width` bits, toward zero; saturates at the range of
/// the (signed or unsigned) width, NaN gives 0 (as the GPU's cvt.rzi does).
inline int64_t fpToInt(double x, int width, bool sgn) {
  if (x != x)
    return 0;
  if (sgn) {
    double lo = -std::ldexp(1.0, width - 1), hi = std::ldexp(1.0, width - 1);
    if (x <= lo)
      return width == 64 ? INT64_MIN : -(int64_t(1) << (width - 1));
    if (x >= hi)
      return width == 64 ? INT64_MAX : (int64_t(1) << (width - 1)) - 1;
    return int64_t(x);
  }
  if (x <= 0)
    return 0;
  if (x >= std::ldexp(1.0, width))
    return int64_t(width == 64 ? UINT64_MAX : (uint64_t(1) << width) - 1);
  return int64_t(uint64_t(x));
}

/// Bytes one element of `t` occupies in memory (i1: one byte).
int byteSize(DType t);

// ---------------------------------------------------------------------------
// Runtime values
// ---------------------------------------------------------------------------

class RValue {
public:
  RValue() = default;
  /// A value of type t with uninitialised storage.
  static RValue alloc(const Type *t);
  static RValue scalar(const Type *t, Slot s) {
    RValue r;
    r.type_ = t;
    r.n_ = 1;
    r.inl_ = s;
    return r;
  }

  const Type *type() const { return type_; }
  bool empty() const { return type_ == nullptr; }
  int64_t size() const { return n_; }
  const Slot *data() const { return buf_ ? buf_.get() : &inl_; }
  Slot *mutableData() { return buf_ ? buf_.get() : &inl_; }
  const Slot &operator[](int64_t i) const { return data()[i]; }
  /// The same elements seen with another type of the same element count.
  RValue withType(const Type *t) const {
    RValue r = *this;
    r.type_ = t;
    return r;
  }

private:
  const Type *type_ = nullptr;
  int64_t n_ = 0;
  Slot inl_{};
  std::shared_ptr<Slot[]> buf_;
};

using Frame = std::vector<RValue>;

/// Element dtype of a value's type (the pointee is not looked through).
inline DType elemDType(const Type *t) { return t->scalarType()->dtype(); }
inline bool isPtrElem(const Type *t) { return t->scalarType()->isPointer(); }
inline int64_t numElems(const Type *t) {
  return t->isTensor() ? t->numElements() : 1;
}

// ---------------------------------------------------------------------------
// Plans
// ---------------------------------------------------------------------------

enum class CmpIPred { EQ, NE, SLT, SLE, SGT, SGE, ULT, ULE, UGT, UGE };
enum class CmpFPred {
  OEQ,
  ONE,
  OLT,
  OLE,
  OGT,
  OGE,
  UEQ,
  UNE,
  ULT,
  ULE,
  UGT,
  UGE,
  ORD,
  UNO,
  AlwaysTrue,
  AlwaysFalse
};
enum class ReduceKind { Sum, Prod, Max, Min, ArgMax, ArgMin, XorSum };
enum class AtomicKind { Add, Max, Min, UMax, UMin, And, Or, Xor, Xchg };
enum class DotPrecision { TF32, TF32x3, IEEE };

struct FunctionPlan;
struct BlockPlan;

struct OpPlan {
  const Operation *op = nullptr;
  OpCode code = OpCode::Constant;
  std::vector<int> in;  // frame slots of the operands
  std::vector<int> out; // frame slots of the results
  std::vector<BlockPlan> regions;
  std::vector<int> freeAfter; // slots whose last use is this op
  int kind = 0;               // a CmpIPred/CmpFPred/ReduceKind/AtomicKind
  int64_t axis = 0;
  std::vector<int64_t> order;
  const FunctionPlan *callee = nullptr;
  RValue constant;  // precomputed result of arith.constant / tt.make_range
  std::string text; // print prefix, assert message
  bool hex = false;
  /// Shared-memory ops: the buffer offset of each element of the tile
  /// (row-major), from the memdesc's layout.
  std::vector<int64_t> sharedOffsets;
  /// ttng.warp_group_dot: the same for its second memdesc (B).
  std::vector<int64_t> sharedOffsetsB;
};

struct BlockPlan {
  bool present = false; // false for an empty region (scf.if without else)
  std::vector<int> args;
  std::vector<OpPlan> ops;
};

struct FunctionPlan {
  const Function *fn = nullptr;
  int numSlots = 0;
  BlockPlan body;
};

/// Plans of the kernel and every function it calls (planned on first call
/// site; recursion is allowed).
struct ModulePlan {
  std::map<const Function *, std::unique_ptr<FunctionPlan>> functions;
  /// Where pointer constants that do not fit a slot go (the run's table).
  PointerTable *pointers = nullptr;
};

/// Plans `fn` and, transitively, its callees in `m`. Throws IRError on IR the
/// executor cannot run (bad arity, unknown attribute values, unknown callee).
const FunctionPlan *planFunction(ModulePlan &mp, const Module &m,
                                 const Function &fn);

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

/// A pointer argument of the kernel, for bounds checks and messages.
struct ArgInfo {
  bool isPointer = false;
  uint64_t base = 0;
  uint64_t bytes = 0;
  uint64_t before = 0; // reachable bytes below base (ExecPointer::before)
  const Type *pointee = nullptr;
  std::string name; // nameHint, may be empty
};

struct RunState {
  std::string kernel;
  std::array<int64_t, 3> grid{};
  std::vector<ArgInfo> args;
  /// Wide pointers (see Pointer slots); mutable: evaluation creates them.
  mutable PointerTable pointers;
  std::mutex atomicMutex;
  std::mutex printMutex;
  /// Set by the first failing program; loops of the others stop early.
  std::atomic<bool> stop{false};
};

/// One program's shared memory: every live ttg.local_alloc's buffer (all
/// its buffers, in offset order). A memdesc value is a slot holding
/// (allocation index << 32) | element offset of its first element.
struct SharedArena {
  std::vector<std::vector<Slot>> buffers;
};

struct ProgramCtx {
  RunState *run = nullptr;
  std::array<int64_t, 3> pid{};
  int callDepth = 0;
  SharedArena shared;
};

/// "file.py:12:9", or "unknown location".
std::string locStr(const Location &loc);

/// Throws ExecutionError "<what> in kernel 'k' at loc: <detail>, program id
/// (x, y, z)".
[[noreturn]] void execError(const ProgramCtx &ctx, const OpPlan &op,
                            const std::string &what, const std::string &detail);

/// Absolute address of a pointer slot (for comparisons and ptr_to_int).
uint64_t ptrAddress(const RunState &run, uint64_t s);
/// The pointer slot for an absolute address (finds the argument that holds
/// it, for provenance) (memory.cpp).
uint64_t ptrFromAddress(const RunState &run, uint64_t addr);

/// A load through pointer tensor `ptr` (masked lanes take `other`, or zero)
/// into a value of `type` (memory.cpp).
/// The block of a tensor descriptor (tt.descriptor_load's semantics) whose
/// base, shapes, strides and offsets are op's operands from `first` on, as
/// a tensor of `type`.
RValue descriptorBlock(const OpPlan &op, Frame &f, const ProgramCtx &ctx, unsigned first,
                       const Type *type);
/// Writes `value` (a tensor of the block's shape) to the block of the
/// tensor descriptor whose base is op's operand `first` (tt.descriptor_store's
/// semantics: elements outside the tensor are not written).
void descriptorWrite(const OpPlan &op, Frame &f, const ProgramCtx &ctx, unsigned first,
                     const RValue &value);
RValue loadThrough(const OpPlan &op, const RValue &ptr, const RValue *mask,
                   const RValue *other, const Type *type,
                   const ProgramCtx &ctx);
/// Plans a shared-memory, async-copy or barrier op (shared_memory.cpp).
void planSharedMemoryOp(const Operation &op, OpPlan &p);

/// Runs one (shared_memory.cpp).
void evalSharedMemoryOp(const OpPlan &op, Frame &f, ProgramCtx &ctx);

/// Element-wise, cast and math ops (arith.cpp).
void evalArith(const OpPlan &op, Frame &f, const ProgramCtx &ctx);
/// Shape ops, reductions, dot (tensor_ops.cpp).
void evalTensorOp(const OpPlan &op, Frame &f, const ProgramCtx &ctx);
/// tt.dot's result for operands a, b and accumulator c (dot.cpp).
RValue dot(const OpPlan &op, const RValue &a, const RValue &b,
           const RValue &c);
/// addptr, load, store, atomics, int/pointer casts (memory.cpp).
void evalMemoryOp(const OpPlan &op, Frame &f, const ProgramCtx &ctx);

/// Text of one element for tt.print.
std::string formatElement(const RunState &run, const Type *elemType, Slot s,
                          bool hex);

} // namespace tritium::exec
