// A compiled kernel on the GPU: its image (cubin, or PTX for the driver's
// JIT), loaded lazily once per device, and launched with cuLaunchKernel.
#pragma once

#include "tritium/runtime/cuda_driver.h"
#include "tritium/runtime/tensor_map.h"
#include "tritium/support/kernel_abi.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tritium::runtime {

/// One launch argument, already converted to the parameter's kind (the
/// bytes the kernel reads are at the start of `bits`; the rest is zero).
struct ArgSlot {
  uint64_t bits = 0;
  /// A Bytes parameter's bytes (KernelParam::bytes of them), owned by the
  /// caller until the launch returns; null for every other kind.
  const void *data = nullptr;
};

/// Fills `ptrs` (one per parameter) with what cuLaunchKernel reads: the
/// address of each slot's bits, or a Bytes parameter's data. Throws
/// CudaError when a Bytes parameter has no data.
void launchArgPointers(const std::string &kernel,
                       const std::vector<KernelParam> &params,
                       const ArgSlot *args, void **ptrs);
/// A Bytes parameter's slot: checks that `n` bytes is what `p` takes.
ArgSlot packBytes(const KernelParam &p, const void *data, size_t n,
                  const std::string &what);

/// Per-function facts the driver reports after loading.
struct KernelAttributes {
  int numRegs = 0;
  int localBytes = 0;        // spills and local arrays, per thread
  int staticSharedBytes = 0; // .shared declared in the PTX
  int maxThreadsPerBlock = 0;
};

class GpuKernel {
public:
  /// `image`: a cubin (isCubin) or PTX text (NUL-terminated on load).
  /// `target`: what the image was compiled for ("sm_90a"), checked against
  /// the device before loading.
  GpuKernel(std::string name, std::string image, bool isCubin, std::string target,
            int numWarps, int sharedBytes, std::vector<KernelParam> params);
  ~GpuKernel();
  GpuKernel(const GpuKernel &) = delete;
  GpuKernel &operator=(const GpuKernel &) = delete;

  const std::string &name() const { return name_; }
  int numWarps() const { return numWarps_; }
  int sharedBytes() const { return sharedBytes_; }
  const std::vector<KernelParam> &params() const { return params_; }

  /// The TMA tensor maps (CompiledKernel::tensorMaps) every launch encodes
  /// from its arguments and passes as extra 128-byte parameters: after the
  /// first `position` parameters (the kernel's own; by default all of
  /// params()), before the rest (a bounds-checked kernel's hidden ones).
  /// Their base and argument operands index params() below `position`.
  /// Checks each spec (checkTensorMapSpec: CudaError). Call before the
  /// first launch: launches read the maps without a lock.
  void setTensorMaps(std::vector<TensorMapSpec> maps, size_t position);
  void setTensorMaps(std::vector<TensorMapSpec> maps) {
    setTensorMaps(std::move(maps), params_.size());
  }
  const std::vector<TensorMapSpec> &tensorMaps() const { return tensorMaps_; }
  size_t tensorMapPosition() const { return tensorMapPosition_; }
  /// The encode arguments of each map for `args` (one slot per parameter),
  /// what launch() passes the driver; needs no driver. Throws CudaError
  /// as launch() would for a bad value.
  std::vector<TensorMapEncoding> tensorMapEncodings(const ArgSlot *args) const;

  /// The function on `device`, loading the module there on first use (makes
  /// the device's primary context current). Throws CudaError with the JIT's
  /// log, a target/device mismatch, or too much shared memory.
  CUfunction load(int device);
  KernelAttributes attributes(int device);

  /// Launches on `device` (its primary context is made current) on `stream`
  /// (0: the legacy default stream). `args` holds one slot per parameter;
  /// the tensor maps, if any, are encoded from them (see setTensorMaps).
  /// Throws CudaError for an empty or oversized grid, a tensor map that
  /// cannot be encoded, or a failing launch.
  void launch(int device, int64_t gx, int64_t gy, int64_t gz, uint64_t stream,
              const ArgSlot *args, size_t numArgs);

private:
  // The launch of a kernel with tensor maps: `ptrs` has room for them.
  void launchWithTensorMaps(Driver &d, int device, CUfunction fn, int64_t gx, int64_t gy,
                            int64_t gz, uint64_t stream, const ArgSlot *args, void **ptrs);
  // Encodes map i for `args` into `out`, reusing the last encoding of the
  // same arguments.
  void encodeTensorMapFor(Driver &d, int device, size_t i, const ArgSlot *args,
                          TensorMapBuffer &out);
  void cuLaunch(Driver &d, CUfunction fn, int64_t gx, int64_t gy, int64_t gz,
                uint64_t stream, void **ptrs);

  static constexpr int kMaxDevices = 64;
  std::string name_;
  std::string image_;
  bool isCubin_;
  std::string target_;
  int numWarps_;
  int sharedBytes_;
  std::vector<KernelParam> params_;
  std::mutex loadMutex_;
  std::array<std::atomic<CUfunction>, kMaxDevices> functions_{};
  std::array<CUmodule, kMaxDevices> modules_{};
  std::array<std::array<int, 3>, kMaxDevices> maxGrid_{};
  // Per device: the address of the module's TMA fill element
  // (kTmaFillSymbol), 0 when it has none.
  std::array<CUdeviceptr, kMaxDevices> tmaFill_{};
  std::vector<TensorMapSpec> tensorMaps_;
  size_t tensorMapPosition_ = 0;
  // The last encoding of each map (the driver's encoding is a pure function
  // of its arguments): most launches repeat their shapes and addresses.
  struct EncodedTensorMap {
    TensorMapBuffer map;
    TensorMapEncoding in;
    bool valid = false;
  };
  std::vector<EncodedTensorMap> encoded_;
  std::mutex encodedMutex_;
};

/// Raw (already validated by the caller) argument conversion helpers, so
/// that C++ callers and the Python binding pack the same way.
ArgSlot packInt(KernelParam::Kind kind, int64_t v, const std::string &what);
ArgSlot packUInt(KernelParam::Kind kind, uint64_t v, const std::string &what);
ArgSlot packFloat(KernelParam::Kind kind, double v);

/// "ptr", "i32", "i64", "u32", "u64", "fp32", "fp64", "i1", "bytes".
const char *kindName(KernelParam::Kind kind);
KernelParam::Kind parseKind(const std::string &s);

/// Raises CudaError unless `address` is memory the GPU can reach (device
/// memory, or host memory registered/mapped with CUDA). `what` names the
/// argument in the message.
void checkDevicePointer(uint64_t address, const std::string &what);

} // namespace tritium::runtime
