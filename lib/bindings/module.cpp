// The tritium._C module: exceptions, the verifier, passes, text form and the
// CPU executor. The IR classes and the Builder are bound in ir_bindings.cpp
// and builder_bindings.cpp.
#include "bindings.h"

#include "tritium/exec/executor.h"
#include "tritium/gpu/layouts.h"
#include "tritium/gpu/linear_layout.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"
#include "tritium/target/nvidia/pipeline.h"

namespace tritium::bindings {

namespace {

// Exception classes, created once at import. Errors with a source location
// carry args (message, file, line, col); InternalError carries (message,).
PyObject *userErrorType = nullptr;
PyObject *irErrorType = nullptr;
PyObject *executionErrorType = nullptr;
PyObject *internalErrorType = nullptr;

PyObject *makeException(py::module_ &m, const char *name, const char *doc) {
  std::string qual = std::string("tritium._C.") + name;
  PyObject *t = PyErr_NewExceptionWithDoc(qual.c_str(), doc, PyExc_Exception, nullptr);
  if (!t)
    throw py::error_already_set();
  m.add_object(name, py::handle(t));
  return t;
}

/// A Python str of text that may not be valid UTF-8 (a message quoting the
/// bytes of a malformed input): bad bytes become \xNN escapes instead of a
/// UnicodeDecodeError raised in place of the error being reported.
py::str lenientStr(const std::string &s) {
  PyObject *o = PyUnicode_DecodeUTF8(s.data(), (Py_ssize_t)s.size(), "backslashreplace");
  if (!o)
    throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

void raiseWithLoc(PyObject *type, const char *msg, const Location &loc) {
  py::tuple args = py::make_tuple(lenientStr(msg), lenientStr(loc.file), loc.line, loc.col);
  PyErr_SetObject(type, args.ptr());
}

ExecArg toExecArg(py::handle h, size_t index) {
  if (py::isinstance<ExecPointer>(h))
    return h.cast<ExecPointer>();
  if (py::isinstance<py::bool_>(h))
    return h.cast<bool>();
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow) {
      // A uint64 argument is passed by its bit pattern.
      unsigned long long u = PyLong_AsUnsignedLongLong(h.ptr());
      if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        throw py::value_error("kernel argument " + std::to_string(index) +
                              " does not fit in 64 bits");
      }
      return (int64_t)u;
    }
    return (int64_t)v;
  }
  if (PyFloat_Check(h.ptr()))
    return PyFloat_AsDouble(h.ptr());
  throw py::type_error("kernel argument " + std::to_string(index) +
                       " must be an ExecPointer, int, float or bool, got " +
                       py::str(py::type::handle_of(h).attr("__name__")).cast<std::string>());
}

} // namespace

void bindTools(py::module_ &m) {
  userErrorType = makeException(
      m, "UserError",
      "A mistake in the kernel. args = (message, file, line, col).");
  irErrorType = makeException(
      m, "IRError", "Malformed IR text or IR failing the verifier. args = (message, "
                    "file, line, col).");
  executionErrorType = makeException(
      m, "ExecutionError", "A failure while running a kernel on the CPU executor. "
                           "args = (message, file, line, col).");
  internalErrorType =
      makeException(m, "InternalError", "A bug in tritium. args = (message,).");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const UserError &e) {
      raiseWithLoc(userErrorType, e.what(), e.loc);
    } catch (const IRError &e) {
      raiseWithLoc(irErrorType, e.what(), e.loc);
    } catch (const ExecutionError &e) {
      raiseWithLoc(executionErrorType, e.what(), e.loc);
    } catch (const InternalError &e) {
      PyErr_SetObject(internalErrorType, py::make_tuple(lenientStr(e.what())).ptr());
    }
  });

  m.def("verify", [](const Module &mod) { verify(mod); }, py::arg("module"));
  // Which thread (warp * 32 + lane) and register hold each element of a
  // tensor of `shape` in a GPU layout (its text form): a list of (warp, lane,
  // register, coordinate), for tritium.tools.layout's pictures.
  m.def(
      "layout_elements",
      [](const std::string &text, const std::vector<int64_t> &shape) {
        size_t pos = 0;
        const gpu::GPULayout *l = gpu::parseLayout(text, pos, shape);
        if (!l || pos != text.size())
          throw py::value_error("not a GPU layout: " + text);
        gpu::LinearLayout ll = l->toLinear(shape);
        py::list out;
        for (int w = 0; w < ll.numWarps(); ++w)
          for (int lane = 0; lane < (int)ll.inSize(gpu::kLane); ++lane)
            for (int r = 0; r < ll.numRegs(); ++r) {
              gpu::Basis c = ll.apply(r, lane, w);
              out.append(py::make_tuple(w, lane, r, py::tuple(py::cast(c))));
            }
        return out;
      },
      py::arg("layout"), py::arg("shape"));
  m.def("default_pipeline", &defaultPipeline);
  m.def("all_passes", [] {
    std::vector<std::string> names;
    for (const PassInfo &p : allPasses())
      names.push_back(p.name);
    return names;
  });
  m.def("pass_description", [](const std::string &name) -> py::object {
    const PassInfo *p = lookupPass(allPasses(), name);
    if (!p)
      return py::none();
    return py::str(p->description);
  }, py::arg("name"));
  m.def(
      "run_passes",
      [](Module &mod, const std::vector<std::string> &passes, bool verifyEach,
         const std::string &target, int numWarps, int numStages) {
        for (const std::string &p : passes)
          if (!lookupPass(allPasses(), p))
            throw py::value_error("unknown pass '" + p + "'");
        PassStats stats;
        PipelineOptions opts;
        opts.verifyEach = verifyEach;
        opts.target = GPUTarget::parse(target);
        opts.numWarps = numWarps;
        opts.numStages = numStages;
        runPasses(mod, passes, stats, opts, allPasses());
        return stats.counters;
      },
      py::arg("module"), py::arg("passes"), py::arg("verify_each") = true, py::kw_only(),
      py::arg("target") = "sm_90a", py::arg("num_warps") = 4, py::arg("num_stages") = 3,
      "Runs the named passes (all_passes()) in order with these options; returns the "
      "pass counters.");
  m.def(
      "print_module",
      [](const Module &mod, bool locations) {
        PrintOptions opts;
        opts.printLocations = locations;
        return print(mod, opts);
      },
      py::arg("module"), py::arg("locations") = true);
  m.def(
      "parse_module",
      [](const std::string &text, const std::string &filename) {
        return std::shared_ptr<Module>(parseModule(text, filename));
      },
      py::arg("text"), py::arg("filename") = "<input>");

  py::class_<ExecPointer>(m, "ExecPointer")
      .def(py::init([](uint64_t base, uint64_t nbytes, uint64_t before) {
             // The executor bounds-checks against nbytes; it cannot know that
             // a null base has none.
             if (base == 0 && (nbytes > 0 || before > 0))
               throw py::value_error("ExecPointer: a null base cannot have " +
                                     std::to_string(nbytes + before) + " bytes");
             if (before > base)
               throw py::value_error("ExecPointer: " + std::to_string(before) +
                                     " bytes before address " +
                                     std::to_string(base));
             return ExecPointer{base, nbytes, before};
           }),
           py::arg("base"), py::arg("nbytes"), py::arg("before") = 0)
      .def_readwrite("base", &ExecPointer::base)
      .def_readwrite("nbytes", &ExecPointer::bytes)
      .def_readwrite("before", &ExecPointer::before)
      .def("__repr__", [](const ExecPointer &p) {
        return "ExecPointer(base=" + std::to_string(p.base) +
               ", nbytes=" + std::to_string(p.bytes) +
               (p.before ? ", before=" + std::to_string(p.before) : "") + ")";
      });

  m.def(
      "execute",
      [](std::shared_ptr<Module> mod, const std::string &kernel, py::sequence grid,
         py::sequence args, int numThreads, std::vector<ExecPointer> memory) {
        if (grid.size() < 1 || grid.size() > 3)
          throw py::value_error("grid must have 1 to 3 dimensions, got " +
                                std::to_string(grid.size()));
        std::array<int64_t, 3> g{1, 1, 1};
        for (size_t i = 0; i < grid.size(); ++i) {
          g[i] = grid[i].cast<int64_t>();
          if (g[i] < 0)
            throw py::value_error("grid dimensions must be non-negative");
        }
        std::vector<ExecArg> xs;
        for (size_t i = 0; i < args.size(); ++i)
          xs.push_back(toExecArg(args[i], i));
        ExecOptions opts;
        opts.numThreads = numThreads;
        opts.extraMemory = std::move(memory);
        // `mod` (a shared_ptr copy) keeps the module alive while the GIL is
        // released.
        py::gil_scoped_release release;
        execute(*mod, kernel, g, xs, opts);
      },
      py::arg("module"), py::arg("kernel"), py::arg("grid"), py::arg("args"),
      py::arg("num_threads") = 0, py::arg("memory") = std::vector<ExecPointer>{},
      "Runs `kernel` on the CPU executor. memory: ExecPointers of host memory the kernel may "
      "also reach through addresses built from integers (tritium.executor_memory).");
}

} // namespace tritium::bindings

PYBIND11_MODULE(_C, m) {
  namespace tb = tritium::bindings;
  m.doc() = "tritium's C++ core: IR, builder, passes, CPU executor";
  tritium::gpu::registerLayoutParser(); // GPU IR text parses too
  tb::bindTools(m);
  tb::bindIR(m);
  tb::bindBuilder(m);
  tb::bindRuntime(m);
  tb::bindCompile(m);
  tb::bindFastLaunch(m);
  tb::bindInductorLaunch(m);
}
