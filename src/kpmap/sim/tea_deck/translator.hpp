// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The reader of a TeaLeaf deck (internal to src/kpmap/sim/tea_deck/): it reads
// the *tea block line by line (read.cpp), then checks what the lines set
// across keys and writes the kpmap-heat TOML deck they mean (translate.cpp).

#include <kpmap/sim/tea_deck.hpp>

#include "keys.hpp"
#include "words.hpp"

#include <map>
#include <string>
#include <vector>

namespace kpmap::sim::tea {

class Translator {
 public:
  explicit Translator(std::string path) : path_(std::move(path)) {}

  /// \brief The deck `text`, then the TeaLeaf keys among `overrides` (which
  /// keeps the others), as a kpmap-heat deck.
  TeaTranslation run(const std::string& text, std::vector<std::string>& overrides);

 private:
  void read_line(const std::vector<std::string>& words, const Where& where, int line_no);
  void read_state(const std::vector<std::string>& words, const Where& where, int line_no);
  void set_value(const ValueKey& k, const std::string& v, const Where& where);
  TeaTranslation finish();
  /// \brief The solver keys the deck's method does not read, dropped with a note.
  bool read_by_another_method(const std::string& key, const Setting& value);

  std::string path_;
  std::map<std::string, std::string> given_;  // key -> where the deck gave it
  std::map<std::string, Setting> values_;     // kpmap-heat key -> its setting
  std::map<int, TeaStateLine> states_;
  std::vector<std::string> notes_;
  std::string method_set_;  // solver.method by a --set in kpmap-heat's own form
};

}  // namespace kpmap::sim::tea
