// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief TeaLeaf's `*tea ... *endtea` input decks, read unchanged and
/// translated into the kpmap-heat deck schema (sim/config.hpp).
///
/// The format, as TeaLeaf's reference reader takes it: lines between `*tea`
/// and `*endtea` (a second `*tea` also ends the block, as TeaLeaf3D's decks
/// have it); case does not matter; `!` and `;` start comments; `=` and `,`
/// separate like blanks, so `key=value`, `key value` and `key = value` are
/// the same; several keys may share a line; a `state N ...` line holds one
/// state. Every key of TeaLeaf_ref's input reader is read, with the
/// un-prefixed names of the C++ ports (`use_cg`, `eps`, `max_iters`, ...).
/// Keys that only choose an implementation inside TeaLeaf (`use_c_kernels`,
/// `profiler_on`, `tiles_per_task`, ...) are accepted with a note; any other
/// word is an error naming the file, line and key. TeaLeaf's defaults apply
/// to what a deck leaves out (10 x 10 cells on [0, 100]^2, Jacobi, dt 0.1).

#include <kpmap/deck/deck.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kpmap::sim {

/// \brief True when the first line of `text` that is neither blank nor a
/// comment (`!` or `#`) starts with `*tea`.
bool is_tea_deck(std::string_view text);

/// \brief A TeaLeaf deck in kpmap-heat terms.
struct TeaTranslation {
  std::string toml;  ///< the deck as kpmap-heat TOML (dotted keys)
  /// where the deck set each kpmap-heat key, by its TeaLeaf keys and line
  std::map<std::string, deck::Origin, std::less<>> origins;
  std::vector<std::string> notes;  ///< "file:line: note: ..." for keys accepted without effect
};

/// \brief Translates the TeaLeaf deck `text` (read from `path`). `overrides`
/// whose key has no dot (`tl_max_iters=50`, or a switch such as `tl_use_cg`)
/// are TeaLeaf keys: they apply after the deck's own lines and are removed
/// from the list; the others are left for the schema.
/// \throws kpmap::InputError naming the file, the line and the key.
TeaTranslation translate_tea_deck(const std::string& text, const std::string& path,
                                  std::vector<std::string>& overrides);

/// \brief kpmap-heat's deck::Translator: TOML decks pass unchanged; TeaLeaf
/// decks are translated and their notes printed to standard output.
deck::Translation heat_deck_translator(const std::string& text, const std::string& path,
                                       std::vector<std::string>& overrides);

/// \brief Every TeaLeaf key kpmap-heat reads (for documentation and tests).
std::vector<std::string> tea_keys();

}  // namespace kpmap::sim
