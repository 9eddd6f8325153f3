#!/usr/bin/env bash
# Installs what tvlab needs from Debian's apt repository, idempotently: a
# package already installed is not touched, and apt runs only when something
# is missing. Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  bazel-bootstrap           # Bazel 4.2.3
  libdnnl-dev               # oneDNN 2.6
  libabsl-dev               # Abseil 20220623
  libprotobuf-dev           # Protocol Buffers 3.21
  protobuf-compiler
  libgtest-dev              # GoogleTest 1.12
  libgmock-dev
  g++
  clang                     # the libFuzzer leg (tools/fuzz.sh)
  pkg-config
  python3                   # parity tests against PyTorch
  python3-torch
  python3-numpy
  libsentencepiece-dev      # SentencePiece 0.1.97: subword tokenizers for text tasks
  zlib1g-dev                # zlib: //experiments:prepare reads .gz inputs
  libboost-dev              # Boost.Math, header-only: Student-t for the grid's significance columns
  python3-scipy             # checks the grid statistics against scipy.stats
  slurm-wlm                 # grids as Slurm job arrays (--launcher slurm); slurmctld, slurmd, sbatch
  munge                     # Slurm's authentication; tools/slurm_local.sh runs a one-node cluster
  openmpi-bin               # mpirun: data-parallel training (docs/distributed.md)
  libopenmpi-dev            # mpi.h, libmpi
  # The offline text corpus (tools/corpus/build_debian_corpus.sh, docs/corpus.md):
  # documentation packages whose manuals it cleans to prose
  linux-doc-6.1 python3.11-doc perl-doc postgresql-doc-15 python-django-doc sqlite3-doc
  apache2-doc erlang-doc qtbase5-doc-html python-sqlalchemy-doc nodejs-doc
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "tvlab setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "tvlab setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "tvlab setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "tvlab setup: done"
