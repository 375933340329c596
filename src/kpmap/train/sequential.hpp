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
             const Exec& exec = Exec())
      : input_(input),
        layers_(std::move(layers)),
        loss_(make_loss<C, M, T>(loss)),
        classification_(loss_info(loss.name).classification),
        capacity_(capacity),
        exec_(exec) {
    check_stack(input_, layers_, loss);
    std::size_t total = 0, numbered = 0;
    layer_span_.resize(layers_.size() + 1);
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      layer_span_[l] = total;
      const auto specs = layers_[l]->parameters();
      for (const auto& s : specs) {
        slices_.push_back({"layer" + std::to_string(numbered) + "." + s.name, total, s});
        total += s.size();
      }
      if (!specs.empty()) ++numbered;
    }
    layer_span_.back() = total;
    StackFusion fusion = fuse_stack(layers_);
    absorbed_ = std::move(fusion.absorbed);
    ends_ = std::move(fusion.ends);
    params_.all = Kokkos::View<T*, M>("kpmap::train::params", total);
    grads_.all = Kokkos::View<T*, M>("kpmap::train::grads", total);
    C* p = nullptr;
    C* g = nullptr;
    if constexpr (mixed) {
      compute_params_ = Kokkos::View<C*, M>("kpmap::train::compute_params", total);
      compute_grads_ = Kokkos::View<C*, M>("kpmap::train::compute_grads", total);
      p = compute_params_.data();
      g = compute_grads_.data();
    } else {
      p = params_.all.data();
      g = grads_.all.data();
    }
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      layers_[l]->bind(p + layer_span_[l], g + layer_span_[l]);
    }
    allocate_work();
  }

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
  void shard_gradients(AxisRef axis) {
    if constexpr (mixed) {
      throw Error("kpmap::train::Sequential: the gradient is not sharded under mixed precision");
    } else {
      shards_.shard_gradients(layer_span_, axis);
      for (std::size_t l = 0; l < layers_.size(); ++l) {
        if (shards_.has_buffer(l)) {
          layers_[l]->bind(params_.all.data() + layer_span_[l], shards_.gradient_buffer(l));
        }
      }
      grads_.all = Kokkos::View<T*, M>();
    }
  }
  /// \brief Whether shard_gradients() was called.
  bool gradients_sharded() const { return shards_.gradients(); }

  /// \brief ZeRO stage 3 (train.sharding = "parameters", FSDP,
  /// train/sharding.hpp): as shard_gradients(), and from here on each rank
  /// keeps only its part of the parameters too (parameter_part(), the same
  /// elements as its gradient part), each layer's all-gathered before its
  /// forward and backward passes; params() is empty after. Not under mixed
  /// precision.
  void shard_parameters(AxisRef axis) {
    if constexpr (mixed) {
      throw Error("kpmap::train::Sequential: the parameters are not sharded under mixed precision");
    } else {
      if (!gradients_sharded()) shard_gradients(axis);
      shards_.shard_parameters(exec_, params_.all);
      for (std::size_t l = 0; l < layers_.size(); ++l) {
        if (shards_.has_buffer(l)) {
          layers_[l]->bind(shards_.parameter_buffer(l), shards_.gradient_buffer(l));
        }
      }
      kpmap::detail::fence(exec_, "kpmap::train::Sequential::shard_parameters");
      params_.all = Kokkos::View<T*, M>();
      shards_.forget_gathered();
    }
  }
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
  std::size_t whole_parameter_count() const {
    std::size_t n = 0;
    for (const auto& s : slices_) {
      std::size_t size = 1;
      for (std::size_t e : s.spec.whole.empty() ? s.spec.extents : s.spec.whole) size *= e;
      n += size;
    }
    return n;
  }
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
  void initialize(std::uint64_t seed) {
    std::uint64_t offset = 0;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      offset += layers_[l]->initialize(exec_, seed, offset);
      if (parameters_sharded() && shards_.has_buffer(l)) shards_.keep_own_block(exec_, l);
    }
    shards_.forget_gathered();
    if constexpr (mixed) {
      // The layers drew into the compute copy; the master takes its values.
      cast(params_.all, compute_params_, 0, params_.all.size(), T(1), false);
    }
    kpmap::detail::fence(exec_, "kpmap::train::Sequential::initialize");
  }

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
                             AxisRef axis, double* wait_seconds = nullptr, MicroBatch micro = {}) {
    const std::size_t n = last - first;
    const bool single = micro.first && micro.last;
    const bool sharded = gradients_sharded();
    pending_.clear();
    if (micro.first) {
      refresh_compute_params();
      shards_.forget_gathered();  // the optimizer, a restart or a test may have changed them
    }
    if (n == 0) {
      if (micro.first && !sharded) Kokkos::deep_copy(exec_, grads_.all, T(0));
      Kokkos::deep_copy(exec_, sums_, 0.0);
      if (parameters_sharded()) forward(data, order, first, 0);  // the gathers, with the others
    } else {
      const ProfilingRegion region("kpmap::train::forward");
      forward(data, order, first, n);
      output_delta(n, global_batch, mixed ? loss_scale_ : 1.0);
    }
    if (!single) {
      // The step's (loss, correct) sums over its micro-batches, on the device.
      Kokkos::parallel_for("kpmap::train::sequential::carry_sums",
                           Kokkos::RangePolicy<Exec>(exec_, 0, 2),
                           detail::CarrySums<M>{step_sums_, sums_, micro.first});
    }
    const Kokkos::View<double*, M>& step_sums = single ? sums_ : step_sums_;
    if (micro.last) pending_.push_back(ipsum(exec_, step_sums, axis));
    backward(n, micro, axis);
    // Every micro-batch's reductions end here: a later one's part is added.
    if (sharded) shards_.finish_micro_batch(exec_, micro.first, wait_seconds);
    if (!micro.last) return {};
    const ProfilingRegion wait_region("kpmap::train::gradient_psum_wait");
    const double t0 = MPI_Wtime();
    for (auto& r : pending_) r.wait();
    if (wait_seconds != nullptr) *wait_seconds += MPI_Wtime() - t0;
    settled_ = true;
    return {exec_, step_sums, static_cast<double>(global_batch > 0 ? global_batch : 1)};
  }

  /// \brief Loss, accuracy and confusion matrix over every rank's whole
  /// shard, in batches of capacity() samples. Collective over `axis`.
  Evaluation evaluate(const Shard<T, M>& data, AxisRef axis) {
    double local[2] = {0, 0};
    const Kokkos::View<std::uint32_t*, M> none;
    const bool ce = classification_;
    if (ce) Kokkos::deep_copy(exec_, confusion_, 0.0);
    refresh_compute_params();
    shards_.forget_gathered();
    // Sharded parameters: every rank gathers each layer's as often as the
    // rank with the most batches, without samples once its own are done.
    std::size_t batches = (data.rows() + capacity_ - 1) / capacity_;
    if (parameters_sharded()) batches = pmax(batches, axis);
    for (std::size_t k = 0, first = 0; k < batches; ++k, first += capacity_) {
      const std::size_t n = first < data.rows() ? std::min(capacity_, data.rows() - first) : 0;
      forward(data, none, first, n);
      if (n == 0) continue;
      output_delta(n, 1, 1.0);
      if (ce) {
        Kokkos::parallel_for(
            "kpmap::train::sequential::confusion", Kokkos::RangePolicy<Exec>(exec_, 0, n),
            detail::CountConfusion<C, M, T>{rows(acts_.back(), n), yb_, confusion_});
      }
      read_sums();
      local[0] += sums_host_(0);
      local[1] += sums_host_(1);
      kpmap::heartbeat();  // a long validation pass is progress, chunk by chunk
    }
    Evaluation e;
    const double count = static_cast<double>(data.global_rows);
    const double loss = psum(local[0], axis);
    const double correct = psum(local[1], axis);
    e.loss = count > 0 ? loss / count : 0.0;
    e.accuracy = count > 0 ? correct / count : 0.0;
    if (ce) {
      psum_inplace(exec_, confusion_, axis);
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), confusion_);
      e.classes = classes();
      e.confusion.assign(h.data(), h.data() + h.size());
    }
    return e;
  }

 private:
  static Batch rows(const Batch& m, std::size_t n) {
    if (m.data() == nullptr) return Batch();
    return Kokkos::subview(m, Kokkos::make_pair(std::size_t(0), n), Kokkos::ALL());
  }

  // The work arrays for capacity_ samples (at least one).
  void allocate_work() {
    if (capacity_ == 0) capacity_ = 1;
    StackArrays<C, M> arrays(input_, layers_, {absorbed_, ends_}, capacity_);
    acts_ = std::move(arrays.acts);
    deltas_ = std::move(arrays.deltas);
    yb_ = Kokkos::View<T*, M>("kpmap::train::sequential::y", capacity_);
    sums_ = Kokkos::View<double*, M>("kpmap::train::sequential::sums", 2);
    step_sums_ = Kokkos::View<double*, M>("kpmap::train::sequential::step_sums", 2);
    pending_.reserve(layers_.size() + 1);
    sums_host_ = Kokkos::create_mirror_view(sums_);
    const std::size_t c = classification_ ? classes() : 0;
    confusion_ = Kokkos::View<double**, Kokkos::LayoutRight, M>("kpmap::train::confusion", c, c);
  }

  void read_sums() {
    Kokkos::deep_copy(exec_, sums_host_, sums_);
    kpmap::detail::fence(exec_, "kpmap::train::Sequential: batch sums on the host");
  }

  // The forward pass of n samples (none: only the gathers of sharded
  // parameters, which every rank takes part in).
  void forward(const Shard<T, M>& data, const Kokkos::View<std::uint32_t*, M>& order,
               std::size_t first, std::size_t n) {
    if (n > capacity_) throw Error("kpmap::train::Sequential: batch larger than the work arrays");
    if (n > 0 && data.x.extent(1) != input_.size()) {
      throw Error("kpmap::train::Sequential: the data has " + std::to_string(data.x.extent(1)) +
                  " features per sample, the model takes a " + input_.str());
    }
    if (n > 0) {
      const auto in = rows(acts_[0], n);
      Kokkos::parallel_for("kpmap::train::sequential::gather",
                           Kokkos::RangePolicy<Exec>(exec_, 0, in.size()),
                           detail::GatherRows<T, M, C>{data.x, data.y, order, in, yb_, first});
    }
    const bool gathers = parameters_sharded();
    if (gathers) shards_.gather_first(exec_);
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      if (gathers && shards_.has_buffer(l)) shards_.before_forward(exec_, l);
      if (n > 0 && !absorbed_[l]) {
        layers_[l]->forward(exec_, rows(acts_[l], n), rows(acts_[ends_[l]], n));
      }
    }
  }

  // The backward pass of n samples, each layer's gradient handed to its
  // reduction (a psum in the step's last micro-batch, or the sharded
  // reduce-scatter) as soon as it exists.
  void backward(std::size_t n, MicroBatch micro, AxisRef axis) {
    const ProfilingRegion region("kpmap::train::backward");
    const bool sharded = gradients_sharded();
    for (std::size_t l = layers_.size(); l-- > 0;) {
      const bool bucket = sharded && shards_.has_buffer(l);
      if (bucket) shards_.before_backward(exec_, l);
      if (n > 0 && !absorbed_[l]) {
        // Mixed: each micro-batch's gradient in C is added up in T. Sharded:
        // the bucket holds one layer's gradient of one micro-batch.
        layers_[l]->accumulate_gradients(!mixed && !sharded && !micro.first);
        layers_[l]->backward(exec_, rows(acts_[l], n), rows(acts_[ends_[l]], n),
                             rows(deltas_[ends_[l]], n), rows(deltas_[l], n));
        if constexpr (mixed) {
          cast(grads_.all, compute_grads_, layer_span_[l], layer_span_[l + 1],
               static_cast<T>(1.0 / loss_scale_), !micro.first);
        }
      }
      if (bucket) {
        shards_.reduce(exec_, l, n == 0, micro.first);
      } else if (micro.last && layer_span_[l + 1] > layer_span_[l]) {
        // Hand this layer's gradient to MPI (fenced inside) before going on.
        pending_.push_back(ipsum(
            exec_,
            Kokkos::subview(grads_.all, Kokkos::make_pair(layer_span_[l], layer_span_[l + 1])),
            axis));
      }
      // Let MPI progress between kernels. The first step holds every
      // reduction until its end instead, so that the staging pool (where
      // device paths stage) sizes itself for all of them at once: later steps
      // reuse those buffers in whatever order MPI completes them.
      if (settled_) {
        for (auto& r : pending_) r.test();
        if (sharded) shards_.test();
      }
    }
  }

  void output_delta(std::size_t n, std::size_t global_batch, double loss_scale) {
    loss_->delta_and_sums(
        exec_, rows(acts_.back(), n), yb_, rows(deltas_.back(), n),
        static_cast<T>(loss_scale) / static_cast<T>(global_batch > 0 ? global_batch : 1), sums_);
  }

  // to[begin, end) = from[begin, end) * scale (+ to, if add), converted.
  template <class To, class From>
  void cast(const Kokkos::View<To*, M>& to, const Kokkos::View<From*, M>& from, std::size_t begin,
            std::size_t end, To scale, bool add) {
    using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
    Kokkos::parallel_for(
        "kpmap::train::sequential::cast", Kokkos::RangePolicy<Exec>(exec_, 0, end - begin),
        detail::CastScaled<To, From, M>{
            Kokkos::View<To*, M, Unmanaged>(to.data() + begin, end - begin),
            Kokkos::View<const From*, M, Unmanaged>(from.data() + begin, end - begin), scale, add});
  }

  // Mixed: the compute copy takes the master parameters (which the
  // optimizer, a restart or a test may have changed since the last step).
  void refresh_compute_params() {
    if constexpr (mixed) {
      cast(compute_params_, params_.all, 0, params_.all.size(), C(1), false);
    }
  }

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

}  // namespace kpmap::train
