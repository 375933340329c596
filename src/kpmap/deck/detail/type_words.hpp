// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// How tables and messages name a deck key's type (internal to
// src/kpmap/deck/ and its tests): apart from detail/text.hpp, so that a file
// nvcc compiles can read it without toml++, whose headers nvcc refuses.

#include <kpmap/base/words.hpp>
#include <kpmap/deck/deck.hpp>

#include <utility>

/// \brief "boolean", "integer", ... as tables and messages name a key's type.
template <>
struct kpmap::EnumWords<kpmap::deck::Type> {
  using T = kpmap::deck::Type;
  static constexpr std::pair<T, const char*> list[] = {{T::boolean, "boolean"},
                                                       {T::integer, "integer"},
                                                       {T::real, "real"},
                                                       {T::string, "string"},
                                                       {T::integer_list, "list of integers"},
                                                       {T::real_list, "list of reals"}};
};
