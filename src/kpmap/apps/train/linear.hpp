// kpmap-train with model.kind = "linear": the linear model's run, compiled
// once per precision (linear_double.cpp, linear_float.cpp) apart from the
// layered models' runs (run.hpp declares it).

#pragma once

#include <kpmap/apps/train/run.hpp>
#include <kpmap/train/linear.hpp>

namespace kpmap::apps::detail {

template <class T>
int run_linear(const kpmap::train::TrainConfig& c, const Deck& deck,
               const kpmap::apps::RunOptions& opts, const kpmap::Runtime& rt, std::size_t capacity,
               const kpmap::train::Shard<T, Mem>& train_set,
               const kpmap::train::Shard<T, Mem>& val_set, kpmap::PhaseTimes& times, double t_start,
               const fs::path& out, const kpmap::Mesh& mesh) {
  kpmap::train::LinearModel<T, Mem> model(c.data.features, capacity);
  return run_training(c, deck, opts, rt, model, train_set, val_set, times, t_start, out, mesh);
}

}  // namespace kpmap::apps::detail
