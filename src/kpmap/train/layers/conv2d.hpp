// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief 2-D convolution (cross-correlation, as in every deep-learning
/// framework) on NHWC images: square kernel, stride 1 or more, padding "same"
/// or "valid", any channel counts. Forward and backward are im2col + gemm:
/// the batch's patches become the rows of a matrix, so the convolution is
/// one large KokkosBlas::gemm instead of many small loops. The patch matrix
/// carries a column of ones, so the bias is added by the forward gemm and its
/// gradient summed by the weight-gradient gemm (no pass of their own).
/// On the host, 3x3 stride-1 layers of wide patches take Winograd's
/// F(2x2, 3x3) instead (winograd_kernels.hpp; Conv2D::winograd).

#include <kpmap/base/detail/blas.hpp>
#include <kpmap/base/policy.hpp>
#include <kpmap/train/layers/conv2d_kernels.hpp>
#include <kpmap/train/layers/maxpool2d.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/layers/weighted.hpp>
#include <kpmap/train/layers/winograd_kernels.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace kpmap::train {

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
    offsets_ = detail::PatchOffsets(kernel, input.channels, input.width * input.channels);
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
  /// \brief Where memory is the host's, the batch goes through im2col and
  /// the gemms in chunks of samples whose patch matrix fits in
  /// `host_chunk_bytes` (a core's L2 cache, about): the patches are written
  /// to and read from cache, and OpenBLAS runs at its small-M rate
  /// (docs/performance.md). The backward pass makes each chunk's patches
  /// again, unless the whole batch's fit in `host_keep_bytes` (few input
  /// channels: making them costs more than keeping them). Elsewhere (a GPU) a
  /// chunk is the whole batch: one large gemm fills the device.
  static constexpr std::size_t host_chunk_bytes = std::size_t(1) << 20;
  static constexpr std::size_t host_keep_bytes = std::size_t(8) << 20;

  void reserve(std::size_t capacity) override {
    wb_ = Kokkos::View<T*, M>("kpmap::train::conv2d::wb", filters_ * (patch() + 1));
    if (pool_ != nullptr) {  // no patches: they are made in registers
      dwbt_ = Transposed("kpmap::train::conv2d::dwbt", patch() + 1, filters_);
      return;
    }
    const std::size_t per_sample = pixels() * (patch() + 1) * sizeof(T);
    chunk_ = capacity;
    keep_ = true;
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, M>::accessible) {
      chunk_ = std::max<std::size_t>(1, std::min(capacity, chunk_bytes_ / per_sample));
      keep_ = capacity * per_sample <= keep_bytes_;
    }
    if (winograd_) {  // no patches
      const std::size_t channels = winograd_channels(), tiles = winograd_tiles();
      wchunk_ = std::max<std::size_t>(
          1, std::min(capacity, chunk_bytes_ / (16 * tiles * channels * sizeof(T))));
      wu_ = Kokkos::View<T*, M>("kpmap::train::conv2d::winograd_filters",
                                16 * (this->input_.channels + 1) * filters_);
      wvm_ = Kokkos::View<T*, M>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::conv2d::winograd_tiles"),
          16 * wchunk_ * tiles * channels);
      wzeros_ = Kokkos::View<T*, M>("kpmap::train::conv2d::winograd_zeros",
                                    std::max(this->input_.channels, filters_));
      return;
    }
    cols_ = Kokkos::View<T*, M>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::conv2d::cols"),
        (keep_ ? capacity : chunk_) * per_sample / sizeof(T));
    dwb_ = Joined("kpmap::train::conv2d::dwb", filters_, patch() + 1);
  }
  /// Samples per chunk of im2col and gemm (see host_chunk_bytes).
  std::size_t chunk() const { return chunk_; }
  /// \brief This layer's own host_chunk_bytes and host_keep_bytes; call it
  /// before reserve() (tests use it to run several chunks on small images).
  void set_host_chunking(std::size_t chunk_bytes, std::size_t keep_bytes) {
    chunk_bytes_ = chunk_bytes;
    keep_bytes_ = keep_bytes;
  }

  /// \brief Patches of at most this many columns (with the bias's) are
  /// multiplied by the thread that makes them (Im2colProduct), not by gemm.
  static constexpr std::size_t direct_patch_limit = detail::direct_patch_limit;

  /// \brief A max pooling just after (a ReLU between or not) is computed
  /// here, in the kernel that makes the convolution's outputs
  /// (Im2colProductMaxPool), when the patches are small (a first layer of
  /// few input channels, whose output is the model's largest array) and no
  /// input gradient is asked for: that output is then neither written nor
  /// read back, nor its gradient (docs/performance.md).
  bool absorb_next(Layer<T, M>& next, bool input_gradient) override {
    auto* pool = dynamic_cast<MaxPool2D<T, M>*>(&next);
    if (pool == nullptr || input_gradient || patch() + 1 > direct_patch_limit) return false;
    pool_ = pool;
    return true;
  }

  /// \brief Where memory is the host's, a 3x3 convolution of stride 1 whose
  /// patches the gemm multiplies (more than direct_patch_limit columns) is
  /// computed by Winograd's F(2x2, 3x3) (winograd_kernels.hpp): output,
  /// input gradient and weight gradient, 2.25 times fewer multiplications,
  /// in products of (input channels) x (outputs) that OpenBLAS runs at its
  /// rate for small matrices (docs/performance.md); no patches are made.
  /// Its results differ from im2col's by rounding. On a GPU im2col's one
  /// large gemm fills the device.
  bool winograd() const { return winograd_; }
  /// \brief Winograd where it applies (the default), or im2col and gemm
  /// everywhere; call it before reserve().
  void set_winograd(bool on) { winograd_ = on && winograd_applies(); }

  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    if (winograd_) {
      winograd_convolution(exec, in, out, false);
      return;
    }
    const bool direct = patch() + 1 <= direct_patch_limit;
    Kokkos::parallel_for("kpmap::train::conv2d::join_bias",
                         Kokkos::RangePolicy<Exec>(exec, 0, wb_.size()),
                         detail::JoinBias<T, M>{this->w_, this->b_, wb_, direct});
    if (pool_ != nullptr) {
      const PoolGeometry& g = pool_->geometry();
      for_pixels(
          "kpmap::train::conv2d::im2col_product_maxpool", exec, in.extent(0), g.oh, g.ow,
          detail::Im2colProductMaxPool<T, M>{{in, {}, ay_, ax_, k_, stride_, this->input_.channels},
                                             {Matrix(wb_.data(), patch() + 1, filters_), offsets_},
                                             out,
                                             pool_->where(),
                                             g.oh,
                                             g.ow,
                                             g.p,
                                             pool_->relu()});
      return;
    }
    for (std::size_t s = 0; s < in.extent(0); s += chunk_) {
      const auto samples = Kokkos::make_pair(s, std::min(s + chunk_, in.extent(0)));
      const auto chunk = Kokkos::subview(in, samples, Kokkos::ALL());
      // Rows from sample s on, found without touching an element: on a GPU
      // `out` is device memory, which host code may point into but not read.
      const Matrix to(out.data() + s * out.stride_0(), chunk.extent(0) * pixels(), filters_);
      if (direct) {
        const Matrix cols(at(s), to.extent(0), patch() + 1);
        for_pixels(
            "kpmap::train::conv2d::im2col_product", exec, chunk.extent(0), ay_.out, ax_.out,
            detail::Im2colProduct<T, M>{{chunk, cols, ay_, ax_, k_, stride_, this->input_.channels},
                                        {Matrix(wb_.data(), patch() + 1, filters_), offsets_},
                                        to});
        continue;
      }
      // out = [cols | 1] [W | b]^T: the bias comes with the gemm.
      kpmap::detail::gemm(exec, "N", "T", T(1), patches(exec, chunk, s),
                          Matrix(wb_.data(), filters_, patch() + 1), T(0), to);
    }
  }
  void backward(const Exec& exec, const Batch& in, const Batch& out, const Batch& dout,
                const Batch& din) override {
    const std::size_t n = dout.extent(0);
    if (n == 0) return;  // Sequential never asks: it zeroes an empty batch's gradient itself
    if (pool_ != nullptr) {
      const PoolGeometry& g = pool_->geometry();
      Kokkos::parallel_reduce("kpmap::train::conv2d::pooled_weight_gradient",
                              Kokkos::RangePolicy<Exec>(exec, 0, n * g.oh),
                              detail::PooledWeightGradient<T, M, Sum>{
                                  static_cast<unsigned>(dwbt_.size()),
                                  {in, {}, ay_, ax_, k_, stride_, this->input_.channels},
                                  offsets_,
                                  dout,
                                  out,
                                  pool_->where(),
                                  g.oh,
                                  g.ow,
                                  g.p,
                                  filters_,
                                  pool_->relu()},
                              Kokkos::View<Sum*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                  dwbt_.data(), dwbt_.size()));
      Kokkos::parallel_for("kpmap::train::conv2d::split_bias",
                           Kokkos::RangePolicy<Exec>(exec, 0, dwbt_.size()),
                           detail::SplitBias<T, M, Sum>{dwbt_, this->dw_, this->db_,
                                                        this->grad_beta_ != T(0), true});
      return;
    }
    if (winograd_) {
      winograd_weight_gradient(exec, in, dout);
      if (din.data() != nullptr) winograd_convolution(exec, dout, din, true);
      return;
    }
    for (std::size_t s = 0; s < n; s += chunk_) {
      const auto samples = Kokkos::make_pair(s, std::min(s + chunk_, n));
      const std::size_t rows = (samples.second - s) * pixels();
      // The forward pass's patches where they were kept (or all in one
      // chunk); else this chunk's made again.
      const Matrix cols = keep_ || n <= chunk_
                              ? Matrix(at(s), rows, patch() + 1)
                              : patches(exec, Kokkos::subview(in, samples, Kokkos::ALL()), s);
      const Matrix d(dout.data() + s * dout.stride_0(), rows, filters_);
      // [dW | db] (+)= D^T [cols | 1] in one gemm; then the chunk's patches
      // are overwritten by dcols = D W.
      kpmap::detail::gemm(exec, "T", "N", T(1), d, cols, T(s == 0 ? 0 : 1), dwb_);
      if (din.data() == nullptr) continue;
      const Matrix dcols(at(s), rows, patch());
      kpmap::detail::gemm(exec, "N", "N", T(1), d, this->w_, T(0), dcols);
      const auto din_chunk = Kokkos::subview(din, samples, Kokkos::ALL());
      for_pixels(
          "kpmap::train::conv2d::col2im", exec, din_chunk.extent(0), ay_.in, ax_.in,
          detail::Col2im<T, M>{dcols, din_chunk, ay_, ax_, k_, stride_, this->input_.channels});
    }
    Kokkos::parallel_for(
        "kpmap::train::conv2d::split_bias", Kokkos::RangePolicy<Exec>(exec, 0, dwb_.size()),
        detail::SplitBias<T, M>{dwb_, this->dw_, this->db_, this->grad_beta_ != T(0)});
  }
  double work_bytes_per_sample() const override {
    if (pool_ != nullptr) return 0.0;
    if (winograd_) return 16.0 * double(winograd_tiles()) * double(winograd_channels()) * sizeof(T);
    return double(pixels()) * double(patch() + 1) * sizeof(T);
  }
  bool large_work() const override { return true; }
  double forward_flops() const override {
    return double(pixels()) * double(patch()) * double(filters_);
  }

 private:
  std::size_t patch() const { return k_ * k_ * this->input_.channels; }
  bool winograd_applies() const {
    return Kokkos::SpaceAccessibility<Kokkos::HostSpace, M>::accessible &&
           (std::is_same_v<T, float> || std::is_same_v<T, double>)&&k_ == 3 && stride_ == 1 &&
           patch() + 1 > direct_patch_limit;
  }
  // The convolution this layer computes or (adjoint) the one that gives its
  // input gradient from its output gradient: the output's shape is the
  // input's, and the padding what the window's other side leaves.
  detail::WinogradShape winograd_shape(bool adjoint) const {
    if (!adjoint) return {ay_, ax_, this->input_.channels, filters_};
    const auto flip = [](const ConvAxis& a) {
      ConvAxis f;
      f.in = a.out;
      f.out = a.in;
      f.pad = 2 - a.pad;
      return f;
    };
    return {flip(ay_), flip(ax_), filters_, this->input_.channels};
  }
  // A sample's tiles and their channels in wvm_: the most of the two
  // convolutions' and of the weight gradient's.
  std::size_t winograd_tiles() const {
    return std::max(winograd_shape(false).tiles(), winograd_shape(true).tiles());
  }
  std::size_t winograd_channels() const { return this->input_.channels + 1 + filters_; }
  // to = the convolution of `from` (with the bias), or (adjoint) the input
  // gradient `to` of the output gradient `from`, by F(2x2, 3x3), wchunk_
  // samples at a time: each chunk's 16 transformed inputs and the 16
  // products' results stay in cache between the kernels.
  void winograd_convolution(const Exec& exec, const Batch& from, const Batch& to,
                            bool adjoint) const {
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, M>::accessible) {  // else never
      using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
      const detail::WinogradShape shape = winograd_shape(adjoint);
      const Matrix u(wu_.data(), 16 * shape.cin, shape.cout);
      Kokkos::parallel_for(
          "kpmap::train::conv2d::winograd_filters",
          Kokkos::RangePolicy<Exec>(exec, 0, shape.cin * shape.cout),
          detail::WinogradFilter<T, M>{this->w_, u, shape.cin, shape.cout, adjoint});
      const Kokkos::View<const T*, M, Unmanaged> bias =
          adjoint ? Kokkos::View<const T*, M, Unmanaged>(wzeros_.data(), wzeros_.size())
                  : Kokkos::View<const T*, M, Unmanaged>(this->b_.data(), filters_);
      const std::size_t n = from.extent(0);
      for (std::size_t s = 0; s < n; s += wchunk_) {
        const std::size_t samples = std::min(wchunk_, n - s), tiles = samples * shape.tiles();
        const Matrix v(wvm_.data(), 16 * tiles, shape.cin);
        const Matrix m(wvm_.data() + v.size(), 16 * tiles, shape.cout);
        Kokkos::parallel_for(
            "kpmap::train::conv2d::winograd_input", Kokkos::RangePolicy<Exec>(exec, 0, tiles),
            detail::WinogradInput<T, M>{
                Matrix(from.data() + s * from.stride_0(), samples, from.extent(1)), v,
                Kokkos::View<const T*, M, Unmanaged>(wzeros_.data(), wzeros_.size()), shape});
        for (std::size_t e = 0; e < 16; ++e) {
          kpmap::detail::gemm(exec, "N", "N", T(1),
                              Matrix(v.data() + e * tiles * shape.cin, tiles, shape.cin),
                              Matrix(u.data() + e * shape.cin * shape.cout, shape.cin, shape.cout),
                              T(0), Matrix(m.data() + e * tiles * shape.cout, tiles, shape.cout));
        }
        Kokkos::parallel_for(
            "kpmap::train::conv2d::winograd_output", Kokkos::RangePolicy<Exec>(exec, 0, tiles),
            detail::WinogradOutput<T, M>{
                m, Matrix(to.data() + s * to.stride_0(), samples, to.extent(1)), bias, shape});
      }
    }
  }  // [dW | db] (+)= the weight and bias gradients of the output gradient
  // `dout` of the input `in`, by F(2x2, 3x3): each chunk's transformed input
  // tiles (and a column of ones) and output gradients, their 16 products
  // summed over the chunks, then transformed back.
  void winograd_weight_gradient(const Exec& exec, const Batch& in, const Batch& dout) const {
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, M>::accessible) {  // else never
      using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
      const detail::WinogradShape shape = winograd_shape(false);
      const std::size_t rows = shape.cin + 1;
      const Matrix du(wu_.data(), 16 * rows, shape.cout);
      const Kokkos::View<const T*, M, Unmanaged> zeros(wzeros_.data(), wzeros_.size());
      const std::size_t n = in.extent(0);
      for (std::size_t s = 0; s < n; s += wchunk_) {
        const std::size_t samples = std::min(wchunk_, n - s), tiles = samples * shape.tiles();
        const Matrix v(wvm_.data(), 16 * tiles, rows);
        const Matrix g(wvm_.data() + v.size(), 16 * tiles, shape.cout);
        Kokkos::parallel_for(
            "kpmap::train::conv2d::winograd_input", Kokkos::RangePolicy<Exec>(exec, 0, tiles),
            detail::WinogradInput<T, M>{
                Matrix(in.data() + s * in.stride_0(), samples, in.extent(1)), v, zeros, shape});
        Kokkos::parallel_for("kpmap::train::conv2d::winograd_output_gradient",
                             Kokkos::RangePolicy<Exec>(exec, 0, tiles),
                             detail::WinogradOutputGradient<T, M>{
                                 Matrix(dout.data() + s * dout.stride_0(), samples, dout.extent(1)),
                                 g, zeros, shape});
        for (std::size_t e = 0; e < 16; ++e) {
          kpmap::detail::gemm(
              exec, "T", "N", T(1), Matrix(v.data() + e * tiles * rows, tiles, rows),
              Matrix(g.data() + e * tiles * shape.cout, tiles, shape.cout), T(s == 0 ? 0 : 1),
              Matrix(du.data() + e * rows * shape.cout, rows, shape.cout));
        }
      }
      Kokkos::parallel_for(
          "kpmap::train::conv2d::winograd_weight_gradient",
          Kokkos::RangePolicy<Exec>(exec, 0, rows * shape.cout),
          detail::WinogradWeightGradient<T, M>{du, this->dw_, this->db_, shape.cin, shape.cout,
                                               this->grad_beta_ != T(0)});
    }
  }

  // f(s, y, x) for the pixels of `samples` images of h x w, x fastest: on a
  // GPU one thread per pixel (a 3-D range); on the host one parallel
  // iteration per image row, x in a plain inner loop.
  template <class F>
  static void for_pixels(const char* label, const Exec& exec, std::size_t samples, std::size_t h,
                         std::size_t w, const F& f) {
    if constexpr (kpmap::detail::host_shortcut_v<Exec>) {
      Kokkos::parallel_for(label, Kokkos::RangePolicy<Exec>(exec, 0, samples * h),
                           detail::ImageRows<F>{f, h, w});
    } else {
      Kokkos::parallel_for(label,
                           row_major_range<3, Kokkos::IndexType<std::int64_t>>(
                               exec, {0, 0, 0},
                               {static_cast<std::int64_t>(samples), static_cast<std::int64_t>(h),
                                static_cast<std::int64_t>(w)}),
                           f);
    }
  }
  // Where the patches of the chunk from sample `s` on are.
  T* at(std::size_t s) const { return cols_.data() + (keep_ ? s * pixels() * (patch() + 1) : 0); }
  // [cols | 1] of the samples `in`, the chunk from sample `s` on.
  template <class In>
  Matrix patches(const Exec& exec, const In& in, std::size_t s) const {
    const Matrix cols(at(s), in.extent(0) * pixels(), patch() + 1);
    for_pixels("kpmap::train::conv2d::im2col", exec, in.extent(0), ay_.out, ax_.out,
               detail::Im2col<T, M>{in, cols, ay_, ax_, k_, stride_, this->input_.channels});
    return cols;
  }
  std::size_t pixels() const { return ay_.out * ax_.out; }
  std::size_t filters_, k_, stride_;
  bool same_;
  ConvAxis ay_, ax_;
  using Joined = Kokkos::View<T**, Kokkos::LayoutRight, M>;
  using Sum = std::conditional_t<(sizeof(T) >= sizeof(float)), T, float>;  // dwbt_'s sums
  using Transposed = Kokkos::View<Sum**, Kokkos::LayoutRight, M>;
  MaxPool2D<T, M>* pool_ = nullptr;  // the max pooling computed here (absorb_next)
  detail::PatchOffsets offsets_;     // of a small patch (direct_patch_limit)
  std::size_t chunk_bytes_ = host_chunk_bytes, keep_bytes_ = host_keep_bytes;
  std::size_t chunk_ = 1;
  bool keep_ = true;  // cols_ holds the whole batch's patches
  bool winograd_ = winograd_applies();
  std::size_t wchunk_ = 1;      // samples per chunk of the Winograd kernels
  Kokkos::View<T*, M> wu_;      // the 16 transformed filters, (16 cin) x cout
  Kokkos::View<T*, M> wvm_;     // a chunk's transformed tiles, then the products' results
  Kokkos::View<T*, M> wzeros_;  // the padding the input tiles read; the adjoint's bias
  Kokkos::View<T*, M> cols_;    // a chunk's [cols | 1], then its dcols
  Kokkos::View<T*, M> wb_;      // [W | b], outputs x (patch + 1), or its transpose
  Joined dwb_;                  // [dW | db], outputs x (patch + 1)
  Transposed dwbt_;             // its transpose, with pool_ (PooledWeightGradient)
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
