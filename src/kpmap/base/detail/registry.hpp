#pragma once
/// \file
/// \brief What every registry of named pieces keeps (the heat solvers, the
/// training layers and optimizers): the registrations in order, the
/// library's own added on first use, and the factories of each by name.

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kpmap::detail {

/// \brief Registrations of one kind of piece. `Info` has a `name` and its
/// deck `keys`.
template <class Info>
class Registry {
 public:
  using Keys = decltype(Info::keys);

  /// \param builtins registers the library's own pieces: called once, on
  /// the first lookup, after the registrations a program's static
  /// initialisation made, so that a name given twice is found whichever
  /// came first.
  explicit Registry(void (*builtins)()) : builtins_(builtins) {}

  /// \brief Adds `info`, checked by the caller; its address stays valid.
  void add(Info info) { infos_.push_back(std::move(info)); }
  /// \brief (name, keys) of the registrations made so far, for the checks
  /// of the next one (deck::check_registration).
  std::vector<std::pair<std::string, const Keys*>> keys_so_far() const {
    std::vector<std::pair<std::string, const Keys*>> v;
    for (const Info& i : infos_) v.emplace_back(i.name, &i.keys);
    return v;
  }
  /// \brief Every registration, the library's own included, in order.
  std::vector<const Info*> all() {
    load();
    std::vector<const Info*> v;
    for (const Info& i : infos_) v.push_back(&i);
    return v;
  }
  /// \brief The registration named `name`, or nullptr.
  const Info* find(std::string_view name) {
    load();
    for (const Info& i : infos_) {
      if (i.name == name) return &i;
    }
    return nullptr;
  }

 private:
  void load() { std::call_once(once_, builtins_); }
  std::deque<Info> infos_;  // a deque: addresses stay valid as it grows
  std::once_flag once_;
  void (*builtins_)();
};

/// \brief The factories of one registry's pieces for one type they are
/// built for (a layer's for values T in memory M), by name.
template <class Factory>
using FactoryTable = std::map<std::string, Factory, std::less<>>;

}  // namespace kpmap::detail
