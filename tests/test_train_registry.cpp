// SPDX-License-Identifier: BSD-3-Clause
// The registries of layers, optimizers and losses: a program's own piece of
// each is named by decks, its keys checked and its arithmetic right, and every
// built-in header's registration is in the registry (part of the
// test_train_model executable).

#include "support/mpi_test.hpp"
#include "support/train_checks.hpp"

#include <kpmap_builtin_names.hpp>

#include <kpmap/runtime/mesh.hpp>
#include <kpmap/train.hpp>
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
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace kpmap::train;
using namespace train_checks;

}  // namespace

// ---- a program's own layer ------------------------------------------------------
// The mechanism examples/10_custom_layer.cpp uses: a layer defined and
// registered in this file, with a key of its own.
namespace {

// to = factor from; the two the same storage in a model, which runs it in place.
template <class T, class M>
struct ScaleKernel {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> from;
  Kokkos::View<T**, Kokkos::LayoutRight, M> to;
  T factor;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    to.data()[i] = factor * from.data()[i];
  }
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
  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    Kokkos::parallel_for("test::scale::forward", Kokkos::RangePolicy<Exec>(exec, 0, in.size()),
                         ScaleKernel<T, M>{in, out, factor_});
  }
  void backward(const Exec& exec, const Batch&, const Batch&, const Batch& dout,
                const Batch& din) override {
    if (din.data() == nullptr) return;
    Kokkos::parallel_for("test::scale::backward", Kokkos::RangePolicy<Exec>(exec, 0, dout.size()),
                         ScaleKernel<T, M>{dout, din, factor_});
  }

 private:
  T factor_;
};

KPMAP_TRAIN_REGISTER_LAYER(Scale, {"scale", "y = factor x",
                                   kpmap::deck::Schema("scale").real("factor", 1.0, {-10.0, 10.0},
                                                                     "", "the factor")});

// The names of the KPMAP_TRAIN_BUILTIN_* lines the build found (the list its
// generated registration calls are written from): a built-in the registry
// missed would pass no deck.
template <std::size_t N>
std::set<std::string> builtin_names(const char* const (&names)[N]) {
  return std::set<std::string>(std::begin(names), std::end(names));
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
  REQUIRE(c.model.layers.size() == 3);
  CHECK(std::get<double>(c.model.layers[1].keys.at("factor")) == -0.5);
  // The default, a value out of range (file and line), a misspelling, the
  // key on a layer that does not read it, and a required key left out.
  c = from_deck(train_deck("{type = \"scale\"}, {type = \"dense\", units = 1}"), comm);
  CHECK(std::get<double>(c.model.layers[0].keys.at("factor")) == 1.0);
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
  REQUIRE(c.model.layers.size() == 3);
  CHECK(std::get<long long>(c.model.layers[0].keys.at("units")) == 3);
  CHECK(std::get<double>(c.model.layers[1].keys.at("factor")) == -0.5);
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
  std::set<std::string> in_files = builtin_names(kpmap::generated::builtin_layers);
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

// p after two steps of `config` from p = 1 (three elements), with gradients
// g1 then g2; the optimizer's one state array must be named `state`.
std::vector<double> after_two_steps(const OptimizerConfig& config, double g1, double g2,
                                    const std::string& state) {
  using Params = FlatParams<double, Mem>;
  Params p{Kokkos::View<double*, Mem>("p", 3)}, g{Kokkos::View<double*, Mem>("g", 3)};
  Kokkos::deep_copy(p.all, 1.0);
  Optimizer<double, Mem, Params> opt(config, p);
  REQUIRE(opt.state().size() == 1);
  CHECK(opt.state()[0].first == state);
  Kokkos::deep_copy(g.all, g1);
  opt.step(p, g);
  Kokkos::deep_copy(g.all, g2);
  opt.step(p, g);
  return to_host(p.all);
}

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
  OptimizerConfig config;
  config.kind = "accumulate";
  config.keys["gain"] = 2.0;
  config.learning_rate = 0.1;
  const double g1 = 0.5, g2 = -1.5;
  for (double v : after_two_steps(config, g1, g2, "s")) {
    CHECK(std::abs(v - (1.0 - 0.1 * 2.0 * (2 * g1 + g2))) < 1e-15);
  }
  using Params = FlatParams<double, Mem>;
  Params p{Kokkos::View<double*, Mem>("p", 3)};
  // A key it does not declare; registration errors as for layers.
  config.keys["gian"] = 1.0;
  CHECK_THROWS_WITH((Optimizer<double, Mem, Params>(config, p)), ContainsSubstring("gian"));
  CHECK_THROWS_WITH(register_optimizer<Accumulate>({"accumulate", "again"}),
                    ContainsSubstring("an optimizer named 'accumulate' is registered already"));
}

TEST_CASE("kpmap/train.hpp includes every built-in layer, loss and optimizer header",
          "[train][layer]") {
  // The headers the build found a built-in in (kpmap_builtin_names.hpp); the
  // umbrella header is read from the source tree.
  std::ifstream in(kpmap::test::source_dir() + "/src/kpmap/train.hpp");
  const std::string umbrella((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  REQUIRE(!umbrella.empty());
  std::size_t headers = 0;
  const auto check_included = [&](const auto& list) {
    for (const char* header : list) {
      if (*header == '\0') continue;  // the list's end
      const std::string include = std::string("#include <") + header + ">";
      CAPTURE(include);
      CHECK(umbrella.find(include) != std::string::npos);
      ++headers;
    }
  };
  check_included(kpmap::generated::builtin_layers_headers);
  check_included(kpmap::generated::builtin_losses_headers);
  check_included(kpmap::generated::builtin_optimizers_headers);
  CHECK(headers >= 10);
  // Its classes are reachable by their names, as 0.1.0's registry.hpp made them.
  CHECK(Dense<double, Mem>(Shape::flat(3), 2).output_shape() == Shape::flat(2));
  // 0.1.0's optimizer kinds, for one release (deprecated): the registered names.
  OptimizerConfig config;
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
  config.kind = OptimizerConfig::Kind::adam;
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
  CHECK(config.kind == "adam");
}

TEST_CASE("every built-in optimizer header registers its optimizer", "[train][optimizer]") {
  std::set<std::string> in_files = builtin_names(kpmap::generated::builtin_optimizers);
  REQUIRE(in_files.size() >= 4);
  in_files.insert("accumulate");  // this program's own, above
  in_files.insert("nesterov");    // element by element
  in_files.insert("count_steps");
  std::set<std::string> registered;
  for (const OptimizerInfo* o : registered_optimizers()) registered.insert(o->name);
  CHECK(registered == in_files);
}

TEST_CASE("typed layer helpers are their string forms, with keys their layers declare",
          "[train][layer]") {
  const std::pair<LayerSpec, LayerSpec> pairs[] = {
      {dense(4), LayerSpec{"dense", {{"units", 4}}}},
      {dense(std::size_t(24)).parallel("column"),
       LayerSpec{"dense", {{"units", 24}, {"parallel", "column"}}}},
      {conv2d(32, 5).stride(2).padding("same"),
       LayerSpec{"conv2d", {{"filters", 32}, {"kernel", 5}, {"stride", 2}, {"padding", "same"}}}},
      {conv2d(8), LayerSpec{"conv2d", {{"filters", 8}, {"kernel", 3}}}},
      {maxpool2d(3), LayerSpec{"maxpool2d", {{"size", 3}}}},
      {avgpool2d(), LayerSpec{"avgpool2d", {{"size", 2}}}},
      {flatten(), LayerSpec{"flatten"}},
      {relu(), LayerSpec{"relu"}},
      {kpmap::train::tanh(), LayerSpec{"tanh"}},
  };
  for (const auto& [typed, named] : pairs) {
    CAPTURE(named.type);
    CHECK(typed.type == named.type);
    CHECK(typed.keys == named.keys);
    const LayerInfo* info = find_layer(typed.type);
    REQUIRE(info != nullptr);
    for (const auto& [key, value] : typed.keys) {
      CAPTURE(key);
      CHECK(info->keys.find(key) != nullptr);
    }
  }
  // A model built from them runs as the one built from the names.
  const Shape input = Shape::hwc(6, 6, 1);
  const auto typed = build_layers<double, Mem>(
      input, {conv2d(2, 3).padding("same"), relu(), maxpool2d(2), flatten(), dense(3)});
  const auto named = build_layers<double, Mem>(
      input, {LayerSpec{"conv2d", {{"filters", 2}, {"padding", "same"}}}, LayerSpec{"relu"},
              LayerSpec{"maxpool2d"}, LayerSpec{"flatten"}, LayerSpec{"dense", {{"units", 3}}}});
  REQUIRE(typed.size() == named.size());
  for (std::size_t l = 0; l < typed.size(); ++l) {
    CHECK(typed[l]->output_shape() == named[l]->output_shape());
  }
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
  CHECK(c.model.loss == "huber");
  CHECK(!c.data.classification);
  CHECK(std::get<double>(c.model.loss_keys.at("huber_delta")) == 0.25);
  CHECK(c.model.layers.back().keys.at("units") == kpmap::deck::Value(1LL));  // its one output
  CHECK_THROWS_WITH(from_deck(parse("loss = \"mse\"\nhuber_delta = 0.25"), comm),
                    ContainsSubstring("model.loss = \"mse\" reads no huber_delta"));
  // A resolved deck reads back.
  c = from_deck(kpmap::deck::parse(schema, parse("loss = \"huber\"").to_toml(), "deck.toml"), comm);
  CHECK(c.model.loss == "huber");
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

// ---- a program's own loss and optimizer, element by element -------------------
namespace {

// [element_loss]
// Huber's loss as a device function of (prediction, target).
struct ElementHuber {
  double d = 1.0;
  explicit ElementHuber(const kpmap::deck::Settings& keys) : d(keys.real("element_delta")) {}
  template <class A>
  KOKKOS_FUNCTION LossValue<A> operator()(A z, A y) const {
    const A r = z - y, a = r < A(0) ? -r : r, t = static_cast<A>(d);
    if (a <= t) return {r * r / 2, r};
    return {t * (a - t / 2), r < A(0) ? -t : t};
  }
};
KPMAP_TRAIN_REGISTER_ELEMENT_LOSS(ElementHuber,
                                  {"element_huber", "Huber's loss, element by element", false, 1,
                                   kpmap::deck::Schema("element_huber")
                                       .real("element_delta", 1.0, {1e-6, 1e6}, "",
                                             "quadratic below this")});
// [end]

// [element_optimizer]
// Nesterov's momentum as a device function of one element and its velocity.
struct Nesterov {
  double mu = 0.9;
  explicit Nesterov(const kpmap::deck::Settings& keys) : mu(keys.real("nesterov_momentum")) {}
  template <class T>
  KOKKOS_FUNCTION void operator()(ElementStep<T> step, T& p, T g, T& v) const {
    v = static_cast<T>(mu) * v + g;
    p -= step.lr * (g + static_cast<T>(mu) * v);
  }
};
KPMAP_TRAIN_REGISTER_ELEMENT_OPTIMIZER(Nesterov, {"nesterov",
                                                  "Nesterov's momentum",
                                                  kpmap::deck::Schema("nesterov")
                                                      .real("nesterov_momentum", 0.9, {0, 1}, "",
                                                            "v = momentum v + g"),
                                                  {"m"}});
// [end]

// Adam's step count in a state-free update: p -= lr t (t = 1, 2, ...).
struct CountSteps {
  template <class T>
  KOKKOS_FUNCTION void operator()(ElementStep<T> step, T& p, T) const {
    p -= step.lr * static_cast<T>(step.t);
  }
};
KPMAP_TRAIN_REGISTER_ELEMENT_OPTIMIZER(CountSteps, {"count_steps", "p -= lr t"});

}  // namespace

TEST_CASE("a loss and an optimizer given element by element", "[train][loss][optimizer]") {
  using Catch::Matchers::ContainsSubstring;
  // The loss: its gradient against finite differences, residuals on both
  // sides of the threshold, and its key read from decks.
  const auto schema = train_schema();
  REQUIRE(schema.find("model.element_delta") != nullptr);
  check_gradient(SyntheticRegression{31, 3, 5, 0.1}, Shape::flat(3), mlp_specs({3, 5, 1}, "tanh"),
                 Loss{"element_huber", {{"element_delta", 0.4}}});
  CHECK_THROWS_WITH(register_element_loss<ElementHuber>({"element_huber_classes", "x", true, 0}),
                    ContainsSubstring("a per-element loss reads one output per sample"));
  // The optimizer: two steps against the closed form
  // v1 = g1, p1 = p0 - lr (1 + mu) g1; v2 = mu g1 + g2, p2 = p1 - lr (g2 + mu v2).
  OptimizerConfig config;
  config.kind = "nesterov";
  config.keys["nesterov_momentum"] = 0.5;
  config.learning_rate = 0.1;
  const double g1 = 0.5, g2 = -1.5, mu = 0.5, lr = 0.1;
  const double p1 = 1.0 - lr * (1 + mu) * g1;
  const double p2 = p1 - lr * (g2 + mu * (mu * g1 + g2));
  for (double v : after_two_steps(config, g1, g2, "m")) CHECK(std::abs(v - p2) < 1e-15);
  // An update without state sees the step number; a registration that
  // names another number of state arrays than its update takes is refused.
  config.kind = "count_steps";
  config.keys.clear();
  FlatParams<float, Mem> q{Kokkos::View<float*, Mem>("q", 3)};
  FlatParams<float, Mem> gq{Kokkos::View<float*, Mem>("gq", 3)};
  Optimizer<float, Mem, FlatParams<float, Mem>> steps(config, q);
  for (int k = 0; k < 3; ++k) steps.step(q, gq);
  const auto hq = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), q.all);
  for (std::size_t i = 0; i < 3; ++i) CHECK(std::abs(hq(i) + 0.6f) < 1e-6f);  // 1 + 2 + 3 steps
  CHECK_THROWS_WITH(register_element_optimizer<Nesterov>({"nesterov_stateless", "x"}),
                    ContainsSubstring("its update takes 1 state array(s) and its registration "
                                      "names 0"));
}

TEST_CASE("every built-in loss header registers its loss", "[train][loss]") {
  std::set<std::string> in_files = builtin_names(kpmap::generated::builtin_losses);
  REQUIRE(in_files.size() >= 2);
  in_files.insert("huber");          // this program's own, above
  in_files.insert("element_huber");  // and element by element
  std::set<std::string> registered;
  for (const LossInfo* l : registered_losses()) registered.insert(l->name);
  CHECK(registered == in_files);
}

TEST_CASE("a key that other keys make useless is refused, naming when it takes effect",
          "[train][deck]") {
  using Catch::Matchers::ContainsSubstring;
  using Catch::Matchers::StartsWith;
  const auto schema = train_schema();
  const std::string mlp = "[model]\nkind = \"mlp\"\n";
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"model.loss_scale=512"},
       "model.precision = \"double\" reads no model.loss_scale, it would have no effect "
       "(model.loss_scale is read only where model.precision is \"mixed\")"},
      {{"model.kind=\"sequential\"", "model.layers.1.type=\"relu\"", "model.activation=\"tanh\""},
       "model.kind = \"sequential\" reads no model.activation"},
      {{"model.kind=\"linear\"", "model.hidden=[4]"},
       "model.kind = \"linear\" reads no model.hidden"},
      {{"model.loss=\"mse\"", "data.classes=7"}, "model.loss = \"mse\" reads no data.classes"},
      {{"data.path=\"x.h5\""}, "data.kind = \"synthetic\" reads no data.path"},
      {{"optimizer.decay_steps=10"},
       "optimizer.schedule = \"constant\" reads no "
       "optimizer.decay_steps"},
      {{"optimizer.base_batch=10"},
       "optimizer.scale_lr_with_batch = false reads no optimizer.base_batch"},
      {{"data.kind=\"hdf5\"", "data.image=[4, 4, 1]"}, "data.kind = \"hdf5\" reads no data.image"},
      {{"data.kind=\"hdf5\"", "data.samples=10"}, "data.kind = \"hdf5\" reads no data.samples"},
      {{"optimizer.kind=\"adam\"", "optimizer.momentum=0.5"},
       "optimizer.kind = \"adam\" reads no momentum, it would have no effect (momentum is read by"},
  };
  for (const auto& [sets, expect] : cases) {
    CAPTURE(sets);
    CHECK_THROWS_WITH(kpmap::deck::parse(schema, mlp, "test.toml", sets),
                      StartsWith("--set " + sets.back() + ": key '" +
                                 sets.back().substr(0, sets.back().find('=')) + "': " + expect));
  }
  // Where they take effect, the same keys are read; their defaults, as a
  // resolved deck writes them, are no change anywhere.
  const auto d =
      kpmap::deck::parse(schema, mlp, "test.toml",
                         {"model.precision=\"mixed\"", "model.loss_scale=512",
                          "optimizer.schedule=\"cosine\"", "optimizer.decay_steps=10",
                          "optimizer.scale_lr_with_batch=true", "optimizer.base_batch=10"});
  CHECK(d.real("model.loss_scale") == 512);
  CHECK(d.integer("optimizer.base_batch") == 10);
  const auto resolved = kpmap::deck::parse(schema, mlp, "test.toml").to_toml();
  CHECK_NOTHROW(kpmap::deck::parse(schema, resolved, "deck.toml"));
  CHECK_THAT(schema.help(),
             ContainsSubstring("(read only where data.kind is \"hdf5\" or \"idx\")"));
}
