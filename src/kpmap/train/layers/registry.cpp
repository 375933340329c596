// The layer registry: every registration (the built-ins of this folder and a
// program's own), in order, and each one's factories per value type and
// memory space.

#include <kpmap/train/layers/registry.hpp>

#include <kpmap/error.hpp>

#include <algorithm>
#include <cctype>
#include <deque>
#include <mutex>

namespace kpmap::train {

namespace detail {
// Defined in the generated builtin_layers.cpp: calls the registration of
// every header of train/layers/ that holds a KPMAP_TRAIN_BUILTIN_LAYER line.
void register_builtin_layers();
}  // namespace detail

namespace {

// Registrations in order (a deque: LayerInfo addresses stay valid).
std::deque<LayerInfo>& infos() {
  static std::deque<LayerInfo> all;
  return all;
}

template <class T, class M>
std::map<std::string, LayerFactory<T, M>, std::less<>>& factories() {
  static std::map<std::string, LayerFactory<T, M>, std::less<>> all;
  return all;
}

// The built-ins join on first use, after the registrations static
// initialisation made (a program's own), so that a name given twice is
// found whichever came first.
void with_builtins() {
  static std::once_flag once;
  std::call_once(once, [] { detail::register_builtin_layers(); });
}

[[noreturn]] void refuse(const std::string& what) {
  throw Error("kpmap::train::register_layer: " + what);
}

}  // namespace

namespace detail {

void add_layer(LayerInfo info) {
  const std::string& name = info.name;
  const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '_';
  });
  if (!word) {
    refuse("the name '" + name + "' is not a deck word (lower-case letters, digits and '_')");
  }
  for (const LayerInfo& l : infos()) {
    if (l.name == name) refuse("a layer named '" + name + "' is registered already");
  }
  for (const deck::Key& k : info.keys.keys()) {
    if (k.path == "type") refuse("layer '" + name + "' declares a key 'type', which is the deck's");
    if (!k.fallback) {
      refuse("key '" + k.path + "' of layer '" + name +
             "' has no default (list it in LayerInfo::required to make a deck give it)");
    }
  }
  for (const std::string& r : info.required) {
    if (info.keys.find(r) == nullptr) {
      refuse("layer '" + name + "' requires key '" + r + "', which it does not declare");
    }
  }
  // A key this layer shares with another must be declared alike.
  deck::Schema all("layer");
  for (const LayerInfo& l : infos()) all.merge("", l.name, l.keys);
  all.merge("", name, info.keys);
  infos().push_back(std::move(info));
}

template <class T, class M>
void add_layer_factory(const std::string& name, LayerFactory<T, M> make) {
  factories<T, M>()[name] = make;
}

template <class T, class M>
LayerFactory<T, M> layer_factory(const std::string& name) {
  with_builtins();
  return factories<T, M>().at(name);
}

#define KPMAP_TRAIN_INSTANTIATE_(T, M)                                           \
  template void add_layer_factory<T, M>(const std::string&, LayerFactory<T, M>); \
  template LayerFactory<T, M> layer_factory<T, M>(const std::string&);
KPMAP_TRAIN_FOR_EACH_LAYER_TYPE(KPMAP_TRAIN_INSTANTIATE_)
#undef KPMAP_TRAIN_INSTANTIATE_

}  // namespace detail

std::vector<const LayerInfo*> registered_layers() {
  with_builtins();
  std::vector<const LayerInfo*> v;
  for (const LayerInfo& l : infos()) v.push_back(&l);
  return v;
}

const LayerInfo* find_layer(const std::string& name) {
  with_builtins();
  for (const LayerInfo& l : infos()) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

}  // namespace kpmap::train
