// The optimizer registry: every registration (the built-ins of this folder
// and a program's own), in order, and each one's update rules per value type
// and memory space.

#include <kpmap/train/optimizer.hpp>

#include <kpmap/error.hpp>

#include <deque>
#include <mutex>

namespace kpmap::train {

namespace detail {
// Defined in the generated builtin_optimizers.cpp: calls the registration of
// every header of train/optimizers/ that holds a KPMAP_TRAIN_BUILTIN_OPTIMIZER line.
void register_builtin_optimizers();
}  // namespace detail

namespace {

// Registrations in order (a deque: OptimizerInfo addresses stay valid).
std::deque<OptimizerInfo>& infos() {
  static std::deque<OptimizerInfo> all;
  return all;
}

template <class T, class M>
std::map<std::string, UpdateRuleFactory<T, M>, std::less<>>& factories() {
  static std::map<std::string, UpdateRuleFactory<T, M>, std::less<>> all;
  return all;
}

// The built-ins join on first use, after the registrations static
// initialisation made (a program's own).
void with_builtins() {
  static std::once_flag once;
  std::call_once(once, [] { detail::register_builtin_optimizers(); });
}

}  // namespace

namespace detail {

void add_optimizer(OptimizerInfo info) {
  std::vector<std::pair<std::string, const deck::Schema*>> others;
  for (const OptimizerInfo& o : infos()) others.emplace_back(o.name, &o.keys);
  deck::check_registration("kpmap::train::register_optimizer", "optimizer", info.name, info.keys,
                           others);
  infos().push_back(std::move(info));
}

template <class T, class M>
void add_optimizer_factory(const std::string& name, UpdateRuleFactory<T, M> make) {
  factories<T, M>()[name] = make;
}

template <class T, class M>
UpdateRuleFactory<T, M> optimizer_factory(const std::string& name) {
  with_builtins();
  return factories<T, M>().at(name);
}

#define KPMAP_TRAIN_INSTANTIATE_(T, M)                                                    \
  template void add_optimizer_factory<T, M>(const std::string&, UpdateRuleFactory<T, M>); \
  template UpdateRuleFactory<T, M> optimizer_factory<T, M>(const std::string&);
KPMAP_TRAIN_FOR_EACH_VALUE_TYPE(KPMAP_TRAIN_INSTANTIATE_)
#undef KPMAP_TRAIN_INSTANTIATE_

}  // namespace detail

std::vector<const OptimizerInfo*> registered_optimizers() {
  with_builtins();
  std::vector<const OptimizerInfo*> v;
  for (const OptimizerInfo& o : infos()) v.push_back(&o);
  return v;
}

const OptimizerInfo* find_optimizer(const std::string& name) {
  with_builtins();
  for (const OptimizerInfo& o : infos()) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

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
