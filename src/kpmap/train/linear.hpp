// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The linear model y ~ X w + b with the mean squared error, as a
/// Trainer drives it (train/linear_gradient.hpp has its kernels): one pass
/// over the local rows and one fused psum of (grad w, grad b, loss) a step.

#include <kpmap/base/error.hpp>
#include <kpmap/train/data.hpp>
#include <kpmap/train/linear_gradient.hpp>
#include <kpmap/train/losses/loss.hpp>
#include <kpmap/train/model.hpp>
#include <kpmap/train/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kpmap::train {

/// \brief The linear model behind the interface a Trainer drives (see
/// Sequential): the fused gradient pass, one psum of (grad w, grad b, loss)
/// per step, which sit side by side in one array so that the psum is one
/// message with nothing to pack. Micro-batches are not needed: the pass
/// reads its rows once.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class LinearModel {
 public:
  using value_type = T;
  using memory_space = M;
  using Exec = typename M::execution_space;
  using Params = LinearParams<T, M>;
  /// A step's loss, on the device (see loss_and_gradient).
  using StepLoss = MeanStepLoss<Exec, T>;

  /// \param capacity the most rows of one step on one rank.
  LinearModel(std::size_t features, std::size_t capacity, const Exec& exec = Exec());

  const Params& params() const { return p_; }
  const Params& grads() const { return g_; }
  const Exec& exec() const { return exec_; }
  std::size_t parameter_count() const { return p_.w.size() + 1; }
  /// \brief The same: the linear model is never split.
  std::size_t whole_parameter_count() const { return parameter_count(); }

  template <class F>
  void for_each_named(const Params& tree, F&& f) const {
    f("w", tree.w);
    f("b", tree.b);
  }

  /// \brief Loss and gradient of one global batch (see Sequential's): the
  /// loss stays on the device. Allocates nothing, copies nothing to the host,
  /// fences only exec() (before MPI reads the array).
  StepLoss loss_and_gradient(const Shard<T, M>& data, const Kokkos::View<std::uint32_t*, M>& order,
                             std::size_t first, std::size_t last, std::size_t global_batch,
                             AxisRef axis, double* wait_seconds = nullptr, MicroBatch micro = {});

  /// \brief Mean squared error over every rank's whole shard. Collective.
  Evaluation evaluate(const Shard<T, M>& data, AxisRef axis);

 private:
  Params p_, g_;
  Kokkos::View<T*, M> reduced_;  // grad w, grad b, loss: what a step reduces
  Kokkos::View<T, M> loss_;      // within reduced_
  LinearWorkspace<T, M> ws_;
  Exec exec_;
};

template <class T, class M>
LinearModel<T, M>::LinearModel(std::size_t features, std::size_t capacity, const Exec& exec)
    : p_("params", features),
      reduced_("kpmap::train::linear::grad_and_loss", features + 2),
      ws_(capacity > 0 ? capacity : 1, features),
      exec_(exec) {
  g_.w = Kokkos::subview(reduced_, Kokkos::make_pair(std::size_t(0), features));
  g_.b = Kokkos::View<T, M>(reduced_.data() + features);
  loss_ = Kokkos::View<T, M>(reduced_.data() + features + 1);
}

template <class T, class M>
typename LinearModel<T, M>::StepLoss LinearModel<T, M>::loss_and_gradient(
    const Shard<T, M>& data, const Kokkos::View<std::uint32_t*, M>& order, std::size_t first,
    std::size_t last, std::size_t global_batch, AxisRef axis, double* wait_seconds,
    MicroBatch micro) {
  if (!micro.first || !micro.last) {
    throw Error("kpmap::train::LinearModel: the linear model takes a step's batch in one pass");
  }
  linear_local_gradient(exec_, data, order, first, last, global_batch, p_, g_, loss_, ws_);
  const double t0 = MPI_Wtime();
  psum_inplace(exec_, reduced_, axis);  // fences exec_ before MPI reads it
  if (wait_seconds != nullptr) *wait_seconds = MPI_Wtime() - t0;
  return {exec_, loss_};
}

template <class T, class M>
Evaluation LinearModel<T, M>::evaluate(const Shard<T, M>& data, AxisRef axis) {
  Evaluation e;
  e.loss = static_cast<double>(linear_loss(exec_, data, p_, axis));
  return e;
}

// Compiled once, in kpmap's library (train/instances/), for each value type:
// a program that uses one compiles only what it calls inline.
#define KPMAP_TRAIN_EXTERN_LINEAR_(T, M) extern template class LinearModel<T, M>;
KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_EXTERN_LINEAR_)
#undef KPMAP_TRAIN_EXTERN_LINEAR_

}  // namespace kpmap::train
