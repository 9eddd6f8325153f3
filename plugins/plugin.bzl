"""tvlab_plugin: one macro per plugin folder.

    tvlab_plugin(
        name = "gqa",
        kind = "attention_layout",
        srcs = ["gqa.cc"],
        proto = "gqa.proto",
    )

makes
  :gqa_proto, :gqa_cc_proto  the typed options message,
  :gqa                       the plugin library (alwayslink: registration is
                             a static initializer),
  :gqa_conformance_test      the shared conformance suite of its kind, run
                             on this plugin (the plugin writes none of it);
                             it is told the plugin's name and kind (a
                             generated source defines kPluginUnderTest), so
                             it fails if the plugin's registration is lost
                             instead of testing another plugin,
and, if `tests` is given, :gqa_test for the plugin's own math, and, if
`parity` names a Python script (e.g. "gelu_parity.py"), :gelu_parity_test:
the script recomputes the plugin in PyTorch from the published formula and
compares outputs and gradients with what the plugin computed (it drives
:gelu_parity_dump; see //framework/testing:parity.py). Parity is available
for the kinds in _PARITY_KINDS.
"""

# Which conformance suite each kind gets.
_SUITES = {
    "attention_score": "//framework/testing:attention_conformance",
    "attention_layout": "//framework/testing:attention_conformance",
    "position": "//framework/testing:position_conformance",
    "normalization": "//framework/testing:normalization_conformance",
    "placement": "//framework/testing:placement_conformance",
    "ffn": "//framework/testing:ffn_conformance",
    "task": "//framework/testing:task_conformance",
}

# Kinds the parity dump tool can drive.
_PARITY_KINDS = ["position", "normalization", "ffn"]

# The plugins a suite needs beside the one under test (e.g. a layout needs a
# score): the defaults of every kind.
_DEFAULTS = "//plugins:defaults"

def tvlab_plugin(name, kind, srcs, proto, hdrs = [], deps = [], tests = [], test_deps = [],
                 parity = None, proto_deps = []):
    if kind not in _SUITES:
        fail("unknown plugin kind '%s'; kinds: %s" % (kind, ", ".join(_SUITES.keys())))
    if parity and kind not in _PARITY_KINDS:
        fail("parity tests are available for kinds %s, not '%s'" % (", ".join(_PARITY_KINDS), kind))
    native.proto_library(
        name = name + "_proto",
        srcs = [proto],
        deps = proto_deps,
        visibility = ["//visibility:public"],
    )
    native.cc_proto_library(
        name = name + "_cc_proto",
        deps = [":" + name + "_proto"],
        visibility = ["//visibility:public"],
    )
    native.cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        alwayslink = 1,
        visibility = ["//visibility:public"],
        deps = deps + [
            ":" + name + "_cc_proto",
            "//framework/interfaces",
            "//framework/autograd",
            "//framework/nn",
        ],
    )
    # Its sources and example config, for the census test.
    native.filegroup(
        name = name + "_files",
        srcs = srcs + native.glob(["example.pbtxt"]),
        visibility = ["//visibility:public"],
    )
    # The census: which plugin (and kind) this conformance test is about.
    native.genrule(
        name = name + "_under_test_src",
        outs = [name + "_under_test.cc"],
        cmd = "printf '%s' > $@" % (
            "namespace tvlab { extern const char kPluginUnderTest[] = \"%s\"; " % name +
            "extern const char kKindUnderTest[] = \"%s\"; }\\n" % kind
        ),
        testonly = 1,
    )
    native.cc_test(
        name = name + "_conformance_test",
        srcs = [name + "_under_test.cc"],
        # A task's example may read data files under configs/.
        data = native.glob(["example.pbtxt"]) + (["//configs:all"] if kind == "task" else []),
        linkstatic = 1,
        deps = [
            ":" + name,
            _SUITES[kind],
            _DEFAULTS,
            "//framework/testing:census",
            "//third_party/system:gtest_main",
        ],
    )
    if tests:
        native.cc_test(
            name = name + "_test",
            srcs = tests,
            linkstatic = 1,
            deps = test_deps + [
                ":" + name,
                _DEFAULTS,
                "//framework/testing:plugin_test_util",
                "//third_party/system:gtest_main",
            ],
        )
    if parity:
        native.cc_binary(
            name = name + "_parity_dump",
            testonly = 1,
            deps = [
                ":" + name,
                _DEFAULTS,
                "//framework/backend:all",
                "//framework/testing:parity_dump_main",
            ],
        )
        native.sh_test(
            name = name + "_parity_test",
            srcs = ["//framework/testing:parity_test.sh"],
            args = [
                "$(location :%s_parity_dump)" % name,
                "$(location %s)" % parity,
            ],
            data = [
                ":" + name + "_parity_dump",
                parity,
                "//framework/testing:parity_py",
            ],
        )
