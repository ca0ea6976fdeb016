// compileKernel: the whole compile of one kernel, top to bottom (see
// tritium/target/nvidia/pipeline.h). A newcomer reads this function to know
// what runs, in which order, with which options.
#include "tritium/target/nvidia/pipeline.h"

#include <algorithm>

#include "emitter.h"
#include "register_cap.h"

#include "tritium/gpu/layouts.h"
#include "tritium/gpu/passes.h"
#include "tritium/gpu/shared_memory.h"
#include "tritium/ir/printer.h"
#include "tritium/runtime/ptxas.h"

#include <chrono>

namespace tritium {
namespace {

/// Names the step running in `r.step` and records, when it ends, its
/// milliseconds in `r.timings`.
class Steps {
public:
  explicit Steps(CompileResult &r) : r_(r) {}
  void begin(const char *step) {
    r_.step = step;
    t0_ = std::chrono::steady_clock::now();
  }
  void end() {
    auto t = std::chrono::steady_clock::now() - t0_;
    r_.timings.emplace_back(
        r_.step, std::chrono::duration<double, std::milli>(t).count());
  }

private:
  CompileResult &r_;
  std::chrono::steady_clock::time_point t0_;
};

/// The options are the user's (a launch's num_warps, a target string):
/// wrong values are UserErrors, reported before any pass runs.
void checkOptions(const PipelineOptions &opts) {
  const GPUTarget &t = opts.target;
  if (t.sm < 80)
    throw UserError("GPU target " + t.str() +
                        " is not supported (tritium needs sm_80 or newer)",
                    {});
  if (t.archA && t.sm != 90)
    throw UserError("GPU target " + t.str() + ": only sm_90 has an 'a' variant",
                    {});
  if (opts.numWarps < 1 || opts.numWarps > 32 ||
      log2Exact(opts.numWarps) < 0)
    throw UserError("num_warps must be a power of two from 1 to 32, found " +
                        std::to_string(opts.numWarps),
                    {});
  if (opts.numStages < 1)
    throw UserError("num_stages must be at least 1, found " +
                        std::to_string(opts.numStages),
                    {});
  // The optimizations a kernel is correct without: each only makes faster
  // code of what the passes before it made.
  // "stage-vectors" and "hoist-slice" are steps of the pipeline pass (its
  // step 0: a dot loop's vector loads through shared memory; the invariant
  // part of the copies' address arithmetic computed once), named so that
  // their gain can be measured on their own. "tma": tensor-descriptor loads
  // as masked loads (cp.async) instead of TMA copies, and their stores as
  // masked stores; "tma-store": the stores alone.
  static const char *const kOptional[] = {"prefetch-loads", "remove-layout-conversions",
                                          "propagate-layouts", "pipeline",
                                          "stage-vectors", "hoist-slice",
                                          "split-masked-loops", "fuse-multiply-add", "tma",
                                          "tma-store", "order-warpgroups",
                                          "sync-two-stage-dots", "tma-empty-barriers",
                                          "split-tma-barriers", "gpu-cse", "tma-elect"};
  for (const std::string &name : opts.skipPasses) {
    if (std::find(std::begin(kOptional), std::end(kOptional), name) != std::end(kOptional))
      continue;
    std::string list;
    for (const char *n : kOptional)
      list += std::string(list.empty() ? "" : ", ") + n;
    throw UserError("TRITIUM_DISABLE_PASSES: '" + name +
                        "' is not a pass the GPU compile can leave out; these can: " + list,
                    {});
  }
}

/// Keeps only `kernel` in `m`: its calls were inlined by the tile passes,
/// and the other functions are not compiled.
Function &kernelAlone(Module &m, const std::string &kernel) {
  Function *f = m.lookup(kernel);
  if (!f)
    throw UserError("no kernel named '" + kernel + "' in the module", {});
  std::vector<Function *> others;
  for (auto &fn : m.functions())
    if (fn.get() != f)
      others.push_back(fn.get());
  for (Function *o : others)
    m.erase(o);
  f->walk([&](Operation *op) {
    if (op->code() == OpCode::Call)
      throw InternalError("compileKernel: '" + kernel +
                          "' still has calls; run the tile pipeline (inline) "
                          "first");
  });
  return *f;
}

/// GPU IR handed in was laid out for some number of warps; emitting it for
/// another would index threads that do not exist.
void checkGPUInput(Function &f, const PipelineOptions &opts) {
  auto it = f.attrs().find("num_warps");
  if (it == f.attrs().end() || !std::holds_alternative<int64_t>(it->second))
    return;
  int64_t nw = std::get<int64_t>(it->second);
  if (nw != opts.numWarps)
    throw UserError("the GPU IR of '" + f.name() + "' was laid out for " +
                        std::to_string(nw) + " warps, but num_warps is " +
                        std::to_string(opts.numWarps),
                    f.loc());
}

/// The buffers --allocate-shared-memory placed in `f`, in program order.
std::vector<SharedAllocation> sharedAllocationsOf(Function &f) {
  std::vector<SharedAllocation> out;
  f.walk([&](Operation *op) {
    int64_t offset = gpu::sharedOffset(*op);
    if (offset < 0)
      return;
    bool alloc = op->code() == OpCode::LocalAlloc;
    int64_t bytes = alloc ? gpu::memdescBytes(op->result(0)->type())
                          : gpu::scratchBytes(f, *op);
    out.push_back({std::string(op->name()), !alloc, offset, bytes, op->loc()});
  });
  return out;
}

} // namespace

void compileKernel(const Module &m, const std::string &kernel,
                   const PipelineOptions &opts, PipelineInput input,
                   CompileResult &r) {
  Steps steps(r);
  // 0. The options: the user's values, checked before any work.
  steps.begin("options");
  checkOptions(opts);
  r.target = opts.target.str();
  // The caller keeps its module (Python runs the tile IR on the CPU too).
  std::unique_ptr<Module> gm = m.clone();
  steps.end();

  // 1. Tile passes (lib/transforms): inline, unroll, fold, CSE, DCE.
  if (input == PipelineInput::TileIR) {
    steps.begin("tile");
    runPasses(*gm, defaultPipeline(), r.stats, opts, tilePasses());
    r.tir = print(*gm);
    steps.end();
  }

  // 2. GPU passes (lib/gpu): tile IR -> GPU IR, for the kernel alone.
  steps.begin("gpu");
  Function &f = kernelAlone(*gm, kernel);
  if (input != PipelineInput::GPUIR) {
    // The options' warps, whatever the frontend left in the attribute.
    f.attrs()["num_warps"] = int64_t(opts.numWarps);
    // Tensor-descriptor loads: masked loads, but for those a dot loop
    // copies with TMA (sm_90a). The tile passes then see the loads as
    // they see any other (CSE of the shared index vectors, licm).
    auto counter = [&](const char *name) {
      auto it = r.stats.counters.find(name);
      return it == r.stats.counters.end() ? int64_t(0) : it->second;
    };
    // Loads and stores alike: either expansion leaves index arithmetic to fold.
    auto expanded = [&] {
      return counter("expand-descriptor-loads.expanded") +
             counter("expand-descriptor-loads.stores-expanded");
    };
    int64_t expandedBefore = expanded();
    runPasses(*gm, {"expand-descriptor-loads"}, r.stats, opts, tilePasses());
    if (expanded() != expandedBefore)
      runPasses(*gm, {"canonicalize", "cse", "licm-scalars", "dce"}, r.stats, opts,
                tilePasses());
    // A dot loop whose tl.where masks are all true on a prefix of its
    // iterations (attention's ragged end and causal diagonal) runs that
    // prefix as a loop without them; canonicalize folds the selects and the
    // all-true load masks.
    // (Only where a loop was split: the emitter's tests compile tile IR
    // as written.)
    int64_t splitBefore = counter("split-masked-loops.split");
    runPasses(*gm, {"split-masked-loops"}, r.stats, opts, tilePasses());
    if (counter("split-masked-loops.split") != splitBefore)
      runPasses(*gm, {"canonicalize", "cse", "dce"}, r.stats, opts, tilePasses());
    // A reducing loop's loads one iteration ahead (a tile pass, run here
    // because its register budget needs num_warps, and the CPU executor,
    // which runs the tile IR, has no latency to hide).
    runPasses(*gm, {"prefetch-loads"}, r.stats, opts, tilePasses());
    runPasses(*gm,
              {
                  "convert-to-gpu",            // a layout for every tensor
                  "remove-layout-conversions", // drop or recompute them
                  "accelerate-matmul",         // tl.dot: mma / FMA layouts
                  "propagate-layouts",         // softmax after a dot: mma too
                  "remove-layout-conversions", // e.g. the zero accumulator
              },
              r.stats, opts, gpu::gpuPasses());
    // The layout passes recompute a value in a layout to spare a conversion
    // and may leave two copies of one chain in the same layout (attention's
    // alpha = exp2(m_i - m_ij), once for l_i and once for the accumulator's
    // rescale: 4 MUFU, 4 FMNMX and 4 FADD more an iteration at 128x64 on 4
    // warps than Triton's loop); CSE merges them, in loops only (see
    // cse.cpp).
    if (!opts.skips("gpu-cse"))
      runPasses(*gm, {"cse-loops", "dce"}, r.stats, opts, tilePasses());
    // Loads into shared memory, num_stages-1 iterations ahead: a dot's
    // operands, and the loop's vectors its other ops read (the attention
    // backward's row statistics), as Triton's pipeliner stages them.
    runPasses(*gm, {"pipeline"}, r.stats, opts, gpu::gpuPasses());
    // A tensor-descriptor load kept for TMA that the pipeliner did not copy
    // (num_stages = 1, a loop it does not take): the compile starts over
    // with every descriptor load expanded, as TRITIUM_DISABLE_PASSES=tma.
    bool leftover = false;
    f.walk([&](Operation *op) { leftover |= op->code() == OpCode::DescriptorLoad; });
    if (leftover) {
      PipelineOptions expanded = opts;
      expanded.skipPasses.push_back("tma");
      r = CompileResult{};
      compileKernel(m, kernel, expanded, input, r);
      r.stats.add("tma.not-pipelined");
      return;
    }
    // A dot loop the pipeliner left (num_stages = 1, a loop that stores):
    // its vector loads one iteration ahead in registers, in the layout
    // their users read.
    runPasses(*gm, {"prefetch-loads"}, r.stats, opts, tilePasses());
    // Descriptor stores kept for TMA: through shared memory, one copy a box.
    runPasses(*gm, {"lower-tma-stores", "fuse-multiply-add"}, r.stats, opts,
              gpu::gpuPasses());
  } else {
    checkGPUInput(f, opts);
  }
  steps.end();

  // 3. Shared memory (lib/gpu): every buffer gets its offset by liveness,
  // within the target's limit (allocate_shared_memory.cpp), and every
  // barrier between ops that share bytes is placed (insert_barriers.cpp);
  // the emitter then only prints.
  steps.begin("shared-memory");
  // The warpgroups' ping-pong goes where every iteration has a barrier of
  // the whole block (order_warpgroups.cpp), known only now.
  runPasses(*gm, {"allocate-shared-memory", "insert-barriers", "order-warpgroups"}, r.stats, opts,
            gpu::gpuPasses());
  r.kernel.gir = print(f);
  r.kernel.sharedAllocations = sharedAllocationsOf(f);
  steps.end();

  // 4. PTX.
  steps.begin("ptx");
  CompiledKernel &ck = r.kernel;
  ck.name = kernel;
  ck.numWarps = opts.numWarps;
  ck.sharedBytes = (int)gpu::sharedBytes(f);
  nvidia::Emitter e(f, opts);
  ck.ptx = e.emitKernel(ck.params);
  ck.hiddenParams = std::move(e.hiddenParams);
  ck.tensorMaps = std::move(e.tensorMaps);
  ck.accessSites = std::move(e.accessSites);
  ck.uncheckedAccesses = e.uncheckedAccesses;
  ck.accesses = std::move(e.accesses);
  r.loopLoads = nvidia::loadsInALoop(f);
  steps.end();

  // 5. cubin (optional: without ptxas the runtime hands PTX to the driver).
  // A kernel that spills heavily at ptxas's own register choice, or that
  // loads in a loop, is assembled with a register cap too (register_cap.cpp).
  if (opts.assemble) {
    steps.begin("ptxas");
    runtime::PtxasResult a =
        assembleKernelPTX(ck.ptx, r.target, opts.numWarps * gpu::kThreadsPerWarp,
                          r.loopLoads, ck.sharedBytes, r.stats);
    r.cubin = std::move(a.cubin);
    r.ptxasLog = std::move(a.log);
    r.assembled = true;
    steps.end();
  }
}

runtime::PtxasResult assembleKernelPTX(std::string &ptx, const std::string &arch,
                                       int threads, bool loopLoads, int64_t sharedBytes,
                                       PassStats &stats) {
  return nvidia::assembleWithRegisterCap(ptx, arch, threads, loopLoads, sharedBytes, stats);
}

CompileResult compileKernel(const Module &m, const std::string &kernel,
                            const PipelineOptions &opts, PipelineInput input) {
  CompileResult r;
  compileKernel(m, kernel, opts, input, r);
  return r;
}

CompiledKernel compileToPTX(Module &m, const std::string &kernel,
                            const GPUOptions &opts) {
  return compileKernel(m, kernel, opts).kernel;
}

double CompileResult::ms(const std::string &step) const {
  for (const auto &[name, t] : timings)
    if (name == step)
      return t;
  return 0;
}

const PassTable &allPasses() {
  static const PassTable passes = [] {
    PassTable all = tilePasses();
    for (const PassInfo &p : gpu::gpuPasses())
      all.push_back(p);
    return all;
  }();
  return passes;
}

bool isGPUIR(Module &m) {
  bool any = false;
  auto check = [&](Value *v) {
    // Memory descriptors exist only in GPU IR.
    any |= (v->type()->isTensor() && gpu::layoutOf(v->type()) != nullptr) ||
           v->type()->isMemDesc();
  };
  for (auto &f : m.functions()) {
    for (unsigned i = 0; i < f->entry().numArguments(); ++i)
      check(f->entry().argument(i));
    f->walk([&](Operation *op) {
      for (Value *v : op->results())
        check(v);
    });
  }
  return any;
}

} // namespace tritium
