// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief ZeRO stages 2 and 3 for a model whose layers' parameters lie end to
/// end in one flat array (Sequential): which elements each rank owns, the
/// two work buffers the layers' gradients are written into and their
/// parameters gathered into (alternating from layer to layer), and the
/// reduce-scatters and all-gathers in flight between them.
///
/// Each rank owns elements [first, last) of the parameters laid end to end,
/// split evenly over the axis as Optimizer splits them. Stage 2 keeps only
/// that part of the reduced gradient: a layer's gradient is reduce-scattered
/// to its owners as soon as its backward pass is done. Stage 3 keeps only
/// that part of the parameters too: a layer's are all-gathered just before
/// its forward pass and again before its backward pass, the next layer's
/// gather started while this one computes; a buffer that still holds a
/// layer's current values (the last two layers, from the forward pass to
/// the backward) is not gathered again.

#include <kpmap/base/error.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/collectives/request.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/tools/profiling.hpp>
#include <kpmap/train/model.hpp>

#include <Kokkos_Core.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kpmap::train {

/// \brief The sharded state of a layered model over one mesh axis: empty
/// (nothing sharded) until shard_gradients().
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class LayerShards {
 public:
  using Exec = typename M::execution_space;

  /// \brief ZeRO stage 2 over `axis` for layers whose parameters are
  /// [span[l], span[l + 1]) of the flat array: this rank's part of the
  /// gradient (gradient_part()) and the two work buffers. \throws Error
  /// where a layer would give one rank more values than MPI counts.
  void shard_gradients(const std::vector<std::size_t>& span, AxisRef axis) {
    const std::size_t layers = span.size() - 1, total = span.back();
    const int ranks = axis->size();
    const BlockPartition split(total, ranks);
    const std::size_t lo = split.begin(axis->index()), hi = split.end(axis->index());
    std::size_t bucket_size[2] = {0, 0};
    std::size_t k = 0;  // the layer's number among those with parameters
    span_ = span;
    bucket_of_.assign(layers, -1);
    counts_.assign(layers, {});
    part_at_.assign(layers, 0);
    for (std::size_t l = 0; l < layers; ++l) {
      const std::size_t s = span[l], e = span[l + 1];
      if (e == s) continue;
      const int b = static_cast<int>(k++ % 2);
      bucket_of_[l] = b;
      bucket_size[b] = std::max(bucket_size[b], e - s);
      const auto in = [&](std::size_t i) { return std::clamp(i, s, e); };
      for (int r = 0; r < ranks; ++r) {
        const std::size_t count = in(split.end(r)) - in(split.begin(r));
        if (count > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
          throw Error("kpmap::train::Sequential: layer " + std::to_string(l + 1) + " gives " +
                      std::to_string(count) +
                      " gradient values to one rank, more than MPI's "
                      "reduce-scatter counts (2^31 - 1): shard it over more ranks");
        }
        counts_[l].push_back(static_cast<int>(count));
      }
      part_at_[l] = in(lo)-lo;
    }
    for (int b = 0; b < 2; ++b) {
      grad_buckets_[b] = Kokkos::View<T*, M>("kpmap::train::gradient_bucket", bucket_size[b]);
    }
    grad_part_ = Kokkos::View<T*, M>("kpmap::train::gradient_part", hi - lo);
    grad_scratch_ = Kokkos::View<T*, M>("kpmap::train::gradient_part_scratch", hi - lo);
    axis_ = &*axis;
  }
  bool gradients() const { return axis_ != nullptr; }

  /// \brief ZeRO stage 3, after shard_gradients(): this rank's part of
  /// `params` (the whole flat array) is parameter_part() from here on, and
  /// two buffers take the layers' gathers. Enqueues the copy on `exec`.
  void shard_parameters(const Exec& exec, const Kokkos::View<T*, M>& params) {
    const std::size_t lo = BlockPartition(span_.back(), axis_->size()).begin(axis_->index());
    param_part_ =
        Kokkos::View<T*, M>(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                               std::string("kpmap::train::parameter_part")),
                            grad_part_.size());
    Kokkos::deep_copy(exec, param_part_,
                      Kokkos::subview(params, Kokkos::make_pair(lo, lo + grad_part_.size())));
    for (int b = 0; b < 2; ++b) {
      param_buckets_[b] =
          Kokkos::View<T*, M>("kpmap::train::parameter_bucket", grad_buckets_[b].size());
    }
    displs_.assign(bucket_of_.size(), {});
    param_layers_.clear();
    param_index_.assign(bucket_of_.size(), 0);
    for (std::size_t l = 0; l < bucket_of_.size(); ++l) {
      if (bucket_of_[l] < 0) continue;
      param_index_[l] = param_layers_.size();
      param_layers_.push_back(l);
      int at = 0;  // every rank's block lies after those of the ranks before it
      for (int c : counts_[l]) {
        displs_[l].push_back(at);
        at += c;
      }
    }
    params_sharded_ = true;
  }
  bool parameters() const { return params_sharded_; }

  /// \brief Whether layer `l` has parameters, and so a buffer of each kind.
  bool has_buffer(std::size_t l) const { return bucket_of_[l] >= 0; }
  /// \brief Where layer `l` writes its gradient, and (stage 3) finds its parameters.
  T* gradient_buffer(std::size_t l) const { return grad_buckets_[bucket_of_[l]].data(); }
  T* parameter_buffer(std::size_t l) const { return param_buckets_[bucket_of_[l]].data(); }
  const Kokkos::View<T*, M>& gradient_part() const { return grad_part_; }
  const Kokkos::View<T*, M>& parameter_part() const { return param_part_; }
  std::size_t gradient_bucket_bytes() const {
    return (grad_buckets_[0].size() + grad_buckets_[1].size()) * sizeof(T);
  }
  std::size_t parameter_bucket_bytes() const {
    return (param_buckets_[0].size() + param_buckets_[1].size()) * sizeof(T);
  }

  /// \brief Stage 3: starts the first layer's gather, before a forward pass.
  void gather_first(const Exec& exec) { start_gather(exec, param_layers_.front()); }
  /// \brief Stage 3: layer `l`'s parameters are in its buffer, the next
  /// layer's gather started.
  void before_forward(const Exec& exec, std::size_t l) {
    use_gathered(exec, l);
    const std::size_t next = param_index_[l] + 1;
    if (next < param_layers_.size()) start_gather(exec, param_layers_[next]);
  }
  /// \brief Layer `l`'s gradient buffer free (the reduction of the layer
  /// two back, which wrote it, done), and at stage 3 its parameters in
  /// their buffer, the previous layer's gather started.
  void before_backward(const Exec& exec, std::size_t l) {
    grad_req_[bucket_of_[l]].wait();
    if (!params_sharded_) return;
    use_gathered(exec, l);
    if (param_index_[l] > 0) start_gather(exec, param_layers_[param_index_[l] - 1]);
  }
  /// \brief Stage 3: this rank's block of layer `l`'s parameters, drawn
  /// whole into its buffer (Sequential::initialize), into the part.
  void keep_own_block(const Exec& exec, std::size_t l) {
    const auto [d, at, own] = own_block(l);
    Kokkos::deep_copy(
        exec, Kokkos::subview(param_part_, Kokkos::make_pair(at, at + own)),
        Kokkos::subview(param_buckets_[bucket_of_[l]], Kokkos::make_pair(d, d + own)));
  }
  /// \brief The buffers' contents are no longer the parameters' values.
  void forget_gathered() {
    for (int b = 0; b < 2; ++b) {
      gather_req_[b].wait();
      held_[b] = -1;
    }
  }

  /// \brief Starts the reduce-scatter of layer `l`'s gradient (zeros where
  /// this rank had no samples) to this rank's part: into the gradient part
  /// for a step's first micro-batch, into the scratch part for a later one
  /// (added by finish_micro_batch()).
  void reduce(const Exec& exec, std::size_t l, bool no_samples, bool first_micro) {
    const int b = bucket_of_[l];
    const auto mine = Kokkos::subview(grad_buckets_[b],
                                      Kokkos::make_pair(std::size_t(0), span_[l + 1] - span_[l]));
    if (no_samples) Kokkos::deep_copy(exec, mine, T(0));
    const std::size_t at = part_at_[l];
    const auto own = static_cast<std::size_t>(counts_[l][static_cast<std::size_t>(axis_->index())]);
    const auto& into = first_micro ? grad_part_ : grad_scratch_;
    grad_req_[b] = ipsum_scatter_blocks(
        exec, mine, counts_[l], Kokkos::subview(into, Kokkos::make_pair(at, at + own)), *axis_);
  }
  /// \brief Lets MPI progress the reductions in flight.
  void test() {
    for (auto& r : grad_req_) r.test();
  }
  /// \brief Ends a micro-batch's reductions (the time waited added to
  /// `wait_seconds`, if given); a later micro-batch's part is added.
  void finish_micro_batch(const Exec& exec, bool first_micro, double* wait_seconds) {
    const ProfilingRegion wait_region("kpmap::train::gradient_psum_wait");
    const double t0 = MPI_Wtime();
    for (auto& r : grad_req_) r.wait();
    if (wait_seconds != nullptr) *wait_seconds += MPI_Wtime() - t0;
    if (!first_micro) {
      Kokkos::parallel_for("kpmap::train::sequential::add_gradient_part",
                           Kokkos::RangePolicy<Exec>(exec, 0, grad_part_.size()),
                           detail::CastScaled<T, T, M>{grad_part_, grad_scratch_, T(1), true});
    }
  }

 private:
  // Layer l's block of this rank's parameter part: where it lies in the
  // layer (its displacement), where in the part, and how many values.
  struct OwnBlock {
    std::size_t in_layer, in_part, count;
  };
  OwnBlock own_block(std::size_t l) const {
    const auto me = static_cast<std::size_t>(axis_->index());
    return {static_cast<std::size_t>(displs_[l][me]), part_at_[l],
            static_cast<std::size_t>(counts_[l][me])};
  }

  // Starts gathering layer l's parameters into its work buffer (this rank's
  // block copied in first), unless the buffer holds them already. The
  // gather fences `exec` first, so the layer that used the buffer before is
  // done with it.
  void start_gather(const Exec& exec, std::size_t l) {
    const int b = bucket_of_[l];
    if (held_[b] == static_cast<long>(l)) return;
    const auto [d, at, own] = own_block(l);
    const auto& buffer = param_buckets_[b];
    Kokkos::deep_copy(exec, Kokkos::subview(buffer, Kokkos::make_pair(d, d + own)),
                      Kokkos::subview(param_part_, Kokkos::make_pair(at, at + own)));
    const std::size_t size = span_[l + 1] - span_[l];
    gather_req_[b] =
        iall_gather_inplace(exec, Kokkos::subview(buffer, Kokkos::make_pair(std::size_t(0), size)),
                            counts_[l], displs_[l], *axis_);
    held_[b] = static_cast<long>(l);
  }
  // Layer l's parameters are in its buffer once this returns.
  void use_gathered(const Exec& exec, std::size_t l) {
    start_gather(exec, l);  // nothing if it was prefetched, or is still there
    gather_req_[bucket_of_[l]].wait();
  }

  // Stage 2: the axis, the layers' spans, this rank's part of the reduced
  // gradient (and a second one a later micro-batch's part lands in), the
  // two work buffers the layers write into, each layer's buffer (-1: none),
  // every rank's count of its elements, where its part lies in grad_part_,
  // and each buffer's reduction in flight.
  const Axis* axis_ = nullptr;
  std::vector<std::size_t> span_;
  Kokkos::View<T*, M> grad_part_, grad_scratch_;
  Kokkos::View<T*, M> grad_buckets_[2];
  std::vector<int> bucket_of_;
  std::vector<std::vector<int>> counts_;
  std::vector<std::size_t> part_at_;
  Request grad_req_[2];
  // Stage 3: this rank's part of the parameters, the two buffers the
  // layers' are gathered into (a layer's the same one as its gradient's),
  // every rank's displacement of its block in each layer, the layers with
  // parameters in order and each one's place among them, which layer each
  // buffer holds (-1: none, or values since changed), and each buffer's
  // gather in flight.
  bool params_sharded_ = false;
  Kokkos::View<T*, M> param_part_;
  Kokkos::View<T*, M> param_buckets_[2];
  std::vector<std::vector<int>> displs_;
  std::vector<std::size_t> param_layers_, param_index_;
  long held_[2] = {-1, -1};
  Request gather_req_[2];
};

namespace detail {
/// Whether a model shards its gradient and its parameters,
/// shard_gradients(axis) and shard_parameters(axis) (Sequential does;
/// LinearModel not).
template <class Model, class = void>
struct Shards : std::false_type {};
template <class Model>
struct Shards<
    Model, std::void_t<decltype(std::declval<Model&>().shard_gradients(std::declval<AxisRef>())),
                       decltype(std::declval<Model&>().shard_parameters(std::declval<AxisRef>()))>>
    : std::true_type {};

}  // namespace detail

}  // namespace kpmap::train
