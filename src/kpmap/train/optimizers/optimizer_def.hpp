// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Optimizer's constructor and steps (train/optimizers/optimizer.hpp
/// declares them). kpmap's library compiles them once for each value type
/// of KPMAP_TRAIN_FOR_EACH_VALUE_TYPE, for the parameter trees of both
/// models (train/instances/). optimizer.hpp includes it: an optimizer over a
/// tree of a program's own is compiled in the program's file.

#include <kpmap/train/optimizers/optimizer.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::train {

template <class T, class M, class P>
template <class Exec>
void Optimizer<T, M, P>::step(const Exec& exec, const P& params, const P& grads) {
  auto& gs = grads_flat_;
  flatten(grads, gs, "gradient");
  update(exec, params, [&](std::size_t t) { return gs[t].data() + parts_[t].begin; });
}

template <class T, class M, class P>
template <class Exec>
void Optimizer<T, M, P>::step_from_part(const Exec& exec, const P& params,
                                        const Kokkos::View<const T*, M>& part) {
  if (part.extent(0) != owned_.second - owned_.first) {
    throw Error("kpmap::train::Optimizer::step_from_part: a gradient part of " +
                std::to_string(part.extent(0)) + " values for a part of " +
                std::to_string(owned_.second - owned_.first) + " parameters");
  }
  update(exec, params, [&](std::size_t t) { return part.data() + parts_[t].within_owned; });
}

template <class T, class M, class P>
template <class Exec>
void Optimizer<T, M, P>::step_part(const Exec& exec, const Kokkos::View<T*, M>& params,
                                   const Kokkos::View<const T*, M>& part) {
  const std::size_t owned = owned_.second - owned_.first;
  if (params.extent(0) != owned || part.extent(0) != owned) {
    throw Error("kpmap::train::Optimizer::step_part: a parameter part of " +
                std::to_string(params.extent(0)) + " values and a gradient part of " +
                std::to_string(part.extent(0)) + " for a part of " + std::to_string(owned));
  }
  apply(
      exec, [&](std::size_t t) { return params.data() + parts_[t].within_owned; },
      [&](std::size_t t) { return part.data() + parts_[t].within_owned; });
}

template <class T, class M, class P>
Optimizer<T, M, P>::Optimizer(const OptimizerConfig& config, const P& params, const Axis* axis)
    : config_(config), axis_(axis) {
  const auto [info, settings] = optimizer_settings(config);
  rule_ = optimizer_registry().factory<UpdateRuleFactory<T, M>>(info->name)(settings);
  // The elements laid end to end, split evenly: rank r keeps [first(r), first(r + 1)).
  std::size_t total = 0;
  params.for_each_view([&](const auto& v) { total += v.size(); });
  const int ranks = axis_ != nullptr ? axis_->size() : 1;
  const int me = axis_ != nullptr ? axis_->index() : 0;
  const BlockPartition split(total, ranks);
  owned_ = {split.begin(me), split.end(me)};
  std::size_t at = 0;  // the View's first element, end to end
  params.for_each_view([&](const auto& v) {
    Part part;
    part.size = v.size();
    const auto within = [&](std::size_t e) { return std::clamp(e, at, at + part.size) - at; };
    part.begin = within(owned_.first);
    part.end = within(owned_.second);
    part.within_owned = at + part.begin - std::min(at + part.begin, owned_.first);
    for (int r = 0; r < ranks; ++r) {
      part.counts.push_back(within(split.end(r)) - within(split.begin(r)));
    }
    parts_.push_back(std::move(part));
    at += v.size();
  });
  for (const std::string& name : info->state) {
    never_negative_.push_back(std::find(info->never_negative.begin(), info->never_negative.end(),
                                        name) != info->never_negative.end());
    owned_state_.emplace_back("kpmap::train::optimizer::" + name, owned_.second - owned_.first);
    State s{name, {}};
    std::size_t from = 0;  // within the owned array
    for (const Part& part : parts_) {
      const std::size_t n = part.end - part.begin;
      s.second.push_back(Kokkos::subview(owned_state_.back(), Kokkos::make_pair(from, from + n)));
      from += n;
    }
    state_.push_back(std::move(s));
  }
  // The rule's view of the state: array t's states at [t * kinds, (t + 1) * kinds).
  for (std::size_t t = 0; t < parts_.size(); ++t) {
    for (const State& s : state_) flat_state_.emplace_back(s.second[t].data(), s.second[t].size());
  }
}

}  // namespace kpmap::train
