// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/sim/solvers/common.hpp>

#include <kpmap/collectives/collectives.hpp>
#include <kpmap/tools/profiling.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>
#include <vector>

namespace kpmap::sim {

std::string sci(double v) {
  std::ostringstream s;
  s.precision(6);
  s << std::scientific << v;
  return s.str();
}

}  // namespace kpmap::sim

namespace kpmap::sim::solvers {

template <class Exec>
LinearSolverBase<Exec>::LinearSolverBase(const SolverContext<Exec>& context)
    : layout_(context.layout),
      options_(context.options),
      x_(context.x),
      b_(context.b),
      r_(context.layout.template allocate<double, Memory>("kpmap::sim::" + context.options.method +
                                                          "::r")),
      timings_(context.timings),
      name_(context.options.method),
      sums_("kpmap::sim::" + name_ + "::local_sums"),
      axis_(context.axis),
      residual_label_("kpmap::sim::" + name_ + "::residual"),
      wait_label_("kpmap::sim::" + name_ + "::sum_wait"),
      halo_x_(std::make_unique<HaloExchange<double, Exec>>(layout_, std::vector<Field>{x_})) {}

template <class Exec>
SolveResult LinearSolverBase<Exec>::solve(const Operator& A) {
  const ProfilingRegion region("kpmap::sim::solve");
  SolveResult res;
  const double rr0 = global_sum(residual(A));
  res.initial_residual = std::sqrt(rr0);
  if (!std::isfinite(rr0)) {
    res.failure = "the initial residual is " + sci(rr0) + " (NaN or Inf in the fields)";
    return res;
  }
  if (rr0 == 0.0) {  // x already solves the system (a uniform field, for one)
    res.converged = true;
    return res;
  }
  iterate(A, res);
  if (options_.check_result && res.converged) {
    res.exact_error = std::sqrt(global_sum(residual(A))) / res.initial_residual;
  }
  return res;
}

template <class Exec>
double LinearSolverBase<Exec>::residual(const Operator& A) {
  A.visit([&](auto s) {
    constexpr bool three = decltype(s)::three_d;
    overlapped_reduce(A.exec(), residual_label_.c_str(), layout_,
                      kernels::Residual<three, Memory>{s, x_, b_, r_}, *halo_x_, sums_, timings_);
  });
  return sums_.fetch(A.exec());
}

template <class Exec>
void LinearSolverBase<Exec>::update_residual(const Operator& A) {
  A.visit([&](auto s) {
    constexpr bool three = decltype(s)::three_d;
    overlapped_for(A.exec(), residual_label_.c_str(), layout_,
                   kernels::Residual<three, Memory>{s, x_, b_, r_}, *halo_x_, timings_);
  });
}

template <class Exec>
double LinearSolverBase<Exec>::global_sum(double local) {
  const double t0 = MPI_Wtime();
  const double g = kpmap::psum(local, axis_);
  timings_.collectives_s += MPI_Wtime() - t0;
  return g;
}

template <class Exec>
std::pair<double, double> LinearSolverBase<Exec>::global_sum2(double a, double b) {
  double v[2] = {a, b};
  global_sums(v, 2);
  return {v[0], v[1]};
}

template <class Exec>
Request LinearSolverBase<Exec>::start_global_sum(const Exec& exec, const HostValues& values) {
  const double t0 = MPI_Wtime();
  kpmap::detail::fence(exec, "kpmap::sim: local sums to the host");
  Request sum = kpmap::ipsum(values.data(), static_cast<int>(values.size()), axis_);
  timings_.collectives_s += MPI_Wtime() - t0;
  return sum;
}

template <class Exec>
void LinearSolverBase<Exec>::global_sums(double* values, int count) {
  const double t0 = MPI_Wtime();
  Request sum = kpmap::ipsum(values, count, axis_);
  timings_.collectives_s += MPI_Wtime() - t0;
  wait_global_sum(sum);
}

template <class Exec>
void LinearSolverBase<Exec>::wait_global_sum(Request& sum) {
  const ProfilingRegion region(wait_label_.c_str());
  const double t0 = MPI_Wtime();
  sum.wait();
  timings_.collectives_s += MPI_Wtime() - t0;
}

template <class Exec>
bool LinearSolverBase<Exec>::finished(SolveResult& res, long n, double error) const {
  res.iterations = n;
  res.error = error / res.initial_residual;
  if (!std::isfinite(error)) {
    fail(res, n, "produced " + sci(error));
    return true;
  }
  if (error < options_.eps * res.initial_residual) {
    // An error measure that underflowed (0 or subnormal) says the recurrences
    // collapsed (cgsr's carried r falls to 0 in rounding), not that x met a
    // tolerance below what doubles resolve: that one is out of reach.
    if (!(error >= std::numeric_limits<double>::min()) &&
        options_.eps < std::numeric_limits<double>::epsilon()) {
      fail(res, n,
           "cannot reach solver.eps = " + sci(options_.eps) +
               ": its error measure underflowed to " + sci(error) +
               ", and a tolerance below double precision (2.2e-16) is out of any solver's reach");
      return true;
    }
    res.converged = true;
    return true;
  }
  return false;
}

template <class Exec>
void LinearSolverBase<Exec>::exhausted(SolveResult& res) const {
  res.failure = name_ + " did not converge in " + std::to_string(options_.max_iters) +
                " iterations (error " + sci(res.error) + ", tolerance " + sci(options_.eps) + ")";
}

template <class Exec>
void LinearSolverBase<Exec>::fail(SolveResult& res, long n, const std::string& what) const {
  res.failure = name_ + " " + what + " at iteration " + std::to_string(n);
}

#define KPMAP_SIM_INSTANTIATE(E) template class LinearSolverBase<E>;
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

}  // namespace kpmap::sim::solvers
