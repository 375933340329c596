// The layer registry: every registration (the built-ins of this folder and a
// program's own), in order, and each one's factories per value type and
// memory space.

#include <kpmap/train/layers/registry.hpp>

#include <kpmap/error.hpp>

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
  std::vector<std::pair<std::string, const deck::Schema*>> others;
  for (const LayerInfo& l : infos()) others.emplace_back(l.name, &l.keys);
  deck::check_registration("kpmap::train::register_layer", "layer", name, info.keys, others);
  if (info.keys.find("type") != nullptr) {
    refuse("layer '" + name + "' declares a key 'type', which is the deck's");
  }
  for (const std::string& r : info.required) {
    if (info.keys.find(r) == nullptr) {
      refuse("layer '" + name + "' requires key '" + r + "', which it does not declare");
    }
  }
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
