#!/usr/bin/env bash
# Install Debian's single-node VictoriaMetrics binary (victoria-metrics) into BIN_DIR.
#
# Why: the fleet tests and bench/fleet.py judge a fleet on two real backends that speak the
# Prometheus HTTP API, Prometheus 2.42 (tools/install_prometheus.sh) and VictoriaMetrics. Debian's
# package is the one real VictoriaMetrics reachable from these machines. We take only the server
# binary out of the .deb (`dpkg-deb -x`): no package is installed, no service or user is created.
# The .deb is pinned by version and by the sha256 of Debian's signed Packages index; the Debian
# build prints no version (`-version` is empty), so the installed binary is pinned by its own sha256.
# Idempotent: when BIN_DIR already holds the pinned binary, nothing is done.
#
# usage: tools/install_victoriametrics.sh BIN_DIR
set -euo pipefail

VM_DEB_VERSION="1.79.5+ds1-2+b5"
VM_DEB_ARCH="amd64"
VM_DEB_SHA256="bb437c10c5aa7c6a293acbb93828bd726dded618aa4bf3f4b45bef24c6d2f6f0"
VM_BIN_SHA256="e541c6acd3e3c18cffcc2713849d41f50dc87b2bf2da850eab1efb5c460a7465"

if [ $# -ne 1 ]; then
  echo "usage: $0 BIN_DIR" >&2
  exit 2
fi
BIN_DIR="$1"

have_pinned() {
  [ -x "$BIN_DIR/victoria-metrics" ] || return 1
  [ "$(sha256sum "$BIN_DIR/victoria-metrics" | cut -d' ' -f1)" = "$VM_BIN_SHA256" ]
}

if have_pinned; then
  exit 0
fi

arch="$(dpkg --print-architecture 2>/dev/null || echo unknown)"
if [ "$arch" != "$VM_DEB_ARCH" ]; then
  echo "install_victoriametrics: pinned checksum is for $VM_DEB_ARCH, this machine is $arch" >&2
  exit 1
fi
for tool in apt-get dpkg-deb sha256sum; do
  command -v "$tool" >/dev/null || { echo "install_victoriametrics: $tool not found (needs a Debian/Ubuntu host)" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 0777 "$work"  # lets apt's sandbox user write the .deb when we run as root

download() {
  (cd "$work" && apt-get download -q "victoria-metrics=${VM_DEB_VERSION}") >"$work/apt.log" 2>&1
}
if ! download; then
  echo "install_victoriametrics: download failed, running apt-get update once" >&2
  apt-get update -q >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; exit 1; }
  download || { cat "$work/apt.log" >&2; echo "install_victoriametrics: victoria-metrics=${VM_DEB_VERSION} not downloadable" >&2; exit 1; }
fi

deb="$(ls "$work"/victoria-metrics_*.deb | head -n1)"
got="$(sha256sum "$deb" | cut -d' ' -f1)"
if [ "$got" != "$VM_DEB_SHA256" ]; then
  echo "install_victoriametrics: sha256 mismatch for $(basename "$deb"): got $got, want $VM_DEB_SHA256" >&2
  exit 1
fi

dpkg-deb -x "$deb" "$work/root"
mkdir -p "$BIN_DIR"
install -m 0755 "$work/root/usr/bin/victoria-metrics" "$BIN_DIR/victoria-metrics.tmp"
mv -f "$BIN_DIR/victoria-metrics.tmp" "$BIN_DIR/victoria-metrics"

have_pinned || { echo "install_victoriametrics: installed binary does not match sha256 $VM_BIN_SHA256" >&2; exit 1; }
echo "install_victoriametrics: victoria-metrics ${VM_DEB_VERSION} in $BIN_DIR" >&2
