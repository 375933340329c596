// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the TeaLeaf deck reader (`*tea ... *endtea`) and the path
// kpmap-heat takes after it: translation to TOML, the heat schema, and the
// run configuration. Any input must either get through or raise
// kpmap::InputError: no crash, no hang, no sanitizer report. What the reader
// writes must always be valid TOML (a bad deck is the reader's to refuse, not
// the TOML parser's).
//
// An input is the deck text, then optionally a NUL byte and `--set` overrides
// separated by NUL bytes, so the fuzzer also reaches TeaLeaf keys given on
// the command line.
//
// Built and run by tests/scripts/run_fuzzer.sh (clang, -fsanitize=fuzzer,address,undefined).

#include <kpmap/base/error.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/sim/solvers/info.hpp>
#include <kpmap/sim/tea_deck.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

// The built-in solvers' registrations without their kernels (this target
// has no Kokkos): their names, which TeaLeaf's tl_use_* keys select, and
// keys of their own (none).
namespace kpmap::sim::detail {
void register_builtin_solvers();
void register_builtin_solvers() {
  for (const char* name : {"cg", "chebyshev", "jacobi", "ppcg"})
    solver_registry().add({name, name, 0, 0});
}
}  // namespace kpmap::sim::detail

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto nul = input.find('\0');
  const std::string text = input.substr(0, nul);
  std::vector<std::string> sets;
  for (auto pos = nul; pos != std::string::npos;) {
    const auto next = input.find('\0', pos + 1);
    sets.push_back(input.substr(pos + 1, next == std::string::npos ? next : next - pos - 1));
    pos = next;
  }
  (void)kpmap::sim::is_tea_deck(input);
  kpmap::sim::TeaTranslation t;
  try {
    t = kpmap::sim::translate_tea_deck(text, "fuzz.in", sets);
  } catch (const kpmap::InputError&) {
    return 0;  // refused with a message: the expected outcome for most inputs
  }
  try {
    const auto deck =
        kpmap::deck::parse(kpmap::sim::heat_schema(), t.toml, "translated.toml", sets);
    (void)kpmap::sim::from_deck(deck);
  } catch (const kpmap::InputError& e) {
    // The schema and from_deck may refuse values; the TOML itself must be valid.
    const std::string what = e.what();
    if (what.rfind("translated.toml:", 0) == 0 &&
        (what.find(": syntax error: ") != std::string::npos ||
         what.find(": duplicate key or table: ") != std::string::npos)) {
      std::abort();
    }
  }
  return 0;
}
