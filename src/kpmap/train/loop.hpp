#pragma once
/// \file
/// \brief The training loop's length, batch and seed: a deck's [train]
/// section, and what a Trainer runs by (train/trainer.hpp).

#include <cstddef>
#include <cstdint>
#include <string>

namespace kpmap::train {

/// \brief What each rank keeps of the training state (train.sharding), as
/// DeepSpeed's ZeRO stages name it.
enum class Sharding {
  replicated,  ///< every rank keeps all of the parameters, gradient and optimizer state
  optimizer,   ///< the optimizer's state split evenly over the ranks (ZeRO stage 1)
  gradients,   ///< ... and the reduced gradient too, reduce-scattered (ZeRO stage 2)
  parameters,  ///< ... and the parameters, each layer's gathered when used (ZeRO stage 3, FSDP)
};

/// \brief The deck's name of `s` ("replicated", "optimizer", "gradients",
/// "parameters").
inline const char* sharding_name(Sharding s) {
  switch (s) {
    case Sharding::optimizer:
      return "optimizer";
    case Sharding::gradients:
      return "gradients";
    case Sharding::parameters:
      return "parameters";
    default:
      return "replicated";
  }
}

/// \brief How long a training loop runs, over which batches.
struct LoopConfig {
  long long epochs = 1;
  std::size_t batch = 0;       ///< global batch (all ranks); 0: the whole training set
  std::uint64_t seed = 0;      ///< of the shuffle (the initial weights are the model's)
  std::size_t accumulate = 1;  ///< micro-batches per step
  long long max_steps = 0;     ///< end after this many steps in all (0: no limit)
  long long log_every = 0;     ///< rank 0 prints the step's figures every N steps (0: never)
  Sharding sharding = Sharding::replicated;  ///< what each rank keeps of the training state
  /// The ranks as a mesh of "data" x "model" (train.mesh): batches split over
  /// "data", layers split over "model" (tensor parallelism). 0 data ranks:
  /// all the ranks that "model" leaves.
  int mesh_data = 0;
  int mesh_model = 1;
};

}  // namespace kpmap::train
