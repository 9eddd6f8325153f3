#include "framework/model/init_spec.h"

#include "framework/core/status_macros.h"
#include "framework/interfaces/plugin_kinds.h"
#include "framework/model/model_spec.h"

namespace tvlab {

absl::StatusOr<std::unique_ptr<Initializer>> BuildInitializer(const Experiment& spec) {
  Experiment named = spec;
  if (named.model().init().plugin().empty()) named.mutable_model()->mutable_init()->set_plugin("default");
  const PluginKind& kind = PluginKindById("init");
  TVLAB_ASSIGN_OR_RETURN(std::unique_ptr<google::protobuf::Message> options, UnpackPluginOptions(named, kind));
  TVLAB_ASSIGN_OR_RETURN(const InitEntry* entry, InitRegistry().Get(PluginNameIn(named, kind)));
  return entry->create(*options, InitArgs{ModelDimsFromSpec(spec.model()), &spec});
}

InitParam InitParamOf(const std::string& name, const Shape& shape, const Init& declared) {
  return InitParam{name, shape, RoleOfParameter(name, static_cast<int64_t>(shape.size())), declared};
}

void InitializeWith(Module& root, uint64_t seed, const Initializer& init) {
  InitializeParameters(root, seed, [&init](const std::string& name, const Shape& shape, const Init& declared) {
    return init.InitFor(InitParamOf(name, shape, declared));
  });
}

}  // namespace tvlab
