#pragma once
/// \file
/// \brief A multilayer perceptron (dense layers, ReLU or tanh) with mean
/// squared error or softmax cross-entropy, whose forward and backward passes
/// are KokkosBlas::gemm calls on the local batch, and whose gradient is
/// reduced layer by layer while the backward pass goes on.

#include <kpmap/collectives.hpp>
#include <kpmap/collectives/request.hpp>
#include <kpmap/detail/blas.hpp>
#include <kpmap/error.hpp>
#include <kpmap/train/data.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kpmap::train {

enum class Activation { relu, tanh };
enum class Loss { mse, cross_entropy };

/// \brief One dense layer: out = in W^T + b, W is (outputs x inputs).
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
struct Dense {
  Kokkos::View<T**, Kokkos::LayoutRight, M> w;
  Kokkos::View<T*, M> b;
};

/// \brief The parameters of an MLP (replicated on every rank), or a
/// gradient of the same shape: layers 0 .. L-1, widths[0] inputs,
/// widths[L] outputs.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
struct MlpParams {
  using memory_space = M;  ///< where every View of the tree lives
  std::vector<Dense<T, M>> layers;

  MlpParams() = default;
  MlpParams(const std::string& label, const std::vector<std::size_t>& widths) {
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      const std::string name = label + ".layer" + std::to_string(l);
      layers.push_back(
          {Kokkos::View<T**, Kokkos::LayoutRight, M>(name + ".w", widths[l + 1], widths[l]),
           Kokkos::View<T*, M>(name + ".b", widths[l + 1])});
    }
  }
  template <class F>
  void for_each_view(F&& f) const {
    for (const auto& d : layers) {
      f(d.w);
      f(d.b);
    }
  }
  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      n.push_back("layer" + std::to_string(l) + ".w");
      n.push_back("layer" + std::to_string(l) + ".b");
    }
    return n;
  }
};

/// \brief Glorot-uniform weights and zero biases, drawn from (seed, index):
/// identical on every rank without a broadcast.
template <class T, class M>
void initialize(const MlpParams<T, M>& p, std::uint64_t seed) {
  using Exec = typename M::execution_space;
  std::uint64_t base = 0;
  for (const auto& d : p.layers) {
    auto w = d.w;
    const std::size_t fan_in = w.extent(1);
    const std::size_t fan_out = w.extent(0);
    const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
    const std::uint64_t b0 = base;
    Kokkos::parallel_for(
        "kpmap::train::mlp::init", Kokkos::RangePolicy<Exec>(0, fan_out),
        KOKKOS_LAMBDA(std::size_t o) {
          for (std::size_t i = 0; i < fan_in; ++i) {
            const double u = CounterRng{seed}.uniform(b0 + o * fan_in + i, stream::init);
            w(o, i) = static_cast<T>((2.0 * u - 1.0) * limit);
          }
        });
    Kokkos::deep_copy(d.b, T(0));
    base += fan_in * fan_out;
  }
  Exec().fence();
}

namespace detail {

template <class T, class M>
struct GatherRows {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> x;
  Kokkos::View<const T*, M> y;
  Kokkos::View<const std::uint32_t*, M> order;
  Kokkos::View<T**, Kokkos::LayoutRight, M> xb;
  Kokkos::View<T*, M> yb;
  std::size_t first;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k) const {
    const std::size_t i = order.extent(0) ? order(first + k) : first + k;
    for (std::size_t j = 0; j < x.extent(1); ++j) xb(k, j) = x(i, j);
    yb(k) = y(i);
  }
};

/// z(k, o) = act(z(k, o) + b(o)) for hidden layers, z + b for the output.
template <class T, class M>
struct BiasActivate {
  Kokkos::View<T**, Kokkos::LayoutRight, M> z;
  Kokkos::View<const T*, M> b;
  int act;  // -1: none, 0: relu, 1: tanh
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k) const {
    for (std::size_t o = 0; o < z.extent(1); ++o) {
      T v = z(k, o) + b(o);
      if (act == 0) {
        v = v > T(0) ? v : T(0);
      } else if (act == 1) {
        using namespace kpmap::detail;
        v = math::tanh(v);
      }
      z(k, o) = v;
    }
  }
};

/// Output delta of each row, and the batch's (loss, correct) sums as one
/// parallel reduction: MSE on a single output, or softmax cross-entropy on
/// class scores.
template <class T, class M>
struct OutputDelta {
  using value_type = double[];  // (sum of losses, number correct)
  unsigned value_count = 2;
  Kokkos::View<const T**, Kokkos::LayoutRight, M> z;
  Kokkos::View<const T*, M> y;
  Kokkos::View<T**, Kokkos::LayoutRight, M> delta;
  T scale;  // 1 / global batch size
  bool cross_entropy;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k, double* stats) const {
    using namespace kpmap::detail;
    const std::size_t c = z.extent(1);
    if (!cross_entropy) {
      const T r = z(k, 0) - y(k);
      delta(k, 0) = 2 * scale * r;
      stats[0] += static_cast<double>(r) * static_cast<double>(r);
      return;
    }
    std::size_t best = 0;
    T zmax = z(k, 0);
    for (std::size_t o = 1; o < c; ++o) {
      if (z(k, o) > zmax) {
        zmax = z(k, o);
        best = o;
      }
    }
    T sum = 0;
    for (std::size_t o = 0; o < c; ++o) sum += math::exp(z(k, o) - zmax);
    const auto label = static_cast<std::size_t>(y(k));
    for (std::size_t o = 0; o < c; ++o) {
      const T p = math::exp(z(k, o) - zmax) / sum;
      delta(k, o) = scale * (p - (o == label ? T(1) : T(0)));
    }
    stats[0] += static_cast<double>(math::log(sum) - (z(k, label) - zmax));
    stats[1] += best == label ? 1.0 : 0.0;
  }
};

/// g(k, i) *= act'(a(k, i)), from the activation's output a.
template <class T, class M>
struct ActivationGrad {
  Kokkos::View<T**, Kokkos::LayoutRight, M> g;
  Kokkos::View<const T**, Kokkos::LayoutRight, M> a;
  int act;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t k) const {
    for (std::size_t i = 0; i < g.extent(1); ++i) {
      const T v = a(k, i);
      g(k, i) *= act == 0 ? (v > T(0) ? T(1) : T(0)) : T(1) - v * v;
    }
  }
};

}  // namespace detail

/// \brief Loss and accuracy of a batch, over all ranks.
struct BatchStats {
  double loss = 0;      ///< mean over the batch's samples
  double accuracy = 0;  ///< fraction correct (cross-entropy only)
};

/// \brief An MLP with its work arrays for local batches of up to `capacity`
/// rows. Every kernel, gemm and reduction it starts goes to the execution
/// space instance it was given, and only that instance is fenced.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class Mlp {
 public:
  using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, M>;
  using Exec = typename M::execution_space;

  Mlp(std::vector<std::size_t> widths, Activation act, Loss loss, std::size_t capacity,
      const Exec& exec = Exec())
      : widths_(std::move(widths)), act_(act), loss_(loss), capacity_(capacity), exec_(exec) {
    if (widths_.size() < 2) throw Error("kpmap::train::Mlp: needs at least inputs and outputs");
    for (std::size_t w : widths_) {
      a_.push_back(Matrix(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::mlp::a"),
                          capacity_, w));
    }
    for (std::size_t l = 1; l + 1 < widths_.size(); ++l) {
      g_.push_back(Matrix(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::mlp::g"),
                          capacity_, widths_[l]));
    }
    delta_ = Matrix(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::mlp::delta"),
                    capacity_, widths_.back());
    yb_ = Kokkos::View<T*, M>("kpmap::train::mlp::y", capacity_);
    ones_ = Kokkos::View<T*, M>("kpmap::train::mlp::ones", capacity_);
    Kokkos::deep_copy(ones_, T(1));
    sums_ = Kokkos::View<double*, M>("kpmap::train::mlp::sums", 2);
    sums_host_ = Kokkos::create_mirror_view(sums_);
  }

  const std::vector<std::size_t>& widths() const { return widths_; }
  std::size_t capacity() const { return capacity_; }
  const Exec& exec() const { return exec_; }

  /// \brief Loss and gradient of one global batch, into `grad`.
  ///
  /// The local rows are `order[first, last)` of `data` (or [first, last) when
  /// `order` is empty), at most capacity() of them; `global_batch` counts the
  /// batch's samples over all ranks. The backward pass starts each layer's
  /// gradient psum as soon as that layer is done, so the reduction of the last
  /// layers overlaps the backward pass of the first. `wait_seconds`, if
  /// given, receives the time spent waiting for the reductions after the
  /// backward pass. Collective over `axis`.
  BatchStats loss_and_gradient(const Shard<T, M>& data,
                               const Kokkos::View<std::uint32_t*, M>& order, std::size_t first,
                               std::size_t last, std::size_t global_batch, const MlpParams<T, M>& p,
                               const MlpParams<T, M>& grad, AxisRef axis,
                               double* wait_seconds = nullptr) {
    const std::size_t n = last - first;
    forward(data, order, first, last, p);
    output_delta(n, global_batch);
    std::vector<Request> pending;
    pending.push_back(ipsum(exec_, sums_, axis));
    const std::size_t layers = p.layers.size();
    for (std::size_t l = layers; l-- > 0;) {
      const auto a = rows(a_[l], n);
      const auto d = l + 1 == layers ? rows(delta_, n) : rows(g_[l], n);
      // dW = delta^T a ; db = column sums of delta = delta^T 1.
      kpmap::detail::gemm(exec_, "T", "N", T(1), d, a, T(0), grad.layers[l].w);
      kpmap::detail::gemv(exec_, "T", T(1), d, ones(n), T(0), grad.layers[l].b);
      // Hand this layer's gradient to MPI (fenced inside) before going on.
      pending.push_back(ipsum(exec_, std::make_tuple(grad.layers[l].w, grad.layers[l].b), axis));
      if (l > 0) {
        // g_{l-1} = (delta W) * act'(a_l).
        const auto g = rows(g_[l - 1], n);
        kpmap::detail::gemm(exec_, "N", "N", T(1), d, p.layers[l].w, T(0), g);
        Kokkos::parallel_for("kpmap::train::mlp::activation_grad",
                             Kokkos::RangePolicy<Exec>(exec_, 0, n),
                             detail::ActivationGrad<T, M>{g, a, act_code()});
      }
      for (auto& r : pending) r.test();  // let MPI progress between kernels
    }
    const double t0 = MPI_Wtime();
    for (auto& r : pending) r.wait();
    if (wait_seconds != nullptr) *wait_seconds = MPI_Wtime() - t0;
    read_sums();
    const double count = static_cast<double>(global_batch);
    return {sums_host_(0) / count, sums_host_(1) / count};
  }

  /// \brief Loss and accuracy over all rows of every rank's shard, in
  /// batches of capacity() rows. Collective over `axis`.
  BatchStats evaluate(const Shard<T, M>& data, const MlpParams<T, M>& p, AxisRef axis) {
    double local[2] = {0, 0};
    const Kokkos::View<std::uint32_t*, M> none;
    for (std::size_t first = 0; first < data.rows(); first += capacity_) {
      const std::size_t last = first + capacity_ < data.rows() ? first + capacity_ : data.rows();
      forward(data, none, first, last, p);
      output_delta(last - first, 1);
      read_sums();
      local[0] += sums_host_(0);
      local[1] += sums_host_(1);
    }
    const double loss = psum(local[0], axis);
    const double correct = psum(local[1], axis);
    const double count = static_cast<double>(data.global_rows);
    return {count > 0 ? loss / count : 0.0, count > 0 ? correct / count : 0.0};
  }

 private:
  int act_code() const { return act_ == Activation::relu ? 0 : 1; }
  void read_sums() {
    Kokkos::deep_copy(exec_, sums_host_, sums_);
    kpmap::detail::fence(exec_, "kpmap::train::Mlp: batch sums on the host");
  }
  auto ones(std::size_t n) const {
    return Kokkos::subview(ones_, Kokkos::make_pair(std::size_t(0), n));
  }
  static auto rows(const Matrix& m, std::size_t n) {
    return Kokkos::subview(m, Kokkos::make_pair(std::size_t(0), n), Kokkos::ALL());
  }

  void forward(const Shard<T, M>& data, const Kokkos::View<std::uint32_t*, M>& order,
               std::size_t first, std::size_t last, const MlpParams<T, M>& p) {
    const std::size_t n = last - first;
    if (n > capacity_) throw Error("kpmap::train::Mlp: batch larger than the work arrays");
    Kokkos::parallel_for("kpmap::train::mlp::gather", Kokkos::RangePolicy<Exec>(exec_, 0, n),
                         detail::GatherRows<T, M>{data.x, data.y, order, a_[0], yb_, first});
    for (std::size_t l = 0; l < p.layers.size(); ++l) {
      const auto in = rows(a_[l], n);
      const auto out = rows(a_[l + 1], n);
      kpmap::detail::gemm(exec_, "N", "T", T(1), in, p.layers[l].w, T(0), out);
      const bool hidden = l + 1 < p.layers.size();
      Kokkos::parallel_for(
          "kpmap::train::mlp::bias_activation", Kokkos::RangePolicy<Exec>(exec_, 0, n),
          detail::BiasActivate<T, M>{out, p.layers[l].b, hidden ? act_code() : -1});
    }
  }

  void output_delta(std::size_t n, std::size_t global_batch) {
    // The (loss, correct) sums land in sums_ on the device: no host round trip.
    Kokkos::parallel_reduce(
        "kpmap::train::mlp::output_delta", Kokkos::RangePolicy<Exec>(exec_, 0, n),
        detail::OutputDelta<T, M>{2, rows(a_.back(), n), yb_, delta_,
                                  T(1) / static_cast<T>(global_batch > 0 ? global_batch : 1),
                                  loss_ == Loss::cross_entropy},
        sums_);
  }

  std::vector<std::size_t> widths_;
  Activation act_;
  Loss loss_;
  std::size_t capacity_;
  Exec exec_;
  std::vector<Matrix> a_;  // a_[0] the gathered batch, a_[l] layer l's input
  std::vector<Matrix> g_;  // back-propagated deltas of the hidden layers
  Matrix delta_;           // output delta
  Kokkos::View<T*, M> yb_;
  Kokkos::View<T*, M> ones_;  // for the bias gradient delta^T 1
  Kokkos::View<double*, M> sums_;
  typename Kokkos::View<double*, M>::HostMirror sums_host_;
};

}  // namespace kpmap::train
