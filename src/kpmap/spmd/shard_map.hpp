// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief JAX's `shard_map(f, mesh, in_specs, out_specs)` with partition
/// specs over an N-D mesh: which dimension of an array is split over which
/// mesh axes. kpmap::pmap is its 1-D case.
///
/// `P("data", kpmap::none)` splits dimension 0 over the axis "data" and
/// leaves dimension 1 whole; `P({"data", "model"})` splits dimension 0 over
/// both axes (the block index linear in the order named, as JAX's); `P()`
/// replicates. Dimensions past the spec's length are whole. Splits need not
/// be even: blocks differ by at most one row, as BlockPartition says. Every
/// function here is collective over the whole mesh.

#include <kpmap/base/detail/view_utils.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/collectives/checked.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <Kokkos_Core.hpp>

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#endif

#include <array>
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace kpmap {

/// \brief JAX's `None` in a partition spec: the dimension is not split.
struct NoAxis {};
inline constexpr NoAxis none{};

/// \brief One entry of a partition spec: no axis, one axis, or a set of axes
/// (`{"data", "model"}`) whose ranks split the dimension together.
class SpecDim {
 public:
  SpecDim(NoAxis) {}                                       // NOLINT: implicit
  SpecDim(std::nullptr_t) {}                               // NOLINT: implicit
  SpecDim(const char* axis) : axes_{std::string(axis)} {}  // NOLINT: implicit
  SpecDim(const std::string& axis) : axes_{axis} {}        // NOLINT: implicit
  SpecDim(std::initializer_list<std::string_view> axes) {  // NOLINT: implicit
    for (auto a : axes) axes_.emplace_back(a);
  }
  /// \brief The axes that split this dimension, in block-index order (empty: whole).
  const std::vector<std::string>& axes() const noexcept { return axes_; }

 private:
  std::vector<std::string> axes_;
};

/// \brief JAX's PartitionSpec: one SpecDim per leading dimension of an array.
class PartitionSpec {
 public:
  PartitionSpec() = default;
  explicit PartitionSpec(std::vector<SpecDim> dims) : dims_(std::move(dims)) {}
  std::size_t size() const noexcept { return dims_.size(); }
  const SpecDim& operator[](std::size_t d) const { return dims_.at(d); }
  /// \brief As JAX prints it: P('data', None), P(('data', 'model'),).
  std::string str() const {
    std::string s = "P(";
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      const auto& axes = dims_[d].axes();
      std::string e = axes.empty() ? "None" : "";
      for (std::size_t k = 0; k < axes.size(); ++k) e += (k ? ", '" : "'") + axes[k] + "'";
      if (axes.size() > 1) e = "(" + e + ")";
      s += (d ? ", " : "") + e;
    }
    return s + (dims_.size() == 1 && dims_[0].axes().size() > 1 ? ",)" : ")");
  }

 private:
  std::vector<SpecDim> dims_;
};

/// \brief JAX's `P(...)`: `P()`, `P("data")`, `P("data", kpmap::none)`,
/// `P({"data", "model"}, kpmap::none)`. Functions rather than constructors,
/// so that `P({"data", "model"})` names one dimension split over two axes.
inline PartitionSpec P() { return PartitionSpec(); }
inline PartitionSpec P(SpecDim d0) { return PartitionSpec({std::move(d0)}); }
inline PartitionSpec P(SpecDim d0, SpecDim d1) {
  return PartitionSpec({std::move(d0), std::move(d1)});
}
inline PartitionSpec P(SpecDim d0, SpecDim d1, SpecDim d2) {
  return PartitionSpec({std::move(d0), std::move(d1), std::move(d2)});
}
inline PartitionSpec P(SpecDim d0, SpecDim d1, SpecDim d2, SpecDim d3) {
  return PartitionSpec({std::move(d0), std::move(d1), std::move(d2), std::move(d3)});
}

namespace detail {

/// A spec checked against a mesh and an array rank: for each dimension, the
/// mesh axes (by position) that split it, in block-index order.
struct ResolvedSpec {
  std::vector<std::vector<int>> dims;  // one entry per array dimension
  std::vector<int> unused;             // mesh axes the spec does not name
};

/// `what` names the value for messages ("kpmap::shard_map of F: argument
/// 0"). Every rank checks the same spec against the same mesh, so an error
/// is raised by all together and printed once for the job.
inline ResolvedSpec resolve(const Mesh& mesh, const PartitionSpec& spec, int rank,
                            const std::string& what) {
  const auto names = mesh.axis_names();
  if (spec.size() > static_cast<std::size_t>(rank)) {
    throw InputError(what + " has rank " + std::to_string(rank) + " but its spec " + spec.str() +
                         " names " + std::to_string(spec.size()) + " dimensions",
                     ErrorScope::all_ranks);
  }
  ResolvedSpec r;
  r.dims.resize(static_cast<std::size_t>(rank));
  std::vector<bool> used(names.size(), false);
  for (std::size_t d = 0; d < spec.size(); ++d) {
    for (const auto& name : spec[d].axes()) {
      std::vector<int> positions;
      for (std::size_t a = 0; a < names.size(); ++a) {
        if (names[a] == name) positions.push_back(static_cast<int>(a));
      }
      if (positions.empty() && name == "devices") {
        for (std::size_t a = 0; a < names.size(); ++a) positions.push_back(static_cast<int>(a));
      }
      if (positions.empty()) {
        std::string valid;
        for (const auto& n : names) valid += (valid.empty() ? "'" : ", '") + n + "'";
        throw InputError(what + ": its spec " + spec.str() + " names axis '" + name +
                             "', which the mesh does not have (its axes: " + valid + ")",
                         ErrorScope::all_ranks);
      }
      for (int a : positions) {
        if (used[a]) {
          throw InputError(
              what + ": axis '" + names[a] + "' appears twice in its spec " + spec.str(),
              ErrorScope::all_ranks);
        }
        used[a] = true;
        r.dims[d].push_back(a);
      }
    }
  }
  for (std::size_t a = 0; a < names.size(); ++a) {
    if (!used[a]) r.unused.push_back(static_cast<int>(a));
  }
  return r;
}

/// The Axis of the mesh axes at `positions` taken together.
inline const Axis& axes_at(const Mesh& mesh, const std::vector<int>& positions) {
  const auto names = mesh.axis_names();
  std::vector<std::string_view> set;
  for (int a : positions) set.emplace_back(names[a]);
  return mesh.axes(set);
}

using Ranges = std::array<std::pair<std::size_t, std::size_t>, max_view_rank>;

/// This rank's block of an array of extents `e`: for each split dimension,
/// the rows BlockPartition gives its index along the splitting axes.
inline Ranges block_ranges(const Mesh& mesh, const ResolvedSpec& spec, const Extents& e) {
  Ranges r;
  for (int d = 0; d < max_view_rank; ++d) {
    r[d] = {0, e[d]};
    if (d < static_cast<int>(spec.dims.size()) && !spec.dims[d].empty()) {
      const Axis& a = axes_at(mesh, spec.dims[d]);
      const BlockPartition part(e[d], a.size());
      r[d] = {part.begin(a.index()), part.end(a.index())};
    }
  }
  return r;
}

template <class V, std::size_t... I>
auto subview_of(const V& v, const Ranges& r, std::index_sequence<I...>) {
  return Kokkos::subview(v, r[I]...);
}
/// The block of `v` at ranges `r` (a subview of the same rank).
template <class V>
auto subview_of(const V& v, const Ranges& r) {
  return subview_of(v, r, std::make_index_sequence<static_cast<std::size_t>(rank_v<V>)>{});
}

/// checked mode (JAX's check_vma): a value whose spec leaves mesh axes
/// unnamed must be identical over them.
template <class T>
void verify_unnamed_axes(const Mesh& mesh, const ResolvedSpec& spec, const std::string& what,
                         const T& x) {
  if (!checked_mode() || spec.unused.empty()) return;
  verify_replicated_value(axes_at(mesh, spec.unused), what, x);
}

/// checked mode: an argument every rank passes whole must have one element
/// type and one global shape on every rank of the mesh (a rank that passes 9
/// rows where the others pass 8 would mix blocks of two arrays).
template <class V>
void verify_global_shape(const Mesh& mesh, const std::string& fn, std::size_t i,
                         const PartitionSpec& spec, const V& v) {
  if (!checked_mode()) return;
  const std::string arg = "argument " + std::to_string(i);
  try {
    verify_signature(mesh.axis("devices"), signature_of("shard_map", arg.c_str(), v));
  } catch (const Error& e) {
    throw InputError(fn + ": " + arg + " (spec " + spec.str() +
                         ") is not the same whole array on every rank: " + e.what(),
                     ErrorScope::all_ranks);
  }
}

template <class Arg>
decltype(auto) shard_argument(const Mesh& mesh, const std::string& fn, const PartitionSpec& spec,
                              const Arg& arg, std::size_t i);

/// A spec prefix (JAX's pytree prefix): one spec for every leaf of a tuple,
/// vector or array of Views, each leaf split as a lone argument would be.
template <class Arg>
auto shard_leaves(const Mesh& mesh, const std::string& fn, const PartitionSpec& spec,
                  const Arg& arg, std::size_t i) {
  if constexpr (is_tuple<Arg>::value) {
    return std::apply(
        [&](const auto&... leaves) {
          return std::make_tuple(shard_argument(mesh, fn, spec, leaves, i)...);
        },
        arg);
  } else if constexpr (is_std_array<Arg>::value) {
    return std::apply(
        [&](const auto&... leaves) {
          return std::array<std::decay_t<decltype(shard_argument(mesh, fn, spec, arg[0], i))>,
                            std::tuple_size_v<Arg>>{shard_argument(mesh, fn, spec, leaves, i)...};
        },
        arg);
  } else {
    std::vector<std::decay_t<decltype(shard_argument(mesh, fn, spec, arg[0], i))>> out;
    out.reserve(arg.size());
    for (const auto& leaf : arg) out.push_back(shard_argument(mesh, fn, spec, leaf, i));
    return out;
  }
}

template <class Arg>
decltype(auto) shard_argument(const Mesh& mesh, const std::string& fn, const PartitionSpec& spec,
                              const Arg& arg, std::size_t i) {
  const std::string what = fn + ": argument " + std::to_string(i);
  const std::string check = "shard_map argument " + std::to_string(i);
  if constexpr (is_tuple<Arg>::value || is_std_vector<Arg>::value || is_std_array<Arg>::value) {
    return shard_leaves(mesh, fn, spec, arg, i);
  } else if constexpr (is_view_v<Arg>) {
    const auto r = resolve(mesh, spec, rank_v<Arg>, what);
    if constexpr (rank_v<Arg> == 0) {
      verify_unnamed_axes(mesh, r, check, arg);
      return Arg(arg);
    } else {
      verify_global_shape(mesh, fn, i, spec, arg);
      // Whole arrays that every rank holds: verify the replicated part only
      // where the spec replicates the whole argument (a cheap case to check).
      if (spec.size() == 0) verify_unnamed_axes(mesh, r, check, arg);
      return subview_of(arg, block_ranges(mesh, r, extents_of(arg)));
    }
  } else {
    if (spec.size() != 0) {
      throw InputError(what + " is not a View, so its spec must be P(), not " + spec.str(),
                       ErrorScope::all_ranks);
    }
    verify_unnamed_axes(mesh, resolve(mesh, spec, 0, what), check, arg);
    return (arg);
  }
}

template <class R>
auto shard_result(const Mesh& mesh, const std::string& fn, const PartitionSpec& spec, R&& result,
                  std::size_t i) {
  using V = std::decay_t<R>;
  if constexpr (is_tuple<V>::value || is_std_vector<V>::value || is_std_array<V>::value) {
    // A spec prefix: every leaf of a tuple, vector or array of blocks by `spec`.
    std::size_t k = 0;
    auto each = [&](auto& leaf) {
      using L = std::decay_t<decltype(leaf)>;
      const std::string what = fn + ": result " + std::to_string(i) + ", leaf " + std::to_string(k);
      const auto r = resolve(mesh, spec, rank_v<L>, what);
      verify_unnamed_axes(mesh, r,
                          "shard_map result " + std::to_string(i) + ", leaf " + std::to_string(k) +
                              " (out_specs " + spec.str() + ")",
                          leaf);
      ++k;
    };
    for_each_leaf(result, each);
    return V(std::forward<R>(result));
  }
  int rank = 0;
  if constexpr (is_view_v<V>) rank = rank_v<V>;
  const auto r = resolve(mesh, spec, rank, fn + ": result " + std::to_string(i));
  verify_unnamed_axes(
      mesh, r, "shard_map result " + std::to_string(i) + " (out_specs " + spec.str() + ")", result);
  return std::forward<R>(result);
}

}  // namespace detail

namespace detail {
/// The name of type F as written ("RowSums", "main::{lambda(auto:1 const&)#1}").
template <class F>
std::string function_name() {
  const char* mangled = typeid(F).name();
#if __has_include(<cxxabi.h>)
  int status = 0;
  char* name = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status == 0 && name != nullptr) {
    std::string s(name);
    std::free(name);
    return s;
  }
#endif
  return mangled;
}
}  // namespace detail

/// \brief A function mapped over a mesh with partition specs; see kpmap::shard_map.
template <class F>
class ShardMapped {
 public:
  ShardMapped(const Mesh& mesh, std::vector<PartitionSpec> in_specs,
              std::vector<PartitionSpec> out_specs, F fn)
      : mesh_(&mesh), in_(std::move(in_specs)), out_(std::move(out_specs)), fn_(std::move(fn)) {}

  /// \brief Runs the function on every rank with its blocks of the
  /// arguments (whole arrays that every rank holds); returns this rank's
  /// blocks of the results. Inside the function, plain axis names mean the
  /// mesh's axes. Collective over the mesh.
  template <class... Args>
  auto operator()(const Args&... args) const {
    if (sizeof...(Args) != in_.size()) {
      throw InputError("kpmap::shard_map of " + detail::function_name<F>() + ": " +
                           std::to_string(in_.size()) + " in_specs for " +
                           std::to_string(sizeof...(Args)) +
                           " arguments: the counts must match, one partition spec per argument "
                           "(P() for a number or an array every rank holds whole)",
                       ErrorScope::all_ranks);
    }
    UseMesh use(*mesh_);
    const std::string fn = "kpmap::shard_map of " + detail::function_name<F>();
    return call(fn, std::index_sequence_for<Args...>{}, args...);
  }

 private:
  template <std::size_t... I, class... Args>
  auto call(const std::string& fn, std::index_sequence<I...>, const Args&... args) const {
    using Result = decltype(fn_(detail::shard_argument(*mesh_, fn, in_[I], args, I)...));
    if constexpr (std::is_void_v<Result>) {
      fn_(detail::shard_argument(*mesh_, fn, in_[I], args, I)...);
    } else {
      auto result = fn_(detail::shard_argument(*mesh_, fn, in_[I], args, I)...);
      if constexpr (detail::is_tuple<Result>::value) {
        constexpr std::size_t n = std::tuple_size_v<Result>;
        if (out_.size() != 1) check_out_count(n);  // one spec: a prefix for every result
        return results(fn, result, std::make_index_sequence<n>{});
      } else {
        check_out_count(1);
        return detail::shard_result(*mesh_, fn, out_[0], std::move(result), 0);
      }
    }
  }

  void check_out_count(std::size_t n) const {
    if (out_.size() != n) {
      throw InputError("kpmap::shard_map of " + detail::function_name<F>() + ": " +
                           std::to_string(out_.size()) + " out_specs for " + std::to_string(n) +
                           " results: the counts must match, one partition spec per result (a "
                           "function with several results returns a std::tuple)",
                       ErrorScope::all_ranks);
    }
  }

  template <class Tuple, std::size_t... I>
  auto results(const std::string& fn, Tuple& result, std::index_sequence<I...>) const {
    return std::make_tuple(detail::shard_result(*mesh_, fn, out_[out_.size() == 1 ? 0 : I],
                                                std::move(std::get<I>(result)), I)...);
  }

  const Mesh* mesh_;
  std::vector<PartitionSpec> in_;
  std::vector<PartitionSpec> out_;
  F fn_;
};

/// \brief JAX's `shard_map(f, mesh=mesh, in_specs=..., out_specs=...)`:
/// returns a callable that, called on every rank with whole arrays, runs `fn`
/// on each rank's blocks as `in_specs` split them (one spec per argument;
/// numbers and other non-Views take `P()`), and returns each rank's blocks of
/// the results, which stay sharded (kpmap::gather(mesh, spec, block)
/// reassembles one). A result's spec says how its blocks tile the whole
/// array; mesh axes it does not name are axes the result is replicated over,
/// which checked mode verifies (JAX's check_vma). `mesh` must outlive the
/// callable.
template <class F>
ShardMapped<F> shard_map(const Mesh& mesh, std::vector<PartitionSpec> in_specs,
                         std::vector<PartitionSpec> out_specs, F fn) {
  return ShardMapped<F>(mesh, std::move(in_specs), std::move(out_specs), std::move(fn));
}

/// \brief The whole array whose blocks, one per rank, `spec` places over
/// `mesh` (what shard_map returns), on every rank, on `exec`. Blocks may be
/// uneven; ranks a spec replicates over send nothing. Collective over the mesh.
template <class Exec, class V,
          std::enable_if_t<detail::is_exec_v<Exec> && detail::is_view_v<V>, int> = 0>
auto gather(const Exec& exec, const Mesh& mesh, const PartitionSpec& spec, const V& block) {
  using T = detail::value_t<V>;
  using M = typename V::memory_space;
  constexpr int R = detail::rank_v<V>;
  static_assert(R >= 1, "gather needs a View of rank 1 or more");
  const auto rs = detail::resolve(mesh, spec, R, "kpmap::gather: the gathered array");
  const auto shape = mesh.shape();
  const int nd = static_cast<int>(shape.size());
  int p = 1;
  for (int s : shape) p *= s;

  // Every rank's block extents, and its mesh coordinates (row-major ranks).
  std::vector<std::size_t> mine(R), all(static_cast<std::size_t>(R) * p);
  for (int d = 0; d < R; ++d) mine[d] = block.extent(d);
  transport::allgather(mine.data(), all.data(), R, MPI_UINT64_T, mesh.comm(), nullptr);
  auto coords = [&](int q) {
    std::vector<int> c(nd);
    for (int a = nd - 1; a >= 0; --a) {
      c[a] = q % shape[a];
      q /= shape[a];
    }
    return c;
  };
  // A rank's block index along dimension d: linear over d's axes, in order.
  auto part = [&](const std::vector<int>& c, int d) {
    int k = 0;
    for (int a : rs.dims[d]) k = k * shape[a] + c[a];
    return k;
  };
  // Representatives: coordinate 0 on every axis the spec does not name.
  std::vector<bool> rep(p);
  for (int q = 0; q < p; ++q) {
    const auto c = coords(q);
    rep[q] = true;
    for (int a : rs.unused) rep[q] = rep[q] && c[a] == 0;
  }
  // Offsets along each dimension: the extents of the blocks before.
  std::vector<std::vector<std::size_t>> offset(R);
  detail::Extents e;
  for (int d = 0; d < detail::max_view_rank; ++d) e[d] = d < R ? block.extent(d) : 1;
  for (int d = 0; d < R; ++d) {
    int parts = 1;
    for (int a : rs.dims[d]) parts *= shape[a];
    std::vector<std::size_t> extent(parts, 0);
    for (int q = 0; q < p; ++q) {
      if (rep[q]) extent[part(coords(q), d)] = all[static_cast<std::size_t>(q) * R + d];
    }
    offset[d].assign(parts + 1, 0);
    for (int k = 0; k < parts; ++k) offset[d][k + 1] = offset[d][k] + extent[k];
    e[d] = offset[d][parts];
  }

  std::vector<std::size_t> counts(p, 0), displ(p, 0);
  std::size_t total = 0;
  for (int q = 0; q < p; ++q) {
    std::size_t n = 1;
    for (int d = 0; d < R; ++d) n *= all[static_cast<std::size_t>(q) * R + d];
    counts[q] = rep[q] ? n : 0;
    displ[q] = total;
    total += counts[q];
  }
  int me = 0;
  MPI_Comm_rank(mesh.comm(), &me);
  auto send = detail::load(exec, rep[me] ? block : V(), true);
  auto out = detail::allocate<detail::local_view_t<T, R, M>>("kpmap::gather", e);
  auto recv = transport::make_buffer<T, M>(nullptr, total);
  detail::fence_before_mpi(exec);
  transport::allgatherv(send.mpi, recv.mpi, counts, detail::mpi_datatype<T>(), mesh.comm());
  detail::complete_receive(exec, recv, [&] {
    for (int q = 0; q < p; ++q) {  // one unpacking kernel per block
      if (!rep[q]) continue;
      const auto c = coords(q);
      detail::Ranges r;
      for (int d = 0; d < detail::max_view_rank; ++d) r[d] = {0, 1};
      for (int d = 0; d < R; ++d) {
        const std::size_t b = offset[d][part(c, d)];
        r[d] = {b, b + all[static_cast<std::size_t>(q) * R + d]};
      }
      detail::unpack(exec, recv.dev, detail::subview_of(out, r), displ[q]);
    }
  });
  return out;
}
/// \brief This rank's block of `global`, an array every rank holds whole, as
/// `spec` places its blocks over `mesh` (any dimensions, over any axes:
/// `P(kpmap::none, "model")` splits the columns), in a new View in memory
/// space `M`: what shard_map hands its function, kept. gather(mesh, spec,
/// block) is its inverse. No messages are sent.
template <class M = Kokkos::DefaultExecutionSpace::memory_space, class V,
          std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto shard(const V& global, const Mesh& mesh, const PartitionSpec& spec) {
  using T = detail::value_t<V>;
  constexpr int R = detail::rank_v<V>;
  static_assert(R >= 1, "kpmap::shard needs a View of rank 1 or more");
  const auto rs = detail::resolve(mesh, spec, R, "kpmap::shard: the array");
  const auto block =
      detail::subview_of(global, detail::block_ranges(mesh, rs, detail::extents_of(global)));
  auto out =
      detail::allocate<detail::local_view_t<T, R, M>>("kpmap::shard", detail::extents_of(block));
  detail::copy_any(out, block);
  return out;
}

/// \brief As above, once every execution space instance has finished.
template <class V, std::enable_if_t<detail::is_view_v<V>, int> = 0>
auto gather(const Mesh& mesh, const PartitionSpec& spec, const V& block) {
  return gather(detail::unnamed_instance<typename V::execution_space>(), mesh, spec, block);
}

}  // namespace kpmap
