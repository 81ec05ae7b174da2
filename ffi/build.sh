#!/usr/bin/env bash
# Builds the native library (`bun run build:ffi`):
#   ffi/build/libswitchyard.so       gcc, always; CPU path + dlopen of CUDA/NCCL at run time
#   ffi/build/libswitchyard_cuda.so  nvcc, only when nvcc is found (kernels; linked to cudart)
# Nothing links against libcuda or libcudart at build time, so the main library loads on any
# machine. Up-to-date outputs are kept (delete ffi/build or set SY_REBUILD=1 to force).
#
# Environment: CC (default gcc), NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc),
# SY_NO_CUDA=1 (skip the kernels even when nvcc exists), SY_CUDA_ARCHS (default "80 90").
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=ffi/build
CC=${CC:-gcc}
mkdir -p "$OUT"

log() { echo "[build:ffi] $*" >&2; }

if ! command -v "$CC" >/dev/null 2>&1; then
  log "error: C compiler '$CC' not found (install gcc)"
  exit 1
fi
if ! echo '#include <xxhash.h>' | "$CC" -E -x c - >/dev/null 2>&1; then
  log "error: xxhash.h not found. Install it: apt-get install -y libxxhash-dev (Debian/Ubuntu)"
  exit 1
fi

SOURCES=(ffi/src/*.c)
# Sources newer than the output mean a rebuild (a small stand-in for make).
stale() {
  local out=$1; shift
  [ "${SY_REBUILD:-0}" = 1 ] && return 0
  [ -f "$out" ] || return 0
  [ -n "$(find "$@" -newer "$out" 2>/dev/null | head -n 1)" ]
}

LIB="$OUT/libswitchyard.so"
if stale "$LIB" ffi/src ffi/include ffi/build.sh; then
  tmp=$(mktemp "$OUT/.libswitchyard.XXXXXX")
  "$CC" -std=gnu11 -D_GNU_SOURCE -O3 -fPIC -shared -pthread -fvisibility=hidden \
    -Wall -Wextra -Wno-unused-parameter \
    -o "$tmp" "${SOURCES[@]}" -ldl
  # Rename into place: a process that has the old library loaded keeps its copy.
  mv -f "$tmp" "$LIB"
  log "built $LIB"
else
  log "$LIB is up to date"
fi

NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
  if command -v nvcc >/dev/null 2>&1; then NVCC=nvcc
  elif [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc
  fi
fi
KLIB="$OUT/libswitchyard_cuda.so"
if [ "${SY_NO_CUDA:-0}" = 1 ]; then
  log "SY_NO_CUDA=1: kernels not built (CPU path only)"
elif [ -z "$NVCC" ]; then
  log "nvcc not found: kernels not built (CPU path only; the GPU path falls back to cudaMemcpyAsync)"
elif stale "$KLIB" cuda ffi/build.sh; then
  gencode=()
  for a in ${SY_CUDA_ARCHS:-80 90}; do gencode+=(-gencode "arch=compute_$a,code=sm_$a"); done
  last=$(echo "${SY_CUDA_ARCHS:-80 90}" | awk '{print $NF}')
  gencode+=(-gencode "arch=compute_$last,code=compute_$last") # PTX for newer GPUs
  tmp=$(mktemp "$OUT/.libswitchyard_cuda.XXXXXX")
  "$NVCC" -O3 -shared -Xcompiler -fPIC -cudart shared "${gencode[@]}" -o "$tmp" cuda/*.cu
  mv -f "$tmp" "$KLIB"
  log "built $KLIB with $NVCC (loaded at run time only when a GPU is usable)"
else
  log "$KLIB is up to date"
fi
