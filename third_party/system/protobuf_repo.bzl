"""Mounts Debian's protobuf (headers, well-known .protos, protoc) as a repository."""

def _system_protobuf_impl(ctx):
    ctx.symlink("/usr/include/google/protobuf", "google/protobuf")
    ctx.file("protoc.sh", "#!/bin/sh\nexec /usr/bin/protoc \"$@\"\n", executable = True)
    ctx.symlink(ctx.attr.build_file, "BUILD.bazel")
    ctx.file("WORKSPACE", "workspace(name = \"com_google_protobuf\")\n")

system_protobuf = repository_rule(
    implementation = _system_protobuf_impl,
    local = True,
    attrs = {"build_file": attr.label(allow_single_file = True)},
)
