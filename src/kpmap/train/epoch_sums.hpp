// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief An epoch's training loss and accuracy as its steps go: (loss,
/// correct) sums weighted by each step's global batch, added on the device
/// by a kernel after every step (a step copies nothing to the host), with
/// the first step whose loss was not finite. The host reads them for a log
/// line, at the epoch's end and for a checkpoint: one copy and one fence.

#include <kpmap/base/detail/kokkos_compat.hpp>
#include <kpmap/base/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace kpmap::train {

namespace detail {
/// Adds a step's loss and accuracy, weighted by its global batch, to the
/// epoch's sums, and keeps the first step whose loss is not finite (NaN or
/// Inf: x - x is not 0).
template <class M, class StepLoss>
struct AddStepLoss {
  Kokkos::View<double*, M> sums;
  StepLoss step;
  double weight;
  double index;
  KOKKOS_INLINE_FUNCTION void operator()(int) const {
    const double loss = step.loss();
    sums(0) += loss * weight;
    sums(1) += step.accuracy() * weight;
    if (sums(2) < 0 && !(loss - loss == 0.0)) {
      sums(2) = index;
      sums(3) = loss;
    }
  }
};
}  // namespace detail

/// \brief One epoch's sums in memory space M.
template <class M>
class EpochSums {
 public:
  using Exec = typename M::execution_space;
  /// \brief The sums so far, on the host.
  struct Totals {
    double loss = 0, correct = 0;
  };

  EpochSums() : sums_("kpmap::train::epoch_sums", 4), host_(Kokkos::create_mirror_view(sums_)) {}

  /// \brief The epoch starts from (loss, correct): 0, or a resumed epoch's.
  void start(const Exec& exec, double loss, double correct) {
    host_(0) = loss;
    host_(1) = correct;
    host_(2) = -1;  // no step with a loss that is not finite
    host_(3) = 0;
    Kokkos::deep_copy(exec, sums_, host_);
  }
  /// \brief Adds step `index`'s loss (left on the device), weighted by its
  /// global batch `weight`: one kernel, no copy.
  template <class StepLoss>
  void add(const Exec& exec, const StepLoss& step, double weight, std::size_t index) {
    Kokkos::parallel_for(
        "kpmap::train::epoch_sums", Kokkos::RangePolicy<Exec>(exec, 0, 1),
        detail::AddStepLoss<M, StepLoss>{sums_, step, weight, static_cast<double>(index)});
  }
  /// \brief The sums on the host (one copy, one fence of `exec`). \throws
  /// Error (exit_code::diverged, on every rank: the sums are the same on
  /// all) naming the first step of epoch `epoch` (from 0) of `batches`
  /// whose loss was not finite, `note` appended.
  Totals fetch(const Exec& exec, long long epoch, std::size_t batches, const std::string& note) {
    Kokkos::deep_copy(exec, host_, sums_);
    kpmap::detail::fence(exec, "kpmap::train::Trainer: the epoch's loss on the host");
    if (host_(2) >= 0) {
      throw Error("training diverged: the loss is " + std::to_string(host_(3)) + " at epoch " +
                      std::to_string(epoch + 1) + ", step " +
                      std::to_string(static_cast<long long>(host_(2)) + 1) + " of " +
                      std::to_string(batches) + " (try a smaller optimizer.learning_rate)" + note,
                  exit_code::diverged, ErrorScope::all_ranks);
    }
    return {host_(0), host_(1)};
  }

 private:
  // (loss sum, correct sum, first step whose loss is not finite or -1, that loss)
  Kokkos::View<double*, M> sums_;
  typename Kokkos::View<double*, M>::HostMirror host_;
};

}  // namespace kpmap::train
