// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief The one way an enumeration is spelled in decks, messages and
/// outputs. A specialization of EnumWords<E> lists each value of E with its
/// word, once; word_of() and enum_of() read that list both ways, and
/// enum_words() gives a deck schema its choices, so that a deck's word and
/// the value it means are written in one place:
///
///     template <>
///     struct kpmap::EnumWords<Sharding> {
///       static constexpr std::pair<Sharding, const char*> list[] = {
///           {Sharding::replicated, "replicated"}, {Sharding::optimizer, "optimizer"}};
///     };
///     s.string("train.sharding", "replicated", kpmap::enum_words<Sharding>(), "...");
///     const Sharding mode = kpmap::enum_of<Sharding>(d.string("train.sharding")).value();

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kpmap {

/// \brief Specialize with `static constexpr std::pair<E, const char*> list[]`.
template <class E>
struct EnumWords;

/// \brief The word of `e` ("?" for a value the list lacks).
template <class E>
constexpr const char* word_of(E e) {
  for (const auto& [value, word] : EnumWords<E>::list) {
    if (value == e) return word;
  }
  return "?";
}

/// \brief The value whose word is `word`, or none.
template <class E>
std::optional<E> enum_of(std::string_view word) {
  for (const auto& [value, w] : EnumWords<E>::list) {
    if (word == w) return value;
  }
  return std::nullopt;
}

/// \brief Every word of E, in the list's order (a deck key's choices).
template <class E>
std::vector<std::string> enum_words() {
  std::vector<std::string> words;
  for (const auto& entry : EnumWords<E>::list) words.emplace_back(entry.second);
  return words;
}

/// \brief Every value of E, in the list's order.
template <class E>
std::vector<E> enum_values() {
  std::vector<E> values;
  for (const auto& entry : EnumWords<E>::list) values.push_back(entry.first);
  return values;
}

}  // namespace kpmap
