// tt.dot on the CPU executor: the reference for what the tensor cores
// compute, bit for bit where the order of the additions is ours to define.
//
// Shapes: a MxK @ b KxN + acc MxN, or batched BxMxK @ BxKxN + BxMxN (one
// independent 2-D product per batch index).
//
// Every sum runs over k in ascending order, rounded to the accumulator's
// type after each add unless said otherwise below.
//
// fp32 accumulator (the common case):
//  - fp16, bf16 and fp8 operands (e4m3 and e5m2, mixed kinds too): every
//    product is exact in fp32 (at most 11x11 significand bits), so
//    acc += a*b in float arithmetic is the exact product, rounded once per add.
//  - fp32 operands, by the op's input_precision:
//    "ieee":   plain fp32: the product rounded to fp32, then the add.
//    "tf32":   both operands first rounded to tf32 as `cvt.rna.tf32.f32` does
//              (10 mantissa bits, round to nearest with ties away from zero,
//              fp32's exponent range; NaN stays NaN, a finite value may round
//              up to inf); the products of tf32 values are exact in fp32.
//    "tf32x3": x = x_hi + x_lo with x_hi = tf32(x), x_lo = tf32(x - x_hi)
//              (the subtraction is exact), for a and b; then three sums into
//              the one fp32 accumulator, each over all of k, in this order:
//              acc += a_hi*b_lo; acc += a_lo*b_hi; acc += a_hi*b_hi (the small
//              terms first, as the GPU issues its three mma's). An infinite
//              operand makes x_lo NaN, so the result is NaN (as on the GPU).
//    No attribute reads as "ieee". input_precision changes nothing for
//    operands other than fp32 (their values are tf32 values already).
// fp16 accumulator (out_dtype=f16 with fp16 or fp8 operands): the GPU's
//    f16-accumulate mma rounds its accumulator to fp16 once per instruction,
//    and one instruction covers 16 values of k. So: for each chunk of 16 k's
//    (the last may be shorter), the chunk's exact products are summed in fp32
//    from 0 (k ascending), then added to the fp16 accumulator with a single
//    rounding to fp16.
// i8 operands, i32 accumulator: the exact sum wrapped to 32 bits (two's
//    complement; no saturation), as the mma without .satfinite gives.
// Anything else (fp64; hand-written IR with a bf16 accumulator or mixed
//    operands): computed in double, products of sub-fp64 operands rounded to
//    fp32, each add rounded to the accumulator's type.
//
// The max_num_imprecise_acc attribute changes nothing here: fp8 products
// always accumulate at full fp32 precision.
//
// This file is compiled with -ffp-contract=off (CMakeLists.txt): a fused
// multiply-add would skip the product's rounding of the "ieee" path.
#include "exec_internal.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tritium::exec {
namespace {

/// `cvt.rna.tf32.f32`: keep 10 of fp32's 23 mantissa bits, rounding to
/// nearest with ties away from zero. Adding half of the dropped range to the
/// magnitude bits carries into the kept ones exactly when the dropped part is
/// at least half an ulp (a carry out of the mantissa bumps the exponent,
/// which is the right answer, up to inf); NaN must not be touched, since a
/// payload in the low bits alone would carry into an inf.
inline float toTF32(float x) {
  if (x != x)
    return x;
  uint32_t u = std::bit_cast<uint32_t>(x);
  u = (u + 0x1000u) & ~0x1FFFu;
  return std::bit_cast<float>(u);
}

double asDouble(Slot s, DType t) { return isFloat(t) ? s.f : double(s.i); }

/// The operand's values as floats (exact for every dtype but fp64).
void toFloats(const Slot *x, DType t, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = float(asDouble(x[i], t));
}

/// acc[m][n] += sum over k (ascending) of A[m][k] * B[k][n], the product and
/// each add rounded to fp32. A is MxK, B KxN, acc MxN, all row-major. The
/// inner loop runs over n, so it vectorises and reads B row by row.
void gemmF32(const float *A, const float *B, float *acc, int64_t M, int64_t N,
             int64_t K) {
  for (int64_t m = 0; m < M; ++m) {
    float *row = acc + m * N;
    for (int64_t k = 0; k < K; ++k) {
      float av = A[m * K + k];
      const float *bk = B + k * N;
      for (int64_t n = 0; n < N; ++n)
        row[n] += av * bk[n];
    }
  }
}

/// The fp16 accumulator's rule (see the top of the file): per 16-wide chunk
/// of k, an fp32 sum of the products from 0, then one rounding of acc + sum
/// to fp16. acc holds fp16 values as doubles; acc + sum is exact in double
/// whenever its rounding to fp16 could depend on the low bits, so rounding
/// the double is rounding the exact sum.
void gemmF16Acc(const float *A, const float *B, double *acc, int64_t M,
                int64_t N, int64_t K) {
  constexpr int64_t kChunk = 16;
  std::vector<float> part(N);
  for (int64_t m = 0; m < M; ++m) {
    double *row = acc + m * N;
    for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
      std::fill(part.begin(), part.end(), 0.0f);
      for (int64_t k = k0; k < std::min(K, k0 + kChunk); ++k) {
        float av = A[m * K + k];
        const float *bk = B + k * N;
        for (int64_t n = 0; n < N; ++n)
          part[n] += av * bk[n];
      }
      for (int64_t n = 0; n < N; ++n)
        row[n] = roundToFloatDType(row[n] + double(part[n]), DType::FP16);
    }
  }
}

/// One batch index of an integer dot: wraps at the accumulator's width.
void dotInt(const Slot *x, const Slot *y, const Slot *cc, Slot *z, int64_t M,
            int64_t N, int64_t K, IntFmt o) {
  std::vector<uint64_t> row(N);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n)
      row[n] = cc[m * N + n].u;
    for (int64_t k = 0; k < K; ++k) {
      uint64_t av = x[m * K + k].u;
      for (int64_t n = 0; n < N; ++n)
        row[n] += av * y[k * N + n].u;
    }
    for (int64_t n = 0; n < N; ++n)
      z[m * N + n].i = o.norm(int64_t(row[n]));
  }
}

/// One batch index of the generic path (fp64 and what the builder never
/// makes): double arithmetic, rounded to the accumulator after each add.
void dotGeneric(const Slot *x, const Slot *y, const Slot *cc, Slot *z,
                int64_t M, int64_t N, int64_t K, DType da, DType db,
                DType dc) {
  bool narrowInputs = da != DType::FP64 && db != DType::FP64;
  std::vector<double> row(N);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n)
      row[n] = asDouble(cc[m * N + n], dc);
    for (int64_t k = 0; k < K; ++k) {
      double av = asDouble(x[m * K + k], da);
      for (int64_t n = 0; n < N; ++n) {
        double p = av * asDouble(y[k * N + n], db);
        if (narrowInputs)
          p = double(float(p));
        row[n] = roundF(row[n] + p, dc);
      }
    }
    for (int64_t n = 0; n < N; ++n)
      z[m * N + n].f = row[n];
  }
}

} // namespace

RValue dot(const OpPlan &op, const RValue &a, const RValue &b,
           const RValue &c) {
  const Type *rt = op.op->result(0)->type();
  RValue r = RValue::alloc(rt);
  const std::vector<int64_t> &sa = a.type()->shape(), &sb = b.type()->shape();
  int o = int(sa.size()) - 2; // 1 for a batched (3-D) dot
  int64_t batch = o ? sa[0] : 1, M = sa[o], K = sa[o + 1], N = sb[o + 1];
  DType da = elemDType(a.type()), db = elemDType(b.type()), dc = elemDType(rt);
  auto prec = DotPrecision(op.kind);

  for (int64_t bi = 0; bi < batch; ++bi) {
    const Slot *x = a.data() + bi * M * K, *y = b.data() + bi * K * N,
               *cc = c.data() + bi * M * N;
    Slot *z = r.mutableData() + bi * M * N;

    if (isInteger(dc) && isInteger(da) && isInteger(db)) {
      dotInt(x, y, cc, z, M, N, K, intFmt(dc));
      continue;
    }
    bool floatPath = (dc == DType::FP32 || dc == DType::FP16) &&
                     da != DType::FP64 && db != DType::FP64 &&
                     isFloat(da) && isFloat(db);
    if (!floatPath) {
      dotGeneric(x, y, cc, z, M, N, K, da, db, dc);
      continue;
    }

    // The operands as floats, split or rounded as the precision says.
    std::vector<float> A(M * K), B(K * N), Alo, Blo;
    toFloats(x, da, M * K, A.data());
    toFloats(y, db, K * N, B.data());
    bool anyF32 = da == DType::FP32 || db == DType::FP32;
    if (anyF32 && prec == DotPrecision::TF32) {
      for (float &v : A)
        v = toTF32(v);
      for (float &v : B)
        v = toTF32(v);
    } else if (anyF32 && prec == DotPrecision::TF32x3) {
      auto split = [](std::vector<float> &hi, std::vector<float> &lo) {
        lo.resize(hi.size());
        for (size_t i = 0; i < hi.size(); ++i) {
          float h = toTF32(hi[i]);
          lo[i] = toTF32(hi[i] - h);
          hi[i] = h;
        }
      };
      split(A, Alo);
      split(B, Blo);
    }
    // (a, b) pairs summed into the accumulator one after the other.
    std::vector<std::pair<const float *, const float *>> terms;
    if (!Alo.empty())
      terms = {{A.data(), Blo.data()}, {Alo.data(), B.data()}};
    terms.push_back({A.data(), B.data()});

    if (dc == DType::FP32) {
      std::vector<float> acc(M * N);
      for (int64_t i = 0; i < M * N; ++i)
        acc[i] = float(cc[i].f);
      for (auto [ta, tb] : terms)
        gemmF32(ta, tb, acc.data(), M, N, K);
      for (int64_t i = 0; i < M * N; ++i)
        z[i].f = acc[i];
    } else {
      std::vector<double> acc(M * N);
      for (int64_t i = 0; i < M * N; ++i)
        acc[i] = cc[i].f;
      for (auto [ta, tb] : terms)
        gemmF16Acc(ta, tb, acc.data(), M, N, K);
      for (int64_t i = 0; i < M * N; ++i)
        z[i].f = acc[i];
    }
  }
  return r;
}

} // namespace tritium::exec
