// SPDX-License-Identifier: BSD-3-Clause
// Every layer's hand-written backward pass against central finite
// differences of the model's own loss, at every rank count (the gradient is
// the global batch mean); a model trained at this rank count against the
// same model trained alone on every rank; max pooling's tie rule; micro-batches.
// (The optimizers: test_train_optimizers.cpp; the registries and a program's
// own pieces: test_train_registry.cpp; one executable.)

#include "support/mpi_test.hpp"
#include "support/train_checks.hpp"

#include <kpmap/runtime/mesh.hpp>
#include <kpmap/train/batches.hpp>
#include <kpmap/train/config.hpp>
#include <kpmap/train/layers/conv2d.hpp>
#include <kpmap/train/layers/maxpool2d.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/optimizers/optimizer.hpp>
#include <kpmap/train/sequential.hpp>
// Sequential<double, Mem, float> (mixed precision on every build) is compiled here.
#include <kpmap/train/sequential_def.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace kpmap::train;
using namespace train_checks;

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

}  // namespace

namespace {

using Batch = Layer<double, Mem>::Batch;

Batch filled(std::size_t rows, std::size_t cols, double offset) {
  Batch b("b", rows, cols);
  auto h = Kokkos::create_mirror_view(b);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) h(i, j) = std::sin(1.7 * double(i * cols + j) + offset);
  }
  Kokkos::deep_copy(b, h);
  return b;
}
Batch copy(const Batch& b) {
  Batch c("c", b.extent(0), b.extent(1));
  Kokkos::deep_copy(c, b);
  return c;
}
bool same(const Batch& a, const Batch& b) {
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  return std::equal(ha.data(), ha.data() + ha.size(), hb.data(), hb.data() + hb.size());
}
std::size_t count_of(const Batch& a, double v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  return static_cast<std::size_t>(std::count(h.data(), h.data() + h.size(), v));
}

}  // namespace

TEST_CASE("every registered layer writes out and din when given buffers of their own",
          "[train][layers]") {
  // A layer driven by hand, as layer.hpp documents it: forward writes `out`
  // from `in`, backward `din` from `dout`, each left as it was; against the
  // same layer driven as the model drives it (in and out the same storage
  // for a layer that works in place), whose results the gradient checks above
  // hold. Every registered type needs its row here.
  const std::map<std::string, std::pair<Shape, LayerSpec>> cases = {
      {"dense", {Shape::flat(6), LayerSpec{"dense", {{"units", 4LL}}}}},
      {"relu", {Shape::flat(6), LayerSpec{"relu"}}},
      {"tanh", {Shape::flat(6), LayerSpec{"tanh"}}},
      {"flatten", {Shape::hwc(4, 3, 2), LayerSpec{"flatten"}}},
      {"conv2d", {Shape::hwc(6, 5, 2), conv(3, 3, 1, true)}},
      {"maxpool2d", {Shape::hwc(6, 4, 2), pool("maxpool2d", 2)}},
      {"avgpool2d", {Shape::hwc(6, 4, 2), pool("avgpool2d", 2)}},
      // test_train_registry.cpp's own layer, in this executable too.
      {"scale", {Shape::flat(5), LayerSpec{"scale", {{"factor", 2.5}}}}},
  };
  const Layer<double, Mem>::Exec exec;
  const std::size_t rows = 3;
  const double sentinel = 12345.0;
  for (const std::string& type : layer_types()) {
    CAPTURE(type);
    REQUIRE(cases.count(type) == 1);
    const auto& [input, spec] = cases.at(type);
    // Two instances with the same parameters: one driven by hand, one as the model does.
    std::vector<std::unique_ptr<Layer<double, Mem>>> pair;
    std::vector<Kokkos::View<double*, Mem>> params, grads;
    for (int k = 0; k < 2; ++k) {
      auto built = build_layers<double, Mem>(input, {spec});
      std::size_t n = 0;
      for (const auto& ps : built[0]->parameters()) n += ps.size();
      params.emplace_back("p", std::max<std::size_t>(n, 1));
      grads.emplace_back("g", std::max<std::size_t>(n, 1));
      built[0]->bind(params.back().data(), grads.back().data());
      built[0]->initialize(exec, 11, 0);
      built[0]->reserve(rows);
      pair.push_back(std::move(built[0]));
    }
    Layer<double, Mem>& mine = *pair[0];
    Layer<double, Mem>& model = *pair[1];
    const std::size_t n_in = input.size(), n_out = mine.output_shape().size();

    const Batch in = filled(rows, n_in, 0.3), in0 = copy(in);
    Batch out("out", rows, n_out);
    Kokkos::deep_copy(out, sentinel);
    mine.forward(exec, in, out);
    Batch model_in = copy(in0);
    Batch model_out = model.in_place() ? model_in : Batch("model_out", rows, n_out);
    model.forward(exec, model_in, model_out);
    exec.fence();
    CHECK(same(in, in0));
    CHECK(count_of(out, sentinel) == 0);
    CHECK(same(out, model_out));

    const Batch dout = filled(rows, n_out, 1.1), dout0 = copy(dout);
    Batch din("din", rows, n_in);
    Kokkos::deep_copy(din, sentinel);
    mine.backward(exec, in, out, dout, din);
    Batch model_dout = copy(dout0);
    Batch model_din = model.in_place() ? model_dout : Batch("model_din", rows, n_in);
    model.backward(exec, model_in, model_out, model_dout, model_din);
    exec.fence();
    CHECK(same(dout, dout0));
    CHECK(count_of(din, sentinel) == 0);
    CHECK(same(din, model_din));
    CHECK(same(Batch(grads[0].data(), grads[0].size(), 1),
               Batch(grads[1].data(), grads[1].size(), 1)));
  }
}

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

TEST_CASE(
    "conv2d by Winograd's F(2x2, 3x3): gradients match finite differences through both of "
    "its convolutions (the forward and the input gradient's), same and valid padding",
    "[train][cnn]") {
  // 4 and 6 input channels: patches of 37 and 55 columns, which the gemm
  // path would multiply; the second layer's input gradient is the first's
  // output gradient. Odd sizes: tiles half outside the output.
  const SyntheticImages gen(9, 7, 5, 4, 3, 8, 0.3);
  check_gradient(
      gen, Shape::hwc(7, 5, 4),
      {conv(6, 3, 1, true), LayerSpec{"tanh"}, conv(3, 3, 1, false), LayerSpec{"flatten"},
       dense(3)},
      Loss::cross_entropy, [&](std::vector<Model::LayerPtr>& layers) {
        for (const std::size_t l : {0, 2}) {
          auto& c = dynamic_cast<Conv2D<double, Mem>&>(*layers[l]);
          REQUIRE(c.winograd() == Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible);
          // 2 samples a chunk: several chunks of the Winograd kernels
          c.set_host_chunking(2 * 16 * 12 * (4 + 6) * sizeof(double), 0);
        }
      });
}

TEST_CASE(
    "conv2d by Winograd's F(2x2, 3x3) gives im2col's outputs, input gradient and weight "
    "gradient within rounding",
    "[train][cnn]") {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Batch = Layer<double, Mem>::Batch;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto random = [&](const std::string& label, std::size_t rows, std::size_t cols) {
    Batch b(label, rows, cols);
    auto h = Kokkos::create_mirror_view(b);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) h(i, j) = u(rng);
    Kokkos::deep_copy(b, h);
    return b;
  };
  auto host = [](const auto& v) {
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  };
  // The largest difference against the largest value, over all elements.
  auto relative = [](const auto& a, const auto& b) {
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::abs(a.data()[i] - b.data()[i]));
      largest = std::max(largest, std::abs(a.data()[i]));
    }
    REQUIRE(largest > 0.1);
    return worst / largest;
  };
  const std::size_t n = 5, filters = 19;  // more than a vector's lanes, not a multiple
  for (const bool same : {true, false}) {
    for (const std::size_t channels : {4, 21}) {
      INFO((same ? "same" : "valid") << " padding, " << channels << " channels");
      const Shape input = Shape::hwc(7, 6, channels);
      Conv2D<double, Mem> wino(input, filters, 3, 1, same), gemm(input, filters, 3, 1, same);
      gemm.set_winograd(false);
      REQUIRE_FALSE(gemm.winograd());
      REQUIRE(wino.winograd() == Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible);
      wino.set_host_chunking(1, 0);  // one sample a chunk
      std::size_t count = 0;
      for (const auto& spec : wino.parameters()) count += spec.size();
      const Batch params = random("params", 1, count);
      Kokkos::View<double*, Mem> g_wino("g_wino", count), g_gemm("g_gemm", count);
      wino.bind(params.data(), g_wino.data());
      gemm.bind(params.data(), g_gemm.data());
      wino.reserve(n);
      gemm.reserve(n);
      const std::size_t out_size = wino.output_shape().size();
      const Batch in = random("in", n, input.size()), dout = random("dout", n, out_size);
      Batch out_wino("out_wino", n, out_size), out_gemm("out_gemm", n, out_size),
          din_wino("din_wino", n, input.size()), din_gemm("din_gemm", n, input.size());
      for (const bool accumulate : {false, true}) {  // the second adds to the first
        wino.forward(Exec(), in, out_wino);
        gemm.forward(Exec(), in, out_gemm);  // its backward pass overwrites its patches
        CHECK(relative(host(out_gemm), host(out_wino)) < 1e-14);
        wino.accumulate_gradients(accumulate);
        gemm.accumulate_gradients(accumulate);
        wino.backward(Exec(), in, out_wino, dout, din_wino);
        gemm.backward(Exec(), in, out_gemm, dout, din_gemm);
        CHECK(relative(host(din_gemm), host(din_wino)) < 1e-14);
        CHECK(relative(host(g_gemm), host(g_wino)) < 1e-14);
      }
    }
  }
  // Stride 2, a 5x5 kernel, 2 channels (the direct product): im2col's.
  CHECK_FALSE(Conv2D<double, Mem>(Shape::hwc(7, 6, 8), filters, 3, 2, true).winograd());
  CHECK_FALSE(Conv2D<double, Mem>(Shape::hwc(7, 6, 8), filters, 5, 1, true).winograd());
  CHECK_FALSE(Conv2D<double, Mem>(Shape::hwc(7, 6, 2), filters, 3, 1, true).winograd());
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

TEST_CASE("sharded parameters: each rank keeps its part, drawn and trained as the whole model's",
          "[train][cnn]") {
  // 19 samples at 1 to 4 ranks: the part of a model sharded before it
  // draws its weights is that of the whole model, and so is its gradient
  // part, to rounding (the reduce-scatter may add the ranks in another order
  // than the psum); evaluation gathers the parameters too.
  const SyntheticImages gen(19, 6, 6, 2, 3, 5, 0.3);
  const Shape input = Shape::hwc(6, 6, 2);
  const std::vector<LayerSpec> specs{
      conv(3, 3, 1, true), LayerSpec{"relu"}, pool("maxpool2d", 2), LayerSpec{"flatten"}, dense(4),
      LayerSpec{"tanh"},   dense(3)};
  const auto& axis = kpmap::Mesh::world().axis("devices");
  const auto data = generate_shard<double, Mem>(gen, 0, gen.samples, axis);
  const Kokkos::View<std::uint32_t*, Mem> none;
  const std::size_t cap = std::max<std::size_t>(data.rows(), 1);
  Model whole(input, build_layers<double, Mem>(input, specs), Loss::cross_entropy, cap);
  whole.initialize(4);
  const auto ref = whole.loss_and_gradient(data, none, 0, data.rows(), gen.samples, axis).fetch();
  const auto ref_eval = whole.evaluate(data, axis);
  Model sharded(input, build_layers<double, Mem>(input, specs), Loss::cross_entropy, cap);
  sharded.shard_parameters(axis);
  CHECK(sharded.parameters_sharded());
  CHECK(sharded.gradients_sharded());
  CHECK(sharded.params().all.size() == 0);
  sharded.initialize(4);
  const kpmap::BlockPartition split(whole.parameter_count(), axis.size());
  const auto lo = split.begin(axis.index());
  REQUIRE(sharded.parameter_part().size() == split.count(axis.index()));
  const auto all = to_host(whole.params().all);
  CHECK(to_host(sharded.parameter_part()) ==
        std::vector<double>(all.begin() + long(lo),
                            all.begin() + long(lo + split.count(axis.index()))));
  const auto got = sharded.loss_and_gradient(data, none, 0, data.rows(), gen.samples, axis).fetch();
  CHECK(std::abs(got.loss - ref.loss) <= 1e-12 * ref.loss);
  const auto g = to_host(whole.grads().all);
  const auto part = to_host(sharded.gradient_part());
  double worst = 0;
  for (std::size_t i = 0; i < part.size(); ++i) {
    worst = std::max(worst, std::abs(part[i] - g[lo + i]) / std::max(1e-3, std::abs(g[lo + i])));
  }
  INFO("largest relative difference of the gradient parts: " << worst);
  CHECK(worst < 1e-12);
  const auto e = sharded.evaluate(data, axis);
  CHECK(std::abs(e.loss - ref_eval.loss) <= 1e-12 * ref_eval.loss);
  CHECK(e.confusion == ref_eval.confusion);
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
