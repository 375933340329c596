#pragma once
/// \file
/// \brief The persistent pinned-host staging pool used when device buffers
/// cannot go straight to MPI (or when KPMAP_STAGING=always).
///
/// Internal. Buffers are leased and given back; a free slab that is large
/// enough is reused, otherwise a new slab of at least twice the largest so far
/// is allocated, so a run settles after a few calls and then allocates nothing.
/// Not thread-safe: collectives are issued from one thread (MPI_THREAD_FUNNELED).

#include <cstddef>
#include <memory>
#include <vector>

namespace kpmap::transport {

class StagingPool {
 public:
  /// \brief A staging buffer on loan; returned to the pool on destruction.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    void* data() const noexcept { return data_; }
    std::size_t bytes() const noexcept { return bytes_; }

   private:
    friend class StagingPool;
    StagingPool* pool_ = nullptr;
    std::size_t slab_ = 0;
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
  };

  /// \brief The process-wide pool (released before Kokkos is finalised).
  static StagingPool& instance();

  /// \brief A buffer of at least `bytes` bytes of pinned host memory.
  Lease acquire(std::size_t bytes);

  /// \brief Frees every slab; outstanding leases must have been returned.
  void release();

  std::size_t slab_count() const noexcept { return slabs_.size(); }
  std::size_t capacity_bytes() const noexcept;
  /// \brief How many slabs were ever allocated (tests check reuse with it).
  std::size_t allocations() const noexcept { return allocations_; }

  StagingPool();
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

 private:
  struct Slab;
  void give_back(std::size_t slab) noexcept;
  std::vector<std::unique_ptr<Slab>> slabs_;
  std::size_t allocations_ = 0;
};

}  // namespace kpmap::transport
