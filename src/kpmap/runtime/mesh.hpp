// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Named axes over the ranks: the 1-D "devices" axis and N-D Cartesian meshes.
///
/// A mesh arranges the ranks of a communicator in a grid whose dimensions have
/// names, as in JAX's `Mesh(devices, ("data", "model"))`. A collective over the
/// axis "data" runs among the ranks that share every other coordinate; over
/// the axes {"data", "model"} (JAX's `psum(x, ('data', 'model'))`) among the
/// ranks that share the remaining ones.

#include <mpi.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kpmap {

/// \brief One named axis of a mesh, or a set of its axes taken together, seen
/// from this rank: the ranks that differ from this one only along the
/// axis (axes), and this rank's position among them.
///
/// For a set {a, b} the position is JAX's: a's coordinate times b's size plus
/// b's coordinate, in the order the set was named, so an all_gather over
/// {"data", "model"} stacks the blocks in that order.
class Axis {
 public:
  /// \brief The axis name, or the names of a set joined by commas ("data,model").
  const std::string& name() const noexcept { return name_; }
  /// \brief The communicator of the ranks along this axis (owned by the mesh).
  MPI_Comm comm() const noexcept { return comm_; }
  /// \brief This rank's coordinate along the axis, 0 .. size()-1 (JAX's axis_index).
  int index() const noexcept { return index_; }
  /// \brief Number of ranks along the axis (JAX's axis_size / psum(1, axis)).
  int size() const noexcept { return size_; }
  /// \brief The single axes this one spans, each name and size, in the
  /// order its index counts them: one for a named axis, two or more for a set.
  const std::vector<std::pair<std::string, int>>& parts() const noexcept { return parts_; }
  /// \brief The mesh coordinates of the rank at `index` along this axis, as
  /// text: "(data 0, model 1)".
  std::string coordinates(int index) const;
  /// \brief The names of the single axes along which the ranks at indices
  /// `a` and `b` of this axis differ, joined by commas: "model".
  std::string differs_over(int a, int b) const;

 private:
  friend class Mesh;
  std::vector<int> coords(int index) const;
  std::vector<std::pair<std::string, int>> parts_;
  std::string name_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int index_ = 0;
  int size_ = 1;
  unsigned mask_ = 0;  // the mesh axes it spans, bit d for axis d
};

/// \brief Ranks arranged in a grid of named axes.
class Mesh {
 public:
  /// \brief The 1-D mesh with one axis (default "devices") over all ranks of
  /// `comm`. Collective over `comm`.
  explicit Mesh(MPI_Comm comm = MPI_COMM_WORLD, std::string axis_name = "devices");

  /// \brief An N-D Cartesian mesh, e.g. `Mesh({{"data", 2}, {"model", 0}})`.
  /// A size of 0 is filled in by MPI_Dims_create; the product of the sizes
  /// must equal the number of ranks of `comm`. Built with MPI_Cart_create (no
  /// reordering) and MPI_Cart_sub. Collective over `comm`.
  /// \throws kpmap::InputError for duplicate or empty names, or sizes that do not fit.
  explicit Mesh(const std::vector<std::pair<std::string, int>>& axes,
                MPI_Comm comm = MPI_COMM_WORLD);

  ~Mesh();
  Mesh(Mesh&&) noexcept;
  Mesh& operator=(Mesh&&) noexcept;
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  /// \brief The axis called `name`. "devices", when no axis has that name,
  /// is every rank of the mesh (all axes, in mesh order), as on the world mesh.
  /// \throws kpmap::InputError naming the valid axes when there is none.
  const Axis& axis(std::string_view name) const;
  /// \brief The axes `names` taken together (JAX's axis_name=('data', 'model')):
  /// the ranks that share every coordinate not named, indexed in the order
  /// given. One name is axis(name). Every set in mesh order is built with the
  /// mesh; another order is built on first use, collectively over the ranks
  /// of the set (which a collective over it needs anyway), and kept.
  /// \throws kpmap::InputError for an unknown, repeated or missing name.
  const Axis& axes(const std::vector<std::string_view>& names) const;
  int axis_index(std::string_view name) const { return axis(name).index(); }
  int axis_size(std::string_view name) const { return axis(name).size(); }
  std::vector<std::string> axis_names() const;
  int ndim() const noexcept { return static_cast<int>(axes_.size()); }
  /// \brief The communicator over every rank of the mesh (Cartesian for N-D).
  MPI_Comm comm() const noexcept { return comm_; }
  /// \brief The shape, in axis order.
  std::vector<int> shape() const;

  /// \brief The world mesh: one axis "devices" over all ranks, on the
  /// Runtime's private communicator. Not collective; valid while the Runtime lives.
  static const Mesh& world();
  /// \brief The mesh whose axis names plain strings refer to: the innermost
  /// live kpmap::UseMesh, else world().
  static const Mesh& current();

 private:
  struct Wrap {};
  Mesh(Wrap, MPI_Comm comm, std::string axis_name);  // uses `comm`, does not own it
  void add_line_axis(std::string name);              // the one axis of a 1-D mesh over comm_
  void add_groups();                                 // every set of 2+ axes, in mesh order
  void free() noexcept;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owns_comm_ = true;
  std::vector<std::unique_ptr<Axis>> axes_;
  // Sets of axes: those in mesh order (built with the mesh, the whole mesh
  // among them), then those built on first use in another order.
  mutable std::vector<std::unique_ptr<Axis>> groups_;
};

/// \brief While alive, axis names given as strings resolve in `mesh`.
class UseMesh {
 public:
  explicit UseMesh(const Mesh& mesh);
  ~UseMesh();
  UseMesh(const UseMesh&) = delete;
  UseMesh& operator=(const UseMesh&) = delete;

 private:
  const Mesh* previous_;
};

/// \brief What collectives accept as their axis: an Axis of any mesh, an
/// axis name looked up in Mesh::current() ("devices" by default), or a set
/// of names, `{"data", "model"}`, for the axes taken together.
class AxisRef {
 public:
  AxisRef(const Axis& axis) : axis_(&axis) {}                               // NOLINT: implicit
  AxisRef(const char* name) : axis_(&Mesh::current().axis(name)) {}         // NOLINT: implicit
  AxisRef(const std::string& name) : axis_(&Mesh::current().axis(name)) {}  // NOLINT
  AxisRef(std::initializer_list<std::string_view> names)                    // NOLINT: implicit
      : axis_(&Mesh::current().axes(names)) {}
  AxisRef(const std::vector<std::string>& names)  // NOLINT: implicit
      : axis_(&Mesh::current().axes({names.begin(), names.end()})) {}
  const Axis& operator*() const noexcept { return *axis_; }
  const Axis* operator->() const noexcept { return axis_; }

 private:
  const Axis* axis_;
};

/// \brief This rank's coordinate along `axis` (JAX's lax.axis_index).
inline int axis_index(AxisRef axis) { return axis->index(); }
/// \brief Number of ranks along `axis`.
inline int axis_size(AxisRef axis) { return axis->size(); }

}  // namespace kpmap
