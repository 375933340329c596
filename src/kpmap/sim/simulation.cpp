// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/sim/simulation.hpp>

#include <kpmap/collectives/collectives.hpp>
#include <kpmap/runtime/memory.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/sim/setup.hpp>
#include <kpmap/tools/profiling.hpp>

#include <cmath>
#include <filesystem>

namespace kpmap::sim {

namespace {

/// u = density energy; u0 = u.
template <class M>
struct EnergyToU {
  CellField<M> density, energy, u, u0;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    const double v = density(k, j, i) * energy(k, j, i);
    u(k, j, i) = v;
    u0(k, j, i) = v;
  }
};

/// energy = u / density.
template <class M>
struct UToEnergy {
  CellField<M> density, energy, u;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i) const {
    energy(k, j, i) = u(k, j, i) / density(k, j, i);
  }
};

template <class M>
struct FieldSummary {
  CellField<M> density, energy, u;
  double volume;
  KOKKOS_INLINE_FUNCTION void operator()(long k, long j, long i, Sums<4>& acc) const {
    const double mass = volume * density(k, j, i);
    acc.v[0] += volume;
    acc.v[1] += mass;
    acc.v[2] += mass * energy(k, j, i);
    acc.v[3] += mass * u(k, j, i);
  }
};

std::vector<std::size_t> cells_of(const HeatConfig& c) {
  std::vector<std::size_t> cells(c.cells.begin(), c.cells.begin() + c.ndim);
  return cells;
}

// The layout of `config` over `comm`: a process grid the deck gave that does
// not fit the job names the deck's key and line.
CartesianLayout layout_of(const HeatConfig& config, MPI_Comm comm) {
  CartesianLayout layout = [&] {
    try {
      return CartesianLayout(cells_of(config), config.halo_depth, config.ranks, comm,
                             Rows::aligned);
    } catch (const InputError& e) {
      if (config.ranks_key.empty()) throw;
      std::string what = e.what();
      const std::string prefix = "kpmap::CartesianLayout: ";
      if (what.rfind(prefix, 0) == 0) what.erase(0, prefix.size());
      throw InputError(config.ranks_key + ": " + what, e.scope());
    }
  }();
  // A halo as deep as the blocks are thin reaches past the neighbour: the
  // exchange refuses it; say so with the deck's key (every rank computes
  // the same grid, so every rank refuses).
  if (const int d = layout.too_thin_for(config.halo_depth); d >= 0) {
    const std::string thinnest = std::to_string(layout.thinnest_block(d));
    throw InputError(config.depth_key + ": " + std::to_string(config.halo_depth) +
                         " is deeper than the thinnest block, " + thinnest + " cells along " +
                         std::string(1, "xyz"[d]) + " (" + std::to_string(layout.global_cells(d)) +
                         " cells over " + std::to_string(layout.ranks(d)) +
                         " ranks); use a depth of at most " + thinnest +
                         ", fewer ranks or a larger mesh",
                     ErrorScope::all_ranks);
  }
  return layout;
}

// The solver's kept eigenvalues as a checkpoint holds them: (1, min, max),
// or (0, 0, 0) when it keeps none; over a local array (no allocation).
using EigenvaluesView =
    Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// The owned cells of f, (z, y, x) or (y, x) in 2-D, as a subview for
// checkpoints: the Writer and Reader stage them in place (no allocation).
template <class M, class Fn>
void with_interior(const CartesianLayout& l, const CellField<M>& f, Fn&& fn) {
  const Box b = l.interior();
  const auto ir = std::make_pair(b.lo[0], b.hi[0]);
  const auto jr = std::make_pair(b.lo[1], b.hi[1]);
  if (l.ndim() == 2) {
    fn(Kokkos::subview(f, 0, jr, ir));
  } else {
    fn(Kokkos::subview(f, std::make_pair(b.lo[2], b.hi[2]), jr, ir));
  }
}

}  // namespace

template <class Exec>
double Simulation<Exec>::memory_estimate(const HeatConfig& c, const CartesianLayout& l,
                                         std::string* breakdown) {
  // Whole fields (owned cells and ghosts), as the constructors allocate them.
  const int state = 4;             // density, energy, u, u0
  int op = l.ndim() == 3 ? 3 : 2;  // face coefficients
  const int solver = solver_fields(c.scheme, c.solver);
  if (c.solver.preconditioner == Preconditioner::jac_diag) op += 1;
  if (c.solver.preconditioner == Preconditioner::jac_block) op += 2;
  double cells = 1.0, owned = 1.0;
  for (int d = 0; d < 3; ++d) {
    cells *= static_cast<double>(l.extent(d));
    owned *= static_cast<double>(l.local_cells(d));
  }
  // Checkpoints copy one field's owned cells at a time (and to the host from a GPU).
  const double staging =
      owned * (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Memory>::accessible ? 1 : 2);
  const int fields = state + op + solver;
  if (breakdown != nullptr) {
    *breakdown = std::to_string(fields) + " fields of " + format_bytes(cells * sizeof(double)) +
                 ": " + std::to_string(state) + " state, " + std::to_string(op) + " operator, " +
                 std::to_string(solver) + " solver; plus checkpoint staging";
  }
  return (fields * cells + staging) * sizeof(double);
}

template <class Exec>
Simulation<Exec>::Simulation(const HeatConfig& config, MPI_Comm comm, const Exec& exec)
    : config_(config), layout_(layout_of(config, comm)), exec_(exec) {
  {
    std::string breakdown;
    const double bytes = memory_estimate(config_, layout_, &breakdown);
    require_memory(bytes, "this mesh (" + layout_.describe() + ")", breakdown, layout_.comm());
  }
  mesh_ = std::make_unique<Mesh>(layout_.comm(), "blocks");
  density_ = layout_.allocate<double, Memory>("kpmap::sim::density");
  energy_ = layout_.allocate<double, Memory>("kpmap::sim::energy");
  u_ = layout_.allocate<double, Memory>("kpmap::sim::u");
  u0_ = layout_.allocate<double, Memory>("kpmap::sim::u0");
  // Density's ghosts, edges and corners included, to the full ghost width:
  // face conductivities are computed in the ghost layers too.
  halo_density_ = std::make_unique<HaloExchange<double, Exec>>(
      layout_, std::vector<Field>{density_}, HaloOptions{layout_.ghost(), true});
  op_ = std::make_unique<HeatOperator<Exec>>(layout_, config.solver.preconditioner, exec_);
  solver_ = make_solver(config.scheme,
                        SolverContext<Exec>{layout_, axis(), config.solver, u_, u0_, timings_});
}

template <class Exec>
Simulation<Exec>::~Simulation() = default;

template <class Exec>
void Simulation<Exec>::assemble() {
  std::array<double, 3> h{1, 1, 1};
  for (int d = 0; d < config_.ndim; ++d) h[d] = config_.spacing(d);
  op_->assemble(density_, config_.dt, h, config_.solver.coefficient);
  assembled_ = true;
  if (config_.scheme == Scheme::explicit_ftcs) {
    // FTCS keeps every new value a weighted mean of old ones (and so stays
    // stable) while the sum of a cell's dt K / h^2 over its faces is <= 1.
    const double worst = kpmap::pmax(op_->max_face_sum(), axis());
    stable_dt_ = worst > 0 ? config_.dt / worst : 0.0;
    if (worst > 1.0) {
      throw InputError(
          "time.dt = " + sci(config_.dt) + " s exceeds the stability limit " + sci(stable_dt_) +
              " s of the explicit (FTCS) scheme on this mesh and material (the largest sum over a "
              "cell's faces of dt K / h^2 is " +
              sci(worst) + ", it must be at most 1); use time.dt <= " + sci(stable_dt_) +
              " or time.scheme = \"implicit\"",
          ErrorScope::all_ranks);
    }
  }
}

template <class Exec>
void Simulation<Exec>::initialise() {
  generate_states(exec_, layout_, config_, density_, energy_);
  timed_exchange(exec_, *halo_density_, timings_);
  step_ = 0;
  time_ = 0.0;
  assemble();
  for_cells(exec_, "kpmap::sim::energy_to_u", layout_.interior(),
            EnergyToU<Memory>{density_, energy_, u_, u0_});
}

template <class Exec>
checkpoint::Block Simulation<Exec>::block() const {
  checkpoint::Block b;
  for (int d = layout_.ndim() - 1; d >= 0; --d) {
    b.global.push_back(layout_.global_cells(d));
    b.offset.push_back(layout_.offset(d));
    b.count.push_back(layout_.local_cells(d));
  }
  return b;
}

template <class Exec>
void Simulation<Exec>::restart(const std::string& path) {
  checkpoint::Reader reader(path, layout_.comm(), "kpmap-heat");
  const auto& meta = reader.metadata();
  const auto blk = block();
  for (const char* name : {"fields/density", "fields/energy"}) {
    const bool density = std::string(name) == "fields/density";
    Field target = density ? density_ : energy_;
    with_interior(layout_, target, [&](auto sub) {
      // The values a deck may give: density above zero, energy not below.
      reader.read(exec_, name, sub, blk,
                  density ? checkpoint::Reader::Values::positive
                          : checkpoint::Reader::Values::non_negative);
    });
  }
  double kept[3] = {0.0, 0.0, 0.0};
  const EigenvaluesView eig(kept, 3);
  reader.read_replicated(Kokkos::DefaultHostExecutionSpace(), "solver/eigenvalues", eig);
  if (eig(0) != 0.0) solver_->set_eigenvalues({eig(1), eig(2)});
  step_ = meta.step;
  time_ = meta.time;
  timed_exchange(exec_, *halo_density_, timings_);
  assemble();
  for_cells(exec_, "kpmap::sim::energy_to_u", layout_.interior(),
            EnergyToU<Memory>{density_, energy_, u_, u0_});
}

template <class Exec>
StepReport Simulation<Exec>::step() {
  const ProfilingRegion region("kpmap::sim::step");
  StepReport report;
  report.step = step_ + 1;
  report.dt = config_.dt;
  if (!assembled_) assemble();
  const Box owned = layout_.interior();
  for_cells(exec_, "kpmap::sim::energy_to_u", owned, EnergyToU<Memory>{density_, energy_, u_, u0_});
  // One backward-Euler solve, or the explicit step (whose result is empty).
  const SolveResult solve = solver_->solve(*op_);
  if (config_.scheme == Scheme::implicit) {
    report.solve = solve;
    if (!report.solve.converged) {
      throw Error("step " + std::to_string(report.step) +
                      ": the linear solve failed: " + report.solve.failure,
                  exit_code::diverged, ErrorScope::all_ranks);
    }
  }
  for_cells(exec_, "kpmap::sim::u_to_energy", owned, UToEnergy<Memory>{density_, energy_, u_});
  kpmap::detail::fence(exec_, "kpmap::sim: step done");
  ++step_;
  time_ += config_.dt;
  report.time = time_;
  return report;
}

template <class Exec>
bool Simulation<Exec>::done() const {
  if (config_.end_step > 0 && step_ >= config_.end_step) return true;
  // A step that lands within a billionth of a step of the end time ends the run.
  return time_ + 1e-9 * config_.dt >= config_.end_time;
}

template <class Exec>
Summary Simulation<Exec>::summary() {
  double volume = 1.0;
  for (int d = 0; d < config_.ndim; ++d) volume *= config_.spacing(d);
  const Sums<4> local =
      reduce_cells<Sums<4>>(exec_, "kpmap::sim::field_summary", layout_.interior(),
                            FieldSummary<Memory>{density_, energy_, u_, volume});
  const double t0 = MPI_Wtime();
  double v[4] = {local.v[0], local.v[1], local.v[2], local.v[3]};
  Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> view(v, 4);
  kpmap::psum_inplace(Kokkos::DefaultHostExecutionSpace(), view, axis());
  timings_.collectives_s += MPI_Wtime() - t0;
  Summary s;
  s.volume = v[0];
  s.mass = v[1];
  s.density = v[1] / v[0];
  s.energy = v[2];
  s.u = v[3];
  // The summary's sums see every owned cell: a NaN or Inf anywhere shows here.
  if (!std::isfinite(s.energy) || !std::isfinite(s.u)) {
    throw Error("step " + std::to_string(step_) + ": the energy field holds NaN or Inf (energy = " +
                    sci(s.energy) + ", U = " + sci(s.u) + ")",
                exit_code::diverged, ErrorScope::all_ranks);
  }
  return s;
}

template <class Exec>
void Simulation<Exec>::write_checkpoint(const std::string& path, const std::string& deck) {
  checkpoint::Metadata meta;
  meta.app = "kpmap-heat";
  meta.step = step_;
  meta.time = time_;
  meta.deck = deck;
  meta.decomposition = layout_.describe();
  checkpoint::Writer writer(path, layout_.comm(), meta);
  const auto blk = block();
  const std::pair<const char*, Field> fields[] = {
      {"fields/density", density_}, {"fields/energy", energy_}, {"fields/u", u_}};
  // Named pairs, not structured bindings: C++17 lambdas cannot capture those
  // (nvcc warns where GCC accepts them).
  for (const auto& named : fields) {
    const std::string name = named.first;
    with_interior(layout_, named.second, [&](auto sub) { writer.write(exec_, name, sub, blk); });
  }
  double held[3] = {0.0, 0.0, 0.0};
  const EigenvaluesView eig(held, 3);
  if (const auto kept = solver_->eigenvalues()) {
    eig(0) = 1.0;
    eig(1) = kept->first;
    eig(2) = kept->second;
  }
  writer.write_replicated(Kokkos::DefaultHostExecutionSpace(), "solver/eigenvalues", eig);
  writer.commit();
  if (layout_.rank() == 0) {
    std::vector<std::size_t> cells;
    std::vector<double> origin, spacing;
    for (int d = config_.ndim - 1; d >= 0; --d) {
      cells.push_back(config_.cells[d]);
      origin.push_back(config_.lower[d]);
      spacing.push_back(config_.spacing(d));
    }
    const std::filesystem::path p(path);
    checkpoint::write_xdmf(
        (p.parent_path() / (p.stem().string() + ".xmf")).string(), p.filename().string(), cells,
        origin, spacing,
        {{"fields/density", "density"}, {"fields/energy", "energy"}, {"fields/u", "u"}}, time_);
  }
}

#define KPMAP_SIM_INSTANTIATE(E) template class Simulation<E>;
KPMAP_SIM_FOR_EACH_SPACE(KPMAP_SIM_INSTANTIATE)
#undef KPMAP_SIM_INSTANTIATE

void check_restart(const deck::Deck& d, const std::string& file, MPI_Comm comm) {
  const checkpoint::Reader r(file, comm, "kpmap-heat");
  const std::string diff = deck::first_difference(
      d, r.metadata().deck, {"mesh.lower", "mesh.upper", "mesh.cells", "states"});
  if (!diff.empty()) {
    throw InputError(diff + ": restart file " + file +
                         " holds another problem; a restart continues the same domain, cells "
                         "and states (its deck.toml)",
                     ErrorScope::all_ranks);
  }
}

}  // namespace kpmap::sim
