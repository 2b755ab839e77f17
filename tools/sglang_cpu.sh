#!/usr/bin/env bash
# Install SGLang 0.5.23 for CPU into its own cached venv, outside the project's venv
# (~7 GB). Idempotent: a marker written last means "complete"; anything without it is
# removed and redone. Concurrent runs are serialised with flock (tools/lib/cached_venv.sh).
#
# PyPI has sglang==0.5.23 but no CPU build of its kernel package (sgl-kernel and
# sglang-kernel are CUDA wheels only, no sdist). The project's own stand-in lives in
# tools/sgl_kernel_stand_in/ and is put first on PYTHONPATH by tools/sglang_launch.py;
# nothing of it is installed into this venv, so the venv does not depend on a checkout.
#
# Usage: tools/sglang_cpu.sh            -> installs if needed, prints the venv's python on stdout
#        SGLANG_CPU_VERSION=0.5.23 (pinned; the e2e expectations and the requirements file
#        tools/sglang/requirements-<version>-cpu.txt are for this version)
# Progress goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSION="${SGLANG_CPU_VERSION:-0.5.23}"
REQS="$HERE/sglang/requirements-${VERSION}-cpu.txt"

log() { echo "[sglang_cpu] $*" >&2; }

if [ ! -f "$REQS" ]; then
  echo "sglang_cpu: no requirements file for SGLang $VERSION ($REQS)" >&2
  exit 3
fi

# shellcheck source=tools/lib/cached_venv.sh
source "$HERE/lib/cached_venv.sh"
# shellcheck source=tools/lib/steps.sh
source "$HERE/lib/steps.sh"
cached_venv_begin sglang-cpu "$VERSION"
steps_begin 4
# torch/torchvision pinned as a pair: SGLang imports torchvision at start-up and a
# torchvision from another torch release does not load.
CONS="$CACHE/constraints.txt"
printf 'torch==2.14.1\ntorchvision==0.29.1\n' > "$CONS"
step "pip install SGLang $VERSION's runtime dependencies without the CUDA-only ones (about 3-6 minutes)"
"$VENV/bin/pip" install --disable-pip-version-check --progress-bar off -c "$CONS" -r "$REQS" >&2
# sglang's own metadata pins CUDA-only packages (sgl-kernel, flashinfer, ...): --no-deps,
# its CPU runtime dependencies came from the requirements file above.
step "pip install --no-deps sglang==$VERSION"
"$VENV/bin/pip" install --disable-pip-version-check --progress-bar off --no-deps "sglang==$VERSION" >&2
# pytest: `make e2e` runs the stand-in's own tests (tests/tools/test_sgl_kernel_stand_in.py)
# with this venv's torch; the project venv carries no torch.
step "pip install pytest (for the stand-in kernel tests)"
"$VENV/bin/pip" install --disable-pip-version-check --progress-bar off pytest >&2
step "checking imports"
"$VENV/bin/python" -c "import sglang, torch, torchvision, triton, transformers; print('sglang', sglang.__version__, 'torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__)" >&2
cached_venv_done
