#pragma once
// kpmap-train's configuration: everything the deck says, checked across keys.

#include "../common/driver.hpp"
#include "schema.hpp"

#include <kpmap/runtime.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/optimizer.hpp>

#include <mpi.h>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kpmap::apps::train {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;

// Everything the deck says, checked across keys.
struct Config {
  std::string model, activation, loss, precision, data_kind, path, x_name, y_name;
  double loss_scale = 1;  // mixed precision
  std::vector<std::size_t> hidden;
  std::vector<kpmap::train::LayerSpec> layers;  // mlp and sequential
  kpmap::train::Shape input;                    // one sample
  std::string labels, test_path, test_labels;   // idx
  kpmap::train::IdxInfo train_images, train_labels, test_images, test_labels_info;
  kpmap::train::PixelScaling scaling;
  bool test_set = false;       // the validation set is a separate test set
  bool hdf5_bytes = false;     // hdf5: the features are pixel bytes, scaled like IDX images
  double parameters = 0;       // mlp, sequential: trainable numbers
  double work_per_sample = 0;  // mlp, sequential: work array elements per sample of capacity
  std::size_t samples = 0, features = 0, classes = 0, validation = 0;
  double noise = 0, fraction = 0;
  std::uint64_t data_seed = 0, train_seed = 0;
  kpmap::train::OptimizerConfig optimizer;
  long long epochs = 0, checkpoint_every = 0, max_steps = 0, log_every = 0;
  std::size_t accumulate = 1;  // micro-batches per step
  int keep = 3;
  std::size_t batch = 0;
  std::string output;
};

/// \brief The deck's values, checked across keys (collective: reads data
/// files' headers on every rank of `comm`); bad input throws InputError.
Config configure(const deck::Deck& d, MPI_Comm comm);

/// \brief The whole run at one precision (training.hpp). T: data, parameters
/// and optimizer; C: what the layers compute in. Instantiated for double in
/// train_double.cpp and for float in train_float.cpp, compiled side by side.
template <class T, class C = T>
int run(const Config& c, const deck::Deck& deck, const RunOptions& opts, const Runtime& rt);

/// \brief float parameters, layers computed in Kokkos' 16-bit type; only
/// where it has one (configure() refuses "mixed" elsewhere).
int run_mixed(const Config& c, const deck::Deck& deck, const RunOptions& opts, const Runtime& rt);

}  // namespace kpmap::apps::train
