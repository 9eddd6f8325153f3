"""tvlab_plugin: one macro per plugin folder.

    tvlab_plugin(
        name = "gqa",
        kind = "attention_layout",
        srcs = ["gqa.cc"],
        proto = "gqa.proto",
    )

in plugins/attention/gqa/BUILD.bazel makes
  :gqa_proto, :gqa_cc_proto  the typed options message,
  :gqa                       the plugin library (alwayslink: registration is
                             a static initializer),
  :gqa_conformance_test      the shared conformance suite of its kind, run
                             on this plugin (the plugin writes none of it);
                             it is told the plugin's name and kind (a
                             generated source defines kPluginUnderTest), so
                             it fails if the plugin's registration is lost
                             instead of testing another plugin,
  :gqa_census                the plugin's census record (kind, name, folder,
                             its tests), read by //plugins:plugin_census_test,
and, if `tests` is given, :gqa_test for the plugin's own math, and, if
`parity` names a Python script (e.g. "gqa_parity.py"), :gqa_parity_test:
the script recomputes the plugin in PyTorch from the published formula and
compares outputs and gradients with what the plugin computed (it drives
:gqa_parity_dump; see //framework/testing:parity.py and, for scores and
layouts, attention_parity.py).

The folder decides the kind (PLUGIN_KINDS below) and the name: the plugin in
plugins/<folder>/<name>/ is called <name>. Nothing else lists plugins:
//plugins:all and the census come from the folders (plugins/plugin_index.bzl).
"""

# The kinds, by their folder under plugins/: the kind id (the `kind`
# argument; framework/interfaces/plugin_kinds.cc has the same rows, which
# //plugins:plugin_census_test checks), the kind's default plugin ("" if a
# spec must name one), the conformance suite every plugin of the kind gets,
# and whether each plugin of the kind must have a PyTorch parity script.
PLUGIN_KINDS = {
    "score": struct(kind = "attention_score", default = "scaled_dot_product",
                    suite = "//framework/testing:attention_conformance", parity = True),
    "attention": struct(kind = "attention_layout", default = "mha",
                        suite = "//framework/testing:attention_conformance", parity = True),
    "position": struct(kind = "position", default = "sinusoidal",
                       suite = "//framework/testing:position_conformance", parity = True),
    "norm": struct(kind = "normalization", default = "layernorm",
                   suite = "//framework/testing:normalization_conformance", parity = True),
    "placement": struct(kind = "placement", default = "pre_ln",
                        suite = "//framework/testing:placement_conformance", parity = True),
    "ffn": struct(kind = "ffn", default = "relu",
                  suite = "//framework/testing:ffn_conformance", parity = True),
    "task": struct(kind = "task", default = "",
                   suite = "//framework/testing:task_conformance", parity = False),
    "optimizer": struct(kind = "optimizer", default = "adamw",
                        suite = "//framework/testing:optimizer_conformance", parity = True),
    # Schedules are checked against their formulas (their conformance suite,
    # framework/train/schedule_spec_test.cc), not PyTorch.
    "schedule": struct(kind = "schedule", default = "constant",
                       suite = "//framework/testing:schedule_conformance", parity = False),
    # Inits are checked by the statistics of what they draw (their
    # conformance suite) and, for mup, by the coordinate check
    # (//experiments:coord_check_test), not by a PyTorch forward.
    "init": struct(kind = "init", default = "default",
                   suite = "//framework/testing:init_conformance", parity = False),
}

# What a parity dump of each kind links beside the plugin and the defaults:
# a layout is checked with every score, a score through the default layout,
# each with no position or a rotary one (attention_parity.py).
_PARITY_LINKS = {
    "attention_score": ["//plugins:all_position"],
    "attention_layout": ["//plugins:all_attention_score", "//plugins:all_position"],
    "placement": ["//plugins:all_normalization"],
}

# Scores and layouts import each other's formulas (and a rotary position's)
# from their folders: every plugin's parity script.
_PARITY_DATA = {
    "attention_score": ["//plugins:parity_scripts"],
    "attention_layout": ["//plugins:parity_scripts"],
}

# The plugins a suite needs beside the one under test (e.g. a layout needs a
# score): the defaults of every kind.
_DEFAULTS = "//plugins:defaults"

def _folder_of(kind):
    for folder, row in PLUGIN_KINDS.items():
        if row.kind == kind:
            return folder
    fail("unknown plugin kind '%s'; kinds: %s" % (
        kind, ", ".join([row.kind for row in PLUGIN_KINDS.values()])))

def _check_folder(name, kind):
    """Fails unless this package is plugins/<kind's folder>/<name>."""
    folder = _folder_of(kind)
    want = "plugins/%s/%s" % (folder, name)
    if native.package_name() != want:
        fail(("tvlab_plugin(name = \"%s\", kind = \"%s\") must be in %s/ (a %s plugin's " +
              "folder is plugins/%s/<name>/, named as the plugin), not in %s/") % (
            name, kind, want, kind, folder, native.package_name()))

def tvlab_plugin(name, kind, srcs, proto, hdrs = [], deps = [], tests = [], test_deps = [],
                 parity = None, proto_deps = []):
    _check_folder(name, kind)
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
    _census_record(name, kind, parity)
    _conformance_test(name, kind)
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
    native.filegroup(
        name = name + "_parity_script",
        srcs = [parity] if parity else [],
        visibility = ["//visibility:public"],
    )
    if parity:
        _parity_test(name, kind, parity)

def _census_record(name, kind, parity):
    """<name>_census.txt: `kind name folder conformance_test parity_test`."""
    package = "//" + native.package_name()
    native.genrule(
        name = name + "_census",
        outs = [name + "_census.txt"],
        cmd = "echo '%s %s %s %s %s' > $@" % (
            kind,
            name,
            native.package_name(),
            package + ":" + name + "_conformance_test",
            package + ":" + name + "_parity_test" if parity else "-",
        ),
        visibility = ["//visibility:public"],
    )

def _conformance_test(name, kind):
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
            PLUGIN_KINDS[_folder_of(kind)].suite,
            _DEFAULTS,
            "//framework/testing:census",
            "//third_party/system:gtest_main",
        ],
    )

def _parity_test(name, kind, parity):
    if not PLUGIN_KINDS[_folder_of(kind)].parity:
        fail("parity tests are available for kinds %s, not '%s'" % (
            ", ".join([r.kind for r in PLUGIN_KINDS.values() if r.parity]), kind))
    native.cc_binary(
        name = name + "_parity_dump",
        testonly = 1,
        deps = [
            ":" + name,
            _DEFAULTS,
            "//framework/backend:all",
            "//framework/testing:parity_dump_main",
        ] + _PARITY_LINKS.get(kind, []),
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
        ] + _PARITY_DATA.get(kind, []),
    )
