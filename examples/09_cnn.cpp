// SPDX-License-Identifier: BSD-3-Clause
// 09 a CNN trained with the library's layers, Sequential model and Trainer
// (the C++ example of docs/training.md): a small convolutional network
// trained data-parallel on synthetic images. Every rank holds the same
// parameters and a block of the data; each step's gradient is psum'd while
// the backward pass runs. It checks that it learned (exit 1 otherwise).
//
//   mpiexec -n 2 ./09_cnn

#include <kpmap/kpmap.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/sequential.hpp>
#include <kpmap/train/trainer.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  return kpmap::run(argc, argv, [](kpmap::Runtime& rt) {
    using namespace kpmap::train;
    using Mem = Kokkos::DefaultExecutionSpace::memory_space;
    // [model]
    // 16x16 grey images in 4 classes; each rank generates its block of them.
    const SyntheticImages images(2000, 16, 16, 1, 4, /*seed=*/7, /*noise=*/0.3);
    const auto train = generate_shard<float, Mem>(images, 0, 1600, "devices");
    const auto test = generate_shard<float, Mem>(images, 1600, 400, "devices");

    // Each layer typed, its keys members (the rest take defaults); the same
    // by deck name: LayerSpec{"conv2d", {{"filters", 8}, {"padding", "same"}}}.
    const std::vector<LayerSpec> layers = {conv2d(8, 3).padding("same"), relu(), maxpool2d(2),
                                           flatten(), dense(4)};
    const Shape input = Shape::hwc(16, 16, 1);
    const std::size_t batch = 64;  // global: split over the ranks
    Sequential<float, Mem> model(input, build_layers<float, Mem>(input, layers),
                                 Loss::cross_entropy, /*capacity=*/batch);
    model.initialize(/*seed=*/1);  // the same parameters on every rank, no broadcast
    // [end]

    // [loop]
    // The data-parallel loop: each rank works on its rows of each global
    // batch, the gradient is psum'd, every rank applies the same update.
    TrainerConfig run;
    run.epochs = 4;
    run.batch = batch;
    run.seed = 3;  // the shuffle: the same order at any rank count
    run.output.dir = "09_cnn_np" + std::to_string(rt.size());  // checkpoints
    run.meta.app = "09_cnn";
    OptimizerConfig adam;
    adam.kind = "adam";
    adam.learning_rate = 0.01;
    Trainer<Sequential<float, Mem>> trainer(model, adam, run, "devices");
    const FitResult result = trainer.fit(train, test, [&](const EpochReport& r) {
      if (rt.rank() == 0) {
        std::printf("epoch %lld: test accuracy %.3f\n", r.epoch, r.held_out.accuracy);
      }
    });
    // result.checkpoint is the last checkpoint; trainer.restart(file) continues from one.
    // [end]
    const double accuracy = model.evaluate(test, "devices").accuracy;
    if (rt.rank() == 0) {
      std::printf("%s: test accuracy %.3f (0.9 required), last checkpoint %s\n",
                  accuracy >= 0.9 ? "OK" : "FAIL", accuracy, result.checkpoint.c_str());
    }
    return accuracy >= 0.9 ? 0 : 1;
  });
}
