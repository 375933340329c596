// SPDX-License-Identifier: BSD-3-Clause
// Loading a deck for a parallel run: rank 0 reads the file (or the program's
// translation of it) and checks it; every rank gets the resolved deck, or the
// same error, and the lines of the user's text for later messages.

#include <kpmap/base/files.hpp>
#include <kpmap/deck/deck.hpp>
#include <kpmap/transport/mpi_ops.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace kpmap::deck {

namespace {
// The deck file's text; a deck that is no regular file (a FIFO would block,
// /dev/zero never end) is refused before it is read.
std::string read_deck_text(const std::string& path) {
  if (const std::string why = files::not_a_regular_file(path); !why.empty()) {
    throw InputError(path + ": the deck file " + why);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(path + ": cannot open the deck file (can you read it?)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

Deck parse_file(const Schema& schema, const std::string& path,
                const std::vector<std::string>& overrides) {
  return parse(schema, read_deck_text(path), path, overrides);
}

Deck load(const Schema& schema, const std::string& path, const std::vector<std::string>& overrides,
          MPI_Comm comm, const Translator& translate) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Rank 0 parses; everyone receives either the resolved deck or the error.
  std::string payload;
  // Where the user's text set each key, a line per key: path, line, name
  // and --set argument, tab-separated (a deck holds no control characters).
  std::string lines;
  std::string warnings;  // one a line
  int failed = 0;
  auto resolve = [&](const Deck& d) {
    for (const auto& w : d.warnings_) {
      warnings += w + "\n";
      std::fprintf(stderr, "%s: warning: %s\n", schema.app().c_str(), w.c_str());
    }
    for (const auto& [key, line] : d.lines_) {
      if (d.origins_.count(key) == 0) lines += key + "\t" + std::to_string(line) + "\t\t\n";
    }
    for (const auto& [key, o] : d.origins_) {
      lines += key + "\t" + std::to_string(o.line) + "\t" + o.name + "\t" + o.set + "\n";
    }
    return d.to_toml();
  };
  if (rank == 0) {
    try {
      if (translate) {
        std::vector<std::string> rewritten = overrides;
        const Translation t = translate(read_deck_text(path), path, rewritten);
        payload = resolve(parse(schema, t.toml, path, rewritten, &t));
      } else {
        payload = resolve(parse_file(schema, path, overrides));
      }
    } catch (const InputError& e) {
      payload = e.what();
      failed = 1;
    }
  }
  transport::bcast(&failed, 1, MPI_INT, 0, comm, nullptr);
  transport::bcast_string(payload, 0, comm);
  if (failed != 0) throw InputError(payload, ErrorScope::all_ranks);
  transport::bcast_string(lines, 0, comm);
  transport::bcast_string(warnings, 0, comm);
  // Every rank (rank 0 too) builds the deck from the same resolved text, and
  // keeps the lines (and names) of the user's text for messages.
  // The text is kpmap's own: an error in it is never the user's deck's.
  Deck deck = [&] {
    try {
      return parse(schema, payload, path);
    } catch (const InputError& e) {
      throw Error("the resolved deck of " + path + " does not read back (a kpmap bug): " + e.what(),
                  exit_code::failure, ErrorScope::all_ranks);
    }
  }();
  deck.lines_.clear();
  std::istringstream said(warnings);
  for (std::string w; std::getline(said, w);) deck.warnings_.push_back(w);
  std::istringstream in(lines);
  for (std::string row; std::getline(in, row);) {
    std::array<std::string, 4> f;
    std::istringstream cells(row);
    for (auto& cell : f) std::getline(cells, cell, '\t');
    Origin o{std::stoi(f[1]), f[2], f[3]};
    if (o.line > 0) deck.lines_[f[0]] = o.line;
    if (!o.name.empty()) deck.origins_[f[0]] = std::move(o);
  }
  return deck;
}

}  // namespace kpmap::deck
