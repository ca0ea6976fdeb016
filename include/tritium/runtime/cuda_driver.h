// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1").
//
// Nothing here links against CUDA: the package builds, imports and runs the
// CPU executor on a machine with no driver. The driver is loaded on first
// use (Driver::get()); only then does a missing driver become an error
// ("no CUDA driver found ..."). Only the handful of entry points the
// launcher needs are declared, with the types and enum values of cuda.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace tritium::runtime {

// Opaque driver handles and the enum values we use, as in cuda.h.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;

enum CUdeviceAttr : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum CUfuncAttr : int {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
};

inline constexpr int CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3;
inline constexpr int CU_STREAM_CAPTURE_MODE_RELAXED = 2; // CUstreamCaptureMode
inline constexpr int CU_JIT_INFO_LOG_BUFFER = 3;
inline constexpr int CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

/// A failure involving the GPU: no driver, a driver call failing, a launch
/// the device cannot run, a CPU tensor passed to a GPU launch. The Python
/// layer sees it as tritium._C.CudaError (a RuntimeError).
class CudaError : public std::runtime_error {
public:
  explicit CudaError(const std::string &msg, CUresult code = -1)
      : std::runtime_error(msg), code(code) {}
  CUresult code;
};

/// The driver's entry points (plain function pointers: no per-call lookup).
struct Driver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int *) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext *) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                                 void **) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuFuncGetAttribute)(int *, int, CUfunction) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr) = nullptr;
  // Optional: the address and size of a module's global (the TMA fill
  // element, kTmaFillSymbol).
  CUresult (*cuModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *) = nullptr;
  // Optional (null when the driver lacks it): swaps this thread's stream
  // capture mode with *mode (a CUstreamCaptureMode).
  CUresult (*cuThreadExchangeStreamCaptureMode)(int *mode) = nullptr;
  // Optional (null when the driver lacks it: before CUDA 12): encodes a TMA
  // tensor map (a CUtensorMap: 128 bytes, 64-aligned) of a tiled region.
  // Dims, strides and the box count the innermost dimension first; the
  // enums (data type, interleave, swizzle, L2 promotion, OOB fill) as in
  // cuda.h. See tritium/runtime/tensor_map.h.
  CUresult (*cuTensorMapEncodeTiled)(void *tensorMap, int dataType, uint32_t rank,
                                     void *globalAddress, const uint64_t *globalDim,
                                     const uint64_t *globalStrides, const uint32_t *boxDim,
                                     const uint32_t *elementStrides, int interleave,
                                     int swizzle, int l2Promotion, int oobFill) = nullptr;

  /// The loaded driver, cuInit done. Loads it on first call (thread-safe);
  /// throws CudaError("no CUDA driver found ...") when libcuda.so.1 cannot
  /// be loaded or initialised, on this and every later call.
  static Driver &get();
  /// Whether get() would succeed; never throws. `why` gets the reason.
  static bool available(std::string *why = nullptr);

  /// Throws CudaError "<what>: <CUDA_ERROR_NAME> (<description>)" unless
  /// r is CUDA_SUCCESS.
  void check(CUresult r, const std::string &what) const;
  std::string errorString(CUresult r) const;

  int deviceCount();
  int attribute(CUdeviceAttr attr, int device);
  /// (major, minor) compute capability.
  std::pair<int, int> capability(int device);
  std::string deviceName(int device);
  /// Makes the primary context of `device` current on this thread (retained
  /// once per process, as the CUDA runtime and torch do). Cheap when it is
  /// already current.
  CUcontext ensureContext(int device);
  CUcontext primaryContext(int device);

protected:
  Driver() = default; // only the loader makes one

private:
  std::mutex mutex_;
  std::vector<CUcontext> primary_; // per device, retained lazily
};

} // namespace tritium::runtime
