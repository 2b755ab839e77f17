#!/usr/bin/env bash
# Install Debian's Prometheus binaries (prometheus, promtool) into BIN_DIR.
#
# Why Debian's package: it is the one real Prometheus server reachable from these machines
# (no GitHub downloads). We take only the two binaries out of the .deb (`dpkg-deb -x`): no
# package is installed, no service is started. The .deb is pinned by version and by the
# sha256 recorded below (the same value as the SHA256 field of Debian's signed Packages index).
# Idempotent: when BIN_DIR already holds both binaries at the pinned version, nothing is done.
#
# usage: tools/install_prometheus.sh BIN_DIR
set -euo pipefail

PROM_DEB_VERSION="2.42.0+ds-5+deb12u1"
PROM_DEB_ARCH="amd64"
PROM_DEB_SHA256="81d59a24fce84f7fbe97a45a4f2914b6a5881b5cd1db2a6a0e129e515e1a5f55"
# What `--version` prints for the pinned package (revision = Debian version).
PROM_VERSION_MARK="revision: ${PROM_DEB_VERSION}"

if [ $# -ne 1 ]; then
  echo "usage: $0 BIN_DIR" >&2
  exit 2
fi
BIN_DIR="$1"

have_pinned() {
  local b
  for b in prometheus promtool; do
    [ -x "$BIN_DIR/$b" ] || return 1
    "$BIN_DIR/$b" --version 2>&1 | grep -qF "$PROM_VERSION_MARK" || return 1
  done
}

if have_pinned; then
  exit 0
fi

arch="$(dpkg --print-architecture 2>/dev/null || echo unknown)"
if [ "$arch" != "$PROM_DEB_ARCH" ]; then
  echo "install_prometheus: pinned checksum is for $PROM_DEB_ARCH, this machine is $arch" >&2
  exit 1
fi
for tool in apt-get dpkg-deb sha256sum; do
  command -v "$tool" >/dev/null || { echo "install_prometheus: $tool not found (needs a Debian/Ubuntu host)" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 0777 "$work"  # lets apt's sandbox user write the .deb when we run as root

download() {
  (cd "$work" && apt-get download -q "prometheus=${PROM_DEB_VERSION}") >"$work/apt.log" 2>&1
}
if ! download; then
  # The package lists may be missing or stale on a fresh machine: refresh once and retry.
  echo "install_prometheus: download failed, running apt-get update once" >&2
  apt-get update -q >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; exit 1; }
  download || { cat "$work/apt.log" >&2; echo "install_prometheus: prometheus=${PROM_DEB_VERSION} not downloadable" >&2; exit 1; }
fi

deb="$work/prometheus_${PROM_DEB_VERSION}_${PROM_DEB_ARCH}.deb"
[ -f "$deb" ] || deb="$(ls "$work"/prometheus_*.deb | head -n1)"
got="$(sha256sum "$deb" | cut -d' ' -f1)"
if [ "$got" != "$PROM_DEB_SHA256" ]; then
  echo "install_prometheus: sha256 mismatch for $(basename "$deb"): got $got, want $PROM_DEB_SHA256" >&2
  exit 1
fi

dpkg-deb -x "$deb" "$work/root"
mkdir -p "$BIN_DIR"
for b in prometheus promtool; do
  install -m 0755 "$work/root/usr/bin/$b" "$BIN_DIR/$b.tmp"
  mv -f "$BIN_DIR/$b.tmp" "$BIN_DIR/$b"
done

have_pinned || { echo "install_prometheus: installed binaries do not report $PROM_VERSION_MARK" >&2; exit 1; }
echo "install_prometheus: prometheus and promtool ${PROM_DEB_VERSION} in $BIN_DIR" >&2
