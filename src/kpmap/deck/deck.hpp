// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Input decks: TOML files checked against a typed schema that each
/// application declares in code.
///
/// The schema is the single source of truth: it validates decks and
/// `--set section.key=value` overrides, prints `--help-deck`, and generates the
/// tables of docs/decks.md. Every error names the file, the line and column,
/// the key, what was expected and what was found, and is a kpmap::InputError
/// (exit code 2).

#include <kpmap/base/error.hpp>

#include <mpi.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kpmap::deck {

class Deck;

/// \brief The type of a deck value.
enum class Type { boolean, integer, real, string, integer_list, real_list };

/// \brief Levenshtein distance between two words (for "did you mean" hints).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// \brief The candidate closest to `word`, or "" when none is within
/// max(2, length / 3) edits.
std::string closest_word(std::string_view word, const std::vector<std::string>& candidates);

/// \brief `s` as a TOML basic string in ASCII: quotes, backslashes and
/// control characters escaped, and every other character beyond ASCII
/// written as \uXXXX (or \UXXXXXXXX), so that a deck's resolved text
/// (a path in any language, say) reads back as it was.
/// \throws InputError when `s` is not UTF-8.
std::string toml_quoted(const std::string& s);

/// \brief `d` as a TOML float: the shortest text that reads back as the
/// same double ("0.1", not "0.10000000000000001"), with a point or an
/// exponent so that it stays a float ("3.0"), and "inf", "-inf" or "nan".
/// Every deck kpmap writes or translates writes its numbers so.
std::string toml_number(double d);

/// \brief "" when `s` is UTF-8 text, else the first byte that is not
/// ("byte 7").
std::string utf8_problem(std::string_view s);

/// \brief `s` for a message or a TOML comment: UTF-8 text as it is, every
/// byte that is no UTF-8 and every control character as \xNN (a file name
/// may hold any byte but '/' and NUL).
std::string printable(std::string_view s);

/// \brief A deck value of any Type.
using Value =
    std::variant<bool, long long, double, std::string, std::vector<long long>, std::vector<double>>;

/// \brief Inclusive bounds for a number (or for every element of a list).
struct Range {
  std::optional<double> min;
  std::optional<double> max;
  bool above_min = false;  ///< the minimum itself is out of range: (min, max]
};

/// \brief When a key takes effect: where the key `key` holds one of `values`
/// (a string's text; `true` or `false`). A `key` with a `#` segment is the
/// same numbered table's key (`states.#.geometry` for `states.#.radius`).
/// `pieces`: the values are the names of the registered pieces that read
/// the key (solvers, losses, optimizers), and `key` is the key that picks one.
struct Condition {
  std::string key;
  std::vector<std::string> values;
  bool pieces = false;
  bool text = true;  ///< `key` is a string key (its values are quoted in messages)
};

/// \brief One key of a schema.
///
/// A path segment `#` stands for a positive index (1, 2, ... 9999), so that a
/// deck may hold numbered tables: `states.#.density` matches `states.1.density`,
/// `states.2.density`, ... written as `[states.1]`, `[states.2]`, .... An
/// instance (`states.2`) exists when the deck sets any of its keys; its other
/// keys then take their defaults, or are required when they have none.
struct Key {
  std::string path;  ///< "section.key", or "section.#.key" for numbered tables
  Type type = Type::real;
  std::optional<Value> fallback;     ///< the default; none means the key is required
  Range range;                       ///< numbers and lists
  std::vector<std::string> choices;  ///< strings: the allowed values (empty: any)
  std::string unit;                  ///< e.g. "s", "m", "" for none
  std::string description;           ///< one line
  /// When the key takes effect, each of these holding (Schema::when): a
  /// deck that gives the key a value other than its default where one does
  /// not hold is refused, naming the key and the condition.
  std::vector<Condition> when;
  /// A numbered table's key takes effect from table `first_table` on
  /// (Schema::from_table), for the reason `first_table_reason`.
  int first_table = 1;
  std::string first_table_reason;
};

/// \brief The keys an application's deck may hold.
class Schema {
 public:
  explicit Schema(std::string app) : app_(std::move(app)) {}

  Schema& boolean(const std::string& path, std::optional<bool> fallback,
                  const std::string& description);
  Schema& integer(const std::string& path, std::optional<long long> fallback, Range range,
                  const std::string& unit, const std::string& description);
  Schema& real(const std::string& path, std::optional<double> fallback, Range range,
               const std::string& unit, const std::string& description);
  Schema& string(const std::string& path, std::optional<std::string> fallback,
                 std::vector<std::string> choices, const std::string& description);
  Schema& integer_list(const std::string& path, std::optional<std::vector<long long>> fallback,
                       Range range, const std::string& unit, const std::string& description);
  Schema& real_list(const std::string& path, std::optional<std::vector<double>> fallback,
                    Range range, const std::string& unit, const std::string& description);

  /// \brief Declares when the key at `path` takes effect: only where the key
  /// `key` holds one of `values` (see Condition). Every key that other keys
  /// make useless states it, so that a deck giving it where it would do
  /// nothing is refused rather than silently ignored (data.path on synthetic
  /// data). A resolved deck writes every key's default, so a default is
  /// never refused. Several calls: each condition must hold.
  /// \throws Error when `path` or `key` is no key of the schema.
  Schema& when(const std::string& path, const std::string& key, std::vector<std::string> values);
  /// \brief Declares that the numbered table key `path` (`states.#.radius`)
  /// takes effect from table `first` on, `why` saying why in the message
  /// ("state 1 fills the domain").
  Schema& from_table(const std::string& path, int first, const std::string& why);
  /// \brief The message for `path` (a concrete key of deck `d`) where the deck
  /// gives it a value other than its default and it would have no effect, or
  /// "" where it takes effect.
  std::string no_effect(const Deck& d, const std::string& path) const;

  const std::string& app() const noexcept { return app_; }
  const std::vector<Key>& keys() const noexcept { return keys_; }
  /// \brief The key at `path` (a concrete path such as `states.2.density`
  /// finds the key `states.#.density`), or nullptr.
  const Key* find(std::string_view path) const;
  /// \brief The known key closest to `path` (for "did you mean"), or "".
  std::string closest(std::string_view path) const;

  /// \brief Adds the keys of `keys` under `prefix` ("solver." puts `omega`
  /// at `solver.omega`), as the keys of `owner` (a solver, a layer type):
  /// their descriptions begin with the owner's name. A key another owner
  /// added already is shared when both declare the same type, default,
  /// range, choices and unit; the description then names both owners.
  /// \throws Error when the declarations differ, naming both owners.
  /// `selector`, when given, is the key that picks the owner ("solver.method"):
  /// each merged key then takes effect only where it names an owner (when()).
  Schema& merge(const std::string& prefix, const std::string& owner, const Schema& keys,
                const std::string& selector = "");

  /// \brief An earlier name of a key, accepted for a while.
  struct Rename {
    std::string old_path;  ///< "output.keep"
    std::string new_path;  ///< "output.keep_last", a key of this schema
    std::string until;     ///< the release that stops accepting the old name: "0.3"
  };
  /// \brief Accepts `old_path`, an earlier name of the key `new_path`, until
  /// kpmap `until`: a deck or --set that gives it sets `new_path`, and the
  /// deck notes a warning naming the new name (Deck::warnings); giving both
  /// names is an error. \throws Error when `new_path` is no key of the schema
  /// (declare it first) or `old_path` is one.
  Schema& renamed(const std::string& old_path, const std::string& new_path,
                  const std::string& until);
  /// \brief The rename whose old name is `path`, or nullptr.
  const Rename* renamed_from(std::string_view path) const;
  const std::vector<Rename>& renames() const noexcept { return renames_; }

  /// \brief Plain text for `--help-deck`: every key with type, default, range and description.
  std::string help() const;
  /// \brief The same as Markdown tables, one per section, for docs/decks.md.
  std::string markdown() const;

 private:
  Schema& add(Key key);
  std::string app_;
  std::vector<Key> keys_;
  std::vector<Rename> renames_;
  std::map<std::string, std::string, std::less<>> owners_;  // merged key -> "a, b"
};

/// \brief Those of a piece's own keys that are set, by name (a loss's
/// `{{"delta", 0.5}}`): what a deck gives (Registry::own_keys) or a program
/// writes; the rest take the defaults the piece declares. Every piece keeps
/// its keys in this shape (SolverOptions, OptimizerConfig, Loss, LayerSpec)
/// until it is made, when they become its Settings.
using Values = std::map<std::string, Value, std::less<>>;

/// \brief The values of the keys a piece declares for itself (a solver's
/// `omega`, a layer's `slope`): those set, else the declared default. What
/// a piece is made with.
class Settings {
 public:
  Settings() = default;
  /// \brief Values for `keys`, a piece's own Schema (its paths without prefix).
  explicit Settings(const Schema& keys) : keys_(&keys) {}
  /// \brief `given` over the defaults of `keys`. \throws Error for a name
  /// `keys` does not declare, or a value of another type.
  Settings(const Schema& keys, const Values& given) : keys_(&keys) {
    for (const auto& [name, value] : given) set(name, value);
  }
  /// \brief Sets `name`. \throws Error for a name `keys` does not declare,
  /// or a value of another type.
  Settings& set(const std::string& name, Value value);
  bool boolean(std::string_view name) const;
  long long integer(std::string_view name) const;
  double real(std::string_view name) const;
  const std::string& string(std::string_view name) const;
  const std::vector<long long>& integer_list(std::string_view name) const;
  const std::vector<double>& real_list(std::string_view name) const;
  /// \brief The keys these values are for (nullptr for none).
  const Schema* keys() const noexcept { return keys_; }

 private:
  const Value& at(std::string_view name, Type type) const;
  const Schema* keys_ = nullptr;
  std::map<std::string, Value, std::less<>> values_;
};

/// \brief The checks every registry of pieces with deck keys (solvers,
/// layers, optimizers) makes of a new one: `name` is a deck word (lower-case
/// letters, digits, '_') that none of `others` has, each of its `keys` has a
/// default (a piece's keys are optional in a deck), and a key that one of
/// `others` (name, keys) declares too is declared alike. \throws Error
/// beginning with `who` ("kpmap::sim::register_solver") and naming the
/// piece as a `kind` ("solver").
void check_registration(const std::string& who, const std::string& kind, const std::string& name,
                        const Schema& keys,
                        const std::vector<std::pair<std::string, const Schema*>>& others);

/// \brief Where the user's own text set a key of the schema, when a
/// Translator wrote the TOML the schema reads: the line of the deck file (0
/// for a `--set`), the name the user wrote (`xmax/ymax` for `mesh.upper`)
/// and, for a `--set`, its argument. Messages about the key cite these.
struct Origin {
  int line = 0;
  std::string name;
  std::string set;
};

/// \brief A translated deck: its TOML, and where each key it sets came from.
struct Translation {
  std::string toml;
  std::map<std::string, Origin, std::less<>> origins;  ///< schema path -> origin
};

/// \brief Turns the text of a deck file into TOML for the schema, so that an
/// application can read another deck format (kpmap-heat reads TeaLeaf's
/// `*tea` decks). It gets the file's text and path and the `--set`
/// overrides, may rewrite overrides written in its own format into schema
/// keys, and returns TOML (a TOML deck unchanged, with no origins) and the
/// origin of each key the user's text set, so that every later message
/// names the user's keys and lines. Errors are InputErrors naming the file,
/// line and key. Runs on one rank.
using Translator = std::function<Translation(const std::string& text, const std::string& path,
                                             std::vector<std::string>& overrides)>;

/// \brief A validated deck: every key of its schema has a value (defaults filled in).
class Deck {
 public:
  /// \brief Whether the deck has a value at `path`: always true for a key of
  /// the schema without `#`, true for `states.2.density` when the deck has
  /// the instance `states.2`.
  bool has(std::string_view path) const;
  /// \brief Whether the user's text or a `--set` gave `path` (false for a
  /// default the schema filled in).
  bool given(std::string_view path) const;
  /// \brief The indices of the instances of the numbered tables `group`
  /// (e.g. "states" for keys `states.#.*`), in increasing order.
  std::vector<int> indices(std::string_view group) const;
  bool boolean(std::string_view path) const;
  long long integer(std::string_view path) const;
  double real(std::string_view path) const;
  const std::string& string(std::string_view path) const;
  const std::vector<long long>& integer_list(std::string_view path) const;
  const std::vector<double>& real_list(std::string_view path) const;
  /// \brief The value at `path`, of whichever type the schema gives it.
  const Value& value(std::string_view path) const { return at(path); }
  /// \brief The fully resolved deck as TOML, defaults included, in schema
  /// order: printed at start-up and stored in every output, so any result can
  /// be reproduced by running this text as a deck.
  std::string to_toml() const;
  /// \brief The line of the deck text where `path` (a key, a table or an
  /// element of a list of tables, e.g. "model.layers.2") was written; 0 for
  /// a default or a --set override.
  int line(std::string_view path) const;
  /// \brief "FILE:LINE: " for `path` (just "FILE: " without a line, "--set
  /// ARG: " for a key a --set gave), to start a message about it.
  std::string where(std::string_view path) const;
  /// \brief `'path'` for a key as the user wrote it, or `'xmax/ymax'
  /// (mesh.upper)` for a key a Translator made of the user's own keys: to
  /// name a key in a message that begins with where().
  std::string named(std::string_view path) const;
  /// \brief The error for a value the deck gave `path` that does not fit the
  /// rest of the run: "FILE:LINE: key 'path': `what`", thrown on every rank
  /// alike (ErrorScope::all_ranks), exit code 2.
  InputError bad(std::string_view path, const std::string& what) const;
  /// \brief `path.i` when the user's text set element `i` of the list at
  /// `path` by a key of its own (TeaLeaf's `ymax` for `mesh.upper`), so
  /// that where() and named() cite that key; otherwise `path`.
  std::string element(std::string_view path, int i) const;
  /// \brief What the user should change though the deck was accepted (a
  /// key given by an old name), each message beginning with where().
  /// load() prints them on rank 0; every rank has them.
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }
  /// \brief Where the deck came from (its path).
  const std::string& source() const noexcept { return source_; }
  const std::string& app() const noexcept { return app_; }

 private:
  friend class Parser;
  friend Deck load(const Schema&, const std::string&, const std::vector<std::string>&, MPI_Comm,
                   const Translator&);
  const Value& at(std::string_view path) const;
  std::string app_;
  std::string source_;
  std::vector<std::string> order_;
  std::map<std::string, Value, std::less<>> values_;
  std::map<std::string, Type, std::less<>> types_;
  std::map<std::string, int, std::less<>> lines_;
  std::map<std::string, Origin, std::less<>> origins_;  // keys a Translator or a --set gave
  std::vector<std::string> warnings_;
};

/// \brief How `deck` differs from `saved`, the resolved deck of an earlier
/// run (Deck::to_toml(), as a checkpoint stores it), at `paths`: each a key
/// ("mesh.upper") or a table ("states": every key under it). Returns "" when
/// they agree, else a message on the first difference that begins with
/// where() and names the key and both values. Numbers compare as numbers,
/// lists element by element. A key the saved text lacks differs only when
/// its whole table is new (a state the earlier run did not have): a key
/// added to the schema after the checkpoint was written is not compared.
/// Keys matching a pattern of `except` (a `#` segment matches any index:
/// "model.layers.#.parallel") are not compared.
std::string first_difference(const Deck& deck, std::string_view saved,
                             const std::vector<std::string>& paths,
                             const std::vector<std::string>& except = {});

/// \brief Parses and validates deck text. `source` names it in messages.
/// `overrides` are "section.key=value" strings (from --set), applied after
/// the text and validated the same way. `translation`, when given, says
/// where the user's text set each key of `text` (a Translator's output):
/// messages then cite the user's keys and lines, never the TOML's.
/// \throws kpmap::InputError naming file, line, column and key.
Deck parse(const Schema& schema, std::string_view text, const std::string& source,
           const std::vector<std::string>& overrides = {},
           const Translation* translation = nullptr);

/// \brief Reads and parses the deck file at `path`.
Deck parse_file(const Schema& schema, const std::string& path,
                const std::vector<std::string>& overrides = {});

/// \brief Collective over `comm`: rank 0 reads and parses the deck (through
/// `translate` when given), every rank gets the identical resolved deck, or
/// every rank throws the same InputError (ErrorScope::all_ranks), so a bad
/// deck ends the job cleanly with exit code 2 and one message.
Deck load(const Schema& schema, const std::string& path, const std::vector<std::string>& overrides,
          MPI_Comm comm, const Translator& translate = nullptr);

}  // namespace kpmap::deck
