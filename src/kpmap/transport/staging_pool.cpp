#include <kpmap/transport/staging_pool.hpp>

#include <kpmap/detail/kokkos_compat.hpp>
#include <kpmap/error.hpp>
#include <kpmap/runtime.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>

namespace kpmap::transport {

struct StagingPool::Slab {
  Kokkos::View<unsigned char*, detail::PinnedHostSpace> memory;
  bool in_use = false;
};

StagingPool::StagingPool() = default;
StagingPool::~StagingPool() = default;

StagingPool& StagingPool::instance() {
  static StagingPool* pool = [] {
    auto* p = new StagingPool();
    // Pinned memory belongs to Kokkos: free it before Kokkos is finalised.
    Runtime::at_finalize([p] { p->release(); });
    return p;
  }();
  return *pool;
}

StagingPool::Lease StagingPool::acquire(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  // Best fit among free slabs.
  std::size_t best = slabs_.size();
  for (std::size_t i = 0; i < slabs_.size(); ++i) {
    const auto& s = *slabs_[i];
    if (!s.in_use && s.memory.extent(0) >= bytes &&
        (best == slabs_.size() || s.memory.extent(0) < slabs_[best]->memory.extent(0))) {
      best = i;
    }
  }
  if (best == slabs_.size()) {
    std::size_t largest = 0;
    for (const auto& s : slabs_) largest = std::max<std::size_t>(largest, s->memory.extent(0));
    const std::size_t size = std::max({bytes, 2 * largest, std::size_t(4096)});
    auto slab = std::make_unique<Slab>();
    slab->memory = Kokkos::View<unsigned char*, detail::PinnedHostSpace>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::StagingPool::slab"), size);
    slabs_.push_back(std::move(slab));
    ++allocations_;
  }
  Slab& s = *slabs_[best];
  s.in_use = true;
  Lease lease;
  lease.pool_ = this;
  lease.slab_ = best;
  lease.data_ = s.memory.data();
  lease.bytes_ = bytes;
  return lease;
}

void StagingPool::give_back(std::size_t slab) noexcept {
  if (slab < slabs_.size()) slabs_[slab]->in_use = false;
}

void StagingPool::release() { slabs_.clear(); }

std::size_t StagingPool::capacity_bytes() const noexcept {
  std::size_t n = 0;
  for (const auto& s : slabs_) n += s->memory.extent(0);
  return n;
}

StagingPool::Lease::Lease(Lease&& other) noexcept { *this = std::move(other); }

StagingPool::Lease& StagingPool::Lease::operator=(Lease&& other) noexcept {
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

StagingPool::Lease::~Lease() {
  if (pool_) pool_->give_back(slab_);
}

}  // namespace kpmap::transport
