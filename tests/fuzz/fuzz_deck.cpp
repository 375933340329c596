// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the deck parser. Any input must either parse or raise
// kpmap::InputError: no crash, no hang, no sanitizer report. A deck that parses
// must survive a round trip through its resolved text unchanged.
//
// Built and run by tests/scripts/run_fuzzer.sh (clang, -fsanitize=fuzzer,address,undefined).

#include <kpmap/deck/deck.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {
const kpmap::deck::Schema& schema() {
  static const kpmap::deck::Schema s = [] {
    kpmap::deck::Schema d("fuzz");
    d.string("model.kind", std::nullopt, {"linear", "mlp"}, "model family")
        .integer_list("model.hidden", std::vector<long long>{8}, {1, 4096}, "", "widths")
        .boolean("model.bias", true, "bias")
        .integer("train.epochs", 1, {1, 1000}, "", "epochs")
        .real("train.learning_rate", 0.1, {0.0, 1.0}, "", "step")
        .real_list("train.schedule", std::vector<double>{}, {}, "", "factors")
        .string("output.dir", "out", {}, "directory")
        .real("time", 0.0, {}, "s", "a top-level key")
        .real("states.#.density", std::nullopt, {0.0, std::nullopt}, "", "numbered, required")
        .string("states.#.geometry", "rectangle", {}, "numbered, with a default");
    return d;
  }();
  return s;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto deck = kpmap::deck::parse(schema(), text, "fuzz.toml");
    const std::string resolved = deck.to_toml();
    const auto again = kpmap::deck::parse(schema(), resolved, "fuzz.toml");
    if (again.to_toml() != resolved) std::abort();  // the resolved deck must be a fixed point
  } catch (const kpmap::InputError&) {
    // Rejected with a message: the expected outcome for most inputs.
  }
  return 0;
}
