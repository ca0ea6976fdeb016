// TMA tensor maps at launch (lib/runtime/tensor_map.cpp): TensorMapSpec's
// flat form, the encode arguments computed from a launch's arguments, and
// their checks, all without a driver.
#include "tritium/runtime/launcher.h"
#include "tritium/runtime/tensor_map.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using tritium::KernelParam;
using tritium::TensorMapSpec;
using tritium::runtime::ArgSlot;
using tritium::runtime::CudaError;
using tritium::runtime::TensorMapBuffer;
using tritium::runtime::TensorMapEncoding;
using namespace tritium::runtime;

namespace {

using K = KernelParam::Kind;
using Op = TensorMapSpec::Operand;

constexpr int kFloat16 = 6; // CU_TENSOR_MAP_DATA_TYPE_FLOAT16

// matmul(a_ptr, M, K, stride_am, n64, flag): an fp16 [M, K] matrix, row
// stride stride_am elements.
std::vector<KernelParam> matmulParams() {
  return {{K::Pointer, "a_ptr"}, {K::Int32, "M"},  {K::Int32, "K"},
          {K::Int32, "stride_am"}, {K::UInt64, "n64"}, {K::Float32, "alpha"}};
}

// [M, K] by arguments, strides [stride_am, 1], box [128, 64], 128B swizzle.
TensorMapSpec matmulSpec() {
  TensorMapSpec s;
  s.base = 0;
  s.shape = {Op{1, 0}, Op{2, 0}};
  s.strides = {Op{3, 0}, Op{-1, 1}};
  s.box = {128, 64};
  s.elemBytes = 2;
  s.dataType = kFloat16;
  s.swizzleBytes = 128;
  return s;
}

ArgSlot i32(int32_t v) {
  ArgSlot s;
  std::memcpy(&s.bits, &v, sizeof v);
  return s;
}

ArgSlot u64(uint64_t v) {
  ArgSlot s;
  s.bits = v;
  return s;
}

std::vector<ArgSlot> matmulArgs(uint64_t a, int32_t m, int32_t k, int32_t strideAm) {
  return {u64(a), i32(m), i32(k), i32(strideAm), u64(7), ArgSlot{}};
}

// The message of the CudaError `f` throws ("" when it throws none).
template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const CudaError &e) {
    return e.what();
  }
  return "";
}

TensorMapEncoding encodeMatmul(const TensorMapSpec &spec, const std::vector<ArgSlot> &args) {
  return tensorMapEncoding("matmul", 0, spec, matmulParams(), args.data());
}

} // namespace

TEST(TensorMapSpec, FlattenRoundTrips) {
  TensorMapSpec s = matmulSpec();
  s.nanFill = true;
  std::vector<int64_t> flat = s.flatten();
  // [base, rank, (arg, value) x (2 dims + 2 strides), box x 2, elem, type, swizzle, nan]
  EXPECT_EQ(flat, (std::vector<int64_t>{0, 2, 1, 0, 2, 0, 3, 0, -1, 1, 128, 64, 2, 6, 128, 1}));
  TensorMapSpec back;
  ASSERT_TRUE(TensorMapSpec::unflatten(flat, back));
  EXPECT_EQ(back.flatten(), flat);
  EXPECT_EQ(back.base, 0);
  EXPECT_EQ(back.shape[1].arg, 2);
  EXPECT_EQ(back.strides[1].arg, -1);
  EXPECT_EQ(back.strides[1].value, 1);
  EXPECT_EQ(back.box, (std::vector<int>{128, 64}));
  EXPECT_TRUE(back.nanFill);

  TensorMapSpec c; // a rank-3 map of constants only
  c.base = 2;
  c.shape = {Op{-1, 4}, Op{-1, 1 << 20}, Op{-1, 64}};
  c.strides = {Op{-1, 1 << 26}, Op{-1, 64}, Op{-1, 1}};
  c.box = {1, 32, 64};
  c.elemBytes = 4;
  c.dataType = 7;
  ASSERT_TRUE(TensorMapSpec::unflatten(c.flatten(), back));
  EXPECT_EQ(back.flatten(), c.flatten());
  EXPECT_FALSE(back.nanFill);
}

TEST(TensorMapSpec, UnflattenRejectsMalformedLists) {
  std::vector<int64_t> good = matmulSpec().flatten();
  TensorMapSpec out;
  out.base = 42;
  EXPECT_FALSE(TensorMapSpec::unflatten({}, out));
  EXPECT_FALSE(TensorMapSpec::unflatten({0}, out));
  std::vector<int64_t> shorter(good.begin(), good.end() - 1);
  EXPECT_FALSE(TensorMapSpec::unflatten(shorter, out));
  std::vector<int64_t> longer = good;
  longer.push_back(0);
  EXPECT_FALSE(TensorMapSpec::unflatten(longer, out));
  std::vector<int64_t> rank0 = good, rank6 = good, rank3 = good;
  rank0[1] = 0;
  rank6[1] = 6;
  rank3[1] = 3; // the length says rank 2
  EXPECT_FALSE(TensorMapSpec::unflatten(rank0, out));
  EXPECT_FALSE(TensorMapSpec::unflatten(rank6, out));
  EXPECT_FALSE(TensorMapSpec::unflatten(rank3, out));
  EXPECT_EQ(out.base, 42); // untouched on failure
}

TEST(TensorMap, EncodesA2DFp16MatrixInnermostFirst) {
  uint64_t a = 0x7f0000001000;
  TensorMapEncoding e = encodeMatmul(matmulSpec(), matmulArgs(a, 1000, 4096, 4096));
  EXPECT_EQ(e.rank, 2u);
  EXPECT_EQ(e.address, a);
  EXPECT_EQ(e.dataType, kFloat16);
  EXPECT_EQ(e.dims[0], 4096u);
  EXPECT_EQ(e.dims[1], 1000u);
  EXPECT_EQ(e.strides[0], 8192u);
  EXPECT_EQ(e.box[0], 64u);
  EXPECT_EQ(e.box[1], 128u);
  EXPECT_EQ(e.elementStrides[0], 1u);
  EXPECT_EQ(e.elementStrides[1], 1u);
  EXPECT_EQ(e.swizzle, 3);
  EXPECT_EQ(e.interleave, 0);
  EXPECT_EQ(e.l2Promotion, 2);
  EXPECT_EQ(e.oobFill, 0);
  // Past the rank: zero.
  EXPECT_EQ(e.dims[2], 0u);
  EXPECT_EQ(e.strides[1], 0u);
  EXPECT_EQ(e.box[2], 0u);
  EXPECT_EQ(e.str(), "address 0x7f0000001000, data type 6, dims {4096, 1000}, byte strides "
                     "{8192}, box {64, 128}, swizzle 3, oob fill 0 (innermost dim first)");
}

TEST(TensorMap, ATensorWithoutElementsGetsAOneElementPlaceholder) {
  // K = 0: whatever the base (null here) and the strides (20 elements: not 16-byte
  // multiples), every dim becomes 1 and every stride 16 bytes, the box stays; the
  // launcher supplies the address (its module's fill element).
  for (auto args : {matmulArgs(0, 8, 0, 20), matmulArgs(0x1008, 0, 4096, -4), matmulArgs(0, 0, 0, 0)}) {
    TensorMapEncoding e = encodeMatmul(matmulSpec(), args);
    EXPECT_TRUE(e.empty);
    EXPECT_EQ(e.address, 0u);
    EXPECT_EQ(e.dims[0], 1u);
    EXPECT_EQ(e.dims[1], 1u);
    EXPECT_EQ(e.strides[0], 16u);
    EXPECT_EQ(e.box[0], 64u);
    EXPECT_EQ(e.box[1], 128u);
    EXPECT_EQ(e.swizzle, 3);
  }
  TensorMapSpec nan = matmulSpec();
  nan.nanFill = true;
  EXPECT_EQ(encodeMatmul(nan, matmulArgs(0x1000, 8, 0, 4096)).oobFill, 1);
  EXPECT_FALSE(encodeMatmul(matmulSpec(), matmulArgs(0x1000, 1, 1, 8)).empty);
  // A negative dim is still an error, even beside a 0.
  EXPECT_EQ(errorOf([] { encodeMatmul(matmulSpec(), matmulArgs(0x1000, 0, -1, 4096)); }),
            "kernel 'matmul': TMA tensor map 0 (of 'a_ptr'): dim 1 (argument 'K') is -1; TMA "
            "takes 0 to 2^32 elements per dim");
}

TEST(TensorMap, ConstantsAndArgumentsGiveTheSameEncoding) {
  uint64_t a = 0x10000;
  std::vector<ArgSlot> args = matmulArgs(a, 1000, 4096, 4096);
  TensorMapSpec byArgs = matmulSpec();
  TensorMapSpec byConsts = matmulSpec();
  byConsts.shape = {Op{-1, 1000}, Op{-1, 4096}};
  byConsts.strides = {Op{-1, 4096}, Op{-1, 1}};
  EXPECT_EQ(encodeMatmul(byArgs, args), encodeMatmul(byConsts, args));
  // Mixed: M by argument, K and the row stride constant (specialised).
  TensorMapSpec mixed = matmulSpec();
  mixed.shape[1] = Op{-1, 4096};
  mixed.strides[0] = Op{-1, 4096};
  EXPECT_EQ(encodeMatmul(mixed, args), encodeMatmul(byArgs, args));
  // The constant wins over whatever the slot of another argument holds.
  args[2] = i32(-5);
  EXPECT_EQ(encodeMatmul(mixed, args).dims[0], 4096u);
  // A change of an argument changes the encoding.
  args = matmulArgs(a, 999, 4096, 4096);
  EXPECT_EQ(encodeMatmul(byArgs, args).dims[1], 999u);
}

TEST(TensorMap, ReadsEachIntegerKind) {
  std::vector<KernelParam> params = {{K::Pointer, "p"}, {K::UInt32, "u32"},
                                     {K::Int64, "i64"}, {K::UInt64, "u64"}, {K::Bool, "b"}};
  TensorMapSpec s;
  s.base = 0;
  s.shape = {Op{4, 0}, Op{1, 0}, Op{2, 0}};
  s.strides = {Op{3, 0}, Op{-1, 64}, Op{-1, 1}};
  s.box = {1, 8, 8};
  s.elemBytes = 2;
  s.dataType = 9; // BFLOAT16
  s.nanFill = true;
  ArgSlot u;
  uint32_t big = 3000000000u; // beyond int32, as u32
  std::memcpy(&u.bits, &big, sizeof big);
  ArgSlot b;
  b.bits = 1;
  std::vector<ArgSlot> args = {u64(0x2000), u, u64(64), u64(uint64_t(1) << 33), b};
  TensorMapEncoding e = tensorMapEncoding("k", 0, s, params, args.data());
  EXPECT_EQ(e.dims[0], 64u);
  EXPECT_EQ(e.dims[1], 3000000000u);
  EXPECT_EQ(e.dims[2], 1u);
  EXPECT_EQ(e.strides[0], 128u);
  EXPECT_EQ(e.strides[1], uint64_t(1) << 34);
  EXPECT_EQ(e.oobFill, 1);
  EXPECT_EQ(e.swizzle, 0);

  args[3] = u64(~uint64_t(0)); // a u64 beyond int64
  EXPECT_EQ(errorOf([&] { tensorMapEncoding("k", 0, s, params, args.data()); }),
            "kernel 'k': TMA tensor map 0 (of 'p'): stride 0 (argument 'u64') is "
            "18446744073709551615, too large");
}

TEST(TensorMap, RejectsNegativeInt32Values) {
  // The slot holds the i32 in its low 4 bytes: -1 reads as -1, not 2^32-1.
  EXPECT_EQ(errorOf([] { encodeMatmul(matmulSpec(), matmulArgs(0x1000, -1, 4096, 4096)); }),
            "kernel 'matmul': TMA tensor map 0 (of 'a_ptr'): dim 0 (argument 'M') is -1; TMA "
            "takes 0 to 2^32 elements per dim");
  EXPECT_EQ(errorOf([] { encodeMatmul(matmulSpec(), matmulArgs(0x1000, 8, 4096, -4096)); }),
            "kernel 'matmul': TMA tensor map 0 (of 'a_ptr'): stride 0 (argument 'stride_am') is "
            "-4096 elements; TMA takes no negative strides");
}

TEST(TensorMap, ValueErrorsNameTheKernelMapAndValue) {
  const std::string prefix = "kernel 'matmul': TMA tensor map 0 (of 'a_ptr'): ";
  auto msg = [](TensorMapSpec s, std::vector<ArgSlot> args) {
    return errorOf([&] { encodeMatmul(s, args); });
  };
  TensorMapSpec s = matmulSpec();
  EXPECT_EQ(msg(s, matmulArgs(0x1000, 8, 4096, 20)),
            prefix + "stride 0 (argument 'stride_am') is 40 bytes (20 elements of 2), not a "
                     "multiple of 16");
  EXPECT_EQ(msg(s, matmulArgs(0x1008, 8, 4096, 4096)),
            prefix + "the base 'a_ptr' is 0x1008, not 16-byte aligned");
  EXPECT_EQ(msg(s, matmulArgs(0, 8, 4096, 4096)), prefix + "the base 'a_ptr' is a null pointer");

  TensorMapSpec big = s; // constants beyond the driver's limits
  big.shape[0] = Op{-1, (int64_t(1) << 32) + 1};
  EXPECT_EQ(msg(big, matmulArgs(0x1000, 8, 4096, 4096)),
            prefix + "dim 0 is 4294967297; TMA takes 0 to 2^32 elements per dim");
  big = s;
  big.shape[0] = Op{-1, int64_t(1) << 32}; // the largest dim is fine
  EXPECT_EQ(msg(big, matmulArgs(0x1000, 8, 4096, 4096)), "");
  big.strides[0] = Op{-1, int64_t(1) << 39}; // 2^40 bytes
  EXPECT_EQ(msg(big, matmulArgs(0x1000, 8, 4096, 4096)),
            prefix + "stride 0 is 549755813888 elements of 2 bytes, not below 2^40 bytes");

  TensorMapSpec inner = s; // the innermost stride by argument
  std::vector<KernelParam> params = matmulParams();
  params.push_back({K::Int64, "stride_ak"});
  inner.strides[1] = Op{6, 0};
  std::vector<ArgSlot> args = matmulArgs(0x1000, 8, 4096, 4096);
  args.push_back(u64(2));
  EXPECT_EQ(errorOf([&] { tensorMapEncoding("matmul", 0, inner, params, args.data()); }),
            prefix + "stride 1 (the innermost, argument 'stride_ak') is 2 elements; TMA needs "
                     "the innermost dim contiguous (stride 1)");
  args.back() = u64(1);
  EXPECT_EQ(errorOf([&] { tensorMapEncoding("matmul", 0, inner, params, args.data()); }), "");
}

TEST(TensorMap, SpecErrorsNameTheProblem) {
  const std::string prefix = "kernel 'matmul': TMA tensor map 3 (of 'a_ptr'): ";
  std::vector<KernelParam> params = matmulParams();
  auto msg = [&](const TensorMapSpec &s) {
    return errorOf([&] { checkTensorMapSpec("matmul", 3, s, params); });
  };
  TensorMapSpec s = matmulSpec();
  EXPECT_EQ(msg(s), "");

  TensorMapSpec t = s;
  t.base = 1;
  EXPECT_EQ(msg(t), "kernel 'matmul': TMA tensor map 3 (of 'M'): the base parameter is i32, "
                    "not a pointer");
  t.base = 9;
  EXPECT_EQ(msg(t), "kernel 'matmul': TMA tensor map 3 (of parameter 9): the base is parameter "
                    "9, but the kernel has 6");
  t = s;
  t.shape[0].arg = 5;
  EXPECT_EQ(msg(t), prefix + "dim 0 is parameter 'alpha', a fp32, not an integer");
  t.shape[0].arg = 6;
  EXPECT_EQ(msg(t), prefix + "dim 0 is parameter 6, but the kernel has 6");
  t = s;
  t.strides[1] = Op{-1, 2};
  EXPECT_EQ(msg(t), prefix + "stride 1 (the innermost) is 2 elements; TMA needs the innermost "
                             "dim contiguous (stride 1)");
  t = s;
  t.box.pop_back();
  EXPECT_EQ(msg(t), prefix + "the shape has 2 dims, the strides 2 and the box 1");
  t = s;
  t.shape.clear();
  t.strides.clear();
  t.box.clear();
  EXPECT_EQ(msg(t), prefix + "rank 0, TMA takes 1 to 5 dims");
  t = s;
  t.elemBytes = 3;
  EXPECT_EQ(msg(t), prefix + "element size 3 bytes, not 1, 2, 4 or 8");
  t = s;
  t.dataType = 7; // FLOAT32
  EXPECT_EQ(msg(t), prefix + "data type 7 has 4-byte elements, the spec says 2");
  t.dataType = 13;
  EXPECT_EQ(msg(t),
            prefix + "data type 13 is not a CUtensorMapDataType tritium supports (0 to 12)");
  t = s;
  t.dataType = 1; // UINT16
  t.nanFill = true;
  EXPECT_EQ(msg(t), prefix + "NaN fill of out-of-bounds elements needs a floating-point data "
                             "type, not 1");
  t = s;
  t.swizzleBytes = 16;
  EXPECT_EQ(msg(t), prefix + "swizzle of 16 bytes; TMA swizzles 0, 32, 64 or 128");
  t = s;
  t.box[0] = 512;
  EXPECT_EQ(msg(t), prefix + "box dim 0 is 512 elements, not 1 to 256");
  t.box[0] = 0;
  EXPECT_EQ(msg(t), prefix + "box dim 0 is 0 elements, not 1 to 256");
  t = s;
  t.box[1] = 4; // 8 bytes
  EXPECT_EQ(msg(t), prefix + "the box's innermost dim is 8 bytes, not a multiple of 16");
  t = s;
  t.swizzleBytes = 64; // 64 fp16 = 128 bytes
  EXPECT_EQ(msg(t), prefix + "the box's innermost dim is 128 bytes, more than the 64-byte "
                             "swizzle span");
  t.box[1] = 32;
  EXPECT_EQ(msg(t), "");
  t.swizzleBytes = 0; // no swizzle: any multiple of 16 bytes
  t.box[1] = 256;
  EXPECT_EQ(msg(t), "");
}

namespace {

// A stand-in for the driver's cuTensorMapEncodeTiled: records its arguments.
struct EncodeCall {
  void *map;
  int dataType;
  uint32_t rank;
  void *address;
  std::vector<uint64_t> dims, strides;
  std::vector<uint32_t> box, elementStrides;
  int interleave, swizzle, l2, oob;
};
EncodeCall lastCall;
CUresult fakeResult = CUDA_SUCCESS;

CUresult fakeEncode(void *map, int dataType, uint32_t rank, void *address, const uint64_t *dims,
                    const uint64_t *strides, const uint32_t *box, const uint32_t *es,
                    int interleave, int swizzle, int l2, int oob) {
  lastCall = {map,
              dataType,
              rank,
              address,
              {dims, dims + rank},
              {strides, strides + rank - 1},
              {box, box + rank},
              {es, es + rank},
              interleave,
              swizzle,
              l2,
              oob};
  std::memset(map, 0xab, kTensorMapBytes);
  return fakeResult;
}

} // namespace

TEST(TensorMap, EncodeCallsTheDriverWithTheEncoding) {
  TensorMapEncoding e = encodeMatmul(matmulSpec(), matmulArgs(0x5000, 1000, 4096, 4096));
  TensorMapBuffer buf;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&buf) % kTensorMapAlign, 0u);
  fakeResult = CUDA_SUCCESS;
  encodeTensorMap(e, buf.bytes, "what", fakeEncode);
  EXPECT_EQ(lastCall.map, buf.bytes);
  EXPECT_EQ(lastCall.dataType, kFloat16);
  EXPECT_EQ(lastCall.rank, 2u);
  EXPECT_EQ(lastCall.address, reinterpret_cast<void *>(0x5000));
  EXPECT_EQ(lastCall.dims, (std::vector<uint64_t>{4096, 1000}));
  EXPECT_EQ(lastCall.strides, (std::vector<uint64_t>{8192}));
  EXPECT_EQ(lastCall.box, (std::vector<uint32_t>{64, 128}));
  EXPECT_EQ(lastCall.elementStrides, (std::vector<uint32_t>{1, 1}));
  EXPECT_EQ(lastCall.interleave, 0);
  EXPECT_EQ(lastCall.swizzle, 3);
  EXPECT_EQ(lastCall.l2, 2);
  EXPECT_EQ(lastCall.oob, 0);
  EXPECT_EQ(buf.bytes[127], 0xab);
}

TEST(TensorMap, EncodeErrorsSayWhy) {
  TensorMapEncoding e = encodeMatmul(matmulSpec(), matmulArgs(0x5000, 1000, 4096, 4096));
  TensorMapBuffer buf;
  std::string what = "kernel 'matmul': TMA tensor map 0 (of 'a_ptr')";
  EXPECT_EQ(errorOf([&] { encodeTensorMap(e, buf.bytes, what, nullptr); }),
            what + ": the CUDA driver lacks cuTensorMapEncodeTiled; TMA tensor maps need a "
                   "CUDA 12 (or newer) driver");
  fakeResult = CUDA_ERROR_INVALID_VALUE;
  try {
    encodeTensorMap(e, buf.bytes, what, fakeEncode);
    FAIL() << "no error";
  } catch (const CudaError &err) {
    EXPECT_EQ(err.code, CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(std::string(err.what()),
              what + ": cuTensorMapEncodeTiled failed: CUDA error 1, for address 0x5000, data "
                     "type 6, dims {4096, 1000}, byte strides {8192}, box {64, 128}, swizzle 3, "
                     "oob fill 0 (innermost dim first)");
  }
  fakeResult = CUDA_SUCCESS;
}

TEST(TensorMap, GpuKernelChecksAndPlacesItsMaps) {
  std::vector<KernelParam> params = matmulParams();
  params.push_back({K::UInt64, "extent of a_ptr"}); // a hidden parameter
  GpuKernel k("matmul", "ptx", false, "sm_90a", 4, 0, params);
  EXPECT_TRUE(k.tensorMaps().empty());
  k.setTensorMaps({matmulSpec(), matmulSpec()}, 6);
  EXPECT_EQ(k.tensorMaps().size(), 2u);
  EXPECT_EQ(k.tensorMapPosition(), 6u);
  std::vector<ArgSlot> args = matmulArgs(0x1000, 1000, 4096, 4096);
  args.push_back(u64(123));
  std::vector<TensorMapEncoding> es = k.tensorMapEncodings(args.data());
  ASSERT_EQ(es.size(), 2u);
  EXPECT_EQ(es[1].dims[1], 1000u);

  TensorMapSpec bad = matmulSpec();
  bad.shape[0].arg = 6; // the hidden parameter: not one of the kernel's own
  EXPECT_EQ(errorOf([&] { k.setTensorMaps({matmulSpec(), bad}, 6); }),
            "kernel 'matmul': TMA tensor map 1 (of 'a_ptr'): dim 0 is parameter 6, but the "
            "kernel has 6");
  EXPECT_EQ(k.tensorMaps().size(), 2u); // unchanged
  EXPECT_EQ(errorOf([&] { k.setTensorMaps({}, 8); }),
            "kernel 'matmul': tensor maps placed after parameter 8, but the kernel has 7");
  k.setTensorMaps({});
  EXPECT_TRUE(k.tensorMaps().empty());
  EXPECT_EQ(k.tensorMapPosition(), 7u);
}
