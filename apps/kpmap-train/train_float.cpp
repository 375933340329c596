// kpmap-train's run in single and mixed precision: one instantiation per file,
// so the build compiles the precisions side by side.

#include "training.hpp"

namespace kpmap::apps::train {

template int run<float>(const Config&, const deck::Deck&, const RunOptions&, const Runtime&);

// On host backends kpmap::detail::half is float: this is run<float> again.
int run_mixed(const Config& c, const deck::Deck& deck, const RunOptions& opts, const Runtime& rt) {
  return run<float, kpmap::detail::half>(c, deck, opts, rt);
}

}  // namespace kpmap::apps::train
