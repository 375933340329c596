// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Persistent pools of raw buffers in one memory space, leased and
/// given back: the pinned host staging pool, and the device-side pools that
/// hold fused and packed messages.
///
/// Internal. A free slab that is large enough is reused (best fit); otherwise
/// a new slab of the request rounded up to a power of two is allocated, so a
/// run whose messages repeat settles after its first step and then allocates
/// nothing. Not thread-safe: collectives are issued from one thread
/// (MPI_THREAD_FUNNELED).

#include <kpmap/base/detail/finalize.hpp>
#include <kpmap/base/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace kpmap::transport {

/// What a pool holds its buffers for: two pools of one memory space (host
/// scratch and host staging on a CPU build) stay apart.
struct ScratchBuffers {};
struct StagingBuffers {};

template <class MemorySpace, class Purpose = ScratchBuffers>
class BufferPool {
 public:
  using memory_space = MemorySpace;

  /// \brief A buffer on loan; returned to the pool on destruction.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept { *this = std::move(other); }
    Lease& operator=(Lease&& other) noexcept {
      if (this != &other) {
        if (pool_) pool_->give_back(slab_);
        pool_ = other.pool_;
        slab_ = other.slab_;
        data_ = other.data_;
        bytes_ = other.bytes_;
        other.pool_ = nullptr;
        other.data_ = nullptr;
      }
      return *this;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (pool_) pool_->give_back(slab_);
    }
    void* data() const noexcept { return data_; }
    std::size_t bytes() const noexcept { return bytes_; }

   private:
    friend class BufferPool;
    BufferPool* pool_ = nullptr;
    std::size_t slab_ = 0;
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
  };

  /// \brief The process-wide pool of this memory space (released before
  /// Kokkos is finalised).
  static BufferPool& instance();

  /// \brief A buffer of at least `bytes` bytes (aligned for any element type).
  Lease acquire(std::size_t bytes);

  /// \brief Frees every slab; outstanding leases must have been returned.
  void release() { slabs_.clear(); }

  std::size_t capacity_bytes() const noexcept {
    std::size_t n = 0;
    for (const auto& s : slabs_) n += s.memory.extent(0);
    return n;
  }
  /// \brief How many slabs were ever allocated (tests check reuse with it).
  std::size_t allocations() const noexcept { return allocations_; }

  BufferPool() = default;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

 private:
  struct Slab {
    Kokkos::View<unsigned char*, MemorySpace> memory;
    bool in_use = false;
  };
  void give_back(std::size_t slab) noexcept {
    if (slab < slabs_.size()) slabs_[slab].in_use = false;
  }
  std::vector<Slab> slabs_;
  std::size_t allocations_ = 0;
};

// Defined below the class so that, under `extern template`, a program's
// files do not compile them again.
template <class MemorySpace, class Purpose>
BufferPool<MemorySpace, Purpose>& BufferPool<MemorySpace, Purpose>::instance() {
  static BufferPool* pool = [] {
    auto* p = new BufferPool();
    // The slabs belong to Kokkos: free them before Kokkos is finalised.
    detail::at_finalize([p] { p->release(); });
    return p;
  }();
  return *pool;
}

template <class MemorySpace, class Purpose>
typename BufferPool<MemorySpace, Purpose>::Lease BufferPool<MemorySpace, Purpose>::acquire(
    std::size_t bytes) {
  bytes = bytes > 0 ? bytes : 1;
  std::size_t best = slabs_.size();
  for (std::size_t i = 0; i < slabs_.size(); ++i) {
    const auto& s = slabs_[i];
    if (!s.in_use && s.memory.extent(0) >= bytes &&
        (best == slabs_.size() || s.memory.extent(0) < slabs_[best].memory.extent(0))) {
      best = i;
    }
  }
  if (best == slabs_.size()) {
    std::size_t size = 4096;
    while (size < bytes) size *= 2;
    slabs_.push_back(Slab{
        Kokkos::View<unsigned char*, MemorySpace>(
            Kokkos::view_alloc(Kokkos::WithoutInitializing,
                               std::string("kpmap::BufferPool<") + MemorySpace::name() + ">::slab"),
            size),
        false});
    ++allocations_;
  }
  Slab& s = slabs_[best];
  s.in_use = true;
  Lease lease;
  lease.pool_ = this;
  lease.slab_ = best;
  lease.data_ = s.memory.data();
  lease.bytes_ = bytes;
  return lease;
}

/// \brief Scratch buffers in memory space M: packed and fused messages.
template <class M>
using ScratchPool = BufferPool<M, ScratchBuffers>;

/// \brief The pinned host staging pool: where device buffers go when MPI
/// cannot take device pointers (or when KPMAP_STAGING=always).
using StagingPool = BufferPool<detail::PinnedHostSpace, StagingBuffers>;

// The pools every build uses, compiled once (transport/buffer_pool.cpp).
extern template class BufferPool<Kokkos::DefaultExecutionSpace::memory_space, ScratchBuffers>;
extern template class BufferPool<detail::PinnedHostSpace, StagingBuffers>;

}  // namespace kpmap::transport
