// The [output] section every application's deck shares.

#include <kpmap/run/output_keys.hpp>

namespace kpmap {

std::string default_output_dir(const std::string& app) { return app + "-out"; }

void declare_output_keys(deck::Schema& s, const std::string& app, const std::string& unit) {
  const std::optional<double> none;
  s.string("output.dir", default_output_dir(app), {},
           "the run's folder: result.json, history.csv, deck.toml, checkpoints")
      .integer("output.checkpoint_every", 0, {0, none}, unit,
               "a checkpoint every this many " + unit + ", and at the end (0: at the end only)")
      .integer("output.keep_last", 3, {1, 1000}, "",
               "the newest checkpoints kept (older ones are deleted)")
      .renamed("output.keep", "output.keep_last", "0.3");
}

OutputConfig read_output_keys(const deck::Deck& d) {
  OutputConfig c;
  c.dir = d.string("output.dir");
  c.checkpoint_every = d.integer("output.checkpoint_every");
  c.keep_last = static_cast<int>(d.integer("output.keep_last"));
  return c;
}

std::vector<std::string> run_files(const std::vector<std::string>& pictures) {
  std::vector<std::string> names{run_file::result, run_file::history, run_file::deck,
                                 "checkpoint_*"};
  names.insert(names.end(), pictures.begin(), pictures.end());
  return names;
}

}  // namespace kpmap
