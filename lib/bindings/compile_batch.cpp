// tritium._C.compile_batch: the back half of many GPU compiles at once.
//
// The autotuner hands over every config of one tuning that is not compiled
// yet; each job (tile IR -> GPU IR -> PTX, then ptxas) runs on a thread
// pool with the GIL released. A job's failure is its own: it is reported in
// its result slot, and the other jobs still finish.
#include "bindings.h"

#include "tritium/runtime/launcher.h"
#include "tritium/runtime/ptxas.h"
#include "tritium/runtime/thread_pool.h"
#include "tritium/target/nvidia/ptx.h"

#include <chrono>

namespace tritium::bindings {

namespace {

struct CompileJob {
  std::shared_ptr<Module> module; // keeps the tile IR alive without the GIL
  std::string kernel;
  std::string target;
  int numWarps = 4;
  int numStages = 3;
};

struct CompileOutcome {
  enum class Failure { None, User, IR, Internal, Other };
  CompiledKernel ck;
  std::string targetName; // normalised ("sm_90" -> "sm_90")
  bool assembled = false;
  std::string cubin;
  std::string ptxasLog;
  double ptxMs = 0, ptxasMs = 0;
  Failure failure = Failure::None;
  std::string phase; // where it failed: "ptx" or "ptxas"
  std::string message;
  Location loc;
};

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
      .count();
}

// Runs one job; never throws (a failure is recorded in `out`).
void runJob(const CompileJob &job, bool withPtxas, CompileOutcome &out) {
  out.phase = "ptx";
  try {
    GPUOptions opts;
    opts.target = GPUTarget::parse(job.target);
    opts.numWarps = job.numWarps;
    opts.numStages = job.numStages;
    out.targetName = opts.target.str();
    auto t0 = std::chrono::steady_clock::now();
    out.ck = compileToPTX(*job.module, job.kernel, opts); // works on its own clone
    out.ptxMs = msSince(t0);
    if (withPtxas) {
      out.phase = "ptxas";
      t0 = std::chrono::steady_clock::now();
      runtime::PtxasResult r = runtime::runPtxas(out.ck.ptx, out.targetName);
      out.ptxasMs = msSince(t0);
      out.cubin = std::move(r.cubin);
      out.ptxasLog = std::move(r.log);
      out.assembled = true;
    }
    out.phase.clear();
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

// The exception a failed job reports, of the class the single-job path
// (compile_to_ptx / run_ptxas) would have raised.
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

CompileJob toJob(py::handle h, size_t index) {
  py::tuple t = py::reinterpret_borrow<py::object>(h).cast<py::tuple>();
  if (t.size() != 5)
    throw py::value_error("compile_batch: job " + std::to_string(index) +
                          " must be (module, kernel, target, num_warps, num_stages)");
  if (!py::isinstance<Module>(t[0]))
    throw py::type_error("compile_batch: job " + std::to_string(index) +
                         " must start with a tritium._C.Module");
  CompileJob job;
  job.module = t[0].cast<std::shared_ptr<Module>>();
  job.kernel = t[1].cast<std::string>();
  job.target = t[2].cast<std::string>();
  job.numWarps = t[3].cast<int>();
  job.numStages = t[4].cast<int>();
  return job;
}

} // namespace

void bindCompileBatch(py::module_ &m) {
  m.def(
      "compile_batch",
      [m](py::sequence jobsIn, py::object ptxas, unsigned numThreads) {
        std::vector<CompileJob> jobs;
        jobs.reserve(jobsIn.size());
        for (size_t i = 0; i < jobsIn.size(); ++i)
          jobs.push_back(toJob(jobsIn[i], i));
        bool withPtxas = ptxas.is_none() ? runtime::findPtxas().has_value() : ptxas.cast<bool>();
        std::vector<CompileOutcome> outcomes(jobs.size());
        {
          py::gil_scoped_release release;
          runtime::parallelFor(jobs.size(), numThreads,
                               [&](size_t i) { runJob(jobs[i], withPtxas, outcomes[i]); });
        }
        py::list results;
        for (const CompileOutcome &o : outcomes) {
          py::dict r;
          if (o.failure != CompileOutcome::Failure::None) {
            r["error"] = errorObject(m, o);
            r["phase"] = o.phase;
            results.append(r);
            continue;
          }
          const CompiledKernel &ck = o.ck;
          r["error"] = py::none();
          r["name"] = ck.name;
          r["gir"] = ck.gir;
          r["ptx"] = ck.ptx;
          r["num_warps"] = ck.numWarps;
          r["shared_bytes"] = ck.sharedBytes;
          r["target"] = o.targetName;
          py::list params;
          for (const KernelParam &p : ck.params)
            params.append(py::make_tuple(runtime::kindName(p.kind), p.name));
          r["params"] = params;
          r["cubin"] = o.assembled ? py::object(py::bytes(o.cubin)) : py::object(py::none());
          r["ptxas_log"] = o.ptxasLog;
          r["ptx_ms"] = o.ptxMs;
          r["ptxas_ms"] = o.ptxasMs;
          results.append(r);
        }
        return results;
      },
      py::arg("jobs"), py::arg("ptxas") = py::none(), py::arg("num_threads") = 0,
      "Compiles jobs [(module, kernel, target, num_warps, num_stages)] to PTX and (with "
      "ptxas: True, False, or None = when ptxas is found) cubin, on up to num_threads "
      "threads (0: one per core) with the GIL released. Returns one dict per job, in "
      "order: error=None and compile_to_ptx's keys plus cubin (bytes or None), ptxas_log, "
      "ptx_ms, ptxas_ms; or error=the exception (UserError with its location, IRError, "
      "InternalError, RuntimeError) and phase ('ptx' or 'ptxas').");
}

} // namespace tritium::bindings
