"""Every guard bites (issue 33): a violation of each rule, planted in one copy of the tree, is caught by the
contract or rule named for it, and the clean copy passes every guard.

The plants are architecture-4.md §2.5's 19 (numbered as there), then one per contract and rule the 19 leave
untried. Each is appended to one file of the copy (or is a new file), the guard named for it runs on the copy
(its modules first on the path: `tests.test_layering.lint`, `tests.test_one_address.offenders`,
`tests.test_engines_as_folders.offenders`), the file is restored, and the next plant goes in. Every plant
still compiles, so a guard catches it by its rule, never by a broken import.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import test_engines_as_folders as engine_guard
from tests import test_layering as contracts
from tests import test_one_address as one_address

REPO = Path(__file__).resolve().parents[1]
ENGINE_NAMES = "engine names"  # tests/test_engines_as_folders.py's rule

# (id, file in the copy, code appended, the contract (.importlinter id) or rule that must catch it)
PLANTS: list[tuple[str, str, str, str]] = [
    ("1", "gate/checks/staging.py", "def _p1():\n    import gate.webhook\n", "floors"),
    ("2", "gate/checks/staging.py", "def _p2():\n    import importlib\n    return importlib.import_module('gate.webhook')\n",
     "importlib"),
    ("3", "gate/checks/staging.py", "from exporter.scrape import scrape_once\n", "checks-fetch-nothing"),
    ("4", "gate/checks/staging.py", "from gate.evidence import captures\n", "checks-fetch-nothing"),
    ("5", "gate/model/depth.py", "from exporter import server\n", "floor0-pure"),
    ("6", "gate/evidence/base.py", "from gate.evidence.fleet import collect\n", "no-cycles"),
    ("7", "gate/checks/staging.py", "def _p7(plan):\n    return plan.engine.kind == 'trtllm'\n", ENGINE_NAMES),
    ("8", "gate/checks/staging.py", "def _p8(kind):\n    match kind:\n        case 'llamacpp':\n            return 1\n",
     ENGINE_NAMES),
    ("9", "gate/evidence/captures.py", "def _p9(sp):\n    return sp.num_draft_tokens - 1\n", "depth k"),
    ("10", "gate/evidence/positions.py", "def _p10(d, a):\n    return (d + a) / d\n", "acceptance length"),
    ("11", "gate/evidence/positions.py", "def _p11(d, a):\n    return a / d + 1\n", "acceptance length"),
    ("12", "gate/checks/staging.py",
     "_P12 = (Status.FAIL, Status.INCONCLUSIVE, Status.WARN, Status.PASS)\n", "status order"),
    ("13", "gate/checks/staging.py", "def _p13(p):\n    import io\n    return io.FileIO(p).readall()\n", "file reads"),
    ("14", "gate/checks/staging.py", "def _p14(p):\n    import json\n    with p.open() as f:\n        return json.load(f)\n",
     "file reads"),
    ("15", "gate/evidence/captures.py", "def _p15():\n    from gate.status import Status\n    return Status.FAIL\n",
     "sources never judge"),
    ("16", "gate/tune/emit.py", "from gate.bill import budget\n", "floors"),
    ("17", "gate/checks/staging.py", "_P17 = frozenset({'eagle', 'eagle3'})\n", "method sets"),
    ("18", "gate/commands/kv.py", "def _p18():\n    raise SystemExit(2)\n", "exit codes"),
    ("19", "gate/foo.py", "X = 1\n", "floors"),
    # one per contract and rule the 19 leave untried
    ("exporter-imports-gate", "exporter/names.py", "import gate.status\n", "exporter-below-gate"),
    ("adapter-reads-state", "exporter/formulas.py", "from exporter import state\n", "exporter-layers"),
    ("profile-reads-identity", "gate/model/engines/base.py", "from gate.model import identity\n", "model-layers"),
    ("adapter-knows-another", "exporter/engines/vllm/stream.py", "from exporter.engines.sglang import counts\n",
     "exporter-engines-independent"),
    ("profile-knows-another", "gate/model/engines/trtllm/schedule.py", "from gate.model.engines import vllm\n",
     "profiles-independent"),
    ("backend-knows-another", "gate/evidence/pods.py", "from gate.evidence import previous\n",
     "evidence-backends-independent"),
    ("line-knows-another", "gate/checks/kv_pool.py", "from gate.checks import staging\n", "lines-independent"),
    ("check-runs-a-tune", "gate/checks/acceptance/depth.py", "def _p():\n    from gate.tune import emit\n",
     "checks-fetch-nothing"),
    ("socket-in-a-check", "gate/checks/staging.py", "import socket\n", "network"),
    ("kube-in-evidence", "gate/evidence/captures.py", "def _p():\n    import kubernetes\n", "kubernetes"),
    ("requests-anywhere", "exporter/sanity.py", "def _p():\n    import requests\n", "no-requests"),
    ("tune-around-intake", "gate/tune/report.py", "def _p():\n    import gate.evidence.probe_vetting\n",
     "intake-only"),
    ("k-as-positions", "gate/checks/staging.py", "def _p(w):\n    return len(w.accepted_per_position)\n", "depth k"),
    ("exit-from-run", "gate/verdict/report.py", "def run():\n    return 3\n", "exit codes"),
    ("status-dict", "gate/verdict/answer.py", "_R = {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2}\n", "status order"),
    ("read-text", "gate/checks/staging.py", "def _p(p):\n    return p.read_text()\n", "file reads"),
    ("engine-identifier", "gate/checks/staging.py", "def sglang_rate():\n    pass\n", ENGINE_NAMES),
    # the block rule: init once read the top-level block_size before dflash_config's (the order SGLang reads)
    ("block-keys-again", "gate/plan/init.py",
     "def _p(d):\n    return d.get('block_size', d.get('dflash_config', {}).get('block_size'))\n", "block keys"),
    ("block-round-again", "gate/checks/codesign.py",
     "def _p(family, block_size):\n    return block_size if family == 'dspark' else block_size - 1\n", "block round"),
    ("block-round-beside-it", "gate/model/engines/llamacpp/__init__.py",
     "def _p(block_size):\n    return block_size - 1\n", "block round"),
]
CONTRACTS = sorted({guard for *_, guard in PLANTS if guard not in one_address.RULES and guard != ENGINE_NAMES})


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One copy of the code and the contracts, planted and restored in turn."""
    root = tmp_path_factory.mktemp("tree")
    for top in ("exporter", "gate"):
        shutil.copytree(REPO / top, root / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / contracts.CONFIG, root / contracts.CONFIG)
    yield root


def _guard(guard: str, root: Path) -> str:
    """What the guard reports on the tree at `root` ("" when it passes)."""
    if guard == ENGINE_NAMES:
        return "\n".join(engine_guard.offenders(root))
    if guard in one_address.RULES:
        return "\n".join(one_address.offenders(guard, root))
    p = contracts.lint(root, guard)
    return "" if p.returncode == 0 else p.stdout + p.stderr


def _module(rel: str) -> str:
    parts = Path(rel).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_plants_name_every_contract_and_rule() -> None:
    assert {g for *_, g in PLANTS} == {*contracts.contract_ids(), *one_address.RULES, ENGINE_NAMES}


def test_the_clean_tree_passes_every_guard(tree: Path) -> None:
    for guard in [ENGINE_NAMES, *one_address.RULES]:
        assert _guard(guard, tree) == "", guard
    p = contracts.lint(tree)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize(("plant", "rel", "code", "guard"), PLANTS, ids=[p[0] for p in PLANTS])
def test_each_plant_is_caught_by_its_guard(tree: Path, plant: str, rel: str, code: str, guard: str) -> None:
    path = tree / rel
    before = path.read_bytes() if path.exists() else None
    try:
        path.write_text((before or b"").decode("utf-8") + "\n\n" + code, encoding="utf-8")
        compile(path.read_text(encoding="utf-8"), rel, "exec")  # still a module: caught by the rule, not a SyntaxError
        report = _guard(guard, tree)
    finally:
        if before is None:
            path.unlink()
        else:
            path.write_bytes(before)
    assert report, f"plant {plant} ({rel}) passed {guard}"
    # the plant's file, its module, or (acyclic_siblings speaks relative to the parent) `.<module>`
    assert rel in report or _module(rel) in report or f".{_module(rel).rsplit('.', 1)[-1]} ->" in report, report
    if guard in CONTRACTS:
        assert f"{guard}:" in report and "BROKEN" in report, report
