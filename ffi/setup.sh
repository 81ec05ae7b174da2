#!/usr/bin/env bash
# `bun run setup`'s native step: get Debian's xxhash.h when it is missing and we may install
# packages, then build the C library. A failed build is not fatal: the router then uses the
# portable TypeScript hasher and says so at start-up.
cd "$(dirname "$0")/.."
if [ ! -f /usr/include/xxhash.h ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo -n"
  if [ "$(id -u)" = 0 ] || [ -n "$SUDO" ]; then
    echo "[setup] installing libxxhash-dev (Debian) for the native hasher" >&2
    ($SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libxxhash-dev) >/dev/null 2>&1 || true
  fi
fi
bash ffi/build.sh || echo "[setup] native library not built: the router will use the portable hasher" >&2
exit 0
