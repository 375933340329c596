#pragma once
/// \file
/// \brief 2-D convolution (cross-correlation, as in every deep-learning
/// framework) on NHWC images: square kernel, stride 1 or more, padding "same"
/// or "valid", any channel counts. Forward and backward are im2col + gemm:
/// the batch's patches become the rows of a matrix, so the convolution is
/// one large KokkosBlas::gemm instead of many small loops.

#include <kpmap/detail/blas.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/layers/weighted.hpp>

namespace kpmap::train {

/// \brief Where a convolution's windows sit on one image axis.
struct ConvAxis {
  std::size_t in = 0, out = 0, pad = 0;  ///< input and output length; padding before

  /// \brief TensorFlow's rule: "valid" uses whole windows only; "same" gives
  /// ceil(in / stride) outputs, padding split evenly (the extra one after).
  static ConvAxis make(std::size_t in, std::size_t kernel, std::size_t stride, bool same) {
    ConvAxis a;
    a.in = in;
    if (same) {
      a.out = (in + stride - 1) / stride;
      const std::size_t need = (a.out - 1) * stride + kernel;
      a.pad = need > in ? (need - in) / 2 : 0;
    } else {
      a.out = in >= kernel ? (in - kernel) / stride + 1 : 0;
    }
    return a;
  }
};

namespace detail {

/// cols(r, c): row r = (sample, oy, ox), column c = (ky, kx, ci); zero where
/// the window hangs over the padding. One thread per (row, window position):
/// it copies that pixel's Cin contiguous channels.
template <class T, class M>
struct Im2col {
  Kokkos::View<const T**, Kokkos::LayoutRight, M> in;  // samples x (H W Cin)
  Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> cols;
  ConvAxis ay, ax;
  std::size_t k, stride, cin;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    const std::size_t r = i / (k * k);
    const std::size_t kk = i % (k * k);
    const std::size_t kx = kk % k;
    const std::size_t ky = kk / k;
    const std::size_t ox = r % ax.out;
    const std::size_t oy = (r / ax.out) % ay.out;
    const std::size_t s = r / (ax.out * ay.out);
    // Signed arithmetic: the window may start inside the padding.
    const long long y = static_cast<long long>(oy * stride + ky) - static_cast<long long>(ay.pad);
    const long long x = static_cast<long long>(ox * stride + kx) - static_cast<long long>(ax.pad);
    T* out = &cols(r, kk * cin);
    if (y >= 0 && x >= 0 && y < static_cast<long long>(ay.in) &&
        x < static_cast<long long>(ax.in)) {
      const T* src =
          &in(s, (static_cast<std::size_t>(y) * ax.in + static_cast<std::size_t>(x)) * cin);
      for (std::size_t ci = 0; ci < cin; ++ci) out[ci] = src[ci];
    } else {
      for (std::size_t ci = 0; ci < cin; ++ci) out[ci] = T(0);
    }
  }
};

/// The adjoint of Im2col: din(s, y, x, ci) = sum of the cols entries that
/// copied it. One thread per input pixel gathers the (at most k*k) window
/// positions that saw it, each Cin contiguous values, so no two threads write
/// the same place and the sum's order is fixed.
template <class T, class M>
struct Col2im {
  Kokkos::View<const T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> cols;
  Kokkos::View<T**, Kokkos::LayoutRight, M> din;  // samples x (H W Cin)
  ConvAxis ay, ax;
  std::size_t k, stride, cin;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t pixel) const {
    const std::size_t x = pixel % ax.in;
    const std::size_t y = (pixel / ax.in) % ay.in;
    const std::size_t s = pixel / (ax.in * ay.in);
    T* out = din.data() + pixel * cin;
    for (std::size_t ci = 0; ci < cin; ++ci) out[ci] = T(0);
    const std::size_t py = y + ay.pad;  // oy * stride + ky == py
    const std::size_t px = x + ax.pad;
    for (std::size_t ky = 0; ky < k && ky <= py; ++ky) {
      if ((py - ky) % stride != 0) continue;
      const std::size_t oy = (py - ky) / stride;
      if (oy >= ay.out) continue;
      for (std::size_t kx = 0; kx < k && kx <= px; ++kx) {
        if ((px - kx) % stride != 0) continue;
        const std::size_t ox = (px - kx) / stride;
        if (ox >= ax.out) continue;
        const T* src = &cols((s * ay.out + oy) * ax.out + ox, (ky * k + kx) * cin);
        for (std::size_t ci = 0; ci < cin; ++ci) out[ci] += src[ci];
      }
    }
  }
};

}  // namespace detail

/// \brief `filters` output channels from a k x k window of all input channels.
/// Weights are filters x (k k Cin), column (ky k + kx) Cin + ci.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class Conv2D final : public Weighted<T, M> {
  using Base = Weighted<T, M>;
  using Matrix = typename Layer<T, M>::Matrix;

 public:
  using typename Layer<T, M>::Batch;
  using typename Layer<T, M>::Exec;

  Conv2D(Shape input, std::size_t filters, std::size_t kernel, std::size_t stride, bool same)
      : Base(input, filters, kernel * kernel * input.channels, kernel * kernel * filters),
        filters_(filters),
        k_(kernel),
        stride_(stride),
        same_(same) {
    if (!input.image) {
      throw ShapeError("conv2d: its input is " + input.str() +
                       ", not an image (height x width x channels)");
    }
    if (filters == 0 || kernel == 0 || stride == 0) {
      throw ShapeError("conv2d: filters, kernel and stride must be at least 1");
    }
    if (!same && (kernel > input.height || kernel > input.width)) {
      throw ShapeError("conv2d: a " + std::to_string(kernel) + "x" + std::to_string(kernel) +
                       " kernel with padding \"valid\" does not fit its " + input.str() + " input");
    }
    ay_ = ConvAxis::make(input.height, kernel, stride, same);
    ax_ = ConvAxis::make(input.width, kernel, stride, same);
  }
  /// From its deck keys: filters, kernel, stride, padding.
  Conv2D(Shape input, const deck::Settings& keys)
      : Conv2D(input, static_cast<std::size_t>(keys.integer("filters")),
               static_cast<std::size_t>(keys.integer("kernel")),
               static_cast<std::size_t>(keys.integer("stride")), keys.string("padding") == "same") {
  }

  std::string type() const override { return "conv2d"; }
  std::string describe() const override {
    return "conv2d " + std::to_string(k_) + "x" + std::to_string(k_) + "/" +
           std::to_string(stride_) + " " + (same_ ? "same" : "valid") + ", " +
           std::to_string(filters_) + " filters";
  }
  Shape output_shape() const override { return Shape::hwc(ay_.out, ax_.out, filters_); }
  void reserve(std::size_t capacity) override {
    const std::size_t rows = capacity * pixels();
    cols_ = Kokkos::View<T*, M>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::conv2d::cols"),
        rows * patch());
    this->reserve_rows(rows);
  }

  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    const std::size_t rows = in.extent(0) * pixels();
    const Matrix cols(cols_.data(), rows, patch());
    Kokkos::parallel_for(
        "kpmap::train::conv2d::im2col", Kokkos::RangePolicy<Exec>(exec, 0, rows * k_ * k_),
        detail::Im2col<T, M>{in, cols, ay_, ax_, k_, stride_, this->input_.channels});
    kpmap::detail::gemm(exec, "N", "T", T(1), cols, this->w_, T(0),
                        Matrix(out.data(), rows, filters_));
    this->add_bias(exec, out.data(), rows);
  }
  void backward(const Exec& exec, const Batch&, const Batch&, const Batch& dout,
                const Batch& din) override {
    const std::size_t rows = dout.extent(0) * pixels();
    const Matrix cols(cols_.data(), rows, patch());
    const Matrix d(dout.data(), rows, filters_);
    // dW = D^T cols; db = D^T 1; then cols is reused for dcols = D W.
    kpmap::detail::gemm(exec, "T", "N", T(1), d, cols, this->grad_beta_, this->dw_);
    this->bias_gradient(exec, d);
    if (din.data() == nullptr) return;
    kpmap::detail::gemm(exec, "N", "N", T(1), d, this->w_, T(0), cols);
    Kokkos::parallel_for(
        "kpmap::train::conv2d::col2im",
        Kokkos::RangePolicy<Exec>(exec, 0, din.size() / this->input_.channels),
        detail::Col2im<T, M>{cols, din, ay_, ax_, k_, stride_, this->input_.channels});
  }
  double work_bytes_per_sample() const override {
    return double(pixels()) * double(patch() + 1) * sizeof(T);
  }
  bool large_work() const override { return true; }
  double forward_flops() const override {
    return double(pixels()) * double(patch()) * double(filters_);
  }

 private:
  std::size_t patch() const { return k_ * k_ * this->input_.channels; }
  std::size_t pixels() const { return ay_.out * ax_.out; }
  std::size_t filters_, k_, stride_;
  bool same_;
  ConvAxis ay_, ax_;
  Kokkos::View<T*, M> cols_;
};

KPMAP_TRAIN_BUILTIN_LAYER(
    conv2d, Conv2D,
    {"conv2d",
     "2-D convolution over all input channels",
     deck::Schema("conv2d")
         .integer("filters", 0, {0, 1 << 16}, "", "output channels")
         .integer("kernel", 3, {1, 1024}, "pixels", "kernel x kernel window")
         .integer("stride", 1, {1, 1024}, "pixels", "step between windows")
         .string("padding", "valid", {"valid", "same"},
                 "valid (whole windows only) or same (zero padding, ceil(input / stride) outputs)"),
     {"filters"}})

}  // namespace kpmap::train
