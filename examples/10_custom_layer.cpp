// SPDX-License-Identifier: BSD-3-Clause
// 10 a layer of your own, trained by kpmap-train from a deck, without
// editing the library.
//
// Leaky ReLU: y = x for x > 0, y = slope x otherwise, with `slope` a deck key
// of the layer's own: `model.layers.N.slope`, checked as every key is (a
// number from 0 to 1, did-you-mean, refused on a layer of another type),
// listed by --help-deck. The registration below is all the library needs;
// main() is kpmap-train itself, so this program takes kpmap-train's command
// line and decks, its checkpoints and restarts:
//
//   mpiexec -n 3 ./10_custom_layer 10_custom_layer.toml
//   ./10_custom_layer --help-deck | grep -A1 slope
//
// The check: the deck fits data made as y = x . w + b + noise of standard
// deviation 0.1 with dense(16), leaky_relu, dense(1). A network that has
// learned the linear map predicts the held-out samples as well as anything
// can: its mean squared error is the noise's variance, 0.01. The deck's
// output.expect_val_loss makes the run exit non-zero (5) unless the final
// validation loss is within sampling error of that.

#include <kpmap/apps/train.hpp>
#include <kpmap/train/layers/registry.hpp>

#include <Kokkos_Core.hpp>

namespace train = kpmap::train;

namespace {

// Forward: one thread per element of the batch. `in` and `out` are the same
// storage when the model runs the layer in place; each element is read
// before it is written, so either way is right.
template <class T, class M>
struct LeakyForward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> in;
  Kokkos::View<T**, Kokkos::LayoutRight, M> out;
  T slope;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    const T x = in.data()[i];
    out.data()[i] = x > T(0) ? x : slope * x;
  }
};

// Backward from the output alone (y > 0 exactly where x > 0, for slope >= 0):
// dL/dx = dL/dy times 1 or slope (din and dout the same storage in a model).
template <class T, class M>
struct LeakyBackward {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> y;
  Kokkos::View<const T**, Kokkos::LayoutRight, M> dout;
  Kokkos::View<T**, Kokkos::LayoutRight, M> din;
  T slope;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    din.data()[i] = y.data()[i] > T(0) ? dout.data()[i] : slope * dout.data()[i];
  }
};

// The layer, for any value type T and memory space M (the library builds it
// for each it supports). In place: the model gives its input and output the
// same storage, so it costs no memory; a program driving it by hand with
// buffers of their own gets `out` and `din` written, as from every layer.
template <class T, class M>
class LeakyReLU final : public train::Layer<T, M> {
 public:
  using typename train::Layer<T, M>::Batch;
  using typename train::Layer<T, M>::Exec;

  LeakyReLU(train::Shape input, const kpmap::deck::Settings& keys)
      : train::Layer<T, M>(input), slope_(static_cast<T>(keys.real("slope"))) {}

  std::string type() const override { return "leaky_relu"; }
  train::Shape output_shape() const override { return this->input_; }
  bool in_place() const override { return true; }
  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    Kokkos::parallel_for("leaky_relu::forward", Kokkos::RangePolicy<Exec>(exec, 0, in.size()),
                         LeakyForward<T, M>{in, out, slope_});
  }
  void backward(const Exec& exec, const Batch&, const Batch& out, const Batch& dout,
                const Batch& din) override {
    if (din.data() == nullptr) return;  // the first layer: no input gradient wanted
    Kokkos::parallel_for("leaky_relu::backward", Kokkos::RangePolicy<Exec>(exec, 0, dout.size()),
                         LeakyBackward<T, M>{out, dout, din, slope_});
  }

 private:
  T slope_;
};

}  // namespace

// [register]
KPMAP_TRAIN_REGISTER_LAYER(LeakyReLU,
                           {"leaky_relu", "max(x, slope x), elementwise",
                            kpmap::deck::Schema("leaky_relu")
                                .real("slope", 0.01, {0.0, 1.0}, "", "the slope below zero")});
// [end]

int main(int argc, char** argv) { return kpmap::apps::train_main(argc, argv); }
