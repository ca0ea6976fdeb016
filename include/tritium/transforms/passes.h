// The target-independent passes over tile IR, one per file in
// lib/transforms/. Each is registered under its flag name in registry.cpp;
// prefer `runPasses(m, {"cse"}, stats, opts)` over calling these directly, so
// that the verifier and error wrapping apply. None of them reads an option
// yet; they take the options like every pass does.
#pragma once

#include "tritium/transforms/pass.h"

namespace tritium {

/// `--canonicalize`: folds pure elementwise ops over constants (scalar and
/// splat tensors, with the exact integer/float semantics of the result
/// type), applies algebraic identities (x+0, x*1, select on a constant, ...),
/// turns splat/broadcast/reshape of constants into constants, inlines the
/// taken branch of an scf.if on a constant and drops scf.for loops that run
/// zero times; repeats until nothing changes, then erases pure ops whose
/// results are unused. Counters: canonicalize.folded, .simplified, .erased.
void canonicalize(Module &m, const PipelineOptions &opts, PassStats &stats);

/// `--cse`: replaces a pure op by an identical one (same op, operands,
/// attributes, result types; commutative operands in either order) that
/// dominates it: earlier in the same block or in an enclosing block. Ops that
/// read or write memory are never merged. Counter: cse.removed.
void cse(Module &m, const PipelineOptions &opts, PassStats &stats);

/// `--cse-loops`: `--cse` for ops nested in an scf.for/scf.while only, each
/// merged with an identical one that is also in a loop. Counter: cse.removed.
void cseLoops(Module &m, const PipelineOptions &opts, PassStats &stats);

/// `--dce`: erases pure ops and side-effect-free scf.for/scf.if whose results
/// are unused, loop-carried values of scf.for that only feed themselves, and
/// functions that are neither kernels (`kernel = true`) nor reachable through
/// calls from one (a module without any kernel keeps all its functions).
/// Loads are kept even when unused. Counters: dce.removed,
/// dce.iter-args-removed, dce.results-removed, dce.functions-removed.
void dce(Module &m, const PipelineOptions &opts, PassStats &stats);

/// `--inline`: replaces every tt.call by a copy of the callee's body
/// (callees are inlined bottom-up, so nested calls disappear too). A
/// recursive call is a UserError at the call. Counter: inline.calls.
void inlineCalls(Module &m, const PipelineOptions &opts, PassStats &stats);

/// `--unroll`: fully unrolls scf.for ops marked `unroll = "full"`
/// (tl.static_range); their bounds must fold to constants and the loop may
/// run at most 4096 times, else UserError at the loop. Counters:
/// unroll.loops, unroll.iterations.
void unrollLoops(Module &m, const PipelineOptions &opts, PassStats &stats);

/// `--licm`: hoists pure, speculatable ops whose operands are all defined
/// outside an scf.for / scf.while out of the loop. Counter: licm.hoisted.
void licm(Module &m, const PipelineOptions &opts, PassStats &stats);
/// `--licm-scalars`: licm for ops whose results are all scalars (tensors
/// stay in the loop). In the default pipeline. Counter: licm-scalars.hoisted.
void licmScalars(Module &m, const PipelineOptions &opts, PassStats &stats);

/// `--prefetch-loads`: in an innermost scf.for that reduces and has no dot,
/// the loads computed from the induction variable are issued one iteration
/// ahead and carried in registers; a loop that also stores is versioned on a
/// runtime check that no store can write what a prefetched load reads. Run
/// by the GPU compile before convert-to-gpu (it needs num_warps). Counters: prefetch-loads.loops, .loads, .versioned.
void prefetchLoads(Module &m, const PipelineOptions &opts, PassStats &stats);
/// `--expand-descriptor-loads` (expand_descriptor_loads.cpp): every
/// tt.descriptor_load becomes the masked tt.load of its block, except, on a
/// target with TMA, those a pipelined dot loop can copy with it (see the
/// file). Run first by the GPU compile.
/// Counters: expand-descriptor-loads.expanded, .kept-for-tma.
void expandDescriptorLoads(Module &m, const PipelineOptions &opts, PassStats &stats);
/// --split-masked-loops (split_masked_loops.cpp): a dot loop masking with a
/// condition true on a prefix of its iterations runs the prefix unmasked.
void splitMaskedLoops(Module &m, const PipelineOptions &opts, PassStats &stats);

/// `--widen-offsets`: for pointers derived from an argument marked
/// `tt.int64_offsets = true` (a tensor of 2^31 elements or more), rebuilds
/// the i32 offsets of tt.addptr, and the i32 comparisons in the masks of
/// their loads, stores and atomics, in i64 so that no intermediate value
/// wraps (see widen_offsets.cpp). Counters: widen-offsets.addptrs,
/// .masks, .ops.
void widenOffsets(Module &m, const PipelineOptions &opts, PassStats &stats);

/// `--narrow-division`: a 64-bit arith.divsi/remsi/divui/remui whose
/// operands are 32-bit integers extended (or constants that fit in 32 bits)
/// becomes the 32-bit op and an extension of its result, where the two
/// agree for every input: always for unsigned ops; for signed ones when the
/// dividend is known non-negative (program ids, ranges, constants) or the
/// divisor is a constant other than -1 (see narrow_division.cpp). A 64-bit
/// division is a long subroutine on the GPU. Counter: narrow-division.ops.
void narrowDivision(Module &m, const PipelineOptions &opts, PassStats &stats);

/// `--check-const-pointers`: a tt.store, tt.atomic_rmw or tt.atomic_cas
/// whose pointer derives from a function argument with {tt.const = true}
/// (a kernel parameter annotated tl.const) is a UserError at the write,
/// "Cannot store to a constant pointer" as Triton words it. Derivation is
/// analysis/pointer_provenance.h's. Counter: check-const-pointers.writes.
void checkConstPointers(Module &m, const PipelineOptions &opts, PassStats &stats);

} // namespace tritium
