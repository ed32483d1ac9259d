// Layer 5 (search): a small seeded random generator (xoshiro256**) with the
// distributions search and self-play need. Written out here, not taken from
// <random>, so a seed gives the same stream on every standard library.
#pragma once

#include <cmath>
#include <cstdint>

namespace cz {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  void reseed(uint64_t seed) {
    for (uint64_t& s : s_) s = splitmix(seed);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n) for n > 0 (Lemire's multiply-shift; bias < 2^-64 * n).
  uint32_t below(uint32_t n) { return uint32_t((unsigned __int128)(next()) * n >> 64); }
  bool bernoulli(double p) { return uniform() < p; }

  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  // Gamma(alpha, 1), Marsaglia-Tsang; alpha < 1 boosted by U^(1/alpha).
  double gamma(double alpha) {
    if (alpha < 1.0) {
      double u = uniform();
      if (u < 1e-300) u = 1e-300;
      return gamma(alpha + 1.0) * std::pow(u, 1.0 / alpha);
    }
    const double d = alpha - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x = normal(), v = 1.0 + c * x;
      if (v <= 0) continue;
      v = v * v * v;
      double u = uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
    }
  }

  // Fills out[0..n) with a Dirichlet(alpha, ..., alpha) sample.
  void dirichlet(double alpha, float* out, int n) {
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      double g = gamma(alpha);
      out[i] = float(g);
      sum += g;
    }
    if (sum <= 0) {
      for (int i = 0; i < n; ++i) out[i] = 1.0f / float(n);
      return;
    }
    for (int i = 0; i < n; ++i) out[i] = float(out[i] / sum);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

}  // namespace cz
