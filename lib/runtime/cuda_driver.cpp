// Loading libcuda.so.1 with dlopen and the context bookkeeping of the
// launcher. See include/tritium/runtime/cuda_driver.h.
#include "tritium/runtime/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>

namespace tritium::runtime {

namespace {

// The outcome of the one load attempt of this process.
struct LoadState {
  Driver *driver = nullptr;
  std::string error;
};

// Resolves `name` (trying the versioned `_v2` name first where the driver
// has one) into `slot`; false when the driver lacks it.
template <typename F> bool resolve(void *lib, F &slot, const char *name,
                                   const char *v2 = nullptr) {
  void *p = v2 ? dlsym(lib, v2) : nullptr;
  if (!p)
    p = dlsym(lib, name);
  slot = reinterpret_cast<F>(p);
  return p != nullptr;
}

} // namespace

static LoadState &loadState();

Driver &Driver::get() {
  LoadState &s = loadState();
  if (!s.driver)
    throw CudaError(s.error, CUDA_ERROR_NO_DEVICE);
  return *s.driver;
}

bool Driver::available(std::string *why) {
  LoadState &s = loadState();
  if (!s.driver && why)
    *why = s.error;
  return s.driver != nullptr;
}

namespace {
// Driver's constructor is protected: only this loader makes one.
struct DriverAccess : Driver {
  DriverAccess() = default;
};
} // namespace

static LoadState &loadState() {
  // Magic static: C++11 guarantees one thread runs the initialiser.
  static LoadState state = [] {
    LoadState s;
    const char *override = std::getenv("TRITIUM_LIBCUDA");
    std::string path = override && *override ? override : "libcuda.so.1";
    void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *err = dlerror();
      s.error = "no CUDA driver found: cannot load " + path + " (" +
                (err ? err : "unknown error") +
                "); GPU launches need an NVIDIA GPU and its driver (pass CPU "
                "tensors or numpy arrays to run on the CPU executor)";
      return s;
    }
    // Never dlclose'd: function pointers and modules outlive any owner.
    auto *d = new DriverAccess();
    bool ok = true;
    const char *missing = nullptr;
    auto need = [&](bool found, const char *name) {
      if (!found && ok) {
        ok = false;
        missing = name;
      }
    };
    need(resolve(lib, d->cuInit, "cuInit"), "cuInit");
    need(resolve(lib, d->cuDriverGetVersion, "cuDriverGetVersion"), "cuDriverGetVersion");
    need(resolve(lib, d->cuGetErrorString, "cuGetErrorString"), "cuGetErrorString");
    need(resolve(lib, d->cuGetErrorName, "cuGetErrorName"), "cuGetErrorName");
    need(resolve(lib, d->cuDeviceGetCount, "cuDeviceGetCount"), "cuDeviceGetCount");
    need(resolve(lib, d->cuDeviceGet, "cuDeviceGet"), "cuDeviceGet");
    need(resolve(lib, d->cuDeviceGetName, "cuDeviceGetName"), "cuDeviceGetName");
    need(resolve(lib, d->cuDeviceGetAttribute, "cuDeviceGetAttribute"),
         "cuDeviceGetAttribute");
    need(resolve(lib, d->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
         "cuDevicePrimaryCtxRetain");
    need(resolve(lib, d->cuCtxGetCurrent, "cuCtxGetCurrent"), "cuCtxGetCurrent");
    need(resolve(lib, d->cuCtxSetCurrent, "cuCtxSetCurrent"), "cuCtxSetCurrent");
    need(resolve(lib, d->cuCtxSynchronize, "cuCtxSynchronize"), "cuCtxSynchronize");
    need(resolve(lib, d->cuModuleLoadData, "cuModuleLoadData"), "cuModuleLoadData");
    need(resolve(lib, d->cuModuleLoadDataEx, "cuModuleLoadDataEx"), "cuModuleLoadDataEx");
    need(resolve(lib, d->cuModuleUnload, "cuModuleUnload"), "cuModuleUnload");
    need(resolve(lib, d->cuModuleGetFunction, "cuModuleGetFunction"),
         "cuModuleGetFunction");
    need(resolve(lib, d->cuFuncGetAttribute, "cuFuncGetAttribute"), "cuFuncGetAttribute");
    need(resolve(lib, d->cuFuncSetAttribute, "cuFuncSetAttribute"), "cuFuncSetAttribute");
    // The plain names are the legacy-default-stream variants, which is what
    // a stream handle of 0 means to torch as well.
    need(resolve(lib, d->cuLaunchKernel, "cuLaunchKernel"), "cuLaunchKernel");
    need(resolve(lib, d->cuStreamSynchronize, "cuStreamSynchronize"), "cuStreamSynchronize");
    need(resolve(lib, d->cuPointerGetAttribute, "cuPointerGetAttribute"),
         "cuPointerGetAttribute");
    resolve(lib, d->cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
    resolve(lib, d->cuModuleGetGlobal, "cuModuleGetGlobal", "cuModuleGetGlobal_v2");
    resolve(lib, d->cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
    if (!ok) {
      s.error = std::string("the CUDA driver ") + path + " lacks " + missing +
                " (driver too old for tritium?)";
      delete d;
      return s;
    }
    CUresult r = d->cuInit(0);
    if (r != CUDA_SUCCESS) {
      s.error = "no usable CUDA device: cuInit failed: " + d->errorString(r);
      delete d;
      return s;
    }
    int count = 0;
    if (d->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
      s.error = "no CUDA device found (the driver is installed, but reports no GPU)";
      delete d;
      return s;
    }
    s.driver = d;
    return s;
  }();
  return state;
}

std::string Driver::errorString(CUresult r) const {
  const char *name = nullptr;
  const char *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(r, &name);
  if (cuGetErrorString)
    cuGetErrorString(r, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(r);
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

void Driver::check(CUresult r, const std::string &what) const {
  if (r != CUDA_SUCCESS)
    throw CudaError(what + ": " + errorString(r), r);
}

int Driver::deviceCount() {
  int n = 0;
  check(cuDeviceGetCount(&n), "cuDeviceGetCount");
  return n;
}

int Driver::attribute(CUdeviceAttr attr, int device) {
  CUdevice dev;
  check(cuDeviceGet(&dev, device), "cuDeviceGet(" + std::to_string(device) + ")");
  int v = 0;
  check(cuDeviceGetAttribute(&v, attr, dev), "cuDeviceGetAttribute");
  return v;
}

std::pair<int, int> Driver::capability(int device) {
  return {attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
          attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)};
}

std::string Driver::deviceName(int device) {
  CUdevice dev;
  check(cuDeviceGet(&dev, device), "cuDeviceGet(" + std::to_string(device) + ")");
  char buf[256] = {0};
  check(cuDeviceGetName(buf, sizeof buf - 1, dev), "cuDeviceGetName");
  return buf;
}

CUcontext Driver::primaryContext(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (device < 0)
    throw CudaError("invalid CUDA device index " + std::to_string(device));
  if ((size_t)device < primary_.size() && primary_[device])
    return primary_[device];
  int n = 0;
  check(cuDeviceGetCount(&n), "cuDeviceGetCount");
  if (device >= n)
    throw CudaError("invalid CUDA device index " + std::to_string(device) + " (the machine has " +
                    std::to_string(n) + " GPU" + (n == 1 ? "" : "s") + ")");
  if (primary_.size() < (size_t)n)
    primary_.resize(n, nullptr);
  CUdevice dev;
  check(cuDeviceGet(&dev, device), "cuDeviceGet");
  CUcontext ctx = nullptr;
  // Retained for the life of the process: the same context torch and the
  // CUDA runtime use, so pointers and streams are shared with them.
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  primary_[device] = ctx;
  return ctx;
}

CUcontext Driver::ensureContext(int device) {
  CUcontext ctx = primaryContext(device);
  CUcontext cur = nullptr;
  check(cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
  if (cur != ctx)
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  return ctx;
}

} // namespace tritium::runtime
