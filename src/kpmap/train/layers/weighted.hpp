// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What Dense and Conv2D share: a weight matrix (outputs x fan-in)
/// and a bias per output, bound to slices of the model's flat vectors,
/// Glorot-uniform initial weights, and the bias gradient as one gemv.

#include <kpmap/base/detail/blas.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/train/layers/layer.hpp>

#include <cstdint>
#include <optional>

namespace kpmap::train {

namespace detail {
/// out(r, o) += b(o) over a (rows x width) array: a dense layer's batch, or
/// a convolution's (pixels x channels). One thread per element of a 2-D
/// range: a dense layer of a few rows and many units still fills a GPU.
template <class T, class M>
struct AddBias {
  T* out;
  Kokkos::View<const T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> b;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t r, std::int64_t o) const {
    out[static_cast<std::size_t>(r) * b.extent(0) + static_cast<std::size_t>(o)] += b(o);
  }
};
}  // namespace detail

template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class Weighted : public Layer<T, M> {
  using Base = Layer<T, M>;

 public:
  using typename Base::Exec;

  std::vector<ParamSpec> parameters() const override {
    ParamSpec w{"w", {outputs_, fan_in_}, {}, {}}, b{"b", {outputs_}, {}, {}};
    if (whole_.rows != outputs_ || whole_.cols != fan_in_) {
      w.whole = {whole_.rows, whole_.cols};
      w.start = {whole_.row0, whole_.col0};
    }
    if (whole_.rows != outputs_) {
      b.whole = {whole_.rows};
      b.start = {whole_.row0};
    }
    return {w, b};
  }
  void bind(T* p, T* g) override {
    w_ = typename Base::Matrix(p, outputs_, fan_in_);
    b_ = typename Base::Vector(p + w_.size(), outputs_);
    dw_ = typename Base::Matrix(g, outputs_, fan_in_);
    db_ = typename Base::Vector(g + w_.size(), outputs_);
  }
  /// Split: this rank's block of the whole layer's values, drawn as the
  /// whole layer's are (so any split starts from the same weights).
  std::uint64_t initialize(const Exec& exec, std::uint64_t seed, std::uint64_t offset) override {
    Kokkos::deep_copy(exec, b_, T(0));
    return detail::glorot_block<T, M>(exec, w_.data(), outputs_, fan_in_, whole_.row0, whole_.col0,
                                      whole_.rows, whole_.cols, whole_.cols, fan_out_, seed,
                                      offset);
  }

 protected:
  /// \brief Where a rank's weights lie in the whole layer's when a mesh
  /// axis splits it (tensor parallelism): rows [row0, row0 + outputs) and
  /// columns [col0, col0 + fan_in) of a rows x cols matrix.
  struct Whole {
    std::size_t row0 = 0, col0 = 0, rows = 0, cols = 0;
  };

  /// \param outputs rows of the weights (units, filters); \param fan_in
  /// their columns; \param fan_out Glorot's fan-out; \param whole the whole
  /// layer's weights, when this rank holds a block of them.
  Weighted(Shape input, std::size_t outputs, std::size_t fan_in, std::size_t fan_out,
           std::optional<Whole> whole = std::nullopt)
      : Base(input),
        outputs_(outputs),
        fan_in_(fan_in),
        fan_out_(fan_out),
        whole_(whole.value_or(Whole{0, 0, outputs, fan_in})) {}

  /// Sizes the bias gradient's vector of ones for up to `rows` rows of outputs.
  void reserve_rows(std::size_t rows) {
    ones_ = Kokkos::View<T*, M>("kpmap::train::layers::ones", rows);
    Kokkos::deep_copy(ones_, T(1));
  }
  /// out(r, :) += b for the `rows` rows at `out`.
  void add_bias(const Exec& exec, T* out, std::size_t rows) const {
    Kokkos::parallel_for(
        "kpmap::train::layers::bias",
        row_major_range<2, Kokkos::IndexType<std::int64_t>>(
            exec, {0, 0}, {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(outputs_)}),
        detail::AddBias<T, M>{out, b_});
  }
  /// db (+)= d^T 1: column sums of the output gradient `d` (rows x outputs,
  /// its rows contiguous). d^T is read as a column-major matrix over the same
  /// memory, so that gemv is "N" on LayoutLeft, which Kokkos Kernels hands to
  /// the BLAS (OpenBLAS's sgemv_n), not its own kernel for a transposed
  /// row-major matrix (7 times slower here).
  template <class D>
  void bias_gradient(const Exec& exec, const D& d) const {
    const auto ones = Kokkos::subview(ones_, Kokkos::make_pair(std::size_t(0), d.extent(0)));
    const Kokkos::View<const T**, Kokkos::LayoutLeft, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        dt(d.data(), d.extent(1), d.extent(0));
    kpmap::detail::gemv(exec, "N", T(1), dt, ones, this->grad_beta_, db_);
  }

  std::size_t outputs_, fan_in_, fan_out_;
  Whole whole_;
  typename Base::Matrix w_, dw_;
  typename Base::Vector b_, db_;
  Kokkos::View<T*, M> ones_;
};

}  // namespace kpmap::train
