// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/runtime/mesh.hpp>

#include <kpmap/base/error.hpp>
#include <kpmap/runtime/runtime.hpp>

#include <algorithm>
#include <set>

namespace kpmap {

namespace {
const Mesh* g_current = nullptr;
}  // namespace

Mesh::Mesh(MPI_Comm comm, std::string axis_name) {
  if (axis_name.empty())
    throw InputError("kpmap::Mesh: an axis name must not be empty", ErrorScope::all_ranks);
  // A duplicate keeps kpmap's messages apart from the caller's on `comm`.
  MPI_Comm_dup(comm, &comm_);
  add_line_axis(std::move(axis_name));
}

Mesh::Mesh(Wrap, MPI_Comm comm, std::string axis_name) : comm_(comm), owns_comm_(false) {
  add_line_axis(std::move(axis_name));
}

void Mesh::add_line_axis(std::string name) {
  auto a = std::make_unique<Axis>();
  a->name_ = std::move(name);
  a->comm_ = comm_;
  a->mask_ = 1;
  MPI_Comm_rank(comm_, &a->index_);
  MPI_Comm_size(comm_, &a->size_);
  a->parts_ = {{a->name_, a->size_}};
  axes_.push_back(std::move(a));
}

Mesh::Mesh(const std::vector<std::pair<std::string, int>>& axes, MPI_Comm comm) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  const int nd = static_cast<int>(axes.size());
  if (nd == 0)
    throw InputError("kpmap::Mesh: a mesh needs at least one axis", ErrorScope::all_ranks);
  std::set<std::string> names;
  std::vector<int> dims(nd);
  std::string shape_text;
  for (int d = 0; d < nd; ++d) {
    const auto& [name, size] = axes[d];
    if (name.empty())
      throw InputError("kpmap::Mesh: axis " + std::to_string(d) + " has no name",
                       ErrorScope::all_ranks);
    if (!names.insert(name).second) {
      throw InputError("kpmap::Mesh: axis name '" + name + "' appears twice",
                       ErrorScope::all_ranks);
    }
    if (size < 0) {
      throw InputError("kpmap::Mesh: axis '" + name + "' has negative size " +
                           std::to_string(size) + " (use 0 to let MPI_Dims_create choose)",
                       ErrorScope::all_ranks);
    }
    dims[d] = size;
    shape_text += (d ? ", " : "") + name + "=" + std::to_string(size);
  }
  int fixed = 1;
  for (int s : dims) fixed *= s > 0 ? s : 1;
  if (nranks % fixed != 0 ||
      (std::find(dims.begin(), dims.end(), 0) == dims.end() && fixed != nranks)) {
    throw InputError("kpmap::Mesh: axes {" + shape_text + "} do not fit " + std::to_string(nranks) +
                         " ranks (their product must equal the rank count)",
                     ErrorScope::all_ranks);
  }
  MPI_Dims_create(nranks, nd, dims.data());
  std::vector<int> periods(nd, 0);
  MPI_Cart_create(comm, nd, dims.data(), periods.data(), /*reorder=*/0, &comm_);
  std::vector<int> coords(nd);
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  MPI_Cart_coords(comm_, rank, nd, coords.data());
  for (int d = 0; d < nd; ++d) {
    std::vector<int> keep(nd, 0);
    keep[d] = 1;
    auto a = std::make_unique<Axis>();
    a->name_ = axes[d].first;
    MPI_Cart_sub(comm_, keep.data(), &a->comm_);
    a->index_ = coords[d];
    a->size_ = dims[d];
    a->mask_ = 1u << d;
    a->parts_ = {{a->name_, a->size_}};
    axes_.push_back(std::move(a));
  }
  add_groups();
}

void Mesh::add_groups() {
  const int nd = ndim();
  if (nd > 16) throw InputError("kpmap::Mesh: at most 16 axes", ErrorScope::all_ranks);
  const unsigned all = (1u << nd) - 1;
  for (unsigned mask = 1; mask <= all; ++mask) {
    if ((mask & (mask - 1)) == 0) continue;  // one axis: axes_ has it
    auto g = std::make_unique<Axis>();
    g->mask_ = mask;
    if (mask == all) {
      g->comm_ = comm_;  // every axis: the mesh itself, row-major as the Cartesian ranks
    } else {
      std::vector<int> keep(nd);
      for (int d = 0; d < nd; ++d) keep[d] = (mask >> d) & 1u;
      MPI_Cart_sub(comm_, keep.data(), &g->comm_);
    }
    for (int d = 0; d < nd; ++d) {
      if ((mask >> d) & 1u) {
        g->name_ += (g->name_.empty() ? "" : ",") + axes_[d]->name();
        g->parts_.emplace_back(axes_[d]->name(), axes_[d]->size());
      }
    }
    MPI_Comm_rank(g->comm_, &g->index_);
    MPI_Comm_size(g->comm_, &g->size_);
    groups_.push_back(std::move(g));
  }
}

void Mesh::free() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  for (auto* list : {&axes_, &groups_}) {
    for (auto& a : *list) {
      if (!finalized && a->comm_ != MPI_COMM_NULL && a->comm_ != comm_) MPI_Comm_free(&a->comm_);
    }
    list->clear();
  }
  if (!finalized && owns_comm_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

Mesh::~Mesh() { free(); }

Mesh::Mesh(Mesh&& other) noexcept
    : comm_(other.comm_),
      owns_comm_(other.owns_comm_),
      axes_(std::move(other.axes_)),
      groups_(std::move(other.groups_)) {
  other.comm_ = MPI_COMM_NULL;
}

Mesh& Mesh::operator=(Mesh&& other) noexcept {
  if (this != &other) {
    free();
    comm_ = other.comm_;
    owns_comm_ = other.owns_comm_;
    axes_ = std::move(other.axes_);
    groups_ = std::move(other.groups_);
    other.comm_ = MPI_COMM_NULL;
  }
  return *this;
}

const Axis& Mesh::axis(std::string_view name) const {
  for (const auto& a : axes_) {
    if (a->name() == name) return *a;
  }
  if (name == "devices" && !axes_.empty()) {
    // Every rank of the mesh, as "devices" is on the world mesh.
    if (axes_.size() == 1) return *axes_.front();
    const unsigned all = (1u << axes_.size()) - 1;
    for (const auto& g : groups_) {
      if (g->mask_ == all) return *g;
    }
  }
  std::string valid;
  for (const auto& a : axes_) valid += (valid.empty() ? "'" : ", '") + a->name() + "'";
  throw InputError("kpmap: unknown axis '" + std::string(name) + "'; this mesh has " + valid,
                   ErrorScope::all_ranks);
}

std::vector<int> Axis::coords(int index) const {
  std::vector<int> c(parts_.size());
  for (std::size_t k = parts_.size(); k-- > 0;) {
    c[k] = index % parts_[k].second;
    index /= parts_[k].second;
  }
  return c;
}

std::string Axis::coordinates(int index) const {
  const std::vector<int> c = coords(index);
  std::string s = "(";
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    s += (k ? ", " : "") + parts_[k].first + " " + std::to_string(c[k]);
  }
  return s + ")";
}

std::string Axis::differs_over(int a, int b) const {
  const std::vector<int> ca = coords(a), cb = coords(b);
  std::string s;
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    if (ca[k] != cb[k]) s += (s.empty() ? "" : ",") + parts_[k].first;
  }
  return s;
}

const Axis& Mesh::axes(const std::vector<std::string_view>& names) const {
  if (names.empty())
    throw InputError("kpmap: a set of axes needs at least one name", ErrorScope::all_ranks);
  if (names.size() == 1) return axis(names.front());
  unsigned mask = 0;
  std::string joined;
  bool mesh_order = true;
  int last = -1;
  for (auto name : names) {
    const Axis& a = axis(name);
    if (a.mask_ & mask) {
      throw InputError("kpmap: axis '" + std::string(name) + "' appears twice in the set of axes",
                       ErrorScope::all_ranks);
    }
    mask |= a.mask_;
    joined += (joined.empty() ? "" : ",") + a.name();
    int d = 0;
    while (!((a.mask_ >> d) & 1u)) ++d;
    mesh_order = mesh_order && d > last && (a.mask_ & (a.mask_ - 1)) == 0;
    last = d;
  }
  const Axis* same_ranks = nullptr;
  for (const auto& g : groups_) {
    if (g->name() == joined) return *g;
    if (g->mask_ == mask && same_ranks == nullptr) same_ranks = g.get();
  }
  if (same_ranks == nullptr || mesh_order) {
    throw Error("kpmap: internal: no communicator for the axes " + joined);
  }
  // The same ranks as the set in mesh order, indexed in the order named:
  // split (collectively over those ranks only) with that index as the key.
  auto g = std::make_unique<Axis>();
  g->name_ = joined;
  g->mask_ = mask;
  int key = 0;
  for (auto name : names) {
    const Axis& a = axis(name);
    key = key * a.size() + a.index();
    g->parts_.emplace_back(a.name(), a.size());
  }
  MPI_Comm_split(same_ranks->comm(), 0, key, &g->comm_);
  MPI_Comm_rank(g->comm_, &g->index_);
  MPI_Comm_size(g->comm_, &g->size_);
  groups_.push_back(std::move(g));
  return *groups_.back();
}

std::vector<std::string> Mesh::axis_names() const {
  std::vector<std::string> names;
  for (const auto& a : axes_) names.push_back(a->name());
  return names;
}

std::vector<int> Mesh::shape() const {
  std::vector<int> s;
  for (const auto& a : axes_) s.push_back(a->size());
  return s;
}

const Mesh& Mesh::world() {
  static Mesh* world = nullptr;
  if (world == nullptr) {
    if (!Runtime::active()) {
      throw Error("kpmap: the world mesh needs a live kpmap::Runtime");
    }
    world = new Mesh(Wrap{}, Runtime::current().comm(), "devices");
    Runtime::at_finalize([] {
      delete world;
      world = nullptr;
    });
  }
  return *world;
}

const Mesh& Mesh::current() { return g_current != nullptr ? *g_current : world(); }

UseMesh::UseMesh(const Mesh& mesh) : previous_(g_current) { g_current = &mesh; }
UseMesh::~UseMesh() { g_current = previous_; }

}  // namespace kpmap
