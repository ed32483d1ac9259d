// NNUE layer 3: the two hot kernels (accumulator update, output sum), one set
// per instruction path, and the run-time choice between them. The scalar
// path (simd.cpp) is portable C++; the AVX2 and AVX-512BW paths (simd_x86.cpp)
// are compiled with function target attributes, so the build stays at the
// portable baseline, and are offered only when the CPU has them. Every path
// returns the same integers (docs/nnue.md section 3): accumulators are int16
// sums that cannot overflow, the output is summed exactly in int64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cz::nnue {

struct Kernels {
  const char* name;
  // out[i] = in[i] - sum_r w1[removed[r] * n + i] + sum_a w1[added[a] * n + i]
  // for i < n (n a multiple of 16); `in` may equal `out`.
  void (*update)(const int16_t* in, int16_t* out, const int16_t* w1, int n, const int* removed,
                 int num_removed, const int* added, int num_added);
  // sum_{i<n} clamp(us[i], 0, 255)^2 * w2[i] + sum_{i<n} clamp(them[i], 0, 255)^2 * w2[n + i].
  int64_t (*output)(const int16_t* us, const int16_t* them, const int16_t* w2, int n);
};

// The kernels in use (the best the CPU supports unless set_simd chose one).
const Kernels& kernels();
// Names of the paths this CPU can run, portable first: "scalar", then "avx2", "avx512".
std::vector<std::string> simd_paths();
// Chooses a path by name ("auto" = the best available); false and `error` if
// the name is unknown or the CPU lacks it. Thread-safe; affects later calls.
bool set_simd(const std::string& name, std::string& error);

namespace detail {
extern const Kernels kScalar;
#if defined(__x86_64__)
extern const Kernels kAvx2;
extern const Kernels kAvx512;
#endif
}  // namespace detail

}  // namespace cz::nnue
