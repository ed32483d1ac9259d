// The scalar kernels and the run-time choice of path (see simd.h).
#include "nnue/simd.h"

#include <algorithm>
#include <atomic>

namespace cz::nnue {
namespace detail {
namespace {

void update_scalar(const int16_t* in, int16_t* out, const int16_t* w1, int n, const int* removed,
                   int num_removed, const int* added, int num_added) {
  // Row by row (the compiler vectorises the inner loops); every intermediate
  // value is a sum of at most 33 rows and fits int16 (removals come first).
  if (out != in) std::copy(in, in + n, out);
  for (int r = 0; r < num_removed; ++r) {
    const int16_t* row = w1 + size_t(removed[r]) * size_t(n);
    for (int i = 0; i < n; ++i) out[i] = int16_t(out[i] - row[i]);
  }
  for (int a = 0; a < num_added; ++a) {
    const int16_t* row = w1 + size_t(added[a]) * size_t(n);
    for (int i = 0; i < n; ++i) out[i] = int16_t(out[i] + row[i]);
  }
}

int64_t half_scalar(const int16_t* acc, const int16_t* w2, int n) {
  // Blocks of 16 products (each <= 255 * 255 * 127) sum exactly in int32; blocks in int64.
  int64_t sum = 0;
  for (int b = 0; b < n; b += 16) {
    int32_t block = 0;
    for (int i = b; i < b + 16 && i < n; ++i) {
      const int c = std::clamp<int>(acc[i], 0, 255);
      block += c * c * int(w2[i]);
    }
    sum += block;
  }
  return sum;
}

int64_t output_scalar(const int16_t* us, const int16_t* them, const int16_t* w2, int n) {
  return half_scalar(us, w2, n) + half_scalar(them, w2 + n, n);
}

}  // namespace

const Kernels kScalar{"scalar", update_scalar, output_scalar};

}  // namespace detail

namespace {

struct Path {
  const char* name;
  const Kernels* kernels;
  bool (*supported)();
};

bool always() { return true; }
#if defined(__x86_64__)
bool has_avx2() { return __builtin_cpu_supports("avx2"); }
bool has_avx512() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"); }
#endif

// Portable first, widest last.
const Path kPaths[] = {
    {"scalar", &detail::kScalar, always},
#if defined(__x86_64__)
    {"avx2", &detail::kAvx2, has_avx2},
    {"avx512", &detail::kAvx512, has_avx512},
#endif
};

const Kernels* best() {
  __builtin_cpu_init();
  const Kernels* k = &detail::kScalar;
  for (const Path& p : kPaths)
    if (p.supported()) k = p.kernels;
  return k;
}

std::atomic<const Kernels*> g_current{nullptr};

}  // namespace

const Kernels& kernels() {
  const Kernels* k = g_current.load(std::memory_order_relaxed);
  if (!k) {
    k = best();
    const Kernels* expected = nullptr;
    g_current.compare_exchange_strong(expected, k, std::memory_order_relaxed);
    k = g_current.load(std::memory_order_relaxed);
  }
  return *k;
}

std::vector<std::string> simd_paths() {
  __builtin_cpu_init();
  std::vector<std::string> out;
  for (const Path& p : kPaths)
    if (p.supported()) out.push_back(p.name);
  return out;
}

bool set_simd(const std::string& name, std::string& error) {
  if (name == "auto") {
    g_current.store(best(), std::memory_order_relaxed);
    return true;
  }
  __builtin_cpu_init();
  std::string known;
  for (const Path& p : kPaths) {
    if (name == p.name) {
      if (!p.supported()) {
        error = "SIMD path '" + name + "' is not supported by this CPU";
        return false;
      }
      g_current.store(p.kernels, std::memory_order_relaxed);
      return true;
    }
    known += std::string(", '") + p.name + "'";
  }
  error = "unknown SIMD path '" + name + "' (expected 'auto'" + known + ")";
  return false;
}

}  // namespace cz::nnue
