// The optimizer registry: every registration (the built-ins of this folder
// and a program's own), in order, and each one's update rules per value type
// and memory space.

#include <kpmap/train/optimizer.hpp>

#include <kpmap/base/detail/registry.hpp>
#include <kpmap/base/error.hpp>

namespace kpmap::train {

namespace detail {
// Defined in the generated builtin_optimizers.cpp: calls the registration of
// every header of train/optimizers/ that holds a KPMAP_TRAIN_BUILTIN_OPTIMIZER line.
void register_builtin_optimizers();
}  // namespace detail

namespace {

kpmap::detail::Registry<OptimizerInfo>& optimizers() {
  static kpmap::detail::Registry<OptimizerInfo> all(&detail::register_builtin_optimizers);
  return all;
}

template <class T, class M>
kpmap::detail::FactoryTable<UpdateRuleFactory<T, M>>& factories() {
  static kpmap::detail::FactoryTable<UpdateRuleFactory<T, M>> all;
  return all;
}

}  // namespace

namespace detail {

void add_optimizer(OptimizerInfo info) {
  deck::check_registration("kpmap::train::register_optimizer", "optimizer", info.name, info.keys,
                           optimizers().keys_so_far());
  optimizers().add(std::move(info));
}

template <class T, class M>
void add_optimizer_factory(const std::string& name, UpdateRuleFactory<T, M> make) {
  factories<T, M>()[name] = make;
}

template <class T, class M>
UpdateRuleFactory<T, M> optimizer_factory(const std::string& name) {
  optimizers().all();  // the built-ins registered
  return factories<T, M>().at(name);
}

#define KPMAP_TRAIN_INSTANTIATE_(T, M)                                                    \
  template void add_optimizer_factory<T, M>(const std::string&, UpdateRuleFactory<T, M>); \
  template UpdateRuleFactory<T, M> optimizer_factory<T, M>(const std::string&);
KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_INSTANTIATE_)
#undef KPMAP_TRAIN_INSTANTIATE_

}  // namespace detail

std::vector<const OptimizerInfo*> registered_optimizers() { return optimizers().all(); }

const OptimizerInfo* find_optimizer(const std::string& name) { return optimizers().find(name); }

std::pair<const OptimizerInfo*, deck::Settings> optimizer_settings(const OptimizerConfig& config) {
  const OptimizerInfo* info = find_optimizer(config.kind);
  if (info == nullptr) {
    std::string known;
    for (const OptimizerInfo* o : registered_optimizers()) {
      known += (known.empty() ? "" : ", ") + o->name;
    }
    throw Error("kpmap::train: no optimizer is registered as '" + config.kind +
                "' (registered: " + known + ")");
  }
  deck::Settings settings(info->keys);
  try {
    for (const auto& [key, value] : config.keys) settings.set(key, value);
  } catch (const Error& e) {
    throw Error("kpmap::train: optimizer " + config.kind + ": " + e.what());
  }
  return {info, settings};
}

}  // namespace kpmap::train
