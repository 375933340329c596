// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief A model that chains layers: the shapes are checked when it is
/// built, the parameters of all layers live in one flat View (as do their
/// gradients), forward and backward run the layers' kernels on one execution
/// space instance, and each layer's gradient is handed to a psum as soon as
/// the backward pass has produced it, so the reduction of the last layers
/// overlaps the backward pass of the first.
///
/// Mixed precision: Sequential<T, M, C> with a narrower compute type C
/// (Kokkos::Experimental::half_t under T = float) keeps the parameters, the
/// gradient, its psum, the optimizer and checkpoints in T (the master copy)
/// and runs the layers' forward and backward passes in C on a copy of the
/// parameters cast down at the start of every step. The output delta is
/// multiplied by a loss scale, so small gradients do not flush to zero in
/// C, and divided out again when each layer's gradient is cast up to T.

#include <kpmap/base/error.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/collectives/request.hpp>
#include <kpmap/run/watchdog.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/layer_stack.hpp>
#include <kpmap/train/layers/layer.hpp>
#include <kpmap/train/losses/loss.hpp>
#include <kpmap/train/model.hpp>
#include <kpmap/train/sharding.hpp>
#include <kpmap/train/types.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace kpmap::train {

namespace detail {
/// carried(i) = sums(i), plus what it held unless `first`: a step's (loss,
/// correct) sums over its micro-batches.
template <class M>
struct CarrySums {
  Kokkos::View<double*, M> carried;
  Kokkos::View<const double*, M> sums;
  bool first;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    carried(i) = first ? sums(i) : carried(i) + sums(i);
  }
};
}  // namespace detail

/// \brief T: the type of the parameters, the data, the gradient's
/// reduction and the optimizer; C: the type the layers compute in (T, or a
/// narrower one for mixed precision).
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space, class C = T>
class Sequential {
 public:
  using value_type = T;
  using compute_type = C;
  using memory_space = M;
  using Exec = typename M::execution_space;
  using Params = FlatParams<T, M>;
  using LayerPtr = std::unique_ptr<Layer<C, M>>;
  using Batch = typename Layer<C, M>::Batch;
  /// A step's loss and accuracy, on the device (see loss_and_gradient).
  using StepLoss = SumStepLoss<Exec>;
  /// Whether the layers compute in a type of their own (mixed precision).
  static constexpr bool mixed = !std::is_same_v<T, C>;
  static_assert(detail::IsLayerType<C, M>::value && detail::IsLossType<C, M, T>::value,
                "kpmap::train::Sequential<T, M, C> needs layers computing in C and a loss of C "
                "outputs with T targets: see KPMAP_TRAIN_FOR_EACH_LAYER_TYPE and "
                "KPMAP_TRAIN_FOR_EACH_LOSS_TYPE (train/types.hpp)");

  /// \brief One parameter array of one layer, within the flat vectors.
  struct Slice {
    std::string name;  ///< "layer0.w": parametrized layers are numbered from 0
    std::size_t offset = 0;
    ParamSpec spec;
  };

  /// \brief Chains `layers` (each built for the previous one's output
  /// shape; the first for `input`), with work arrays for local batches of up
  /// to `capacity` samples. \throws ShapeError when the shapes do not chain
  /// or the last output does not suit the loss.
  Sequential(Shape input, std::vector<LayerPtr> layers, const Loss& loss, std::size_t capacity,
             const Exec& exec = Exec());

  const Shape& input_shape() const { return input_; }
  const std::vector<LayerPtr>& layers() const { return layers_; }
  std::size_t capacity() const { return capacity_; }
  const Exec& exec() const { return exec_; }
  std::size_t classes() const { return layers_.back()->output_shape().channels; }
  /// The parameters (the master copy, under mixed precision).
  const FlatParams<T, M>& params() const { return params_; }
  /// The gradient of the last step, reduced over the ranks (empty once
  /// shard_gradients() was called: gradient_part() holds this rank's part).
  const FlatParams<T, M>& grads() const { return grads_; }

  /// \brief ZeRO stage 2 (train.sharding = "gradients", train/sharding.hpp):
  /// from here on each rank keeps only its part of the reduced gradient
  /// (gradient_part()), each layer's reduce-scattered as soon as its backward
  /// pass is done; grads() is empty after. Not under mixed precision.
  void shard_gradients(AxisRef axis);
  /// \brief Whether shard_gradients() was called.
  bool gradients_sharded() const { return shards_.gradients(); }

  /// \brief ZeRO stage 3 (train.sharding = "parameters", FSDP,
  /// train/sharding.hpp): as shard_gradients(), and from here on each rank
  /// keeps only its part of the parameters too (parameter_part(), the same
  /// elements as its gradient part), each layer's all-gathered before its
  /// forward and backward passes; params() is empty after. Not under mixed
  /// precision.
  void shard_parameters(AxisRef axis);
  /// \brief Whether shard_parameters() was called.
  bool parameters_sharded() const { return shards_.parameters(); }
  /// \brief This rank's part of the parameters, once shard_parameters()
  /// was called (empty before): elements [first, last) of them laid end to
  /// end, as gradient_part() and Optimizer::owned() split them. Whoever
  /// changes it (the optimizer, a restart) changes the model.
  const Kokkos::View<T*, M>& parameter_part() const { return shards_.parameter_part(); }
  /// \brief The two work buffers the layers' parameters are gathered into,
  /// once shard_parameters() was called.
  std::size_t parameter_bucket_bytes() const { return shards_.parameter_bucket_bytes(); }
  /// \brief This rank's part of the last step's reduced gradient, once
  /// shard_gradients() was called (empty before).
  const Kokkos::View<T*, M>& gradient_part() const { return shards_.gradient_part(); }
  /// \brief The two work buffers the layers write their gradients into,
  /// once shard_gradients() was called.
  std::size_t gradient_bucket_bytes() const { return shards_.gradient_bucket_bytes(); }
  /// \brief Mixed precision: the output delta's factor, divided out of
  /// every gradient before its reduction (a power of two, so that the
  /// scaling itself rounds nothing). Default 1; no effect without mixed.
  void set_loss_scale(double s) { loss_scale_ = s; }
  double loss_scale() const { return loss_scale_; }
  /// \brief Parameters this rank's layers hold (of a split layer, its block).
  std::size_t parameter_count() const { return layer_span_.back(); }
  /// \brief Parameters of the whole model, its split layers counted whole.
  std::size_t whole_parameter_count() const;
  const std::vector<Slice>& slices() const { return slices_; }

  /// \brief Calls f(name, view) for every parameter array, as a View (of
  /// rank 1 or 2) into `flat`: the parameters, the gradient, or an
  /// optimizer moment of the same length.
  template <class F>
  void for_each_slice(const Kokkos::View<T*, M>& flat, F&& f) const {
    using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
    for (const auto& s : slices_) {
      T* p = flat.data() + s.offset;
      if (s.spec.extents.size() == 2) {
        f(s.name, Kokkos::View<T**, Kokkos::LayoutRight, M, Unmanaged>(p, s.spec.extents[0],
                                                                       s.spec.extents[1]));
      } else {
        f(s.name, Kokkos::View<T*, M, Unmanaged>(p, s.spec.size()));
      }
    }
  }

  /// \brief f(name, view) for each parameter array of `tree` (the
  /// parameters, the gradient or an optimizer moment): for_each_slice.
  template <class F>
  void for_each_named(const Params& tree, F&& f) const {
    for_each_slice(tree.all, f);
  }

  /// \brief Initial parameters from `seed` (Glorot-uniform weights, zero
  /// biases): the same on every rank without a broadcast.
  /// Sharded parameters: each layer draws all of its own into its work
  /// buffer, and the rank keeps its part.
  void initialize(std::uint64_t seed);

  /// \brief One line per layer: what it is, its shapes and parameter count.
  std::vector<std::string> summary() const { return stack_summary(layers_); }
  /// \brief Multiply-adds of one sample's forward pass.
  double forward_flops() const { return stack_forward_flops(layers_); }

  /// \brief Loss and gradient (into grads()) of one global batch: this
  /// rank's samples are `order[first, last)` of `data` (or [first, last)
  /// without an order), at most capacity(); `global_batch` counts the
  /// step's samples over all ranks, so the psum of the gradients is that of
  /// the batch mean (a rank without samples adds zeros). Of a step in
  /// micro-batches (`micro`), only the last reduces (with sharded gradients,
  /// each) and returns the step's loss and accuracy, left on the device;
  /// the time waited for reductions is added to `wait_seconds`, if given.
  /// Allocates nothing, copies nothing to the host, fences only exec().
  StepLoss loss_and_gradient(const Shard<T, M>& data, const Kokkos::View<std::uint32_t*, M>& order,
                             std::size_t first, std::size_t last, std::size_t global_batch,
                             AxisRef axis, double* wait_seconds = nullptr, MicroBatch micro = {});

  /// \brief Loss, accuracy and confusion matrix over every rank's whole
  /// shard, in batches of capacity() samples. Collective over `axis`.
  Evaluation evaluate(const Shard<T, M>& data, AxisRef axis);

 private:
  static Batch rows(const Batch& m, std::size_t n) {
    if (m.data() == nullptr) return Batch();
    return Kokkos::subview(m, Kokkos::make_pair(std::size_t(0), n), Kokkos::ALL());
  }

  // The work arrays for capacity_ samples (at least one).
  void allocate_work();

  void read_sums();

  // The forward pass of n samples (none: only the gathers of sharded
  // parameters, which every rank takes part in).
  void forward(const Shard<T, M>& data, const Kokkos::View<std::uint32_t*, M>& order,
               std::size_t first, std::size_t n);

  // The backward pass of n samples, each layer's gradient handed to its
  // reduction (a psum in the step's last micro-batch, or the sharded
  // reduce-scatter) as soon as it exists.
  void backward(std::size_t n, MicroBatch micro, AxisRef axis);

  void output_delta(std::size_t n, std::size_t global_batch, double loss_scale);

  // to[begin, end) = from[begin, end) * scale (+ to, if add), converted.
  template <class To, class From>
  void cast(const Kokkos::View<To*, M>& to, const Kokkos::View<From*, M>& from, std::size_t begin,
            std::size_t end, To scale, bool add);

  // Mixed: the compute copy takes the master parameters (which the
  // optimizer, a restart or a test may have changed since the last step).
  void refresh_compute_params();

  Shape input_;
  std::vector<LayerPtr> layers_;
  std::unique_ptr<LossFunction<C, M, T>> loss_;
  bool classification_ = false;  // the loss's targets are classes: accuracy, confusion
  std::size_t capacity_;
  Exec exec_;
  std::vector<Slice> slices_;
  std::vector<std::size_t> layer_span_;  // layer l's parameters: [span[l], span[l+1])
  std::vector<bool> absorbed_;           // a layer another applies (absorb_relu, absorb_next)
  std::vector<std::size_t> ends_;  // layer l writes acts_[ends_[l]] (l + 1 unless absorb_next)
  FlatParams<T, M> params_, grads_;
  Kokkos::View<C*, M> compute_params_, compute_grads_;  // mixed precision only
  double loss_scale_ = 1;
  std::vector<Batch> acts_, deltas_;
  Kokkos::View<T*, M> yb_;
  Kokkos::View<double*, M> sums_;       // (loss, correct) of a batch
  Kokkos::View<double*, M> step_sums_;  // ... added over a step's micro-batches
  typename Kokkos::View<double*, M>::HostMirror sums_host_;
  Kokkos::View<double**, Kokkos::LayoutRight, M> confusion_;
  std::vector<Request> pending_;  // a step's reductions, reused from step to step
  bool settled_ = false;          // a step has run: its buffers are in the pools
  LayerShards<T, M> shards_;      // ZeRO 2 and 3 (shard_gradients, shard_parameters)
};

// Compiled once, in kpmap's library (train/instances/, from
// train/sequential_def.hpp), for each model type: a program that uses one
// compiles only what it calls inline.
#define KPMAP_TRAIN_EXTERN_SEQUENTIAL_(T, M, C) extern template class Sequential<T, M, C>;
KPMAP_TRAIN_FOR_EACH_MODEL_TYPE(KPMAP_TRAIN_EXTERN_SEQUENTIAL_)
#undef KPMAP_TRAIN_EXTERN_SEQUENTIAL_

}  // namespace kpmap::train
