"""A token store made at build time by //experiments:prepare.

A genrule builds its `tools` for the host configuration, which compiled
prepare and everything it links a second time (25 objects) beside the
target-configuration build the tests already need. This rule runs the
target-configuration binary instead (cfg = "target": build and run on one
machine), so every object compiles once.
"""

_STORE_FILES = ["manifest.json"] + [
    split + suffix
    for split in ["train", "validation", "test"]
    for suffix in [".tokens", ".index", ".token_bytes", ".counts"]
]

def _token_store_impl(ctx):
    out_dir = ctx.attr.out_dir
    outs = [ctx.actions.declare_file(out_dir + "/" + f) for f in _STORE_FILES]
    store = outs[0].dirname
    args = []
    for path in ctx.attr.inputs:
        args += ["--input", path]
    args += ctx.attr.prepare_args + ["--progress=false", "--output", store]
    ctx.actions.run_shell(
        outputs = outs,
        tools = [ctx.executable._prepare],
        command = 'rm -rf "$1" && "$2" "${@:3}" > /dev/null',
        arguments = [store, ctx.executable._prepare.path] + args,
        mnemonic = "TokenStore",
        progress_message = "Preparing token store %s" % store,
    )
    return [DefaultInfo(files = depset(outs))]

token_store = rule(
    implementation = _token_store_impl,
    doc = "The files of a token store (framework/data/token_store/README.md).",
    attrs = {
        # Absolute paths of system text files (read, not declared as inputs).
        "inputs": attr.string_list(mandatory = True),
        # The store's folder, relative to this package.
        "out_dir": attr.string(mandatory = True),
        # prepare's other flags (documents, splits).
        "prepare_args": attr.string_list(),
        "_prepare": attr.label(
            default = "//experiments:prepare",
            executable = True,
            cfg = "target",
        ),
    },
)
