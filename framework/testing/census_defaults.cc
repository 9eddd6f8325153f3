// Weak defaults of census.h's names ("": no plugin under test), overridden
// by the source tvlab_plugin() generates for a per-plugin conformance test.
// In a file of their own, so that no reader sees the initializer and folds
// the weak value into its code.

namespace tvlab {

__attribute__((weak)) extern const char kPluginUnderTest[] = "";
__attribute__((weak)) extern const char kKindUnderTest[] = "";

}  // namespace tvlab
