// SPDX-License-Identifier: BSD-3-Clause
// Input decks: typed schema, precise errors (file, line, column, key), --set
// overrides, the resolved deck, and identical decks on every rank.

#include "support/mpi_test.hpp"

#include <kpmap/base/words.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/deck/detail/type_words.hpp>
#include <kpmap/run/phases.hpp>
#include <kpmap/sim/config.hpp>
#include <kpmap/train/config.hpp>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
namespace deck = kpmap::deck;

namespace {

deck::Schema schema() {
  deck::Schema s("kpmap-test");
  s.string("model.kind", std::nullopt, {"linear", "mlp"}, "model family")
      .integer_list("model.hidden", std::vector<long long>{64, 64}, {1, 65536}, "",
                    "hidden layer widths")
      .boolean("model.bias", true, "learn a bias")
      .integer("train.epochs", 10, {1, 1000000}, "", "passes over the data")
      .real("train.learning_rate", 0.05, {0.0, 10.0}, "", "step size")
      .real_list("train.schedule", std::vector<double>{}, {0.0, 1.0}, "", "decay factors")
      .string("output.dir", "out", {}, "where results go")
      .real("time.end", std::nullopt, {0.0, std::nullopt}, "s", "end time");
  return s;
}

const char* valid =
    "# a valid deck, with UTF-8 in a comment: \xc2\xb0"
    "C\n"
    "[model]\n"
    "kind = \"mlp\"\n"
    "hidden = [32, 16]\n"
    "\n"
    "[train]\n"
    "epochs = 5\n"
    "learning_rate = 1\n"
    "\n"
    "[time]\n"
    "end = 2.5\n";

struct Bad {
  const char* name;
  std::string text;
  std::string expect;  // a substring of the message, with file:line:column where there is one
};

}  // namespace

TEST_CASE("a valid deck resolves with defaults filled in", "[deck]") {
  auto d = deck::parse(schema(), valid, "deck.toml");
  CHECK(d.string("model.kind") == "mlp");
  CHECK(d.integer_list("model.hidden") == std::vector<long long>{32, 16});
  CHECK(d.boolean("model.bias"));               // default
  CHECK(d.real("train.learning_rate") == 1.0);  // an integer is a fine real
  CHECK(d.real("time.end") == 2.5);
  CHECK(d.string("output.dir") == "out");
  CHECK_THROWS_WITH(d.integer("model.kind"), ContainsSubstring("is not an integer"));

  // The resolved text is itself a valid deck that resolves to the same values.
  const std::string resolved = d.to_toml();
  CHECK_THAT(resolved, ContainsSubstring("bias = true"));
  CHECK_THAT(resolved, ContainsSubstring("learning_rate = 1.0"));
  auto again = deck::parse(schema(), resolved, "resolved.toml");
  CHECK(again.to_toml().substr(again.to_toml().find('\n')) == resolved.substr(resolved.find('\n')));
}

TEST_CASE("the resolved deck holds any text as ASCII and reads back", "[deck]") {
  // e acute (2 bytes), a CJK character (3), an emoji beyond the BMP (4), a
  // quote, a backslash and a tab: each written so that TOML reads it back.
  const std::string dir = "r\xc3\xa9sultats \xe6\x97\xa5/\xf0\x9f\x94\xa5 \"q\" \\ \t";
  CHECK(deck::toml_quoted(dir) == "\"r\\u00E9sultats \\u65E5/\\U0001F525 \\\"q\\\" \\\\ \\t\"");
  auto d = deck::parse(schema(), valid, "deck.toml", {"output.dir=" + deck::toml_quoted(dir)});
  REQUIRE(d.string("output.dir") == dir);
  const std::string resolved = d.to_toml();
  CHECK(std::all_of(resolved.begin(), resolved.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x80; }));
  CHECK(deck::parse(schema(), resolved, "resolved.toml").string("output.dir") == dir);
  // Bytes that are no UTF-8 (a Latin-1 e acute, a lone continuation byte, an
  // overlong slash) cannot be held by a deck, and say where they are.
  for (const std::string bad : {"caf\xe9", "a\x80", "\xc0\xaf"}) {
    CHECK_THROWS_WITH(deck::toml_quoted(bad), ContainsSubstring("is not UTF-8 text (byte "));
  }
}

namespace {
template <class E>
void check_words_read_back() {
  const std::vector<std::string> words = kpmap::enum_words<E>();
  const std::vector<E> values = kpmap::enum_values<E>();
  REQUIRE(words.size() == values.size());
  for (std::size_t i = 0; i < words.size(); ++i) {
    INFO(words[i]);
    CHECK(std::count(words.begin(), words.end(), words[i]) == 1);
    CHECK(kpmap::word_of(values[i]) == words[i]);
    CHECK(kpmap::enum_of<E>(words[i]) == values[i]);
  }
  CHECK_FALSE(kpmap::enum_of<E>("no such word").has_value());
}
}  // namespace

TEST_CASE("every enumeration's words read back as its values, one word each", "[deck]") {
  check_words_read_back<kpmap::train::Sharding>();
  check_words_read_back<kpmap::train::DataKind>();
  check_words_read_back<kpmap::sim::Scheme>();
  check_words_read_back<kpmap::sim::Preconditioner>();
  check_words_read_back<kpmap::sim::Coefficient>();
  check_words_read_back<kpmap::Phase>();
  check_words_read_back<deck::Type>();
  CHECK(std::string(kpmap::word_of(kpmap::train::Sharding::gradients)) == "gradients");
  CHECK(kpmap::enum_of<kpmap::sim::Preconditioner>("jac_block") ==
        kpmap::sim::Preconditioner::jac_block);
  // The schemas' choices are these words, in this order.
  const auto train = kpmap::train::train_schema();
  CHECK(train.find("train.sharding")->choices == kpmap::enum_words<kpmap::train::Sharding>());
  CHECK(train.find("data.kind")->choices == kpmap::enum_words<kpmap::train::DataKind>());
}

TEST_CASE("a number is written as the shortest TOML float that reads back the same", "[deck]") {
  CHECK(deck::toml_number(0.1) == "0.1");
  CHECK(deck::toml_number(3.0) == "3.0");  // a point: it stays a float
  CHECK(deck::toml_number(-0.0) == "-0.0");
  CHECK(deck::toml_number(1e300) == "1e+300");
  const double cases[] = {
      0.1,         0.3,  2.0 / 3.0, 1e-15, 6.02214076e23, 5e-324, 1.7976931348623157e308,
      123456789.0, -2.5, 1e22};
  for (double v : cases) {
    const std::string t = deck::toml_number(v);
    INFO(t);
    CHECK(std::strtod(t.c_str(), nullptr) == v);
    CHECK(t.find_first_of(".e") != std::string::npos);
    // No fewer significant digits read back the same (printf's %.*g finds
    // the least), and the text has no more than that.
    int least = 1;
    char buf[40];
    for (; least < 17; ++least) {
      std::snprintf(buf, sizeof buf, "%.*g", least, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
    std::string digits;
    for (char c : t.substr(0, t.find('e'))) {
      if (c >= '0' && c <= '9') digits += c;
    }
    digits.erase(0, digits.find_first_not_of('0'));
    digits.erase(digits.find_last_not_of('0') + 1);
    CHECK(static_cast<int>(digits.size()) <= least);
    // And a deck reads it back as that double (where the key's range takes it).
    if (v >= 0.0 && v <= 10.0) {
      const auto d = deck::parse(schema(), valid, "deck.toml", {"train.learning_rate=" + t});
      CHECK(d.real("train.learning_rate") == v);
    }
  }
}

TEST_CASE("--set overrides are typed and validated like the deck", "[deck]") {
  auto d = deck::parse(schema(), valid, "deck.toml",
                       {"train.epochs=7", "model.kind=linear", "train.schedule=[0.5, 0.25]",
                        "output.dir=results/run 1"});
  CHECK(d.integer("train.epochs") == 7);
  CHECK(d.string("model.kind") == "linear");
  CHECK(d.real_list("train.schedule") == std::vector<double>{0.5, 0.25});
  CHECK(d.string("output.dir") == "results/run 1");
  CHECK_THROWS_WITH(deck::parse(schema(), valid, "deck.toml", {"train.epochs=ten"}),
                    StartsWith("--set train.epochs=ten: key 'train.epochs': expected an integer"));
  CHECK_THROWS_WITH(deck::parse(schema(), valid, "deck.toml", {"train.epochz=3"}),
                    ContainsSubstring("unknown key 'train.epochz'; did you mean 'train.epochs'?"));
  CHECK_THROWS_WITH(deck::parse(schema(), valid, "deck.toml", {"train.epochs"}),
                    ContainsSubstring("expected section.key=value"));
  CHECK_THROWS_WITH(deck::parse(schema(), valid, "deck.toml", {"model.kind=cnn"}),
                    ContainsSubstring("must be one of \"linear\", \"mlp\", found \"cnn\""));
  // A non-ASCII character (here U+03DA, found by fuzzing) never reaches the
  // TOML parser: a number refuses it, a string takes it as it is.
  CHECK_THROWS_WITH(deck::parse(schema(), valid, "deck.toml", {"train.epochs=\xcf\x9a-9"}),
                    StartsWith("--set train.epochs=\xcf\x9a-9: key 'train.epochs': expected an "
                               "integer"));
  CHECK(
      deck::parse(schema(), valid, "deck.toml", {"output.dir=caf\xc3\xa9"}).string("output.dir") ==
      "caf\xc3\xa9");  // One key and one value: a newline would smuggle in a second line (here
  // into a string value, where it was taken as it was). Quoted, the quotes
  // are TOML's, not the value's (they made a folder named with them).
  for (const char* quoted : {"output.dir=\"caf\xc3\xa9\"", "output.dir='caf\xc3\xa9'"}) {
    CAPTURE(quoted);
    CHECK(deck::parse(schema(), valid, "deck.toml", {quoted}).string("output.dir") ==
          "caf\xc3\xa9");
  }
  CHECK_THROWS_WITH(
      deck::parse(schema(), valid, "deck.toml", {"output.dir=\"caf\xc3\xa9\\n\""}),
      ContainsSubstring("key 'output.dir': a quoted value with characters beyond ASCII is read "
                        "without TOML's escapes"));
  CHECK_THROWS_WITH(
      deck::parse(schema(), valid, "deck.toml", {"output.dir=x\ntrain.epochs=1"}),
      ContainsSubstring("a control character (U+000A) in the argument; a --set is one "
                        "section.key=value on one line"));
  CHECK_THROWS_WITH(deck::parse(schema(), valid, "deck.toml", {"train.epochs=3\t"}),
                    ContainsSubstring("a control character (U+0009)"));
}

TEST_CASE("malformed decks get their own clear message with file, line and key", "[deck]") {
  const std::string head = "[model]\nkind = \"mlp\"\n[time]\nend = 1.0\n";  // lines 1-4
  const std::vector<Bad> cases = {
      {"unknown key with suggestion", head + "[train]\nepoks = 3\n",
       "deck.toml:6:9: unknown key 'train.epoks'; did you mean 'train.epochs'?"},
      {"key in the wrong section", head + "[train]\nkind = \"mlp\"\n",
       "deck.toml:6:8: unknown key 'train.kind'; did you mean 'model.kind'?"},
      {"unknown key far from any", head + "[train]\nzzzzzzzzzzzz = 3\n",
       "unknown key 'train.zzzzzzzzzzzz' (kpmap-test knows"},
      {"misspelt section", head + "[trian]\nepochs = 3\n",
       "deck.toml:6:10: unknown key 'trian.epochs'; did you mean 'train.epochs'?"},
      {"section given a value", "train = 3\n" + head, "deck.toml:1:9: 'train' is a section"},
      {"integer given a string", head + "[train]\nepochs = \"ten\"\n",
       "deck.toml:6:10: key 'train.epochs': expected an integer, found a string (\"ten\")"},
      {"integer given a real", head + "[train]\nepochs = 2.5\n",
       "deck.toml:6:10: key 'train.epochs': expected an integer, found a number (2.5)"},
      {"real given a string", head + "[train]\nlearning_rate = \"fast\"\n",
       "deck.toml:6:17: key 'train.learning_rate': expected a number, found a string"},
      {"real given a boolean", head + "[train]\nlearning_rate = true\n",
       "deck.toml:6:17: key 'train.learning_rate': expected a number, found a boolean (true)"},
      {"boolean given an integer", "[model]\nkind = \"mlp\"\nbias = 1\n[time]\nend = 1\n",
       "deck.toml:3:8: key 'model.bias': expected a boolean (true or false), found an integer (1)"},
      {"boolean given a string", "[model]\nkind = \"mlp\"\nbias = \"yes\"\n[time]\nend = 1\n",
       "deck.toml:3:8: key 'model.bias': expected a boolean (true or false), found a string"},
      {"string given a number", "[model]\nkind = 3\n[time]\nend = 1\n",
       "deck.toml:2:8: key 'model.kind': expected a string, found an integer (3)"},
      {"string not among the choices", "[model]\nkind = \"cnn\"\n[time]\nend = 1\n",
       "deck.toml:2:8: key 'model.kind': must be one of \"linear\", \"mlp\", found \"cnn\""},
      {"integer below its range", head + "[train]\nepochs = 0\n",
       "deck.toml:6:10: key 'train.epochs' is out of range: must be [1, 1000000], found 0"},
      {"real above its range", head + "[train]\nlearning_rate = 11.0\n",
       "deck.toml:6:17: key 'train.learning_rate' is out of range: must be [0.0, 10.0], "
       "found 11.0"},
      {"negative time with a unit", "[model]\nkind = \"mlp\"\n[time]\nend = -1.0\n",
       "deck.toml:4:7: key 'time.end' is out of range: must be >= 0.0 s, found -1.0"},
      {"not a finite number", "[model]\nkind = \"mlp\"\n[time]\nend = nan\n",
       "deck.toml:4:7: key 'time.end': expected a finite number, found nan"},
      {"list given a scalar", head + "[train]\nschedule = 0.5\n",
       "deck.toml:6:12: key 'train.schedule': expected a list of numbers, found a number (0.5)"},
      {"list element of the wrong type",
       "[model]\nkind = \"mlp\"\nhidden = [8, \"x\"]\n"
       "[time]\nend = 1\n",
       "deck.toml:3:10: key 'model.hidden' element 1: expected an integer, found a string"},
      {"list element out of range", "[model]\nkind = \"mlp\"\nhidden = [8, 0]\n[time]\nend = 1\n",
       "deck.toml:3:10: key 'model.hidden' element 1 is out of range: must be [1, 65536], found 0"},
      {"missing required key", "[model]\nkind = \"mlp\"\n",
       "deck.toml: missing required key time.end (real: end time)"},
      {"two missing required keys", "[train]\nepochs = 2\n",
       "deck.toml: missing required keys model.kind (string: model family), time.end"},
      {"duplicate key", "[model]\nkind = \"mlp\"\nkind = \"linear\"\n[time]\nend = 1\n",
       "deck.toml:3:8: duplicate key or table: Error while parsing key-value pair: cannot "
       "redefine existing string 'kind'"},
      {"duplicate table", head + "[model]\nbias = true\n", "deck.toml:5:"},
      {"syntax error: missing value", head + "[train]\nepochs =\n", "deck.toml:6:9: syntax error"},
      {"syntax error: unterminated string", "[model]\nkind = \"mlp\n", "deck.toml:2:"},
      {"syntax error: bad table header", "[model\nkind = \"mlp\"\n", "deck.toml:1:"},
      {"table header not starting with a key", "[(odel]\nkind = \"mlp\"\n",
       "deck.toml:1:2: syntax error: a table header must start with a key"},
      {"control character", "[model]\nkind = \"m\x01lp\"\n",
       "deck.toml:2:10: syntax error: control character U+0001 is not allowed"},
      {"non-ASCII outside strings",
       "[model]\nkind = \"mlp\"\n\xe2\x80\x83"
       "bias = true\n",
       "deck.toml:3:1: syntax error: non-ASCII character; decks are ASCII outside comments"},
      {"non-ASCII in a string", "[model]\nkind = \"ml\xc3\xa9\"\n[time]\nend = 1\n",
       "deck.toml:2:11: syntax error: non-ASCII character; decks are ASCII outside comments "
       "(write \\uXXXX in a string"},
      {"NUL in a string", head + "[output]\ndir = \"out\\u0000/x\"\n",
       "key 'output.dir': holds a NUL character (\\u0000) at position 3; everything after it "
       "would be lost"},
      {"empty file", "", "deck.toml: the deck is empty"},
      {"comments only", "# nothing here\n\n# at all\n", "deck.toml: the deck is empty"},
      {"tea.in text given as TOML", "*tea\nstate 1 density=100.0\n*endtea\n",
       "deck.toml:1:1: syntax error"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    try {
      deck::parse(schema(), c.text, "deck.toml");
      FAIL_CHECK("accepted: " << c.name);
    } catch (const kpmap::InputError& e) {
      CHECK_THAT(std::string(e.what()), ContainsSubstring(c.expect));
      CHECK(e.code() == kpmap::exit_code::bad_input);
    }
  }
}

TEST_CASE("integers are held to their range in integer arithmetic", "[deck]") {
  deck::Schema s("kpmap-test");
  s.integer("seed", 0, {0, 9.2e18}, "", "a seed").integer("big", 0, {0, std::nullopt}, "", "");
  // 9200000000000000001 is 9.2e18 as a double: it passed, and printed as 9.2e18.
  CHECK_THROWS_WITH(deck::parse(s, "seed = 9200000000000000001\n", "deck.toml"),
                    ContainsSubstring("key 'seed' is out of range: must be [0, "
                                      "9200000000000000000], found 9200000000000000001"));
  CHECK(deck::parse(s, "seed = 9200000000000000000\n", "deck.toml").integer("seed") ==
        9200000000000000000LL);
  CHECK(deck::parse(s, "big = 9223372036854775807\n", "deck.toml").integer("big") ==
        9223372036854775807LL);
}

TEST_CASE("a UTF-8 byte-order mark is skipped", "[deck]") {
  const auto d = deck::parse(schema(), std::string("\xEF\xBB\xBF") + valid, "deck.toml");
  CHECK(d.integer("train.epochs") == 5);
  CHECK(d.line("train.epochs") == 7);
}

TEST_CASE("keys are read as TOML defines them", "[deck]") {
  // A quoted key with a dot is one key, not a section and a key.
  CHECK_THROWS_WITH(
      deck::parse(schema(), "[model]\nkind = \"mlp\"\n\"train.epochs\" = 3\n[time]\nend = 1.0\n",
                  "deck.toml"),
      ContainsSubstring("deck.toml:3:"));
  CHECK_THROWS_WITH(
      deck::parse(schema(), "[model]\nkind = \"mlp\"\n\"train.epochs\" = 3\n[time]\nend = 1.0\n",
                  "deck.toml"),
      ContainsSubstring("key \"train.epochs\": a quoted key is one key"));
  // Dotted keys (unquoted) are sections, as TOML says.
  CHECK(
      deck::parse(schema(), "model.kind = \"mlp\"\ntrain.epochs = 3\ntime.end = 1.0\n", "deck.toml")
          .integer("train.epochs") == 3);
}

TEST_CASE("a missing file is named", "[deck]") {
  CHECK_THROWS_WITH(deck::parse_file(schema(), "/nonexistent/deck.toml"),
                    ContainsSubstring("/nonexistent/deck.toml: the deck file does not exist"));
}

TEST_CASE("a deck that is no regular file is refused before it is read", "[deck]") {
  // /dev/zero would be read for ever, a directory read as an empty deck.
  CHECK_THROWS_WITH(
      deck::parse_file(schema(), "/dev/zero"),
      ContainsSubstring("/dev/zero: the deck file is a character device, not a regular file"));
  CHECK_THROWS_WITH(deck::parse_file(schema(), "/"),
                    ContainsSubstring("/: the deck file is a directory, not a regular file"));
}

TEST_CASE("--help-deck and the Markdown tables come from the schema", "[deck]") {
  const auto help = schema().help();
  CHECK_THAT(help, ContainsSubstring("train.epochs (integer, default 10, [1, 1000000])"));
  CHECK_THAT(help, ContainsSubstring("time.end (real, required, >= 0.0, unit s)"));
  const auto md = schema().markdown();
  CHECK_THAT(md, ContainsSubstring("### `[train]`"));
  CHECK_THAT(md, ContainsSubstring("| `model.kind` | string | **required** | one of \"linear\", "
                                   "\"mlp\" |  | model family |"));
}

TEST_CASE("a key's old name is read, with a warning naming the new one", "[deck]") {
  auto s = schema();
  s.renamed("train.rate", "train.learning_rate", "0.3");
  // In the deck: the value goes to the new key, and the resolved deck says the new name.
  const std::string text = std::string(valid) + "[output]\n";  // lines 1-13
  const std::string old_name = "[model]\nkind = \"mlp\"\n[train]\nrate = 0.5\n[time]\nend = 1.0\n";
  auto d = deck::parse(s, old_name, "deck.toml");
  CHECK(d.real("train.learning_rate") == 0.5);
  REQUIRE(d.warnings().size() == 1);
  CHECK(d.warnings()[0] ==
        "deck.toml:4:8: key 'train.rate' is now called 'train.learning_rate'; "
        "the old name is read until kpmap 0.3");
  CHECK_THAT(d.to_toml(), ContainsSubstring("learning_rate = 0.5"));
  CHECK_THAT(d.to_toml(), !ContainsSubstring("rate = 0.5\n[") && !ContainsSubstring("\nrate"));
  // Later messages about the key name what the user wrote, at its line.
  CHECK(d.where("train.learning_rate") == "deck.toml:4: ");
  CHECK(d.named("train.learning_rate") == "'train.rate' (train.learning_rate)");
  // Its checks are the new key's.
  CHECK_THROWS_WITH(
      deck::parse(s, "[model]\nkind = \"mlp\"\n[train]\nrate = 11\n[time]\nend = 1.0\n",
                  "deck.toml"),
      StartsWith("deck.toml:4:8: key 'train.rate' (train.learning_rate) is out of "
                 "range"));
  // Both names: refused, in either order, naming both lines.
  const std::string head = "[model]\nkind = \"mlp\"\n[time]\nend = 1.0\n[train]\n";  // lines 1-5
  for (const auto& [both, at] :
       {std::pair<std::string, std::string>{"rate = 0.5\nlearning_rate = 0.5\n", "6:8"},
        {"learning_rate = 0.5\nrate = 0.5\n", "7:8"}}) {
    const std::string other = at[0] == '6' ? "7" : "6";
    CHECK_THROWS_WITH(deck::parse(s, head + both, "deck.toml"),
                      StartsWith("deck.toml:" + at +
                                 ": key 'train.learning_rate' is given twice "
                                 "(as 'train.learning_rate' or its old name 'train.rate'; also "
                                 "at line " +
                                 other + "); give it once, by its new name"));
  }
  // A --set by the old name overrides the deck's value under either name, and warns.
  auto o = deck::parse(s, valid, "deck.toml", {"train.rate=0.25"});
  CHECK(o.real("train.learning_rate") == 0.25);
  REQUIRE(o.warnings().size() == 1);
  CHECK_THAT(o.warnings()[0], StartsWith("--set train.rate=0.25: key 'train.rate' is now called "
                                         "'train.learning_rate'"));
  CHECK(o.where("train.learning_rate") == "--set train.rate=0.25: ");
  CHECK_THROWS_WITH(deck::parse(s, valid, "deck.toml", {"train.rate=x"}),
                    StartsWith("--set train.rate=x: key 'train.rate' (train.learning_rate): "
                               "expected a number"));
  // A deck without old names has no warnings; --help-deck and the docs list the old names.
  CHECK(deck::parse(s, text, "deck.toml").warnings().empty());
  CHECK_THAT(s.help(), ContainsSubstring("  train.rate -> train.learning_rate (until kpmap 0.3)"));
  CHECK_THAT(s.markdown(),
             ContainsSubstring("| `train.rate` | `train.learning_rate` | kpmap 0.3 |"));
  // A rename must name a key, and an old name must not be one.
  CHECK_THROWS_WITH(deck::Schema(s).renamed("train.x", "train.nothing", "0.3"),
                    ContainsSubstring("'train.nothing' is no key of kpmap-test"));
  CHECK_THROWS_WITH(deck::Schema(s).renamed("train.epochs", "train.learning_rate", "0.3"),
                    ContainsSubstring("'train.epochs' is a key of kpmap-test already"));
}

TEST_CASE("load gives every rank the same deck, or the same error", "[deck][mpi]") {
  const std::string path = "test_deck_" + std::to_string(kpmap::test::world_size()) + ".toml";
  if (kpmap::test::world_rank() == 0) {
    std::ofstream(path) << valid;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // Only rank 0 reads the file: the others would not even need to see it.
  auto d = deck::load(schema(), path, {"train.epochs=9"}, MPI_COMM_WORLD);
  CHECK(d.integer("train.epochs") == 9);
  // Compare the resolved text across ranks.
  std::string text = d.to_toml();
  int len = static_cast<int>(text.size());
  std::string root_text = text;
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  root_text.resize(len);
  MPI_Bcast(root_text.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  CHECK(kpmap::test::all_ranks(root_text == text));
  // A warning (an old name) reaches every rank; rank 0 prints it.
  auto renamed = schema();
  renamed.renamed("train.rate", "train.learning_rate", "0.3");
  const auto w = deck::load(renamed, path, {"train.rate=0.5"}, MPI_COMM_WORLD);
  CHECK(kpmap::test::all_ranks(w.warnings().size() == 1 && w.real("train.learning_rate") == 0.5));

  try {
    deck::load(schema(), path, {"train.epochs=0"}, MPI_COMM_WORLD);
    FAIL_CHECK("accepted epochs = 0");
  } catch (const kpmap::InputError& e) {
    CHECK(e.all_ranks());
    CHECK_THAT(std::string(e.what()), ContainsSubstring("out of range"));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (kpmap::test::world_rank() == 0) std::remove(path.c_str());
}

namespace {

deck::Schema numbered() {
  deck::Schema s("kpmap-test");
  s.integer("mesh.cells", 10, {1, std::nullopt}, "", "cells")
      .real("states.#.density", std::nullopt, {0.0, std::nullopt}, "kg/m^3", "density")
      .string("states.#.geometry", "rectangle", {"rectangle", "circle"}, "shape")
      .real_list("states.#.lower", std::vector<double>{}, {}, "m", "lower corner")
      .string("output.dir", "out", {}, "where results go");
  return s;
}

}  // namespace

TEST_CASE("numbered tables: an instance exists when the deck sets one of its keys", "[deck]") {
  const std::string text =
      "[mesh]\ncells = 4\n"
      "[states.1]\ndensity = 1.5\n"
      "[states.3]\ndensity = 2\ngeometry = \"circle\"\nlower = [0.5, 1]\n";
  auto d = deck::parse(numbered(), text, "deck.toml");
  CHECK(d.indices("states") == std::vector<int>{1, 3});
  CHECK(d.real("states.1.density") == 1.5);
  CHECK(d.string("states.1.geometry") == "rectangle");  // default, per instance
  CHECK(d.string("states.3.geometry") == "circle");
  CHECK(d.real_list("states.3.lower") == std::vector<double>{0.5, 1.0});
  CHECK(d.has("states.3.lower"));
  CHECK_FALSE(d.has("states.2.density"));
  CHECK(d.has("output.dir"));
  CHECK(d.indices("mesh").empty());

  // The resolved deck writes one table per instance and reads back the same.
  const std::string resolved = d.to_toml();
  CHECK_THAT(resolved, ContainsSubstring("[states.3]\ndensity = 2.0\ngeometry = \"circle\""));
  auto again = deck::parse(numbered(), resolved, "resolved.toml");
  CHECK(again.to_toml().substr(again.to_toml().find('\n')) == resolved.substr(resolved.find('\n')));

  // Dotted keys and --set create instances too.
  auto e = deck::parse(numbered(), "states.2.density = 5\n", "deck.toml", {"states.4.density=7"});
  CHECK(e.indices("states") == std::vector<int>{2, 4});
  CHECK(e.real("states.4.density") == 7.0);
  CHECK(e.integer("mesh.cells") == 10);

  const auto help = numbered().help();
  CHECK_THAT(help, ContainsSubstring("[states.#]  (# = 1, 2, 3, ...: one table each)"));
  CHECK_THAT(help, ContainsSubstring("states.#.density (real, required in each table, >= 0.0"));
  CHECK_THAT(numbered().markdown(), ContainsSubstring("### `[states.#]`"));
}

TEST_CASE("numbered tables: errors name the instance", "[deck]") {
  const std::vector<Bad> cases = {
      {"required key missing in one instance",
       "[states.1]\ndensity = 1\n[states.2]\n"
       "geometry = \"circle\"\n",
       "deck.toml: missing required key states.2.density (real: density)"},
      {"misspelt key in an instance", "[states.2]\ndensty = 1\n",
       "deck.toml:2:10: unknown key 'states.2.densty'; did you mean 'states.2.density'?"},
      {"index 0", "[states.0]\ndensity = 1\n",
       "deck.toml:2:11: 'states.0': the tables of states are numbered 1 to 9999 without leading "
       "zeros (states.1, states.2, ...)"},
      {"index with a leading zero", "[states.01]\ndensity = 1\n",
       "'states.01': the tables of states are numbered 1 to 9999"},
      {"index beyond 9999", "[states.10000]\ndensity = 1\n",
       "'states.10000': the tables of states are numbered 1 to 9999"},
      {"not an index", "[states.x]\ndensity = 1\n", "unknown key 'states.x.density'"},
      {"keys without an index", "[states]\ndensity = 1\n", "unknown key 'states.density'"},
      {"choice checked per instance", "[states.5]\ndensity = 1\ngeometry = \"blob\"\n",
       "deck.toml:3:12: key 'states.5.geometry': must be one of \"rectangle\", \"circle\""},
      {"range checked per instance", "[states.5]\ndensity = -1\n",
       "deck.toml:2:11: key 'states.5.density' is out of range: must be >= 0.0 kg/m^3"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    try {
      deck::parse(numbered(), c.text, "deck.toml");
      FAIL_CHECK("accepted: " << c.name);
    } catch (const kpmap::InputError& e) {
      CHECK_THAT(std::string(e.what()), ContainsSubstring(c.expect));
    }
  }
  CHECK_THROWS_WITH(
      deck::parse(numbered(), "[mesh]\ncells = 3\n", "deck.toml", {"states.2.geometry=circle"}),
      ContainsSubstring("missing required key states.2.density"));
  CHECK_THROWS_WITH(deck::Schema("x").real("a.#.#.b", 1.0, {}, "", "two indices"),
                    ContainsSubstring("may hold one '#' segment"));
}

TEST_CASE("a deck is compared with the resolved deck of an earlier run", "[deck]") {
  const std::string text =
      "[mesh]\ncells = 4\n"
      "[states.1]\ndensity = 1.5\n"
      "[states.3]\ndensity = 2\nlower = [0.5, 1]\n";
  const auto d = deck::parse(numbered(), text, "deck.toml");
  const std::string saved = d.to_toml();
  const std::vector<std::string> paths = {"mesh.cells", "states"};
  CHECK(deck::first_difference(d, saved, paths).empty());
  // Numbers compare as numbers: 2 and 2.0 are one value.
  CHECK(deck::first_difference(d,
                               "[mesh]\ncells = 4.0\n[states.1]\ndensity = 1.5\n"
                               "geometry = \"rectangle\"\nlower = []\n[states.3]\ndensity = 2\n"
                               "geometry = \"rectangle\"\nlower = [0.5, 1.0]\n",
                               paths)
            .empty());
  const auto changed = [&](const std::vector<std::string>& set) {
    return deck::first_difference(deck::parse(numbered(), text, "deck.toml", set), saved, paths);
  };
  CHECK(changed({"mesh.cells=5"}) ==
        "--set mesh.cells=5: key 'mesh.cells' is 5 here and 4 in the checkpoint");
  CHECK(changed({"states.3.lower=[0.5, 2]"}) ==
        "--set states.3.lower=[0.5, 2]: key 'states.3.lower' is [0.5, 2.0] here and [0.5, 1.0] "
        "in the checkpoint");
  CHECK(changed({"states.3.geometry=\"circle\""}) ==
        "--set states.3.geometry=\"circle\": key 'states.3.geometry' is \"circle\" here and "
        "\"rectangle\" in the checkpoint");
  // A state the earlier run did not have, and one it had that is gone.
  CHECK_THAT(changed({"states.4.density=1"}),
             StartsWith("--set states.4.density=1: key 'states.4.density' is 1.0 here, and the "
                        "checkpoint has no [states.4]"));
  const auto fewer =
      deck::parse(numbered(), "[mesh]\ncells = 4\n[states.1]\ndensity = 1.5\n", "deck.toml");
  CHECK_THAT(deck::first_difference(fewer, saved, paths),
             ContainsSubstring("key 'states.3.density' is 2.0 in the checkpoint and not given"));
  // Keys outside `paths` are not compared; a key newer than the checkpoint is not either.
  CHECK(changed({"output.dir=\"elsewhere\""}).empty());
  CHECK(deck::first_difference(d,
                               "[mesh]\ncells = 4\n[states.1]\ndensity = 1.5\n"
                               "[states.3]\ndensity = 2.0\nlower = [0.5, 1.0]\n",
                               paths)
            .empty());
}

TEST_CASE("pieces' own keys merge into a schema, and a key two pieces share means one thing",
          "[deck]") {
  deck::Schema a("a");
  a.real("omega", 1.0, {0.0, 2.0}, "", "weight").integer("sweeps", 2, {1, 10}, "", "sweeps");
  deck::Schema b("b");
  b.real("omega", 1.0, {0.0, 2.0}, "", "relaxation");
  deck::Schema s("app");
  s.string("solver.method", "a", {"a", "b"}, "method");
  s.merge("solver.", "a", a).merge("solver.", "b", b);
  REQUIRE(s.find("solver.omega") != nullptr);
  CHECK(s.find("solver.omega")->description == "a: weight; b: relaxation");
  CHECK(s.find("solver.sweeps")->description == "a: sweeps");
  // Checked as strictly as any key of the schema: range, type, did-you-mean.
  CHECK_THROWS_WITH(deck::parse(s, "[solver]\nomega = 3.0\n", "d.toml"),
                    StartsWith("d.toml:2") && ContainsSubstring("solver.omega"));
  CHECK_THROWS_WITH(deck::parse(s, "[solver]\nomgea = 1.5\n", "d.toml"),
                    ContainsSubstring("did you mean 'solver.omega'"));
  const auto d = deck::parse(s, "[solver]\nomega = 1.5\n", "d.toml");
  CHECK(d.real("solver.omega") == 1.5);
  CHECK(std::get<double>(d.value("solver.omega")) == 1.5);
  // The same name with another default (or type, range, unit) is refused.
  deck::Schema c("c");
  c.real("omega", 0.5, {0.0, 2.0}, "", "other");
  CHECK_THROWS_WITH(s.merge("solver.", "c", c),
                    ContainsSubstring("'solver.omega' is declared by a, b and by c"));
  // A piece's key may not take the name of the schema's own.
  deck::Schema m("m");
  m.string("method", "a", {"a"}, "clash");
  CHECK_THROWS_WITH(s.merge("solver.", "m", m),
                    ContainsSubstring("key 'solver.method' of m is a key of app itself"));
}

TEST_CASE("a key given where it would have no effect is refused, naming when it takes effect",
          "[deck]") {
  deck::Schema s("app");
  s.string("data.kind", "synthetic", {"synthetic", "file", "stream"}, "where the data come from")
      .string("data.path", "", {}, "file, stream: the data file")
      .boolean("opt.scale", false, "scale the rate")
      .integer("opt.base", 256, {1, 1e6}, "", "scale: the batch the rate is tuned for")
      .real("states.#.density", std::nullopt, {0.0, std::nullopt}, "", "density")
      .string("states.#.geometry", "box", {"box", "ball"}, "region")
      .real("states.#.radius", 0.0, {0.0, std::nullopt}, "", "radius of a ball");
  s.when("data.path", "data.kind", {"file", "stream"})
      .when("opt.base", "opt.scale", {"true"})
      .when("states.#.radius", "states.#.geometry", {"ball"})
      .from_table("states.#.geometry", 2, "state 1 fills the domain")
      .from_table("states.#.radius", 2, "state 1 fills the domain");
  const std::string states = "[states.1]\ndensity = 1\n[states.2]\ndensity = 2\n";
  auto parse = [&](const std::string& text, std::vector<std::string> sets = {}) {
    return deck::parse(s, states + text, "d.toml", sets);
  };
  // Where it takes effect, a key is read as any other.
  CHECK(parse("[data]\nkind = \"file\"\npath = \"x.h5\"\n").string("data.path") == "x.h5");
  CHECK(parse("", {"opt.scale=true", "opt.base=64"}).integer("opt.base") == 64);
  CHECK(parse("", {"states.2.geometry=\"ball\"", "states.2.radius=0.5"}).real("states.2.radius") ==
        0.5);
  // Where it would do nothing, it is refused: the key, its line, the value
  // that makes it useless and where it is read.
  CHECK_THROWS_WITH(parse("[data]\npath = \"x.h5\"\n"),
                    StartsWith("d.toml:6: key 'data.path': data.kind = \"synthetic\" reads no "
                               "data.path, it would have no effect (data.path is read only where "
                               "data.kind is \"file\" or \"stream\")"));
  CHECK_THROWS_WITH(parse("", {"opt.base=64"}),
                    StartsWith("--set opt.base=64: key 'opt.base': opt.scale = false reads no "
                               "opt.base") &&
                        ContainsSubstring("read only where opt.scale is true)"));
  // In a numbered table, the condition reads the same table's key.
  CHECK_THROWS_WITH(parse("", {"states.2.radius=0.5"}),
                    ContainsSubstring("key 'states.2.radius': states.2.geometry = \"box\" reads "
                                      "no states.2.radius"));
  CHECK_THROWS_WITH(parse("", {"states.1.geometry=\"ball\""}),
                    ContainsSubstring("key 'states.1.geometry': it would have no effect in "
                                      "states.1 (state 1 fills the domain; states.#.geometry is "
                                      "read from states.2 on)"));
  // A default is never refused: the resolved deck writes every key's, and
  // reads back as it was.
  const auto d = parse("", {"data.path=\"\"", "opt.base=256"});
  const std::string resolved = d.to_toml();
  CHECK_THAT(resolved, ContainsSubstring("base = 256"));
  const std::string again = deck::parse(s, resolved, "resolved.toml").to_toml();
  CHECK(again.substr(again.find('\n')) == resolved.substr(resolved.find('\n')));
  // --help-deck and docs/decks.md say when each key takes effect.
  CHECK_THAT(s.help(), ContainsSubstring("(read only where data.kind is \"file\" or \"stream\")"));
  CHECK_THAT(s.help(), ContainsSubstring("(read only where states.#.geometry is \"ball\"; from "
                                         "states.2 on (state 1 fills the domain))"));
  CHECK_THAT(s.markdown(), ContainsSubstring("*(read only where opt.scale is true)*"));
  // Declared for keys of the schema only.
  CHECK_THROWS_WITH(deck::Schema(s).when("data.pth", "data.kind", {"file"}),
                    ContainsSubstring("'data.pth' is no key of app"));
  CHECK_THROWS_WITH(deck::Schema(s).when("data.path", "data.knd", {"file"}),
                    ContainsSubstring("'data.knd' is no key of app"));
  CHECK_THROWS_WITH(deck::Schema(s).from_table("data.path", 2, "why"),
                    ContainsSubstring("no key of a numbered table"));
}

TEST_CASE("a piece's key given with another piece chosen is refused", "[deck]") {
  deck::Schema a("a");
  a.real("omega", 1.0, {0.0, 2.0}, "", "weight");
  deck::Schema b("b");
  b.real("omega", 1.0, {0.0, 2.0}, "", "relaxation").integer("sweeps", 2, {1, 10}, "", "sweeps");
  deck::Schema s("app");
  s.string("solver.method", "a", {"a", "b", "c"}, "method");
  s.merge("solver.", "a", a, "solver.method").merge("solver.", "b", b, "solver.method");
  CHECK(
      deck::parse(s, "[solver]\nmethod = \"b\"\nsweeps = 3\n", "d.toml").integer("solver.sweeps") ==
      3);
  CHECK_THROWS_WITH(deck::parse(s, "[solver]\nsweeps = 3\n", "d.toml"),
                    StartsWith("d.toml:2: key 'solver.sweeps': solver.method = \"a\" reads no "
                               "sweeps, it would have no effect (sweeps is read by b)"));
  CHECK_THROWS_WITH(deck::parse(s, "[solver]\nmethod = \"c\"\nomega = 1.5\n", "d.toml"),
                    ContainsSubstring("(omega is read by a, b)"));
  // Its default, as a resolved deck writes it, is no change.
  CHECK(deck::parse(s, "[solver]\nsweeps = 2\n", "d.toml").integer("solver.sweeps") == 2);
}

TEST_CASE("settings give a piece its keys' values, else their defaults", "[deck]") {
  deck::Schema keys("weighted_jacobi");
  keys.real("omega", 0.8, {0.0, 2.0}, "", "weight")
      .string("order", "lex", {"lex", "red_black"}, "sweep order");
  deck::Settings s(keys);
  CHECK(s.real("omega") == 0.8);
  s.set("omega", 1.25);
  CHECK(s.real("omega") == 1.25);
  CHECK(s.string("order") == "lex");
  CHECK_THROWS_WITH(s.set("omgea", 1.0),
                    ContainsSubstring("no key 'omgea' is declared by weighted_jacobi"));
  CHECK_THROWS_WITH(s.set("omega", std::string("fast")), ContainsSubstring("'omega' is a"));
  CHECK_THROWS_WITH(s.integer("omega"), ContainsSubstring("no integer key 'omega'"));
  CHECK_THROWS(deck::Settings().real("omega"));
}
