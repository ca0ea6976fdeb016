// The ahead-of-time example's program: launches the tritium kernel of add_kernel.py through the C
// launcher `python -m tritium.tools.compile` wrote (add.h / add.c), with the CUDA driver API
// only, and checks the result on the host. Exit status 0 when every element is right.
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "add.h"

#define CHECK(call)                                                              \
  do {                                                                           \
    CUresult r_ = (call);                                                        \
    if (r_ != CUDA_SUCCESS) {                                                    \
      const char* s_ = nullptr;                                                  \
      cuGetErrorString(r_, &s_);                                                 \
      std::fprintf(stderr, "%s failed: %s\n", #call, s_ ? s_ : "unknown error"); \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

int main() {
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(add_load());

  // A length that is not a multiple of the block: the last program's mask matters.
  const int n = 100003;
  std::vector<float> x(n), y(n), out(n, NAN);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.5f * static_cast<float>(i % 977) - 3.0f;
    y[i] = static_cast<float>((i * 7919) % 1013) / 8.0f;
  }
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  CUdeviceptr dx, dy, dout;
  CHECK(cuMemAlloc(&dx, bytes));
  CHECK(cuMemAlloc(&dy, bytes));
  CHECK(cuMemAlloc(&dout, bytes));
  CHECK(cuMemcpyHtoD(dx, x.data(), bytes));
  CHECK(cuMemcpyHtoD(dy, y.data(), bytes));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  // Poisoned with NaN on the kernel's stream: a non-blocking stream does not wait for work
  // on the legacy default stream, where cuMemsetD32 would put the fill (a busy GPU then ran
  // the fill after the kernel, and the program reported the kernel's elements as NaN).
  CHECK(cuMemsetD32Async(dout, 0x7fc00000u, static_cast<size_t>(n), stream));
  CHECK(add(stream, dx, dy, dout, n));
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH(out.data(), dout, bytes));

  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    if (out[i] != x[i] + y[i]) {
      if (wrong++ < 5) std::fprintf(stderr, "out[%d] = %g, want %g\n", i, out[i], x[i] + y[i]);
    }
  }
  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(dx));
  CHECK(cuMemFree(dy));
  CHECK(cuMemFree(dout));
  add_unload();
  CHECK(cuDevicePrimaryCtxRelease(dev));
  std::printf("aot add: %d elements, %d wrong\n", n, wrong);
  return wrong == 0 ? 0 : 2;
}
