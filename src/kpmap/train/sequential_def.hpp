// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Sequential's member functions (train/sequential.hpp declares
/// them). kpmap's library compiles them once for each model type of
/// KPMAP_TRAIN_FOR_EACH_MODEL_TYPE (train/instances/); a program includes
/// this header only to build a Sequential of another type or memory space.

#include <kpmap/train/sequential.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::train {

template <class T, class M, class C>
Sequential<T, M, C>::Sequential(Shape input, std::vector<LayerPtr> layers, const Loss& loss,
                                std::size_t capacity, const Exec& exec)
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

template <class T, class M, class C>
void Sequential<T, M, C>::shard_gradients(AxisRef axis) {
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

template <class T, class M, class C>
void Sequential<T, M, C>::shard_parameters(AxisRef axis) {
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

template <class T, class M, class C>
std::size_t Sequential<T, M, C>::whole_parameter_count() const {
  std::size_t n = 0;
  for (const auto& s : slices_) {
    std::size_t size = 1;
    for (std::size_t e : s.spec.whole.empty() ? s.spec.extents : s.spec.whole) size *= e;
    n += size;
  }
  return n;
}

template <class T, class M, class C>
void Sequential<T, M, C>::initialize(std::uint64_t seed) {
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

template <class T, class M, class C>
typename Sequential<T, M, C>::StepLoss Sequential<T, M, C>::loss_and_gradient(
    const Shard<T, M>& data, const Kokkos::View<std::uint32_t*, M>& order, std::size_t first,
    std::size_t last, std::size_t global_batch, AxisRef axis, double* wait_seconds,
    MicroBatch micro) {
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

template <class T, class M, class C>
Evaluation Sequential<T, M, C>::evaluate(const Shard<T, M>& data, AxisRef axis) {
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
      Kokkos::parallel_for("kpmap::train::sequential::confusion",
                           Kokkos::RangePolicy<Exec>(exec_, 0, n),
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

template <class T, class M, class C>
void Sequential<T, M, C>::allocate_work() {
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

template <class T, class M, class C>
void Sequential<T, M, C>::read_sums() {
  Kokkos::deep_copy(exec_, sums_host_, sums_);
  kpmap::detail::fence(exec_, "kpmap::train::Sequential: batch sums on the host");
}

template <class T, class M, class C>
void Sequential<T, M, C>::forward(const Shard<T, M>& data,
                                  const Kokkos::View<std::uint32_t*, M>& order, std::size_t first,
                                  std::size_t n) {
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

template <class T, class M, class C>
void Sequential<T, M, C>::backward(std::size_t n, MicroBatch micro, AxisRef axis) {
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
          exec_, Kokkos::subview(grads_.all, Kokkos::make_pair(layer_span_[l], layer_span_[l + 1])),
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

template <class T, class M, class C>
void Sequential<T, M, C>::output_delta(std::size_t n, std::size_t global_batch, double loss_scale) {
  loss_->delta_and_sums(
      exec_, rows(acts_.back(), n), yb_, rows(deltas_.back(), n),
      static_cast<T>(loss_scale) / static_cast<T>(global_batch > 0 ? global_batch : 1), sums_);
}

template <class T, class M, class C>
template <class To, class From>
void Sequential<T, M, C>::cast(const Kokkos::View<To*, M>& to, const Kokkos::View<From*, M>& from,
                               std::size_t begin, std::size_t end, To scale, bool add) {
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  Kokkos::parallel_for(
      "kpmap::train::sequential::cast", Kokkos::RangePolicy<Exec>(exec_, 0, end - begin),
      detail::CastScaled<To, From, M>{
          Kokkos::View<To*, M, Unmanaged>(to.data() + begin, end - begin),
          Kokkos::View<const From*, M, Unmanaged>(from.data() + begin, end - begin), scale, add});
}

template <class T, class M, class C>
void Sequential<T, M, C>::refresh_compute_params() {
  if constexpr (mixed) {
    cast(compute_params_, params_.all, 0, params_.all.size(), C(1), false);
  }
}

}  // namespace kpmap::train
