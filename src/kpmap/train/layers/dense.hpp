// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Dense (fully connected) layer: out = in W^T + b, W is units x
/// inputs; whole on every rank, or split over the mesh axis "model"
/// (tensor parallelism, Megatron-LM's pairing): by its outputs ("column",
/// PyTorch's ColwiseParallel) or by its inputs ("row", RowwiseParallel).

#include <kpmap/base/detail/blas.hpp>
#include <kpmap/collectives/collectives.hpp>
#include <kpmap/runtime/mesh.hpp>
#include <kpmap/spmd/pmap.hpp>
#include <kpmap/train/layers/registry.hpp>
#include <kpmap/train/layers/weighted.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kpmap::train {

/// \brief How a dense layer is split over the mesh axis "model".
enum class DenseParallel {
  none,    ///< whole on every rank
  column,  ///< each rank computes its even part of the outputs, from the whole input
  row,     ///< each rank takes its part of the inputs (a column layer's outputs); the
           ///< partial outputs are psum'd over the axis, then the bias is added
};

/// \brief A fully connected layer on flat inputs (put a Flatten before it
/// when its input is an image).
///
/// Split over an axis (`parallel = "column"` or `"row"` in a deck, the axis
/// "model" of the mesh the model is built under), a rank keeps a block of
/// the whole layer's weights, drawn as the whole layer's are. A column
/// layer's output is its part of the units (no communication forward; its
/// input gradient is psum'd over the axis backward); a row layer's input is
/// that part, and its output is psum'd over the axis forward (no
/// communication backward). A column layer, an elementwise activation and a
/// row layer thus take one all-reduce each way, the Megatron-LM pairing.
/// Every rank of the axis must see the same samples: the axis is not a
/// data axis.
template <class T, class M = Kokkos::DefaultExecutionSpace::memory_space>
class Dense final : public Weighted<T, M> {
  using Base = Weighted<T, M>;

 public:
  using typename Layer<T, M>::Batch;
  using typename Layer<T, M>::Exec;

  /// \brief Whole, or split as `parallel` says over `axis` (which must
  /// outlive the layer; collective over it when split).
  Dense(Shape input, std::size_t units, DenseParallel parallel = DenseParallel::none,
        const Axis* axis = nullptr)
      : Dense(input, units, parallel, axis, split(input, units, parallel, axis)) {}
  /// From its deck keys: units, parallel (over the axis "model" of
  /// Mesh::current()).
  Dense(Shape input, const deck::Settings& keys)
      : Dense(input, static_cast<std::size_t>(keys.integer("units")),
              parallel_kind(keys.string("parallel")), model_axis(keys.string("parallel"))) {}

  std::string type() const override { return "dense"; }
  std::string describe() const override {
    const auto& w = this->whole_;
    return "dense " + std::to_string(w.rows) +
           (parallel_ == DenseParallel::column
                ? " (column-parallel: units " + std::to_string(w.row0) + "-" +
                      std::to_string(w.row0 + this->outputs_) + ")"
            : parallel_ == DenseParallel::row
                ? " (row-parallel: inputs " + std::to_string(w.col0) + "-" +
                      std::to_string(w.col0 + this->fan_in_) + ")"
                : "");
  }
  Shape output_shape() const override { return Shape::flat(this->outputs_); }
  void reserve(std::size_t capacity) override { this->reserve_rows(capacity); }
  /// \brief How the layer is split, and over which axis (none: whole).
  DenseParallel parallel() const { return parallel_; }
  const Axis* axis() const { return axis_; }

  void forward(const Exec& exec, const Batch& in, const Batch& out) override {
    kpmap::detail::gemm(exec, "N", "T", T(1), in, this->w_, T(0), out);
    // Row: each rank's product is a partial sum over its inputs.
    if (parallel_ == DenseParallel::row) psum_partial(exec, out);
    this->add_bias(exec, out.data(), out.extent(0));
  }
  void backward(const Exec& exec, const Batch& in, const Batch&, const Batch& dout,
                const Batch& din) override {
    // dW = dout^T in; db = dout^T 1; din = dout W.
    kpmap::detail::gemm(exec, "T", "N", T(1), dout, in, this->grad_beta_, this->dw_);
    this->bias_gradient(exec, dout);
    if (din.data() != nullptr) {
      kpmap::detail::gemm(exec, "N", "N", T(1), dout, this->w_, T(0), din);
      // Column: each rank's input gradient is a partial sum over its outputs.
      if (parallel_ == DenseParallel::column) psum_partial(exec, din);
    }
  }
  double work_bytes_per_sample() const override { return sizeof(T); }
  double forward_flops() const override { return double(this->outputs_) * double(this->fan_in_); }

 private:
  using Whole = typename Base::Whole;

  // `whole`: where this rank's block lies; a column layer's rows are its units.
  Dense(Shape input, std::size_t units, DenseParallel parallel, const Axis* axis,
        const Whole& whole)
      : Base(input,
             parallel == DenseParallel::column
                 ? BlockPartition(units, axis->size()).count(axis->index())
                 : units,
             input.size(), units, whole),
        parallel_(parallel),
        axis_(axis) {
    if (input.image) {
      throw ShapeError("dense: its input is a " + input.str() +
                       "; put a { type = \"flatten\" } layer before it");
    }
    if (units == 0) throw ShapeError("dense: units must be at least 1");
  }

  // The sum of each rank's partial products over the axis (split layers only,
  // which `split` allows for MPI's element types alone).
  void psum_partial(const Exec& exec, const Batch& v) const {
    if constexpr (kpmap::detail::is_mpi_element_v<T>) psum_inplace(exec, v, *axis_);
  }
  // Where this rank's block lies in the whole layer's weights: a column
  // layer's rows are its even part of the units; a row layer's columns
  // follow those of the ranks before it (each rank's input width, gathered
  // over the axis).
  static Whole split(const Shape& input, std::size_t units, DenseParallel parallel,
                     const Axis* axis) {
    Whole w{0, 0, units, input.size()};
    if (parallel == DenseParallel::none) return w;
    if (axis == nullptr) throw Error("kpmap::train::Dense: a split layer needs its axis");
    if constexpr (!kpmap::detail::is_mpi_element_v<T>) {
      // 16-bit layers (precision "mixed" on a GPU): MPI has no 16-bit type to sum.
      throw ShapeError("dense: a layer split over axis '" + axis->name() +
                       "' sums its partial results over MPI, which has no 16-bit type: "
                       "split layers need precision \"float\" or \"double\", not \"mixed\"");
    }
    if (parallel == DenseParallel::column) {
      const BlockPartition p(units, axis->size());
      // Asked of the last block, the smallest, so that every rank refuses
      // together: one rank's error alone would leave the others waiting in
      // the next collective.
      if (p.count(axis->size() - 1) == 0) {
        throw ShapeError("dense: " + std::to_string(units) + " units split by column over " +
                         std::to_string(axis->size()) + " ranks of axis '" + axis->name() +
                         "' leave a rank none; give the layer at least " +
                         std::to_string(axis->size()) + " units");
      }
      w.row0 = p.begin(axis->index());
      return w;
    }
    std::vector<std::uint64_t> widths(static_cast<std::size_t>(axis->size()));
    const std::uint64_t mine = input.size();
    MPI_Allgather(&mine, 1, MPI_UINT64_T, widths.data(), 1, MPI_UINT64_T, axis->comm());
    w.cols = 0;
    for (int r = 0; r < axis->size(); ++r) {
      if (r == axis->index()) w.col0 = w.cols;
      w.cols += widths[static_cast<std::size_t>(r)];
    }
    return w;
  }

  static DenseParallel parallel_kind(const std::string& name) {
    return name == "column" ? DenseParallel::column
           : name == "row"  ? DenseParallel::row
                            : DenseParallel::none;
  }
  // The axis "model" of the mesh the model is built under (Mesh::current()).
  static const Axis* model_axis(const std::string& parallel) {
    if (parallel == "none") return nullptr;
    const Mesh& mesh = Mesh::current();
    const auto names = mesh.axis_names();
    if (std::find(names.begin(), names.end(), "model") == names.end()) {
      throw ShapeError("dense: parallel = \"" + parallel +
                       "\" splits the layer over the mesh axis \"model\", and the model is "
                       "built on a mesh without one");
    }
    return &mesh.axis("model");
  }

  DenseParallel parallel_ = DenseParallel::none;
  const Axis* axis_ = nullptr;  // the axis a split layer's ranks share
};

KPMAP_TRAIN_BUILTIN_LAYER(dense, Dense,
                          {"dense",
                           "fully connected, out = in W^T + b",
                           deck::Schema("dense")
                               .integer("units", 0, {0, 1 << 24}, "", "outputs")
                               .string("parallel", "none", {"none", "column", "row"},
                                       "tensor parallelism over the mesh axis \"model\": "
                                       "column, each rank computes its part of the units; "
                                       "row, each rank takes its part of the inputs (a column "
                                       "layer's) and the outputs are psum'd; none, whole"),
                           {"units"}})

}  // namespace kpmap::train
