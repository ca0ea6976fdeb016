// The driver's own cost per launch, for the launch-overhead benchmark: an
// empty kernel with the 4 parameters of the vector-add kernel (3 pointers,
// an i32), launched N times back to back with cuLaunchKernel from C++.
//
//   g++ -O2 benchmarks/launch_floor.cpp -I/usr/local/cuda/include -lcuda -o /tmp/launch_floor
//   /tmp/launch_floor [N]
// Prints microseconds per launch until the last call returned and until the
// GPU finished them all.
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

static const char *kPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry empty(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
  ret;
}
)";

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    CUresult r = (x);                                                                              \
    if (r != CUDA_SUCCESS) {                                                                       \
      const char *s = nullptr;                                                                     \
      cuGetErrorString(r, &s);                                                                     \
      std::fprintf(stderr, "%s: %s\n", #x, s ? s : "?");                                         \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CHECK(cuModuleLoadData(&mod, kPtx));
  CUfunction fn;
  CHECK(cuModuleGetFunction(&fn, mod, "empty"));
  CUdeviceptr buf;
  CHECK(cuMemAlloc(&buf, 1 << 20));
  unsigned long long a = buf, b = buf, c = buf;
  int count = 4096;
  void *args[] = {&a, &b, &c, &count};
  for (int i = 0; i < 100; ++i)
    CHECK(cuLaunchKernel(fn, 4, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  CHECK(cuCtxSynchronize());
  CUstream own;
  CHECK(cuStreamCreate(&own, 1 /* CU_STREAM_NON_BLOCKING */));
  // The legacy default stream (torch's default) and a stream of our own;
  // n launches (the queue fills: the GPU's pace) and 256 (host cost only).
  for (CUstream s : {(CUstream) nullptr, own})
    for (int count : {n, 256})
      for (int round = 0; round < 3; ++round) {
        CHECK(cuCtxSynchronize());
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < count; ++i)
          CHECK(cuLaunchKernel(fn, 4, 1, 1, 128, 1, 1, 0, s, args, nullptr));
        auto t1 = std::chrono::steady_clock::now();
        CHECK(cuCtxSynchronize());
        auto t2 = std::chrono::steady_clock::now();
        double host = std::chrono::duration<double, std::micro>(t1 - t0).count() / count;
        double all = std::chrono::duration<double, std::micro>(t2 - t0).count() / count;
        std::printf("cuLaunchKernel x%d on %s: %.2f us/launch (host), %.2f us/launch (until "
                    "the GPU finished)\n",
                    count, s ? "a non-blocking stream" : "the legacy default stream", host, all);
      }
  return 0;
}
