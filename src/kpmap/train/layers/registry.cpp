// The layer registry: every registration (the built-ins of this folder and a
// program's own), in order, and each one's factories per value type and
// memory space.

#include <kpmap/train/layers/registry.hpp>

#include <kpmap/base/detail/registry.hpp>
#include <kpmap/base/error.hpp>

namespace kpmap::train {

namespace detail {
// Defined in the generated builtin_layers.cpp: calls the registration of
// every header of train/layers/ that holds a KPMAP_TRAIN_BUILTIN_LAYER line.
void register_builtin_layers();
}  // namespace detail

namespace {

kpmap::detail::Registry<LayerInfo>& layers() {
  static kpmap::detail::Registry<LayerInfo> all(&detail::register_builtin_layers);
  return all;
}

template <class T, class M>
kpmap::detail::FactoryTable<LayerFactory<T, M>>& factories() {
  static kpmap::detail::FactoryTable<LayerFactory<T, M>> all;
  return all;
}

[[noreturn]] void refuse(const std::string& what) {
  throw Error("kpmap::train::register_layer: " + what);
}

}  // namespace

namespace detail {

void add_layer(LayerInfo info) {
  const std::string& name = info.name;
  deck::check_registration("kpmap::train::register_layer", "layer", name, info.keys,
                           layers().keys_so_far());
  if (info.keys.find("type") != nullptr) {
    refuse("layer '" + name + "' declares a key 'type', which is the deck's");
  }
  for (const std::string& r : info.required) {
    if (info.keys.find(r) == nullptr) {
      refuse("layer '" + name + "' requires key '" + r + "', which it does not declare");
    }
  }
  layers().add(std::move(info));
}

template <class T, class M>
void add_layer_factory(const std::string& name, LayerFactory<T, M> make) {
  factories<T, M>()[name] = make;
}

template <class T, class M>
LayerFactory<T, M> layer_factory(const std::string& name) {
  layers().all();  // the built-ins registered
  return factories<T, M>().at(name);
}

#define KPMAP_TRAIN_INSTANTIATE_(T, M)                                           \
  template void add_layer_factory<T, M>(const std::string&, LayerFactory<T, M>); \
  template LayerFactory<T, M> layer_factory<T, M>(const std::string&);
KPMAP_TRAIN_FOR_EACH_LAYER_TYPE(KPMAP_TRAIN_INSTANTIATE_)
#undef KPMAP_TRAIN_INSTANTIATE_

}  // namespace detail

std::vector<const LayerInfo*> registered_layers() { return layers().all(); }

const LayerInfo* find_layer(const std::string& name) { return layers().find(name); }

}  // namespace kpmap::train
