// SPDX-License-Identifier: BSD-3-Clause
// 11 a linear solver of your own, run by kpmap-heat from a deck, without
// editing the library.
//
// Weighted (damped) Jacobi: each sweep moves every cell a fraction omega of
// the way to its Jacobi value,
//
//   x = (1 - omega) x_old + omega (b + sum_f a_f x_old(neighbour)) / diagonal,
//
// with `omega` a deck key of the solver's own: `solver.omega`, checked as
// every key is (a number from 0.01 to 1.99, did-you-mean, refused under another
// solver.method), listed by --help-deck. The registration below is all the
// library needs; main() is kpmap-heat itself, so this program takes
// kpmap-heat's command line and decks, its checkpoints and restarts:
//
//   mpiexec -n 3 ./11_custom_solver 11_custom_solver.toml
//   ./11_custom_solver --help-deck | grep -A1 omega
//
// The check: the deck is TeaLeaf's benchmark 1 (output.test_problem = 1), so
// the run compares its final U with the value TeaLeaf's reference code
// publishes and exits non-zero (5) unless they agree to 0.001 %.

#include <kpmap/apps/heat.hpp>
#include <kpmap/sim/solvers/common.hpp>
#include <kpmap/sim/stencil.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <memory>
#include <vector>

namespace sim = kpmap::sim;

// One sweep at a cell; adds |x - x_old| to the solve's error measure (as
// the built-in Jacobi does). x_old's neighbours must be current.
template <bool ThreeD, class M>
struct WeightedSweep {
  sim::Stencil<ThreeD, M> s;
  sim::CellField<M> x, xold, b;
  double omega;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, double& change) const {
    double diag = 0.0;
    const double off = s.neighbours(xold, k, j, i, diag);
    const double old = xold(k, j, i);
    const double v = old + omega * ((b(k, j, i) + off) / diag - old);
    x(k, j, i) = v;
    change += v > old ? v - old : old - v;
  }
};

// The solver, for any execution space (the library compiles it for each it
// supports). LinearSolverBase gives the first residual, global sums, the
// stopping rule (TeaLeaf's) and the messages.
template <class Exec>
class WeightedJacobi final : public sim::solvers::LinearSolverBase<Exec> {
  KPMAP_SIM_USE_LINEAR_SOLVER_BASE(sim::solvers::LinearSolverBase<Exec>);

 public:
  // Its own keys' values (the deck's, else their defaults) come with the context.
  WeightedJacobi(const sim::SolverContext<Exec>& context, const kpmap::deck::Settings& keys)
      : sim::solvers::LinearSolverBase<Exec>(context),
        omega_(keys.real("omega")),
        xold_(layout_.template allocate<double, Memory>("weighted_jacobi::x_old")),
        halo_(std::make_unique<kpmap::HaloExchange<double, Exec>>(layout_,
                                                                  std::vector<Field>{xold_})) {}

 private:
  void iterate(const Operator& A, sim::SolveResult& res) override {
    const Exec& exec = A.exec();
    for (long n = 1; n <= options_.max_iters; ++n) {
      sim::for_cells(exec, "weighted_jacobi::copy", layout_.interior(),
                     sim::kernels::Copy<Memory>{xold_, x_});
      A.visit([&](auto s) {
        constexpr bool three = decltype(s)::three_d;
        // x_old's halo exchange overlaps the sweep of the inner cells.
        sim::overlapped_reduce(exec, "weighted_jacobi::sweep", layout_,
                               WeightedSweep<three, Memory>{s, x_, xold_, b_, omega_}, *halo_,
                               sums_, timings_);
      });
      const double change = global_sum(sums_.fetch(exec));
      if (finished(res, n, std::sqrt(std::abs(change)))) return;
    }
    exhausted(res);
  }

  double omega_;
  Field xold_;
  std::unique_ptr<kpmap::HaloExchange<double, Exec>> halo_;
};

// Its deck name, a description, the whole fields a solve allocates (the
// first residual r and x_old, for the memory estimate; none more with a
// preconditioner, which it does not use) and its own keys.
KPMAP_SIM_REGISTER_SOLVER(WeightedJacobi,
                          {"weighted_jacobi", "Jacobi sweeps damped by solver.omega", 2, 0,
                           kpmap::deck::Schema("solver").real(
                               "omega", 0.8, {0.01, 1.99}, "",
                               "the share of each Jacobi update a sweep takes (1: Jacobi)")});

int main(int argc, char** argv) { return kpmap::apps::heat_main(argc, argv); }
