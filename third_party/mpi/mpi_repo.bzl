"""Exposes the system's Open MPI (Debian: openmpi-bin, libopenmpi-dev) as @local_mpi.

`mpicc --showme:incdirs` / `--showme:link` say where mpi.h and libmpi are
(Debian: /usr/lib/x86_64-linux-gnu/openmpi/{include,lib}, not a compiler
builtin path). Where mpicc is absent the repository still exists, but its
mpi.h is an #error naming the fix, so the default build fails with a clear
message instead of "mpi.h: No such file"; `--config=nompi` builds without MPI
and never looks at this repository.
"""

_MISSING_MPI_H = """\
#error "Open MPI not found (no mpicc on PATH): install it with `bash tools/setup.sh` (Debian: apt-get install openmpi-bin libopenmpi-dev), or build without MPI: bazel build --config=nompi ... (docs/distributed.md)"
"""

def _words(ctx, mpicc, flag):
    result = ctx.execute([mpicc, flag])
    if result.return_code != 0:
        return None
    return result.stdout.strip().split(" ")

def _local_mpi_impl(ctx):
    mpicc = ctx.which("mpicc")
    incdirs = _words(ctx, mpicc, "--showme:incdirs") if mpicc else None
    link = _words(ctx, mpicc, "--showme:link") if mpicc else None
    if incdirs and link and ctx.path(incdirs[0] + "/mpi.h").exists:
        ctx.symlink(incdirs[0], "include")
        ctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])

# Open MPI's C API ({inc}); its C++ bindings (deprecated) are left out.
cc_library(
    name = "mpi",
    hdrs = glob(["include/*.h"]),
    includes = ["include"],
    defines = ["OMPI_SKIP_MPICXX", "MPICH_SKIP_MPICXX"],
    linkopts = {link},
)
""".format(inc = incdirs[0], link = repr([w for w in link if w] + ["-Wl,-rpath," + w[2:] for w in link if w.startswith("-L")])))
    else:
        ctx.file("include/mpi.h", _MISSING_MPI_H)
        ctx.file("BUILD.bazel", """
package(default_visibility = ["//visibility:public"])

# No Open MPI on this machine: mpi.h is an #error that says what to do.
cc_library(
    name = "mpi",
    hdrs = ["include/mpi.h"],
    includes = ["include"],
)
""")
    ctx.file("WORKSPACE", "workspace(name = \"local_mpi\")\n")

local_mpi = repository_rule(
    implementation = _local_mpi_impl,
    local = True,
    environ = ["PATH"],
)
