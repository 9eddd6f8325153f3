"""Exposes the local CUDA toolkit (headers, cudart, cuBLAS, NCCL) as @local_cuda.

Where nvcc is absent the repository still exists, with empty targets and
`has_cuda = False`, so `bazel build //...` works on machines without CUDA.
Only `--config=cuda` builds select these targets.
"""

def _local_cuda_impl(ctx):
    cuda_path = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    nvcc = ctx.path(cuda_path + "/bin/nvcc")
    if nvcc.exists:
        ctx.symlink(cuda_path + "/include", "include")
        ctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "cuda_headers",
    hdrs = glob(["include/*.h", "include/*.hpp", "include/crt/**", "include/nv/**", "include/cuda/**"]),
    includes = ["include"],
)

cc_library(
    name = "cudart_cublas",
    deps = [":cuda_headers"],
    linkopts = ["-L{p}/lib64", "-Wl,-rpath,{p}/lib64", "-lcublas", "-lcudart"],
)

# NCCL (multi-GPU gradient all-reduce), from the toolkit's lib64.
cc_library(
    name = "nccl",
    deps = [":cuda_headers"],
    linkopts = ["-L{p}/lib64", "-Wl,-rpath,{p}/lib64", "-lnccl", "-lcudart"],
)

sh_binary(name = "nvcc", srcs = ["nvcc.sh"])
""".format(p = cuda_path))
        ctx.file("nvcc.sh", "#!/bin/sh\nexec {}/bin/nvcc \"$@\"\n".format(cuda_path), executable = True)
        ctx.file("defs.bzl", "HAS_CUDA = True\n")
    else:
        ctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])
cc_library(name = "cuda_headers")
cc_library(name = "cudart_cublas")
cc_library(name = "nccl")
sh_binary(name = "nvcc", srcs = ["nvcc.sh"])
""")
        ctx.file("nvcc.sh", "#!/bin/sh\necho 'nvcc not found: install the CUDA toolkit or set CUDA_PATH' >&2\nexit 1\n", executable = True)
        ctx.file("defs.bzl", "HAS_CUDA = False\n")
    ctx.file("WORKSPACE", "workspace(name = \"local_cuda\")\n")

local_cuda = repository_rule(
    implementation = _local_cuda_impl,
    local = True,
    environ = ["CUDA_PATH"],
)
