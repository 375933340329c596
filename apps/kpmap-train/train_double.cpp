// kpmap-train's run in double precision: one instantiation per file, so the
// build compiles the precisions side by side.

#include "training.hpp"

namespace kpmap::apps::train {

template int run<double>(const Config&, const deck::Deck&, const RunOptions&, const Runtime&);

}  // namespace kpmap::apps::train
