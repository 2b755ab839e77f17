#!/usr/bin/env bash
# Install Debian's Alertmanager 0.25 binaries (prometheus-alertmanager -> BIN_DIR/alertmanager, amtool) for the
# live Prometheus test (tests/observability/live_stack.py), like tools/install_prometheus.sh: the .deb pinned by
# version and sha256 (the SHA256 field of Debian's signed Packages index), `dpkg-deb -x`, no package installed,
# no service started.
#
# Two files outside BIN_DIR: Debian's build reads its notification templates from the fixed directory
# /usr/share/prometheus/alertmanager/ (default.tmpl, email.tmpl; it does not embed them) and refuses every
# config without them. The script puts the package's own copies there when they are absent and the directory
# is writable, never overwrites a different file (it fails instead), and keeps copies in
# BIN_DIR/../share/alertmanager/.
# Idempotent: nothing is done when the pinned binaries and the template are in place.
#
# usage: tools/install_alertmanager.sh BIN_DIR
set -euo pipefail

AM_DEB_VERSION="0.25.0-1+b4"
AM_DEB_ARCH="amd64"
AM_DEB_SHA256="4fb9aed15cfe8e0c32408e643ab32a1e41ee87d2cc26f18aeba928b1b0b98ae7"
AM_VERSION_MARK="revision: ${AM_DEB_VERSION}"
TEMPLATE_DIR="/usr/share/prometheus/alertmanager"
TEMPLATES="default.tmpl email.tmpl"

if [ $# -ne 1 ]; then
  echo "usage: $0 BIN_DIR" >&2
  exit 2
fi
BIN_DIR="$1"
SHARE_DIR="$(dirname "$BIN_DIR")/share/alertmanager"

have_pinned() {
  [ -x "$BIN_DIR/alertmanager" ] && [ -x "$BIN_DIR/amtool" ] || return 1
  "$BIN_DIR/alertmanager" --version 2>&1 | grep -qF "$AM_VERSION_MARK" || return 1
  local t
  for t in $TEMPLATES; do
    [ -f "$SHARE_DIR/$t" ] && cmp -s "$SHARE_DIR/$t" "$TEMPLATE_DIR/$t" || return 1
  done
}

if have_pinned; then
  exit 0
fi

arch="$(dpkg --print-architecture 2>/dev/null || echo unknown)"
if [ "$arch" != "$AM_DEB_ARCH" ]; then
  echo "install_alertmanager: pinned checksum is for $AM_DEB_ARCH, this machine is $arch" >&2
  exit 1
fi
for tool in apt-get dpkg-deb sha256sum; do
  command -v "$tool" >/dev/null || { echo "install_alertmanager: $tool not found (needs a Debian/Ubuntu host)" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 0777 "$work"  # lets apt's sandbox user write the .deb when we run as root

download() {
  (cd "$work" && apt-get download -q "prometheus-alertmanager=${AM_DEB_VERSION}") >"$work/apt.log" 2>&1
}
if ! download; then
  echo "install_alertmanager: download failed, running apt-get update once" >&2
  apt-get update -q >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; exit 1; }
  download || { cat "$work/apt.log" >&2; echo "install_alertmanager: prometheus-alertmanager=${AM_DEB_VERSION} not downloadable" >&2; exit 1; }
fi

deb="$(ls "$work"/prometheus-alertmanager_*.deb | head -n1)"
got="$(sha256sum "$deb" | cut -d' ' -f1)"
if [ "$got" != "$AM_DEB_SHA256" ]; then
  echo "install_alertmanager: sha256 mismatch for $(basename "$deb"): got $got, want $AM_DEB_SHA256" >&2
  exit 1
fi

dpkg-deb -x "$deb" "$work/root"
mkdir -p "$BIN_DIR" "$SHARE_DIR"
install -m 0755 "$work/root/usr/bin/prometheus-alertmanager" "$BIN_DIR/alertmanager.tmp"
mv -f "$BIN_DIR/alertmanager.tmp" "$BIN_DIR/alertmanager"
install -m 0755 "$work/root/usr/bin/amtool" "$BIN_DIR/amtool.tmp"
mv -f "$BIN_DIR/amtool.tmp" "$BIN_DIR/amtool"
for t in $TEMPLATES; do
  install -m 0644 "$work/root$TEMPLATE_DIR/$t" "$SHARE_DIR/$t"
  if [ -e "$TEMPLATE_DIR/$t" ]; then
    cmp -s "$SHARE_DIR/$t" "$TEMPLATE_DIR/$t" || {
      echo "install_alertmanager: $TEMPLATE_DIR/$t exists and differs from the package's: not overwriting it" >&2
      exit 1
    }
  elif ! { mkdir -p "$TEMPLATE_DIR" 2>/dev/null && install -m 0644 "$SHARE_DIR/$t" "$TEMPLATE_DIR/$t" 2>/dev/null; }; then
    echo "install_alertmanager: cannot write $TEMPLATE_DIR/$t (Debian's alertmanager reads its templates" >&2
    echo "  there); as a user who can: install -D -m 0644 $SHARE_DIR/$t $TEMPLATE_DIR/$t" >&2
    exit 1
  fi
done

have_pinned || { echo "install_alertmanager: installed binaries do not report $AM_VERSION_MARK" >&2; exit 1; }
echo "install_alertmanager: alertmanager and amtool ${AM_DEB_VERSION} in $BIN_DIR" >&2
