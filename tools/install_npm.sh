#!/usr/bin/env bash
# Install the pinned npm tools of tools/npm (typescript's tsc, @grafana/schema, @kubernetes-models/argo-rollouts)
# into BIN_DIR/../npm/node_modules with `npm ci`: exactly the versions of tools/npm/package-lock.json, each
# tarball checked against its sha512 `integrity` there; --ignore-scripts: no install scripts run.
# Idempotent: nothing is done when the installed lock equals the committed one.
#
# usage: tools/install_npm.sh BIN_DIR
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BIN_DIR" >&2
  exit 2
fi
SRC="$(cd "$(dirname "$0")/npm" && pwd)"
DEST="$(cd "$(dirname "$1")" 2>/dev/null && pwd || { mkdir -p "$(dirname "$1")" && cd "$(dirname "$1")" && pwd; })/npm"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "install_npm: $tool not found (Node.js 20 or later is needed)" >&2; exit 1; }
done

if [ -f "$DEST/package-lock.json" ] && cmp -s "$SRC/package-lock.json" "$DEST/package-lock.json" \
   && [ -x "$DEST/node_modules/.bin/tsc" ] && [ -d "$DEST/node_modules/@grafana/schema" ] \
   && [ -d "$DEST/node_modules/@kubernetes-models/argo-rollouts" ]; then
  exit 0
fi

mkdir -p "$DEST"
rm -rf "$DEST/node_modules"
cp "$SRC/package.json" "$DEST/package.json.tmp"
cp "$SRC/package-lock.json" "$DEST/package-lock.json.tmp"
mv -f "$DEST/package.json.tmp" "$DEST/package.json"
# The lock is copied last-but-one and compared above: a failed `npm ci` leaves no matching stamp behind.
rm -f "$DEST/package-lock.json"
cp "$DEST/package-lock.json.tmp" "$DEST/package-lock.json"
rm -f "$DEST/package-lock.json.tmp"
if ! (cd "$DEST" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >"$DEST/npm.log" 2>&1; then
  cat "$DEST/npm.log" >&2
  rm -f "$DEST/package-lock.json"
  echo "install_npm: npm ci failed" >&2
  exit 1
fi
echo "install_npm: $(cd "$DEST" && node_modules/.bin/tsc --version), @grafana/schema, @kubernetes-models/argo-rollouts in $DEST" >&2
