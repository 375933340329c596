// The loss registry: every registration (the built-ins of this folder and a
// program's own), in order, and each one's factories per type.

#include <kpmap/train/loss.hpp>

#include <kpmap/base/detail/registry.hpp>
#include <kpmap/base/error.hpp>

namespace kpmap::train {

namespace detail {
// Defined in the generated builtin_losses.cpp: calls the registration of
// every header of train/losses/ that holds a KPMAP_TRAIN_BUILTIN_LOSS line.
void register_builtin_losses();
}  // namespace detail

namespace {

kpmap::detail::Registry<LossInfo>& losses() {
  static kpmap::detail::Registry<LossInfo> all(&detail::register_builtin_losses);
  return all;
}

template <class C, class M, class A>
kpmap::detail::FactoryTable<LossFactory<C, M, A>>& factories() {
  static kpmap::detail::FactoryTable<LossFactory<C, M, A>> all;
  return all;
}

}  // namespace

namespace detail {

void add_loss(LossInfo info) {
  deck::check_registration("kpmap::train::register_loss", "loss", info.name, info.keys,
                           losses().keys_so_far());
  losses().add(std::move(info));
}

template <class C, class M, class A>
void add_loss_factory(const std::string& name, LossFactory<C, M, A> make) {
  factories<C, M, A>()[name] = make;
}

template <class C, class M, class A>
LossFactory<C, M, A> loss_factory(const std::string& name) {
  losses().all();  // the built-ins registered
  return factories<C, M, A>().at(name);
}

#define KPMAP_TRAIN_INSTANTIATE_(C, M, A)                                            \
  template void add_loss_factory<C, M, A>(const std::string&, LossFactory<C, M, A>); \
  template LossFactory<C, M, A> loss_factory<C, M, A>(const std::string&);
KPMAP_TRAIN_FOR_EACH_LOSS_TYPE(KPMAP_TRAIN_INSTANTIATE_)
#undef KPMAP_TRAIN_INSTANTIATE_

}  // namespace detail

std::vector<const LossInfo*> registered_losses() { return losses().all(); }

const LossInfo& loss_info(const std::string& name) {
  if (const LossInfo* l = losses().find(name)) return *l;
  std::string known;
  for (const LossInfo* l : losses().all()) known += (known.empty() ? "" : ", ") + l->name;
  throw Error("kpmap::train: no loss is registered as '" + name + "' (registered: " + known + ")");
}

}  // namespace kpmap::train
