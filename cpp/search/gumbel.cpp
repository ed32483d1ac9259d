// The Gumbel root's arithmetic: the halving schedule, completed Q, sigma and
// the improved policy (gumbel.h).
#include "search/gumbel.h"

#include <algorithm>
#include <cmath>

namespace cz::gumbel {

int phases(int m) {
  int p = 0;
  while ((1 << p) < m) ++p;
  return p;
}

// Walks the schedule phase by phase: a phase of r moves and e rounds covers
// r * e simulations; simulation k falls in round (k - start) / r of it.
int halving_level(int k, int budget, int m) {
  if (m <= 1 || budget <= 0) return std::max(0, std::min(k, budget - 1));
  k = std::clamp(k, 0, budget - 1);
  const int p = phases(m);
  int r = m, start = 0, level = 0;
  for (;;) {
    const int extra = std::max(1, int(double(budget) / (double(p) * double(r))));
    if (k < start + r * extra) return level + (k - start) / r;
    start += r * extra;
    level += extra;
    r = std::max(2, r / 2);
  }
}

std::vector<int> halving_counts(int budget, int m) {
  std::vector<int> counts(size_t(std::max(m, 1)), 0);
  if (m <= 1) {
    counts[0] = std::max(budget, 0);
    return counts;
  }
  // Ranks are visited in order within a round, so the rank that receives
  // simulation k is the one among ranks [0, r) at the level that still has it.
  for (int k = 0; k < budget; ++k) {
    const int level = halving_level(k, budget, m);
    for (int i = 0; i < m; ++i)
      if (counts[size_t(i)] == level) {
        ++counts[size_t(i)];
        break;
      }
  }
  return counts;
}

float mixed_value(float raw, const float* visits, const float* prior, const float* q, int k) {
  double sum_n = 0, sum_p = 0, sum_pq = 0;
  for (int i = 0; i < k; ++i) {
    if (visits[i] <= 0) continue;
    sum_n += visits[i];
    sum_p += prior[i];
    sum_pq += double(prior[i]) * q[i];
  }
  if (sum_n <= 0) return raw;
  const double mean = sum_p > 0 ? sum_pq / sum_p : 0.0;
  if (sum_p <= 0) {  // visited children all have zero prior: their plain mean
    double s = 0;
    int c = 0;
    for (int i = 0; i < k; ++i)
      if (visits[i] > 0) s += q[i], ++c;
    return float((raw + sum_n * (s / c)) / (1.0 + sum_n));
  }
  return float((raw + sum_n * mean) / (1.0 + sum_n));
}

void sigma_completed(float raw, const float* visits, const float* prior, const float* q, int k,
                     float c_visit, float c_scale, float* out) {
  if (k <= 0) return;
  const float vmix = mixed_value(raw, visits, prior, q, k);
  float lo = INFINITY, hi = -INFINITY, max_n = 0;
  for (int i = 0; i < k; ++i) {
    out[i] = visits[i] > 0 ? q[i] : vmix;
    lo = std::min(lo, out[i]);
    hi = std::max(hi, out[i]);
    max_n = std::max(max_n, visits[i]);
  }
  const float scale = (c_visit + max_n) * c_scale;
  const float span = hi - lo;
  for (int i = 0; i < k; ++i) out[i] = scale * (span > 1e-8f ? (out[i] - lo) / span : 0.5f);
}

void improved_policy(const float* logit, const float* sigma, int k, float* out) {
  float mx = -INFINITY;
  for (int i = 0; i < k; ++i) mx = std::max(mx, logit[i] + sigma[i]);
  double sum = 0;
  for (int i = 0; i < k; ++i) {
    const float x = logit[i] + sigma[i];
    out[i] = std::isfinite(x) ? std::exp(x - mx) : 0.0f;
    sum += out[i];
  }
  if (!(sum > 0)) {
    for (int i = 0; i < k; ++i) out[i] = 1.0f / float(k);
    return;
  }
  for (int i = 0; i < k; ++i) out[i] = float(out[i] / sum);
}

float sample(double u) {
  u = std::clamp(u, 1e-300, 1.0 - 1e-16);
  return float(-std::log(-std::log(u)));
}

}  // namespace cz::gumbel
