// The GPU compile entry points of tritium._C: compile_to_ptx (one kernel,
// on the caller's thread) and compile_batch (many, e.g. the autotuner's
// configs, on a thread pool with the GIL released). Both call compileKernel
// (tritium/target/nvidia/pipeline.h) and hand its result to Python through
// resultDict, so that the two give the same dict for the same job.
//
// In a batch, a job's failure is its own: it is reported in its result
// slot, and the other jobs still finish.
#include "bindings.h"

#include "tritium/runtime/launcher.h"
#include "tritium/runtime/ptxas.h"
#include "tritium/runtime/thread_pool.h"
#include "tritium/target/nvidia/pipeline.h"

#include <chrono>
#include <optional>

namespace tritium::bindings {

namespace {

/// The arguments of a compile, as both entry points take them.
struct CompileJob {
  std::shared_ptr<Module> module; // keeps the IR alive without the GIL
  std::string kernel;
  PipelineInput input = PipelineInput::OptimizedTileIR;
  PipelineOptions opts;
};

PipelineOptions makeOptions(const std::string &target, int numWarps, int numStages,
                            bool boundsCheck) {
  PipelineOptions opts;
  opts.target = GPUTarget::parse(target);
  opts.numWarps = numWarps;
  opts.numStages = numStages;
  opts.boundsCheck = boundsCheck;
  // The verifier runs between passes in tests and debug runs (verify_each).
  opts.verifyEach = false;
  return opts;
}

py::list paramList(const std::vector<KernelParam> &ps) {
  py::list out;
  for (const KernelParam &p : ps)
    out.append(py::make_tuple(runtime::kindName(p.kind), p.name));
  return out;
}

/// The one conversion of a CompileResult to Python.
py::dict resultDict(const CompileJob &job, const CompileResult &r) {
  const CompiledKernel &ck = r.kernel;
  py::dict out;
  out["name"] = ck.name;
  out["gir"] = ck.gir;
  out["ptx"] = ck.ptx;
  out["num_warps"] = ck.numWarps;
  out["shared_bytes"] = ck.sharedBytes;
  out["loop_loads"] = r.loopLoads;
  out["target"] = r.target;
  out["params"] = paramList(ck.params);
  py::list maps; // the launcher encodes each from the arguments (TensorMapSpec)
  for (const TensorMapSpec &s : ck.tensorMaps)
    maps.append(py::cast(s.flatten()));
  out["tensor_maps"] = maps;
  if (job.opts.boundsCheck) {
    py::list sites;
    for (const AccessSite &s : ck.accessSites)
      sites.append(py::make_tuple(s.kind, s.param, s.elemBytes, s.loc.file, s.loc.line,
                                  s.loc.col, s.message, py::cast(s.shape)));
    py::dict bc;
    bc["hidden_params"] = paramList(ck.hiddenParams);
    bc["sites"] = sites;
    bc["unchecked"] = ck.uncheckedAccesses;
    bc["record_bytes"] = BoundsRecordLayout::kSize;
    out["bounds_check"] = bc;
  }
  py::list accesses, buffers;
  for (const MemoryAccess &a : ck.accesses)
    accesses.append(py::make_tuple(a.op, a.instruction, a.elemBytes, a.elems, a.count,
                                   a.loc.file, a.loc.line, a.loc.col));
  for (const SharedAllocation &b : ck.sharedAllocations)
    buffers.append(py::make_tuple(b.op, b.scratch, b.offset, b.bytes, b.loc.file,
                                  b.loc.line, b.loc.col));
  out["accesses"] = accesses;
  out["shared_allocations"] = buffers;
  if (job.input == PipelineInput::TileIR)
    out["tir"] = r.tir;
  out["cubin"] = r.assembled ? py::object(py::bytes(r.cubin)) : py::object(py::none());
  out["ptxas_log"] = r.ptxasLog;
  double before = 0;
  py::dict timings;
  for (const auto &[step, ms] : r.timings) {
    timings[py::str(step)] = ms;
    if (step != "ptxas")
      before += ms;
  }
  out["timings"] = timings;
  out["ptx_ms"] = before;
  out["ptxas_ms"] = r.ms("ptxas");
  out["stats"] = r.stats.counters;
  return out;
}

struct CompileOutcome {
  enum class Failure { None, User, IR, Internal, Other };
  CompileResult result;
  Failure failure = Failure::None;
  std::string message;
  Location loc;
};

// Runs one job; never throws (a failure is recorded in `out`).
void runJob(const CompileJob &job, CompileOutcome &out) {
  try {
    compileKernel(*job.module, job.kernel, job.opts, job.input, out.result);
  } catch (const UserError &e) {
    out.failure = CompileOutcome::Failure::User;
    out.message = e.what();
    out.loc = e.loc;
  } catch (const IRError &e) {
    out.failure = CompileOutcome::Failure::IR;
    out.message = e.what();
    out.loc = e.loc;
  } catch (const InternalError &e) {
    out.failure = CompileOutcome::Failure::Internal;
    out.message = e.what();
  } catch (const std::exception &e) {
    out.failure = CompileOutcome::Failure::Other;
    out.message = e.what();
  } catch (...) {
    out.failure = CompileOutcome::Failure::Other;
    out.message = "unknown C++ exception";
  }
}

// The exception a failed job reports, of the class compile_to_ptx would
// have raised.
py::object errorObject(const py::module_ &m, const CompileOutcome &o) {
  const Location &l = o.loc;
  switch (o.failure) {
  case CompileOutcome::Failure::User:
    return m.attr("UserError")(o.message, l.file, l.line, l.col);
  case CompileOutcome::Failure::IR:
    return m.attr("IRError")(o.message, l.file, l.line, l.col);
  case CompileOutcome::Failure::Internal:
    return m.attr("InternalError")(o.message);
  default:
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(o.message);
  }
}

const char *kJobShape =
    "(module, kernel, target, num_warps, num_stages[, bounds_check[, skip_passes]])";

/// A job of compile_batch. A bad target is the job's own failure (its slot
/// reports the UserError), not the batch's.
CompileJob toJob(py::handle h, size_t index, bool withPtxas, std::optional<UserError> &bad) {
  py::tuple t = py::reinterpret_borrow<py::object>(h).cast<py::tuple>();
  if (t.size() < 5 || t.size() > 7)
    throw py::value_error("compile_batch: job " + std::to_string(index) + " must be " +
                          kJobShape);
  if (!py::isinstance<Module>(t[0]))
    throw py::type_error("compile_batch: job " + std::to_string(index) +
                         " must start with a tritium._C.Module");
  CompileJob job;
  job.module = t[0].cast<std::shared_ptr<Module>>();
  job.kernel = t[1].cast<std::string>();
  bool boundsCheck = t.size() >= 6 && t[5].cast<bool>();
  try {
    job.opts = makeOptions(t[2].cast<std::string>(), t[3].cast<int>(), t[4].cast<int>(),
                           boundsCheck);
  } catch (const UserError &e) {
    bad = e;
  }
  if (t.size() == 7)
    job.opts.skipPasses = t[6].cast<std::vector<std::string>>();
  job.opts.assemble = withPtxas;
  return job;
}

} // namespace

void bindCompile(py::module_ &m) {
  m.def(
      "compile_to_ptx",
      [](std::shared_ptr<Module> mod, const std::string &kernel, const std::string &target,
         int numWarps, int numStages, bool boundsCheck, bool enableFpFusion, bool tilePasses,
         bool ptxas, bool verifyEach, bool gpuIR, std::vector<std::string> skipPasses) {
        if (gpuIR && tilePasses)
          throw py::value_error("compile_to_ptx: gpu_ir and tile_passes exclude each other");
        CompileJob job;
        job.module = std::move(mod);
        job.kernel = kernel;
        job.input = gpuIR        ? PipelineInput::GPUIR
                    : tilePasses ? PipelineInput::TileIR
                                 : PipelineInput::OptimizedTileIR;
        job.opts = makeOptions(target, numWarps, numStages, boundsCheck);
        job.opts.enableFpFusion = enableFpFusion;
        job.opts.assemble = ptxas;
        job.opts.verifyEach = verifyEach;
        job.opts.skipPasses = std::move(skipPasses);
        CompileResult r;
        {
          // compileKernel works on its own clone of the module.
          py::gil_scoped_release release;
          compileKernel(*job.module, job.kernel, job.opts, job.input, r);
        }
        return resultDict(job, r);
      },
      py::arg("module"), py::arg("kernel"), py::arg("target") = "sm_90a",
      py::arg("num_warps") = 4, py::arg("num_stages") = 3, py::arg("bounds_check") = false,
      py::kw_only(), py::arg("enable_fp_fusion") = true, py::arg("tile_passes") = false,
      py::arg("ptxas") = false, py::arg("verify_each") = false, py::arg("gpu_ir") = false,
      py::arg("skip_passes") = std::vector<std::string>{},
      "The whole GPU compile of `kernel` (compileKernel): tile IR after the default "
      "pipeline (tile_passes=True: as built, the tile passes run first) -> GPU IR -> PTX "
      "for `target`, and with ptxas=True the cubin. Returns dict(name, gir, ptx, "
      "num_warps, shared_bytes, target, params=[(kind, name)], cubin (bytes or None), "
      "ptxas_log, stats={counter: n}, timings={step: ms}, ptx_ms, ptxas_ms, "
      "accesses=[(op, instruction, elem_bytes, elems, count, file, line, col)]: per "
      "memory op, `count` instructions per thread of `elems` elements each, "
      "shared_allocations=[(op, scratch, offset, bytes, file, line, col)]), plus tir "
      "with tile_passes; with bounds_check, the PTX checks every global access (see "
      "docs/gpu-debug.md) and the dict has bounds_check=dict(hidden_params=[(kind, "
      "name)], sites=[(kind, param, elem_bytes, file, line, col)], unchecked, "
      "record_bytes). verify_each: run the verifier after every pass. gpu_ir=True: the "
      "module is GPU IR (every tensor has a layout, e.g. hand-written text): only the "
      "shared-memory passes and emission run. skip_passes: optimizations left out (see "
      "TRITIUM_DISABLE_PASSES).");

  m.def(
      "assemble_ptx",
      [](std::string ptx, const std::string &target, int threads, bool loopLoads,
         int64_t sharedBytes) {
        // compileKernel's step 5 alone, for PTX that compile_batch(ptxas=False) made:
        // lets a caller hand out the kernel's shared memory and PTX first and wait for
        // ptxas later (the Inductor surface).
        PassStats stats;
        runtime::PtxasResult a;
        double ms = 0;
        {
          py::gil_scoped_release release;
          auto t0 = std::chrono::steady_clock::now();
          a = assembleKernelPTX(ptx, target, threads, loopLoads, sharedBytes, stats);
          ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                   .count();
        }
        py::dict out;
        out["ptx"] = ptx;
        out["cubin"] = py::bytes(a.cubin);
        out["ptxas_log"] = a.log;
        out["ptxas_ms"] = ms;
        out["stats"] = stats.counters;
        return out;
      },
      py::arg("ptx"), py::arg("target"), py::arg("threads"), py::arg("loop_loads"),
      py::arg("shared_bytes"),
      "Assembles PTX of compile_batch(ptxas=False) as the whole compile would have "
      "(ptxas, with the register-cap variants where they apply; the GIL released): "
      "dict(ptx (with the cap kept, if any), cubin, ptxas_log, ptxas_ms, stats). Takes "
      "the job's target, num_warps * 32 threads, and the result's loop_loads and "
      "shared_bytes. Raises InternalError with ptxas's log where ptxas rejects the PTX.");

  m.def(
      "compile_batch",
      [m](py::sequence jobsIn, py::object ptxas, unsigned numThreads) {
        bool withPtxas = ptxas.is_none() ? runtime::findPtxas().has_value() : ptxas.cast<bool>();
        std::vector<CompileJob> jobs;
        std::vector<CompileOutcome> outcomes(jobsIn.size());
        jobs.reserve(jobsIn.size());
        for (size_t i = 0; i < jobsIn.size(); ++i) {
          std::optional<UserError> bad;
          jobs.push_back(toJob(jobsIn[i], i, withPtxas, bad));
          if (bad) {
            outcomes[i].failure = CompileOutcome::Failure::User;
            outcomes[i].message = bad->what();
            outcomes[i].loc = bad->loc;
            outcomes[i].result.step = "options";
          }
        }
        {
          py::gil_scoped_release release;
          runtime::parallelFor(jobs.size(), numThreads, [&](size_t i) {
            if (outcomes[i].failure == CompileOutcome::Failure::None)
              runJob(jobs[i], outcomes[i]);
          });
        }
        py::list results;
        for (size_t i = 0; i < jobs.size(); ++i) {
          const CompileOutcome &o = outcomes[i];
          if (o.failure != CompileOutcome::Failure::None) {
            py::dict r;
            r["error"] = errorObject(m, o);
            r["phase"] = o.result.step == "ptxas" ? "ptxas" : "ptx";
            results.append(r);
            continue;
          }
          py::dict r = resultDict(jobs[i], o.result);
          r["error"] = py::none();
          results.append(r);
        }
        return results;
      },
      py::arg("jobs"), py::arg("ptxas") = py::none(), py::arg("num_threads") = 0,
      "Compiles jobs [(module, kernel, target, num_warps, num_stages[, bounds_check])] "
      "to PTX and (with ptxas: True, False, or None = when ptxas is found) cubin, on up "
      "to num_threads threads (0: one per core) with the GIL released. Returns one dict "
      "per job, in order: error=None and compile_to_ptx's keys; or error=the exception "
      "(UserError with its location, IRError, InternalError, RuntimeError) and phase "
      "('ptx' or 'ptxas').");
}

} // namespace tritium::bindings
