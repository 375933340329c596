// kpmap-train with model.kind = "linear" and model.precision = "double".

#include <kpmap/apps/train/linear.hpp>

namespace kpmap::apps::detail {

template int run_linear<double>(const kpmap::train::TrainConfig&, const Deck&,
                                const kpmap::apps::RunOptions&, const kpmap::Runtime&, std::size_t,
                                const kpmap::train::Shard<double, Mem>&,
                                const kpmap::train::Shard<double, Mem>&, kpmap::PhaseTimes&, double,
                                const fs::path&, const kpmap::Mesh&);

}  // namespace kpmap::apps::detail
