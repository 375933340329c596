// SPDX-License-Identifier: BSD-3-Clause
// XXH3 compiled into kpmap from Debian's libxxhash-dev header: its vector
// code for the instruction set kpmap is built for, nothing to link at run time.
#include <kpmap/io/detail/attributes.hpp>

// GCC 12 takes the AVX-512 intrinsics' own _mm512_undefined for a value that
// may be used uninitialized (a false report from inside its headers); this
// file holds XXH3 alone.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kpmap::checkpoint::detail {

BlockHash::BlockHash() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw Error("kpmap::checkpoint: out of memory for a hash");
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

BlockHash::~BlockHash() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void BlockHash::add(const void* bytes, std::size_t n) {
  if (n > 0) XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), bytes, n);
}

std::uint64_t BlockHash::value() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

}  // namespace kpmap::checkpoint::detail
