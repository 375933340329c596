// SPDX-License-Identifier: BSD-3-Clause
// 14 tensor parallelism: a two-layer MLP split Megatron-style on a 2-D mesh.
//
//   mesh = Mesh(devices, ("data", "model"))
//   @partial(shard_map, mesh=mesh,
//            in_specs=(P("data", None), P("data", None),        # x, targets t
//                      P("model", None), P("model"),            # W1, b1: by output (column)
//                      P(None, "model"), P()),                  # W2: by input (row); b2
//            out_specs=(P("data", None), P("model", None), P("model"),
//                       P(None, "model"), P(), P("data", None)))
//   def step(x, t, w1, b1, w2, b2):
//       h = tanh(x @ w1.T + b1)             # this rank's hidden units: no communication
//       y = psum(h @ w2.T, "model") + b2    # the pair's one all-reduce forward
//       dy = (y - t) / batch                # mean squared error / 2
//       dw2 = psum(dy.T @ h, "data");  db2 = psum(dy.sum(0), "data")
//       dz = (dy @ w2) * (1 - h * h)        # still this rank's hidden units only
//       dw1 = psum(dz.T @ x, "data");  db1 = psum(dz.sum(0), "data")
//       dx = psum(dz @ w1, "model")         # the pair's one all-reduce backward
//       return y, dw1, db1, dw2, db2, dx
//
// The first layer is split by its outputs (PyTorch's ColwiseParallel) and
// the second by its inputs (RowwiseParallel), so the hidden activations stay
// split between them: each device computes the hidden units it owns, and
// the second layer's partial products are summed over "model" once. The
// samples are split over "data", whose psum completes the weight gradients.
// Every result is gathered and checked against the same step computed
// whole, on the host, in plain loops. Nothing has to divide evenly: 7 hidden
// units split 4 + 3 or 3 + 2 + 2, 9 samples 5 + 4.
//
//   mpiexec -n 4 ./14_tensor_parallel      # a 2 x 2 mesh; 3 ranks: 1 x 3

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>

// Math in a kernel: Kokkos 4 has it as Kokkos::tanh, 3.x as Kokkos::Experimental::tanh.
#if KOKKOS_VERSION >= 40000
namespace math = Kokkos;
#else
namespace math = Kokkos::Experimental;
#endif

using Matrix = Kokkos::View<double**, Kokkos::LayoutRight>;
using Vector = Kokkos::View<double*>;

// c = op(a) op(b), op transposing where asked: c(i, j) = sum_k op(a)(i, k) op(b)(k, j).
template <class A, class B>
Matrix product(const A& a, bool ta, const B& b, bool tb) {
  const std::size_t rows = ta ? a.extent(1) : a.extent(0);
  const std::size_t cols = tb ? b.extent(0) : b.extent(1);
  const std::size_t inner = ta ? a.extent(0) : a.extent(1);
  Matrix c("c", rows, cols);
  Kokkos::parallel_for(
      "14_tensor_parallel::product", kpmap::row_major_range<2>({0, 0}, {long(rows), long(cols)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t j) {
        double s = 0;
        for (std::size_t k = 0; k < inner; ++k)
          s += (ta ? a(k, i) : a(i, k)) * (tb ? b(j, k) : b(k, j));
        c(i, j) = s;
      });
  return c;
}

// The sum of each column of `a` (a bias gradient).
template <class A>
Vector column_sums(const A& a) {
  Vector s("s", a.extent(1));
  Kokkos::parallel_for(
      "14_tensor_parallel::column_sums", a.extent(1), KOKKOS_LAMBDA(std::size_t j) {
        double t = 0;
        for (std::size_t i = 0; i < a.extent(0); ++i) t += a(i, j);
        s(j) = t;
      });
  return s;
}

// One device's forward and backward pass on its blocks, as the sketch above.
struct Step {
  std::size_t batch;  // samples over all devices: the loss is their mean
  template <class X, class Tg, class W1, class B1, class W2, class B2>
  auto operator()(const X& x, const Tg& t, const W1& w1, const B1& b1, const W2& w2,
                  const B2& b2) const {
    const std::size_t n = x.extent(0), hidden = w1.extent(0), outputs = w2.extent(0);
    Matrix h = product(x, false, w1, true);  // x W1^T, this rank's hidden units
    Kokkos::parallel_for(
        "14_tensor_parallel::tanh", kpmap::row_major_range<2>({0, 0}, {long(n), long(hidden)}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t j) { h(i, j) = math::tanh(h(i, j) + b1(j)); });
    Matrix y = product(h, false, w2, true);  // a partial sum over this rank's hidden units
    kpmap::psum_inplace(y, "model");
    const double scale = 1.0 / double(batch);
    Matrix dy("dy", n, outputs);
    Kokkos::parallel_for(
        "14_tensor_parallel::output", kpmap::row_major_range<2>({0, 0}, {long(n), long(outputs)}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t j) {
          y(i, j) += b2(j);
          dy(i, j) = (y(i, j) - t(i, j)) * scale;
        });
    Matrix dw2 = product(dy, true, h, false);
    Vector db2 = column_sums(dy);
    Matrix dz = product(dy, false, w2, false);
    Kokkos::parallel_for(
        "14_tensor_parallel::tanh_backward",
        kpmap::row_major_range<2>({0, 0}, {long(n), long(hidden)}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t j) { dz(i, j) *= 1 - h(i, j) * h(i, j); });
    Matrix dw1 = product(dz, true, x, false);
    Vector db1 = column_sums(dz);
    Matrix dx = product(dz, false, w1, false);
    kpmap::psum_inplace(dw1, "data");
    kpmap::psum_inplace(db1, "data");
    kpmap::psum_inplace(dw2, "data");
    kpmap::psum_inplace(db2, "data");
    kpmap::psum_inplace(dx, "model");
    return std::make_tuple(y, dw1, db1, dw2, db2, dx);
  }
};

// The same step whole, on the host: the reference.
struct Whole {
  std::vector<double> y, dw1, db1, dw2, db2, dx;
};
template <class H>
Whole serial(const H& x, const H& t, const H& w1, const std::vector<double>& b1, const H& w2,
             const std::vector<double>& b2) {
  const std::size_t n = x.extent(0), in = x.extent(1), hid = w1.extent(0), out = w2.extent(0);
  Whole r{std::vector<double>(n * out), std::vector<double>(hid * in),
          std::vector<double>(hid),     std::vector<double>(out * hid),
          std::vector<double>(out),     std::vector<double>(n * in)};
  std::vector<double> h(n * hid), dz(n * hid), dy(n * out);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < hid; ++j) {
      double s = b1[j];
      for (std::size_t k = 0; k < in; ++k) s += x(i, k) * w1(j, k);
      h[i * hid + j] = std::tanh(s);
    }
    for (std::size_t j = 0; j < out; ++j) {
      double s = b2[j];
      for (std::size_t k = 0; k < hid; ++k) s += h[i * hid + k] * w2(j, k);
      r.y[i * out + j] = s;
      dy[i * out + j] = (s - t(i, j)) / double(n);
      r.db2[j] += dy[i * out + j];
      for (std::size_t k = 0; k < hid; ++k) r.dw2[j * hid + k] += dy[i * out + j] * h[i * hid + k];
    }
    for (std::size_t k = 0; k < hid; ++k) {
      double s = 0;
      for (std::size_t j = 0; j < out; ++j) s += dy[i * out + j] * w2(j, k);
      dz[i * hid + k] = s * (1 - h[i * hid + k] * h[i * hid + k]);
      r.db1[k] += dz[i * hid + k];
      for (std::size_t c = 0; c < in; ++c) {
        r.dw1[k * in + c] += dz[i * hid + k] * x(i, c);
        r.dx[i * in + c] += dz[i * hid + k] * w1(k, c);
      }
    }
  }
  return r;
}

// The largest difference between a gathered result and the reference,
// relative to the reference's largest value.
template <class V>
double difference(const V& got, const std::vector<double>& want) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), got);
  if (h.size() != want.size()) return 1e300;
  double worst = 0, scale = 1e-300;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(h.data()[i] - want[i]));
  return worst / scale;
}

int tensor_parallel(kpmap::Runtime&) {
  const int ranks = kpmap::axis_size("devices");
  // 2 ranks on "model" where the count is even, else all of them: 1 x 1,
  // 1 x 2, 1 x 3, 2 x 2.
  kpmap::Mesh mesh({{"data", 0}, {"model", ranks % 2 == 0 ? 2 : ranks}});

  // 9 samples of 5 inputs, 7 hidden units, 3 outputs; every device makes
  // the same whole arrays from closed forms.
  const std::size_t n = 9, in = 5, hid = 7, out = 3;
  Matrix x("x", n, in), t("t", n, out), w1("w1", hid, in), w2("w2", out, hid);
  Vector b1("b1", hid), b2("b2", out);
  auto hx = Kokkos::create_mirror_view(x), ht = Kokkos::create_mirror_view(t);
  auto hw1 = Kokkos::create_mirror_view(w1), hw2 = Kokkos::create_mirror_view(w2);
  std::vector<double> vb1(hid), vb2(out);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < in; ++k) hx(i, k) = std::sin(double(3 * i + k));
    for (std::size_t j = 0; j < out; ++j) ht(i, j) = std::cos(double(i + 2 * j));
  }
  for (std::size_t j = 0; j < hid; ++j) {
    for (std::size_t k = 0; k < in; ++k) hw1(j, k) = 0.3 * std::cos(double(j * in + k));
    vb1[j] = 0.1 * double(j);
  }
  for (std::size_t j = 0; j < out; ++j) {
    for (std::size_t k = 0; k < hid; ++k) hw2(j, k) = 0.2 * std::sin(double(j * hid + k + 1));
    vb2[j] = -0.05 * double(j);
  }
  Kokkos::deep_copy(x, hx);
  Kokkos::deep_copy(t, ht);
  Kokkos::deep_copy(w1, hw1);
  Kokkos::deep_copy(w2, hw2);
  Kokkos::deep_copy(b1, Kokkos::View<const double*, Kokkos::HostSpace>(vb1.data(), hid));
  Kokkos::deep_copy(b2, Kokkos::View<const double*, Kokkos::HostSpace>(vb2.data(), out));

  using kpmap::none;
  using kpmap::P;
  auto step = kpmap::shard_map(
      mesh, {P("data", none), P("data", none), P("model", none), P("model"), P(none, "model"), P()},
      {P("data", none), P("model", none), P("model"), P(none, "model"), P(), P("data", none)},
      Step{n});
  const auto [y, dw1, db1, dw2, db2, dx] = step(x, t, w1, b1, w2, b2);

  const Whole want = serial(hx, ht, hw1, vb1, hw2, vb2);
  const double worst = std::max({difference(kpmap::gather(mesh, P("data", none), y), want.y),
                                 difference(kpmap::gather(mesh, P("model", none), dw1), want.dw1),
                                 difference(kpmap::gather(mesh, P("model"), db1), want.db1),
                                 difference(kpmap::gather(mesh, P(none, "model"), dw2), want.dw2),
                                 difference(kpmap::gather(mesh, P(), db2), want.db2),
                                 difference(kpmap::gather(mesh, P("data", none), dx), want.dx)});
  const int me = kpmap::axis_index("devices");
  std::printf("device %d at (data %d, model %d) holds %zu of the %zu hidden units\n", me,
              mesh.axis_index("data"), mesh.axis_index("model"), dw1.extent(0), hid);
  std::fflush(stdout);
  const bool ok = worst <= 1e-13;
  if (me == 0) {
    std::printf(
        "mesh %d x %d: the output and every gradient %s the whole step's (largest relative "
        "difference %.1e)\n",
        mesh.axis_size("data"), mesh.axis_size("model"), ok ? "equal" : "differ from", worst);
  }
  return kpmap::psum(ok ? 0 : 1, "devices") == 0 ? 0 : 1;
}

int main(int argc, char** argv) { return kpmap::run(argc, argv, tensor_parallel); }
