// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// What the deck sources share (internal to src/kpmap/deck/): how keys, types
// and values are written in messages and tables, and how key paths with
// numbered groups ("states.#.density") are matched.

#include <kpmap/base/words.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/deck/detail/type_words.hpp>

#include <toml++/toml.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kpmap::deck::detail {

/// \brief "a boolean (true or false)", ... as errors say what was expected.
const char* expected_phrase(Type t);
/// \brief s in double quotes, with TOML's escapes.
std::string quote(const std::string& s);
/// \brief A value as a deck would write it.
std::string format_value(const Value& v);
/// \brief The allowed values or range of a key, for tables.
std::string format_range(const Key& k);
/// \brief What a TOML node is, for "expected ..., found ..." errors.
std::string describe(const toml::node& n);
/// \brief "mesh" of "mesh.cells".
std::string section_of(const std::string& path);
/// \brief The dot-separated parts of a path.
std::vector<std::string_view> segments(std::string_view path);
/// \brief A group number ("2" of "states.2.density").
bool is_index(std::string_view s);
/// \brief Whether `path` is `pattern` with numbers for its "#" (or, with
/// `section`, a section above such a key).
bool matches(std::string_view pattern, std::string_view path, bool section);
/// \brief "states.#" of "states.#.density"; "" for a key outside any group.
std::string group_of(const std::string& pattern);

}  // namespace kpmap::deck::detail
