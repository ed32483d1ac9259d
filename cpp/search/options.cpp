// Range checks of the search options and the temperature schedule.
#include <cmath>

#include "search/options.h"
#include "search/leaf_material.h"

namespace cz {

namespace {
bool finite(float x) { return std::isfinite(x); }
std::string bad(const char* field, float value, const char* rule) {
  return std::string(field) + " = " + std::to_string(value) + " (" + rule + ")";
}
}  // namespace

std::string SearchOptions::validate() const {
  if (!finite(c_puct) || c_puct <= 0) return bad("c_puct", c_puct, "must be > 0");
  if (!finite(fpu_reduction) || fpu_reduction < 0 || fpu_reduction > 2)
    return bad("fpu_reduction", fpu_reduction, "must be in [0, 2]");
  if (!finite(dirichlet_epsilon) || dirichlet_epsilon < 0 || dirichlet_epsilon > 1)
    return bad("dirichlet_epsilon", dirichlet_epsilon, "must be in [0, 1]");
  if (!finite(dirichlet_alpha) || dirichlet_alpha <= 0)
    return bad("dirichlet_alpha", dirichlet_alpha, "must be > 0");
  if (!finite(forced_playout_k) || forced_playout_k < 0)
    return bad("forced_playout_k", forced_playout_k, "must be >= 0");
  if (!finite(discount) || discount <= 0 || discount > 1)
    return bad("discount", discount, "must be in (0, 1]");
  if (!finite(subtree_retention) || subtree_retention < 0 || subtree_retention > 1)
    return bad("subtree_retention", subtree_retention, "must be in [0, 1]");
  if (leaves_per_tree < 1 || leaves_per_tree > 256)
    return bad("leaves_per_tree", float(leaves_per_tree), "must be in 1..256");
  if (!finite(virtual_loss) || virtual_loss < 0 || virtual_loss > 2)
    return bad("virtual_loss", virtual_loss, "must be in [0, 2]");
  if (!finite(draw_score) || draw_score < 0 || draw_score > 1)
    return bad("draw_score", draw_score, "must be in [0, 1]");
  if (root != RootRule::PUCT && root != RootRule::GUMBEL) return bad("root", float(int(root)), "must be PUCT or GUMBEL");
  if (gumbel_considered < 1 || gumbel_considered > 256)
    return bad("gumbel_considered", float(gumbel_considered), "must be in 1..256");
  if (!finite(gumbel_c_visit) || gumbel_c_visit < 0 || gumbel_c_visit > 1e6)
    return bad("gumbel_c_visit", gumbel_c_visit, "must be in [0, 1e6]");
  if (!finite(gumbel_c_scale) || gumbel_c_scale <= 0 || gumbel_c_scale > 1e3)
    return bad("gumbel_c_scale", gumbel_c_scale, "must be in (0, 1e3]");
  if (!finite(moves_left_slope) || moves_left_slope < 0 || moves_left_slope > 1)
    return bad("moves_left_slope", moves_left_slope, "must be in [0, 1]");
  if (!finite(moves_left_cap) || moves_left_cap < 0 || moves_left_cap > 1)
    return bad("moves_left_cap", moves_left_cap, "must be in [0, 1]");
  if (!finite(moves_left_linear) || std::abs(moves_left_linear) > 10)
    return bad("moves_left_linear", moves_left_linear, "must be in [-10, 10]");
  if (!finite(moves_left_quadratic) || std::abs(moves_left_quadratic) > 10)
    return bad("moves_left_quadratic", moves_left_quadratic, "must be in [-10, 10]");
  if (!finite(leaf_material) || leaf_material < 0 || leaf_material > 1)
    return bad("leaf_material", leaf_material, "must be in [0, 1]");
  if (!finite(leaf_material_scale) || leaf_material_scale <= 0 || leaf_material_scale > 100)
    return bad("leaf_material_scale", leaf_material_scale, "must be in (0, 100]");
  if (leaf_material_depth < 0 || leaf_material_depth > kMaxLeafMaterialDepth)
    return bad("leaf_material_depth", float(leaf_material_depth), "must be in [0, 16]");
  return {};
}

float MoveChoiceOptions::temperature_at(int ply) const {
  if (temperature.empty()) return 1.0f;
  if (ply <= temperature.front().first) return temperature.front().second;
  for (size_t i = 1; i < temperature.size(); ++i) {
    const auto& [p1, t1] = temperature[i];
    if (ply <= p1) {
      const auto& [p0, t0] = temperature[i - 1];
      const float f = p1 > p0 ? float(ply - p0) / float(p1 - p0) : 1.0f;
      return t0 + f * (t1 - t0);
    }
  }
  return temperature.back().second;
}

std::string MoveChoiceOptions::validate() const {
  if (temperature.empty()) return "temperature schedule is empty";
  for (size_t i = 0; i < temperature.size(); ++i) {
    if (!finite(temperature[i].second) || temperature[i].second < 0)
      return bad("temperature", temperature[i].second, "must be >= 0");
    if (i > 0 && temperature[i].first <= temperature[i - 1].first)
      return "temperature plies must be strictly ascending";
  }
  if (greedy_after_ply < 0) return bad("greedy_after_ply", float(greedy_after_ply), "must be >= 0");
  return {};
}

}  // namespace cz
