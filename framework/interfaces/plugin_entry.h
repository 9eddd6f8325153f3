#ifndef TVLAB_FRAMEWORK_INTERFACES_PLUGIN_ENTRY_H_
#define TVLAB_FRAMEWORK_INTERFACES_PLUGIN_ENTRY_H_

// What a registry stores per plugin: its typed options message and two
// functions, Validate (no allocation; runs for the whole spec before any
// compute) and Create. A plugin class provides
//
//   static std::unique_ptr<Interface> Create(const Options&, const Args&);
//   static absl::Status Validate(const Options&, const Args&);  // optional
//   static constexpr uint32_t kCapabilities = ...;               // optional
//   static void Resolve(Options*, Args*);                        // optional
//
// Resolve (called on valid options only) replaces "0 = automatic" fields
// with the values the plugin will use, so the resolved spec a run writes
// records sizes, not 0; where the plugin chooses a model-wide size (an
// FFN's width when model.d_ff is 0) it writes it into the Args.
//
// and registers with one line (see the TVLAB_REGISTER_* macros in each
// interface header).

#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/core/registry.h"
#include "framework/interfaces/capabilities.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/message.h"

namespace tvlab {

template <typename Interface, typename Args>
struct PluginEntry {
  using ArgsType = Args;
  // Capability bits the plugin class declares (capabilities.h).
  uint32_t capabilities = 0;
  // The options type's default instance (also its descriptor).
  const google::protobuf::Message* default_options = nullptr;
  std::function<absl::Status(const google::protobuf::Message&, const Args&)> validate;
  std::function<std::unique_ptr<Interface>(const google::protobuf::Message&, const Args&)> create;
  // Fills automatic sizes in (valid) options and args; a no-op for plugins
  // without a Resolve.
  std::function<void(google::protobuf::Message*, Args*)> resolve;
};

namespace internal {
template <typename P, typename = void>
struct DeclaredCapabilities {
  static constexpr uint32_t value = 0;
};
template <typename P>
struct DeclaredCapabilities<P, std::void_t<decltype(P::kCapabilities)>> {
  static constexpr uint32_t value = P::kCapabilities;
};

template <typename P, typename O, typename A, typename = void>
struct HasValidate : std::false_type {};
template <typename P, typename O, typename A>
struct HasValidate<P, O, A,
                   std::void_t<decltype(P::Validate(std::declval<const O&>(),
                                                    std::declval<const A&>()))>>
    : std::true_type {};

template <typename P, typename O, typename A, typename = void>
struct HasResolve : std::false_type {};
template <typename P, typename O, typename A>
struct HasResolve<P, O, A,
                  std::void_t<decltype(P::Resolve(std::declval<O*>(), std::declval<A*>()))>>
    : std::true_type {};
}  // namespace internal

template <typename Interface, typename Args, typename Plugin, typename Options>
PluginEntry<Interface, Args> MakePluginEntry() {
  PluginEntry<Interface, Args> entry;
  entry.default_options = &Options::default_instance();
  entry.capabilities = internal::DeclaredCapabilities<Plugin>::value;
  entry.validate = [](const google::protobuf::Message& m, const Args& a) -> absl::Status {
    if constexpr (internal::HasValidate<Plugin, Options, Args>::value) {
      return Plugin::Validate(static_cast<const Options&>(m), a);
    } else {
      return absl::OkStatus();
    }
  };
  entry.create = [](const google::protobuf::Message& m, const Args& a) {
    return std::unique_ptr<Interface>(Plugin::Create(static_cast<const Options&>(m), a));
  };
  entry.resolve = [](google::protobuf::Message* m, Args* a) {
    if constexpr (internal::HasResolve<Plugin, Options, Args>::value) {
      Plugin::Resolve(static_cast<Options*>(m), a);
    }
  };
  return entry;
}

// Unpacks a plugin's options from `any` (empty = the defaults). Error names
// `field_path` and both types when the options are of another plugin's type.
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> UnpackOptions(
    const google::protobuf::Any& any, const google::protobuf::Message& prototype,
    const std::string& plugin, const std::string& field_path);

}  // namespace tvlab

#define TVLAB_PLUGIN_CONCAT_INNER(a, b) a##b
#define TVLAB_PLUGIN_CONCAT(a, b) TVLAB_PLUGIN_CONCAT_INNER(a, b)

// Registers `Class` (with options message `Options`) under `name` in the
// registry returned by `registry_fn()`.
#define TVLAB_REGISTER_PLUGIN(registry_fn, Interface, Args, name, Class, Options)        \
  static const bool TVLAB_PLUGIN_CONCAT(tvlab_registered_, __COUNTER__) =                \
      ::tvlab::registry_fn().Register(                                                   \
          name, ::tvlab::MakePluginEntry<::tvlab::Interface, ::tvlab::Args, Class, Options>())

#endif  // TVLAB_FRAMEWORK_INTERFACES_PLUGIN_ENTRY_H_
