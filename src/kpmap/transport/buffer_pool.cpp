// SPDX-License-Identifier: BSD-3-Clause
// The scratch pool of the default memory space and the staging pool,
// compiled once for every program (buffer_pool.hpp declares them extern).

#include <kpmap/transport/buffer_pool.hpp>

namespace kpmap::transport {

template class BufferPool<Kokkos::DefaultExecutionSpace::memory_space, ScratchBuffers>;
template class BufferPool<detail::PinnedHostSpace, StagingBuffers>;

}  // namespace kpmap::transport
