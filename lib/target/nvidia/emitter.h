// The PTX emitter's shared state (internal to lib/target/nvidia).
//
// Every value of the GPU IR becomes PTX virtual registers: a scalar one
// register, a tensor one register per element its thread holds (the
// register index of its layout). ptxas allocates the real registers, so the
// emitter never reuses one; a splat or a register-only data movement just
// names the operand's registers again.
//
// Register classes: i1 -> .pred %p; 8- and 16-bit ints and floats (fp16,
// bf16, fp8) -> .b16 %rs (8-bit ints kept sign- or zero-extended to 16 bits,
// fp8 in the low byte); 32-bit ints -> .b32 %r; 64-bit ints and pointers ->
// .b64 %rd; fp32 -> .f32 %f; fp64 -> .f64 %fd.
//
// Each family of ops has its own file: emit_arith.cpp (integer/float
// arithmetic, comparisons, select, math), emit_convert.cpp (casts),
// emit_memory.cpp (loads, stores, atomics), emit_reduce.cpp,
// emit_control_flow.cpp (scf.for/if/while), emit_tensor.cpp (constants,
// program ids, make_range, splat and the data movement ops), emit_shared.cpp
// (memory descriptors, async copies, mbarriers), emit_dot.cpp (tt.dot:
// mma.sync, wgmma or FMAs), emit_debug.cpp (tt.print through vprintf,
// tt.assert into the debug record, tt.elementwise_inline_asm).
//
// A `!ttg.memdesc` value is one .b32 %r: the shared-memory address of its
// buffer. A `!ttg.async.token` has no register.
#pragma once

#include "tritium/analysis/axis_info.h"
#include "tritium/gpu/conversion.h"
#include "tritium/gpu/layouts.h"
#include "tritium/gpu/shared_memory.h"
#include "tritium/target/nvidia/ptx.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace tritium::nvidia {

enum class RC { Pred, B16, B32, B64, F32, F64 };
constexpr int kNumRC = 6;

/// The register class of a scalar or pointer type.
RC regClass(const Type *scalar);
/// `mov.b32` and friends for a register class.
const char *movFor(RC c);

using Regs = std::vector<std::string>;

class Emitter {
public:
  /// `f` has been through --allocate-shared-memory and --insert-barriers.
  Emitter(Function &f, const GPUOptions &opts);

  /// The whole .entry, with its parameters in `params`.
  std::string emitKernel(std::vector<KernelParam> &params);

  Function &fn;
  const GPUOptions &opts;
  AxisInfoAnalysis axis;
  int numWarps;

  // ---- text -----------------------------------------------------------------
  void ins(const std::string &s) { body_ << "\t" << s << ";\n"; }
  void label(const std::string &l) { body_ << l << ":\n"; }
  std::string newLabel(const std::string &hint);
  /// Code that runs once at kernel entry (thread ids, per-layout thread
  /// coordinates), so that loops do not recompute it.
  void pro(const std::string &s) { prologue_ << "\t" << s << ";\n"; }
  /// The kernel uses an instruction of PTX ISA `v` (81 = 8.1) or later:
  /// `.version` becomes at least that (the target's own version otherwise).
  void needPtxVersion(int v) { ptxVersion_ = std::max(ptxVersion_, v); }

  // ---- registers and values
  // ----------------------------------------------------
  std::string reg(RC c);
  std::string regFor(const Type *scalar) { return reg(regClass(scalar)); }
  const Regs &regs(Value *v);
  void bind(Value *v, Regs r);
  /// Registers per thread of a value of type t (1 for scalars).
  static int numRegs(const Type *t);

  // ---- threads and layouts
  // ------------------------------------------------------
  std::string tid();
  std::string lane();
  std::string warp();
  /// A predicate true in warpgroup `w` (warps 4w .. 4w+3), or only in its
  /// first thread (`firstThread`).
  std::string inWarpgroup(int64_t w, bool firstThread = false);
  /// A predicate true in each warp's first lane.
  std::string firstLane();
  /// A predicate true in warp `k` alone, warp-uniform (from warp()).
  std::string inWarp(int64_t k);
  /// sum over the lane and warp bits of this thread of dot(basis, w): the
  /// thread's part of a linear function of the coordinate (a prologue
  /// register, cached).
  /// Bases combine by XOR: where the layout is not disjoint, w must make
  /// the function GF(2)-linear (gpu::linearFunction; InternalError if not)
  /// and the bits that overlap are XORed in (xor.b32) instead of added.
  /// With `sw` (a conversion scratch's swizzle, gpu::ScratchSwizzle): the
  /// thread's part of sw(dot(coord, w)), which needs w GF(2)-linear.
  std::string threadLinear(const Type *t, const std::vector<int64_t> &w,
                           const gpu::ScratchSwizzle *sw = nullptr);
  /// The same function at the element of this thread whose register part
  /// is `regPart` (dot(regCoord(r), w)): {a register, an immediate} whose
  /// sum it is. The register is threadLinear's, XORed with the bits of
  /// regPart that the thread's part also uses (none where the parts have
  /// disjoint bits: today's immediate offsets).
  std::pair<std::string, int64_t>
  threadLinearAt(const Type *t, const std::vector<int64_t> &w, int64_t regPart,
                 const gpu::ScratchSwizzle *sw = nullptr);
  /// The XOR over the set bits of this thread's lane and warp ids of
  /// laneValues[i] / warpValues[i] (their sum where `additive`): a prologue
  /// register, cached under `key`. threadLinear's engine; shared-memory
  /// offsets (emit_shared.cpp) call it with the bases of a composed map.
  std::string threadValue(const std::string &key,
                          std::vector<int64_t> laneValues,
                          std::vector<int64_t> warpValues, bool additive);
  /// thread ^ regPart as {a register, an immediate} whose sum it is, where
  /// `thr` holds the thread's part and `mask` the bits it may use: the
  /// bits of regPart inside the mask are XORed into a (cached prologue)
  /// register, the others are the immediate.
  std::pair<std::string, int64_t> xorSplit(const std::string &thr,
                                           uint64_t mask, int64_t regPart);
  /// The thread's part of coordinate `dim` of the elements it holds.
  std::string threadCoord(const Type *t, int dim);
  /// A predicate true in the threads that own their elements (the first of
  /// each set of copies); "" when every thread does. For a scalar: thread 0.
  std::string ownerPred(const Type *t);
  /// For each register of `v` (a tensor), the first register of its thread
  /// holding a value known to be equal (axis info constancy within the
  /// thread's registers); elementwise ops compute only those, as Triton
  /// does. Identity for scalars.
  std::vector<int> equalRegisters(Value *v);
  /// The shared-memory scratch of `op` (a .u32 shared address register) at
  /// the offset --allocate-shared-memory wrote on it.
  std::string scratch(const Operation &op);
  /// The barrier between the two phases of one op that moves data through
  /// its own scratch (write, bar.sync, read): part of that op's lowering.
  /// Barriers between ops are gpu.barrier ops (--insert-barriers).
  void barrier() { ins("bar.sync 0"); }
  /// Called by the lowering of an op owning scratch right before its first
  /// shared-memory write: prints the gpu.barrier placed before the op, if
  /// any. Its register work (shuffles, a global atomic) comes first, so the
  /// warps wait as late as they can; that work touches no shared memory, so
  /// the barrier orders the same accesses.
  void sharedWriteBegins(const Operation &op);

  /// Registers of tt.make_range results with a non-negative start: register
  /// -> (the thread's coordinate register, constant). Their values are
  /// thread + constant without i32 overflow, so an address computed from one
  /// can be the thread's address plus constant bytes (ptxas then folds the
  /// constant into the load's immediate offset, as Triton's code has it).
  std::map<std::string, std::pair<std::string, int64_t>> rangeRegs;
  /// The same registers' values over all threads: [lo, hi] (the constant
  /// plus the thread part's bound, the OR of the layout's lane and warp
  /// coordinates: an XOR of bases sets no bit outside their union).
  std::map<std::string, std::pair<int64_t, int64_t>> rangeBounds;
  /// 64-bit byte offsets of loop-invariant scalar offsets (hoistScaledOffsets):
  /// (offset register, element bytes, signed) -> register.
  std::map<std::tuple<std::string, int64_t, bool>, std::string> invariantScaled;
  /// Predicate registers whose value every thread knows at compile time (a
  /// comparison of a range with a constant that the bounds decide, e.g.
  /// `arange(0, 16384) < 11008` in the registers past column 11008), and
  /// the and/or/select of them. Loads under a false one are not emitted
  /// (their registers keep `other`), stores are dropped (ptxas then removes
  /// the arithmetic that fed them), a true one guards nothing: what LLVM
  /// does for Triton from the thread id's range.
  std::map<std::string, bool> knownPreds;
  /// Quotients by a constant computed by a multiply-high, per block: (block,
  /// dividend register, divisor, signed) -> quotient register. Index
  /// arithmetic pairs `x // D` with `x % D`; the second reuses the first's
  /// quotient (`x % D` = x - (x / D) * D). Keyed by the block so that a reuse
  /// is always dominated by the definition (ops of one block run in order).
  std::map<std::tuple<const Block *, std::string, int64_t, bool>, std::string> quotients;
  std::optional<bool> knownPred(const std::string &p) const {
    auto it = knownPreds.find(p);
    if (it == knownPreds.end())
      return std::nullopt;
    return it->second;
  }
  /// A predicate register holding `v` (a prologue register, recorded in
  /// knownPreds).
  std::string constPred(bool v);
  /// scf.for ops whose body leaves a wgmma group in flight (an async
  /// ttng.warp_group_dot accumulating into the loop's registers): emitOp
  /// waits for it after the loop.
  std::set<const Operation *> asyncWgmmaLoops;

  // ---- register demand (demand.cpp) -----------------------------------------
  /// Whether register r of tensor v is read by anything (always true for
  /// scalars, and before computeDemand ran). Elementwise ops, tt.addptr and
  /// scf.for's copies skip the others (binding kUndemanded in their place).
  bool demanded(Value *v, int r) const;
  void computeDemand();
  static constexpr const char *kUndemanded = "%undemanded";

  // ---- emission -------------------------------------------------------------
  void emitBlock(Block &b);
  void emitOp(Operation &op);
  /// Copies `from` into `to` (same classes), all reads before all writes.
  void parallelCopy(const std::vector<Regs> &to, const std::vector<Regs> &from,
                    const std::vector<const Type *> &types);

  // ---- bounds checks (GPUOptions::boundsCheck; emit_bounds.cpp) ------------
  /// A site for an access of `op` through `ptr`, or -1 when checks are off
  /// or the pointer's parameter is unknown (then counted as unchecked).
  int accessSite(const Operation &op, Value *ptr, const char *kind,
                 int elemBytes);
  /// Checks `bytes` bytes at `addr` for `site` where `guard` holds (""
  /// = always) and reports a violation; returns the guard the access must
  /// run under (`guard` itself when site < 0).
  std::string checkAccess(int site, const std::string &addr, int bytes,
                          const std::string &guard);
  /// Appends the hidden parameters to the .entry signature.
  void boundsParams(std::vector<KernelParam> &hidden, std::ostringstream &sig);
  /// Where `bad` holds, counts a failure in the record; the first failing
  /// thread of the grid writes `site`, the program id, `bytes` and `offset`
  /// (a .b64 register) there. Used by checkAccess and tl.device_assert.
  void reportFailure(int site, const std::string &bad, int bytes,
                     const std::string &offset);
  std::vector<AccessSite> accessSites;
  std::vector<KernelParam> hiddenParams;

  // ---- TMA (emit_shared.cpp) -------------------------------------------------
  /// The tensor maps the kernel's TMA copies read, one `.param .align 64 .b8
  /// [128]` each after the kernel's parameters (CompiledKernel::tensorMaps).
  std::vector<TensorMapSpec> tensorMaps;
  /// The .param name of `spec`'s map, added to tensorMaps the first time.
  std::string tensorMapParam(const TensorMapSpec &spec);
  /// A register holding the generic address of that map, computed once in
  /// the kernel's prologue.
  std::string tensorMapAddress(const TensorMapSpec &spec);
  int uncheckedAccesses = 0;

  // ---- tt.print, tt.assert, inline asm (emit_debug.cpp) ---------------------
  /// Text copied into the body as it is (braces, the user's asm).
  void verbatim(const std::string &s) { body_ << s; }
  /// The format strings of tt.print, printed as .global byte arrays.
  std::vector<std::string> formatStrings;
  /// Bytes of vprintf's argument buffer in local memory (0: none), and its
  /// generic address (a prologue register, once used).
  int printBufferBytes = 0;
  std::string printBufferAddress;

  // ---- what the lowering decided (CompiledKernel::accesses) ---------------
  /// Records that `op` became `count` `instruction`s per thread, each moving
  /// `elems` elements of `elemBytes` bytes. Lowerings call it once per op.
  void noteAccess(const Operation &op, const std::string &instruction,
                  int64_t elemBytes, int elems, int count);
  std::vector<MemoryAccess> accesses;

  [[noreturn]] void userError(const Operation &op, const std::string &msg);
  [[noreturn]] void internalError(const Operation &op, const std::string &msg);
  void requireSM(const Operation &op, int sm, const std::string &what);

private:
  std::ostringstream body_, prologue_;
  int regCount_[kNumRC] = {};
  int labelCount_ = 0;
  std::map<Value *, Regs> values_;
  std::map<Value *, std::vector<char>> demand_;
  bool demandComputed_ = false;
  int ptxVersion_ = 0;
  std::string tid_, lane_, warp_, constPred_[2];
  std::map<std::string, std::string> threadLinearCache_, ownerCache_, tensorMapAddr_;
  std::string smemBase_;
  /// A gpu.barrier whose next op owns scratch: printed by
  /// sharedWriteBegins(that op).
  const Operation *barrierFor_ = nullptr;
  std::map<int, std::string> extents_;
  std::string record_;
  std::string extent(int param);
  std::string boundsRecord();
};

// ---- op families (each returns false for an op it does not handle) ----------
bool emitArithmetic(Emitter &e, Operation &op);
bool emitCast(Emitter &e, Operation &op);
bool emitMemory(Emitter &e, Operation &op);
/// Before a loop (emit_memory.cpp): the byte offsets of the loop's pointer
/// advances by a scalar defined outside it (`ptrs += BLOCK_K * stride`).
void hoistScaledOffsets(Emitter &e, Operation &loop);
bool emitReduce(Emitter &e, Operation &op);
bool emitCombineOp(Emitter &e, Operation &op); // tt.reduce_combine, tt.scan
bool emitControlFlow(Emitter &e, Operation &op);
bool emitTensorOp(Emitter &e, Operation &op);
bool emitShared(Emitter &e, Operation &op);
bool emitDot(Emitter &e, Operation &op);
bool emitDebugOp(Emitter &e, Operation &op); // tt.print, tt.assert, inline asm
/// What emit_debug.cpp adds to the module (vprintf's declaration, format
/// strings) and to the top of the kernel's body (the argument buffer).
std::string debugModuleDecls(const Emitter &e);
std::string debugFrameDecls(const Emitter &e);

// ---- helpers shared between families
// ----------------------------------------------
/// PTX integer type of an op on dtype t: "s32", "u16" (8-bit ints compute in
/// 16 bits).
std::string intType(DType t, bool signedOp);
/// Whether `v` is a constant zero (+0.0, 0 or false), through layout
/// conversions and float casts (a cast of +0 is +0 in every format): what
/// cp.async may fill masked-off elements with, and a wgmma accumulator that
/// need not be materialised.
bool isConstantZero(Value *v);
/// Bit type of a register class: "b16", "b32", ...
std::string bitType(RC c);
/// Re-extends an 8-bit int to the signedness an op needs.
std::string prepareInt(Emitter &e, DType t, const std::string &r,
                       bool signedOp);
/// Sign- or zero-extends the low 8 bits of a 16-bit register per t.
std::string normalizeInt(Emitter &e, DType t, const std::string &r);
/// A float of dtype t as f32 (exact), and back (rounding to nearest even;
/// fp8 saturating, needs sm_89).
std::string toF32(Emitter &e, const Operation &op, DType t,
                  const std::string &r);
std::string fromF32(Emitter &e, const Operation &op, DType t,
                    const std::string &f);
/// One element of a binary arithmetic op (integer or float opcode) on
/// scalar type `elem`.
std::string binaryElement(Emitter &e, const Operation &op, OpCode code,
                          const Type *elem, const std::string &a,
                          const std::string &b);
/// One element of a cast op.
std::string castElement(Emitter &e, const Operation &op, OpCode code,
                        const Type *from, const Type *to, const std::string &r);
/// A register holding a constant of scalar type t.
std::string materialize(Emitter &e, const Type *t, const Attribute &value);
/// 32-bit float immediate `0f3F800000`.
std::string f32Imm(float v);
/// Moves src's elements to dst's layout through shared memory (scratch of
/// `op`): src element with row-major index i is read by the dst element at
/// coordinate c where i = dot(c, weights). With ownersOnly, only the owning
/// thread of each src element writes it.
Regs moveThroughShared(Emitter &e, const Operation &op, const Type *src,
                       const Regs &srcRegs, const Type *dst,
                       const std::vector<int64_t> &weights,
                       bool ownersOnly = false);
/// Elements per global access of a tensor of pointers (layout, axis info,
/// the mask's constancy; at most 16 bytes).
int globalVectorWidth(Emitter &e, Value *ptr, Value *mask, int64_t eb);
/// Elements per instruction of a tt.atomic_rmw: a float add on sm_90 takes
/// as many as a load would (atom.global.add.v4.f32), any other atomic 1.
int atomicVectorWidth(Emitter &e, const Operation &op);
/// The elements per access of a ttg.async_copy_global_to_local (1 when it
/// is copied element by element); prints nothing.
int asyncCopyWidth(Emitter &e, Operation &op);
/// Packs sub-word elements (in 16-bit registers) into one 32-bit word, and
/// back (8-bit ints sign-extended when signedByte).
std::string packWord(Emitter &e, const Regs &elems, int64_t eb);
Regs unpackWord(Emitter &e, const std::string &w, int64_t eb, bool signedByte);
/// Memory type suffix for ld/st of one element in a register of its class.
std::string memType(const Type *elem, bool forLoad);

} // namespace tritium::nvidia
