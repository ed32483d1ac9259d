// Layer 5 (search): the Gumbel root's arithmetic (Danihelka et al., ICLR
// 2022, "Policy improvement by planning with Gumbel"; SPEC 6), free of any
// tree so that tests can check it against numbers written out by hand.
//
// Sequential halving over m considered moves with a budget of n simulations:
// phases = ceil(log2 m); a phase with r moves left gives each of them
// max(1, floor(n / (phases * r))) more visits, one round of r simulations at
// a time, then keeps the better half (r -> max(2, floor(r / 2))); once every
// phase has run, the last two moves share what is left of the budget the
// same way. halving_level(k) is the visit count (this search's) that the
// move receiving simulation k already holds: at simulation k the root visits
// the best-scoring considered move still at that level. With one considered
// move every simulation goes to it.
//
// Scores: sigma(q) = (c_visit + max_b N(b)) * c_scale * q with q min-max
// normalised over the root's children; the policy target is
// softmax(logit + sigma(completed Q)), where an unvisited child's Q is
// completed with v_mix, the root's network value mixed with the
// prior-weighted mean Q of the visited children (the paper's appendix D).
#pragma once

#include <cstdint>
#include <vector>

namespace cz::gumbel {

// ceil(log2 m), 0 for m <= 1.
int phases(int m);
// Visit level of simulation k (0-based) in a halving of `budget` simulations
// over `m` considered moves (see the file comment); k >= budget gives the
// level of the last simulation.
int halving_level(int k, int budget, int m);
// Visits each rank receives over the whole budget, rank 0 = the final
// survivor (descending; m entries; they sum to budget).
std::vector<int> halving_counts(int budget, int m);

// v_mix: (raw + sum_N * sum_{visited} P q / sum_{visited} P) / (1 + sum_N),
// `raw` when nothing was visited. Arrays of `k` children: visits, prior, q
// (q from the root's side to move; read only where visits > 0).
float mixed_value(float raw, const float* visits, const float* prior, const float* q, int k);

// Completed Q: q where visits > 0, else v_mix; then min-max normalised to
// [0, 1] (all 0.5 when they are equal) and scaled to
// sigma = (c_visit + max N) * c_scale * normalised. Writes `out[k]`.
void sigma_completed(float raw, const float* visits, const float* prior, const float* q, int k,
                     float c_visit, float c_scale, float* out);

// softmax(logit + sigma) into out[k] (sums to 1).
void improved_policy(const float* logit, const float* sigma, int k, float* out);

// A Gumbel(0, 1) sample from a uniform u in [0, 1).
float sample(double u);

}  // namespace cz::gumbel
