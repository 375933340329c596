// Every layer's hand-written backward pass against central finite
// differences of the model's own loss, at every rank count (the gradient is
// the global batch mean); a model trained at this rank count against the
// same model trained alone on every rank; max pooling's tie rule; and the
// optimizers' updates against their closed forms.

#include "support/mpi_test.hpp"

#include <kpmap/runtime/mesh.hpp>
#include <kpmap/train/config.hpp>
#include <kpmap/train/layers/conv2d.hpp>
#include <kpmap/train/layers/maxpool2d.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>
#include <kpmap/train/sequential.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using namespace kpmap::train;
using Model = Sequential<double, Mem>;

std::vector<double> to_host(const Kokkos::View<double*, Mem>& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.size());
}

// Adds `delta` to parameter number `index`, on every rank alike.
void nudge(const Kokkos::View<double*, Mem>& v, std::size_t index, double delta) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  h(index) += delta;
  Kokkos::deep_copy(v, h);
}

LayerSpec conv(std::size_t filters, std::size_t kernel, std::size_t stride, bool same) {
  return {"conv2d",
          {{"filters", static_cast<long long>(filters)},
           {"kernel", static_cast<long long>(kernel)},
           {"stride", static_cast<long long>(stride)},
           {"padding", std::string(same ? "same" : "valid")}}};
}
LayerSpec pool(const char* type, std::size_t size) {
  return {type, {{"size", static_cast<long long>(size)}}};
}
LayerSpec dense(std::size_t units) { return {"dense", {{"units", static_cast<long long>(units)}}}; }

// The gradient of the model's loss on the whole data set (one global batch)
// against central differences in every parameter.
// `adjust` may change the layers before the model is built.
template <class Gen, class Adjust = void (*)(std::vector<Model::LayerPtr>&)>
void check_gradient(
    const Gen& gen, const Shape& input, const std::vector<LayerSpec>& specs, Loss loss,
    Adjust adjust = [](std::vector<Model::LayerPtr>&) {}) {
  const auto& axis = kpmap::Mesh::world().axis("devices");
  const auto data = generate_shard<double, Mem>(gen, 0, gen.samples, axis);
  auto layers = build_layers<double, Mem>(input, specs);
  adjust(layers);
  Model model(input, std::move(layers), loss, data.rows());
  model.initialize(5);
  const Kokkos::View<std::uint32_t*, Mem> none;
  auto loss_at = [&] {
    return model.loss_and_gradient(data, none, 0, data.rows(), gen.samples, axis).fetch().loss;
  };
  const double l0 = loss_at();
  const auto grad = to_host(model.grads().all);
  // The evaluation path gives the same loss as the training path.
  CHECK(std::abs(model.evaluate(data, axis).loss - l0) <= 1e-12 * std::abs(l0));
  const double h = 1e-6;
  double worst = 0;
  const auto p = model.params().all;
  for (std::size_t i = 0; i < grad.size(); ++i) {
    nudge(p, i, h);
    const double up = loss_at();
    nudge(p, i, -2 * h);
    const double down = loss_at();
    nudge(p, i, h);
    const double fd = (up - down) / (2 * h);
    const double err = std::abs(fd - grad[i]) / std::max(1e-3, std::abs(grad[i]));
    worst = std::max(worst, err);
  }
  INFO("worst relative error of the gradient against finite differences: " << worst);
  CHECK(worst < 1e-5);
}

}  // namespace

TEST_CASE("MLP gradients match finite differences (mse, tanh)", "[train][mlp]") {
  // 37 samples: uneven shards at 2, 3 and 4 ranks.
  check_gradient(SyntheticRegression{37, 3, 9, 0.1}, Shape::flat(3),
                 mlp_specs({3, 5, 4, 1}, "tanh"), Loss::mse);
}

TEST_CASE("MLP gradients match finite differences (cross-entropy, relu)", "[train][mlp]") {
  check_gradient(SyntheticClassification{41, 4, 3, 8}, Shape::flat(4), mlp_specs({4, 6, 3}, "relu"),
                 Loss::cross_entropy);
}

TEST_CASE("MLP gradients match finite differences (softmax regression, no hidden layer)",
          "[train][mlp]") {
  check_gradient(SyntheticClassification{29, 3, 4, 2}, Shape::flat(3), mlp_specs({3, 4}, "relu"),
                 Loss::cross_entropy);
}

TEST_CASE("conv2d (same, stride 1), relu, maxpool2d: gradients match finite differences",
          "[train][cnn]") {
  // Odd sizes: 7x5 images with 2 channels, pooled 2x2 (a row and a column cut off).
  const SyntheticImages gen(13, 7, 5, 2, 3, 4, 0.3);
  check_gradient(gen, Shape::hwc(7, 5, 2),
                 {conv(3, 3, 1, true), LayerSpec{"relu"}, pool("maxpool2d", 2),
                  LayerSpec{"flatten"}, dense(3)},
                 Loss::cross_entropy);
}

TEST_CASE("conv2d in chunks of samples (kept or made again): gradients match finite differences",
          "[train][cnn]") {
  // Host memory: the batch goes through im2col and the gemms a few samples
  // at a time. Chunks of 1 and of 3 samples (13 = 3 + 3 + 3 + 3 + 1 at one
  // rank), with the patches kept from the forward pass or made again.
  const SyntheticImages gen(13, 7, 5, 2, 3, 4, 0.3);
  const std::size_t per_sample = 7 * 5 * (3 * 3 * 2 + 1) * sizeof(double);
  for (const std::size_t samples : {1, 3}) {
    for (const bool keep : {false, true}) {
      INFO(samples << " samples a chunk, patches " << (keep ? "kept" : "made again"));
      check_gradient(gen, Shape::hwc(7, 5, 2),
                     {conv(3, 3, 1, true), LayerSpec{"relu"}, conv(2, 3, 2, false),
                      LayerSpec{"flatten"}, dense(3)},
                     Loss::cross_entropy, [&](std::vector<Model::LayerPtr>& layers) {
                       for (const std::size_t l : {0, 2}) {
                         auto& c = dynamic_cast<Conv2D<double, Mem>&>(*layers[l]);
                         c.set_host_chunking(samples * per_sample, keep ? 1 << 30 : 0);
                       }
                     });
    }
  }
}

TEST_CASE("conv2d (valid, stride 2), tanh, avgpool2d: gradients match finite differences",
          "[train][cnn]") {
  const SyntheticImages gen(11, 9, 8, 3, 2, 6, 0.3);
  check_gradient(gen, Shape::hwc(9, 8, 3),
                 {conv(4, 3, 2, false), LayerSpec{"tanh"}, pool("avgpool2d", 2),
                  LayerSpec{"flatten"}, dense(1)},
                 Loss::mse);
}

TEST_CASE(
    "two convolutions (same with stride 2, then valid) and two dense layers: gradients "
    "match finite differences",
    "[train][cnn]") {
  const SyntheticImages gen(10, 6, 7, 1, 4, 2, 0.3);
  check_gradient(gen, Shape::hwc(6, 7, 1),
                 {conv(2, 2, 2, true), LayerSpec{"tanh"}, conv(3, 2, 1, false),
                  LayerSpec{"flatten"}, dense(5), LayerSpec{"relu"}, dense(4)},
                 Loss::cross_entropy);
}

TEST_CASE("max pooling gives the gradient to the first of equal maxima; cut-off edges get none",
          "[train][cnn]") {
  // One 5x5 single-channel image: 2x2 windows, the last row and column cut off.
  MaxPool2D<double, Mem> pool(Shape::hwc(5, 5, 1), 2);
  pool.reserve(1);
  Layer<double, Mem>::Batch in("in", 1, 25), out("out", 1, 4), dout("dout", 1, 4),
      din("din", 1, 25);
  auto h = Kokkos::create_mirror_view(in);
  for (std::size_t i = 0; i < 25; ++i) h(0, i) = 1.0;  // every window is a tie
  h(0, 1 * 5 + 1) = 2.0;  // window (0, 0): its bottom-right element is the maximum
  Kokkos::deep_copy(in, h);
  Kokkos::deep_copy(dout, 1.0);
  using Exec = Kokkos::DefaultExecutionSpace;
  pool.forward(Exec(), in, out);
  pool.backward(Exec(), in, out, dout, din);
  auto o = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), din);
  CHECK(o(0, 0) == 2.0);
  CHECK(o(0, 1) == 1.0);
  for (std::size_t y = 0; y < 5; ++y) {
    for (std::size_t x = 0; x < 5; ++x) {
      const bool first_of_tie = (y == 0 || y == 2) && (x == 0 || x == 2) && !(y == 0 && x == 0);
      const bool maximum = y == 1 && x == 1;
      INFO("pixel (" << y << ", " << x << ")");
      CHECK(g(0, y * 5 + x) == (first_of_tie || maximum ? 1.0 : 0.0));
    }
  }
}

TEST_CASE(
    "a ReLU before max pooling, applied by the pooling layer, gives the loss and gradient of "
    "max pooling before the ReLU, bit for bit",
    "[train][cnn]") {
  // relu(maxpool(x)) = maxpool(relu(x)): the model skips a ReLU that the
  // pooling after it absorbs (the first order), and runs both layers in the
  // second. Odd sizes: a row and a column cut off by the pooling.
  const auto& axis = kpmap::Mesh::world().axis("devices");
  const SyntheticImages gen(17, 7, 9, 2, 3, 5, 0.3);
  const Shape input = Shape::hwc(7, 9, 2);
  const auto data = generate_shard<double, Mem>(gen, 0, gen.samples, axis);
  const Kokkos::View<std::uint32_t*, Mem> none;
  auto run = [&](bool relu_first) {
    const LayerSpec relu{"relu"}, max = pool("maxpool2d", 2);
    Model model(
        input,
        build_layers<double, Mem>(input, {conv(5, 3, 1, true), relu_first ? relu : max,
                                          relu_first ? max : relu, LayerSpec{"flatten"}, dense(3)}),
        Loss::cross_entropy, data.rows());
    model.initialize(9);
    const double loss =
        model.loss_and_gradient(data, none, 0, data.rows(), gen.samples, axis).fetch().loss;
    return std::make_pair(loss, to_host(model.grads().all));
  };
  const auto fused = run(true), apart = run(false);
  CHECK(fused.first == apart.first);
  CHECK(fused.second == apart.second);
}

TEST_CASE(
    "a first convolution computing its max pooling itself gives the pooling's output bit for "
    "bit and the gradients of the two layers apart",
    "[train][cnn]") {
  // Odd sizes (rows and columns cut off by the pooling), 37 filters (a
  // whole block of lanes and 5 more), 2 input channels; stride 1 and 2;
  // pooling 2 and 3; a ReLU between or not.
  using Exec = Kokkos::DefaultExecutionSpace;
  using Batch = Layer<double, Mem>::Batch;
  const Shape input = Shape::hwc(9, 11, 2);
  const std::size_t n = 3, filters = 37;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto fill = [&](const Batch& b) {
    auto h = Kokkos::create_mirror_view(b);
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j) h(i, j) = u(rng);
    Kokkos::deep_copy(b, h);
  };
  auto host = [](const auto& v) {
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  };
  for (const std::size_t stride : {1, 2}) {
    for (const std::size_t size : {2, 3}) {
      for (const bool relu : {false, true}) {
        INFO("stride " << stride << ", pooling " << size << (relu ? ", a ReLU between" : ""));
        Conv2D<double, Mem> apart(input, filters, 3, stride, true),
            fused(input, filters, 3, stride, true);
        MaxPool2D<double, Mem> pool_apart(apart.output_shape(), size),
            pool_fused(fused.output_shape(), size);
        if (relu) {
          REQUIRE(pool_apart.absorb_relu());
          REQUIRE(pool_fused.absorb_relu());
        }
        CHECK_FALSE(apart.absorb_next(pool_apart, true));  // an input gradient: no
        REQUIRE(fused.absorb_next(pool_fused, false));
        std::size_t count = 0;
        for (const auto& spec : fused.parameters()) count += spec.size();
        Kokkos::View<double*, Mem> params("params", count), g_apart("g_apart", count),
            g_fused("g_fused", count);
        apart.bind(params.data(), g_apart.data());
        fused.bind(params.data(), g_fused.data());
        apart.initialize(Exec(), 7, 0);
        Kokkos::deep_copy(Kokkos::subview(params, std::make_pair(count - filters, count)),
                          -0.6);  // negative biases: the ReLU cuts some maxima
        for (Layer<double, Mem>* l :
             std::initializer_list<Layer<double, Mem>*>{&apart, &pool_apart, &pool_fused, &fused})
          l->reserve(n);
        const std::size_t mid_size = apart.output_shape().size(),
                          out_size = pool_apart.output_shape().size();
        Batch in("in", n, input.size()), mid("mid", n, mid_size), dmid("dmid", n, mid_size),
            out_apart("out_apart", n, out_size), out_fused("out_fused", n, out_size),
            dout("dout", n, out_size);
        fill(in);
        fill(dout);
        apart.forward(Exec(), in, mid);
        pool_apart.forward(Exec(), mid, out_apart);
        fused.forward(Exec(), in, out_fused);
        const auto a = host(out_apart), f = host(out_fused);
        const auto wa = host(pool_apart.where()), wf = host(pool_fused.where());
        std::size_t differ = 0, zeros = 0;
        for (std::size_t s = 0; s < n; ++s)
          for (std::size_t j = 0; j < out_size; ++j) {
            differ += a(s, j) != f(s, j) || wa(s * out_size + j) != wf(s * out_size + j);
            zeros += f(s, j) == 0.0;
          }
        CHECK(differ == 0);
        CHECK((zeros > 0) == relu);  // the ReLU did cut some maxima
        for (const bool accumulate : {false, true}) {
          apart.accumulate_gradients(accumulate);
          fused.accumulate_gradients(accumulate);
          pool_apart.backward(Exec(), mid, out_apart, dout, dmid);
          apart.backward(Exec(), in, mid, dmid, Batch());
          fused.backward(Exec(), in, out_fused, dout, Batch());
          const auto ga = host(g_apart), gf = host(g_fused);
          double worst = 0, largest = 0;
          for (std::size_t i = 0; i < count; ++i) {
            worst = std::max(worst, std::abs(ga(i) - gf(i)));
            largest = std::max(largest, std::abs(ga(i)));
          }
          INFO((accumulate ? "added to the gradient" : "the gradient")
               << ": largest " << largest << ", largest difference " << worst);
          CHECK(largest > 0.1);
          CHECK(worst <= 1e-13 * largest);
        }
      }
    }
  }
  // Patches of 4 channels (37 columns): the gemm path, which does not fuse.
  Conv2D<double, Mem> wide(Shape::hwc(9, 11, 4), filters, 3, 1, true);
  MaxPool2D<double, Mem> after(wide.output_shape(), 2);
  CHECK_FALSE(wide.absorb_next(after, false));
}

TEST_CASE(
    "a fused first convolution and max pooling, then one apart: gradients match finite "
    "differences",
    "[train][cnn]") {
  // The first convolution (2 channels, 37 filters, stride 2, pooling 3)
  // computes its pooling itself; the second (its input gradient is needed)
  // runs apart from its own.
  const SyntheticImages gen(7, 13, 11, 2, 3, 4, 0.3);
  check_gradient(
      gen, Shape::hwc(13, 11, 2),
      {conv(37, 3, 2, true), LayerSpec{"relu"}, pool("maxpool2d", 3), conv(3, 2, 1, true),
       LayerSpec{"relu"}, pool("maxpool2d", 2), LayerSpec{"flatten"}, dense(3)},
      Loss::cross_entropy);
}

TEST_CASE("a CNN trained on every rank equals the same CNN trained on one rank", "[train][cnn]") {
  // 23 samples in batches of 8: the last batch is partial, and at 3 and 4
  // ranks some ranks hold none of a batch's samples.
  const SyntheticImages gen(23, 8, 8, 2, 3, 11, 0.2);
  const Shape input = Shape::hwc(8, 8, 2);
  const std::vector<LayerSpec> specs{conv(4, 3, 1, true),
                                     LayerSpec{"relu"},
                                     pool("maxpool2d", 2),
                                     conv(4, 3, 2, true),
                                     LayerSpec{"relu"},
                                     LayerSpec{"flatten"},
                                     dense(3)};
  OptimizerConfig config;
  config.kind = "adam";
  config.learning_rate = 1e-2;
  auto train = [&](kpmap::AxisRef axis) {
    const auto data = generate_shard<double, Mem>(gen, 0, gen.samples, axis);
    Model model(input, build_layers<double, Mem>(input, specs), Loss::cross_entropy, 8);
    model.initialize(3);
    Optimizer<double, Mem, FlatParams<double, Mem>> opt(config, model.params());
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      const auto plan =
          plan_epoch(Mem::execution_space(), gen.samples, data.begin, data.rows(), 8, 7, epoch);
      for (std::size_t k = 0; k < plan.batches; ++k) {
        model.loss_and_gradient(data, plan.order, plan.offsets[k], plan.offsets[k + 1],
                                plan.global_size(k), axis);
        opt.step(model.params(), model.grads());
      }
    }
    return to_host(model.params().all);
  };
  const auto here = train(kpmap::Mesh::world().axis("devices"));
  const kpmap::Mesh alone(MPI_COMM_SELF, "devices");
  const auto reference = train(alone.axis("devices"));
  REQUIRE(here.size() == reference.size());
  double worst = 0, moved = 0;
  for (std::size_t i = 0; i < here.size(); ++i) {
    worst =
        std::max(worst, std::abs(here[i] - reference[i]) / std::max(1.0, std::abs(reference[i])));
  }
  // The run did train: the parameters left their initial values.
  Model fresh(input, build_layers<double, Mem>(input, specs), Loss::cross_entropy, 1);
  fresh.initialize(3);
  const auto initial = to_host(fresh.params().all);
  for (std::size_t i = 0; i < here.size(); ++i)
    moved = std::max(moved, std::abs(here[i] - initial[i]));
  INFO("largest relative difference from the one-rank run: " << worst);
  CHECK(worst < 1e-12);
  CHECK(moved > 1e-3);
}

TEST_CASE("layers that do not fit their input are refused with both shapes", "[train][cnn]") {
  using Catch::Matchers::ContainsSubstring;
  const Shape img = Shape::hwc(4, 4, 1);
  auto build = [&](const std::vector<LayerSpec>& specs) { build_layers<double, Mem>(img, specs); };
  CHECK_THROWS_WITH(build({conv(2, 5, 1, false)}),
                    ContainsSubstring("layer 1 (conv2d: a 5x5 kernel with padding \"valid\" "
                                      "does not fit its 4x4x1 image input)"));
  CHECK_THROWS_WITH(build({dense(3)}), ContainsSubstring("dense: its input is a 4x4x1 image"));
  CHECK_THROWS_WITH(build({pool("maxpool2d", 2), pool("maxpool2d", 3)}),
                    ContainsSubstring("layer 2 (maxpool2d: a 3x3 window does not fit its 2x2x1"));
  CHECK_THROWS_WITH(build({LayerSpec{"conv3d"}}), ContainsSubstring("unknown type 'conv3d'"));
  auto model = [&](const std::vector<LayerSpec>& specs) {
    Model m(img, build_layers<double, Mem>(img, specs), Loss::cross_entropy, 4);
  };
  CHECK_THROWS_WITH(model({conv(2, 3, 1, true)}),
                    ContainsSubstring("the model's output is a 4x4x2 image"));
}

TEST_CASE("optimizer updates follow their closed forms", "[train]") {
  using Params = FlatParams<double, Mem>;
  auto run = [&](const std::string& kind, const std::vector<std::vector<double>>& grads) {
    Params p{Kokkos::View<double*, Mem>("p", 9)};
    Params g{Kokkos::View<double*, Mem>("g", 9)};
    auto h = Kokkos::create_mirror_view(p.all);
    for (std::size_t i = 0; i < 9; ++i) h(i) = std::sin(double(i));
    Kokkos::deep_copy(p.all, h);
    const auto p0 = to_host(p.all);
    OptimizerConfig c;
    c.kind = kind;
    c.learning_rate = 0.1;
    if (kind == "momentum") c.keys["momentum"] = 0.5;
    Optimizer<double, Mem, Params> opt(c, p);
    for (const auto& step : grads) {
      auto hg = Kokkos::create_mirror_view(g.all);
      for (std::size_t i = 0; i < step.size(); ++i) hg(i) = step[i];
      Kokkos::deep_copy(g.all, hg);
      opt.step(p, g);
    }
    return std::make_pair(p0, to_host(p.all));
  };
  const std::size_t n = 2 * 3 + 3;
  std::vector<double> g1(n), g2(n);
  for (std::size_t i = 0; i < n; ++i) {
    g1[i] = 0.3 * double(i) - 1.0;
    g2[i] = 0.7 - 0.2 * double(i);
  }
  {  // gd: p - lr g
    auto [p0, p1] = run("gd", {g1});
    for (std::size_t i = 0; i < n; ++i) CHECK(std::abs(p1[i] - (p0[i] - 0.1 * g1[i])) < 1e-15);
  }
  {  // momentum: v1 = g1, v2 = 0.5 g1 + g2; p2 = p0 - lr (v1 + v2)
    auto [p0, p2] = run("momentum", {g1, g2});
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(std::abs(p2[i] - (p0[i] - 0.1 * (g1[i] + 0.5 * g1[i] + g2[i]))) < 1e-14);
    }
  }
  {  // adam, first step: the bias-corrected moments are g and g^2, so the
     // step is lr g / (|g| + eps)
    auto [p0, p1] = run("adam", {g1});
    for (std::size_t i = 0; i < n; ++i) {
      const double expected = p0[i] - 0.1 * g1[i] / (std::abs(g1[i]) + 1e-8);
      CHECK(std::abs(p1[i] - expected) < 1e-13);
    }
  }
}

TEST_CASE("learning-rate schedules follow their closed forms", "[train]") {
  OptimizerConfig c;
  c.learning_rate = 0.4;
  c.warmup_steps = 4;
  CHECK(c.rate(1) == 0.1);  // linear warm-up: lr t / warmup
  CHECK(c.rate(4) == 0.4);
  CHECK(c.rate(100) == 0.4);  // then constant
  c.schedule = OptimizerConfig::Schedule::cosine;
  c.decay_steps = 10;
  CHECK(std::abs(c.rate(4 + 5) - 0.2) < 1e-15);  // half-way down the half cosine
  CHECK(std::abs(c.rate(4 + 10)) < 1e-15);       // 0 at the end, and after
  CHECK(std::abs(c.rate(4 + 20)) < 1e-15);
  c.schedule = OptimizerConfig::Schedule::step;
  c.decay_factor = 0.5;
  CHECK(c.rate(4 + 9) == 0.4);  // s = 9 < 10
  CHECK(c.rate(4 + 10) == 0.2);
  CHECK(c.rate(4 + 25) == 0.1);
  // The optimizer uses the step's rate: a gd step moves lr(t) g.
  FlatParams<double, Mem> p{Kokkos::View<double*, Mem>("p", 1)};
  FlatParams<double, Mem> g{Kokkos::View<double*, Mem>("g", 1)};
  Kokkos::deep_copy(g.all, 1.0);
  OptimizerConfig gd;
  gd.kind = "gd";
  gd.learning_rate = 0.4;
  gd.warmup_steps = 4;
  Optimizer<double, Mem, FlatParams<double, Mem>> opt(gd, p);
  opt.step(p, g);
  opt.step(p, g);
  CHECK(std::abs(to_host(p.all)[0] - -(0.1 + 0.2)) < 1e-15);
}

TEST_CASE("micro-batches of one step give the gradient of the whole batch", "[train][cnn]") {
  // 19 samples in one step: split in 3 micro-batches on each rank (some
  // empty at 4 ranks), the gradient and the loss are the whole batch's.
  const SyntheticImages gen(19, 6, 6, 2, 3, 5, 0.3);
  const Shape input = Shape::hwc(6, 6, 2);
  const std::vector<LayerSpec> specs{conv(3, 3, 1, true), LayerSpec{"relu"}, pool("avgpool2d", 2),
                                     LayerSpec{"flatten"}, dense(3)};
  const auto& axis = kpmap::Mesh::world().axis("devices");
  const auto data = generate_shard<double, Mem>(gen, 0, gen.samples, axis);
  const Kokkos::View<std::uint32_t*, Mem> none;
  Model whole(input, build_layers<double, Mem>(input, specs), Loss::cross_entropy,
              std::max<std::size_t>(data.rows(), 1));
  whole.initialize(4);
  const auto ref = whole.loss_and_gradient(data, none, 0, data.rows(), gen.samples, axis).fetch();
  Model parts(input, build_layers<double, Mem>(input, specs), Loss::cross_entropy, 7);
  parts.initialize(4);
  BatchStats got;
  const std::size_t n = data.rows();
  for (std::size_t m = 0; m < 3; ++m) {
    got = parts
              .loss_and_gradient(data, none, n * m / 3, n * (m + 1) / 3, gen.samples, axis, nullptr,
                                 {m == 0, m == 2})
              .fetch();
  }
  const auto a = to_host(whole.grads().all);
  const auto b = to_host(parts.grads().all);
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1e-3, std::abs(a[i])));
  }
  INFO("largest relative difference of the gradients: " << worst);
  CHECK(worst < 1e-12);
  CHECK(std::abs(got.loss - ref.loss) <= 1e-12 * ref.loss);
  CHECK(got.accuracy == ref.accuracy);
}

TEST_CASE(
    "mixed precision: the layers compute in the narrow type, the gradient and the update "
    "stay in the master type",
    "[train][cnn][mixed]") {
  // double master, float compute: the code path of float master and half_t
  // compute on a GPU, on every build. 19 samples in one batch: uneven
  // shards, an empty rank at 4 ranks.
  using Mixed = Sequential<double, Mem, float>;
  static_assert(Mixed::mixed && !Model::mixed);
  const SyntheticImages gen(19, 6, 6, 2, 3, 5, 0.3);
  const Shape input = Shape::hwc(6, 6, 2);
  const std::vector<LayerSpec> specs{conv(3, 3, 1, true), LayerSpec{"relu"}, pool("maxpool2d", 2),
                                     LayerSpec{"flatten"}, dense(3)};
  const auto& axis = kpmap::Mesh::world().axis("devices");
  const auto data = generate_shard<double, Mem>(gen, 0, gen.samples, axis);
  const Kokkos::View<std::uint32_t*, Mem> none;
  const std::size_t capacity = std::max<std::size_t>(data.rows(), 1);
  Mixed mixed(input, build_layers<float, Mem>(input, specs), Loss::cross_entropy, capacity);
  mixed.initialize(4);
  // The master copy starts from the compute copy's draws: float values.
  const auto p0 = to_host(mixed.params().all);
  bool representable = true;
  for (double v : p0) representable = representable && double(float(v)) == v;
  CHECK(representable);
  // The double model starts from the same values.
  Model ref(input, build_layers<double, Mem>(input, specs), Loss::cross_entropy, capacity);
  Kokkos::deep_copy(ref.params().all, mixed.params().all);

  auto gradient = [&](auto& model) {
    const auto s = model.loss_and_gradient(data, none, 0, data.rows(), gen.samples, axis).fetch();
    return std::make_pair(s, to_host(model.grads().all));
  };
  const auto [ref_stats, ref_grad] = gradient(ref);
  mixed.set_loss_scale(1);
  const auto [stats, g1] = gradient(mixed);
  mixed.set_loss_scale(1024);
  const auto g1024 = gradient(mixed).second;

  SECTION("a power-of-two loss scale is divided out exactly") { CHECK(g1 == g1024); }

  SECTION("the gradient is the double model's to float precision") {
    double worst = 0;
    for (std::size_t i = 0; i < ref_grad.size(); ++i) {
      worst =
          std::max(worst, std::abs(g1[i] - ref_grad[i]) / std::max(1e-3, std::abs(ref_grad[i])));
    }
    INFO("largest relative difference from the double gradient: " << worst);
    CHECK(worst < 1e-5);
    CHECK(worst > 0);  // the layers did compute in float
    CHECK(std::abs(stats.loss - ref_stats.loss) <= 1e-6 * ref_stats.loss);
  }

  SECTION("micro-batches add their gradients in the master type") {
    Mixed parts(input, build_layers<float, Mem>(input, specs), Loss::cross_entropy, 7);
    Kokkos::deep_copy(parts.params().all, mixed.params().all);
    parts.set_loss_scale(1024);
    const std::size_t n = data.rows();
    for (std::size_t m = 0; m < 3; ++m) {
      parts.loss_and_gradient(data, none, n * m / 3, n * (m + 1) / 3, gen.samples, axis, nullptr,
                              {m == 0, m == 2});
    }
    const auto b = to_host(parts.grads().all);
    double worst = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
      worst = std::max(worst, std::abs(b[i] - g1024[i]) / std::max(1e-3, std::abs(g1024[i])));
    }
    INFO("largest relative difference from the one-pass gradient: " << worst);
    CHECK(worst < 1e-5);
  }

  SECTION("training updates the master copy, and each step computes with it") {
    OptimizerConfig config;
    config.kind = "sgd";
    config.learning_rate = 0.5;
    Optimizer<double, Mem, FlatParams<double, Mem>> opt_ref(config, ref.params());
    Optimizer<double, Mem, FlatParams<double, Mem>> opt_mixed(config, mixed.params());
    BatchStats first, last;
    for (int k = 0; k < 10; ++k) {
      const auto s = ref.loss_and_gradient(data, none, 0, data.rows(), gen.samples, axis).fetch();
      last = mixed.loss_and_gradient(data, none, 0, data.rows(), gen.samples, axis).fetch();
      if (k == 0) first = last;
      INFO("step " << k);
      CHECK(std::abs(last.loss - s.loss) <= 1e-5 * s.loss);
      opt_ref.step(ref.params(), ref.grads());
      opt_mixed.step(mixed.params(), mixed.grads());
    }
    const auto a = to_host(ref.params().all);
    const auto b = to_host(mixed.params().all);
    double worst = 0, moved = 0;
    bool narrow = true;
    for (std::size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::abs(a[i] - b[i]));
      moved = std::max(moved, std::abs(b[i] - p0[i]));
      narrow = narrow && double(float(b[i])) == b[i];
    }
    INFO("largest difference from the double run after 10 steps: " << worst);
    CHECK(worst < 1e-5);
    CHECK(moved > 1e-2);
    CHECK(!narrow);  // the master copy holds more than float's digits
    CHECK(last.loss < first.loss);
    // Evaluation computes with the master's current values too.
    CHECK(std::abs(mixed.evaluate(data, axis).loss - ref.evaluate(data, axis).loss) <=
          1e-5 * last.loss);
  }
}

// ---- a program's own layer ------------------------------------------------------
// The mechanism examples/10_custom_layer.cpp uses: a layer defined and
// registered in this file, with a key of its own.
namespace {

template <class T, class M>
struct ScaleKernel {
  Kokkos::View<T**, Kokkos::LayoutRight, M> a;
  T factor;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const { a.data()[i] *= factor; }
};

// y = factor x, in place (so backward scales the gradient the same way).
template <class T, class M>
class Scale final : public Layer<T, M> {
 public:
  using typename Layer<T, M>::Batch;
  using typename Layer<T, M>::Exec;
  Scale(Shape input, const kpmap::deck::Settings& keys)
      : Layer<T, M>(input), factor_(static_cast<T>(keys.real("factor"))) {}
  std::string type() const override { return "scale"; }
  Shape output_shape() const override { return this->input_; }
  bool in_place() const override { return true; }
  void forward(const Exec& exec, const Batch& in, const Batch&) override {
    Kokkos::parallel_for("test::scale::forward", Kokkos::RangePolicy<Exec>(exec, 0, in.size()),
                         ScaleKernel<T, M>{in, factor_});
  }
  void backward(const Exec& exec, const Batch&, const Batch&, const Batch& dout,
                const Batch& din) override {
    if (din.data() == nullptr) return;
    Kokkos::parallel_for("test::scale::backward", Kokkos::RangePolicy<Exec>(exec, 0, dout.size()),
                         ScaleKernel<T, M>{dout, factor_});
  }

 private:
  T factor_;
};

KPMAP_TRAIN_REGISTER_LAYER(Scale, {"scale", "y = factor x",
                                   kpmap::deck::Schema("scale").real("factor", 1.0, {-10.0, 10.0},
                                                                     "", "the factor")});

// The names of the KPMAP_TRAIN_BUILTIN_* lines (`macro`) in the files of
// src/kpmap/train/`folder`, read from the sources: a built-in the registry
// missed would pass no deck.
std::set<std::string> builtin_names(const std::string& folder, const std::string& macro) {
  std::set<std::string> names;
  const std::string start = "\n" + macro + "(";
  for (const auto& entry :
       std::filesystem::directory_iterator(KPMAP_SOURCE_DIR "/src/kpmap/train/" + folder)) {
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (auto at = text.find(start); at != std::string::npos; at = text.find(start, at + 1)) {
      const auto name = text.find_first_not_of(" \n", at + start.size());
      names.insert(text.substr(name, text.find(',', name) - name));
    }
  }
  return names;
}

kpmap::deck::Deck train_deck(const std::string& layers) {
  return kpmap::deck::parse(
      train_schema(), "[model]\nkind = \"sequential\"\nlayers = [" + layers + "]\n", "test.toml");
}

}  // namespace

TEST_CASE("a program's own layer is named by decks, its keys checked, its gradient right",
          "[train][layers]") {
  using Catch::Matchers::ContainsSubstring;
  using Catch::Matchers::StartsWith;
  const auto schema = train_schema();
  REQUIRE(schema.find("model.layers.1.factor") != nullptr);
  CHECK(schema.find("model.layers.1.factor")->description == "scale: the factor");
  const MPI_Comm comm = MPI_COMM_WORLD;
  auto c = from_deck(train_deck("{type = \"dense\", units = 3}, {type = \"scale\", factor = -0.5},"
                                " {type = \"dense\", units = 1}"),
                     comm);
  REQUIRE(c.layers.size() == 3);
  CHECK(std::get<double>(c.layers[1].keys.at("factor")) == -0.5);
  // The default, a value out of range (file and line), a misspelling, the
  // key on a layer that does not read it, and a required key left out.
  c = from_deck(train_deck("{type = \"scale\"}, {type = \"dense\", units = 1}"), comm);
  CHECK(std::get<double>(c.layers[0].keys.at("factor")) == 1.0);
  CHECK_THROWS_WITH(from_deck(train_deck("{type = \"scale\", factor = 11.0}"), comm),
                    StartsWith("test.toml:") && ContainsSubstring("model.layers.1.factor"));
  CHECK_THROWS_WITH(from_deck(train_deck("{type = \"scale\", factr = 2.0}"), comm),
                    ContainsSubstring("did you mean 'model.layers.1.factor'"));
  CHECK_THROWS_WITH(
      from_deck(train_deck("{type = \"relu\", factor = 2.0}, {type = \"dense\", units = 1}"), comm),
      ContainsSubstring("a relu layer has no factor, it would have no effect"));
  // A resolved deck (deck.toml: every layer with every key, the defaults of
  // other types' keys included) reads back as the run it came from.
  const std::string resolved =
      train_deck(
          "{type = \"dense\", units = 3}, {type = \"scale\", factor = -0.5},"
          " {type = \"dense\", units = 1}")
          .to_toml();
  c = from_deck(kpmap::deck::parse(schema, resolved, "deck.toml"), comm);
  REQUIRE(c.layers.size() == 3);
  CHECK(std::get<long long>(c.layers[0].keys.at("units")) == 3);
  CHECK(std::get<double>(c.layers[1].keys.at("factor")) == -0.5);
  CHECK_THROWS_WITH(from_deck(train_deck("{type = \"scale\"}, {type = \"dense\"}"), comm),
                    ContainsSubstring("key 'model.layers.2.units': a dense layer needs units"));
  // Built by name, its backward pass against finite differences.
  const LayerSpec scale{"scale", {{"factor", -0.7}}};
  check_gradient(SyntheticRegression{23, 3, 4, 0.1}, Shape::flat(3),
                 {dense(4), scale, LayerSpec{"tanh"}, dense(1)}, Loss::mse);
  // A key it does not declare, a name given twice, a key without a default,
  // a key declared otherwise by another layer, a name that is no deck word.
  const std::vector<LayerSpec> misspelt{{"scale", {{"factr", 1.0}}}};
  CHECK_THROWS_WITH((build_layers<double, Mem>(Shape::flat(2), misspelt)),
                    ContainsSubstring("layer 1 (scale)") && ContainsSubstring("factr"));
  CHECK_THROWS_WITH(register_layer<Scale>({"scale", "again"}),
                    ContainsSubstring("a layer named 'scale' is registered already"));
  CHECK_THROWS_WITH(register_layer<Scale>({"scale2", "",
                                           kpmap::deck::Schema("scale2").real(
                                               "factor", std::nullopt, {}, "", "required")}),
                    ContainsSubstring("key 'factor' of layer 'scale2' has no default"));
  CHECK_THROWS_WITH(
      register_layer<Scale>(
          {"scale3", "", kpmap::deck::Schema("scale3").real("factor", 2.0, {}, "", "other")}),
      ContainsSubstring("declared by scale and by scale3"));
  CHECK_THROWS_WITH(register_layer<Scale>({"Scale 4", ""}), ContainsSubstring("not a deck word"));
}

TEST_CASE("every built-in layer header registers its layer, and decks name each",
          "[train][layers]") {
  std::set<std::string> in_files = builtin_names("layers", "KPMAP_TRAIN_BUILTIN_LAYER");
  REQUIRE(in_files.size() >= 7);
  in_files.insert("scale");  // this program's own, above
  std::set<std::string> registered;
  for (const LayerInfo* l : registered_layers()) registered.insert(l->name);
  CHECK(registered == in_files);
  const auto schema = train_schema();
  const auto& choices = schema.find("model.layers.1.type")->choices;
  CHECK(std::set<std::string>(choices.begin(), choices.end()) == in_files);
}

// ---- a program's own optimizer --------------------------------------------------
namespace {

template <class T, class M>
struct AccumulateKernel {
  kpmap::detail::flat_view_t<T, M> p;
  kpmap::detail::flat_view_t<const T, M> g;
  kpmap::detail::flat_view_t<T, M> s;
  T step;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    s(i) += g(i);
    p(i) -= step * s(i);
  }
};

// s += g; p -= lr gain s: a state array ("s") and a key ("gain") of its own.
template <class T, class M>
class Accumulate final : public UpdateRule<T, M> {
 public:
  using typename UpdateRule<T, M>::Exec;
  using typename UpdateRule<T, M>::Flat;
  using typename UpdateRule<T, M>::ConstFlat;
  explicit Accumulate(const kpmap::deck::Settings& keys)
      : gain_(static_cast<T>(keys.real("gain"))) {}
  void apply(const Exec& exec, long long, T lr, const Flat& p, const ConstFlat& g,
             const Flat* state) const override {
    Kokkos::parallel_for("test::accumulate", Kokkos::RangePolicy<Exec>(exec, 0, p.size()),
                         AccumulateKernel<T, M>{p, g, state[0], lr * gain_});
  }

 private:
  T gain_;
};

KPMAP_TRAIN_REGISTER_OPTIMIZER(
    Accumulate,
    {"accumulate",
     "s += g, p -= lr gain s",
     kpmap::deck::Schema("accumulate").real("gain", 1.0, {0.0, 10.0}, "", "the factor of s"),
     {"s"}});

kpmap::deck::Deck optimizer_deck(const std::string& keys) {
  return kpmap::deck::parse(train_schema(), "[optimizer]\n" + keys + "\n", "test.toml");
}

}  // namespace

TEST_CASE("a program's own optimizer is named by decks, its keys checked, its update applied",
          "[train][optimizer]") {
  using Catch::Matchers::ContainsSubstring;
  using Catch::Matchers::StartsWith;
  const auto schema = train_schema();
  REQUIRE(schema.find("optimizer.gain") != nullptr);
  CHECK(schema.find("optimizer.gain")->description == "accumulate: the factor of s");
  const MPI_Comm comm = MPI_COMM_WORLD;
  auto c = from_deck(optimizer_deck("kind = \"accumulate\"\ngain = 2.5"), comm);
  CHECK(c.optimizer.kind == "accumulate");
  CHECK(std::get<double>(c.optimizer.keys.at("gain")) == 2.5);
  CHECK_THROWS_WITH(from_deck(optimizer_deck("kind = \"accumulate\"\ngain = 12.0"), comm),
                    StartsWith("test.toml:") && ContainsSubstring("optimizer.gain"));
  CHECK_THROWS_WITH(from_deck(optimizer_deck("kind = \"adam\"\ngain = 2.0"), comm),
                    ContainsSubstring("optimizer.kind = \"adam\" reads no gain, it would have no "
                                      "effect (gain is read by accumulate)"));
  CHECK_THROWS_WITH(from_deck(optimizer_deck("kind = \"sgd\"\nmomentum = 0.5"), comm),
                    ContainsSubstring("(momentum is read by momentum)"));
  // A resolved deck (every kind's keys at their defaults) reads back.
  c = from_deck(kpmap::deck::parse(schema, optimizer_deck("kind = \"adam\"\nbeta1 = 0.8").to_toml(),
                                   "deck.toml"),
                comm);
  CHECK(c.optimizer.kind == "adam");
  CHECK(std::get<double>(c.optimizer.keys.at("beta1")) == 0.8);
  CHECK(c.optimizer.keys.count("gain") == 0);
  // Two steps against the closed form: p2 = p0 - lr gain (2 g1 + g2).
  using Params = FlatParams<double, Mem>;
  Params p{Kokkos::View<double*, Mem>("p", 3)}, g{Kokkos::View<double*, Mem>("g", 3)};
  Kokkos::deep_copy(p.all, 1.0);
  OptimizerConfig config;
  config.kind = "accumulate";
  config.keys["gain"] = 2.0;
  config.learning_rate = 0.1;
  Optimizer<double, Mem, Params> opt(config, p);
  REQUIRE(opt.state().size() == 1);
  CHECK(opt.state()[0].first == "s");
  const double g1 = 0.5, g2 = -1.5;
  Kokkos::deep_copy(g.all, g1);
  opt.step(p, g);
  Kokkos::deep_copy(g.all, g2);
  opt.step(p, g);
  for (double v : to_host(p.all)) CHECK(std::abs(v - (1.0 - 0.1 * 2.0 * (2 * g1 + g2))) < 1e-15);
  // A key it does not declare; registration errors as for layers.
  config.keys["gian"] = 1.0;
  CHECK_THROWS_WITH((Optimizer<double, Mem, Params>(config, p)), ContainsSubstring("gian"));
  CHECK_THROWS_WITH(register_optimizer<Accumulate>({"accumulate", "again"}),
                    ContainsSubstring("an optimizer named 'accumulate' is registered already"));
}

TEST_CASE("every built-in optimizer header registers its optimizer", "[train][optimizer]") {
  std::set<std::string> in_files = builtin_names("optimizers", "KPMAP_TRAIN_BUILTIN_OPTIMIZER");
  REQUIRE(in_files.size() >= 4);
  in_files.insert("accumulate");  // this program's own, above
  std::set<std::string> registered;
  for (const OptimizerInfo* o : registered_optimizers()) registered.insert(o->name);
  CHECK(registered == in_files);
}

// ---- a program's own loss -------------------------------------------------------
namespace {

template <class C, class M, class A>
struct HuberDelta {
  using value_type = double[];
  unsigned value_count = 2;
  Kokkos::View<const C**, Kokkos::LayoutRight, M> z;
  Kokkos::View<const A*, M> y;
  Kokkos::View<C**, Kokkos::LayoutRight, M> delta;
  A scale, d;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k, double* stats) const {
    const A r = static_cast<A>(z(k, 0)) - y(k);
    const A a = r < A(0) ? -r : r;
    delta(k, 0) = static_cast<C>(scale * (a <= d ? r : (r < A(0) ? -d : d)));
    stats[0] += static_cast<double>(a <= d ? r * r / 2 : d * (a - d / 2));
  }
};

// Huber's loss on one output, with its threshold as a key of its own.
template <class C, class M, class A>
class Huber final : public LossFunction<C, M, A> {
  using Base = LossFunction<C, M, A>;

 public:
  explicit Huber(const kpmap::deck::Settings& keys)
      : d_(static_cast<A>(keys.real("huber_delta"))) {}
  void delta_and_sums(const typename Base::Exec& exec, const typename Base::Scores& z,
                      const typename Base::Targets& y, const typename Base::Deltas& delta, A scale,
                      const typename Base::Sums& sums) const override {
    Kokkos::parallel_reduce("test::huber",
                            Kokkos::RangePolicy<typename Base::Exec>(exec, 0, z.extent(0)),
                            HuberDelta<C, M, A>{2, z, y, delta, scale, d_}, sums);
  }

 private:
  A d_;
};

KPMAP_TRAIN_REGISTER_LOSS(Huber, {"huber", "Huber's loss on one output", false, 1,
                                  kpmap::deck::Schema("huber").real("huber_delta", 1.0, {1e-6, 1e6},
                                                                    "", "quadratic below this")});

}  // namespace

TEST_CASE("a program's own loss is named by decks, its keys checked, its gradient right",
          "[train][loss]") {
  using Catch::Matchers::ContainsSubstring;
  const auto schema = train_schema();
  REQUIRE(schema.find("model.huber_delta") != nullptr);
  const MPI_Comm comm = MPI_COMM_WORLD;
  auto parse = [&](const std::string& model) {
    return kpmap::deck::parse(schema, "[model]\nkind = \"mlp\"\n" + model + "\n", "test.toml");
  };
  auto c = from_deck(parse("loss = \"huber\"\nhuber_delta = 0.25"), comm);
  CHECK(c.loss == "huber");
  CHECK(!c.data.classification);
  CHECK(std::get<double>(c.loss_keys.at("huber_delta")) == 0.25);
  CHECK(c.layers.back().keys.at("units") == kpmap::deck::Value(1LL));  // its one output
  CHECK_THROWS_WITH(from_deck(parse("loss = \"mse\"\nhuber_delta = 0.25"), comm),
                    ContainsSubstring("model.loss = \"mse\" reads no huber_delta"));
  // A resolved deck reads back.
  c = from_deck(kpmap::deck::parse(schema, parse("loss = \"huber\"").to_toml(), "deck.toml"), comm);
  CHECK(c.loss == "huber");
  // Its gradient against finite differences, residuals on both sides of
  // the threshold (the targets are about 1 in size).
  check_gradient(SyntheticRegression{31, 3, 5, 0.1}, Shape::flat(3), mlp_specs({3, 5, 1}, "tanh"),
                 Loss{"huber", {{"huber_delta", 0.4}}});
  CHECK_THROWS_WITH(register_loss<Huber>({"huber", "again", false, 1}),
                    ContainsSubstring("a loss named 'huber' is registered already"));
  CHECK_THROWS_WITH((Model(Shape::flat(3), build_layers<double, Mem>(Shape::flat(3), {dense(2)}),
                           Loss{"huber"}, 4)),
                    ContainsSubstring("huber reads 1 output, and the last layer gives 2 features"));
}

TEST_CASE("every built-in loss header registers its loss", "[train][loss]") {
  std::set<std::string> in_files = builtin_names("losses", "KPMAP_TRAIN_BUILTIN_LOSS");
  REQUIRE(in_files.size() >= 2);
  in_files.insert("huber");  // this program's own, above
  std::set<std::string> registered;
  for (const LossInfo* l : registered_losses()) registered.insert(l->name);
  CHECK(registered == in_files);
}
