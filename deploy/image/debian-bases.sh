#!/usr/bin/env bash
# Makes the Containerfile's two base images from Debian's own packages, for machines that
# reach a Debian mirror but no image registry (test/deploy/image.test.ts uses it):
#
#   deploy/image/debian-bases.sh RUNTIME_TAG BUILD_TAG
#   podman build --build-arg RUNTIME_BASE=RUNTIME_TAG --build-arg BUILD_BASE=BUILD_TAG -t switchyard .
#
# RUNTIME_TAG: what debian:bookworm-slim is (minbase, merged /usr, no docs/man/locales, the
#   same three apt sources), ~78 MB.
# BUILD_TAG: the same plus gcc, libc6-dev, libxxhash-dev and this machine's Bun (the oven/bun
#   image's part), plus this machine's CA bundle as NODE_EXTRA_CA_CERTS, so `bun install` in
#   the build trusts what the host trusts (a TLS-inspecting proxy in front of the npm
#   registry, as on the machines this was written on).
#
# Needs root (or mmdebstrap's unshare mode), mmdebstrap, podman. Env: SUITE (bookworm),
# MIRROR (http://deb.debian.org), BUN (default: the bun on PATH).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 RUNTIME_TAG BUILD_TAG" >&2; exit 2; }
RUNTIME_TAG=$1 BUILD_TAG=$2
SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-http://deb.debian.org}
BUN=$(readlink -f "${BUN:-$(command -v bun)}")
CA=/etc/ssl/certs/ca-certificates.crt

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sources=(
  "deb $MIRROR/debian $SUITE main"
  "deb $MIRROR/debian $SUITE-updates main"
  "deb $MIRROR/debian-security $SUITE-security main"
)
# The dpkg excludes debian:*-slim is made with; written into the base's dpkg.cfg.d, so
# packages the Containerfile installs later leave their docs out too.
slim=(
  --variant=minbase
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-include=/usr/share/locale/locale.alias'
)

mmdebstrap --quiet "${slim[@]}" "$SUITE" "$work/runtime.tar" "${sources[@]}"
podman import --quiet "$work/runtime.tar" "$RUNTIME_TAG" >/dev/null

hooks=(
  --customize-hook="copy-in $BUN /usr/local/bin"
  --customize-hook="chroot \"\$1\" sh -c 'mv /usr/local/bin/$(basename "$BUN") /usr/local/bin/bun 2>/dev/null; /usr/local/bin/bun --version'"
)
changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
if [ -f "$CA" ]; then
  hooks+=(--customize-hook="cp $CA \"\$1/usr/local/share/host-ca-bundle.crt\"")
  changes+=(--change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/host-ca-bundle.crt')
fi
mmdebstrap --quiet "${slim[@]}" --include=gcc,libc6-dev,libxxhash-dev "${hooks[@]}" \
  "$SUITE" "$work/build.tar" "${sources[@]}"
podman import --quiet "${changes[@]}" "$work/build.tar" "$BUILD_TAG" >/dev/null
echo "[debian-bases] $RUNTIME_TAG and $BUILD_TAG ready" >&2
