// The launch fast path: `kernel[grid](*args, **kwargs)` goes from Python to
// cuLaunchKernel with no Python code in between, once jit.py's Python path
// has compiled the call's specialisation, launched it and registered it here.
//
// One launch:
//  1. Bind the call's arguments to the kernel's parameters (positional, then
//     keywords by name, then defaults). Keywords that are not parameters are
//     launch options (num_warps, ...); `stream` is used but not keyed.
//  2. Encode the specialisation key as bytes: per parameter what jit.py's
//     _key distinguishes (a tensor's dtype and 16-byte alignment; an int's
//     class, equality to 1 and divisibility by 16; bool; float; None; a
//     constexpr's value, also of a tl.constexpr-wrapped argument; a host
//     TensorDescriptor's base tensor, its shape and strides as ints, its
//     block shape and padding), then the device and the launch options.
//     Each runtime value is a *part* of the call: one per parameter, and a
//     TensorDescriptor has 1 + rank + rank of them (base, shape, strides), as
//     jit.py's _key_descriptor flattens it. The key fixes how many parts each
//     parameter has, so an entry names its kernel arguments by part index.
//  3. Look the key up. A hit packs the kernel's runtime arguments and
//     launches on torch's current stream. A miss, or anything this file does
//     not handle (a CPU tensor, a numpy scalar, a tuple, an unusual grid),
//     calls JITFunction.run, which compiles, launches and
//     registers the entry (or raises the user's error).
//
// Soundness rests on one rule: two calls that encode to the same bytes must
// select the same compiled kernel in jit.py. The encoding may be finer than
// jit.py's key (objects are compared by identity, floats by their bits); a
// finer key only costs one more trip through the Python path.
#include "bindings.h"

#include "tritium/runtime/cuda_driver.h"
#include "tritium/runtime/launcher.h"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace tritium::bindings {

namespace {

using runtime::ArgSlot;
using runtime::CudaError;
using runtime::GpuKernel;
using Kind = KernelParam::Kind;

constexpr size_t kMaxParams = 64;
// Runtime values of one call: a parameter is one part, a TensorDescriptor
// 1 + 2 * rank (rank 5 at most when it was made).
constexpr size_t kMaxParts = 256;
constexpr size_t kMaxOptions = 32;
// Past this many specialisations the table starts again from empty (keys
// that hold fresh objects by identity would otherwise grow it forever).
constexpr size_t kMaxEntries = 4096;
constexpr const char *kCapsuleName = "tritium.FastLauncher";

struct Param {
  py::object name; // interned str
  bool isConstexpr = false;
  bool noSpecialize = false;          // do_not_specialize
  bool noAlignmentSpecialize = false; // do_not_specialize_on_alignment
  py::object defaultValue;            // null when the parameter has none
};

struct Entry {
  std::shared_ptr<GpuKernel> kernel;
  py::object result;                       // what the launch returns (jit's GPUKernel)
  std::vector<uint16_t> runtimeParts;      // the call's part of each kernel argument
  std::vector<py::object> keyedByIdentity; // kept alive: their addresses are in the key
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

/// What a dry run (tests without a GPU) records instead of launching.
struct LastLaunch {
  int64_t grid[3] = {0, 0, 0};
  uint64_t stream = 0;
  int device = -1;
  std::vector<uint64_t> args;
  py::object kernel;
};

/// The environment variables that change what the slow path builds.
struct EnvState {
  static constexpr int kCount = 3;
  static constexpr const char *kNames[kCount] = {"TRITIUM_DEBUG", "TRITIUM_TARGET",
                                                 "TRITIUM_DISABLE_PASSES"};
  std::optional<std::string> value[kCount]; // unset: nullopt

  static EnvState now() {
    EnvState s;
    for (int i = 0; i < kCount; ++i)
      if (const char *v = std::getenv(kNames[i]))
        s.value[i] = v;
    return s;
  }
  /// Whether the environment still holds these values (no allocation).
  bool current() const {
    for (int i = 0; i < kCount; ++i) {
      const char *v = std::getenv(kNames[i]);
      if (v ? !value[i] || *value[i] != v : value[i].has_value())
        return false;
    }
    return true;
  }
  bool operator==(const EnvState &) const = default;
};

struct Launcher {
  std::vector<Param> params;
  std::vector<py::object> options; // launch option names, interned
  int streamOption = -1;           // index of "stream" in options
  py::object jitRef;               // weakref to the JITFunction (its run() is the slow path)
  py::object constexprType;        // tl.constexpr: a wrapped value takes the slow path
  py::object tensorType;           // torch.Tensor, set by the first registration
  py::object descriptorType;       // tritium.tools.tensor_descriptor.TensorDescriptor, or None
  py::object rawStream;            // torch._C._cuda_getCurrentRawStream, or None
  std::unordered_map<std::string, Entry, StringHash, std::equal_to<>> entries;
  uint64_t hits = 0, misses = 0;
  bool dryRun = false;
  /// Set at the first registration: the process sees several GPUs, so every
  /// tensor's device is checked (one get_device() call each).
  bool everyDevice = false;
  LastLaunch last;
  /// $TRITIUM_DEBUG, $TRITIUM_TARGET and $TRITIUM_DISABLE_PASSES as they
  /// were when `entries` were installed: the slow path builds differently
  /// under other values (bounds-checked, another target, other passes), so
  /// a launch under other values takes it. Three getenv calls per launch
  /// (about 75 ns).
  EnvState env;
};

/// One call, bound and encoded. Python objects are borrowed from the call.
struct Call {
  size_t numParams = 0;
  PyObject *values[kMaxParams] = {};
  PyObject *options[kMaxOptions] = {};
  // Written by encode() for every runtime part before pack() reads it: ints
  // (two's complement), bools, tensor addresses, floats (a double's bits).
  uint64_t bits[kMaxParts];
  /// What each part holds (fast_register checks it against the kernel's
  /// parameter kinds).
  enum class Part : uint8_t { Other, Tensor, Int, Float, Bool };
  Part partKind[kMaxParts];
  uint16_t firstPart[kMaxParams + 1]; // parameter i's parts: [firstPart[i], firstPart[i + 1])
  size_t numParts = 0;
  int device = -1;
  /// Check every tensor's device, not only the first's (a process that sees
  /// several GPUs): a call mixing devices takes the slow path, which names
  /// the arguments.
  bool checkDevices = false;
  std::string key;
  std::vector<PyObject *> identity;
  std::vector<py::object> unwrapped; // values taken out of tl.constexpr wrappers
};

// Attribute and method names, interned once (bindFastLaunch).
struct Names {
  PyObject *isCuda, *dataPtr, *dtype, *getDevice, *value, *numel;
  PyObject *base, *shape, *strides, *blockShape, *padding; // TensorDescriptor's fields
  PyObject *isContiguous, *stride; // a strided view's footprint
};
Names names;

/// Whether a strided view reaches fewer than 2^31 elements from its address
/// (launcher._footprint_end): a contiguous tensor reaches its numel; a
/// view's positive strides may reach much further than its element count
/// (a column of a huge matrix). False when the tensor cannot say.
bool footprintBelow2to31(PyObject *v) {
  py::object contiguous =
      py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(v, names.isContiguous));
  if (!contiguous)
    return false;
  if (contiguous.ptr() == Py_True)
    return true;
  py::object shape = py::reinterpret_steal<py::object>(PyObject_GetAttr(v, names.shape));
  py::object strides =
      py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(v, names.stride));
  if (!shape || !strides || !PyTuple_Check(shape.ptr()) || !PyTuple_Check(strides.ptr()) ||
      PyTuple_GET_SIZE(shape.ptr()) != PyTuple_GET_SIZE(strides.ptr()))
    return false;
  long long reach = 1;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape.ptr()); ++i) {
    long long n = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.ptr(), i));
    long long st = PyLong_AsLongLong(PyTuple_GET_ITEM(strides.ptr(), i));
    if ((n == -1 || st == -1) && PyErr_Occurred())
      return false;
    if (n == 0)
      return true; // an empty view touches nothing
    if (st > 0) {
      if (n - 1 > ((1LL << 31) - reach) / st)
        return false; // reaches 2^31 (and no overflow on the way)
      reach += (n - 1) * st;
    }
  }
  return reach < (1LL << 31);
}

Launcher *launcherOf(PyObject *capsule) {
  auto *l = static_cast<Launcher *>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (!l)
    throw py::error_already_set();
  return l;
}

bool sameName(PyObject *a, PyObject *b) {
  return a == b || PyUnicode_Compare(a, b) == 0;
}

// 1. Binding. False: the Python path must handle this call.
bool bind(const Launcher &L, PyObject *const *args, size_t nargs, PyObject *kwnames, Call &c) {
  size_t n = L.params.size();
  if (nargs > n)
    return false;
  c.numParams = n;
  for (size_t i = 0; i < nargs; ++i)
    c.values[i] = args[i];
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject *name = PyTuple_GET_ITEM(kwnames, k);
    PyObject *value = args[nargs + k];
    bool found = false;
    for (size_t i = 0; i < n && !found; ++i)
      if (sameName(L.params[i].name.ptr(), name)) {
        if (c.values[i])
          return false; // given twice: the Python path raises
        c.values[i] = value;
        found = true;
      }
    for (size_t j = 0; j < L.options.size() && !found; ++j)
      if (sameName(L.options[j].ptr(), name)) {
        c.options[j] = value;
        found = true;
      }
    if (!found)
      return false;
  }
  for (size_t i = nargs; i < n; ++i)
    if (!c.values[i]) {
      if (!L.params[i].defaultValue)
        return false;
      c.values[i] = L.params[i].defaultValue.ptr();
    }
  return true;
}

template <typename T> void appendBytes(std::string &key, const T &v) {
  key.append(reinterpret_cast<const char *>(&v), sizeof v);
}

// A constexpr's value (or a launch option's). jit.py keys these by
// (type name, value); exact ints, floats, strings, bools and None are
// encoded by value, anything else by identity.
void encodeValue(PyObject *v, Call &c) {
  if (v == Py_None) {
    c.key += 'n';
  } else if (PyBool_Check(v)) {
    c.key += v == Py_True ? 'T' : 'F';
  } else if (PyLong_CheckExact(v)) {
    int overflow = 0;
    long long s = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow == 0 && !(s == -1 && PyErr_Occurred())) {
      c.key += 'i';
      appendBytes(c.key, s);
      return;
    }
    PyErr_Clear();
    c.key += 'p';
    appendBytes(c.key, v);
    c.identity.push_back(v);
  } else if (PyFloat_CheckExact(v)) {
    c.key += 'f';
    appendBytes(c.key, PyFloat_AS_DOUBLE(v));
  } else if (PyUnicode_CheckExact(v)) {
    Py_ssize_t len = 0;
    const char *s = PyUnicode_AsUTF8AndSize(v, &len);
    if (!s) {
      PyErr_Clear();
      c.key += 'p';
      appendBytes(c.key, v);
      c.identity.push_back(v);
      return;
    }
    c.key += 's';
    appendBytes(c.key, len);
    c.key.append(s, len);
  } else {
    c.key += 'p';
    appendBytes(c.key, v);
    c.identity.push_back(v);
  }
}

// A tensor argument (or a TensorDescriptor's base), as part `i`: dtype (by
// identity: torch's dtypes are singletons), whether its address is 16-byte
// aligned, and the device of the first one. `offsetsKeyed`: jit.py gives a
// tensor of 2^31+ elements 64-bit offsets, a specialisation of its own.
bool encodeTensor(const Param &p, PyObject *v, size_t i, Call &c, bool offsetsKeyed) {
  PyObject *isCuda = PyObject_GetAttr(v, names.isCuda);
  if (!isCuda) {
    PyErr_Clear();
    return false;
  }
  bool cuda = isCuda == Py_True;
  Py_DECREF(isCuda);
  if (!cuda)
    return false; // CPU tensors run on the executor; mixed devices raise there
  py::object ptr = py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(v, names.dataPtr));
  py::object dtype = py::reinterpret_steal<py::object>(PyObject_GetAttr(v, names.dtype));
  if (!ptr || !dtype) {
    PyErr_Clear();
    return false;
  }
  uint64_t address = PyLong_AsUnsignedLongLong(ptr.ptr());
  if (address == (uint64_t)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  // A tensor of 2^31+ elements takes the Python path, which specialises the
  // kernel with 64-bit offsets for it (launcher.needs_int64_offsets).
  if (offsetsKeyed) {
    py::object numel =
        py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(v, names.numel));
    long long count = numel ? PyLong_AsLongLong(numel.ptr()) : -1;
    if (count < 0 || count >= (1LL << 31) || !footprintBelow2to31(v)) {
      PyErr_Clear();
      return false;
    }
  }
  if (c.device < 0 || c.checkDevices) {
    py::object dev =
        py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(v, names.getDevice));
    long d = dev ? PyLong_AsLong(dev.ptr()) : -1;
    if (d < 0) {
      PyErr_Clear();
      return false;
    }
    if (c.device >= 0 && d != c.device)
      return false; // tensors of two GPUs: the slow path raises, naming them
    c.device = (int)d;
  }
  c.bits[i] = address;
  c.partKind[i] = Call::Part::Tensor;
  c.key += 't';
  PyObject *dt = dtype.ptr(); // alive: torch holds its dtypes for the process
  appendBytes(c.key, dt);
  c.key += (!p.noAlignmentSpecialize && address % 16 == 0) ? 'A' : 'a';
  return true;
}

// A non-constexpr int: i32 / i64 / u64 as jit.py's launcher.int_dtype, the
// constant 1, and divisibility by 16 (both off under do_not_specialize).
bool encodeInt(const Param &p, PyObject *v, size_t i, Call &c) {
  int overflow = 0;
  long long s = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (overflow == 0) {
    if (s == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    if (s == 1 && !p.noSpecialize) {
      c.key += '1';
      return true;
    }
    c.key += (s >= INT32_MIN && s <= INT32_MAX) ? 'w' : 'l';
    c.key += (!p.noSpecialize && s % 16 == 0) ? 'D' : 'd';
    c.bits[i] = (uint64_t)s;
    c.partKind[i] = Call::Part::Int;
    return true;
  }
  if (overflow < 0)
    return false;
  unsigned long long u = PyLong_AsUnsignedLongLong(v);
  if (u == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false; // beyond 64 bits: the Python path raises
  }
  c.key += 'u';
  c.key += (!p.noSpecialize && u % 16 == 0) ? 'D' : 'd';
  c.bits[i] = u;
  c.partKind[i] = Call::Part::Int;
  return true;
}

// A host TensorDescriptor, as jit.py's _key_descriptor flattens it: its base
// tensor (dtype, alignment; no 64-bit-offset key: descriptor offsets are
// 64-bit always), then each shape and stride entry keyed as an int argument
// of this parameter (do_not_specialize applies), then the block shape and
// padding by value. The fields are read on every call: a TensorDescriptor is
// a mutable dataclass. Anything unusual in them (a subclass, a tuple of
// non-ints, a padding that is not a str) goes to the Python path.
bool encodeDescriptor(const Launcher &L, const Param &p, PyObject *v, Call &c) {
  auto field = [v](PyObject *name) {
    PyObject *r = PyObject_GetAttr(v, name);
    if (!r)
      PyErr_Clear();
    return py::reinterpret_steal<py::object>(r);
  };
  py::object base = field(names.base), shape = field(names.shape),
             strides = field(names.strides), block = field(names.blockShape),
             padding = field(names.padding);
  if (!base || !shape || !strides || !block || !padding || !L.tensorType ||
      !PyObject_TypeCheck(base.ptr(), (PyTypeObject *)L.tensorType.ptr()) ||
      !PyUnicode_CheckExact(padding.ptr()))
    return false;
  c.key += 'X';
  size_t basePart = c.numParts++;
  if (!encodeTensor(p, base.ptr(), basePart, c, /*offsetsKeyed=*/false))
    return false;
  for (PyObject *seq : {shape.ptr(), strides.ptr()}) {
    if (!PyList_CheckExact(seq) && !PyTuple_CheckExact(seq))
      return false;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if ((size_t)n > kMaxParts - c.numParts)
      return false;
    c.key += 'S';
    appendBytes(c.key, (uint16_t)n);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t k = 0; k < n; ++k) {
      if (!PyLong_CheckExact(items[k]))
        return false; // jit.py would key a bool (True == 1) or an int subclass: the Python path
      size_t part = c.numParts++;
      c.partKind[part] = Call::Part::Other; // a constant 1 is no runtime value
      if (!encodeInt(p, items[k], part, c))
        return false;
    }
  }
  if (!PyList_CheckExact(block.ptr()) && !PyTuple_CheckExact(block.ptr()))
    return false;
  Py_ssize_t rank = PySequence_Fast_GET_SIZE(block.ptr());
  c.key += 'K';
  appendBytes(c.key, (uint16_t)rank);
  PyObject **dims = PySequence_Fast_ITEMS(block.ptr());
  for (Py_ssize_t k = 0; k < rank; ++k) {
    int overflow = 0;
    long long d = PyLong_CheckExact(dims[k]) ? PyLong_AsLongLongAndOverflow(dims[k], &overflow)
                                             : -1;
    if (d < 0 || overflow) {
      PyErr_Clear();
      return false;
    }
    appendBytes(c.key, d);
  }
  encodeValue(padding.ptr(), c); // a str: by value
  return true;
}

// Whether a part can fill a kernel parameter of this kind (jit.py types an
// int argument i32/i64/u64, a float fp32, a bool i1, a tensor a pointer).
bool partFits(Call::Part part, Kind kind) {
  switch (part) {
  case Call::Part::Tensor:
    return kind == Kind::Pointer;
  case Call::Part::Int:
    return kind == Kind::Int32 || kind == Kind::UInt32 || kind == Kind::Int64 ||
           kind == Kind::UInt64;
  case Call::Part::Float:
    return kind == Kind::Float32 || kind == Kind::Float64;
  case Call::Part::Bool:
    return kind == Kind::Bool;
  case Call::Part::Other:
    return false;
  }
  return false;
}

// 2. The key. False: the Python path must handle this call.
bool encode(const Launcher &L, Call &c) {
  c.key.clear();
  c.numParts = 0;
  for (size_t i = 0; i < c.numParams; ++i) {
    const Param &p = L.params[i];
    PyObject *v = c.values[i];
    c.firstPart[i] = (uint16_t)c.numParts;
    if (!p.isConstexpr && L.descriptorType &&
        Py_TYPE(v) == (PyTypeObject *)L.descriptorType.ptr()) {
      if (!encodeDescriptor(L, p, v, c))
        return false;
      continue;
    }
    if (c.numParts == kMaxParts)
      return false;
    size_t part = c.numParts++;
    c.partKind[part] = Call::Part::Other;
    if (L.constexprType && PyObject_TypeCheck(v, (PyTypeObject *)L.constexprType.ptr())) {
      // tl.constexpr(x) makes any parameter a constexpr, as in jit.py (the
      // autotuner passes its configs' values so).
      PyObject *inner = PyObject_GetAttr(v, names.value);
      if (!inner) {
        PyErr_Clear();
        return false;
      }
      c.unwrapped.emplace_back(py::reinterpret_steal<py::object>(inner));
      c.values[i] = inner;
      c.key += 'C';
      encodeValue(inner, c);
    } else if (p.isConstexpr) {
      c.key += 'C';
      encodeValue(v, c);
    } else if (v == Py_None) {
      c.key += 'N';
    } else if (PyBool_Check(v)) {
      c.key += 'B';
      c.bits[part] = v == Py_True;
      c.partKind[part] = Call::Part::Bool;
    } else if (PyLong_Check(v)) {
      if (!encodeInt(p, v, part, c))
        return false;
    } else if (PyFloat_Check(v)) {
      c.key += 'R';
      double x = PyFloat_AS_DOUBLE(v);
      std::memcpy(&c.bits[part], &x, sizeof x);
      c.partKind[part] = Call::Part::Float;
    } else if (L.tensorType && PyObject_TypeCheck(v, (PyTypeObject *)L.tensorType.ptr())) {
      if (!encodeTensor(p, v, part, c, /*offsetsKeyed=*/true))
        return false;
    } else {
      return false;
    }
  }
  c.firstPart[c.numParams] = (uint16_t)c.numParts;
  if (c.device < 0)
    return false; // no GPU tensor: the executor, or an error, in Python
  c.key += '@';
  appendBytes(c.key, c.device);
  for (size_t j = 0; j < L.options.size(); ++j)
    if (c.options[j] && (int)j != L.streamOption) {
      c.key += 'O';
      appendBytes(c.key, (uint16_t)j);
      encodeValue(c.options[j], c);
    }
  return true;
}

// A grid as 3 ints; false for anything unusual (the Python path then
// normalises it or raises), including a negative size.
bool gridDims(PyObject *g, int64_t out[3]) {
  out[0] = out[1] = out[2] = 1;
  auto dim = [](PyObject *x, int64_t &d) {
    if (!PyLong_Check(x))
      return false;
    long long v = PyLong_AsLongLong(x);
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    d = v;
    return v >= 0;
  };
  if (PyLong_Check(g))
    return dim(g, out[0]);
  if (!PyTuple_Check(g) && !PyList_Check(g))
    return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(g);
  if (n < 1 || n > 3)
    return false;
  PyObject **items = PySequence_Fast_ITEMS(g);
  for (Py_ssize_t k = 0; k < n; ++k)
    if (!dim(items[k], out[k]))
      return false;
  return true;
}

// A callable grid gets the launch's meta-parameters, as in jit.py: every
// parameter by name, then the launch options.
py::object callGrid(const Launcher &L, PyObject *grid, const Call &c) {
  py::dict meta;
  for (size_t i = 0; i < c.numParams; ++i)
    meta[L.params[i].name] = py::handle(c.values[i]);
  for (size_t j = 0; j < L.options.size(); ++j)
    if (c.options[j])
      meta[L.options[j]] = py::handle(c.options[j]);
  PyObject *r = PyObject_CallOneArg(grid, meta.ptr());
  if (!r)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

// The kernel's runtime arguments, in its parameter order.
void pack(const Entry &e, const Call &c, ArgSlot *slots) {
  const auto &kparams = e.kernel->params();
  for (size_t j = 0; j < e.runtimeParts.size(); ++j) {
    size_t i = e.runtimeParts[j];
    Kind kind = kparams[j].kind;
    ArgSlot s;
    switch (kind) {
    case Kind::Float32:
    case Kind::Float64: {
      double x;
      std::memcpy(&x, &c.bits[i], sizeof x);
      s = runtime::packFloat(kind, x);
      break;
    }
    case Kind::Int32:
    case Kind::UInt32: {
      uint32_t x = (uint32_t)c.bits[i];
      std::memcpy(&s.bits, &x, sizeof x);
      break;
    }
    case Kind::Bool: {
      uint8_t b = c.bits[i] != 0;
      std::memcpy(&s.bits, &b, 1);
      break;
    }
    default:
      s.bits = c.bits[i];
    }
    slots[j] = s;
  }
}

uint64_t streamOf(const Launcher &L, const Call &c) {
  PyObject *given = L.streamOption >= 0 ? c.options[L.streamOption] : nullptr;
  py::object s;
  if (given && given != Py_None) {
    s = py::reinterpret_borrow<py::object>(given);
  } else if (L.rawStream && !L.rawStream.is_none()) {
    PyObject *r = PyObject_CallOneArg(L.rawStream.ptr(), py::int_(c.device).ptr());
    if (!r)
      throw py::error_already_set();
    s = py::reinterpret_steal<py::object>(r);
  } else {
    return 0;
  }
  uint64_t v = PyLong_AsUnsignedLongLong(s.ptr());
  if (v == (uint64_t)-1 && PyErr_Occurred())
    throw py::error_already_set();
  return v;
}

// The slow path: JITFunction.run(*args, grid=grid, warmup=False, **kwargs).
PyObject *slowPath(Launcher &L, PyObject *grid, PyObject *const *args, size_t nargs,
                   PyObject *kwnames) {
  ++L.misses;
  py::object jit = py::reinterpret_steal<py::object>(PyObject_CallNoArgs(L.jitRef.ptr()));
  if (!jit)
    throw py::error_already_set();
  if (jit.is_none())
    throw std::runtime_error("the @jit function of this launch no longer exists");
  py::tuple pos(nargs);
  for (size_t i = 0; i < nargs; ++i)
    pos[i] = py::handle(args[i]);
  py::dict kw;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k)
    kw[py::handle(PyTuple_GET_ITEM(kwnames, k))] = py::handle(args[nargs + k]);
  kw["grid"] = py::handle(grid);
  kw["warmup"] = py::bool_(false);
  PyObject *r = PyObject_Call(jit.attr("run").ptr(), pos.ptr(), kw.ptr());
  if (!r)
    throw py::error_already_set();
  return r;
}

PyObject *cudaErrorType = nullptr;

// fast_launch(launcher, grid, *args, **kwargs): METH_FASTCALL | METH_KEYWORDS.
PyObject *fastLaunch(PyObject *, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
  size_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs < 2) {
    PyErr_SetString(PyExc_TypeError, "fast_launch(launcher, grid, *args, **kwargs)");
    return nullptr;
  }
  try {
    Launcher &L = *launcherOf(args[0]);
    PyObject *grid = args[1];
    PyObject *const *kargs = args + 2;
    size_t nk = nargs - 2;
    Call c;
    c.checkDevices = L.everyDevice;
    c.key.reserve(128);
    if (!L.env.current() || !bind(L, kargs, nk, kwnames, c) || !encode(L, c))
      return slowPath(L, grid, kargs, nk, kwnames);
    auto it = L.entries.find(std::string_view(c.key));
    if (it == L.entries.end())
      return slowPath(L, grid, kargs, nk, kwnames);
    int64_t g[3];
    py::object called;
    if (!gridDims(grid, g)) {
      if (PyTuple_Check(grid) || PyList_Check(grid) || PyLong_Check(grid) ||
          !PyCallable_Check(grid))
        return slowPath(L, grid, kargs, nk, kwnames);
      called = callGrid(L, grid, c);
      if (!gridDims(called.ptr(), g))
        return slowPath(L, called.ptr(), kargs, nk, kwnames);
      it = L.entries.find(std::string_view(c.key)); // the grid function may have launched
      if (it == L.entries.end())
        return slowPath(L, called.ptr(), kargs, nk, kwnames);
    }
    const Entry &e = it->second;
    ++L.hits;
    if (g[0] == 0 || g[1] == 0 || g[2] == 0)
      return Py_NewRef(e.result.ptr());
    ArgSlot slots[kMaxParts];
    pack(e, c, slots);
    size_t n = e.runtimeParts.size();
    uint64_t stream = streamOf(L, c);
    if (L.dryRun) {
      L.last = LastLaunch{{g[0], g[1], g[2]}, stream, c.device, {}, e.result};
      for (size_t j = 0; j < n; ++j)
        L.last.args.push_back(slots[j].bits);
      return Py_NewRef(e.result.ptr());
    }
    // The GIL stays held, as for torch's own launches: releasing and taking
    // it back would cost more than the launch's driver call saves others.
    e.kernel->launch(c.device, g[0], g[1], g[2], stream, slots, n);
    return Py_NewRef(e.result.ptr());
  } catch (py::error_already_set &e) {
    e.restore();
    return nullptr;
  } catch (const CudaError &e) {
    PyErr_SetString(cudaErrorType ? cudaErrorType : PyExc_RuntimeError, e.what());
    return nullptr;
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyMethodDef fastLaunchDef = {
    "fast_launch", (PyCFunction)(void (*)(void))fastLaunch, METH_FASTCALL | METH_KEYWORDS,
    "fast_launch(launcher, grid, *args, **kwargs): launches a registered specialisation "
    "(see docs/bindings.md, 'Launch fast path'); anything else goes to JITFunction.run."};

// Binds and encodes a call given as (args, kwargs); None when the fast path
// would not handle it.
bool keyOf(Launcher &L, py::tuple args, py::dict kwargs, Call &c, std::vector<PyObject *> &flat,
           py::object &kwnames) {
  flat.clear();
  for (auto a : args)
    flat.push_back(a.ptr());
  py::list names;
  for (auto [k, v] : kwargs) {
    names.append(k);
    flat.push_back(v.ptr());
  }
  kwnames = py::tuple(names);
  return bind(L, flat.data(), args.size(), kwnames.ptr(), c) && encode(L, c);
}

} // namespace

void bindFastLaunch(py::module_ &m) {
  cudaErrorType = m.attr("CudaError").ptr();
  names = {PyUnicode_InternFromString("is_cuda"), PyUnicode_InternFromString("data_ptr"),
           PyUnicode_InternFromString("dtype"), PyUnicode_InternFromString("get_device"),
           PyUnicode_InternFromString("value"), PyUnicode_InternFromString("numel"),
           PyUnicode_InternFromString("base"), PyUnicode_InternFromString("shape"),
           PyUnicode_InternFromString("strides"), PyUnicode_InternFromString("block_shape"),
           PyUnicode_InternFromString("padding"),
           PyUnicode_InternFromString("is_contiguous"), PyUnicode_InternFromString("stride")};
  m.add_object("fast_launch", py::reinterpret_steal<py::object>(
                                  PyCFunction_NewEx(&fastLaunchDef, nullptr, m.ptr())));

  m.def(
      "fast_launcher_new",
      [](py::object jitRef, py::list params, py::list options, py::object constexprType,
         py::object descriptorType) {
        auto *L = new Launcher;
        L->jitRef = std::move(jitRef);
        L->constexprType = std::move(constexprType);
        if (PyType_Check(descriptorType.ptr()))
          L->descriptorType = std::move(descriptorType);
        if (params.size() > kMaxParams || options.size() > kMaxOptions) {
          delete L;
          throw py::value_error("a kernel launched through the fast path has at most " +
                                std::to_string(kMaxParams) + " parameters");
        }
        for (auto h : params) {
          auto t = h.cast<py::tuple>(); // (name, constexpr, dns, dnsa, has_default, default)
          Param p;
          p.name = py::reinterpret_steal<py::object>(
              PyUnicode_InternFromString(t[0].cast<std::string>().c_str()));
          p.isConstexpr = t[1].cast<bool>();
          p.noSpecialize = t[2].cast<bool>();
          p.noAlignmentSpecialize = t[3].cast<bool>();
          if (t[4].cast<bool>())
            p.defaultValue = t[5];
          L->params.push_back(std::move(p));
        }
        for (auto h : options) {
          std::string name = h.cast<std::string>();
          if (name == "stream")
            L->streamOption = (int)L->options.size();
          L->options.push_back(
              py::reinterpret_steal<py::object>(PyUnicode_InternFromString(name.c_str())));
        }
        return py::capsule(L, kCapsuleName, [](PyObject *cap) {
          delete static_cast<Launcher *>(PyCapsule_GetPointer(cap, kCapsuleName));
        });
      },
      py::arg("jit_ref"), py::arg("params"), py::arg("options"), py::arg("constexpr_type"),
      py::arg("descriptor_type") = py::none(),
      "A fast launcher for one @jit function. jit_ref: a weakref to it; params: "
      "[(name, is_constexpr, do_not_specialize, do_not_specialize_on_alignment, has_default, "
      "default)]; options: the launch option names; descriptor_type: the host TensorDescriptor "
      "class (its instances, exactly, launch from C++; None: they take the Python path).");

  m.def(
      "fast_register",
      [](py::capsule cap, py::tuple args, py::dict kwargs, py::object result,
         std::shared_ptr<GpuKernel> kernel, py::list runtimeParams, py::object tensorType,
         py::object rawStream) {
        Launcher &L = *launcherOf(cap.ptr());
        if (!L.tensorType) {
          L.tensorType = tensorType;
          L.rawStream = rawStream;
          // Only after a GPU launch (the driver is loaded); a dry run has none.
          if (!L.dryRun) {
            try {
              L.everyDevice = runtime::Driver::get().deviceCount() > 1;
            } catch (const std::exception &) {
              L.everyDevice = true;
            }
          }
        }
        Call c;
        std::vector<PyObject *> flat;
        py::object kwnames;
        if (!keyOf(L, args, kwargs, c, flat, kwnames))
          return false;
        if (runtimeParams.size() != kernel->params().size() ||
            runtimeParams.size() > kMaxParts)
          return false;
        // Each kernel argument must come from a part whose key says what
        // the kernel takes (so pack() reads the right bits). Raw-byte
        // parameters go through the slow path, which keeps their bytes
        // alive for the launch.
        std::vector<uint16_t> parts;
        for (size_t j = 0; j < runtimeParams.size(); ++j) {
          py::handle h = runtimeParams[j];
          long long i = -1, k = 0;
          if (PyLong_Check(h.ptr())) {
            i = h.cast<long long>();
          } else {
            auto t = h.cast<py::tuple>();
            if (t.size() != 2)
              return false;
            i = t[0].cast<long long>();
            k = t[1].cast<long long>();
          }
          if (i < 0 || (size_t)i >= c.numParams || L.params[i].isConstexpr || k < 0 ||
              k >= c.firstPart[i + 1] - c.firstPart[i])
            return false;
          size_t part = c.firstPart[i] + k;
          if (!partFits(c.partKind[part], kernel->params()[j].kind))
            return false;
          parts.push_back((uint16_t)part);
        }
        // Entries installed under other values of the environment were
        // built for them: dropped.
        EnvState env = EnvState::now();
        if (L.entries.size() >= kMaxEntries || !(env == L.env))
          L.entries.clear();
        L.env = std::move(env);
        Entry e;
        e.kernel = std::move(kernel);
        e.result = std::move(result);
        e.runtimeParts = std::move(parts);
        for (PyObject *o : c.identity)
          e.keyedByIdentity.push_back(py::reinterpret_borrow<py::object>(o));
        L.entries[c.key] = std::move(e);
        return true;
      },
      py::arg("launcher"), py::arg("args"), py::arg("kwargs"), py::arg("result"),
      py::arg("kernel"), py::arg("runtime_params"), py::arg("tensor_type"),
      py::arg("raw_stream"),
      "Registers the specialisation that (args, kwargs) select: `kernel` (a GpuKernel) "
      "launched with runtime_params, returning `result`. runtime_params: per kernel "
      "argument, a parameter index or (parameter index, part), where a TensorDescriptor's "
      "parts are its base (0), shape (1..rank) and strides (rank+1..2*rank). False when the "
      "fast path cannot handle such a call.");

  m.def(
      "fast_key",
      [](py::capsule cap, py::tuple args, py::dict kwargs) -> py::object {
        Launcher &L = *launcherOf(cap.ptr());
        Call c;
        std::vector<PyObject *> flat;
        py::object kwnames;
        if (!keyOf(L, args, kwargs, c, flat, kwnames))
          return py::none();
        return py::bytes(c.key);
      },
      "The fast path's key bytes for a call, or None when it would take the slow path.");

  m.def("fast_stats", [](py::capsule cap) {
    Launcher &L = *launcherOf(cap.ptr());
    py::dict out;
    out["hits"] = L.hits;
    out["misses"] = L.misses;
    out["entries"] = L.entries.size();
    return out;
  });

  m.def(
      "fast_set_dry_run",
      [](py::capsule cap, bool on) { launcherOf(cap.ptr())->dryRun = on; },
      "Tests without a GPU: record launches (fast_last_launch) instead of making them.");

  m.def("fast_last_launch", [](py::capsule cap) -> py::object {
    Launcher &L = *launcherOf(cap.ptr());
    if (!L.last.kernel)
      return py::none();
    py::dict out;
    out["grid"] = py::make_tuple(L.last.grid[0], L.last.grid[1], L.last.grid[2]);
    out["stream"] = L.last.stream;
    out["device"] = L.last.device;
    out["args"] = L.last.args;
    out["result"] = L.last.kernel;
    return out;
  });
}

} // namespace tritium::bindings
