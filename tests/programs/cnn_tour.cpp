// The C++ example of docs/training.md: a small convolutional network trained
// data-parallel on synthetic images with kpmap's layers, Sequential model and
// optimizer. Every rank holds the same parameters and a block of the data;
// each step's gradient is psum'd while the backward pass runs. The program
// checks that it learned (exit 1 otherwise), so the example in the docs
// cannot stop working unnoticed.
//
//   mpiexec -n 2 cnn_tour

#include <kpmap/kpmap.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/optimizer.hpp>
#include <kpmap/train/sequential.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  return kpmap::run(argc, argv, [](kpmap::Runtime& rt) {
    using namespace kpmap::train;
    using Mem = Kokkos::DefaultExecutionSpace::memory_space;
    // [model]
    // 16x16 grey images in 4 classes; each rank generates its block of them.
    const SyntheticImages images(2000, 16, 16, 1, 4, /*seed=*/7, /*noise=*/0.3);
    const auto train = generate_shard<float, Mem>(images, 0, 1600, "devices");
    const auto test = generate_shard<float, Mem>(images, 1600, 400, "devices");

    LayerSpec conv{"conv2d"}, pool{"maxpool2d"}, dense{"dense"};
    conv.filters = 8;
    conv.kernel = 3;
    conv.same = true;
    dense.units = 4;
    const Shape input = Shape::hwc(16, 16, 1);
    const std::size_t batch = 64;  // global: split over the ranks
    Sequential<float, Mem> model(input,
                                 build_layers<float, Mem>(input, {conv, LayerSpec{"relu"}, pool,
                                                                  LayerSpec{"flatten"}, dense}),
                                 Loss::cross_entropy, /*capacity=*/batch);
    model.initialize(/*seed=*/1);  // the same parameters on every rank, no broadcast
    // [end]

    // [loop]
    OptimizerConfig adam;
    adam.kind = OptimizerConfig::Kind::adam;
    adam.learning_rate = 0.01;
    Optimizer<float, Mem, FlatParams<float, Mem>> opt(adam, model.params());
    for (std::uint64_t epoch = 0; epoch < 4; ++epoch) {
      // Every rank agrees on the shuffle; each works on its own rows of each batch.
      const auto plan = plan_epoch(1600, train.begin, train.rows(), batch, /*seed=*/3, epoch);
      for (std::size_t k = 0; k < plan.batches; ++k) {
        model.loss_and_gradient(train, plan.order, plan.offsets[k], plan.offsets[k + 1],
                                plan.global_size(k), "devices");  // gradient psum'd inside
        opt.step(model.params(), model.grads());                  // the same update on every rank
      }
      const Evaluation e = model.evaluate(test, "devices");  // over all ranks
      if (rt.rank() == 0) std::printf("epoch %llu: test accuracy %.3f\n", epoch + 1ULL, e.accuracy);
    }
    // [end]
    const double accuracy = model.evaluate(test, "devices").accuracy;
    if (rt.rank() == 0) {
      std::printf("%s: test accuracy %.3f (0.9 required)\n", accuracy >= 0.9 ? "OK" : "FAIL",
                  accuracy);
    }
    return accuracy >= 0.9 ? 0 : 1;
  });
}
