// The passes that take tile IR to GPU IR and tidy it, and their registry.
//
// GPU IR is tile IR in which every tensor type carries a layout
// (tritium/gpu/layouts.h). A layout conversion is written
//   %y = ttg.convert_layout %x : tensor<128xf32, #new>
#pragma once

#include "tritium/ir/op_support.h"

#include "tritium/gpu/layouts.h"
#include "tritium/transforms/pass.h"

#include <vector>

namespace tritium::gpu {

/// `--convert-to-gpu`: gives every tensor of every function a layout.
///  1. Values that must share a layout (operands and results of elementwise
///     ops, pointer/mask/value of memory ops, loop-carried values) are
///     grouped.
///  2. A group with loads or stores gets a blocked layout coalesced along
///     the pointers' most contiguous dim, with as many elements per thread
///     as contiguity and alignment allow (16-byte accesses); other groups
///     get Triton's default blocked layout.
///  3. Groups are visited largest first; each one's layout propagates
///     through broadcast, expand_dims, reduce and trans to its neighbours
///     (slice layouts for reductions), so that those ops move no data.
///  4. Where two layouts still meet, a conversion is inserted.
/// Tensor dims must be powers of two (UserError otherwise). The number of
/// warps is opts.numWarps (the function attribute `num_warps`, when present,
/// wins; it is set on every function converted). Functions that already
/// have layouts are left alone.
/// Counters: gpu.layouts-assigned, gpu.conversions-inserted.
void convertToGPU(Module &m, const PipelineOptions &opts, PassStats &stats);
/// Whether convert-to-gpu has a layout rule for `code` (Rejected: tt.call,
/// which must be inlined first). The op-coverage unit test asks here.
OpSupport layoutSupport(OpCode code);

/// `--remove-layout-conversions`: drops conversions to the same layout,
/// folds chains of conversions, and recomputes cheap producers (constants,
/// splats, make_range and the integer/pointer arithmetic, broadcasts and
/// expand_dims over them) directly in the wanted layout instead of moving
/// their values through shared memory. Then sinks conversions below the
/// pure elementwise ops of their block that consume them (casts, arithmetic
/// with splats or constants, compares, selects): the ops run in the source
/// layout and only their one result used elsewhere is converted, when it is
/// no wider per element than the converted value (so `acc.to(f16)` converts
/// fp16: the matmul epilogue moves half the bytes). A conversion stays when
/// a user has a memory effect, is not elementwise, sits in another block,
/// widens, has an operand that cannot be rebuilt (a load), or when more
/// than one value would need converting (e.g. a store of the fp32 values
/// beside the truncf). Finally erases what became unused.
/// Counters: gpu.conversions-removed, gpu.ops-rematerialized,
/// gpu.conversions-sunk, gpu.ops-sunk.
void removeLayoutConversions(Module &m, const PipelineOptions &opts,
                             PassStats &stats);

/// `--accelerate-matmul`: the layouts of the instruction that computes each
/// tt.dot. `acc + dot(a, b, 0)` first becomes `dot(a, b, acc)`. On sm_80 and
/// newer, a dot of fp16/bf16, fp8 (widened to fp16), int8 or fp32 with
/// input_precision tf32/tf32x3 gets an mma.sync (m16n8) accumulator layout,
/// carried through the loops and ifs that hold the accumulator, and dot_op
/// layouts for its operands; other dots (fp32 "ieee", fp64) are computed
/// with FMAs, their operands laid out so that each thread holds all of K
/// for its own rows and columns. Rank-3 dots are a UserError for now.
/// Counters: gpu.dots-mma-v2, gpu.dots-fma, gpu.dot-accumulators-folded,
/// gpu.conversions-inserted.
void accelerateMatmul(Module &m, const PipelineOptions &opts,
                      PassStats &stats);

/// `--pipeline`: software pipelining of the loads that feed shared memory.
/// In an innermost scf.for (constant positive step, no global writes or
/// calls in its body), each tt.load whose only user is a ttg.local_alloc
/// read only by ttg.local_load (the form accelerate-matmul leaves dot
/// operands in) becomes asynchronous copies into a multi-buffered
/// allocation of S = num_stages buffers: a prologue issues iterations
/// 0..S-2, each iteration waits for its own group (ttg.async_wait
/// {num = S-2}), issues iteration i+S-1 into the buffer iteration i-1 read,
/// and reads its buffer through ttg.memdesc_index; after the loop, a wait
/// for everything and ttg.local_dealloc. S is the loop's `num_stages`
/// attribute (tl.range), else opts.numStages; S <= 1 and loops or loads
/// that do not fit are left as they were. Copies of iterations past the
/// end are masked off. See pipeline_loops.cpp for the outline.
/// Counters: gpu.loops-pipelined, gpu.loads-pipelined.
void pipelineLoops(Module &m, const PipelineOptions &opts, PassStats &stats);

/// --order-warpgroups: on sm_90a, in a kernel of 8 warps, the first of the
/// two wgmma products of an attention loop (a fresh product, then one
/// accumulating into a carried value with A in registers; scores not
/// masked; a gpu.barrier in the body, so it runs after insert-barriers)
/// gets {pingpong = true}: warpgroup 1 issues it after warpgroup 0 did, each
/// iteration. See order_warpgroups.cpp. Counter: gpu.warpgroups-ordered.
void orderWarpgroups(Module &m, const PipelineOptions &opts, PassStats &stats);

/// --lower-tma-stores: each tt.descriptor_store left by expand-descriptor-loads
/// (kept for TMA on sm_90a) becomes a ttg.local_alloc of its value (in the
/// layout it has; a conversion that only fed the store is skipped) into an
/// NVMMA buffer of the TMA box layout, and a
/// ttng.async_tma_copy_local_to_global of that buffer (wait = "write" when
/// the kernel may read the tensor too, "read" otherwise). See
/// lower_tma_stores.cpp. Counter: gpu.tma-stores.
void lowerTMAStores(Module &m, const PipelineOptions &opts, PassStats &stats);

/// --fuse-multiply-add: with enable_fp_fusion (PipelineOptions), an f32/f64
/// arith.addf or arith.subf with an operand that is a single-use
/// arith.mulf of the same block becomes one math.fma (subtraction through
/// arith.negf), as LLVM contracts Triton's. See fuse_multiply_add.cpp.
/// Counter: gpu.fma-fused.
void fuseMultiplyAdd(Module &m, const PipelineOptions &opts, PassStats &stats);

/// --propagate-layouts: a conversion out of an mma accumulator layout is
/// replaced, when that removes conversion work, by giving its result's
/// forward web (elementwise ops, reductions, expand_dims, broadcasts,
/// loop-carried values) layouts derived from the accumulator's, converting
/// only where the web meets other code. See propagate_layouts.cpp.
/// Counters: gpu.layout-webs, gpu.layout-web-values.
void propagateLayouts(Module &m, const PipelineOptions &opts, PassStats &stats);

/// Whether `v` can be recomputed in layout `l` from cheap producers
/// (constants, splats, ranges, broadcasts, cheap elementwise arithmetic) as
/// remove-layout-conversions does, instead of converted.
bool canRematerialize(Value *v, const GPULayout *l);
/// The elements remove-layout-conversions would move to give `v` layout
/// `l` by rebuilding it (0: rebuilt from cheap producers alone; more: small
/// leaves of the tree converted instead of `v`), or -1 when it would
/// convert `v` itself.
int64_t rematerializationCost(Value *v, const GPULayout *l);

/// The iter_arg (a block argument of the scf.for directly around `dot`, a
/// ttng.warp_group_dot) whose fp32/int32 accumulator the dot carries from
/// one iteration to the next, or null. The accumulator is the iter_arg
/// itself, read by nothing else, or the iter_arg times something
/// (attention's acc * alpha[:, None]: a arith.mulf that reads the iter_arg
/// and feeds only the dot, after a wgmma of the same block that carries
/// nothing and so retires every group); the dot's result is read only by
/// the yield carrying it. Such a dot may leave its wgmma group in flight
/// across iterations: pipeline-loops marks it {async = true} and the
/// emitter updates the iter_arg's registers in place.
Value *carriedAccumulator(const Operation &dot);
/// The scf.for of carriedAccumulator(dot), or null.
Operation *carriedAccumulatorLoop(const Operation &dot);

/// True for a layout conversion of the GPU IR (ttg.convert_layout).
bool isLayoutConversion(const Operation &op);
/// True when `v` is a constant zero (an integer 0 or +0.0, looked through
/// layout conversions): an accumulator a dot may drop, an `other` a
/// zero-filling copy already gives.
bool isZeroConstant(Value *v);
/// Inserts a conversion of `v` to layout `l` before `before`.
Value *createLayoutConversion(Operation *before, Value *v, const GPULayout *l);

/// The table of GPU passes (flag names "convert-to-gpu",
/// "remove-layout-conversions", "pipeline", ...), for runPasses. The order
/// they run in is the compile driver's (compileKernel,
/// lib/target/nvidia/pipeline.cpp).
const PassTable &gpuPasses();

} // namespace tritium::gpu
