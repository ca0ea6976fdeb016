// The GPU half of tritium._C: the CUDA driver (loaded lazily), ptxas, and
// the kernel launcher. See docs/bindings.md ("Runtime"). The compile entry
// points are in compile.cpp.
#include "bindings.h"

#include "tritium/runtime/cuda_driver.h"
#include "tritium/runtime/launcher.h"
#include "tritium/runtime/ptxas.h"
#include "tritium/target/nvidia/ptx.h"

#include <array>
#include <optional>

namespace tritium::bindings {

namespace {

using runtime::ArgSlot;
using runtime::CudaError;
using runtime::Driver;
using runtime::GpuKernel;

std::string argWhat(const GpuKernel &k, size_t i) {
  return "argument " + std::to_string(i) + " ('" + k.params()[i].name + "') of kernel '" +
         k.name() + "'";
}

std::string typeName(py::handle h) {
  return py::str(py::type::handle_of(h).attr("__name__")).cast<std::string>();
}

// A Python int as (value, is_unsigned_beyond_int64); TypeError otherwise.
// Python's bool is an int; numpy integers go through __index__.
bool asInteger(py::handle h, int64_t &s, uint64_t &u, bool &big) {
  PyObject *o = h.ptr();
  py::object tmp;
  if (!PyLong_Check(o)) {
    if (PyFloat_Check(o) || !PyIndex_Check(o))
      return false;
    tmp = py::reinterpret_steal<py::object>(PyNumber_Index(o));
    if (!tmp)
      throw py::error_already_set();
    o = tmp.ptr();
  }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow == 0) {
    if (v == -1 && PyErr_Occurred())
      throw py::error_already_set();
    s = v;
    big = false;
    return true;
  }
  if (overflow > 0) {
    unsigned long long x = PyLong_AsUnsignedLongLong(o);
    if (!(x == (unsigned long long)-1 && PyErr_Occurred())) {
      u = x;
      big = true;
      return true;
    }
    PyErr_Clear();
  }
  throw py::value_error("integer does not fit in 64 bits");
}

// One Python argument -> the slot of parameter i.
ArgSlot convertArg(const GpuKernel &k, size_t i, py::handle h, bool checkPointers) {
  using K = KernelParam::Kind;
  K kind = k.params()[i].kind;
  int64_t s = 0;
  uint64_t u = 0;
  bool big = false;
  if (kind == K::Pointer) {
    uint64_t address = 0;
    if (h.is_none()) {
      address = 0;
    } else if (PyLong_Check(h.ptr())) {
      address = h.cast<uint64_t>();
    } else {
      // One method call by interned name (no bound method made, no hasattr
      // first): Inductor's launches come through here, one per kernel.
      static PyObject *dataPtr = PyUnicode_InternFromString("data_ptr");
      py::object r = py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(h.ptr(), dataPtr));
      if (!r) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
          throw py::error_already_set();
        PyErr_Clear();
        throw py::type_error(argWhat(k, i) + " is a pointer: pass a GPU tensor (or an address), "
                             "got " + typeName(h));
      }
      address = r.cast<uint64_t>();
    }
    if (checkPointers)
      runtime::checkDevicePointer(address, argWhat(k, i));
    ArgSlot slot;
    slot.bits = address;
    return slot;
  }
  if (kind == K::Bytes) {
    // The bytes object outlives the launch: the caller holds the arguments.
    if (!PyBytes_Check(h.ptr()))
      throw py::type_error(argWhat(k, i) + " takes " +
                           std::to_string(k.params()[i].bytes) +
                           " raw bytes: pass a bytes object, got " + typeName(h));
    return runtime::packBytes(k.params()[i], PyBytes_AS_STRING(h.ptr()),
                              (size_t)PyBytes_GET_SIZE(h.ptr()), argWhat(k, i));
  }
  if (kind == K::Float32 || kind == K::Float64) {
    if (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr())) {
      double v = PyFloat_AsDouble(h.ptr());
      if (v == -1.0 && PyErr_Occurred())
        throw py::error_already_set();
      return runtime::packFloat(kind, v);
    }
    py::object f = py::reinterpret_steal<py::object>(PyNumber_Float(h.ptr()));
    if (!f) {
      PyErr_Clear();
      throw py::type_error(argWhat(k, i) + " is " + runtime::kindName(kind) + ", got " +
                           typeName(h));
    }
    return runtime::packFloat(kind, PyFloat_AsDouble(f.ptr()));
  }
  if (!asInteger(h, s, u, big))
    throw py::type_error(argWhat(k, i) + " is " + runtime::kindName(kind) + ", got " + typeName(h));
  return big ? runtime::packUInt(kind, u, argWhat(k, i)) : runtime::packInt(kind, s, argWhat(k, i));
}

std::vector<KernelParam> toParams(const std::vector<std::pair<std::string, std::string>> &ps) {
  std::vector<KernelParam> out;
  for (const auto &[kind, name] : ps)
    out.push_back(KernelParam{runtime::parseKind(kind), name});
  return out;
}

// compile's "tensor_maps" (TensorMapSpec::flatten lists) back into specs;
// ValueError for one that is not.
std::vector<TensorMapSpec> toTensorMaps(const std::string &kernel,
                                        const std::vector<std::vector<int64_t>> &flat) {
  std::vector<TensorMapSpec> out(flat.size());
  for (size_t i = 0; i < flat.size(); ++i)
    if (!TensorMapSpec::unflatten(flat[i], out[i]))
      throw py::value_error("kernel '" + kernel + "': tensor map " + std::to_string(i) +
                            " is not a flattened TensorMapSpec (" + std::to_string(flat[i].size()) +
                            " integers; [base, rank, (arg, value) per dim and stride, box..., "
                            "elem_bytes, data_type, swizzle_bytes, nan_fill])");
  return out;
}

} // namespace

runtime::ArgSlot convertLaunchArg(const runtime::GpuKernel &k, size_t i, py::handle h,
                                  bool checkPointers) {
  return convertArg(k, i, h, checkPointers);
}

void bindRuntime(py::module_ &m) {
  // tritium._C.CudaError, a RuntimeError.
  py::register_exception<CudaError>(m, "CudaError", PyExc_RuntimeError);

  m.def(
      "cuda_available",
      [] {
        std::string why;
        bool ok = Driver::available(&why);
        return py::make_tuple(ok, why);
      },
      "(True, '') when libcuda.so.1 loads and reports a GPU, else (False, why). "
      "Loads the driver on first call.");
  m.def("device_count", [] { return Driver::get().deviceCount(); });
  m.def(
      "device_capability", [](int device) { return Driver::get().capability(device); },
      py::arg("device") = 0);
  m.def(
      "device_name", [](int device) { return Driver::get().deviceName(device); },
      py::arg("device") = 0);
  m.def(
      "device_properties",
      [](int device) {
        Driver &d = Driver::get();
        py::dict out;
        auto [major, minor] = d.capability(device);
        out["name"] = d.deviceName(device);
        out["capability"] = py::make_tuple(major, minor);
        out["multiprocessors"] = d.attribute(runtime::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
        out["max_shared_memory_per_block"] =
            d.attribute(runtime::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, device);
        out["max_shared_memory_per_block_optin"] =
            d.attribute(runtime::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device);
        out["max_threads_per_block"] =
            d.attribute(runtime::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device);
        int version = 0;
        d.cuDriverGetVersion(&version);
        out["driver_version"] = version;
        return out;
      },
      py::arg("device") = 0);
  m.def(
      "synchronize",
      [](int device) {
        Driver &d = Driver::get();
        d.ensureContext(device);
        py::gil_scoped_release release;
        d.check(d.cuCtxSynchronize(), "cuCtxSynchronize (an earlier kernel failed?)");
      },
      py::arg("device") = 0);
  m.def(
      "check_device_pointer",
      [](uint64_t address, const std::string &what) {
        runtime::checkDevicePointer(address, what);
      },
      py::arg("address"), py::arg("what") = "pointer");

  m.def("ptxas_path", [] { return runtime::findPtxas(); });
  m.def("ptxas_version", &runtime::ptxasVersion);
  m.def(
      "run_ptxas",
      [](const std::string &ptx, const std::string &arch, const std::vector<std::string> &options) {
        runtime::PtxasResult r;
        {
          py::gil_scoped_release release;
          r = runtime::runPtxas(ptx, arch, options);
        }
        return py::make_tuple(py::bytes(r.cubin), r.log);
      },
      py::arg("ptx"), py::arg("arch"), py::arg("options") = std::vector<std::string>{},
      "Assembles PTX with ptxas -arch=<arch> -O3 -v; returns (cubin bytes, log).");

  py::class_<GpuKernel, std::shared_ptr<GpuKernel>>(m, "GpuKernel")
      .def(py::init([](const std::string &name, py::bytes image, bool isCubin,
                       const std::string &target, int numWarps, int sharedBytes,
                       const std::vector<std::pair<std::string, std::string>> &params,
                       const std::vector<std::vector<int64_t>> &tensorMaps,
                       std::optional<size_t> tensorMapsAt) {
             auto k = std::make_shared<GpuKernel>(name, std::string(image), isCubin, target,
                                                  numWarps, sharedBytes, toParams(params));
             if (!tensorMaps.empty() || tensorMapsAt) {
               try {
                 k->setTensorMaps(toTensorMaps(name, tensorMaps),
                                  tensorMapsAt.value_or(k->params().size()));
               } catch (const CudaError &e) {
                 throw py::value_error(e.what()); // a malformed spec: the caller's data
               }
             }
             return k;
           }),
           py::arg("name"), py::arg("image"), py::arg("is_cubin"), py::arg("target"),
           py::arg("num_warps"), py::arg("shared_bytes"), py::arg("params"),
           py::arg("tensor_maps") = std::vector<std::vector<int64_t>>{},
           py::arg("tensor_maps_at") = py::none(),
           "params: [(kind, name)] with kind in ptr i32 i64 u32 u64 fp32 fp64 i1. "
           "tensor_maps: the TMA tensor maps every launch encodes from its arguments, each "
           "a TensorMapSpec's flatten() list (compile's \"tensor_maps\"; ValueError for a "
           "malformed one), passed after the first tensor_maps_at parameters (default: all "
           "of them; a bounds-checked kernel's hidden ones come after the maps). The "
           "driver is not touched until load() or launch().")
      .def_property_readonly("tensor_maps",
                             [](const GpuKernel &k) {
                               py::list out;
                               for (const TensorMapSpec &s : k.tensorMaps())
                                 out.append(py::cast(s.flatten()));
                               return out;
                             })
      .def_property_readonly("tensor_maps_at", &GpuKernel::tensorMapPosition)
      .def_property_readonly("name", &GpuKernel::name)
      .def_property_readonly("num_warps", &GpuKernel::numWarps)
      .def_property_readonly("shared_bytes", &GpuKernel::sharedBytes)
      .def_property_readonly("params",
                             [](const GpuKernel &k) {
                               py::list out;
                               for (const KernelParam &p : k.params())
                                 out.append(py::make_tuple(runtime::kindName(p.kind), p.name));
                               return out;
                             })
      .def(
          "load", [](GpuKernel &k, int device) { k.load(device); }, py::arg("device") = 0,
          "Loads the module on `device` now (otherwise the first launch does).")
      .def(
          "attributes",
          [](GpuKernel &k, int device) {
            runtime::KernelAttributes a = k.attributes(device);
            py::dict out;
            out["num_regs"] = a.numRegs;
            out["local_bytes"] = a.localBytes;
            out["static_shared_bytes"] = a.staticSharedBytes;
            out["max_threads_per_block"] = a.maxThreadsPerBlock;
            return out;
          },
          py::arg("device") = 0)
      .def(
          "launch",
          [](GpuKernel &k, int64_t gx, int64_t gy, int64_t gz, uint64_t stream, int device,
             py::sequence args, bool checkPointers) {
            size_t n = args.size();
            if (n != k.params().size())
              throw py::type_error("kernel '" + k.name() + "' takes " +
                                   std::to_string(k.params().size()) + " arguments, got " +
                                   std::to_string(n));
            std::array<ArgSlot, 64> inlineSlots;
            std::vector<ArgSlot> heapSlots;
            ArgSlot *slots = inlineSlots.data();
            if (n > inlineSlots.size()) {
              heapSlots.resize(n);
              slots = heapSlots.data();
            }
            for (size_t i = 0; i < n; ++i)
              slots[i] = convertArg(k, i, args[i], checkPointers);
            py::gil_scoped_release release;
            k.launch(device, gx, gy, gz, stream, slots, n);
          },
          py::arg("gx"), py::arg("gy"), py::arg("gz"), py::arg("stream"), py::arg("device"),
          py::arg("args"), py::arg("check_pointers") = true,
          "Launches on the grid (gx, gy, gz) with num_warps*32 threads on `stream` (an "
          "integer CUstream; 0 = the default stream) of `device`. args: one per "
          "parameter (pointers as GPU tensors with data_ptr() or integer addresses).")
      .def(
          "tensor_map_args",
          [](const GpuKernel &k, py::sequence args) {
            if (args.size() != k.params().size())
              throw py::type_error("kernel '" + k.name() + "' takes " +
                                   std::to_string(k.params().size()) + " arguments, got " +
                                   std::to_string(args.size()));
            std::vector<ArgSlot> slots;
            for (size_t i = 0; i < args.size(); ++i)
              slots.push_back(convertArg(k, i, args[i], false));
            py::list out;
            for (const runtime::TensorMapEncoding &e : k.tensorMapEncodings(slots.data())) {
              py::dict d;
              d["data_type"] = e.dataType;
              d["address"] = e.address;
              d["dims"] = std::vector<uint64_t>(e.dims, e.dims + e.rank);
              d["strides"] = std::vector<uint64_t>(e.strides, e.strides + e.rank - 1);
              d["box"] = std::vector<uint32_t>(e.box, e.box + e.rank);
              d["element_strides"] =
                  std::vector<uint32_t>(e.elementStrides, e.elementStrides + e.rank);
              d["interleave"] = e.interleave;
              d["swizzle"] = e.swizzle;
              d["l2_promotion"] = e.l2Promotion;
              d["oob_fill"] = e.oobFill;
              d["empty"] = e.empty;
              out.append(d);
            }
            return out;
          },
          py::arg("args"),
          "What launch() would pass cuTensorMapEncodeTiled for each tensor map, for `args`, "
          "without a driver: dicts of data_type, address, dims, strides (bytes), box, "
          "element_strides, interleave, swizzle, l2_promotion, oob_fill, innermost dim first. "
          "CudaError for a value the driver would refuse.")
      .def(
          "pack_args",
          [](const GpuKernel &k, py::sequence args) {
            if (args.size() != k.params().size())
              throw py::type_error("kernel '" + k.name() + "' takes " +
                                   std::to_string(k.params().size()) + " arguments, got " +
                                   std::to_string(args.size()));
            py::list out;
            for (size_t i = 0; i < args.size(); ++i) {
              ArgSlot slot = convertArg(k, i, args[i], false);
              if (slot.data)
                out.append(py::bytes(static_cast<const char *>(slot.data), k.params()[i].bytes));
              else
                out.append(slot.bits);
            }
            return out;
          },
          py::arg("args"),
          "What launch() would pass for `args`, without launching: per parameter its slot's "
          "bits (an int), or a raw-bytes parameter's bytes. Tests compare it with the fast "
          "path's dry run.");
}

} // namespace tritium::bindings
