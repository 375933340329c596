// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief What every layer of a Sequential model is: a per-sample input and
/// output Shape, forward and backward passes over a batch with Kokkos
/// kernels, and its parameters as named slices of the model's one flat
/// parameter vector (so the whole gradient is one contiguous View: one fused
/// pmean, one optimizer kernel).
///
/// Memory layout: a batch of activations is a row-major View (samples x
/// size); an image sample is stored NHWC, i.e. element (y, x, c) of sample s
/// is at column (y W + x) C + c. Flatten therefore moves no data.

#include <kpmap/base/error.hpp>
#include <kpmap/train/random.hpp>
#include <kpmap/train/shard.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kpmap::train {

/// \brief A layer's input does not fit it (the deck's shapes do not chain).
/// The message names the layer and both shapes.
class ShapeError : public Error {
 public:
  /// \param layer the layer at fault, counted from 1 (0: the model as a whole).
  /// \param key the layer's key at fault (`parallel`), or "" for the layer.
  explicit ShapeError(const std::string& what, std::size_t layer = 0, std::string key = "")
      : Error(what), layer_(layer), key_(std::move(key)) {}
  std::size_t layer() const noexcept { return layer_; }
  const std::string& key() const noexcept { return key_; }

 private:
  std::size_t layer_;
  std::string key_;
};

/// \brief One parameter array of a layer: its name within the layer ("w",
/// "b") and its extents (one or two).
struct ParamSpec {
  std::string name;
  std::vector<std::size_t> extents;
  /// Where a layer split over a mesh axis (tensor parallelism) keeps its
  /// block of the whole array: the whole array's extents and the block's
  /// first index in each dimension. Empty: the rank holds the whole array.
  std::vector<std::size_t> whole, start;
  std::size_t size() const {
    std::size_t n = 1;
    for (std::size_t e : extents) n *= e;
    return n;
  }
};

/// \brief A layer of a Sequential model. Layers are built for one input
/// shape (their constructor checks it and throws ShapeError when it does not
/// fit); forward and backward are host calls that enqueue kernels on the
/// execution space instance they are given and never allocate.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class Layer {
 public:
  using Exec = typename M::execution_space;
  /// A batch of activations or of their gradients: samples x per-sample size.
  using Batch = Kokkos::View<T**, Kokkos::LayoutRight, M>;
  using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Vector = Kokkos::View<T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  explicit Layer(Shape input) : input_(input) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  /// \brief The deck name ("conv2d", "dense", ...).
  virtual std::string type() const = 0;
  /// \brief "conv2d 3x3, 32 filters, same" and the like, for banners.
  virtual std::string describe() const { return type(); }
  const Shape& input_shape() const { return input_; }
  virtual Shape output_shape() const = 0;

  /// \brief The parameter arrays, in storage order (none by default).
  virtual std::vector<ParamSpec> parameters() const { return {}; }
  /// \brief Points the layer at its parameters and their gradients: the
  /// arrays of parameters(), one after the other, from `params` and `grads`.
  virtual void bind(T* /*params*/, T* /*grads*/) {}
  /// \brief Writes initial values into the bound parameters, drawn from
  /// (seed, offset + element index) so that every rank draws the same;
  /// returns how many numbers it drew (the next layer's offset).
  virtual std::uint64_t initialize(const Exec& /*exec*/, std::uint64_t /*seed*/,
                                   std::uint64_t /*offset*/) {
    return 0;
  }
  /// \brief Sizes the work arrays for batches of up to `capacity` samples
  /// (called once, before the first pass).
  virtual void reserve(std::size_t /*capacity*/) {}
  /// \brief Whether forward may write its output over its input (and
  /// backward its input gradient over its output gradient): the model then
  /// gives both the same storage. Such a layer's backward reads only `out`.
  /// Given buffers of their own it writes `out` (`din`) and leaves `in`
  /// (`dout`) as they were, as every layer does.
  virtual bool in_place() const { return false; }
  /// \brief Asked when a ReLU comes just before this layer: whether this
  /// layer will apply it itself from now on (to its output in forward, and
  /// to the gradient in backward), so that the model skips the ReLU's own
  /// passes over the larger array. Only for a layer that commutes with ReLU
  /// and gives the same values and gradients (max pooling). Default: no.
  virtual bool absorb_relu() { return false; }
  /// \brief Asked when `next` comes just after this layer (after a ReLU that
  /// `next` absorbed): whether this layer will compute `next`'s output from
  /// now on itself, so that the model skips `next`'s passes and the array
  /// between them. forward() then writes `next`'s output, and backward()
  /// takes `out` and `dout` as `next`'s. `input_gradient`: whether backward
  /// will be asked for dL/d(in) (every layer but the first). Only for a
  /// layer that gives the same values and gradients as the two apart (a
  /// first convolution of few input channels and its max pooling). Default: no.
  virtual bool absorb_next(Layer& /*next*/, bool /*input_gradient*/) { return false; }

  /// \brief out = layer(in) for the rows of `in` (out has as many).
  virtual void forward(const Exec& exec, const Batch& in, const Batch& out) = 0;
  /// \brief From dL/d(out): the parameter gradients (overwritten, or added
  /// to after accumulate_gradients(true)) and, unless `din` has no rows
  /// allocated (the first layer), dL/d(in). `in` and `out` are the forward pass's.
  virtual void backward(const Exec& exec, const Batch& in, const Batch& out, const Batch& dout,
                        const Batch& din) = 0;

  /// \brief Bytes of work arrays reserve() allocates per sample of capacity.
  virtual double work_bytes_per_sample() const { return 0; }
  /// \brief Whether the work arrays are large enough per sample that a
  /// model holding this layer evaluates in chunks of its micro-batch rather
  /// than of up to 4096 rows (a convolution's patch matrix).
  virtual bool large_work() const { return false; }
  /// \brief Whether backward adds the parameter gradients to what the
  /// gradient arrays hold (micro-batches of one step) or overwrites them.
  void accumulate_gradients(bool on) { grad_beta_ = on ? T(1) : T(0); }

  /// \brief Multiply-adds of one sample's forward pass (for benchmarks).
  virtual double forward_flops() const { return 0; }

 protected:
  Shape input_;
  T grad_beta_ = T(0);  ///< beta of the parameter gradients' gemm and gemv
};

namespace detail {
/// Glorot-uniform weights, U(-l, l) with l = sqrt(6 / (fan_in + fan_out)),
/// and zero biases. Weight i is drawn from (seed, offset + i); a block of
/// `cols` columns at (row0, col0) of a matrix of `whole_cols` columns (a
/// layer split over a mesh axis) draws each element's value of the whole
/// matrix.
template <class T, class M>
struct GlorotFill {
  Kokkos::View<T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> w;
  double limit;
  std::uint64_t seed, offset;
  std::size_t cols, row0, col0, whole_cols;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    const std::size_t at = (row0 + i / cols) * whole_cols + col0 + i % cols;
    const double u = CounterRng{seed}.uniform(offset + at, stream::init);
    w(i) = static_cast<T>((2.0 * u - 1.0) * limit);
  }
};

/// Glorot-uniform values into the `rows` x `cols` block at (row0, col0) of
/// a whole matrix of whole_rows x whole_cols, each element the value the
/// whole matrix has there. Returns the whole matrix's count of draws (the
/// next array's offset).
template <class T, class M, class Exec>
std::uint64_t glorot_block(const Exec& exec, T* w, std::size_t rows, std::size_t cols,
                           std::size_t row0, std::size_t col0, std::size_t whole_rows,
                           std::size_t whole_cols, std::size_t fan_in, std::size_t fan_out,
                           std::uint64_t seed, std::uint64_t offset) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  const std::size_t count = rows * cols;
  Kokkos::parallel_for(
      "kpmap::train::layers::glorot", Kokkos::RangePolicy<Exec>(exec, 0, count),
      GlorotFill<T, M>{Kokkos::View<T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(w, count),
                       limit, seed, offset, cols > 0 ? cols : 1, row0, col0, whole_cols});
  return whole_rows * whole_cols;
}
}  // namespace detail

}  // namespace kpmap::train
