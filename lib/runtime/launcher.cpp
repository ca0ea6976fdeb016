// Loading a kernel image per device and launching it. See
// include/tritium/runtime/launcher.h.
#include "tritium/runtime/launcher.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace tritium::runtime {

namespace {

// Argument arrays of up to this many parameters live on the stack: a launch
// allocates nothing.
constexpr size_t kInlineArgs = 64;

std::string kernelWhat(const std::string &name) { return "kernel '" + name + "'"; }

// "sm_90a" -> (9, 0); "sm_86" -> (8, 6). (0, 0) when unparsable.
std::pair<int, int> targetCapability(const std::string &target) {
  int sm = 0;
  size_t i = target.rfind('_');
  if (i == std::string::npos)
    return {0, 0};
  for (size_t k = i + 1; k < target.size() && std::isdigit((unsigned char)target[k]); ++k)
    sm = sm * 10 + (target[k] - '0');
  return {sm / 10, sm % 10};
}

// Loading a module is no stream work, but while any stream is being captured
// into a CUDA graph in the global capture mode (torch.cuda.graph's default)
// the driver refuses it as a potentially unsafe call and invalidates the
// capture. A kernel's first launch may come during a capture (it compiles and
// loads on first use), so the load runs with this thread's capture mode
// relaxed, as torch's allocator does for its cudaMalloc during capture; the
// launch itself is captured as usual.
class RelaxedCaptureMode {
public:
  explicit RelaxedCaptureMode(Driver &d) : d_(d) {
    if (d_.cuThreadExchangeStreamCaptureMode)
      active_ = d_.cuThreadExchangeStreamCaptureMode(&mode_) == CUDA_SUCCESS;
  }
  ~RelaxedCaptureMode() {
    if (active_)
      d_.cuThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode &) = delete;
  RelaxedCaptureMode &operator=(const RelaxedCaptureMode &) = delete;

private:
  Driver &d_;
  int mode_ = CU_STREAM_CAPTURE_MODE_RELAXED; // the previous mode once swapped
  bool active_ = false;
};

} // namespace

const char *kindName(KernelParam::Kind kind) {
  switch (kind) {
  case KernelParam::Kind::Pointer:
    return "ptr";
  case KernelParam::Kind::Int32:
    return "i32";
  case KernelParam::Kind::Int64:
    return "i64";
  case KernelParam::Kind::UInt32:
    return "u32";
  case KernelParam::Kind::UInt64:
    return "u64";
  case KernelParam::Kind::Float32:
    return "fp32";
  case KernelParam::Kind::Float64:
    return "fp64";
  case KernelParam::Kind::Bool:
    return "i1";
  case KernelParam::Kind::Bytes:
    return "bytes";
  }
  return "?";
}

KernelParam::Kind parseKind(const std::string &s) {
  using K = KernelParam::Kind;
  if (s == "ptr" || (!s.empty() && s[0] == '*'))
    return K::Pointer;
  if (s == "i32")
    return K::Int32;
  if (s == "i64")
    return K::Int64;
  if (s == "u32")
    return K::UInt32;
  if (s == "u64")
    return K::UInt64;
  if (s == "fp32" || s == "f32")
    return K::Float32;
  if (s == "fp64" || s == "f64")
    return K::Float64;
  if (s == "i1" || s == "u1")
    return K::Bool;
  if (s == "bytes")
    return K::Bytes;
  throw std::invalid_argument("unknown kernel parameter kind '" + s + "'");
}

ArgSlot packInt(KernelParam::Kind kind, int64_t v, const std::string &what) {
  using K = KernelParam::Kind;
  ArgSlot slot;
  switch (kind) {
  case K::Int32:
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      throw CudaError(what + ": " + std::to_string(v) + " does not fit in i32");
    {
      int32_t x = (int32_t)v;
      std::memcpy(&slot.bits, &x, sizeof x);
    }
    return slot;
  case K::UInt32:
    if (v < 0 || v > (int64_t)std::numeric_limits<uint32_t>::max())
      throw CudaError(what + ": " + std::to_string(v) + " does not fit in u32");
    {
      uint32_t x = (uint32_t)v;
      std::memcpy(&slot.bits, &x, sizeof x);
    }
    return slot;
  case K::Int64:
    std::memcpy(&slot.bits, &v, sizeof v);
    return slot;
  case K::UInt64:
    if (v < 0)
      throw CudaError(what + ": " + std::to_string(v) + " is negative, the parameter is u64");
    slot.bits = (uint64_t)v;
    return slot;
  case K::Pointer:
    slot.bits = (uint64_t)v;
    return slot;
  case K::Bool: {
    uint8_t b = v != 0;
    std::memcpy(&slot.bits, &b, 1);
    return slot;
  }
  case K::Float32:
  case K::Float64:
    return packFloat(kind, (double)v);
  case K::Bytes:
    throw CudaError(what + ": an integer cannot fill a parameter of raw bytes");
  }
  return slot;
}

ArgSlot packUInt(KernelParam::Kind kind, uint64_t v, const std::string &what) {
  using K = KernelParam::Kind;
  if (kind == K::UInt64 || kind == K::Pointer) {
    ArgSlot slot;
    slot.bits = v;
    return slot;
  }
  if (v > (uint64_t)std::numeric_limits<int64_t>::max())
    throw CudaError(what + ": " + std::to_string(v) + " does not fit in " + kindName(kind));
  return packInt(kind, (int64_t)v, what);
}

ArgSlot packFloat(KernelParam::Kind kind, double v) {
  ArgSlot slot;
  if (kind == KernelParam::Kind::Float32) {
    float f = (float)v;
    std::memcpy(&slot.bits, &f, sizeof f);
  } else {
    std::memcpy(&slot.bits, &v, sizeof v);
  }
  return slot;
}

ArgSlot packBytes(const KernelParam &p, const void *data, size_t n,
                  const std::string &what) {
  if (p.kind != KernelParam::Kind::Bytes)
    throw CudaError(what + ": raw bytes passed to a " + kindName(p.kind) +
                    " parameter");
  if (!data || n != (size_t)p.bytes)
    throw CudaError(what + ": the parameter takes " + std::to_string(p.bytes) +
                    " bytes, got " + std::to_string(data ? n : 0));
  ArgSlot slot;
  slot.data = data;
  return slot;
}

void launchArgPointers(const std::string &kernel,
                       const std::vector<KernelParam> &params,
                       const ArgSlot *args, void **ptrs) {
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].kind == KernelParam::Kind::Bytes) {
      // The driver copies each parameter with the size and alignment the
      // function declares; the host copy needs no alignment of its own.
      if (!args[i].data)
        throw CudaError(kernelWhat(kernel) + ": parameter '" + params[i].name +
                        "' takes " + std::to_string(params[i].bytes) +
                        " raw bytes, but none were passed");
      ptrs[i] = const_cast<void *>(args[i].data);
    } else {
      ptrs[i] = const_cast<uint64_t *>(&args[i].bits);
    }
  }
}

void checkDevicePointer(uint64_t address, const std::string &what) {
  if (address == 0)
    return; // a null pointer is the kernel's business (e.g. an unused arg)
  Driver &d = Driver::get();
  CUdeviceptr dev = 0;
  CUresult r = d.cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                       (CUdeviceptr)address);
  if (r == CUDA_ERROR_INVALID_VALUE)
    throw CudaError(what + " is not GPU memory (a CPU tensor passed to a GPU launch?); "
                    "move it to the GPU (tensor.cuda()) or pass only CPU tensors to run "
                    "on the CPU executor", r);
  d.check(r, what + ": cuPointerGetAttribute");
}

GpuKernel::GpuKernel(std::string name, std::string image, bool isCubin, std::string target,
                     int numWarps, int sharedBytes, std::vector<KernelParam> params)
    : name_(std::move(name)), image_(std::move(image)), isCubin_(isCubin),
      target_(std::move(target)), numWarps_(numWarps), sharedBytes_(sharedBytes),
      params_(std::move(params)) {
  if (numWarps_ < 1 || numWarps_ > 32)
    throw CudaError(kernelWhat(name_) + ": num_warps must be in [1, 32], got " +
                    std::to_string(numWarps_));
  if (sharedBytes_ < 0)
    throw CudaError(kernelWhat(name_) + ": negative shared memory size");
  for (auto &f : functions_)
    f.store(nullptr, std::memory_order_relaxed);
  modules_.fill(nullptr);
}

GpuKernel::~GpuKernel() {
  // The driver stays loaded for the life of the process; unloading is
  // best-effort (at exit the context may already be gone).
  bool any = false;
  for (CUmodule m : modules_)
    any |= m != nullptr;
  if (!any || !Driver::available())
    return;
  Driver &d = Driver::get();
  for (int i = 0; i < kMaxDevices; ++i)
    if (modules_[i]) {
      CUcontext cur = nullptr;
      if (d.cuCtxGetCurrent(&cur) == CUDA_SUCCESS) {
        try {
          d.ensureContext(i);
          d.cuModuleUnload(modules_[i]);
          if (cur)
            d.cuCtxSetCurrent(cur);
        } catch (...) {
        }
      }
    }
}

CUfunction GpuKernel::load(int device) {
  if (device < 0 || device >= kMaxDevices)
    throw CudaError("invalid CUDA device index " + std::to_string(device));
  if (CUfunction f = functions_[device].load(std::memory_order_acquire))
    return f;
  std::lock_guard<std::mutex> lock(loadMutex_);
  if (CUfunction f = functions_[device].load(std::memory_order_acquire))
    return f;
  Driver &d = Driver::get();
  d.ensureContext(device);
  RelaxedCaptureMode relaxed(d);
  std::string where = kernelWhat(name_) + " on device " + std::to_string(device);

  auto [major, minor] = d.capability(device);
  auto [tmaj, tmin] = targetCapability(target_);
  bool archSpecific = !target_.empty() && target_.back() == 'a';
  // A cubin runs only on its own major version (and an `a` target only on
  // exactly that chip); PTX JITs forward but never backward.
  if (tmaj != 0) {
    bool ok = isCubin_ ? (tmaj == major && tmin <= minor) : (tmaj * 10 + tmin <= major * 10 + minor);
    if (archSpecific)
      ok = tmaj == major && tmin == minor;
    if (!ok)
      throw CudaError(where + ": compiled for " + target_ + ", but the device is sm_" +
                      std::to_string(major) + std::to_string(minor) + " (" + d.deviceName(device) +
                      "); compile with target=\"sm_" + std::to_string(major) +
                      std::to_string(minor) + (major >= 9 ? "a" : "") + "\"");
  }

  CUmodule mod = nullptr;
  if (isCubin_) {
    d.check(d.cuModuleLoadData(&mod, image_.data()), where + ": cuModuleLoadData (cubin)");
  } else {
    // The driver's JIT: keep its error log for the message.
    std::string ptx = image_; // NUL-terminated copy
    std::vector<char> errLog(16384, 0), infoLog(4096, 0);
    int opts[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                   CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *vals[4] = {errLog.data(), (void *)(uintptr_t)(errLog.size() - 1), infoLog.data(),
                     (void *)(uintptr_t)(infoLog.size() - 1)};
    CUresult r = d.cuModuleLoadDataEx(&mod, ptx.c_str(), 4, opts, vals);
    if (r != CUDA_SUCCESS)
      throw CudaError(where + ": the driver could not JIT-compile the PTX: " + d.errorString(r) +
                          (errLog[0] ? std::string("\n") + errLog.data() : std::string()),
                      r);
  }
  CUfunction fn = nullptr;
  CUresult r = d.cuModuleGetFunction(&fn, mod, name_.c_str());
  if (r != CUDA_SUCCESS) {
    d.cuModuleUnload(mod);
    d.check(r, where + ": no .entry named '" + name_ + "' in the module");
  }

  // Shared memory: dynamic + static against the opt-in limit; above the
  // default 48 KiB the function must opt in explicitly.
  int staticShared = 0;
  d.check(d.cuFuncGetAttribute(&staticShared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
          where + ": cuFuncGetAttribute");
  int optin = d.attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device);
  if (sharedBytes_ + staticShared > optin) {
    d.cuModuleUnload(mod);
    throw CudaError(where + " needs " + std::to_string(sharedBytes_ + staticShared) +
                    " bytes of shared memory per block (" + std::to_string(sharedBytes_) +
                    " dynamic + " + std::to_string(staticShared) + " static), but " +
                    d.deviceName(device) + " allows at most " + std::to_string(optin) +
                    "; use smaller blocks or fewer pipeline stages (num_stages)");
  }
  if (sharedBytes_ > 0) {
    r = d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             optin - staticShared);
    if (r != CUDA_SUCCESS) {
      d.cuModuleUnload(mod);
      d.check(r, where + ": cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    }
  }
  // Above the default 48 KiB, ask for the largest shared-memory carveout. Left
  // without a preference, the driver may configure the SM's L1/shared split
  // for fewer resident blocks than the shared memory would allow (Triton asks
  // the same). TRITIUM_SHARED_CARVEOUT (a percent, or -1 for the driver's
  // choice) overrides it, for measuring the difference.
  if (sharedBytes_ + staticShared > 48 * 1024) {
    int carveout = 100;
    if (const char *env = std::getenv("TRITIUM_SHARED_CARVEOUT"); env && *env)
      carveout = std::atoi(env);
    // Only a hint: a refusal leaves the driver's choice, which still runs.
    (void)d.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout);
  }
  int maxThreads = 0;
  d.check(d.cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
          where + ": cuFuncGetAttribute");
  if (numWarps_ * 32 > maxThreads) {
    int regs = 0;
    d.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
    d.cuModuleUnload(mod);
    throw CudaError(where + ": num_warps=" + std::to_string(numWarps_) + " (" +
                    std::to_string(numWarps_ * 32) + " threads) is more than the " +
                    std::to_string(maxThreads) + " threads per block the kernel can run with " +
                    std::to_string(regs) + " registers per thread; use fewer warps");
  }
  maxGrid_[device] = {d.attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, device),
                      d.attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, device),
                      d.attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, device)};
  // A tensor without elements gets a map of the module's fill element.
  if (!tensorMaps_.empty() && d.cuModuleGetGlobal) {
    CUdeviceptr fill = 0;
    size_t bytes = 0;
    if (d.cuModuleGetGlobal(&fill, &bytes, mod, kTmaFillSymbol) == CUDA_SUCCESS &&
        bytes >= (size_t)kTmaFillBytes)
      tmaFill_[device] = fill;
  }
  modules_[device] = mod;
  functions_[device].store(fn, std::memory_order_release);
  return fn;
}

KernelAttributes GpuKernel::attributes(int device) {
  CUfunction fn = load(device);
  Driver &d = Driver::get();
  KernelAttributes a;
  d.check(d.cuFuncGetAttribute(&a.numRegs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn), "cuFuncGetAttribute");
  d.check(d.cuFuncGetAttribute(&a.localBytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn),
          "cuFuncGetAttribute");
  d.check(d.cuFuncGetAttribute(&a.staticSharedBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
          "cuFuncGetAttribute");
  d.check(d.cuFuncGetAttribute(&a.maxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
          "cuFuncGetAttribute");
  return a;
}

void GpuKernel::launch(int device, int64_t gx, int64_t gy, int64_t gz, uint64_t stream,
                       const ArgSlot *args, size_t numArgs) {
  if (numArgs != params_.size())
    throw CudaError(kernelWhat(name_) + " takes " + std::to_string(params_.size()) +
                    " arguments, got " + std::to_string(numArgs));
  if (gx <= 0 || gy <= 0 || gz <= 0)
    throw CudaError(kernelWhat(name_) + ": the grid (" + std::to_string(gx) + ", " +
                    std::to_string(gy) + ", " + std::to_string(gz) +
                    ") is empty or negative; every dimension must be at least 1");
  CUfunction fn = load(device);
  const auto &mg = maxGrid_[device];
  if (gx > mg[0] || gy > mg[1] || gz > mg[2])
    throw CudaError(kernelWhat(name_) + ": the grid (" + std::to_string(gx) + ", " +
                    std::to_string(gy) + ", " + std::to_string(gz) +
                    ") exceeds the device's limit (" + std::to_string(mg[0]) + ", " +
                    std::to_string(mg[1]) + ", " + std::to_string(mg[2]) + ")");
  Driver &d = Driver::get();
  d.ensureContext(device);

  size_t total = numArgs + tensorMaps_.size();
  void *inlinePtrs[kInlineArgs];
  std::vector<void *> heapPtrs;
  void **ptrs = inlinePtrs;
  if (total > kInlineArgs) {
    heapPtrs.resize(total);
    ptrs = heapPtrs.data();
  }
  launchArgPointers(name_, params_, args, ptrs);
  if (!tensorMaps_.empty())
    return launchWithTensorMaps(d, device, fn, gx, gy, gz, stream, args, ptrs);
  cuLaunch(d, fn, gx, gy, gz, stream, numArgs ? ptrs : nullptr);
}

void GpuKernel::cuLaunch(Driver &d, CUfunction fn, int64_t gx, int64_t gy, int64_t gz,
                         uint64_t stream, void **ptrs) {
  CUresult r = d.cuLaunchKernel(fn, (unsigned)gx, (unsigned)gy, (unsigned)gz,
                                (unsigned)(numWarps_ * 32), 1, 1, (unsigned)sharedBytes_,
                                reinterpret_cast<CUstream>(stream), ptrs, nullptr);
  if (r != CUDA_SUCCESS)
    d.check(r, "launching " + kernelWhat(name_) + " (grid " + std::to_string(gx) + "x" +
                   std::to_string(gy) + "x" + std::to_string(gz) + ", " +
                   std::to_string(numWarps_ * 32) + " threads, " + std::to_string(sharedBytes_) +
                   " bytes of dynamic shared memory)");
}

void GpuKernel::setTensorMaps(std::vector<TensorMapSpec> maps, size_t position) {
  if (position > params_.size())
    throw CudaError(kernelWhat(name_) + ": tensor maps placed after parameter " +
                    std::to_string(position) + ", but the kernel has " +
                    std::to_string(params_.size()));
  // The specs index the parameters before the maps.
  std::vector<KernelParam> own(params_.begin(), params_.begin() + position);
  for (size_t i = 0; i < maps.size(); ++i)
    checkTensorMapSpec(name_, i, maps[i], own);
  std::lock_guard<std::mutex> lock(encodedMutex_);
  tensorMaps_ = std::move(maps);
  tensorMapPosition_ = position;
  encoded_.assign(tensorMaps_.size(), EncodedTensorMap{});
}

std::vector<TensorMapEncoding> GpuKernel::tensorMapEncodings(const ArgSlot *args) const {
  std::vector<TensorMapEncoding> out;
  for (size_t i = 0; i < tensorMaps_.size(); ++i)
    out.push_back(tensorMapEncoding(name_, i, tensorMaps_[i], params_, args));
  return out;
}

void GpuKernel::encodeTensorMapFor(Driver &d, int device, size_t i, const ArgSlot *args,
                                   TensorMapBuffer &out) {
  TensorMapEncoding e = tensorMapEncoding(name_, i, tensorMaps_[i], params_, args);
  if (e.empty) {
    CUdeviceptr fill = tmaFill_[device];
    if (fill == 0)
      throw CudaError(tensorMapWhat(name_, i, tensorMaps_[i], params_) +
                      ": the tensor has no elements, and the kernel's module declares no '" +
                      kTmaFillSymbol + "' for its map");
    e.address = fill + (e.oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE ? 0 : kTmaFillNanOffset);
  }
  std::lock_guard<std::mutex> lock(encodedMutex_);
  EncodedTensorMap &last = encoded_[i];
  if (!last.valid || !(last.in == e)) {
    last.valid = false;
    encodeTensorMap(e, last.map.bytes, tensorMapWhat(name_, i, tensorMaps_[i], params_),
                    d.cuTensorMapEncodeTiled, &d);
    last.in = e;
    last.valid = true;
  }
  out = last.map;
}

void GpuKernel::launchWithTensorMaps(Driver &d, int device, CUfunction fn, int64_t gx,
                                     int64_t gy, int64_t gz, uint64_t stream,
                                     const ArgSlot *args, void **ptrs) {
  // The maps live on this frame until cuLaunchKernel has copied the
  // parameters (it does before returning).
  constexpr size_t kInlineMaps = 4;
  size_t n = tensorMaps_.size();
  TensorMapBuffer inlineMaps[kInlineMaps];
  std::vector<TensorMapBuffer> heapMaps;
  TensorMapBuffer *maps = inlineMaps;
  if (n > kInlineMaps) {
    heapMaps.resize(n);
    maps = heapMaps.data();
  }
  for (size_t i = 0; i < n; ++i)
    encodeTensorMapFor(d, device, i, args, maps[i]);
  // The kernel's own parameters, the maps, then the hidden parameters.
  size_t at = tensorMapPosition_;
  std::memmove(ptrs + at + n, ptrs + at, (params_.size() - at) * sizeof(void *));
  for (size_t i = 0; i < n; ++i)
    ptrs[at + i] = maps[i].bytes;
  cuLaunch(d, fn, gx, gy, gz, stream, ptrs);
}

} // namespace tritium::runtime
