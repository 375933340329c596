#pragma once
/// \file
/// \brief Dense (fully connected) layer: out = in W^T + b, W is units x inputs.

#include <kpmap/detail/blas.hpp>
#include <kpmap/train/layers/layer.hpp>

namespace kpmap::train {

namespace detail {
/// out(r, o) += b(o) for each row r of a (rows x width) array: a dense
/// layer's batch, or a convolution's (pixels x channels). One thread per row.
template <class T, class M>
struct AddBias {
  T* out;
  Kokkos::View<const T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> b;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t r) const {
    const std::size_t width = b.extent(0);
    T* row = out + r * width;
    for (std::size_t o = 0; o < width; ++o) row[o] += b(o);
  }
};

template <class T, class M, class Exec, class V>
void add_bias(const Exec& exec, const V& out, const typename Layer<T, M>::Vector& b) {
  Kokkos::parallel_for("kpmap::train::layers::bias",
                       Kokkos::RangePolicy<Exec>(exec, 0, out.size() / b.extent(0)),
                       AddBias<T, M>{out.data(), b});
}
}  // namespace detail

/// \brief A fully connected layer on flat inputs (put a Flatten before it
/// when its input is an image).
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class Dense final : public Layer<T, M> {
  using Base = Layer<T, M>;

 public:
  using typename Base::Batch;
  using typename Base::Exec;

  Dense(Shape input, std::size_t units) : Base(input), units_(units) {
    if (input.image) {
      throw ShapeError("dense: its input is a " + input.str() +
                       "; put a { type = \"flatten\" } layer before it");
    }
    if (units == 0) throw ShapeError("dense: units must be at least 1");
  }

  std::string type() const override { return "dense"; }
  std::string describe() const override { return "dense " + std::to_string(units_); }
  Shape output_shape() const override { return Shape::flat(units_); }
  std::vector<ParamSpec> parameters() const override {
    return {{"w", {units_, fan_in()}}, {"b", {units_}}};
  }
  void bind(T* p, T* g) override {
    w_ = typename Base::Matrix(p, units_, fan_in());
    b_ = typename Base::Vector(p + w_.size(), units_);
    dw_ = typename Base::Matrix(g, units_, fan_in());
    db_ = typename Base::Vector(g + w_.size(), units_);
  }
  std::uint64_t initialize(const Exec& exec, std::uint64_t seed, std::uint64_t offset) override {
    Kokkos::deep_copy(exec, b_, T(0));
    return detail::glorot_uniform<T, M>(exec, w_.data(), w_.size(), fan_in(), units_, seed, offset);
  }
  void reserve(std::size_t capacity) override {
    ones_ = Kokkos::View<T*, M>("kpmap::train::dense::ones", capacity);
    Kokkos::deep_copy(ones_, T(1));
  }

  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    kpmap::detail::gemm(exec, "N", "T", T(1), in, w_, T(0), out);
    detail::add_bias<T, M>(exec, out, b_);
  }
  void backward(const Exec& exec, const Batch& in, const Batch&, const Batch& dout,
                const Batch& din) override {
    // dW = dout^T in; db = dout^T 1; din = dout W.
    kpmap::detail::gemm(exec, "T", "N", T(1), dout, in, this->grad_beta_, dw_);
    const auto ones = Kokkos::subview(ones_, Kokkos::make_pair(std::size_t(0), dout.extent(0)));
    kpmap::detail::gemv(exec, "T", T(1), dout, ones, this->grad_beta_, db_);
    if (din.data() != nullptr) kpmap::detail::gemm(exec, "N", "N", T(1), dout, w_, T(0), din);
  }
  double work_bytes_per_sample() const override { return sizeof(T); }
  double forward_flops() const override { return double(units_) * double(fan_in()); }

 private:
  std::size_t fan_in() const { return this->input_.size(); }
  std::size_t units_;
  typename Base::Matrix w_, dw_;
  typename Base::Vector b_, db_;
  Kokkos::View<T*, M> ones_;
};

}  // namespace kpmap::train
