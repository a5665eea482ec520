#ifdef TESSEL_HAVE_ONEDNN
#include "peers/onednn_layout.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace tessel::bench {

std::string onednn_layout_note(const char *what, const dnnl::memory::desc &desc) {
  const dnnl_memory_desc_t &c = desc.data;
  if (c.format_kind != dnnl_blocked) return std::string(what) + " non-blocked";
  std::string text = std::string(what) + " ";
  const char *letters = "abcdefghijkl";
  // Outer order by stride, then inner blocks, in oneDNN's own letter notation (e.g. aBcd16b).
  std::vector<int> order;
  for (int i = 0; i < c.ndims; ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return c.format_desc.blocking.strides[x] > c.format_desc.blocking.strides[y]; });
  std::vector<bool> blocked(c.ndims, false);
  for (int i = 0; i < c.format_desc.blocking.inner_nblks; ++i) blocked[c.format_desc.blocking.inner_idxs[i]] = true;
  for (int d : order) text += blocked[d] ? char(std::toupper(letters[d])) : letters[d];
  for (int i = 0; i < c.format_desc.blocking.inner_nblks; ++i)
    text += std::to_string(c.format_desc.blocking.inner_blks[i]) + letters[c.format_desc.blocking.inner_idxs[i]];
  return text;
}

}  // namespace tessel::bench
#endif  // TESSEL_HAVE_ONEDNN
