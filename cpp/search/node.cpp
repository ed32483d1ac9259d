// Subtree extraction for tree reuse (breadth first, children stay contiguous).
#include "search/node.h"

#include <cassert>

namespace cz {

void NodeArena::extract_subtree(uint32_t from, float scale, NodeArena& dst) const {
  std::vector<Node>& out = dst.nodes_;
  out.clear();
  out.push_back(nodes_[from]);
  out[0].parent = kNoNode;
  for (size_t i = 0; i < out.size(); ++i) {
    assert(out[i].inflight == 0);
    out[i].n *= scale;
    out[i].w *= scale;
    out[i].m *= scale;
    const uint32_t src = out[i].first_child;
    if (src == kNoNode) continue;
    const uint32_t first = uint32_t(out.size());
    out.insert(out.end(), nodes_.begin() + src, nodes_.begin() + src + out[i].num_children);
    out[i].first_child = first;
    for (uint32_t j = first; j < out.size(); ++j) out[j].parent = uint32_t(i);
  }
}

}  // namespace cz
