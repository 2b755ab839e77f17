# Sourced by the engine installers (tools/vllm_cpu.sh, tools/sglang_cpu.sh): one cached venv per engine
# version under ${XDG_CACHE_HOME:-~/.cache}/specgate/, complete only once its marker is written (last).
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/cached_venv.sh"
#   cached_venv_begin NAME VERSION   # sets CACHE, VENV, MARKER, PY3; prints the venv's python and exits 0
#                                    # when a complete venv is there (also one a concurrent run finished);
#                                    # otherwise holds the lock, removes an incomplete venv and creates it
#   ... pip install into "$VENV" ...
#   cached_venv_done                 # writes the marker, logs the time and size, prints the venv's python
#
# Idempotent: anything without the marker is removed and redone. Concurrent runs (two pytest sessions,
# make e2e and a refresh script) are serialised with flock on $CACHE/.lock, held until the installer exits.
# Progress goes to stderr through the caller's `log`; stdout carries only the python's path.

cached_venv_begin() {
  local name="$1" version="$2"
  CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/specgate/${name}-${version}"
  VENV="$CACHE/venv"
  MARKER="$CACHE/.complete"
  PY3="${PYTHON:-python3}"
  if cached_venv_complete; then
    log "reusing $VENV"
    echo "$VENV/bin/python"
    exit 0
  fi
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  if cached_venv_complete; then
    log "reusing $VENV (installed by a concurrent run)"
    echo "$VENV/bin/python"
    exit 0
  fi
  if [ -e "$VENV" ]; then
    log "removing incomplete venv $VENV"
    rm -rf "$VENV"
  fi
  CACHED_VENV_START=$(date +%s)
  log "creating venv $VENV"
  "$PY3" -m venv "$VENV"
}

cached_venv_complete() {
  [ -f "$MARKER" ] && [ -x "$VENV/bin/python" ]
}

cached_venv_done() {
  touch "$MARKER"
  log "done in $(( $(date +%s) - CACHED_VENV_START )) s: $(du -sh "$VENV" | cut -f1)"
  echo "$VENV/bin/python"
}
