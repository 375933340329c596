#include <kpmap/base/detail/finalize.hpp>

#include <utility>
#include <vector>

namespace kpmap::detail {

namespace {
std::vector<std::function<void()>>& hooks() {
  static std::vector<std::function<void()>> registered;
  return registered;
}
}  // namespace

void at_finalize(std::function<void()> hook) { hooks().push_back(std::move(hook)); }

void run_finalize_hooks() {
  auto& h = hooks();
  while (!h.empty()) {
    auto hook = std::move(h.back());
    h.pop_back();
    hook();
  }
}

}  // namespace kpmap::detail
