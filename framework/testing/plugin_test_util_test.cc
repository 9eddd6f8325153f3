// plugin_test_util's plugin construction, where no plugin is linked (a
// framework test never links plugins/): a missing plugin is a test's
// missing dependency, named as the Bazel target to add.

#include "framework/testing/plugin_test_util.h"

#include "gtest/gtest.h"

namespace tvlab {
namespace {

TEST(PluginTestUtil, APluginNotLinkedNamesTheTargetToAdd) {
  EXPECT_DEATH(MakeAttentionLayout("mqa", SmallDims()),
               "this test uses the attention layout plugin 'mqa', which is not linked into it: "
               "add \"//plugins/attention/mqa\" to the test's deps \\(in a plugin folder: "
               "test_deps of its tvlab_plugin\\(\\) in BUILD.bazel\\)");
  EXPECT_DEATH(MakeNormPlacement("post_ln", PlacementArgs{}), "add \"//plugins/placement/post_ln\"");
  EXPECT_DEATH(MakeFfn("swiglu", SmallDims()), "add \"//plugins/ffn/swiglu\"");
}

}  // namespace
}  // namespace tvlab
