// SPDX-License-Identifier: BSD-3-Clause
// The did-you-mean screen: the nearest known key or word to a misspelt one.

#include "detail/text.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace kpmap::deck {

using namespace detail;

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_word(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best_d <= std::max<std::size_t>(2, word.size() / 3) ? best : "";
}

std::string Schema::closest(std::string_view path) const {
  std::string best;
  std::size_t best_d = std::string::npos;
  const std::string_view leaf =
      path.substr(path.rfind('.') == std::string_view::npos ? 0 : path.rfind('.') + 1);
  const auto given = segments(path);
  for (const auto& k : keys_) {
    // A numbered key is compared with the index the user wrote in its place.
    std::string candidate = k.path;
    const auto segs = segments(k.path);
    if (segs.size() == given.size() && k.path.find('#') != std::string::npos) {
      candidate.clear();
      for (std::size_t i = 0; i < segs.size(); ++i) {
        candidate += std::string(i ? "." : "") +
                     std::string(segs[i] == "#" && is_index(given[i]) ? given[i] : segs[i]);
      }
    }
    std::size_t d = edit_distance(path, candidate);
    // A right key name in the wrong section is close too.
    const std::string_view kleaf = std::string_view(k.path).substr(
        k.path.rfind('.') == std::string::npos ? 0 : k.path.rfind('.') + 1);
    if (kleaf == leaf) d = std::min<std::size_t>(d, 2);
    if (d < best_d) {
      best_d = d;
      best = candidate;
    }
  }
  return best_d <= std::max<std::size_t>(2, path.size() / 3) ? best : "";
}

}  // namespace kpmap::deck
