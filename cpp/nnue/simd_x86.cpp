// The AVX2 and AVX-512BW kernels (see simd.h), compiled with function target
// attributes so the rest of the build stays at the portable baseline; simd.cpp
// offers them only when __builtin_cpu_supports says the CPU has them.
//
// Accumulators: wrapping int16 adds and subtracts, exact because every result
// fits int16 (docs/nnue.md section 3). Output: c = clamp(acc, 0, 255);
// t = c * w2 fits int16 (<= 32,385); madd(c, t) sums two c * t products per
// int32 lane; a lane gathers at most 2N / 8 products (<= 5.3e8 for N = 256),
// and lanes are summed in int64.
#if defined(__x86_64__)

#include <immintrin.h>

#include "nnue/simd.h"

namespace cz::nnue::detail {
namespace {

#define CZ_AVX2 __attribute__((target("avx2")))
#define CZ_AVX512 __attribute__((target("avx512f,avx512bw")))

// ------------------------------------------------------------------- AVX2

CZ_AVX2 void update_avx2(const int16_t* in, int16_t* out, const int16_t* w1, int n, const int* removed,
                         int num_removed, const int* added, int num_added) {
  for (int i = 0; i < n; i += 16) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    for (int r = 0; r < num_removed; ++r)
      v = _mm256_sub_epi16(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                  w1 + size_t(removed[r]) * size_t(n) + size_t(i))));
    for (int a = 0; a < num_added; ++a)
      v = _mm256_add_epi16(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                  w1 + size_t(added[a]) * size_t(n) + size_t(i))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), v);
  }
}

// sum += madd(c, c * w) over 16 values at acc and w.
CZ_AVX2 inline __m256i product16_avx2(__m256i sum, const int16_t* acc, const int16_t* w) {
  const __m256i c = _mm256_min_epi16(
      _mm256_max_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc)), _mm256_setzero_si256()),
      _mm256_set1_epi16(255));
  const __m256i t = _mm256_mullo_epi16(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
  return _mm256_add_epi32(sum, _mm256_madd_epi16(c, t));
}

CZ_AVX2 int64_t sum_lanes_avx2(__m256i v) {
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  int64_t s = 0;
  for (int32_t x : lanes) s += x;
  return s;
}

CZ_AVX2 int64_t output_avx2(const int16_t* us, const int16_t* them, const int16_t* w2, int n) {
  __m256i sum = _mm256_setzero_si256();
  for (int i = 0; i < n; i += 16) sum = product16_avx2(sum, us + i, w2 + i);
  for (int i = 0; i < n; i += 16) sum = product16_avx2(sum, them + i, w2 + n + i);
  return sum_lanes_avx2(sum);
}

// ---------------------------------------------------------------- AVX-512

CZ_AVX512 void update_avx512(const int16_t* in, int16_t* out, const int16_t* w1, int n, const int* removed,
                             int num_removed, const int* added, int num_added) {
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512i v = _mm512_loadu_si512(in + i);
    for (int r = 0; r < num_removed; ++r)
      v = _mm512_sub_epi16(v, _mm512_loadu_si512(w1 + size_t(removed[r]) * size_t(n) + size_t(i)));
    for (int a = 0; a < num_added; ++a)
      v = _mm512_add_epi16(v, _mm512_loadu_si512(w1 + size_t(added[a]) * size_t(n) + size_t(i)));
    _mm512_storeu_si512(out + i, v);
  }
  if (i < n) {  // n is a multiple of 16: one 16-value tail
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    for (int r = 0; r < num_removed; ++r)
      v = _mm256_sub_epi16(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                  w1 + size_t(removed[r]) * size_t(n) + size_t(i))));
    for (int a = 0; a < num_added; ++a)
      v = _mm256_add_epi16(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                  w1 + size_t(added[a]) * size_t(n) + size_t(i))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), v);
  }
}

CZ_AVX512 inline __m512i product32_avx512(__m512i sum, const int16_t* acc, const int16_t* w) {
  const __m512i c = _mm512_min_epi16(_mm512_max_epi16(_mm512_loadu_si512(acc), _mm512_setzero_si512()),
                                     _mm512_set1_epi16(255));
  const __m512i t = _mm512_mullo_epi16(c, _mm512_loadu_si512(w));
  return _mm512_add_epi32(sum, _mm512_madd_epi16(c, t));
}

CZ_AVX512 inline __m256i product16_avx512(__m256i sum, const int16_t* acc, const int16_t* w) {
  const __m256i c = _mm256_min_epi16(
      _mm256_max_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc)), _mm256_setzero_si256()),
      _mm256_set1_epi16(255));
  const __m256i t = _mm256_mullo_epi16(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
  return _mm256_add_epi32(sum, _mm256_madd_epi16(c, t));
}

CZ_AVX512 int64_t half_avx512(const int16_t* acc, const int16_t* w, int n) {
  __m512i sum = _mm512_setzero_si512();
  int i = 0;
  for (; i + 32 <= n; i += 32) sum = product32_avx512(sum, acc + i, w + i);
  // The int32 lanes are summed in int64 (the total can pass 2^31).
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, sum);
  int64_t total = 0;
  for (int32_t x : lanes) total += x;
  if (i < n) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                       product16_avx512(_mm256_setzero_si256(), acc + i, w + i));
    for (int k = 0; k < 8; ++k) total += lanes[k];
  }
  return total;
}

CZ_AVX512 int64_t output_avx512(const int16_t* us, const int16_t* them, const int16_t* w2, int n) {
  return half_avx512(us, w2, n) + half_avx512(them, w2 + n, n);
}

#undef CZ_AVX2
#undef CZ_AVX512

}  // namespace

const Kernels kAvx2{"avx2", update_avx2, output_avx2};
const Kernels kAvx512{"avx512", update_avx512, output_avx512};

}  // namespace cz::nnue::detail

#endif  // __x86_64__
