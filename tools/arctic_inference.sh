#!/usr/bin/env bash
# Build arctic-inference (vLLM's `suffix` speculative method needs its suffix_decoding module) from
# its PyPI sdist into a cached directory beside the vLLM venv, without touching that venv: vLLM
# gets it through PYTHONPATH (tests/e2e harness `extra_env`). Its vLLM plugin stays off unless
# ARCTIC_INFERENCE_ENABLED is set, so nothing else in vLLM changes.
#
# Usage: tools/arctic_inference.sh    -> builds if needed, prints the directory to put on PYTHONPATH
# Needs the vLLM venv (tools/vllm_cpu.sh; torch is a build requirement). ~1-2 min the first time.
set -euo pipefail

VERSION="${ARCTIC_INFERENCE_VERSION:-0.3.0}"
VLLM_PY="$(bash "$(dirname "$0")/vllm_cpu.sh" | tail -n 1)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/specgate/arctic-inference-${VERSION}"
SITE="$CACHE/site"
MARKER="$CACHE/.complete"
log() { echo "[arctic_inference] $*" >&2; }

if [ -f "$MARKER" ]; then
  log "reusing $SITE"
  echo "$SITE"
  exit 0
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if [ -f "$MARKER" ]; then echo "$SITE"; exit 0; fi
rm -rf "$CACHE/build" "$SITE"
start=$(date +%s)
# A build venv of the same interpreter, seeing the vLLM venv's packages (torch) through a .pth file.
"$VLLM_PY" -m venv --without-pip "$CACHE/build/venv" 2>/dev/null || python3 -m venv "$CACHE/build/venv"
BPY="$CACHE/build/venv/bin/python"
if ! "$BPY" -m pip --version >/dev/null 2>&1; then "$BPY" -m ensurepip --default-pip >&2; fi
"$BPY" -m pip install -q "nanobind==2.9.2" cmake ninja grpcio-tools wheel setuptools >&2
VSITE="$("$VLLM_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
BSITE="$("$BPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$VSITE" > "$BSITE/zz_vllm_venv.pth"
PATH="$CACHE/build/venv/bin:$PATH" "$BPY" -m pip wheel -q --no-deps --no-build-isolation \
  "arctic_inference==${VERSION}" -w "$CACHE/build/wheels" >&2
"$BPY" -m pip install -q --no-deps --target "$SITE" "$CACHE/build/wheels"/arctic_inference-*.whl >&2
rm -rf "$CACHE/build"
touch "$MARKER"
log "built in $(( $(date +%s) - start )) s into $SITE"
echo "$SITE"
