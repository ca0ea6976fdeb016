// Inductor's warm launch with no Python in between.
//
// Inductor's generated launcher calls, for every launch of a compiled model,
//
//   binary.run(grid_0, grid_1, grid_2, stream, function, metadata,
//              launch_metadata, launch_enter_hook, launch_exit_hook, *args)
//
// with every parameter of the kernel, constexprs included, and it reads
// `binary.run` once, when it builds the launcher. python/tritium/inductor/
// kernels.py puts one of these functions there (a METH_FASTCALL builtin whose
// self is a capsule): it drops the constexpr positions, converts the rest as
// GpuKernel.launch does (runtime.cpp's convertLaunchArg: a tensor by its data_ptr(),
// None as a null pointer, Python ints and floats), and launches on device 0
// on Inductor's stream. Anything else goes to `fallback`, the Python
// CompiledKernel.run, with the same arguments: a kernel whose compile has not
// finished (set_kernel not called yet: its first launch waits for ptxas
// there), hooks, a stream that is not an int, an empty grid, a wrong argument
// count, an argument convertLaunchArg refuses (the Python path raises the user's
// error), and a launch the driver refuses (the Python path launches again
// and raises it as GpuKernel.launch does). Only made where the process sees
// one GPU, so that device 0 is every tensor's device.
#include "bindings.h"

#include "tritium/runtime/launcher.h"

#include <array>
#include <atomic>
#include <vector>

namespace tritium::bindings {

// runtime.cpp: one Python argument -> the slot of parameter i.
runtime::ArgSlot convertLaunchArg(const runtime::GpuKernel &k, size_t i, py::handle h,
                                  bool checkPointers);

namespace {

using runtime::ArgSlot;
using runtime::GpuKernel;

constexpr const char *kCapsuleName = "tritium.InductorLauncher";
// grid_0, grid_1, grid_2, stream, function, metadata, launch_metadata,
// launch_enter_hook, launch_exit_hook.
constexpr Py_ssize_t kLeading = 9;
constexpr size_t kInlineArgs = 64;

// Launches made here, for tritium.inductor.stats() (the Python path counts
// its own).
std::atomic<uint64_t> gLaunches{0};

struct Launcher {
  std::shared_ptr<GpuKernel> kernel; // null until set_kernel
  std::vector<Py_ssize_t> kept;      // Inductor's argument positions, in order
  Py_ssize_t nparams = 0;            // the kernel function's parameters
  PyObject *fallback = nullptr;      // strong reference
  bool dryRun = false;               // tests: record instead of launching
  std::array<int64_t, 3> lastGrid{};
  uint64_t lastStream = 0;
  std::vector<uint64_t> lastBits;
};

void destroyCapsule(PyObject *cap) {
  auto *L = static_cast<Launcher *>(PyCapsule_GetPointer(cap, kCapsuleName));
  if (!L) {
    PyErr_Clear();
    return;
  }
  Py_XDECREF(L->fallback);
  delete L;
}

Launcher *launcherOf(PyObject *self) {
  return static_cast<Launcher *>(PyCapsule_GetPointer(self, kCapsuleName));
}

/// A positive int that fits int64, or false (no Python error left set).
bool positive(PyObject *o, int64_t &out) {
  if (!PyLong_CheckExact(o))
    return false;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  out = v;
  return v > 0;
}

PyObject *run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  Launcher *L = launcherOf(self);
  if (!L)
    return nullptr;
  auto fallback = [&] { return PyObject_Vectorcall(L->fallback, args, size_t(nargs), nullptr); };
  if (!L->kernel || nargs != kLeading + L->nparams || args[7] != Py_None ||
      args[8] != Py_None || !PyLong_CheckExact(args[3]))
    return fallback();
  std::array<int64_t, 3> grid{};
  for (int i = 0; i < 3; ++i)
    if (!positive(args[i], grid[i]))
      return fallback();
  uint64_t stream = PyLong_AsUnsignedLongLong(args[3]);
  if (stream == uint64_t(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    return fallback();
  }
  size_t n = L->kept.size();
  std::array<ArgSlot, kInlineArgs> inlineSlots;
  std::vector<ArgSlot> heapSlots;
  ArgSlot *slots = inlineSlots.data();
  if (n > inlineSlots.size()) {
    heapSlots.resize(n);
    slots = heapSlots.data();
  }
  try {
    for (size_t j = 0; j < n; ++j)
      slots[j] = convertLaunchArg(*L->kernel, j, args[kLeading + L->kept[j]], false);
  } catch (...) {
    PyErr_Clear();
    return fallback();
  }
  if (L->dryRun) {
    L->lastGrid = grid;
    L->lastStream = stream;
    L->lastBits.clear();
    for (size_t j = 0; j < n; ++j)
      L->lastBits.push_back(slots[j].bits);
  } else {
    bool failed = false;
    // Held across the launch: another thread may set_kernel while the GIL is released.
    std::shared_ptr<GpuKernel> kernel = L->kernel;
    Py_BEGIN_ALLOW_THREADS
    try {
      kernel->launch(0, grid[0], grid[1], grid[2], stream, slots, n);
    } catch (...) {
      failed = true;
    }
    Py_END_ALLOW_THREADS
    if (failed)
      return fallback();
  }
  gLaunches.fetch_add(1, std::memory_order_relaxed);
  Py_RETURN_NONE;
}

PyMethodDef runDef = {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL,
                      "Inductor's CompiledKernel.run, in C (see inductor_launch.cpp)."};

Launcher &launcherOfFunction(py::handle fn) {
  if (!PyCFunction_Check(fn.ptr()))
    throw py::type_error("not an Inductor launcher");
  PyObject *self = PyCFunction_GET_SELF(fn.ptr());
  Launcher *L = self ? static_cast<Launcher *>(PyCapsule_GetPointer(self, kCapsuleName)) : nullptr;
  if (!L) {
    PyErr_Clear();
    throw py::type_error("not an Inductor launcher");
  }
  return *L;
}

} // namespace

void bindInductorLaunch(py::module_ &m) {
  m.def(
      "inductor_launcher",
      [](const std::vector<Py_ssize_t> &kept, Py_ssize_t nparams, py::object fallback) {
        for (Py_ssize_t k : kept)
          if (k < 0 || k >= nparams)
            throw py::value_error("inductor_launcher: position " + std::to_string(k) +
                                  " is not one of the " + std::to_string(nparams) +
                                  " parameters");
        auto *L = new Launcher;
        L->kept = kept;
        L->nparams = nparams;
        L->fallback = fallback.release().ptr();
        py::object cap = py::reinterpret_steal<py::object>(
            PyCapsule_New(L, kCapsuleName, destroyCapsule));
        if (!cap) {
          Py_DECREF(L->fallback);
          delete L;
          throw py::error_already_set();
        }
        PyObject *fn = PyCFunction_New(&runDef, cap.ptr());
        if (!fn)
          throw py::error_already_set();
        return py::reinterpret_steal<py::object>(fn);
      },
      py::arg("kept"), py::arg("nparams"), py::arg("fallback"),
      "A C function with CompiledKernel.run's signature that launches the kernel given to "
      "inductor_launcher_set_kernel; `kept` are the positions (among the kernel function's "
      "`nparams` parameters) of the kernel's runtime arguments; everything it does not "
      "handle goes to `fallback`.");
  m.def(
      "inductor_launcher_set_kernel",
      [](py::handle fn, std::shared_ptr<GpuKernel> kernel) {
        Launcher &L = launcherOfFunction(fn);
        if (kernel->params().size() != L.kept.size())
          throw py::value_error("inductor_launcher_set_kernel: kernel '" + kernel->name() +
                                "' takes " + std::to_string(kernel->params().size()) +
                                " arguments, the launcher passes " +
                                std::to_string(L.kept.size()));
        L.kernel = std::move(kernel);
      },
      py::arg("launcher"), py::arg("kernel"));
  m.def(
      "inductor_launcher_set_dry_run",
      [](py::handle fn, bool on) { launcherOfFunction(fn).dryRun = on; }, py::arg("launcher"),
      py::arg("on"), "Tests without a GPU: record the launch (grid, stream, argument bits).");
  m.def(
      "inductor_launcher_last",
      [](py::handle fn) {
        Launcher &L = launcherOfFunction(fn);
        return py::make_tuple(py::make_tuple(L.lastGrid[0], L.lastGrid[1], L.lastGrid[2]),
                              L.lastStream, L.lastBits);
      },
      py::arg("launcher"));
  m.def("inductor_launches", [] { return gLaunches.load(std::memory_order_relaxed); });
}

} // namespace tritium::bindings
