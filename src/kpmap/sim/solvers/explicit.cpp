// SPDX-License-Identifier: BSD-3-Clause
/// The explicit (FTCS) step: x = b - (A - I) b, the stencil read straight
/// from b (the step's starting u, whose halo is exchanged behind the
/// interior), so that a step moves the stencil's arrays and nothing else.

#include <kpmap/grid/halo.hpp>
#include <kpmap/sim/solvers/solver.hpp>

#include <memory>
#include <type_traits>
#include <vector>

namespace kpmap::sim::solvers {

namespace {

template <class Exec>
class ExplicitFtcs final : public Solver<Exec> {
  using Memory = typename Exec::memory_space;
  using Field = CellField<Memory>;

 public:
  explicit ExplicitFtcs(const SolverContext<Exec>& context)
      : layout_(context.layout),
        x_(context.x),
        b_(context.b),
        timings_(context.timings),
        halo_b_(std::make_unique<HaloExchange<double, Exec>>(layout_, std::vector<Field>{b_})) {}

  SolveResult solve(const HeatOperator<Exec>& A) override {
    A.visit([&](auto s) {
      constexpr bool three = decltype(s)::three_d;
      overlapped_for(A.exec(), "kpmap::sim::explicit::step", layout_,
                     kernels::ExplicitStep<three, Memory>{s, x_, b_}, *halo_b_, timings_);
    });
    SolveResult res;
    res.converged = true;
    return res;
  }

 private:
  const CartesianLayout& layout_;
  Field x_, b_;
  Timings& timings_;
  std::unique_ptr<HaloExchange<double, Exec>> halo_b_;
};

}  // namespace

template <class Exec>
std::unique_ptr<Solver<Exec>> make_explicit(const SolverContext<Exec>& context) {
  return std::make_unique<ExplicitFtcs<Exec>>(context);
}

#define KPMAP_SIM_INSTANTIATE(E) \
  template std::unique_ptr<Solver<E>> make_explicit(const SolverContext<E>&);
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

}  // namespace kpmap::sim::solvers
