// SPDX-License-Identifier: BSD-3-Clause
// 02 pmap of x * 2 over sharded data:
//
//   jax.pmap(lambda x: x * 2)(jnp.arange(N))
//
// kpmap::pmap hands each device its block of the rows of x (blocks may differ
// by one row: nothing has to divide by the device count) and runs the function
// there. The result stays sharded, each device holding its block, as a JAX
// array does until it is indexed; kpmap::gather reassembles it when asked.
//
//   mpiexec -n 3 ./02_pmap

#include <kpmap/kpmap.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>

// The mapped function: one device's block in, its block of the result out.
// Its work is a Kokkos kernel over device memory, so it runs on a GPU as is.
struct TimesTwo {
  template <class X>
  Kokkos::View<double*> operator()(const X& x) const {
    Kokkos::View<double*> y("y", x.extent(0));
    Kokkos::parallel_for(
        "02_pmap::times_two", x.extent(0), KOKKOS_LAMBDA(std::size_t i) { y(i) = 2 * x(i); });
    return y;
  }
};

int times_two(kpmap::Runtime&) {
  const std::size_t n = 10;
  // jnp.arange(n), made on the device by a kernel.
  Kokkos::View<double*> x("x", n);
  Kokkos::parallel_for(
      "02_pmap::arange", n, KOKKOS_LAMBDA(std::size_t i) { x(i) = static_cast<double>(i); });

  auto f = kpmap::pmap("devices", TimesTwo{}, kpmap::in_axes(kpmap::sharded),
                       kpmap::out_axes(kpmap::sharded));
  const auto block = f(x);  // this device's block of the result

  // Each block checked against the closed form y(i) = 2 i at its global rows.
  const kpmap::BlockPartition rows(n, "devices");
  const int me = kpmap::axis_index("devices");
  auto mine = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), block);
  int wrong = mine.extent(0) != rows.count(me);
  for (std::size_t i = 0; i < mine.extent(0); ++i) wrong += mine(i) != 2.0 * (rows.begin(me) + i);

  // The whole array, reassembled on every device (out_axes(kpmap::gathered)
  // would have done it in the pmap call).
  const auto y = kpmap::gather(block, "devices");
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  for (std::size_t i = 0; i < n; ++i) wrong += host(i) != 2.0 * i;  // host loop: printing only
  if (kpmap::axis_index("devices") == 0) {
    std::printf("y = [");
    for (std::size_t i = 0; i < n; ++i) std::printf("%s%g", i ? ", " : "", host(i));
    std::printf("] (%s 2 x arange(%zu))\n", wrong ? "NOT" : "equals", n);
  }
  return kpmap::psum(wrong, "devices") == 0 ? 0 : 1;
}

int main(int argc, char** argv) { return kpmap::run(argc, argv, times_two); }
